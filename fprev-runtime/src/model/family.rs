//! The algorithms of the model families, written once over an [`Adder`]: the same code
//! builds a model's tree (an adder that records nodes) and sums values in its order (an
//! adder that adds), so a tree and a replay can never disagree.

use super::{Combine, ModelShape};
use crate::float::ProbeFloat;
use crate::tree::SumTree;

/// One rounding at a time: what a family's algorithm needs to combine values.
pub(crate) trait Adder {
    /// A partial sum: a node id, or a value.
    type V: Copy;
    /// Input `i`.
    fn leaf(&mut self, i: usize) -> Self::V;
    /// One addition.
    fn add(&mut self, a: Self::V, b: Self::V) -> Self::V;
    /// An accumulator that may still hold its initial zero: adding to a zero is exact, so
    /// it is no node of the tree.
    fn acc(&mut self, a: Option<Self::V>, b: Self::V) -> Self::V {
        match a {
            Some(a) => self.add(a, b),
            None => b,
        }
    }
    /// Two accumulators that may each still be zero.
    fn join(&mut self, a: Option<Self::V>, b: Option<Self::V>) -> Option<Self::V> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.add(a, b)),
            (a, b) => a.or(b),
        }
    }
}

/// Records nodes; [`finish`](TreeAdder::finish) gives the canonical tree.
pub(crate) struct TreeAdder {
    n: usize,
    nodes: Vec<Vec<u32>>,
}

impl TreeAdder {
    pub(crate) fn new(n: usize) -> TreeAdder {
        TreeAdder {
            n,
            nodes: Vec::with_capacity(n.saturating_sub(1)),
        }
    }

    pub(crate) fn finish(self) -> SumTree {
        SumTree::from_raw(self.n, self.nodes)
    }
}

impl Adder for TreeAdder {
    type V = u32;
    fn leaf(&mut self, i: usize) -> u32 {
        i as u32
    }
    fn add(&mut self, a: u32, b: u32) -> u32 {
        self.nodes.push(vec![a, b]);
        (self.n + self.nodes.len() - 1) as u32
    }
}

/// Adds the values of a slice, one IEEE addition per node.
pub(crate) struct ValueAdder<'x, T>(pub(crate) &'x [T]);

impl<T: ProbeFloat> Adder for ValueAdder<'_, T> {
    type V = T;
    fn leaf(&mut self, i: usize) -> T {
        self.0[i]
    }
    fn add(&mut self, a: T, b: T) -> T {
        a.add(b)
    }
}

/// The sum of inputs `0..n` in the order of `shape`; `None` for `n = 0`.
pub(crate) fn run<A: Adder>(shape: &ModelShape, n: usize, a: &mut A) -> Option<A::V> {
    match *shape {
        ModelShape::Sequential => chain(a, 0..n),
        ModelShape::Reverse => chain(a, (0..n).rev()),
        ModelShape::Unrolled { lanes, combine } => unrolled(a, n, lanes, combine),
        ModelShape::NumpyPairwise { lanes, block } => numpy(a, 0, n, lanes, block),
        ModelShape::XlaWindows { window } => xla(a, n, window),
        ModelShape::RayonHalving { threads } => rayon(a, 0, n, threads),
        ModelShape::TorchCascade {
            width,
            load,
            ilp,
            levels,
        } => torch(a, n, width, load, ilp, levels),
    }
}

/// Inputs in the order given, one accumulator.
fn chain<A: Adder>(a: &mut A, items: impl IntoIterator<Item = usize>) -> Option<A::V> {
    let mut s = None;
    for i in items {
        let v = a.leaf(i);
        s = Some(a.acc(s, v));
    }
    s
}

/// Partial sums combined in order, or pairwise (split at half, rounded down).
fn combine<A: Adder>(a: &mut A, parts: &[Option<A::V>], how: Combine) -> Option<A::V> {
    match how {
        Combine::InOrder => parts.iter().fold(None, |s, &p| a.join(s, p)),
        Combine::Folded => {
            let (low, high) = parts.split_at(parts.len() / 2);
            let mut s = None;
            for (&l, &h) in low.iter().zip(high) {
                let pair = a.join(l, h);
                s = a.join(s, pair);
            }
            s
        }
        Combine::Pairwise => match parts.len() {
            0 => None,
            1 => parts[0],
            len => {
                let (lo, hi) = parts.split_at(len / 2);
                let l = combine(a, lo, how);
                let h = combine(a, hi, how);
                a.join(l, h)
            }
        },
    }
}

