//! Exact, reproducible sums, dot products and matrix products: the remedy once fprev has
//! shown a problem.
//!
//! A floating-point sum depends on the order of its additions, so a parallel reduction can
//! give different bits on every run. The functions here compute the *exact* sum (or dot
//! product) and round it once, to nearest with ties to even. The result is then the same
//! whatever the order, the thread count or the chunking, and it is also the most accurate
//! answer the output type can hold.
//!
//! How: values first go through small floating-point expansions (error-free TwoSum, eight
//! independent lanes, vectorized) that absorb them at memory speed; what those cannot hold
//! exactly spills into a superaccumulator, a 4352-bit fixed-point number in carry-save form
//! that covers every `f64` and every product of two `f64` (Collange, Defour, Graillat and
//! Iakymchuk's design). Partial accumulators merge exactly, so `rayon` reductions work.
//! [`dot`] bins products and their FMA errors in fixed-point levels held in doubles.
//! [`ozaki_dot`] gets the same exact dot product from any ordinary dot product kernel, and
//! [`gemm`] correctly rounded matrix products from an ordinary matrix-product kernel
//! (`matrixmultiply` by default, or yours through [`GemmKernel`]).
//!
//! ```
//! use fprev_runtime::exact;
//!
//! let xs = [1e16, 1.0, -1e16, 1.0];
//! assert_eq!(xs.iter().sum::<f64>(), 1.0); // the first 1.0 was lost
//! assert_eq!(exact::sum(&xs), 2.0);
//! assert_eq!(exact::par_sum(&xs), 2.0);
//! ```

pub(crate) mod accumulator;
mod encoding;
pub(crate) mod filter;
mod format;
mod gemm;
mod ozaki;

use rayon::prelude::*;

/// `2^e` for `e` in `-1074..=1023` (f64's subnormal and normal range).
pub(crate) fn pow2(e: i32) -> f64 {
    debug_assert!((-1074..=1023).contains(&e));
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

pub use accumulator::Accumulator;
pub use encoding::StateError;
pub use format::{FormatError, RoundingFormat};
#[cfg(feature = "ndarray")]
pub use gemm::gemm_array;
pub use gemm::{gemm, gemv, Gemm, GemmKernel, MatrixElement, Matrixmultiply, Operand, ShapeError};

/// Fewest elements per `rayon` task in [`par_sum`] and [`par_dot`]; any value gives the
/// same bits.
const PAR_CHUNK: usize = 1 << 17;
/// Tasks per thread: enough for load balance, few enough that each task's filter schedule
/// settles and its exponent bins pay for their setup and final emptying.
const TASKS_PER_THREAD: usize = 4;

/// Elements per `rayon` task for `len` values: coarse, since each task starts a fresh
/// accumulator front end (its filters probe again, and a wide dynamic range allocates
/// and empties a bin table), while the result is exact whatever the chunking.
fn par_chunk(len: usize) -> usize {
    len.div_ceil(rayon::current_num_threads() * TASKS_PER_THREAD)
        .max(PAR_CHUNK)
}

/// The two slices of a dot product have different lengths.
///
/// ```
/// let err = fprev_runtime::exact::dot(&[1.0, 2.0], &[3.0]).unwrap_err();
/// assert_eq!((err.left, err.right), (2, 1));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LengthMismatch {
    /// Length of the first slice.
    pub left: usize,
    /// Length of the second slice.
    pub right: usize,
}

impl std::fmt::Display for LengthMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let LengthMismatch { left, right } = self;
        write!(
            f,
            "dot product of slices with different lengths: {left} and {right}"
        )
    }
}

impl std::error::Error for LengthMismatch {}

fn check_lengths(x: &[f64], y: &[f64]) -> Result<(), LengthMismatch> {
    if x.len() == y.len() {
        Ok(())
    } else {
        Err(LengthMismatch {
            left: x.len(),
            right: y.len(),
        })
    }
}

