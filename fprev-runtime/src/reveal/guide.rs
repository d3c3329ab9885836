//! Structure-guided guesses: an order no table knows, at a large `n`, built from its
//! structure over a few hundred inputs.
//!
//! Library orders are made of few ideas (lanes of a vector register, independent
//! accumulators, blocks, cascades of partial sums), and those ideas show in the first
//! few hundred inputs. A target restricted to some positions, zeros everywhere else,
//! sums exactly the subtree those positions induce (adding a zero is exact), so the first
//! [`PREFIX`] inputs are revealed by a search of their own, at the real `n`, for about
//! `2 x PREFIX` calls instead of `2n`. Each regular way the prefix's tree splits into
//! shifted copies of one part is then carried to the whole input:
//! - copies whose leaves interleave (lanes) keep their count, so each grows with `n`: the
//!   first copy is guessed the same way, as a restricted target of its own, then shifted;
//! - contiguous blocks either keep their size (the prefix holds whole blocks, combined in
//!   a named order: in order, in reverse or pairwise) or keep their count (the first
//!   block is guessed as a target of its own);
//! - a prefix summed in order, in reverse or pairwise is guessed summed so throughout.
//!
//! Six random inputs filter the candidates at every level, and parts of at most
//! [`DIRECT`] inputs are searched outright. Nothing here is trusted: the guess is proved
//! node by node with probe sets like a known order, and a guess that fails its proof
//! costs its calls and the search runs as if none had been made. Guessing stops once it
//! has cost `n` calls, about half of what a search costs.

use super::naive::fill_random_input;
use super::prober::Prober;
use super::Reveal;
use crate::black_box::{Probe, ProbeBatch, ProbeSets, Target, TargetError};
use crate::float::{FloatFormat, ProbeFloat};
use crate::tree::describe::Analysis;
use crate::tree::SumTree;

/// Below this many inputs a search costs about what a guess does.
pub(crate) const MIN_N: usize = 4096;
/// Inputs revealed to learn a structure.
const PREFIX: usize = 512;
/// Inputs sampled first to find blocks larger than the prefix.
const SMALL_SAMPLE: usize = 128;
/// Parts this small are searched, not guessed.
const DIRECT: usize = 1024;
/// Growing parts tried per level, smallest first (a wrong one costs a prefix search).
const TRIES: usize = 3;
/// Nesting of parts within parts; each level at least halves the part.
const MAX_DEPTH: u32 = 12;

/// Calls spent on guessing, by kind, as the prober counts them.
#[derive(Default)]
struct Counts {
    probes: u64,
    batches: u64,
    replays: u64,
}

impl Counts {
    fn calls(&self) -> u64 {
        self.probes + self.replays
    }
}

/// A guess of the whole tree, or `None` when no structure carried over (or guessing
/// would cost more than it can save). The calls it made are added to the prober's counts.
pub(crate) fn guess<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    seed: u64,
) -> Option<SumTree> {
    let n = prober.n;
    let format = prober.replay_format();
    let positions: Vec<usize> = (0..n).collect();
    let mut guide = Guide {
        target: &mut prober.target,
        format,
        seed,
        budget: n as u64,
        counts: Counts::default(),
        buf: vec![T::ZERO; n],
        searched: Vec::new(),
        frugal: false,
    };
    let tree = guide.part(&positions, 0);
    let counts = guide.counts;
    prober.probes += counts.probes;
    prober.batches += counts.batches;
    prober.replays += counts.replays;
    tree
}

struct Guide<'g, T> {
    /// Behind `dyn`: a guess reveals restricted targets, whose own reveals would
    /// otherwise instantiate this code for ever deeper wrappers.
    target: &'g mut dyn Target<T>,
    format: FloatFormat,
    seed: u64,
    budget: u64,
    counts: Counts,
    /// `n` zeros between uses: the restricted targets' full input.
    buf: Vec<T>,
    /// Every search so far, in the order made (a few per guess): a part within several
    /// is read off the first, the same in every run.
    searched: Vec<(Vec<usize>, Option<SumTree>)>,
    /// Whether to guess only from trees searched already.
    frugal: bool,
}

