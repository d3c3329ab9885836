//! Verifying trees whose fused nodes truncate: the probes say where the nodes are, and
//! random inputs must then be reproduced bit for bit by the tree under *some* block-FMA
//! model of those nodes (see [`crate::fused`]). The model is fitted: every candidate
//! alignment rule (a product's own exponent or its operands' exponent sum), alignment
//! width, result width and binary-node rounding is replayed on each random input the
//! target answered, and the candidates that miss are dropped. A tree that no candidate
//! follows on every input is refused, so a target that sorts its blocks, truncates its
//! results to integers or ignores its input never passes as fused hardware.

use super::error::RevealError;
use super::prober::Prober;
use crate::black_box::Target;
use crate::float::ProbeFloat;
use crate::fused::{AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, Rounding, MAX_FRAC};
use crate::tree::SumTree;
use std::cell::RefCell;

/// The block-FMA parameters under which a revealed tree reproduced its target.
///
/// ```
/// use fprev::fused::BlockFma;
/// let model = BlockFma::V100;
/// let r = fprev::Reveal::new(16).run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))?;
/// let fit = r.verification.fused.expect("a fused tree is verified by a fitted model");
/// assert!(fit.inputs >= 16);
/// // the fit is the narrowest model that reproduces every input; it never exceeds the truth
/// assert!(fit.frac <= model.frac);
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FittedFused {
    /// Fraction bits kept below the largest term when aligning (the smallest width that
    /// fits).
    pub frac: u32,
    /// The widest alignment that reproduced every input too: data cannot tell widths
    /// apart once they keep every bit the inputs have, so the probes are trusted only if
    /// the masks swamp partial sums even at this width.
    pub frac_max: u32,
    /// Fraction bits the node result keeps (`None`: rounded to nearest in the type).
    pub frac_out: Option<u32>,
    /// The result widths (truncation, in fraction bits) still consistent with the
    /// answers, smallest and largest; `None` when only rounding to nearest fits.
    pub frac_out_range: Option<(u32, u32)>,
    /// Whether rounding the results to nearest is consistent with the answers too.
    pub frac_out_rounded: bool,
    /// The exponent products are aligned by. Without product operands (a plain sum)
    /// the two rules agree on normal values, and [`Alignment::ProductExponent`] is named.
    pub alignment: Alignment,
    /// Whether the inputs told the alignment rules apart (the other rule missed one).
    pub alignment_decided: bool,
    /// Which binary nodes are fused (aligned, truncated) rather than round-to-nearest
    /// additions: probes cannot tell the two apart, the replays can.
    pub binary: BinaryNodes,
    /// Random inputs replayed, every one reproduced bit for bit.
    pub inputs: usize,
    /// Models that reproduced all of them (they agree on every input tried).
    pub candidates: usize,
    /// Products per block, where the running value enters and the promotion interval,
    /// read off the tree; `None` when the tree is no chain of blocks that
    /// [`BlockFma::tree`] draws (a pairwise tree of fused pairs, say).
    pub structure: Option<ChainStructure>,
    /// How the running value is cut in a block: with the products
    /// ([`AccumulatorCut::WithProducts`], also for trees with no running value), or in two
    /// stages as AMD CDNA3 does, with the narrowest consistent widths.
    pub accumulator_cut: AccumulatorCut,
    /// For a two-stage cut, the consistent widths of the products' sum and of the
    /// running value (smallest and largest of each) under its rounding.
    pub accumulator_cut_ranges: Option<[(u32, u32); 2]>,
    /// For a two-stage cut, whether the answers told its rounding apart from the other
    /// one fitted (toward minus infinity, toward zero); `false`: both are consistent.
    pub accumulator_cut_rounding_decided: bool,
    /// How the alignment cut each term: toward zero on every published unit, tried
    /// first; to nearest even and toward minus infinity are fitted only where no
    /// truncating model reproduces the answers.
    pub align_rounding: Rounding,
    /// Whether the answers told `align_rounding` apart from the other roundings fitted
    /// with it (to nearest even, toward minus infinity).
    pub align_rounding_decided: bool,
    /// For a two-stage cut whose running value is dropped beyond a reach
    /// ([`AccumulatorCut::TwoStage`]'s `acc_reach`), whether the answers told that apart
    /// from a running value never dropped; `true` where no reach was fitted.
    pub acc_reach_decided: bool,
}