/// The exact sum of `xs`, correctly rounded to `f64`.
///
/// The same bits whatever the order of `xs`: use it where a result must not depend on how
/// the values happened to be grouped. NaN in gives NaN; `+inf` with `-inf` gives NaN; an
/// exact sum too large for `f64` gives the correctly signed infinity.
///
/// ```
/// let xs = [0.1, 0.2, 0.3];
/// let mut reversed = xs;
/// reversed.reverse();
/// // Plain sums differ by order; the exact one cannot.
/// assert_ne!(xs.iter().sum::<f64>(), reversed.iter().sum::<f64>());
/// assert_eq!(fprev_runtime::exact::sum(&xs), fprev_runtime::exact::sum(&reversed));
/// assert_eq!(fprev_runtime::exact::sum(&xs), 0.6); // the double nearest the exact sum
/// ```
pub fn sum(xs: &[f64]) -> f64 {
    let mut acc = Accumulator::new();
    acc.add_slice(xs);
    acc.finish()
}

/// The exact sum of `xs`, rounded once to `f32`.
///
/// Widening to `f64` is exact, but summing in `f64` and then narrowing rounds twice; this
/// rounds the exact value directly to `f32`.
///
/// ```
/// // 1 + 2^-24 + 2^-60 is just above the midpoint between 1 and the next f32.
/// let xs = [1.0f32, 2f32.powi(-24), 2f32.powi(-60)];
/// assert_eq!(fprev_runtime::exact::sum_f32(&xs), 1.0 + f32::EPSILON);
/// let twice_rounded = xs.iter().map(|&x| x as f64).sum::<f64>() as f32;
/// assert_eq!(twice_rounded, 1.0);
/// ```
pub fn sum_f32(xs: &[f32]) -> f32 {
    let mut acc = Accumulator::new();
    acc.add_slice_f32(xs);
    acc.finish_f32()
}

/// [`sum`] computed by `rayon` in parallel; the bits do not depend on the thread count.
///
/// ```
/// let xs: Vec<f64> = (1..=100_000).map(|i| 1.0 / i as f64).collect();
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// let on_three = pool.install(|| fprev_runtime::exact::par_sum(&xs));
/// assert_eq!(on_three.to_bits(), fprev_runtime::exact::sum(&xs).to_bits());
/// ```
pub fn par_sum(xs: &[f64]) -> f64 {
    par_accumulate(xs).finish()
}

/// The exact sum of `xs` as an [`Accumulator`], computed in parallel (to round it to
/// another [`RoundingFormat`], or to merge it with more).
///
/// ```
/// use fprev_runtime::exact::{par_accumulate, RoundingFormat};
/// let xs = vec![0.1; 10_000];
/// assert_eq!(par_accumulate(&xs).round_to(RoundingFormat::F32), 1000.0000000000000555f32 as f64);
/// ```
pub fn par_accumulate(xs: &[f64]) -> Accumulator {
    xs.par_chunks(par_chunk(xs.len()))
        .fold(Accumulator::new, |mut acc, chunk| {
            acc.add_slice(chunk);
            acc
        })
        .reduce(Accumulator::new, Accumulator::merged)
}

/// The exact dot product of `x` and `y`, correctly rounded to `f64`.
///
/// Each product is split without error by an FMA (`x*y = p + e` exactly) and both parts
/// go to the accumulator; products that would underflow or overflow that split are added
/// as exact 106-bit integers instead.
///
/// ```
/// // Catastrophic cancellation: the naive dot product returns 0.
/// let x = [1e17, 1.0, -1e17];
/// let y = [1.0, 1.0, 1.0];
/// assert_eq!(x.iter().zip(&y).map(|(a, b)| a * b).sum::<f64>(), 0.0);
/// assert_eq!(fprev_runtime::exact::dot(&x, &y), Ok(1.0));
/// assert!(fprev_runtime::exact::dot(&x, &y[..2]).is_err());
/// ```
pub fn dot(x: &[f64], y: &[f64]) -> Result<f64, LengthMismatch> {
    check_lengths(x, y)?;
    let mut acc = Accumulator::new();
    acc.add_dot(x, y);
    Ok(acc.finish())
}