impl<T: ProbeFloat> Guide<'_, T> {
    fn restricted<'r>(&'r mut self, positions: &'r [usize]) -> Restricted<'r, T> {
        Restricted {
            inner: &mut *self.target,
            positions,
            buf: &mut self.buf,
            probes: Vec::new(),
            counts: &mut self.counts,
        }
    }

    fn next_seed(&mut self) -> u64 {
        self.seed = self
            .seed
            .wrapping_mul(0x5851_F42D_4C95_7F2D)
            .wrapping_add(1442695040888963407);
        self.seed
    }

    /// The tree the target sums `positions` in (its leaf `j` is `positions[j]`).
    fn part(&mut self, positions: &[usize], depth: u32) -> Option<SumTree> {
        let m = positions.len();
        if m <= DIRECT || depth >= MAX_DEPTH {
            // a part whose prefix is known already (a block's prefix is its parent's) is
            // first guessed whole from it: six calls against a search's two per input
            if m > PREFIX {
                if let Some(Some(prefix)) = self.known(&positions[..PREFIX]) {
                    let candidates = Candidates::of(&prefix, m);
                    let answers = self.answers(positions)?;
                    if let Some(tree) = candidates.first_complete(&prefix, m, &answers) {
                        return Some(tree);
                    }
                }
            }
            return self.search(positions);
        }
        let prefix = self.search(&positions[..PREFIX])?;
        let candidates = Candidates::of(&prefix, m);
        let answers = self.answers(positions)?;
        if let Some(tree) = candidates.first_complete(&prefix, m, &answers) {
            return Some(tree);
        }
        // Blocks larger than the prefix (a sum split among threads, or halved down to
        // blocks) show in a sample of every (m / samples)-th input as blocks of samples:
        // a small sample first (a quarter of a search; a block's first part shares the
        // prefix searched already, so trying it costs little), then the copies that grow
        // with `m`, then a sample as large as the prefix
        if let Some(blocks) = self.sampled_blocks(positions, SMALL_SAMPLE) {
            // only parts that need no new search: a wrong block size costs little
            let frugal = std::mem::replace(&mut self.frugal, true);
            let tree = self.copies(positions, blocks, &answers, depth);
            self.frugal = frugal;
            if tree.is_some() {
                return tree;
            }
        }
        if let Some(tree) = self.copies(positions, candidates.growing, &answers, depth) {
            return Some(tree);
        }
        let blocks = self.sampled_blocks(positions, PREFIX)?;
        self.copies(positions, blocks, &answers, depth)
    }

    /// Blocks of `positions` larger than one input, as the tree of every
    /// `(m / samples)`-th input shows them: `None` when `samples` does not divide `m` or
    /// the sample's search fails.
    fn sampled_blocks(&mut self, positions: &[usize], samples: usize) -> Option<Vec<Copies>> {
        let m = positions.len();
        if m % samples != 0 || m / samples < 2 {
            return None;
        }
        let step = m / samples;
        let sample: Vec<usize> = (0..samples).map(|k| positions[k * step]).collect();
        let sampled = self.search(&sample)?;
        let blocks = Analysis::new(&sampled)
            .regular_tilings(sampled.root())
            .into_iter()
            .filter(|t| !t.interleaved)
            .map(|t| {
                let size = samples / t.count * step;
                Copies {
                    first: (0..size).collect(),
                    shift: size,
                    top: t.top,
                }
            })
            .collect();
        Some(blocks)
    }

    /// The first of `growing` (at most [`TRIES`]) whose first copy is guessed and whose
    /// assembled tree replays `answers`.
    fn copies(
        &mut self,
        positions: &[usize],
        growing: Vec<Copies>,
        answers: &[(Vec<T>, T)],
        depth: u32,
    ) -> Option<SumTree> {
        for copies in growing.into_iter().take(TRIES) {
            let first: Vec<usize> = copies.first.iter().map(|&j| positions[j]).collect();
            let Some(part) = self.part(&first, depth + 1) else {
                continue;
            };
            let tree = copies.assemble(positions.len(), &part);
            if matches(&tree, answers) {
                return Some(tree);
            }
        }
        None
    }

    /// The tree of `positions` when a search found it already, or found the tree of
    /// positions that hold them all (whose induced tree it is, with the other inputs
    /// zero): no call. `Some(None)` when that search failed.
    fn known(&self, positions: &[usize]) -> Option<Option<SumTree>> {
        if let Some((_, tree)) = self.searched.iter().find(|(key, _)| key == positions) {
            return Some(tree.clone());
        }
        if !positions.is_sorted() {
            return None;
        }
        self.searched.iter().find_map(|(key, tree)| {
            let tree = tree.as_ref()?;
            // both ascending: one merge finds where each position is among key's
            let mut at = Vec::with_capacity(positions.len());
            let mut from = 0;
            for p in positions {
                from += key.get(from..)?.binary_search(p).ok()?;
                at.push(from);
                from += 1;
            }
            Some(Some(tree.induced(&at)))
        })
    }

    /// A search of the target restricted to `positions`, within the budget.
    fn search(&mut self, positions: &[usize]) -> Option<SumTree> {
        // a block's prefix is its parent's; a sample's part is the sample's
        if let Some(tree) = self.known(positions) {
            return tree;
        }
        if self.frugal {
            return None;
        }
        // a search costs about 2 calls per input
        if self.counts.calls() + 2 * positions.len() as u64 > self.budget {
            return None;
        }
        let seed = self.next_seed();
        let m = positions.len();
        let restricted = self.restricted(positions);
        let tree = Reveal::new(m)
            .verify(false)
            .structure_guided(false)
            .seed(seed)
            .run_target(restricted)
            .ok()
            .map(|report| report.tree)
            .filter(|tree| tree.binary_pairs().is_some());
        self.searched.push((positions.to_vec(), tree.clone()));
        tree
    }

    /// Six random inputs over `positions` (exponents spread wide, within one binade,
    /// within three; two of each) and the target's answers: a candidate that replays
    /// them all is rarely wrong (two orders that differ only where a few large partial
    /// sums meet can agree on a few inputs), and a wrong one that passes costs its
    /// proof's sample and a search.
    fn answers(&mut self, positions: &[usize]) -> Option<Vec<(Vec<T>, T)>> {
        let base = self.next_seed() / 3 * 3;
        let mut out = Vec::with_capacity(6);
        for seed in base..base + 6 {
            let mut x = vec![T::ZERO; positions.len()];
            fill_random_input(self.format, seed, &mut x);
            let answer = self.restricted(positions).call(&x).ok()?;
            out.push((x, answer));
        }
        Some(out)
    }
}