/// A measured count with the smallest and largest values still consistent with the
/// answers (`max: None`: no upper bound, every larger value answers alike). Values
/// between the two are not all consistent: a late-joined chain promoted after every
/// block is the same tree as one never promoted, while one promoted every two blocks is
/// another.
///
/// ```
/// use fprev::reveal::MeasuredCount;
/// let c = MeasuredCount { value: 16, min: 16, max: None };
/// assert_eq!(c.to_string(), "16 (16 or more consistent)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasuredCount {
    /// The value named: the smallest consistent one.
    pub value: usize,
    /// The smallest value consistent with the answers.
    pub min: usize,
    /// The largest, `None` when every value from `min` on is consistent.
    pub max: Option<usize>,
}

impl std::fmt::Display for MeasuredCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.max {
            Some(max) => write!(f, "{} ({}-{max} consistent)", self.value, self.min),
            None => write!(f, "{} ({} or more consistent)", self.value, self.min),
        }
    }
}

/// The block structure of a revealed chain of fused nodes: what [`BlockFma::nfma`],
/// [`BlockFma::accumulator`] and [`BlockFma::chunk`] must be for [`BlockFma::tree`] to
/// draw exactly the revealed tree. Each is a measured value with its consistent range:
/// one instruction's block says only that a block holds *at least* its products.
///
/// ```
/// use fprev::fused::{AccumulatorJoin, BlockFma};
/// use fprev::target::Products;
/// let model = BlockFma::H100_FP8_SLOW;
/// let dot = |a: &[fprev::float::F8E4M3], b: &[fprev::float::F8E4M3]| -> f32 { model.dot(a, b) };
/// let r = fprev::Reveal::new(256).run_target(Products::new(dot))?;
/// let s = r.arithmetic().and_then(|a| a.structure).expect("a chain of blocks");
/// assert_eq!(s.nfma.value, 32);
/// assert_eq!(s.accumulator, Some(AccumulatorJoin::Aligned));
/// assert_eq!(s.promotion.map(|p| p.value), Some(128));
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainStructure {
    /// Products per block.
    pub nfma: MeasuredCount,
    /// Where the running value (the accumulator input `c`) enters; `None`: the tree does
    /// not tell (one block, which has no running value before it).
    pub accumulator: Option<AccumulatorJoin>,
    /// Products per chain before its result is promoted and added to the others in the
    /// accumulator type with round to nearest; `None`: no promotion within the `n`
    /// products revealed (`unpromoted_from` says from how many on promotion is
    /// consistent).
    pub promotion: Option<MeasuredCount>,
    /// The smallest promotion interval consistent with a tree that shows none (`n`, or
    /// less where promoting is the same tree, as after every late-joined block).
    pub unpromoted_from: usize,
    /// The products revealed.
    pub n: usize,
}

impl ChainStructure {
    /// The [`BlockFma`] chain parameters under which [`BlockFma::tree`]`(n)` is `tree`,
    /// with their consistent ranges; `None` when no parameters draw it. Verification
    /// reads it off every tree it fits a model to; this measures any tree.
    ///
    /// ```
    /// use fprev::fused::{AccumulatorJoin, BlockFma};
    /// use fprev::reveal::ChainStructure;
    /// let late = BlockFma { accumulator: AccumulatorJoin::Late, ..BlockFma::A100 };
    /// let s = ChainStructure::of(&late.tree(64)).expect("a chain");
    /// assert_eq!(s.accumulator, Some(AccumulatorJoin::Late));
    /// assert_eq!((s.nfma.value, s.promotion), (8, None));
    /// assert!(ChainStructure::of(&fprev::SumTree::pairwise(8)).is_none());
    /// ```
    pub fn of(tree: &SumTree) -> Option<ChainStructure> {
        let n = tree.leaf_count();
        // the widest block: the most leaf children of one node with three or more
        let width = (n..n + tree.inner_count())
            .map(|v| tree.children(v))
            .filter(|k| k.len() > 2)
            .map(|k| k.iter().filter(|&&c| (c as usize) < n).count())
            .max()?;
        let mut found: Vec<(usize, AccumulatorJoin, Option<usize>)> = Vec::new();
        // one block over every product: any wider block draws it too
        let widths: Vec<usize> = if width == n {
            vec![n, n + 1]
        } else {
            vec![width]
        };
        for &nfma in &widths {
            for acc in [AccumulatorJoin::Aligned, AccumulatorJoin::Late] {
                let chunks = std::iter::once(None)
                    .chain((1..).map(|k| k * nfma).take_while(|&c| c < n).map(Some));
                for chunk in chunks {
                    let model = BlockFma {
                        nfma,
                        accumulator: acc,
                        chunk,
                        ..BlockFma::V100
                    };
                    if model.tree(n) == *tree {
                        found.push((nfma, acc, chunk));
                    }
                }
            }
        }
        // promoting after every block of an aligned chain is a late join never promoted:
        // the same tree and the same arithmetic, named the latter
        let any_chunk = found.iter().filter_map(|f| f.2).min();
        for f in &mut found {
            if f.2 == Some(f.0) {
                *f = (f.0, AccumulatorJoin::Late, None);
            }
        }
        let first = found.first()?;
        let nfma = MeasuredCount {
            value: first.0,
            min: first.0,
            max: (!found.iter().any(|f| f.0 > width)).then_some(width),
        };
        let accumulator = found.iter().all(|f| f.1 == first.1).then_some(first.1);
        let chunked: Vec<usize> = found.iter().filter_map(|f| f.2).collect();
        let unchunked = found.iter().any(|f| f.2.is_none());
        let lo = chunked.iter().copied().min();
        let promotion = match (unchunked, lo) {
            (false, Some(lo)) => Some(MeasuredCount {
                value: lo,
                min: lo,
                max: chunked.iter().copied().max(),
            }),
            _ => None,
        };
        Some(ChainStructure {
            nfma,
            accumulator,
            promotion,
            unpromoted_from: if unchunked {
                lo.into_iter().chain(any_chunk).min().unwrap_or(n).min(n)
            } else {
                n
            },
            n,
        })
    }
}

