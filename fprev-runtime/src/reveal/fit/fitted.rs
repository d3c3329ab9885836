//! What a fit found: the block-FMA parameters under which a tree reproduced its target
//! ([`FittedFused`]), with how far the inputs decided each, the chain it ran along
//! ([`ChainStructure`]), and the words the reports print for them.

use crate::fused::{AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, Rounding};
use crate::tree::SumTree;

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
