//! Reusing the shape of subtrees already revealed.
//!
//! Libraries repeat themselves: every block of a blocked sum, every lane of a strided one,
//! both halves of a pairwise one have the same tree, shifted. When a subtree is about to be
//! built over a leaf set that is a shifted copy of one already built, the shifted tree is
//! guessed and verified with one probe per inner node (a sample first): for node `v`
//! with children `L` and `R`, `l(min L, min R)` must be `|v|`. Where `l` is the size of
//! the meeting node (binary and truncating fused nodes) this is a proof by induction; below
//! a fused node that rounds once a binary split is refuted by the check above it (see the
//! `known` module, which proves whole guessed trees the same way, with [`Proof`]).
//! Only binary subtrees are kept as templates; a failed guess costs its probes and the
//! subtree is built normally.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::arena::{Arena, LeafHash};
use super::error::RevealError;
use super::prober::Prober;
use crate::float::ProbeFloat;
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

/// Binary subtrees already built, by their leaf set shifted to start at 0.
#[derive(Default)]
pub(crate) struct Templates {
    /// The root of one subtree in the arena per leaf set.
    shapes: FastMap<Key, u32>,
    /// Buffers reused from guess to guess: a template's inner nodes in pre-order with
    /// their two children, the walk's stack, and template node to new node.
    pre: Vec<(u32, [u32; 2])>,
    stack: Vec<u32>,
    map: Vec<u32>,
}

/// A leaf set shifted to start at 0, as a fingerprint: its size, its span and its
/// [`LeafHash`] shifted to 0. A subtree's comes from its root in the arena without a
/// leaf walk, a group's from one pass (sorting, or walking, every subtree's leaves was a
/// visible cost). Sets that collide only cost a failed proof: a template is never used
/// unproved, and the span keeps its offsets inside `base..=max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    size: u32,
    span: u32,
    mix: u64,
}

impl Key {
    /// The key of the leaves under `node`, and their smallest leaf.
    fn of_node(arena: &Arena, node: u32) -> (Key, u32) {
        let v = node as usize;
        let lo = arena.least[v];
        let key = Key {
            size: arena.size[v],
            span: arena.most[v] - lo,
            mix: LeafHash::mul(arena.hash[v], arena.unshift[lo as usize]),
        };
        (key, lo)
    }

    /// The key of `leaves` (non-empty), and their smallest leaf.
    fn of_leaves(arena: &Arena, leaves: impl Iterator<Item = usize>) -> (Key, u32) {
        let (lo, hi, size, hash) = leaves.fold((usize::MAX, 0, 0u32, 0), |(lo, hi, size, h), l| {
            (
                lo.min(l),
                hi.max(l),
                size + 1,
                LeafHash::add(h, arena.hash[l]),
            )
        });
        let key = Key {
            size,
            span: (hi - lo) as u32,
            mix: LeafHash::mul(hash, arena.unshift[lo]),
        };
        (key, lo as u32)
    }
}

impl Templates {
    /// Remember the subtree at `root` if it is binary and large enough. The arena only
    /// grows, so the template is the root's id: its shape is read when a shifted twin
    /// turns up (walking every finished subtree into a shape was a visible cost).
    pub fn record(&mut self, arena: &Arena, root: u32) {
        let v = root as usize;
        if (arena.size[v] as usize) < MIN_TEMPLATE || !arena.binary[v] {
            return;
        }
        let (k, _) = Key::of_node(arena, root);
        self.shapes.entry(k).or_insert(root);
    }

    /// Try the template for `leaves` (`len` of them); on success the subtree is in the
    /// arena.
    pub fn try_build<T: ProbeFloat, X: Target<T>>(
        &mut self,
        prober: &mut Prober<T, X>,
        arena: &mut Arena,
        len: usize,
        leaves: impl Iterator<Item = usize>,
    ) -> Result<Option<u32>, RevealError> {
        if len < MIN_TEMPLATE || self.shapes.is_empty() {
            return Ok(None);
        }
        let (k, base) = Key::of_leaves(arena, leaves);
        let Some(&root) = self.shapes.get(&k) else {
            return Ok(None);
        };
        // leaf `i` of the template is leaf `i + shift` here (mod 2^32: the shift may be
        // negative; equal keys keep every shifted leaf in range)
        let shift = base.wrapping_sub(arena.least[root as usize]);
        // the template's inner nodes, parents before children
        let n = arena.n as u32;
        self.pre.clear();
        self.stack.clear();
        self.stack.push(root);
        while let Some(v) = self.stack.pop() {
            if v >= n {
                // recorded templates are binary all the way down
                let &[a, b] = arena.kids(v) else {
                    return Ok(None);
                };
                self.pre.push((v, [a, b]));
                self.stack.extend([a, b]);
            }
        }
        let mut proof = Proof::new(self.pre.len());
        for &(v, [a, b]) in &self.pre {
            let least = |c: u32| arena.least[c as usize].wrapping_add(shift);
            proof.push(least(a), least(b), arena.size[v as usize]);
        }
        if !proof.holds(prober)? {
            return Ok(None);
        }
        // children before parents: the pre-order reversed
        self.map.resize(arena.size.len(), 0);
        for &(v, [a, b]) in self.pre.iter().rev() {
            let id = |c: u32| {
                if c < n {
                    c.wrapping_add(shift)
                } else {
                    self.map[c as usize]
                }
            };
            let kids = [id(a), id(b)];
            self.map[v as usize] = arena.node(&kids, false);
        }
        Ok(Some(self.map[root as usize]))
    }
}

