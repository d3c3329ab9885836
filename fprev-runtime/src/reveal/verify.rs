//! Checks that run after a tree is built, so a wrong tree is never returned silently:
//! sampled probes are asked again (nondeterminism) and compared with what the tree
//! predicts (consistency), then the tree is replayed on seeded random inputs and must
//! reproduce the target's bits (unless it has truncating fused nodes, whose rounding is
//! hardware-specific and which the probe checks cover).

use super::arena::{Arena, NONE};
use super::error::RevealError;
use super::naive::fill_random_input;
use super::prober::Prober;
use crate::float::ProbeFloat;
use crate::target::{Probe, Target};
use crate::tree::SumTree;

/// Replays check at least this many summed values (and at least [`MIN_REPLAYS`] and at
/// most [`MAX_REPLAYS`] inputs): every value is a rounded addition that a target which is
/// not a plain summation in this tree (wider accumulator, compensation, fused multiply-add)
/// gets wrong with fair probability, so large `n` needs fewer inputs, and for a target
/// costing well under a microsecond a call, eight replays of a long tree cost more than
/// every probe together.
const REPLAYED_VALUES: usize = 4096;
const MIN_REPLAYS: usize = 2;
const MAX_REPLAYS: usize = 8;

/// How many random inputs the tree is replayed on for `n` leaves.
pub(crate) fn replays_for(n: usize) -> usize {
    REPLAYED_VALUES
        .div_ceil(n.max(1))
        .clamp(MIN_REPLAYS, MAX_REPLAYS)
}

/// A random input the target has already answered (the known-order filter's), which the
/// replays reuse instead of calling the target again.
pub(crate) struct Answered<T> {
    pub seed: u64,
    pub input: Vec<T>,
    pub answer: T,
}

/// Lost counts a tree predicts for a probe.
pub(crate) trait Predict {
    /// `l(i, j)` in this tree, `None` where `i` and `j` do not meet.
    fn predicted_lost(&self, i: usize, j: usize) -> Option<u32>;
    /// Whether a node truncates (its bits are hardware-specific: no replay).
    fn truncates(&self) -> bool;
}

impl Predict for Arena {
    fn predicted_lost(&self, i: usize, j: usize) -> Option<u32> {
        Arena::predicted_lost(self, i, j)
    }
    fn truncates(&self) -> bool {
        self.trunc.iter().any(|&t| t)
    }
}

/// Predictions of a binary [`SumTree`] (a proved guess, which never needs the arena):
/// `l(i, j)` is the size of the meeting node.
pub(crate) struct BinaryTree {
    parent: Vec<u32>,
    size: Vec<u32>,
    /// Inner nodes in each inner node's subtree: in post-order they are the ids
    /// `v - inner[v] + 1 ..= v`, so containment is one comparison.
    inner: Vec<u32>,
}

impl BinaryTree {
    pub fn new(tree: &SumTree) -> BinaryTree {
        let n = tree.leaf_count();
        let total = n + tree.inner_count();
        let (mut parent, mut size, mut inner) =
            (vec![NONE; total], vec![1u32; total], vec![0u32; total]);
        for v in n..total {
            let (mut s, mut m) = (0, 1);
            for &c in tree.children(v) {
                parent[c as usize] = v as u32;
                s += size[c as usize];
                m += inner[c as usize];
            }
            size[v] = s;
            inner[v] = m;
        }
        BinaryTree {
            parent,
            size,
            inner,
        }
    }
}

impl Predict for BinaryTree {
    fn predicted_lost(&self, i: usize, j: usize) -> Option<u32> {
        // Climb from both leaves' parents in step; the first node that contains the
        // other side is the meeting node, found in the shorter climb's steps.
        let contains = |v: u32, u: u32| u <= v && u + self.inner[v as usize] > v;
        let (mut a, mut b) = (*self.parent.get(i)?, *self.parent.get(j)?);
        while a != NONE && b != NONE {
            if contains(a, b) {
                return Some(self.size[a as usize]);
            }
            if contains(b, a) {
                return Some(self.size[b as usize]);
            }
            a = self.parent[a as usize];
            b = self.parent[b as usize];
        }
        None
    }
    fn truncates(&self) -> bool {
        false
    }
}

pub(crate) fn check<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    shape: &dyn Predict,
    tree: &SumTree,
    seed: u64,
    answered: &[Answered<T>],
) -> Result<(), RevealError> {
    // One batch for all re-asks: the target's background is copied once, not per probe.
    let samples = prober.samples.clone();
    let probes: Vec<Probe> = samples.iter().map(|s| s.probe).collect();
    let again = prober.ask(&probes)?;
    for (s, again) in samples.iter().zip(again) {
        if let Some(again) = again {
            if again != s.lost {
                return Err(RevealError::Nondeterministic {
                    probe: s.probe,
                    first: s.lost as u64,
                    second: again as u64,
                });
            }
        }
        let predicted = shape.predicted_lost(s.probe.plus, s.probe.minus);
        if predicted != Some(s.lost) {
            return Err(RevealError::Inconsistent {
                detail: format!(
                    "probe {} lost {} units but the assembled tree predicts {:?}",
                    s.probe, s.lost, predicted
                ),
            });
        }
    }
    if shape.truncates() {
        return Ok(());
    }
    replay_matches(prober, tree, seed, answered)
}

pub(crate) fn replay_matches<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
    answered: &[Answered<T>],
) -> Result<(), RevealError> {
    let n = tree.leaf_count();
    let compare = |input_seed: u64, want: T, got: T| {
        let same = want.to_bits_u64() == got.to_bits_u64()
            || (want.to_f64().is_nan() && got.to_f64().is_nan());
        if same {
            return Ok(());
        }
        let mut text = tree.to_string();
        if text.len() > 200 {
            text.truncate(200);
            text.push_str("...");
        }
        Err(RevealError::NotPlainSummation {
            tree: text,
            input_seed,
            target_bits: want.to_bits_u64(),
            tree_bits: got.to_bits_u64(),
        })
    };
    let reused = answered
        .iter()
        .filter(|a| a.input.len() == n)
        .take(replays_for(n));
    let mut done = 0;
    for a in reused {
        compare(a.seed, a.answer, tree.replay(&a.input))?;
        done += 1;
    }
    let input = prober.target.input_format().unwrap_or(T::FORMAT);
    let mut x = vec![T::ZERO; n];
    for k in done..replays_for(n) {
        let input_seed = seed ^ 0x5EED_0000_0000 ^ k as u64;
        fill_random_input(input, input_seed, &mut x);
        let want = prober.call(&x)?;
        compare(input_seed, want, tree.replay(&x))?;
    }
    Ok(())
}
