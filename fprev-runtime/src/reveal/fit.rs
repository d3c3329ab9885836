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
use crate::float::ProbeFloat;
use crate::fused::{AccumulatorJoin, Alignment, BlockFma, MAX_FRAC};
use crate::target::Target;
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
        match self.frac_out {
            Some(k) => write!(f, "results truncated to {k} fraction bits")?,
            None => f.write_str("results rounded to nearest")?,
        }
        let binary = match self.binary {
            BinaryNodes::Rounded => "binary nodes rounded to nearest",
            BinaryNodes::Fused => "binary nodes fused",
            BinaryNodes::LeafPairs => "pairs of products fused, other binary nodes rounded",
            BinaryNodes::AfterFused => {
                "a fused node's result and one product fused, other binary nodes rounded"
            }
        };
        write!(
            f,
            ", {binary}; {} random inputs reproduced bit for bit",
            self.inputs
        )
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
    ) -> Candidate {
        // the hardware rule clamps exponents at the accumulator format's normal range
        // (MMA-Sim's and Khattak and Mikaitis's models); the textbook rule has no clamp
        let min_exp = (alignment == Alignment::OperandExponents).then_some(T::FORMAT.min_exp);
        Candidate {
            model: BlockFma {
                nfma: 1,
                frac,
                frac_out,
                accumulator: AccumulatorJoin::Aligned,
                chunk: None,
                alignment,
                min_exp,
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
}

/// `tree` over `x` under a fitted model, the leaves' operand exponent sums `exps` when
/// the target gave them ([`crate::target::Target::operand_exponents`]).
pub(crate) fn replay<T: ProbeFloat>(
    f: FittedFused,
    tree: &SumTree,
    x: &[T],
    exps: Option<&[i32]>,
) -> T {
    Candidate::new::<T>(f.frac, f.frac_out, f.alignment, f.binary).replay(tree, x, exps)
}

/// Random inputs a truncating tree is replayed on: more than a plain tree's, because a
/// family of models is fitted to them and a wrong tree must miss with every one.
pub(crate) fn inputs_for(n: usize) -> usize {
    (16384 / n.max(1)).clamp(16, 64)
}

/// Fit a block-FMA model of `tree`'s fused nodes to the target on random inputs.
pub(crate) fn fit<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
) -> Result<FittedFused, RevealError> {
    let n = tree.leaf_count();
    let out_bits = T::FORMAT.precision - 1;
    let mut x = vec![T::ZERO; n];
    let inputs = inputs_for(n);
    let mut candidates = Vec::new();
    for k in 0..inputs {
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
                            candidates.push(Candidate::new::<T>(frac, frac_out, alignment, binary));
                        }
                    }
                }
            }
        }
        let want = prober.call(&x)?;
        let same = |got: T| {
            got.to_bits_u64() == want.to_bits_u64()
                || (got.to_f64().is_nan() && want.to_f64().is_nan())
        };
        candidates.retain(|c| same(c.replay(tree, &x, exps.as_deref())));
        if candidates.is_empty() {
            let mut text = tree.to_string();
            if text.len() > 200 {
                text.truncate(200);
                text.push_str("...");
            }
            return Err(RevealError::FusedUnverified {
                tree: text,
                input_seed,
                target: want.to_f64(),
            });
        }
    }
    let best = candidates[0];
    let frac_max = candidates
        .iter()
        .filter(|c| c.model.alignment == best.model.alignment)
        .map(|c| c.model.frac)
        .max()
        .unwrap_or(best.model.frac);
    // both rules still in: the inputs never told them apart
    let decided = candidates
        .iter()
        .all(|c| c.model.alignment == best.model.alignment);
    Ok(FittedFused {
        frac: best.model.frac,
        frac_max,
        frac_out: best.model.frac_out,
        alignment: best.model.alignment,
        alignment_decided: decided,
        binary: best.binary,
        inputs,
        candidates: candidates.len(),
    })
}
