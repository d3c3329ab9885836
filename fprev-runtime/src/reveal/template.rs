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
use crate::black_box::{Probe, Target};
use crate::float::ProbeFloat;
use crate::tree::SumTree;

/// Templates smaller than this are cheaper to build than to look up.
const MIN_TEMPLATE: usize = 4;

/// FxHash's multiply-rotate mix: the keys are fprev's own offsets, not attacker input,
/// and hashing every leaf set is on a cheap target's hot path, where SipHash is slow.
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
    shapes: FastMap<LeafSetKey, u32>,
    /// Buffers reused from guess to guess: a template's inner nodes in pre-order with
    /// their two children, the walk's stack, and template node to new node.
    pre: Vec<(u32, [u32; 2])>,
    stack: Vec<u32>,
    map: Vec<u32>,
}

/// A leaf set shifted to start at 0, as a fingerprint: its size, its span and its
/// [`LeafHash`] shifted to 0. A subtree's comes from its root in the arena without a
/// leaf walk, a group's from one pass (no sorting or walking of every subtree's leaves,
/// which would cost more than a cheap target's probes). Sets that collide only cost a failed proof: a template is never used
/// unproved, and the span keeps its offsets inside `base..=max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct LeafSetKey {
    size: u32,
    span: u32,
    mix: u64,
}

impl LeafSetKey {
    /// The key of the leaves under `node`, and their smallest leaf.
    fn of_node(arena: &Arena, node: u32) -> (LeafSetKey, u32) {
        let v = node as usize;
        let lo = arena.least[v];
        let key = LeafSetKey {
            size: arena.size[v],
            span: arena.most[v] - lo,
            mix: LeafHash::mul(arena.hash[v], arena.unshift[lo as usize]),
        };
        (key, lo)
    }