/// The measured arithmetic in words, each width with the range of values still
/// consistent with the answers.
///
/// ```
/// use fprev::fused::BlockFma;
/// use fprev::target::Products;
/// let model = BlockFma::ADA_FP8;
/// let dot = |a: &[fprev::float::F8E4M3], b: &[fprev::float::F8E4M3]| -> f32 { model.dot(a, b) };
/// let r = fprev::Reveal::new(32).run_target(Products::new(dot))?;
/// let text = r.arithmetic().expect("fused nodes").to_string();
/// assert!(text.starts_with("products aligned by their operands' exponent sum"), "{text}");
/// assert!(text.contains("13 fraction bits kept in alignment (13-13 consistent)"), "{text}");
/// assert!(text.contains("results truncated to 13 fraction bits"), "{text}");
/// # Ok::<(), fprev::RevealError>(())
/// ```
impl std::fmt::Display for FittedFused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rule = match self.alignment {
            Alignment::OperandExponents => "products aligned by their operands' exponent sum",
            Alignment::ProductExponent => "terms aligned by their own exponent",
        };
        let told = if self.alignment_decided {
            ""
        } else {
            " (the inputs did not tell the two alignment rules apart)"
        };
        write!(
            f,
            "{rule}{told}, {} fraction bits kept in alignment ({}-{} consistent), ",
            self.frac, self.frac, self.frac_max
        )?;
        if self.align_rounding != Rounding::TowardZero {
            write!(f, "each term {} there, ", self.align_rounding_words())?;
        }
        match self.frac_out {
            Some(k) => write!(f, "results truncated to {k} fraction bits")?,
            None => f.write_str("results rounded to nearest")?,
        }
        f.write_str(&self.result_alternatives())?;
        let binary = match self.binary {
            BinaryNodes::Rounded => "binary nodes rounded to nearest",
            BinaryNodes::Fused => "binary nodes fused",
            BinaryNodes::LeafPairs => "pairs of products fused, other binary nodes rounded",
            BinaryNodes::AfterFused => {
                "a fused node's result and one product fused, other binary nodes rounded"
            }
        };
        if let AccumulatorCut::TwoStage {
            block_frac,
            acc_frac,
            rounding,
            ..
        } = self.accumulator_cut
        {
            if let Some(halves) = self.halves_words() {
                write!(f, ", each block's products {halves}")?;
            }
            let [(b0, b1), (c0, c1)] = self
                .accumulator_cut_ranges
                .unwrap_or([(block_frac, block_frac), (acc_frac, acc_frac)]);
            let also = if self.accumulator_cut_rounding_decided {
                ""
            } else {
                " (or the other way, not told apart)"
            };
            write!(
                f,
                ", each block's products summed first, that sum and the running value then \
                 aligned to the larger exponent and cut {}{also} to {block_frac} ({b0}-{b1} \
                 consistent) and {acc_frac} ({c0}-{c1} consistent) fraction bits, added and \
                 rounded to nearest",
                rounding.words()
            )?;
            if let Some(reach) = self.acc_reach_words() {
                write!(f, ", {reach}")?;
            }
        }
        write!(
            f,
            ", {binary}; {} random inputs reproduced bit for bit",
            self.inputs
        )?;
        if let Some(s) = self.structure {
            write!(f, "; {s}")?;
        }
        Ok(())
    }
}