/// Nodes proved before the rest, so a wrong guess costs few probes.
const SAMPLE: usize = 32;

/// One probe per inner node of a binary tree, with the count it must lose, a sample of
/// [`SAMPLE`] first: for node `v` with children `L` and `R`, `l(min L, min R) = |v|`.
/// Probes and counts are kept apart, so each batch is a slice the target reads in place.
pub(crate) struct Proof {
    probes: Vec<Probe>,
    lost: Vec<u32>,
}

impl Proof {
    fn new(len: usize) -> Proof {
        Proof {
            probes: Vec::with_capacity(len),
            lost: Vec::with_capacity(len),
        }
    }

    /// Add the next inner node's probe.
    #[inline]
    fn push(&mut self, a: u32, b: u32, lost: u32) {
        self.probes.push(Probe {
            plus: a as usize,
            minus: b as usize,
        });
        self.lost.push(lost);
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

    /// Move every `step`-th probe to the front, [`SAMPLE`] of them (any order proves the
    /// same; a sample spread over the tree refutes a wrong guess early). Swapping them
    /// in place, after pushing in walk order, spares placing each probe in a slot.
    /// Returns the sample's length.
    fn sample_first(&mut self) -> usize {
        let len = self.probes.len();
        let step = (len / SAMPLE).max(1);
        let sampled = len.div_ceil(step);
        // position k * step is untouched by the swaps before it (k * step > j for j < k)
        for k in 1..sampled {
            self.probes.swap(k, k * step);
            self.lost.swap(k, k * step);
        }
        sampled
    }

    /// Ask the sample as one batch, then the rest as another; whether every probe lost
    /// exactly its count. A proof that holds lends the re-check a uniform sample of its
    /// answers (all equal to their counts).
    pub fn holds<T: ProbeFloat, X: Target<T>>(
        mut self,
        prober: &mut Prober<T, X>,
    ) -> Result<bool, RevealError> {
        let s = self.sample_first();
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
    use super::super::arena::Arena;
    use super::Key;

    fn arena() -> Arena {
        let mut arena = Arena::new(200);
        arena.hash_leaf_sets();
        arena
    }

    #[test]
    fn keys_see_leaf_sets_shifted_to_zero_in_any_order() {
        let arena = arena();
        let key = |leaves: &[usize]| Key::of_leaves(&arena, leaves.iter().copied());
        let (a, base_a) = key(&[7, 3, 5, 9]);
        let (b, base_b) = key(&[103, 105, 107, 109]);
        assert_eq!((base_a, base_b), (3, 103));
        assert_eq!(a, b);
        // same size and span, other offsets
        assert_ne!(key(&[3, 4, 5, 9]).0, a);
        assert_ne!(key(&[3, 5, 7]).0, a);
    }

    #[test]
    fn node_keys_equal_their_leaf_sets_keys() {
        let mut arena = arena();
        // ((10+12)+(11+13)), children out of order, and a fused node grown by adoption
        let left = arena.node(&[10, 12], false);
        let right = arena.node(&[13, 11], false);
        let top = arena.node(&[right, left], false);
        let fused = arena.node(&[50, 52, 51], false);
        arena.adopt(fused, 53);
        for (node, leaves) in [(top, [10, 11, 12, 13]), (fused, [50, 51, 52, 53])] {
            assert_eq!(
                Key::of_node(&arena, node),
                Key::of_leaves(&arena, leaves.into_iter())
            );
        }
        assert_eq!(Key::of_node(&arena, top).0, Key::of_node(&arena, fused).0);
        let mut late = Arena::new(20);
        let v = late.node(&[3, 4], false);
        late.hash_leaf_sets();
        let w = late.node(&[v, 5], false);
        assert_eq!(
            Key::of_node(&late, w),
            Key::of_leaves(&late, [3, 4, 5].into_iter())
        );
    }
}
