//! Reusing the shape of subtrees already revealed.
//!
//! Libraries repeat themselves: every block of a blocked sum, every lane of a strided one,
//! both halves of a pairwise one have the same tree, shifted. When a subtree is about to be
//! built over a leaf set that is a shifted copy of one already built, the shifted tree is
//! guessed and verified with one probe per inner node (a sample first): for node `v`
//! with children `L` and `R`, `l(min L, min R)` must be `|v|`. Where `l` is the size of
//! the meeting node (binary and truncating fused nodes) this is a proof by induction; below
//! a fused node that rounds once a binary split is refuted by the check above it (see the
//! `known` module, which proves whole guessed trees the same way, with [`prove_shape`]).
//! Only binary subtrees are kept as templates; a failed guess costs its probes and the
//! subtree is built normally.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::arena::Arena;
use super::error::RevealError;
use super::prober::Prober;
use crate::float::ProbeFloat;
use crate::scramble::rng::splitmix64;
use crate::target::{Probe, Target};
use crate::tree::SumTree;

/// Templates smaller than this are cheaper to build than to look up.
const MIN_TEMPLATE: usize = 4;

/// FxHash's multiply-rotate mix: the keys are fprev's own offsets, not attacker input,
/// and SipHash over every leaf set was a visible share of a cheap target's reveal.
#[derive(Default, Clone, Copy)]
struct Mix(u64);

impl Mix {
    fn mix(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
    }
    fn write_u32(&mut self, x: u32) {
        self.mix(u64::from(x));
    }
    fn write_u64(&mut self, x: u64) {
        self.mix(x);
    }
    fn write_usize(&mut self, x: usize) {
        self.mix(x as u64);
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Mix>>;

/// Shapes of binary subtrees keyed by their leaf set shifted to start at 0.
#[derive(Default)]
pub(crate) struct Templates {
    /// Inner nodes in post-order; a child `c` is a leaf offset, or `NODE | k` for node `k`.
    shapes: FastMap<Key, Vec<[u32; 2]>>,
    pub hits: u64,
    pub misses: u64,
}

pub(crate) const NODE: u32 = 1 << 31;

/// A leaf set shifted to start at 0, as a fingerprint: its size, its span and a
/// commutative hash of its offsets, in one pass without sorting (sorting every subtree's
/// leaves was a visible cost). Sets that collide only cost a failed proof: a template is
/// never used unproved, and the span keeps its offsets inside `base..=max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    size: u32,
    span: u32,
    mix: u64,
}

/// The key of `leaves` (non-empty) and their smallest leaf.
fn key(leaves: &[usize]) -> (Key, u32) {
    let (lo, hi) = leaves
        .iter()
        .fold((usize::MAX, 0), |(lo, hi), &l| (lo.min(l), hi.max(l)));
    let mix = leaves
        .iter()
        .fold(0u64, |m, &l| m.wrapping_add(splitmix64((l - lo) as u64)));
    let key = Key {
        size: leaves.len() as u32,
        span: (hi - lo) as u32,
        mix,
    };
    (key, lo as u32)
}

impl Templates {
    /// Remember the subtree at `root` if it is binary and large enough.
    pub fn record(&mut self, arena: &Arena, root: u32) {
        let size = arena.size[root as usize] as usize;
        if size < MIN_TEMPLATE {
            return;
        }
        let (k, base) = key(&arena.leaves_under(root));
        if self.shapes.contains_key(&k) {
            return;
        }
        // post-order walk, children before parents; each finished child leaves its
        // encoding on `done`, so a node finds its children's there (no id map)
        let mut shape: Vec<[u32; 2]> = Vec::with_capacity(size - 1);
        let mut done: Vec<u32> = Vec::with_capacity(size);
        let mut stack: Vec<(u32, bool)> = vec![(root, false)];
        while let Some((v, expanded)) = stack.pop() {
            if (v as usize) < arena.n {
                done.push(v - base);
                continue;
            }
            let kids = arena.kids(v);
            if kids.len() != 2 {
                return;
            }
            if expanded {
                let (Some(b), Some(a)) = (done.pop(), done.pop()) else {
                    return;
                };
                shape.push([a, b]);
                done.push(NODE | (shape.len() as u32 - 1));
            } else {
                // kids[0] is finished first, so its encoding sits below kids[1]'s
                stack.push((v, true));
                stack.push((kids[1], false));
                stack.push((kids[0], false));
            }
        }
        self.shapes.insert(k, shape);
    }