/// The block structure in words: products per block, where the running value enters,
/// and the promotion interval, each with its consistent range.
///
/// ```
/// let model = fprev::fused::BlockFma::V100;
/// let r = fprev::Reveal::new(16).run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))?;
/// let s = r.arithmetic().and_then(|a| a.structure).expect("a chain of blocks");
/// assert_eq!(
///     s.to_string(),
///     "block size 4 (4-4 consistent) products, the running value aligned with each \
///      block's products, no promotion within 16 products (every 16 or more consistent)"
/// );
/// # Ok::<(), fprev::RevealError>(())
/// ```
impl std::fmt::Display for ChainStructure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "block size {} products, ", self.nfma)?;
        f.write_str(match self.accumulator {
            Some(AccumulatorJoin::Aligned) => {
                "the running value aligned with each block's products"
            }
            Some(AccumulatorJoin::Late) => {
                "each block's result added to the running value afterwards"
            }
            None => "where the running value enters not seen (one block, nothing runs before it)",
        })?;
        match self.promotion {
            Some(p) => write!(f, ", promotion interval {p} products"),
            None => write!(
                f,
                ", no promotion within {} products (every {} or more consistent)",
                self.n, self.unpromoted_from
            ),
        }
    }
}

impl FittedFused {
    /// How the alignment cut each term, in words, with a note when the answers did not
    /// tell the roundings apart (for reports).
    ///
    /// ```
    /// let model = fprev::fused::BlockFma::V100;
    /// let r = fprev::Reveal::new(16).run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))?;
    /// assert_eq!(r.arithmetic().unwrap().align_rounding_words(), "cut toward zero");
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn align_rounding_words(&self) -> String {
        let verb = if self.align_rounding == Rounding::TowardZero {
            "cut"
        } else {
            "rounded"
        };
        let also = if self.align_rounding_decided {
            ""
        } else {
            " (or another way, not told apart)"
        };
        format!("{verb} {}{also}", self.align_rounding.words())
    }

    /// How a block's products were fused in two interleaved halves (AMD CDNA3's FP8
    /// instructions), in words; `None` for one group.
    ///
    /// ```
    /// let model = fprev::fused::BlockFma::V100;
    /// let r = fprev::Reveal::new(16).run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))?;
    /// assert_eq!(r.arithmetic().unwrap().halves_words(), None);
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn halves_words(&self) -> Option<String> {
        let AccumulatorCut::TwoStage {
            halves: true,
            rounding,
            ..
        } = self.accumulator_cut
        else {
            return None;
        };
        Some(format!(
            "fused in two interleaved halves (even and odd k), the half sums cut {} to {} \
             bits below the larger of their exponents and added",
            rounding.words(),
            self.frac
        ))
    }

    /// Whether a running value far below a block is dropped, in words, where the fit
    /// tried it (AMD CDNA3's FP8 instructions drop one more than 25 binades below);
    /// `None` where it was not tried.
    ///
    /// ```
    /// let model = fprev::fused::BlockFma::V100;
    /// let r = fprev::Reveal::new(16).run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))?;
    /// assert_eq!(r.arithmetic().unwrap().acc_reach_words(), None);
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn acc_reach_words(&self) -> Option<String> {
        let AccumulatorCut::TwoStage { acc_reach, .. } = self.accumulator_cut else {
            return None;
        };
        match (acc_reach, self.acc_reach_decided) {
            (Some(r), true) => Some(format!(
                "the running value taken as zero more than {r} binades below"
            )),
            (Some(r), false) => Some(format!(
                "the running value taken as zero more than {r} binades below (or never, not \
                 told apart)"
            )),
            (None, false) => {
                Some("whether a running value far below is dropped not told apart".into())
            }
            (None, true) => None,
        }
    }

