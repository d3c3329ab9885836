//! Reassociated reductions: a float reduction keeps its loop order, only the order in
//! which its terms are *combined* changes.
//!
//! This is what `#[fprev::scramble]` does by default. A `for` loop declares nothing about
//! the order of its iterations, so reordering them can change what a program means (a
//! prefix sum, a recurrence, a two-pointer walk). The association of a float reduction
//! (`s += e` where nothing else reads `s`) is different: a compiler with fast-math, a SIMD
//! library, a BLAS or a thread pool may combine its terms in another shape, and the
//! result then differs by rounding only. [`CombineShape`] lists the shapes fprev draws from:
//! the orders real libraries use.
//!
//! ```
//! use fprev_runtime::scramble::reduce::{combine, CombineShape};
//! use fprev_runtime::scramble::rng::stream;
//!
//! let terms = [1e8f32, 1.0, -1e8, 1.0];
//! let seq = combine(CombineShape::Sequential, &terms, &mut stream(0, 0, 0));
//! let lanes = combine(CombineShape::Lanes { lanes: 2, pairwise: false }, &terms, &mut stream(0, 0, 0));
//! assert_eq!((seq, lanes), (1.0, 2.0)); // ((1e8+1)-1e8)+1 vs (1e8-1e8)+(1+1)
//! ```

use std::fmt;

use super::rng::{self, below, ScrambleRng};
use super::Shuffle;
use crate::float::ProbeFloat;

mod keyed;
mod running;
mod split;
mod stream;
mod tree;
mod tuple;

pub use keyed::KeyedReduction;
pub use running::{ReduceIter, RunningReduction, ViaValue};
use split::{sequential_four, split_nested, SplitPlan};
use stream::Stream;
pub use tuple::{ReduceTuples, TupleFold};

/// How a reduction's terms (its initial value first) are combined.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CombineShape {
    /// One accumulator, terms in loop order: what the plain code does.
    Sequential,
    /// One accumulator, terms in a permuted order (buffered).
    Permuted(Shuffle),
    /// `lanes` accumulators, term `i` into lane `i % lanes` (SIMD, ndarray, NumPy's
    /// inner loop), the lanes then combined in order or pairwise.
    Lanes {
        /// Number of lanes, 2..=32.
        lanes: u8,
        /// Combine the lanes pairwise (a tree) rather than one after another.
        pairwise: bool,
    },
    /// Blocks of `block` terms summed in order, block sums added to a running total
    /// (BLAS `kc` blocking).
    Blocked {
        /// Terms per block.
        block: u32,
    },
    /// Pairwise summation in a binary counter (NumPy-like, O(log n) state).
    Pairwise,
    /// A rayon-like split over `threads` contiguous parts, each summed in order, the
    /// parts combined as the join tree does (buffered).
    Threads {
        /// Number of parts, 1..=64.
        threads: u8,
    },
    /// A random binary tree over the terms in order (buffered).
    RandomTree,
}

impl fmt::Display for CombineShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CombineShape::Sequential => f.write_str("sequential"),
            CombineShape::Permuted(s) => write!(f, "{s}-permuted"),
            CombineShape::Lanes { lanes, pairwise } => {
                let how = if pairwise { "pairwise" } else { "in order" };
                write!(f, "{lanes} lanes, combined {how}")
            }
            CombineShape::Blocked { block } => write!(f, "blocks of {block}"),
            CombineShape::Pairwise => f.write_str("pairwise"),
            CombineShape::Threads { threads } => write!(f, "{threads}-way split"),
            CombineShape::RandomTree => f.write_str("random tree"),
        }
    }
}

impl CombineShape {
    /// Draws a shape: with `mix`, uniformly among the kinds above (parameters drawn too);
    /// otherwise the `shuffle`-permuted sequential order ([`Shuffle::Identity`]: the plain
    /// sequential order).
    pub fn draw(mix: bool, shuffle: Shuffle, rng: &mut ScrambleRng) -> CombineShape {
        if !mix {
            return match shuffle {
                Shuffle::Identity => CombineShape::Sequential,
                s => CombineShape::Permuted(s),
            };
        }
        match below(rng, 6) {
            0 => CombineShape::Permuted(Shuffle::FisherYates),
            1 => CombineShape::Lanes {
                lanes: 2 + below(rng, 31) as u8,
                pairwise: below(rng, 2) == 1,
            },
            2 => CombineShape::Blocked {
                block: 1 << (2 + below(rng, 8)),
            },
            3 => CombineShape::Pairwise,
            4 => CombineShape::Threads {
                threads: 2 + below(rng, 15) as u8,
            },
            _ => CombineShape::RandomTree,
        }
    }