/// `lanes` accumulators over whole chunks of `lanes` values (lane `k` adds `x[k]`,
/// `x[k + lanes]`, ...), combined, then the values after the last whole chunk in order.
fn unrolled<A: Adder>(a: &mut A, n: usize, lanes: usize, how: Combine) -> Option<A::V> {
    let full = n - n % lanes;
    let parts: Vec<Option<A::V>> = (0..lanes)
        .map(|k| chain(a, (k..full).step_by(lanes)))
        .collect();
    let mut s = combine(a, &parts, how);
    for i in full..n {
        let v = a.leaf(i);
        s = Some(a.acc(s, v));
    }
    s
}

/// NumPy's `pairwise_sum` with `lanes` and `block` as parameters (NumPy: 8 and 128).
fn numpy<A: Adder>(a: &mut A, lo: usize, len: usize, lanes: usize, block: usize) -> Option<A::V> {
    if len < lanes {
        chain(a, lo..lo + len)
    } else if len <= block {
        let full = len - len % lanes;
        let parts: Vec<Option<A::V>> = (0..lanes)
            .map(|k| chain(a, (lo + k..lo + full).step_by(lanes)))
            .collect();
        let mut s = combine(a, &parts, Combine::Pairwise);
        for i in lo + full..lo + len {
            let v = a.leaf(i);
            s = Some(a.acc(s, v));
        }
        s
    } else {
        let half = len / 2 - (len / 2) % lanes;
        let l = numpy(a, lo, half, lanes, block);
        let h = numpy(a, lo + half, len - half, lanes, block);
        a.join(l, h)
    }
}

/// XLA's tree reduction with windows of `window` values (XLA: 32), padded evenly on both
/// sides, reduced level by level until one window is left, summed in order.
fn xla<A: Adder>(a: &mut A, n: usize, window: usize) -> Option<A::V> {
    let mut level: Vec<A::V> = (0..n).map(|i| a.leaf(i)).collect();
    while level.len() > window {
        let m = level.len();
        let low = (m.div_ceil(window) * window - m) / 2;
        level = (0..m.div_ceil(window))
            .filter_map(|k| {
                let start = (k * window).saturating_sub(low);
                let end = ((k + 1) * window - low).min(m);
                level[start..end]
                    .iter()
                    .fold(None, |s, &v| Some(a.acc(s, v)))
            })
            .collect();
    }
    level.iter().fold(None, |s, &v| Some(a.acc(s, v)))
}

/// rayon's `par_iter().sum()` when no job is stolen: the range is halved (`len / 2`)
/// while the splitter's count, starting at the thread count and halved at each split,
/// is non-zero; each piece is summed in order, the halves added left to right.
fn rayon<A: Adder>(a: &mut A, lo: usize, len: usize, splits: usize) -> Option<A::V> {
    if splits > 0 && len / 2 >= 1 {
        let mid = len / 2;
        let l = rayon(a, lo, mid, splits / 2);
        let h = rayon(a, lo + mid, len - mid, splits / 2);
        a.join(l, h)
    } else {
        chain(a, lo..lo + len)
    }
}

/// `ceil(log2(x))`, as ATen's `CeilLog2` for the sizes it is used with.
fn ceil_log2(x: usize) -> u32 {
    if x <= 1 {
        0
    } else {
        usize::BITS - (x - 1).leading_zeros()
    }
}