    /// What else the answers allow of the results' rounding, in parentheses (empty when
    /// nothing else does).
    ///
    /// ```
    /// let model = fprev::fused::BlockFma::V100;
    /// let r = fprev::Reveal::new(16).run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))?;
    /// assert_eq!(r.arithmetic().unwrap().result_alternatives(), " (23-23 consistent)");
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn result_alternatives(&self) -> String {
        match (self.frac_out, self.frac_out_range, self.frac_out_rounded) {
            (Some(_), Some((lo, hi)), false) => format!(" ({lo}-{hi} consistent)"),
            (Some(_), Some((lo, hi)), true) => {
                format!(" ({lo}-{hi} consistent, or rounded to nearest)")
            }
            (None, Some((lo, hi)), _) => {
                format!(" (truncation to {lo}-{hi} fraction bits also consistent)")
            }
            _ => String::new(),
        }
    }
}

/// Which binary nodes of a fitted tree are fused nodes of the model.
///
/// ```
/// use fprev::reveal::BinaryNodes;
/// assert_ne!(BinaryNodes::Rounded, BinaryNodes::Fused);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryNodes {
    /// None: every binary node is one round-to-nearest addition.
    Rounded,
    /// Every binary node is a two-term fused node.
    Fused,
    /// Binary nodes over two leaves (blocks of two products) are fused; the others,
    /// which join partial results, round to nearest.
    LeafPairs,
    /// Binary nodes joining a multi-way node and a leaf (a chain's short last block:
    /// the running value and one product) are fused; the others round to nearest.
    AfterFused,
}

#[derive(Clone, Copy)]
struct Candidate {
    model: BlockFma,
    binary: BinaryNodes,
}

impl Candidate {
    fn new<T: ProbeFloat>(
        frac: u32,
        frac_out: Option<u32>,
        alignment: Alignment,
        binary: BinaryNodes,
        accumulator_cut: AccumulatorCut,
        align_rounding: Rounding,
    ) -> Candidate {
        // the hardware rule clamps exponents at the accumulator format's normal range
        // (MMA-Sim's and Khattak and Mikaitis's models of NVIDIA's units); the textbook
        // rule has no clamp, and neither has AMD's, whose blocks align their products
        // alone
        let nvidia = alignment == Alignment::OperandExponents
            && accumulator_cut == AccumulatorCut::WithProducts;
        let min_exp = nvidia.then_some(T::FORMAT.min_exp);
        Candidate {
            model: BlockFma {
                nfma: 1,
                frac,
                frac_out,
                accumulator: AccumulatorJoin::Aligned,
                chunk: None,
                alignment,
                min_exp,
                align_rounding,
                accumulator_cut,
            },
            binary,
        }
    }

    /// `tree` over `x`, the leaves' operand exponent sums `exps` when known.
    fn replay<T: ProbeFloat>(&self, tree: &SumTree, x: &[T], exps: Option<&[i32]>) -> T {
        let n = tree.leaf_count() as u32;
        let multiway = |c: u32| c >= n && tree.children(c as usize).len() > 2;
        let fused_pair = |kids: [u32; 2]| match self.binary {
            BinaryNodes::Rounded => false,
            BinaryNodes::Fused => true,
            BinaryNodes::LeafPairs => kids[0] < n && kids[1] < n,
            BinaryNodes::AfterFused => {
                (multiway(kids[0]) && kids[1] < n) || (multiway(kids[1]) && kids[0] < n)
            }
        };
        let m = self.model;
        // a leaf aligns by its operands' exponent sum under the hardware rule when the
        // target said what it is; anything else by the value's own exponent
        let term = |c: u32, v: f64| -> (f64, i32) {
            match (m.alignment, exps) {
                (Alignment::OperandExponents, Some(e)) if c < n => (v, e[c as usize]),
                _ => (v, m.exponent::<T>(v)),
            }
        };
        let buf = RefCell::new(Vec::new());
        if m.accumulator_cut != AccumulatorCut::WithProducts {
            return self.replay_two_stage(tree, x, &term);
        }
        tree.replay_with(
            x,
            |kids, vals| {
                let mut terms = buf.borrow_mut();
                terms.clear();
                terms.extend(kids.iter().zip(vals).map(|(&c, &v)| term(c, v)));
                m.node(&terms)
            },
            |kids, a: T, b: T| {
                if fused_pair(kids) {
                    m.node(&[term(kids[0], a.to_f64()), term(kids[1], b.to_f64())])
                } else {
                    a.add(b)
                }
            },
        )
    }