/// [`dot`] computed by `rayon` in parallel; the bits do not depend on the thread count.
///
/// ```
/// let x: Vec<f64> = (0..50_000).map(|i| (i as f64).sin()).collect();
/// let y: Vec<f64> = (0..50_000).map(|i| (i as f64).cos()).collect();
/// assert_eq!(fprev_runtime::exact::par_dot(&x, &y), fprev_runtime::exact::dot(&x, &y));
/// ```
pub fn par_dot(x: &[f64], y: &[f64]) -> Result<f64, LengthMismatch> {
    check_lengths(x, y)?;
    let chunk = par_chunk(x.len());
    Ok(x.par_chunks(chunk)
        .zip(y.par_chunks(chunk))
        .fold(Accumulator::new, |mut acc, (cx, cy)| {
            acc.add_dot(cx, cy);
            acc
        })
        .reduce(Accumulator::new, Accumulator::merged)
        .finish())
}

/// The exact dot product by the Ozaki scheme, with an ordinary dot product inside.
///
/// Same result as [`dot`], from a handful of ordinary (vectorized, 8-way) dot products
/// of the slices. Use [`ozaki_dot_with`] to bring your own inner kernel.
///
/// ```
/// let x = [1e17, 1.0, -1e17];
/// let y = [1.0, 1.0, 1.0];
/// assert_eq!(fprev_runtime::exact::ozaki_dot(&x, &y), Ok(1.0));
/// ```
pub fn ozaki_dot(x: &[f64], y: &[f64]) -> Result<f64, LengthMismatch> {
    ozaki_dot_with(x, y, lanes_dot)
}

/// An ordinary dot product with eight independent partial sums (so it vectorizes): a
/// different order from the textbook loop, which the Ozaki scheme does not mind.
fn lanes_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in ca.by_ref().zip(cb.by_ref()) {
        for j in 0..8 {
            lanes[j] += x[j] * y[j];
        }
    }
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(p, q)| p * q)
        .sum();
    lanes.iter().sum::<f64>() + tail
}

/// The exact dot product by the Ozaki scheme, with `inner` as the dot product kernel.
///
/// Both vectors are cut into slices of small integers times a power of two, chosen so
/// that the dot product of two slices is exact in `f64` *whatever order `inner` sums in*:
/// sequential, reversed, blocked, multithreaded, FMA or not. So a fast vendor kernel that
/// is not reproducible by itself gives a reproducible, correctly rounded result here.
/// `inner` is called on equal-length slices (blocks of a few thousand elements, several
/// slice pairs per block) and must return their dot product computed with ordinary `f64`
/// arithmetic, in any order. Vectors holding NaN or infinities skip the
/// scheme and get [`dot`]'s IEEE semantics.
///
/// ```
/// use rayon::prelude::*;
/// let x: Vec<f64> = (0..10_000).map(|i| (i as f64 * 0.7).sin() * 1e10).collect();
/// let y: Vec<f64> = (0..10_000).map(|i| (i as f64 * 0.3).cos() / 7.0).collect();
/// // A reversed sum and a parallel sum: different orders, identical bits.
/// let reversed = fprev_runtime::exact::ozaki_dot_with(&x, &y, |a, b| {
///     a.iter().zip(b).rev().map(|(p, q)| p * q).sum()
/// });
/// let parallel = fprev_runtime::exact::ozaki_dot_with(&x, &y, |a, b| {
///     a.par_iter().zip(b).map(|(p, q)| p * q).sum()
/// });
/// assert_eq!(reversed, parallel);
/// assert_eq!(reversed, fprev_runtime::exact::dot(&x, &y));
/// ```
pub fn ozaki_dot_with<F>(x: &[f64], y: &[f64], mut inner: F) -> Result<f64, LengthMismatch>
where
    F: FnMut(&[f64], &[f64]) -> f64,
{
    check_lengths(x, y)?;
    if !x.iter().chain(y).all(|v| v.is_finite()) {
        return dot(x, y);
    }
    let mut acc = Accumulator::new();
    ozaki::dot_into(&mut acc, x, y, &mut inner);
    Ok(acc.finish())
}