    /// A number per shape (what entropy recording logs), below 2^21.
    fn code(self) -> usize {
        match self {
            CombineShape::Sequential => 1,
            CombineShape::Permuted(s) => 2 + s as usize,
            CombineShape::Lanes { lanes, pairwise } => 16 + 2 * lanes as usize + pairwise as usize,
            CombineShape::Blocked { block } => 128 + block as usize,
            CombineShape::Pairwise => 8,
            CombineShape::Threads { threads } => 1 << 20 | threads as usize,
            CombineShape::RandomTree => 9,
        }
    }

    /// The shape whose [`code`](Self::code) is `code`, for every shape with up to 32
    /// lanes, blocks below 2^20 terms and up to 255 threads.
    fn from_code(code: usize) -> Option<CombineShape> {
        Some(match code {
            1 => CombineShape::Sequential,
            2 => CombineShape::Permuted(Shuffle::FisherYates),
            3 => CombineShape::Permuted(Shuffle::Sattolo),
            4 => CombineShape::Permuted(Shuffle::Identity),
            8 => CombineShape::Pairwise,
            9 => CombineShape::RandomTree,
            16..=81 => CombineShape::Lanes {
                lanes: ((code - 16) / 2) as u8,
                pairwise: code % 2 == 1,
            },
            128..0x10_0000 => CombineShape::Blocked {
                block: (code - 128) as u32,
            },
            0x10_0000..=0x10_00ff => CombineShape::Threads {
                threads: code as u8,
            },
            _ => return None,
        })
    }
}

/// Salt of the per-site streams, so that they never coincide with a per-call stream.
const PER_SITE: u64 = 0x7065_722d_7369_7465;

/// Buffered shapes hold at most this many terms; a longer reduction is combined in
/// chunks of this size (each in the drawn shape), the chunk results added in order, so
/// memory stays bounded whatever the trip count.
pub const BUFFER_CAP: usize = 1 << 20;

fn opt_add<F: ProbeFloat>(acc: Option<F>, t: F) -> F {
    match acc {
        Some(a) => a.add(t),
        None => t,
    }
}

/// Combines `terms` (non-empty) in `shape`; buffered shapes draw from `rng`.
///
/// ```
/// use fprev_runtime::scramble::reduce::{combine, CombineShape};
/// use fprev_runtime::scramble::rng::stream;
/// let x = [1.0f64, 2.0, 3.0, 4.0];
/// assert_eq!(combine(CombineShape::Pairwise, &x, &mut stream(1, 2, 3)), 10.0);
/// ```
pub fn combine<F: ProbeFloat>(shape: CombineShape, terms: &[F], rng: &mut ScrambleRng) -> F {
    let mut c = Combiner::new(shape);
    let mut terms = terms.to_vec();
    let mut stream = Stream::of(rng.clone());
    for chunk in terms.chunks_mut(c.cap) {
        c.absorb(chunk, &mut stream);
    }
    if let Some(after) = stream.into_rng() {
        *rng = after;
    }
    c.finish().unwrap_or(F::ZERO)
}

/// Terms are appended to a chunk of this many (a store, no dependent addition per term)
/// and each full chunk is combined by a tight loop of its shape: block sizes and the
/// pairwise counter's levels are powers of two that divide it, so chunking changes no
/// shape.
const CHUNK: usize = 1024;

/// Permuted shapes shuffle at most this many terms at once (512 KiB of f64, within the
/// caches close to the core), so a long reduction is permuted block by block.
const PERMUTE_CAP: usize = 1 << 16;