    /// [`replay`](Self::replay) under a two-stage cut of the running value: a
    /// multi-way node with one inner child is a block whose leaves are its products and
    /// whose inner child is the running value; a binary node over an inner node and a
    /// leaf is a block of one product; any other binary node is one round-to-nearest
    /// addition.
    fn replay_two_stage<T: ProbeFloat>(
        &self,
        tree: &SumTree,
        x: &[T],
        term: &dyn Fn(u32, f64) -> (f64, i32),
    ) -> T {
        let n = tree.leaf_count() as u32;
        let m = self.model;
        let buf = RefCell::new(Vec::new());
        tree.replay_with(
            x,
            |kids, vals| {
                let mut terms = buf.borrow_mut();
                terms.clear();
                let mut acc = None;
                for (&c, &v) in kids.iter().zip(vals) {
                    if c >= n && acc.is_none() {
                        acc = Some(T::from_f64_round(v));
                    } else {
                        terms.push(term(c, v));
                    }
                }
                m.join(acc, m.node_exact(&terms))
            },
            |kids, a: T, b: T| {
                if kids[0] >= n && kids[1] < n {
                    m.join(Some(a), term(kids[1], b.to_f64()))
                } else {
                    a.add(b)
                }
            },
        )
    }
}

/// `tree` over `x` under a fitted model, the leaves' operand exponent sums `exps` when
/// the target gave them ([`crate::target::Target::operand_exponents`]).
pub(crate) fn replay<T: ProbeFloat>(
    f: FittedFused,
    tree: &SumTree,
    x: &[T],
    exps: Option<&[i32]>,
) -> T {
    Candidate::new::<T>(
        f.frac,
        f.frac_out,
        f.alignment,
        f.binary,
        f.accumulator_cut,
        f.align_rounding,
    )
    .replay(tree, x, exps)
}

/// Whether `tree` has a running value: a node of three or more children one of which is
/// an inner node, where a two-stage cut of it could act.
fn has_running_values(tree: &SumTree) -> bool {
    let n = tree.leaf_count();
    (n..n + tree.inner_count()).any(|v| {
        let kids = tree.children(v);
        kids.len() > 2 && kids.iter().any(|&c| c as usize >= n)
    })
}

/// The two-stage cuts fitted where a tree has running values: each rounding of the cut,
/// block widths and running-value widths around those of the published units.
fn two_stage_candidates(halves: bool) -> impl Iterator<Item = AccumulatorCut> {
    // CDNA3's FP8 instructions drop a running value 25 binades below; fitted beside
    // never dropping it, where the products come in halves
    let reaches: &'static [Option<u32>] = if halves { &[None, Some(25)] } else { &[None] };
    [Rounding::TowardNegative, Rounding::TowardZero]
        .into_iter()
        .flat_map(move |rounding| {
            (JOIN_BLOCK_FRAC.0..=JOIN_BLOCK_FRAC.1).flat_map(move |block_frac| {
                (JOIN_ACC_FRAC.0..=JOIN_ACC_FRAC.1).flat_map(move |acc_frac| {
                    reaches
                        .iter()
                        .map(move |&acc_reach| AccumulatorCut::TwoStage {
                            block_frac,
                            acc_frac,
                            rounding,
                            halves,
                            acc_reach,
                        })
                })
            })
        })
}

/// Whether `tree` has blocks of at least [`HALVES_MIN`] products, where interleaved
/// halves of them could be fused apart.
fn has_wide_blocks(tree: &SumTree) -> bool {
    let n = tree.leaf_count();
    (n..n + tree.inner_count()).any(|v| {
        tree.children(v)
            .iter()
            .filter(|&&c| (c as usize) < n)
            .count()
            >= HALVES_MIN
    })
}

/// The fewest products per block for which interleaved halves are fitted: CDNA3's FP8
/// groups hold 16; a half of 2 or more products is where the halves cut differently.
const HALVES_MIN: usize = 4;

/// The block widths a two-stage cut is fitted over.
const JOIN_BLOCK_FRAC: (u32, u32) = (22, 40);
/// The running-value widths a two-stage cut is fitted over.
const JOIN_ACC_FRAC: (u32, u32) = (20, 30);
/// The alignment widths fitted with a two-stage cut: blocks of products whose sum the
/// second stage cuts again.
const JOIN_FRAC: (u32, u32) = (10, 30);

/// Random inputs a truncating tree is replayed on: more than a plain tree's, because a
/// family of models is fitted to them and a wrong tree must miss with every one.
pub(crate) fn inputs_for(n: usize) -> usize {
    (16384 / n.max(1)).clamp(16, 64)
}

/// The most random inputs a fit that must decide the result width draws.
const MAX_DECIDING_INPUTS: usize = 64;

