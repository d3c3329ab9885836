//! Reference summation orders written as ordinary code, for comparing a revealed tree
//! against a known algorithm, testing, and benchmarking the revelation engine.
//!
//! Each function sums in exactly the order of a [`SumTree`](crate::SumTree) constructor
//! or of a documented library, one IEEE addition per node:
//!
//! ```
//! use fprev::{orders, SumTree};
//! assert_eq!(fprev::reveal(64, orders::sequential::<f32>)?, SumTree::sequential(64));
//! assert_eq!(fprev::reveal(64, orders::balanced::<f32>)?, SumTree::pairwise(64));
//! # Ok::<(), fprev::RevealError>(())
//! ```

use crate::float::ProbeFloat;

/// `((x0 + x1) + x2) + ...`: one accumulator, in input order ([`SumTree::sequential`](crate::SumTree::sequential)).
///
/// ```
/// assert_eq!(fprev::orders::sequential(&[1.0f32, 2.0, 3.0]), 6.0);
/// ```
pub fn sequential<T: ProbeFloat>(x: &[T]) -> T {
    let Some((&first, rest)) = x.split_first() else {
        return T::ZERO;
    };
    rest.iter().fold(first, |s, &v| s.add(v))
}

/// One accumulator from the last input to the first.
///
/// ```
/// let t = fprev::reveal(4, fprev::orders::reverse::<f64>)?;
/// assert_eq!(t.to_string(), "(0+(1+(2+3)))");
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn reverse<T: ProbeFloat>(x: &[T]) -> T {
    let Some((&last, rest)) = x.split_last() else {
        return T::ZERO;
    };
    rest.iter().rev().fold(last, |s, &v| s.add(v))
}

/// Split at `n/2`, sum both halves the same way, add them ([`SumTree::pairwise`](crate::SumTree::pairwise)).
///
/// ```
/// assert_eq!(fprev::orders::balanced(&[1.0f32; 5]), 5.0);
/// ```
pub fn balanced<T: ProbeFloat>(x: &[T]) -> T {
    match x.len() {
        0 => T::ZERO,
        1 => x[0],
        n => {
            let (a, b) = x.split_at(n / 2);
            balanced(a).add(balanced(b))
        }
    }
}

/// NumPy's pairwise sum of a contiguous array (`pairwise_sum` in NumPy's
/// `loops_utils.h.src`): fewer than 8 values in order; up to 128 values in 8 lanes
/// (`lane k` adds `x[k], x[k+8], ...`) combined as `((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7))`,
/// the remainder added after; above 128, halves rounded down to a multiple of 8.
///
/// ```
/// let t = fprev::reveal(16, fprev::orders::numpy_pairwise::<f32>)?;
/// assert_eq!(t.to_string(), "((((0+8)+(1+9))+((2+10)+(3+11)))+(((4+12)+(5+13))+((6+14)+(7+15))))");
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn numpy_pairwise<T: ProbeFloat>(x: &[T]) -> T {
    let n = x.len();
    if n < 8 {
        // NumPy starts this loop from -0.0; adding it first changes no bits but the sign of
        // an all-zero sum, so the first value starts the accumulator here.
        return sequential(x);
    }
    if n <= 128 {
        let mut r = [T::ZERO; 8];
        r.copy_from_slice(&x[..8]);
        let mut chunks = x[8..].chunks_exact(8);
        for c in &mut chunks {
            for k in 0..8 {
                r[k] = r[k].add(c[k]);
            }
        }
        let mut res = (r[0].add(r[1]).add(r[2].add(r[3]))).add(r[4].add(r[5]).add(r[6].add(r[7])));
        for &v in chunks.remainder() {
            res = res.add(v);
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    numpy_pairwise(&x[..half]).add(numpy_pairwise(&x[half..]))
}

/// The window XLA's CPU compiler reduces in (`TreeReductionRewriter`'s default size).
pub(crate) const XLA_WINDOW: usize = 32;

/// Window `k` of `m` values in XLA's tree reduction: `m` is padded to whole windows of
/// [`XLA_WINDOW`] evenly on both sides (`Padding::kSame`, the odd value of padding on the
/// high side), so that the first and last windows hold fewer values.
pub(crate) fn xla_window(m: usize, k: usize) -> std::ops::Range<usize> {
    let low = (m.div_ceil(XLA_WINDOW) * XLA_WINDOW - m) / 2;
    let start = (k * XLA_WINDOW).saturating_sub(low);
    start..((k + 1) * XLA_WINDOW - low).min(m)
}

/// XLA's reduction of a 1-D array on the CPU (`jax.numpy.sum`, TensorFlow under XLA),
/// [`SumTree::xla_tree_reduction`](crate::SumTree::xla_tree_reduction)'s order: above 32
/// values the compiler's `TreeReductionRewriter` turns the sum into windows of 32, each
/// summed in order, padded with zeros evenly on both sides (so the first and last windows
/// are short), and reduces the windows' sums the same way, until 32 or fewer are left,
/// summed in order. Adding a padding zero is exact, so only the windows show.
///
/// ```
/// let x: Vec<f32> = (0..100).map(|i| 1.0 / (i as f32 + 1.0)).collect();
/// // 100 values: windows of 18, 32, 32 and 18, then their 4 sums in order
/// let w: Vec<f32> = [0..18, 18..50, 50..82, 82..100]
///     .map(|r| fprev::orders::sequential(&x[r]))
///     .to_vec();
/// assert_eq!(fprev::orders::xla_tree_reduction(&x), fprev::orders::sequential(&w));
/// ```
pub fn xla_tree_reduction<T: ProbeFloat>(x: &[T]) -> T {
    if x.len() <= XLA_WINDOW {
        return sequential(x);
    }
    let windows = |v: &[T]| -> Vec<T> {
        (0..v.len().div_ceil(XLA_WINDOW))
            .map(|k| sequential(&v[xla_window(v.len(), k)]))
            .collect()
    };
    let mut sums = windows(x);
    while sums.len() > XLA_WINDOW {
        sums = windows(&sums);
    }
    sequential(&sums)
}