/// Streaming state of one reduction in one shape.
struct Combiner<F: ProbeFloat> {
    shape: CombineShape,
    /// Terms per call of [`absorb`](Self::absorb): [`CHUNK`] for streaming shapes, the
    /// shape's cap for buffered ones.
    cap: usize,
    /// Terms combined so far (the global index of `buf[0]`).
    done: usize,
    acc: Option<F>,
    lanes: [Option<F>; 32],
    stack: Vec<(u32, F)>,
    /// The last thread split's pieces, kept for the next reduction of the same length.
    split: SplitPlan<F>,
}

impl<F: ProbeFloat> Combiner<F> {
    fn new(shape: CombineShape) -> Self {
        Combiner {
            shape,
            cap: Self::cap_of(shape),
            done: 0,
            acc: None,
            lanes: [None; 32],
            stack: Vec::new(),
            split: SplitPlan::default(),
        }
    }

    /// Starts over in `shape`, keeping the allocation of the pairwise stack and the
    /// split's pieces. Field by field, and only the lanes that `shape` reads: a whole new
    /// combiner is several hundred bytes to write.
    fn reset(&mut self, shape: CombineShape) {
        self.shape = shape;
        self.cap = Self::cap_of(shape);
        self.done = 0;
        self.acc = None;
        let lanes = match shape {
            CombineShape::Lanes { lanes, .. } => lanes as usize,
            CombineShape::Blocked { .. } => 1,
            _ => 0,
        };
        self.lanes[..lanes].fill(None);
        self.stack.clear();
    }

    fn cap_of(shape: CombineShape) -> usize {
        match shape {
            CombineShape::Permuted(_) => PERMUTE_CAP,
            CombineShape::Threads { .. } | CombineShape::RandomTree => BUFFER_CAP,
            _ => CHUNK,
        }
    }

    /// Takes the next terms, at most `self.cap` of them, and whole `cap`-sized runs
    /// except at the end of the reduction (so blocks and the pairwise counter stay
    /// aligned). Buffered shapes reorder the slice in place.
    fn absorb(&mut self, terms: &mut [F], stream: &mut Stream) {
        if self.cap == CHUNK {
            self.process(terms);
        } else {
            self.process_buffered(terms, stream);
        }
    }

    /// Combines the terms of a buffered shape (permuted, thread split, random tree).
    fn process_buffered(&mut self, buf: &mut [F], stream: &mut Stream) {
        if buf.is_empty() {
            return;
        }
        let chunk = match self.shape {
            CombineShape::Permuted(s) => {
                // A whole short reduction (its only chunk, before any draw) takes the
                // order its site keeps for its length.
                let whole = self.done == 0 && buf.len() < self.cap;
                let kept = if whole {
                    stream.kept_order(s, buf.len(), |p| permuted(buf, p))
                } else {
                    None
                };
                match kept {
                    Some(sum) => sum,
                    None => {
                        // Fewer than two terms draw nothing.
                        if buf.len() >= 2 {
                            rng::shuffle(s, buf, stream.rng());
                        }
                        sequential(buf)
                    }
                }
            }
            CombineShape::Threads { threads } => self.split.sum(buf, threads as usize),
            _ => {
                // A whole reduction takes the tree its site keeps for its length.
                let whole = self.done == 0 && buf.len() < self.cap;
                tree::random_tree(buf, stream, whole)
            }
        };
        self.acc = Some(opt_add(self.acc, chunk));
        self.done += buf.len();
    }