fn matches<T: ProbeFloat>(tree: &SumTree, answers: &[(Vec<T>, T)]) -> bool {
    answers
        .iter()
        .all(|(x, a)| tree.replay(x).to_bits_u64() == a.to_bits_u64())
}

/// What the prefix's structure suggests for `m` inputs.
struct Candidates {
    /// Whole trees, in the order to filter them.
    complete: Vec<Whole>,
    /// Copies of a part that grows with `m`, smallest part first.
    growing: Vec<Copies>,
}

impl Candidates {
    /// The first whole-tree candidate that replays `answers`.
    fn first_complete<T: ProbeFloat>(
        &self,
        prefix: &SumTree,
        m: usize,
        answers: &[(Vec<T>, T)],
    ) -> Option<SumTree> {
        self.complete
            .iter()
            .map(|whole| whole.build(prefix, m))
            .find(|tree| matches(tree, answers))
    }

    fn of(prefix: &SumTree, m: usize) -> Candidates {
        let p = prefix.leaf_count();
        let mut complete: Vec<Whole> = Vec::new();
        // the named orders the prefix shows first, then the others (a pairwise sum of a
        // size not a power of two does not induce a pairwise sum on its prefix)
        let shown_first = |shown: &dyn Fn(usize) -> bool| {
            let (a, b): (Vec<usize>, Vec<usize>) = (0..NAMED.len()).partition(|&k| shown(k));
            a.into_iter().chain(b)
        };
        for k in shown_first(&|k| *prefix == NAMED[k](p)) {
            complete.push(Whole::Named(k));
        }
        let mut growing = Vec::new();
        let analysis = Analysis::new(prefix);
        for tiling in analysis.regular_tilings(prefix.root()) {
            let (c, s) = (tiling.count, tiling.shift);
            let size = p / c;
            if tiling.interleaved {
                // copy i holds the positions whose block of s is i modulo c
                let lane = |j: &usize| (j / s) % c == 0;
                let expected: Vec<usize> = (0..p).filter(lane).collect();
                if prefix.leaves_under(tiling.first) == expected && m % (s * c) == 0 {
                    growing.push(Copies {
                        first: (0..m).filter(lane).collect(),
                        shift: s,
                        top: tiling.top,
                    });
                }
                continue;
            }
            if s != size {
                continue;
            }
            // blocks of a fixed size (the prefix holds the whole first block)
            for top in shown_first(&|k| tiling.top == NAMED[k](c)) {
                let whole = Whole::Blocks { size, top };
                if !complete.contains(&whole) {
                    complete.push(whole);
                }
            }
            // or a fixed count of blocks that grow
            if m % c == 0 {
                growing.push(Copies {
                    first: (0..m / c).collect(),
                    shift: m / c,
                    top: tiling.top,
                });
            }
        }
        // or blocks as large as the prefix, each summed as the prefix is
        if m % p == 0 && m > p {
            for top in 0..NAMED.len() {
                let whole = Whole::Blocks { size: p, top };
                if !complete.contains(&whole) {
                    complete.push(whole);
                }
            }
        }
        growing.sort_by_key(|g| g.first.len());
        growing.dedup_by(|a, b| a.first == b.first && a.top == b.top);
        Candidates { complete, growing }
    }
}