/// Fit a block-FMA model of `tree`'s fused nodes to the target on random inputs: the
/// published family first (terms cut toward zero in alignment), then, where no member
/// of it reproduces the answers, the same family with the terms rounded to nearest even
/// or toward minus infinity instead. A tree no member reproduces is refused with the
/// first family's error.
pub(crate) fn fit<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
) -> Result<FittedFused, RevealError> {
    fit_inputs(prober, tree, seed, false)
}

/// [`fit`], and with `decide`, more inputs (up to [`MAX_DECIDING_INPUTS`]) while the
/// result width is still open: in a long chain with fast accumulation the running value
/// dominates every block, and a width only shows where a block's sum carries, which
/// few random inputs make happen.
pub(crate) fn fit_inputs<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
    decide: bool,
) -> Result<FittedFused, RevealError> {
    match fit_with(prober, tree, seed, &[Rounding::TowardZero], decide) {
        Err(e @ RevealError::FusedUnverified { .. }) => fit_with(
            prober,
            tree,
            seed,
            &[Rounding::NearestEven, Rounding::TowardNegative],
            decide,
        )
        .map_err(|other| match other {
            RevealError::FusedUnverified { .. } => e,
            other => other,
        }),
        other => other,
    }
}

/// Whether some model of `tried` reproduces every answer of `seen` once the inputs are
/// cut to TF32 (their low 13 bits dropped, as a Tensor Core reading f32 operands for a
/// TF32 instruction does): f32 values only, every other format `false`.
fn reads_tf32<T: ProbeFloat>(tree: &SumTree, tried: &[Candidate], seen: &[(Vec<T>, T)]) -> bool {
    use crate::float::{Tf32, Tf32Rounding};
    if T::FORMAT != f32::FORMAT || seen.is_empty() {
        return false;
    }
    let cut: Vec<(Vec<T>, T)> = seen
        .iter()
        .map(|(x, want)| {
            let x = x
                .iter()
                .map(|v| {
                    let t = Tf32::from_f32(v.to_f64() as f32, Tf32Rounding::TowardZero);
                    T::from_f64_round(f64::from(t.to_f32()))
                })
                .collect();
            (x, *want)
        })
        .collect();
    // inputs a TF32 cut leaves unchanged tell nothing about it
    if cut.iter().zip(seen).all(|(c, s)| c.0 == s.0) {
        return false;
    }
    tried.iter().any(|c| {
        cut.iter()
            .all(|(x, want)| c.replay(tree, x, None).to_bits_u64() == want.to_bits_u64())
    })
}