    /// Combines the terms of a streaming shape into its state.
    fn process(&mut self, buf: &[F]) {
        let n = buf.len();
        match self.shape {
            CombineShape::Sequential => {
                let mut acc = self.acc;
                for &t in buf {
                    acc = Some(opt_add(acc, t));
                }
                self.acc = acc;
            }
            CombineShape::Lanes { lanes, .. } => {
                let k = lanes as usize;
                // The first term of each lane starts it (no `0.0 +`, which would turn a
                // `-0.0` term into `+0.0`); after that, plain adds.
                let mut rest = buf;
                while self.done < k && !rest.is_empty() {
                    self.lanes[self.done] = Some(rest[0]);
                    self.done += 1;
                    rest = &rest[1..];
                }
                let mut l = [F::ZERO; 32];
                for (dst, src) in l.iter_mut().zip(&self.lanes[..k]) {
                    *dst = src.unwrap_or(F::ZERO);
                }
                let mut lane = self.done % k;
                for &t in rest {
                    l[lane] = l[lane].add(t);
                    lane += 1;
                    if lane == k {
                        lane = 0;
                    }
                }
                for (dst, &src) in self.lanes[..k].iter_mut().zip(&l) {
                    if dst.is_some() {
                        *dst = Some(src);
                    }
                }
                self.done += rest.len();
                return;
            }
            CombineShape::Blocked { block } => {
                // Only the reduction's last call can end inside a block, so each call
                // starts on a block boundary: `block` divides `CHUNK`. Four blocks are
                // summed side by side, their sums then added to the total in order.
                let b = block as usize;
                let mut acc = self.acc;
                let mut quads = buf.chunks_exact(4 * b);
                for quad in &mut quads {
                    let (ab, cd) = quad.split_at(2 * b);
                    let (a, bb) = ab.split_at(b);
                    let (c, d) = cd.split_at(b);
                    for v in sequential_four([a, bb, c, d]) {
                        acc = Some(opt_add(acc, v));
                    }
                }
                for blk in quads.remainder().chunks(b) {
                    let v = sequential(blk);
                    if blk.len() == b {
                        acc = Some(opt_add(acc, v));
                    } else {
                        self.lanes[0] = Some(v);
                    }
                }
                self.acc = acc;
            }
            CombineShape::Pairwise => {
                // The counter's state depends only on how many terms it took: after
                // `at` of them, the next `2^k` terms (k at most the trailing zeros of
                // `at`) form one complete subtree, pushed at once. So a dot of 94 terms
                // is 5 pushes (64, 16, 8, 4, 2), not 94.
                let mut rest = buf;
                let mut at = self.done;
                while !rest.is_empty() {
                    let fits = rest.len().ilog2();
                    let aligned = if at == 0 {
                        u32::MAX
                    } else {
                        at.trailing_zeros()
                    };
                    let k = fits.min(aligned).min(CHUNK.trailing_zeros());
                    let (block, tail) = rest.split_at(1 << k);
                    self.push_node((k, halving(block)));
                    at += block.len();
                    rest = tail;
                }
            }
            _ => unreachable!("buffered shapes go through process_buffered"),
        }
        self.done += n;
    }

    fn push_node(&mut self, mut node: (u32, F)) {
        while let Some(&(level, v)) = self.stack.last() {
            if level != node.0 {
                break;
            }
            self.stack.pop();
            node = (level + 1, v.add(node.1));
        }
        self.stack.push(node);
    }

    /// The combined value; the state is spent.
    fn finish(&mut self) -> Option<F> {
        match self.shape {
            CombineShape::Lanes { lanes, pairwise } => {
                let mut used = [F::ZERO; 32];
                let mut m = 0;
                for &l in self.lanes[..lanes as usize].iter().flatten() {
                    used[m] = l;
                    m += 1;
                }
                let used = &used[..m];
                if used.is_empty() {
                    None
                } else if pairwise {
                    Some(split_nested(used, used.len()))
                } else {
                    Some(sequential(used))
                }
            }
            CombineShape::Blocked { .. } => match self.lanes[0] {
                Some(b) => Some(opt_add(self.acc, b)),
                None => self.acc,
            },
            CombineShape::Pairwise => {
                let mut acc: Option<F> = None;
                while let Some((_, v)) = self.stack.pop() {
                    acc = Some(match acc {
                        Some(a) => v.add(a),
                        None => v,
                    });
                }
                acc
            }
            _ => self.acc,
        }
    }
}

