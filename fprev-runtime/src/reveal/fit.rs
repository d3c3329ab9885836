//! Verifying trees whose fused nodes truncate: the probes say where the nodes are, and
//! random inputs must then be reproduced bit for bit by the tree under *some* block-FMA
//! model of those nodes (see [`crate::fused`]). The model is fitted: every candidate
//! alignment width, result width and binary-node rounding is replayed on each random
//! input the target answered, and the candidates that miss are dropped. A tree that no
//! candidate follows on every input is refused, so a target that sorts its blocks,
//! truncates its results to integers or ignores its input never passes as fused hardware.

use super::error::RevealError;
use super::prober::Prober;
use crate::float::ProbeFloat;
use crate::fused::{aligned_sum, output, MAX_FRAC};
use crate::target::Target;
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
    /// Which binary nodes are fused (aligned, truncated) rather than round-to-nearest
    /// additions: probes cannot tell the two apart, the replays can.
    pub binary: BinaryNodes,
    /// Random inputs replayed, every one reproduced bit for bit.
    pub inputs: usize,
    /// Models that reproduced all of them (they agree on every input tried).
    pub candidates: usize,
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
    frac: u32,
    frac_out: Option<u32>,
    binary: BinaryNodes,
}

impl Candidate {
    fn node<T: ProbeFloat>(&self, terms: &[f64]) -> T {
        T::from_f64_round(output(aligned_sum(self.frac, terms), self.frac_out))
    }

    fn replay<T: ProbeFloat>(&self, tree: &SumTree, x: &[T]) -> T {
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
        tree.replay_with(
            x,
            |t| self.node(t),
            |kids, a: T, b: T| {
                if fused_pair(kids) {
                    self.node(&[a.to_f64(), b.to_f64()])
                } else {
                    a.add(b)
                }
            },
        )
    }
}

/// `tree` over `x` under a fitted model.
pub(crate) fn replay<T: ProbeFloat>(f: FittedFused, tree: &SumTree, x: &[T]) -> T {
    Candidate {
        frac: f.frac,
        frac_out: f.frac_out,
        binary: f.binary,
    }
    .replay(tree, x)
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
    let mut candidates = Vec::new();
    let binaries = [
        BinaryNodes::Rounded,
        BinaryNodes::AfterFused,
        BinaryNodes::LeafPairs,
        BinaryNodes::Fused,
    ];
    for binary in binaries {
        for frac_out in std::iter::once(None).chain((2..=out_bits).map(Some)) {
            for frac in 2..=MAX_FRAC {
                candidates.push(Candidate {
                    frac,
                    frac_out,
                    binary,
                });
            }
        }
    }
    let mut x = vec![T::ZERO; n];
    let inputs = inputs_for(n);
    for k in 0..inputs {
        let input_seed = seed ^ 0xF17_0000_0000 ^ k as u64;
        prober.random_input(input_seed, &mut x);
        let want = prober.call(&x)?;
        let same = |got: T| {
            got.to_bits_u64() == want.to_bits_u64()
                || (got.to_f64().is_nan() && want.to_f64().is_nan())
        };
        candidates.retain(|c| same(c.replay(tree, &x)));
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
    let frac_max = candidates.iter().map(|c| c.frac).max().unwrap_or(best.frac);
    Ok(FittedFused {
        frac: best.frac,
        frac_max,
        frac_out: best.frac_out,
        binary: best.binary,
        inputs,
        candidates: candidates.len(),
    })
}