/// A whole-tree candidate, built only when its turn to be filtered comes (each is a
/// tree of `m` leaves and six replays of it).
#[derive(PartialEq)]
enum Whole {
    /// `NAMED[k]` over every input.
    Named(usize),
    /// Blocks of `size` summed as the prefix's first block (a last, shorter block as
    /// that block's order cut short), combined by `NAMED[top]`.
    Blocks { size: usize, top: usize },
}

impl Whole {
    fn build(&self, prefix: &SumTree, m: usize) -> SumTree {
        let (size, top) = match *self {
            Whole::Named(k) => return NAMED[k](m),
            Whole::Blocks { size, top } => (size, top),
        };
        let pattern = |len: usize| {
            let cut = prefix.prefix(len);
            Pattern::of(&cut, cut.root())
        };
        let block = pattern(size);
        let mut tree = Assembly {
            m,
            nodes: Vec::new(),
        };
        let map = |b: usize, len: usize| -> Vec<u32> {
            (b * size..b * size + len).map(|j| j as u32).collect()
        };
        let mut roots: Vec<u32> = (0..m / size)
            .map(|b| tree.instantiate(&block, &map(b, size)))
            .collect();
        if m % size != 0 {
            roots.push(tree.instantiate(&pattern(m % size), &map(m / size, m % size)));
        }
        tree.finish(&roots, &NAMED[top](roots.len()))
    }
}

/// The orders a prefix or a combination of blocks is carried over in.
const NAMED: [fn(usize) -> SumTree; 3] = [SumTree::sequential, SumTree::reverse, SumTree::pairwise];

/// `top.leaf_count()` copies of one part, copy `i` at `first` shifted by `i * shift`,
/// combined by `top`.
struct Copies {
    first: Vec<usize>,
    shift: usize,
    top: SumTree,
}

impl Copies {
    /// The tree over `m` inputs with `part` (over `first.len()` leaves) in every copy.
    fn assemble(&self, m: usize, part: &SumTree) -> SumTree {
        self.assemble_pattern(m, &Pattern::of(part, part.root()))
    }

    fn assemble_pattern(&self, m: usize, part: &Pattern) -> SumTree {
        let mut tree = Assembly {
            m,
            nodes: Vec::new(),
        };
        let mut map = vec![0u32; self.first.len()];
        let roots: Vec<u32> = (0..self.top.leaf_count())
            .map(|i| {
                for (slot, &j) in map.iter_mut().zip(&self.first) {
                    *slot = (j + i * self.shift) as u32;
                }
                tree.instantiate(part, &map)
            })
            .collect();
        tree.finish(&roots, &self.top)
    }
}

/// A subtree with its leaves as slots (`0..slots`, by ascending leaf) and its inner
/// nodes after them, children first.
struct Pattern {
    slots: usize,
    nodes: Vec<Vec<u32>>,
}