/// Pairwise over a power-of-two block: the binary counter's complete subtree, each half
/// summed the same way. Blocks of 8 are written out, and from 8 terms on the blocks of 8
/// go through a binary counter of their own, which builds the same tree without a call
/// per node (and without a scratch array to clear per call, which cost more than the sums
/// of small blocks).
fn halving<F: ProbeFloat>(x: &[F]) -> F {
    debug_assert!(x.len().is_power_of_two() && x.len() <= CHUNK);
    let eight = |x: &[F]| {
        let [a, b, c, d, e, f, g, h] = [x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]];
        a.add(b).add(c.add(d)).add(e.add(f).add(g.add(h)))
    };
    match *x {
        [a] => a,
        [a, b] => a.add(b),
        [a, b, c, d] => a.add(b).add(c.add(d)),
        _ => {
            // CHUNK / 8 blocks of 8 make at most 8 levels
            const _: () = assert!(CHUNK <= 8 << 8, "halving's counter holds 8 levels");
            let mut levels = [(0u32, F::ZERO); 8];
            let mut depth = 0;
            for block in x.chunks_exact(8) {
                let mut node = (0, eight(block));
                while depth > 0 && levels[depth - 1].0 == node.0 {
                    depth -= 1;
                    node = (node.0 + 1, levels[depth].1.add(node.1));
                }
                levels[depth] = node;
                depth += 1;
            }
            levels[0].1
        }
    }
}

/// [`sequential`] over `x` in the order `p`.
fn permuted<F: ProbeFloat>(x: &[F], p: &[u16]) -> F {
    let mut it = p.iter().map(|&i| x[usize::from(i)]);
    let first = it.next().unwrap_or(F::ZERO);
    it.fold(first, |a, b| a.add(b))
}

fn sequential<F: ProbeFloat>(x: &[F]) -> F {
    let mut it = x.iter().copied();
    let first = it.next().unwrap_or(F::ZERO);
    it.fold(first, |a, b| a.add(b))
}