    /// The key of `leaves` (non-empty), and their smallest leaf.
    fn of_leaves(arena: &Arena, leaves: impl Iterator<Item = usize>) -> (LeafSetKey, u32) {
        let (lo, hi, size, hash) = leaves.fold((usize::MAX, 0, 0u32, 0), |(lo, hi, size, h), l| {
            (
                lo.min(l),
                hi.max(l),
                size + 1,
                LeafHash::add(h, arena.hash[l]),
            )
        });
        let key = LeafSetKey {
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
    /// turns up, so finished subtrees that never get a twin cost no walk.
    pub fn record(&mut self, arena: &Arena, root: u32) {
        let v = root as usize;
        if (arena.size[v] as usize) < MIN_TEMPLATE || !arena.binary[v] {
            return;
        }
        let (k, _) = LeafSetKey::of_node(arena, root);
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
        let (k, base) = LeafSetKey::of_leaves(arena, leaves);
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
///
/// A whole guessed tree (with its nodes' heights known) is proved in far fewer calls when
/// the target answers inputs holding several probes ([`Target::probe_sets`]): see
/// [`Proof::grid`].
pub(crate) struct Proof {
    probes: Vec<Probe>,
    lost: Vec<u32>,
    /// Each node's height (longest path down to a leaf), when known.
    height: Option<Vec<u32>>,
}

/// Probe sets for a proof, as [`Prober::expect_sets`] asks them.
#[derive(Default)]
struct Sets {
    probes: Vec<Probe>,
    shift: Vec<u8>,
    ends: Vec<usize>,
    lost: Vec<u32>,
}

impl Sets {
    /// One input holding `nodes` (indices into the proof), node `nodes[j]` masked with
    /// `2^j M`.
    fn push(&mut self, proof: &Proof, nodes: impl Iterator<Item = usize>) {
        let mut lost = 0;
        for (j, v) in nodes.enumerate() {
            self.probes.push(proof.probes[v]);
            self.shift.push(j as u8);
            lost += proof.lost[v];
        }
        self.ends.push(self.probes.len());
        self.lost.push(lost);
    }
}

impl Proof {
    fn new(len: usize) -> Proof {
        Proof {
            probes: Vec::with_capacity(len),
            lost: Vec::with_capacity(len),
            height: None,
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
        // per node, leaves first: (smallest leaf, size, height), so no branch on leaf or node
        let mut info: Vec<(u32, u32, u32)> = Vec::with_capacity(n + m);
        info.extend((0..n as u32).map(|i| (i, 1, 0)));
        let mut proof = Proof::new(m);
        let mut height = Vec::with_capacity(m);
        for pair in pairs.chunks_exact(2) {
            let (a, sa, ha) = info[pair[0] as usize];
            let (b, sb, hb) = info[pair[1] as usize];
            proof.push(a, b, sa + sb);
            let h = ha.max(hb) + 1;
            height.push(h);
            info.push((a.min(b), sa + sb, h));
        }
        proof.height = Some(height);
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
            if let Some(h) = &mut self.height {
                h.swap(k, k * step);
            }
        }
        sampled
    }

    /// Every node in two inputs of up to `width` probes each, so that the two inputs'
    /// other nodes are disjoint: `None` when the heights are unknown or no input would
    /// hold two probes.
    ///
    /// Nodes of one height are pairwise disjoint; each height's nodes are the edges of
    /// complete graphs whose vertices are inputs: a node is in the two inputs it joins,
    /// and two inputs share that one node only. A graph of `v <= width + 1` inputs holds
    /// `v (v - 1) / 2` nodes, so `g` nodes take about `sqrt(2 g)` inputs (a square grid
    /// of rows and columns takes `2 sqrt(g)`: 12 inputs for the 32 windows of a blocked
    /// sum, against 9), and at most `width` probes go to an input. The node in slot `j`
    /// of an input is masked with `2^j M`: the masks of one input are distinct powers
    /// of two, so only a probe's own `-M` cancels its `+M`. Where the graph would take
    /// as many inputs as there are nodes (four or fewer), each node gets an input alone.
    ///
    /// Why an input that loses exactly the sum of its nodes' counts proves them, by
    /// induction on height: the children `L`, `R` of each node `v` in the input are nodes
    /// of the true tree. Every unit under a node whose masks do not cancel is lost, and
    /// the true tree's meeting node `w` of `v`'s probe has children `C ⊇ L` and
    /// `D ⊇ R` whose masks do not cancel, so the input loses at least the units of every
    /// `L ∪ R`, which is the expected count: equality means nothing else is lost, so
    /// `C ∪ D` lies within the union of the input's nodes. The two inputs of `v` share
    /// no other node, so `C ∪ D ⊆ v`: `C = L` and `D = R` are children of `w`, as one
    /// probe of `v` would have shown. (One input alone is not enough: `C` may swallow a
    /// neighbouring node whose units that node's own probe loses anyway.) A truncating
    /// fused node loses every unit under it, so there `w ⊆ v`.
    ///
    /// Nodes before `from` (the sample, proved one probe per input) are left out.
    fn grid(&self, width: usize, from: usize) -> Option<Sets> {
        let height = self.height.as_ref()?;
        if width < 2 {
            return None;
        }
        let top = height.iter().copied().max()? as usize;
        let mut levels: Vec<Vec<usize>> = vec![Vec::new(); top + 1];
        for (v, &h) in height.iter().enumerate().skip(from) {
            levels[h as usize].push(v);
        }
        if levels.iter().all(|l| l.len() < 2) {
            return None;
        }
        let mut sets = Sets::default();
        let mut inputs: Vec<Vec<usize>> = Vec::new();
        for level in &levels {
            for group in level.chunks(width * (width + 1) / 2) {
                let g = group.len();
                let v = (2..=width + 1)
                    .find(|v| v * (v - 1) / 2 >= g)
                    .unwrap_or(width + 1);
                if v >= g {
                    for &node in group {
                        sets.push(self, std::iter::once(node));
                    }
                    continue;
                }
                // edges (a, b), a < b, in order: input `a` holds every edge at `a`
                inputs.iter_mut().for_each(Vec::clear);
                inputs.resize(v.max(inputs.len()), Vec::new());
                let edges = (0..v).flat_map(|a| (a + 1..v).map(move |b| (a, b)));
                for (&node, (a, b)) in group.iter().zip(edges) {
                    inputs[a].push(node);
                    inputs[b].push(node);
                }
                for input in inputs.iter().filter(|i| !i.is_empty()) {
                    sets.push(self, input.iter().copied());
                }
            }
        }
        Some(sets)
    }

    /// Ask the sample as one batch, then the rest (as probe sets when the target
    /// answers them, else one probe per input); whether every probe lost exactly its
    /// count. A proof that holds lends the re-check a uniform sample of its answered
    /// single probes (all equal to their counts).
    pub fn holds<T: ProbeFloat, X: Target<T>>(
        mut self,
        prober: &mut Prober<T, X>,
    ) -> Result<bool, RevealError> {
        let s = self.sample_first();
        if !prober.expect(&self.probes[..s], &self.lost[..s])? {
            return Ok(false);
        }
        let mut single = self.probes.len();
        let mut rest = None;
        if let Some(sets) = self.grid(prober.set_width(), s) {
            rest = prober.expect_sets(&sets.probes, &sets.shift, &sets.ends, &sets.lost)?;
            if rest.is_some() {
                single = s;
            }
        }
        let holds = match rest {
            Some(holds) => holds,
            None => prober.expect(&self.probes[s..], &self.lost[s..])?,
        };
        if holds {
            prober.sample_from(&self.probes[..single], &self.lost[..single]);
        }
        Ok(holds)
    }
}

#[cfg(test)]
mod tests {
    use super::super::arena::Arena;
    use super::super::prober::Prober;
    use super::{LeafSetKey, Proof, Sets};
    use crate::black_box::FnTarget;
    use crate::SumTree;
    use rand::Rng;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// Whether every input of `sets` lost its count, asked of `truth`'s plain replay.
    fn sets_hold(truth: &SumTree, sets: &Sets) -> bool {
        let n = truth.leaf_count();
        let mut prober = Prober::new(FnTarget(|x: &[f64]| truth.replay(x)), n, 0).unwrap();
        prober
            .expect_sets(&sets.probes, &sets.shift, &sets.ends, &sets.lost)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn one_input_per_node_is_fooled_and_the_grid_is_not() {
        // The guess pairs (0,1) and (2,3); the truth hangs (2,3) under 0's side of the
        // node that meets 1. With both cherries in one input, (2,3) is swallowed by
        // (0,1)'s masked side, but its units are lost by its own probe anyway: the one
        // input loses what the guess predicts. The grid's second input of (0,1) holds
        // no other node, and refutes it.
        let guess: SumTree = "((0+1)+(2+3))".parse().unwrap();
        let truth: SumTree = "((0+(2+3))+1)".parse().unwrap();
        let proof = Proof::of_tree(&guess).unwrap();
        let mut one = Sets::default();
        one.push(&proof, [0, 1].into_iter());
        assert!(sets_hold(&truth, &one));
        let grid = proof.grid(16, 0).unwrap();
        assert!(!sets_hold(&truth, &grid));
        assert!(sets_hold(&guess, &grid));
    }

    /// A random tree over `n` leaves: random items of a pool combined, two at a time,
    /// or (with probability `fused`) 3 to 9 at a time.
    fn random_tree(n: usize, fused: f64, rng: &mut ChaCha8Rng) -> SumTree {
        let mut pool: Vec<usize> = (0..n).collect();
        let mut nodes: Vec<Vec<usize>> = Vec::new();
        while pool.len() > 1 {
            let k = if rng.random_bool(fused) {
                rng.random_range(3..=9usize)
            } else {
                2
            }
            .min(pool.len());
            let kids = (0..k)
                .map(|_| pool.swap_remove(rng.random_range(0..pool.len())))
                .collect();
            nodes.push(kids);
            pool.push(n + nodes.len() - 1);
        }
        SumTree::from_nodes(n, nodes).unwrap()
    }

    /// `tree` with leaves `i` and `j` exchanged and every multiway node split into
    /// random binary nodes: a binary guess close to the tree.
    fn binary_guess(tree: &SumTree, i: usize, j: usize, rng: &mut ChaCha8Rng) -> SumTree {
        let n = tree.leaf_count();
        let mut id: Vec<usize> = (0..n).collect();
        id.swap(i, j);
        let mut nodes: Vec<Vec<usize>> = Vec::new();
        for v in n..n + tree.inner_count() {
            let mut pool: Vec<usize> = tree.children(v).iter().map(|&c| id[c as usize]).collect();
            while pool.len() > 1 {
                let a = pool.swap_remove(rng.random_range(0..pool.len()));
                let b = pool.swap_remove(rng.random_range(0..pool.len()));
                nodes.push(vec![a, b]);
                pool.push(n + nodes.len() - 1);
            }
            id.push(pool[0]);
        }
        SumTree::from_nodes(n, nodes).unwrap()
    }

    #[test]
    fn probe_sets_never_prove_what_single_probes_refute() {
        // Every node of a guess close to the truth (two leaves exchanged, fused nodes
        // refined to binary) asked both ways, all of them: the grid's inputs and one
        // probe per node, against the truth summed plainly (fused nodes rounded once).
        let (mut wrong, mut refuted) = (0, 0);
        let cases = crate::scramble::config::proptest_cases(200);
        for case in 0..cases.max(200) {
            let seed = 0x9A1D_0000 + case;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let n = rng.random_range(8..=300);
            let fused = if case % 2 == 0 { 0.0 } else { 0.3 };
            let truth = random_tree(n, fused, &mut rng);
            let (i, j) = (rng.random_range(0..n), rng.random_range(0..n));
            let guess = binary_guess(&truth, i, j, &mut rng);
            let proof = Proof::of_tree(&guess).unwrap();
            let Some(grid) = proof.grid(16, 0) else {
                continue;
            };
            let target = FnTarget(|x: &[f64]| truth.replay(x));
            let mut prober = Prober::new(target, n, seed).unwrap();
            let singles = prober.expect(&proof.probes, &proof.lost).unwrap();
            let sets = prober
                .expect_sets(&grid.probes, &grid.shift, &grid.ends, &grid.lost)
                .unwrap()
                .unwrap();
            assert!(
                singles || !sets,
                "seed {seed}: probe sets proved {guess} for {truth}, single probes refute it"
            );
            if guess != truth {
                // a binary truth is refuted by single probes, so by the sets too
                assert!(fused > 0.0 || !singles, "seed {seed}: {guess} for {truth}");
                wrong += 1;
                refuted += usize::from(!sets);
            }
        }
        assert!(
            wrong > 100 && refuted > 100,
            "{wrong} wrong, {refuted} refuted"
        );
    }

    #[test]
    fn grids_hold_every_node_twice_with_distinct_masks_per_input() {
        for (tree, width) in [
            (SumTree::numpy_pairwise(5000), 16),
            (SumTree::xla_tree_reduction(3000), 22),
            (SumTree::pairwise(777), 5),
        ] {
            grid_holds_every_node_twice(&tree, width);
        }
        // XLA's 32 windows at n = 1024: each height's 32 nodes in 9 inputs (a complete
        // graph on 9 vertices has 36 edges), the top chain's 31 nodes an input each
        let tree = SumTree::xla_tree_reduction(1024);
        let grid = Proof::of_tree(&tree).unwrap().grid(22, 0).unwrap();
        assert_eq!(grid.ends.len(), 31 * 9 + 31);
    }

    /// Each node in two inputs that share no other node (or alone in one), at most
    /// `width` probes and distinct masks to an input, fewer than half as many inputs as
    /// nodes.
    fn grid_holds_every_node_twice(tree: &SumTree, width: usize) {
        let proof = Proof::of_tree(tree).unwrap();
        let grid = proof.grid(width, 0).unwrap();
        assert!(sets_hold(tree, &grid));
        let mut seen = vec![0u32; proof.probes.len()];
        let mut inputs: Vec<Vec<usize>> = Vec::new();
        let index: std::collections::HashMap<_, _> = proof
            .probes
            .iter()
            .enumerate()
            .map(|(v, p)| ((p.plus, p.minus), v))
            .collect();
        let mut start = 0;
        for &end in &grid.ends {
            let shifts = &grid.shift[start..end];
            let mut sorted = shifts.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), shifts.len(), "masks repeat in one input");
            assert!(shifts.len() <= width);
            let nodes: Vec<usize> = grid.probes[start..end]
                .iter()
                .map(|p| index[&(p.plus, p.minus)])
                .collect();
            for &v in &nodes {
                seen[v] += 1;
            }
            inputs.push(nodes);
            start = end;
        }
        // twice, or once alone in its input
        assert!(seen.iter().all(|&k| k == 1 || k == 2));
        for (a, x) in inputs.iter().enumerate() {
            for y in &inputs[a + 1..] {
                let shared = x.iter().filter(|v| y.contains(v)).count();
                assert!(shared <= 1, "two inputs share {shared} nodes");
            }
        }
        assert!(grid.ends.len() <= proof.probes.len());
        assert!(
            grid.ends.len() * 2 < proof.probes.len(),
            "{} inputs for {} nodes",
            grid.ends.len(),
            proof.probes.len()
        );
    }

    fn arena() -> Arena {
        let mut arena = Arena::new(200);
        arena.hash_leaf_sets();
        arena
    }

    #[test]
    fn keys_see_leaf_sets_shifted_to_zero_in_any_order() {
        let arena = arena();
        let key = |leaves: &[usize]| LeafSetKey::of_leaves(&arena, leaves.iter().copied());
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
                LeafSetKey::of_node(&arena, node),
                LeafSetKey::of_leaves(&arena, leaves.into_iter())
            );
        }
        assert_eq!(
            LeafSetKey::of_node(&arena, top).0,
            LeafSetKey::of_node(&arena, fused).0
        );
        let mut late = Arena::new(20);
        let v = late.node(&[3, 4], false);
        late.hash_leaf_sets();
        let w = late.node(&[v, 5], false);
        assert_eq!(
            LeafSetKey::of_node(&late, w),
            LeafSetKey::of_leaves(&late, [3, 4, 5].into_iter())
        );
    }
}