impl Pattern {
    fn of(tree: &SumTree, v: usize) -> Pattern {
        let leaves = tree.leaves_under(v);
        let slots = leaves.len();
        let mut id = std::collections::HashMap::new();
        let mut nodes = Vec::new();
        let mut stack = vec![(v, false)];
        while let Some((w, expanded)) = stack.pop() {
            if tree.is_leaf(w) {
                let slot = leaves.binary_search(&w).unwrap_or(0);
                id.insert(w, slot as u32);
            } else if expanded {
                let kids = tree
                    .children(w)
                    .iter()
                    .map(|c| id[&(*c as usize)])
                    .collect();
                nodes.push(kids);
                id.insert(w, (slots + nodes.len() - 1) as u32);
            } else {
                stack.push((w, true));
                stack.extend(tree.children(w).iter().map(|&c| (c as usize, false)));
            }
        }
        Pattern { slots, nodes }
    }
}

/// Inner nodes over `m` leaves, as [`SumTree::from_raw`] takes them.
struct Assembly {
    m: usize,
    nodes: Vec<Vec<u32>>,
}

impl Assembly {
    /// `pattern` with slot `k` at `map[k]`; returns its root's id.
    fn instantiate(&mut self, pattern: &Pattern, map: &[u32]) -> u32 {
        let base = (self.m + self.nodes.len()) as u32;
        let slots = pattern.slots as u32;
        for node in &pattern.nodes {
            let kids = node
                .iter()
                .map(|&k| {
                    if k < slots {
                        map[k as usize]
                    } else {
                        base + k - slots
                    }
                })
                .collect();
            self.nodes.push(kids);
        }
        match pattern.nodes.len() {
            0 => map[0],
            len => base + len as u32 - 1,
        }
    }

    /// The tree with `top` combining `roots` (its leaf `i` is `roots[i]`).
    fn finish(mut self, roots: &[u32], top: &SumTree) -> SumTree {
        self.instantiate(&Pattern::of(top, top.root()), roots);
        SumTree::from_raw(self.m, self.nodes)
    }
}

/// The target with inputs only at `positions` (its input `j` at `positions[j]`, zeros
/// elsewhere): it sums the subtree those positions induce. Probes keep the target's own
/// fast paths (batches, probe sets), moved to their positions.
struct Restricted<'r, T> {
    inner: &'r mut dyn Target<T>,
    positions: &'r [usize],
    /// All zeros between calls.
    buf: &'r mut Vec<T>,
    probes: Vec<Probe>,
    counts: &'r mut Counts,
}

impl<T: ProbeFloat> Restricted<'_, T> {
    fn scatter(&mut self, x: &[T]) {
        for (&p, &v) in self.positions.iter().zip(x) {
            self.buf[p] = v;
        }
    }

    fn clear(&mut self) {
        for &p in self.positions {
            self.buf[p] = T::ZERO;
        }
    }

    fn move_probes(&mut self, probes: &[Probe]) {
        self.probes.clear();
        self.probes.extend(probes.iter().map(|p| Probe {
            plus: self.positions[p.plus],
            minus: self.positions[p.minus],
        }));
    }
}

impl<T: ProbeFloat> Target<T> for Restricted<'_, T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.counts.replays += 1;
        self.scatter(x);
        let r = self.inner.call(&self.buf[..]);
        self.clear();
        r
    }

    fn input_format(&self) -> Option<FloatFormat> {
        self.inner.input_format()
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        self.inner.replay_format()
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        self.counts.probes += batch.probes.len() as u64;
        self.counts.batches += 1;
        self.scatter(batch.background);
        self.move_probes(batch.probes);
        let moved = ProbeBatch {
            background: &self.buf[..],
            probes: &self.probes,
            mask: batch.mask,
        };
        let r = self.inner.probe_batch(&moved, out);
        self.clear();
        r
    }

    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        self.scatter(sets.background);
        self.move_probes(sets.probes);
        let moved = ProbeSets {
            background: &self.buf[..],
            probes: &self.probes,
            masks: sets.masks,
            ends: sets.ends,
        };
        let r = self.inner.probe_sets(&moved, out);
        self.clear();
        if r.is_some() {
            self.counts.probes += sets.calls() as u64;
            self.counts.batches += 1;
        }
        r
    }
}

#[cfg(test)]
mod tests;