/// PyTorch's CPU `sum` (ATen `SumKernel.cpp`, `cascade_sum`), one thread: from
/// `width * load` values on, vectors of `width` lanes (with `load = 2`, two halves of a
/// wider reduced-precision vector added lane by lane on loading), summed by
/// [`row_sum`]; the scalar tail in order, then the lanes in order. Fewer values: the
/// scalar [`row_sum`].
fn torch<A: Adder>(
    a: &mut A,
    n: usize,
    width: usize,
    load: usize,
    ilp: usize,
    levels: usize,
) -> Option<A::V> {
    let step = width * load;
    if n < step {
        let rows: Vec<Vec<A::V>> = (0..n).map(|i| vec![a.leaf(i)]).collect();
        return row_sum(a, &rows, 1, ilp, levels)[0];
    }
    let count = n / step;
    let rows: Vec<Vec<A::V>> = (0..count)
        .map(|v| {
            (0..width)
                .map(|k| {
                    let first = a.leaf(v * step + k);
                    (1..load).fold(first, |s, h| {
                        let next = a.leaf(v * step + h * width + k);
                        a.add(s, next)
                    })
                })
                .collect()
        })
        .collect();
    let lanes = row_sum(a, &rows, width, ilp, levels);
    let mut s = chain(a, count * step..n);
    for lane in lanes {
        s = a.join(s, lane);
    }
    s
}

/// ATen's `row_sum`: the vectors as rows of `ilp` (`multi_row_sum`), the vectors after the
/// last whole row into partial 0, then partials 1.. added to partial 0 in order.
fn row_sum<A: Adder>(
    a: &mut A,
    vecs: &[Vec<A::V>],
    width: usize,
    ilp: usize,
    levels: usize,
) -> Vec<Option<A::V>> {
    let rows = vecs.len() / ilp;
    let mut partial = multi_row_sum(a, &vecs[..rows * ilp], width, ilp, levels);
    for v in &vecs[rows * ilp..] {
        add_vector(a, &mut partial[0], v.iter().map(|&x| Some(x)));
    }
    let (first, rest) = partial.split_at_mut(1);
    for p in rest.iter() {
        add_vector(a, &mut first[0], p.iter().copied());
    }
    partial.swap_remove(0)
}

/// Lane by lane `acc += v`, an absent lane being zero.
fn add_vector<A: Adder>(
    a: &mut A,
    acc: &mut [Option<A::V>],
    v: impl Iterator<Item = Option<A::V>>,
) {
    for (s, x) in acc.iter_mut().zip(v) {
        *s = a.join(*s, x);
    }
}

/// ATen's `multi_row_sum`: `levels` levels of `ilp` vector accumulators; every
/// `2^p` rows (`p = max(4, ceil_log2(rows) / levels)`) level 0 is carried into level 1,
/// and further up while the row count is a multiple of the next power; the rows after
/// the last whole step go into level 0; last, levels 1.. are added into level 0.
fn multi_row_sum<A: Adder>(
    a: &mut A,
    vecs: &[Vec<A::V>],
    width: usize,
    ilp: usize,
    levels: usize,
) -> Vec<Vec<Option<A::V>>> {
    let rows = vecs.len() / ilp;
    let power = (ceil_log2(rows) / levels as u32).max(4);
    let step = 1usize << power;
    let mask = step - 1;
    let mut acc = vec![vec![vec![None; width]; ilp]; levels];
    let row = |r: usize, k: usize| vecs[r * ilp + k].iter().map(|&x| Some(x));
    let mut i = 0;
    while i + step <= rows {
        for _ in 0..step {
            for (k, lane) in acc[0].iter_mut().enumerate() {
                add_vector(a, lane, row(i, k));
            }
            i += 1;
        }
        for j in 1..levels {
            let (low, high) = acc.split_at_mut(j);
            for (hk, lk) in high[0].iter_mut().zip(low[j - 1].iter_mut()) {
                add_vector(a, hk, lk.iter().copied());
                lk.iter_mut().for_each(|s| *s = None);
            }
            if i & (mask << (j as u32 * power)) != 0 {
                break;
            }
        }
    }
    while i < rows {
        for (k, lane) in acc[0].iter_mut().enumerate() {
            add_vector(a, lane, row(i, k));
        }
        i += 1;
    }
    let (low, high) = acc.split_at_mut(1);
    for level in high.iter() {
        for (lk, hk) in low[0].iter_mut().zip(level.iter()) {
            add_vector(a, lk, hk.iter().copied());
        }
    }
    acc.swap_remove(0)
}