    /// Try the template for `leaves`; on success the subtree is in the arena.
    pub fn try_build<T: ProbeFloat, X: Target<T>>(
        &mut self,
        prober: &mut Prober<T, X>,
        arena: &mut Arena,
        leaves: &[usize],
    ) -> Result<Option<u32>, RevealError> {
        if leaves.len() < MIN_TEMPLATE {
            return Ok(None);
        }
        let (k, base) = key(leaves);
        let Some(shape) = self.shapes.get(&k) else {
            return Ok(None);
        };
        if !prove_shape(prober, shape, base)? {
            self.misses += 1;
            return Ok(None);
        }
        self.hits += 1;
        let mut ids: Vec<u32> = Vec::with_capacity(shape.len());
        for kids in shape {
            let id = |c: u32| {
                if c & NODE != 0 {
                    ids[(c & !NODE) as usize]
                } else {
                    c + base
                }
            };
            let node = arena.node(&[id(kids[0]), id(kids[1])], false);
            ids.push(node);
        }
        Ok(ids.last().copied())
    }
}

/// Nodes proved before the rest, so a wrong guess costs few probes.
const SAMPLE: usize = 32;

/// Where the proof of inner node `k` goes among `len`: every `step`-th node first (the
/// sample, [`SAMPLE`] of them), the others after in order.
struct SampleFirst {
    step: usize,
    sampled: usize,
    k: usize,
    /// `k / step` and `k % step`, kept incrementally (a division per node was visible).
    q: usize,
    r: usize,
}

impl SampleFirst {
    fn new(len: usize) -> SampleFirst {
        let step = (len / SAMPLE).max(1);
        SampleFirst {
            step,
            sampled: len.div_ceil(step),
            k: 0,
            q: 0,
            r: 0,
        }
    }

    /// The slot of the next node.
    #[inline]
    fn next_slot(&mut self) -> usize {
        let slot = if self.r == 0 {
            self.q
        } else {
            self.sampled + self.k - self.q - 1
        };
        self.k += 1;
        self.r += 1;
        if self.r == self.step {
            self.r = 0;
            self.q += 1;
        }
        slot
    }
}

/// Prove the binary `shape` (post-order; a child is a leaf offset from `base`, or
/// `NODE | k` for inner node `k`) against the target with one probe per inner node, a
/// sample first.
pub(crate) fn prove_shape<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    shape: &[[u32; 2]],
    base: u32,
) -> Result<bool, RevealError> {
    Proof::of_shape(shape, base).holds(prober)
}

/// One probe per inner node of a binary tree, with the count it must lose, a sample of
/// [`SAMPLE`] first: for node `v` with children `L` and `R`, `l(min L, min R) = |v|`.
/// Probes and counts are kept apart, so each batch is a slice the target reads in place.
pub(crate) struct Proof {
    probes: Vec<Probe>,
    lost: Vec<u32>,
    slots: SampleFirst,
}

impl Proof {
    fn new(len: usize) -> Proof {
        Proof {
            probes: vec![Probe { plus: 0, minus: 0 }; len],
            lost: vec![0; len],
            slots: SampleFirst::new(len),
        }
    }

    /// Add the next inner node's probe (post-order) in its slot.
    #[inline]
    fn push(&mut self, a: u32, b: u32, lost: u32) {
        let slot = self.slots.next_slot();
        self.probes[slot] = Probe {
            plus: a as usize,
            minus: b as usize,
        };
        self.lost[slot] = lost;
    }

    /// The proof of a template `shape` placed at `base`.
    fn of_shape(shape: &[[u32; 2]], base: u32) -> Proof {
        // per inner node: (smallest leaf, size)
        let mut info: Vec<(u32, u32)> = Vec::with_capacity(shape.len());
        let mut proof = Proof::new(shape.len());
        for kids in shape {
            let side = |c: u32, info: &Vec<(u32, u32)>| {
                if c & NODE != 0 {
                    info[(c & !NODE) as usize]
                } else {
                    (c + base, 1)
                }
            };
            let (a, sa) = side(kids[0], &info);
            let (b, sb) = side(kids[1], &info);
            proof.push(a, b, sa + sb);
            info.push((a.min(b), sa + sb));
        }
        proof
    }

    /// The proof of a whole tree; `None` when a node is not binary.
    pub fn of_tree(tree: &SumTree) -> Option<Proof> {
        let n = tree.leaf_count();
        let m = tree.inner_count();
        let pairs = tree.binary_pairs()?;
        // per node, leaves first: (smallest leaf, size), so no branch on leaf or node
        let mut info: Vec<(u32, u32)> = Vec::with_capacity(n + m);
        info.extend((0..n as u32).map(|i| (i, 1)));
        let mut proof = Proof::new(m);
        for pair in pairs.chunks_exact(2) {
            let (a, sa) = info[pair[0] as usize];
            let (b, sb) = info[pair[1] as usize];
            proof.push(a, b, sa + sb);
            info.push((a.min(b), sa + sb));
        }
        Some(proof)
    }

    /// Ask the sample as one batch, then the rest as another; whether every probe lost
    /// exactly its count. A proof that holds lends the re-check a uniform sample of its
    /// answers (all equal to their counts).
    pub fn holds<T: ProbeFloat, X: Target<T>>(
        &self,
        prober: &mut Prober<T, X>,
    ) -> Result<bool, RevealError> {
        let s = self.slots.sampled.min(self.probes.len());
        let holds = prober.expect(&self.probes[..s], &self.lost[..s])?
            && prober.expect(&self.probes[s..], &self.lost[s..])?;
        if holds {
            prober.sample_from(&self.probes, &self.lost);
        }
        Ok(holds)
    }
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn keys_see_leaf_sets_shifted_to_zero_in_any_order() {
        let (a, base_a) = key(&[7, 3, 5, 9]);
        let (b, base_b) = key(&[103, 105, 107, 109]);
        assert_eq!((base_a, base_b), (3, 103));
        assert_eq!(a, b);
        // same size and span, other offsets
        assert_ne!(key(&[3, 4, 5, 9]).0, a);
        assert_ne!(key(&[3, 5, 7]).0, a);
    }
}