/// `n` terms spread over 13 binades, so that every order of adding them rounds
/// differently (for tests).
#[cfg(test)]
fn spread(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7919) % 1009) as f64 * 10f64.powi((i % 13) as i32 - 6) - 3.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scramble::rng::stream;

    fn exact(x: &[f64]) -> f64 {
        crate::float::exact_sum_rounded(x)
    }

    #[test]
    fn every_shape_sums_every_term_once() {
        // Integers: every order gives the exact sum, so a lost or doubled term shows.
        let x: Vec<f64> = (1..=1000).map(f64::from).collect();
        let shapes = [
            CombineShape::Sequential,
            CombineShape::Permuted(Shuffle::FisherYates),
            CombineShape::Permuted(Shuffle::Sattolo),
            CombineShape::Lanes {
                lanes: 7,
                pairwise: true,
            },
            CombineShape::Lanes {
                lanes: 32,
                pairwise: false,
            },
            CombineShape::Blocked { block: 64 },
            CombineShape::Pairwise,
            CombineShape::Threads { threads: 5 },
            CombineShape::RandomTree,
        ];
        for shape in shapes {
            for n in [1usize, 2, 3, 31, 1000] {
                let got = combine(shape, &x[..n], &mut stream(1, 2, 3));
                assert_eq!(got, (n * (n + 1) / 2) as f64, "{shape} n = {n}");
            }
            for n in [1024usize, 3 * 1024 + 5, 70_000] {
                let x: Vec<f64> = (1..=n).map(|i| (i % 1000) as f64).collect();
                let want: f64 = (1..=n).map(|i| (i % 1000) as f64).sum();
                let got = combine(shape, &x, &mut stream(1, 2, 3));
                assert_eq!(got, want, "{shape} n = {n}");
            }
        }
    }

    #[test]
    fn drawn_shapes_differ_from_plain_by_rounding_only() {
        let x = spread(5000);
        let truth = exact(&x);
        let bound = x.iter().map(|v| v.abs()).sum::<f64>() * x.len() as f64 * f64::EPSILON;
        let mut seen = std::collections::HashSet::new();
        for seed in 0..64u64 {
            let mut rng = stream(seed, 9, 0);
            let shape = CombineShape::draw(true, Shuffle::FisherYates, &mut rng);
            let got = combine(shape, &x, &mut rng);
            assert!(
                (got - truth).abs() <= bound,
                "seed {seed}: {shape} gave {got}"
            );
            seen.insert(got.to_bits());
        }
        assert!(
            seen.len() > 8,
            "64 drawn shapes gave {} results",
            seen.len()
        );
    }

    /// Term-by-term reference implementations of the streaming shapes.
    fn reference(shape: CombineShape, x: &[f64]) -> f64 {
        match shape {
            CombineShape::Sequential => sequential(x),
            CombineShape::Lanes { lanes, pairwise } => {
                let k = lanes as usize;
                let mut l: Vec<Option<f64>> = vec![None; k];
                for (i, &t) in x.iter().enumerate() {
                    l[i % k] = Some(l[i % k].map_or(t, |a| a + t));
                }
                let used: Vec<f64> = l.into_iter().flatten().collect();
                if pairwise {
                    split_nested(&used, used.len())
                } else {
                    sequential(&used)
                }
            }
            CombineShape::Blocked { block } => {
                let parts: Vec<f64> = x.chunks(block as usize).map(sequential).collect();
                sequential(&parts)
            }
            CombineShape::Pairwise => {
                let mut stack: Vec<(u32, f64)> = Vec::new();
                for &t in x {
                    let mut node = (0, t);
                    while stack.last().is_some_and(|&(l, _)| l == node.0) {
                        let (l, v) = stack.pop().unwrap();
                        node = (l + 1, v + node.1);
                    }
                    stack.push(node);
                }
                let mut acc = stack.pop().unwrap().1;
                while let Some((_, v)) = stack.pop() {
                    acc += v;
                }
                acc
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn chunking_changes_no_shape() {
        let x = spread(70_000);
        for shape in [
            CombineShape::Sequential,
            CombineShape::Lanes {
                lanes: 7,
                pairwise: true,
            },
            CombineShape::Lanes {
                lanes: 32,
                pairwise: false,
            },
            CombineShape::Blocked { block: 4 },
            CombineShape::Blocked { block: 512 },
            CombineShape::Pairwise,
        ] {
            for n in [1usize, 2, 1023, 1024, 1025, 5000, 70_000] {
                let got = combine(shape, &x[..n], &mut stream(0, 0, 0));
                assert_eq!(
                    got.to_bits(),
                    reference(shape, &x[..n]).to_bits(),
                    "{shape} n = {n}"
                );
            }
        }
    }

    #[test]
    fn pairwise_takes_terms_in_any_pieces() {
        // The subtree pushes must give the term-by-term counter's tree wherever a piece
        // starts and however long it is.
        let x = spread(5000);
        let seed = crate::scramble::property_seed(1);
        let mut rng = stream(seed, 7, 0);
        for round in 0..200 {
            let n = 1 + below(&mut rng, x.len());
            let mut c = Combiner::<f64>::new(CombineShape::Pairwise);
            let mut terms = x[..n].to_vec();
            let mut rest = &mut terms[..];
            while !rest.is_empty() {
                let piece = (1 + below(&mut rng, 300)).min(rest.len());
                let (now, later) = rest.split_at_mut(piece);
                c.absorb(now, &mut Stream::none());
                rest = later;
            }
            assert_eq!(
                c.finish().map(f64::to_bits),
                Some(reference(CombineShape::Pairwise, &x[..n]).to_bits()),
                "seed {seed} (FPREV_SEED), round {round}, n = {n}"
            );
        }
    }

    #[test]
    fn codes_name_their_shapes() {
        // A site files its shape as its code, so every shape drawn must come back.
        let drawn = (0..3000)
            .map(|seed| CombineShape::draw(true, Shuffle::Sattolo, &mut stream(seed, 1, 0)));
        let others = [
            CombineShape::Sequential,
            CombineShape::Permuted(Shuffle::FisherYates),
            CombineShape::Permuted(Shuffle::Sattolo),
            CombineShape::Permuted(Shuffle::Identity),
            CombineShape::Lanes {
                lanes: 32,
                pairwise: true,
            },
            CombineShape::Blocked { block: 1 << 19 },
            CombineShape::Threads { threads: 64 },
        ];
        for shape in drawn.chain(others) {
            assert_eq!(
                CombineShape::from_code(shape.code()),
                Some(shape),
                "{shape}"
            );
        }
        assert_eq!(CombineShape::from_code(0), None);
    }

    #[test]
    fn long_buffered_reductions_are_chunked() {
        let x = vec![1.0f32; BUFFER_CAP + 5];
        let got = combine(CombineShape::RandomTree, &x, &mut stream(0, 0, 0));
        assert_eq!(got, (BUFFER_CAP + 5) as f32);
    }
}