/// [`fit_inputs`] over models whose alignment cuts terms as one of `roundings` says.
fn fit_with<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
    roundings: &[Rounding],
    decide: bool,
) -> Result<FittedFused, RevealError> {
    let n = tree.leaf_count();
    let out_bits = T::FORMAT.precision - 1;
    let mut x = vec![T::ZERO; n];
    let planned = inputs_for(n);
    let most = if decide {
        planned.max(MAX_DECIDING_INPUTS)
    } else {
        planned
    };
    let mut inputs = 0;
    let mut candidates: Vec<Candidate> = Vec::new();
    // every model tried and every input answered, for the TF32 hint of a refusal
    let mut tried: Vec<Candidate> = Vec::new();
    let mut seen: Vec<(Vec<T>, T)> = Vec::new();
    for k in 0..most {
        let open = candidates
            .iter()
            .any(|c| c.model.frac_out != candidates[0].model.frac_out);
        if k >= planned && !open {
            break;
        }
        inputs = k + 1;
        let input_seed = seed ^ 0xF17_0000_0000 ^ k as u64;
        prober.random_input(input_seed, &mut x);
        // asked before the call, which consumes the drawn operands
        let exps = prober.operand_exponents(&x);
        if k == 0 {
            // the hardware rule first where products have operands, so that a tie names
            // it; for plain summands the two agree and the textbook rule is named
            let alignments = if exps.is_some() {
                [Alignment::OperandExponents, Alignment::ProductExponent]
            } else {
                [Alignment::ProductExponent, Alignment::OperandExponents]
            };
            for alignment in alignments {
                for binary in [
                    BinaryNodes::Rounded,
                    BinaryNodes::AfterFused,
                    BinaryNodes::LeafPairs,
                    BinaryNodes::Fused,
                ] {
                    for frac_out in std::iter::once(None).chain((2..=out_bits).map(Some)) {
                        for frac in 2..=MAX_FRAC {
                            for &rounding in roundings {
                                candidates.push(Candidate::new::<T>(
                                    frac,
                                    frac_out,
                                    alignment,
                                    binary,
                                    AccumulatorCut::WithProducts,
                                    rounding,
                                ));
                            }
                        }
                    }
                }
            }
            // AMD's second stage rounds to nearest once, after the cut: no result width
            // also over one wide block with no running value: the first block meets a
            // zero one, and its products' sum is still cut before it is rounded
            if has_running_values(tree) || has_wide_blocks(tree) {
                let halves = [false, true]
                    .into_iter()
                    .take(1 + has_wide_blocks(tree) as usize);
                for join in halves.flat_map(two_stage_candidates) {
                    for frac in JOIN_FRAC.0..=JOIN_FRAC.1 {
                        for &rounding in roundings {
                            candidates.push(Candidate::new::<T>(
                                frac,
                                None,
                                alignments[0],
                                BinaryNodes::Rounded,
                                join,
                                rounding,
                            ));
                        }
                    }
                }
            }
        }
        if k == 0 {
            tried.clone_from(&candidates);
        }
        let want = prober.call(&x)?;
        if exps.is_none() {
            seen.push((x.clone(), want));
        }
        let same = |got: T| {
            got.to_bits_u64() == want.to_bits_u64()
                || (got.to_f64().is_nan() && want.to_f64().is_nan())
        };
        candidates.retain(|c| same(c.replay(tree, &x, exps.as_deref())));
        if candidates.is_empty() {
            let text = crate::reveal::error::clip(tree.to_string());
            let reads_tf32 = exps.is_none() && reads_tf32(tree, &tried, &seen);
            return Err(RevealError::FusedUnverified {
                tree: text,
                input_seed,
                target: want.to_f64(),
                reads_tf32,
            });
        }
    }
    let best = candidates[0];
    // both rules still in: the inputs never told them apart
    let decided = candidates
        .iter()
        .all(|c| c.model.alignment == best.model.alignment);
    let align_rounding_decided = candidates
        .iter()
        .all(|c| c.model.align_rounding == best.model.align_rounding);
    let same_rule = || {
        candidates.iter().filter(|c| {
            c.model.alignment == best.model.alignment
                && c.model.align_rounding == best.model.align_rounding
        })
    };
    let frac_max = same_rule()
        .map(|c| c.model.frac)
        .max()
        .unwrap_or(best.model.frac);
    let widths = || same_rule().filter_map(|c| c.model.frac_out);
    let frac_out_range = widths().min().zip(widths().max());
    let frac_out_rounded = same_rule().any(|c| c.model.frac_out.is_none());
    let accumulator_cut_ranges = match best.model.accumulator_cut {
        AccumulatorCut::WithProducts => None,
        AccumulatorCut::TwoStage { rounding, .. } => {
            let joins: Vec<(u32, u32)> = same_rule()
                .filter_map(|c| match c.model.accumulator_cut {
                    AccumulatorCut::TwoStage {
                        block_frac,
                        acc_frac,
                        rounding: r,
                        ..
                    } if r == rounding => Some((block_frac, acc_frac)),
                    _ => None,
                })
                .collect();
            let range = |f: fn(&(u32, u32)) -> u32| {
                let lo = joins.iter().map(f).min().unwrap_or(0);
                (lo, joins.iter().map(f).max().unwrap_or(lo))
            };
            Some([range(|j| j.0), range(|j| j.1)])
        }
    };
    let roundings = || {
        same_rule().filter_map(|c| match c.model.accumulator_cut {
            AccumulatorCut::TwoStage { rounding, .. } => Some(rounding),
            AccumulatorCut::WithProducts => None,
        })
    };
    let first_rounding = roundings().next();
    let accumulator_cut_rounding_decided = roundings().all(|r| Some(r) == first_rounding);
    let reach = |c: &Candidate| match c.model.accumulator_cut {
        AccumulatorCut::TwoStage { acc_reach, .. } => acc_reach,
        AccumulatorCut::WithProducts => None,
    };
    let acc_reach_decided = same_rule().all(|c| reach(c) == reach(&best));
    Ok(FittedFused {
        align_rounding: best.model.align_rounding,
        align_rounding_decided,
        acc_reach_decided,
        accumulator_cut_rounding_decided,
        accumulator_cut: best.model.accumulator_cut,
        accumulator_cut_ranges,
        frac_out_range,
        frac_out_rounded,
        frac: best.model.frac,
        frac_max,
        frac_out: best.model.frac_out,
        alignment: best.model.alignment,
        alignment_decided: decided,
        binary: best.binary,
        inputs,
        candidates: candidates.len(),
        structure: ChainStructure::of(tree),
    })
}
