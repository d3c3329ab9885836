//! Correctly rounded matrix products from fast, non-reproducible kernels (the Ozaki
//! scheme, with a verified shortcut).
//!
//! Every element of [`gemm`]'s result is the exact dot product of a row and a column,
//! rounded once: the same bits whatever the thread count, the blocking or the machine,
//! and the most accurate value the type holds. The work is done by an ordinary
//! matrix-product kernel ([`Matrixmultiply`] by default, or yours through
//! [`GemmKernel`]):
//!
//! 1. each row of `A` is cut, relative to its largest magnitude, into a slice of
//!    `beta_a` bits and a tail; each column of `B` into two slices of `beta_b` bits and a
//!    tail, with `beta_a + beta_b + log2(k) <= 53`. The kernel multiplies the slices
//!    *exactly*, in any order, since every partial sum is an integer below 2^53;
//! 2. the kernel also multiplies the tails, `[A_hi | A_tail] * [B_tail ; B]`, in ordinary
//!    floating point. That part is at most about 2^-28 of the leading terms, and its
//!    rounding error has a rigorous bound (`gamma_2k` times Cauchy-Schwarz on the
//!    rows' and columns' norms);
//! 3. an element whose enclosure `exact slices + rest ± bound` rounds to a single value
//!    gets that value; the others (about one in a thousand for random data, every one for
//!    NaN, infinities, zeros, or an exponent range beyond about 2^±450 per element) are
//!    computed as exact dot products.
//!
//! The cost is about four kernel products of the same size (one of `m x k` by
//! `k x 2n`, one of `m x 2k` by `2k x n`), plus `O(mn + mk + kn)` work. `f32` products
//! need a single `f64` kernel product: products of two `f32` are exact in `f64`, so the
//! ordinary product has 29 bits to spare.

mod decide;
mod product;
mod slices;

use super::Accumulator;
use super::RoundingFormat;
use rayon::prelude::*;
use std::borrow::Cow;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types of the exact matrix products: `f64` and `f32`.
///
/// Inputs are widened to `f64` (exactly) for the kernel; each result is rounded once to
/// the element type.
///
/// ```
/// // 1 + 2^-24 + 2^-60 lies just above the midpoint between 1 and the next f32. Summed in
/// // f64 it becomes the midpoint itself, which then rounds down to 1.
/// let a = [1.0f32, 2f32.powi(-24), 2f32.powi(-60)];
/// let c: Vec<f32> = fprev_runtime::exact::gemm(1, 1, 3, &a, &[1.0; 3])?;
/// assert_eq!(c, [1.0 + f32::EPSILON]);
/// assert_eq!(a.iter().map(|&v| v as f64).sum::<f64>() as f32, 1.0);
/// # Ok::<(), fprev_runtime::exact::ShapeError>(())
/// ```
pub trait MatrixElement: Copy + Send + Sync + sealed::Sealed + 'static {
    /// The format results are rounded to.
    #[doc(hidden)]
    const FORMAT: RoundingFormat;
    /// The values as `f64` (borrowed when they already are).
    #[doc(hidden)]
    fn widen(values: &[Self]) -> Cow<'_, [f64]>;
    /// A value of the format, given as the `f64` that holds it.
    #[doc(hidden)]
    fn narrow(value: f64) -> Self;
}

impl MatrixElement for f64 {
    const FORMAT: RoundingFormat = RoundingFormat::F64;
    fn widen(values: &[f64]) -> Cow<'_, [f64]> {
        Cow::Borrowed(values)
    }
    fn narrow(value: f64) -> f64 {
        value
    }
}

impl MatrixElement for f32 {
    const FORMAT: RoundingFormat = RoundingFormat::F32;
    fn widen(values: &[f32]) -> Cow<'_, [f64]> {
        Cow::Owned(values.iter().map(|&v| v as f64).collect())
    }
    fn narrow(value: f64) -> f32 {
        value as f32
    }
}

/// Which argument of a matrix product a [`ShapeError`] is about.
///
/// ```
/// use fprev_runtime::exact::{gemm, Operand, ShapeError};
/// let err = gemm(2, 2, 2, &[1.0; 4], &[1.0; 3]).unwrap_err();
/// assert!(matches!(err, ShapeError::Length { operand: Operand::B, .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The left matrix, `m x k`.
    A,
    /// The right matrix, `k x n`.
    B,
    /// The vector of a matrix-vector product, of length `k`.
    X,
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Operand::A => "a",
            Operand::B => "b",
            Operand::X => "x",
        })
    }
}

/// The arguments of a matrix product do not fit together.
///
/// ```
/// use fprev_runtime::exact::{gemm, Operand, ShapeError};
/// let err = gemm(2, 3, 4, &[0.0; 7], &[0.0; 12]).unwrap_err();
/// assert_eq!(err, ShapeError::Length { operand: Operand::A, expected: 8, found: 7 });
/// assert!(err.to_string().contains("exactly rows * columns"));
/// let huge = gemm::<f64>(usize::MAX, 1, 2, &[], &[0.0; 2]).unwrap_err();
/// assert_eq!(huge, ShapeError::TooLarge { operand: Operand::A });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShapeError {
    /// The slice for `operand` holds `found` values where its dimensions need `expected`.
    Length {
        /// The argument.
        operand: Operand,
        /// Rows times columns.
        expected: usize,
        /// The slice's length.
        found: usize,
    },
    /// The dimensions of `operand` multiply past `usize::MAX`.
    TooLarge {
        /// The argument.
        operand: Operand,
    },
    /// The left matrix has `left` columns and the right one `right` rows.
    Inner {
        /// Columns of the left matrix.
        left: usize,
        /// Rows of the right matrix (or the vector's length).
        right: usize,
    },
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeError::Length {
                operand,
                expected,
                found,
            } => write!(
                f,
                "`{operand}` holds {found} values but its dimensions need {expected}: \
                 pass a row-major slice of exactly rows * columns values"
            ),
            ShapeError::TooLarge { operand } => {
                write!(f, "the dimensions of `{operand}` multiply past usize::MAX")
            }
            ShapeError::Inner { left, right } => write!(
                f,
                "the left matrix has {left} columns but the right one has {right} rows: \
                 they must be equal"
            ),
        }
    }
}

impl std::error::Error for ShapeError {}

/// Checks that `values` holds `rows * cols` elements.
fn check<T>(operand: Operand, rows: usize, cols: usize, values: &[T]) -> Result<(), ShapeError> {
    let expected = rows
        .checked_mul(cols)
        .ok_or(ShapeError::TooLarge { operand })?;
    if values.len() == expected {
        Ok(())
    } else {
        Err(ShapeError::Length {
            operand,
            expected,
            found: values.len(),
        })
    }
}

/// A matrix-product kernel: `c = a * b` in ordinary `f64` arithmetic.
///
/// `a` is `m x k`, `b` is `k x n`, `c` is `m x n`, all row-major and contiguous; `c`'s
/// contents on entry are unspecified. Every element of `c` must be computed as a sum of
/// the `k` products, by ordinary IEEE multiplications and additions (FMA allowed) in any
/// order, blocking or thread count: a BLAS `dgemm`, a GPU's, your own loop. Algorithms
/// that compute something else (Strassen, reduced-precision tensor cores) break the
/// exactness the scheme relies on. Closures with the same signature are kernels.
///
/// ```
/// use fprev_runtime::exact::{Gemm, GemmKernel};
/// // A plain triple loop, summing each element in reverse order.
/// struct Reversed;
/// impl GemmKernel for Reversed {
///     fn gemm(&mut self, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
///         for i in 0..m {
///             for j in 0..n {
///                 c[i * n + j] = (0..k).rev().map(|l| a[i * k + l] * b[l * n + j]).sum();
///             }
///         }
///     }
/// }
/// let a = [1e16, 1.0, -1e16, 1.0];
/// let b = [1.0, 1.0, 1.0, 1.0];
/// let c = Gemm::new().kernel(Reversed).gemm(1, 1, 4, &a, &b)?;
/// assert_eq!(c, [2.0]);
/// # Ok::<(), fprev_runtime::exact::ShapeError>(())
/// ```
pub trait GemmKernel {
    /// Computes `c = a * b` (see the trait's documentation for the layout).
    fn gemm(&mut self, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]);
}

/// Any `FnMut(m, n, k, a, b, c)` is a kernel.
///
/// ```
/// let naive = |m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]| {
///     for i in 0..m {
///         for j in 0..n {
///             c[i * n + j] = (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum();
///         }
///     }
/// };
/// let c = fprev_runtime::exact::Gemm::new().kernel(naive).gemm(1, 1, 3, &[0.1, 0.2, 0.3], &[1.0; 3])?;
/// assert_eq!(c, [0.6]);
/// # Ok::<(), fprev_runtime::exact::ShapeError>(())
/// ```
impl<F> GemmKernel for F
where
    F: FnMut(usize, usize, usize, &[f64], &[f64], &mut [f64]),
{
    fn gemm(&mut self, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        self(m, n, k, a, b, c)
    }
}

/// The default kernel: `matrixmultiply::dgemm` (pure Rust, AVX2/FMA where the CPU has
/// them), its rows split into `rayon` tasks so it runs on the current thread pool.
///
/// Also a plain, non-reproducible product for comparisons:
///
/// ```
/// use fprev_runtime::exact::{GemmKernel, Matrixmultiply};
/// let mut c = [0.0; 1];
/// Matrixmultiply.gemm(1, 1, 2, &[1.0, 2.0], &[3.0, 4.0], &mut c);
/// assert_eq!(c, [11.0]);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Matrixmultiply;

impl GemmKernel for Matrixmultiply {
    fn gemm(&mut self, m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
        if m == 0 || n == 0 {
            return;
        }
        if k == 0 {
            c.fill(0.0);
            return;
        }
        // One task per thread: each task packs all of `b` again.
        let tasks = rayon::current_num_threads();
        let rows = m.div_ceil(tasks).max(64).min(m);
        c.par_chunks_mut(rows * n)
            .zip(a.par_chunks(rows * k))
            .for_each(|(c, a)| {
                let rows = c.len() / n;
                // SAFETY: `a` holds `rows * k` values, `b` `k * n` and `c` `rows * n`, all
                // row-major with the strides given.
                unsafe {
                    matrixmultiply::dgemm(
                        rows,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k as isize,
                        1,
                        b.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        c.as_mut_ptr(),
                        n as isize,
                        1,
                    )
                }
            });
    }
}

/// Exact matrix products with a chosen kernel, reusing their buffers from one product to
/// the next.
///
/// [`gemm`] and [`gemv`] use the default kernel and fresh buffers; this picks another
/// kernel, for instance a vendor BLAS or a GPU through a closure, and keeps the buffers
/// (about ten times the size of the operands) for the next call. The results do not
/// depend on the kernel (as long as it keeps [`GemmKernel`]'s contract), only the time
/// does.
///
/// ```
/// use fprev_runtime::exact::{Gemm, Matrixmultiply};
/// let mut exact = Gemm::new(); // Gemm<Matrixmultiply>
/// let c = exact.gemm(2, 1, 2, &[1.0, 2.0, 3.0, 4.0], &[1.0, 0.5])?;
/// assert_eq!(c, [2.0, 5.0]);
/// # Ok::<(), fprev_runtime::exact::ShapeError>(())
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Gemm<K = Matrixmultiply> {
    kernel: K,
    /// Buffers reused from one product to the next.
    work: product::ProductBuffers,
}

impl Gemm {
    /// Exact products with the default kernel, [`Matrixmultiply`].
    ///
    /// ```
    /// let c = fprev_runtime::exact::Gemm::new().gemm(1, 1, 1, &[3.0], &[0.5])?;
    /// assert_eq!(c, [1.5]);
    /// # Ok::<(), fprev_runtime::exact::ShapeError>(())
    /// ```
    pub fn new() -> Self {
        Gemm {
            kernel: Matrixmultiply,
            work: product::ProductBuffers::default(),
        }
    }
}

impl<K: GemmKernel> Gemm<K> {
    /// The same products computed with `kernel`.
    ///
    /// ```
    /// use fprev_runtime::exact::{Gemm, GemmKernel, Matrixmultiply};
    /// // Count the kernel calls: an f64 product takes two, whatever the size.
    /// let mut calls = 0;
    /// let counting = |m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]| {
    ///     calls += 1;
    ///     Matrixmultiply.gemm(m, n, k, a, b, c)
    /// };
    /// let c = Gemm::new().kernel(counting).gemm(2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[1.0, 0.0, 0.0, 1.0])?;
    /// assert_eq!(c, [1.0, 2.0, 3.0, 4.0]);
    /// assert_eq!(calls, 2);
    /// # Ok::<(), fprev_runtime::exact::ShapeError>(())
    /// ```
    pub fn kernel<L: GemmKernel>(self, kernel: L) -> Gemm<L> {
        Gemm {
            kernel,
            work: self.work,
        }
    }

    /// The product `a * b` of the row-major `m x k` matrix `a` and `k x n` matrix `b`,
    /// every element correctly rounded (see [`gemm`]).
    ///
    /// ```
    /// let c = fprev_runtime::exact::Gemm::new().gemm(1, 2, 2, &[1e20, 1.0], &[1e20, 1.0, -1e20, 1.0])?;
    /// assert_eq!(c, [1e40 - 1e20, 1e20 + 1.0]);
    /// # Ok::<(), fprev_runtime::exact::ShapeError>(())
    /// ```
    pub fn gemm<T: MatrixElement>(
        &mut self,
        m: usize,
        n: usize,
        k: usize,
        a: &[T],
        b: &[T],
    ) -> Result<Vec<T>, ShapeError> {
        check(Operand::A, m, k, a)?;
        check(Operand::B, k, n, b)?;
        let (a, b) = (T::widen(a), T::widen(b));
        let c = product::product(
            &mut self.kernel,
            &mut self.work,
            (m, n, k),
            &a,
            &b,
            T::FORMAT,
        );
        Ok(c.into_iter().map(T::narrow).collect())
    }

    /// The product of the row-major `m x k` matrix `a` and the vector `x`, through the
    /// kernel as an `m x k` by `k x 1` product: for a kernel on another device. With the
    /// default kernel, [`gemv`] is faster.
    ///
    /// ```
    /// let y = fprev_runtime::exact::Gemm::new().gemv(2, 2, &[1.0, 1e-20, 1.0, -1.0], &[1.0, 1.0])?;
    /// assert_eq!(y, [1.0, 0.0]);
    /// # Ok::<(), fprev_runtime::exact::ShapeError>(())
    /// ```
    pub fn gemv<T: MatrixElement>(
        &mut self,
        m: usize,
        k: usize,
        a: &[T],
        x: &[T],
    ) -> Result<Vec<T>, ShapeError> {
        check(Operand::A, m, k, a)?;
        check(Operand::X, k, 1, x)?;
        self.gemm(m, 1, k, a, x)
    }
}

/// The product `a * b` of the row-major `m x k` matrix `a` and `k x n` matrix `b`, every
/// element the exact dot product of a row and a column rounded once (to nearest, ties to
/// even) to `T`.
///
/// The bits therefore depend only on the inputs: not on `rayon`'s thread count, not on
/// the kernel's blocking, not on the machine. NaN and infinities follow
/// [`dot`](super::dot)'s IEEE semantics element by element; the cost grows for elements
/// whose exact value is zero or whose row and column span more than about 2^±450 (those
/// are computed as exact dot products). `f32` matrices give `f32` results, each rounded
/// once from the exact value.
///
/// # Errors
/// [`ShapeError`] when `a` does not hold `m * k` values or `b` `k * n`.
///
/// ```
/// use fprev_runtime::exact;
/// // Row 0 of `a` against the columns of `b`: plain arithmetic loses the 1.0.
/// let a = [1e16, 1.0, -1e16];
/// let b = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0];
/// assert_eq!(exact::gemm(1, 2, 3, &a, &b)?, [1.0, 2.0]);
/// // The same bits on any number of threads.
/// let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
/// assert_eq!(pool.install(|| exact::gemm(1, 2, 3, &a, &b))?, [1.0, 2.0]);
/// # Ok::<(), exact::ShapeError>(())
/// ```
pub fn gemm<T: MatrixElement>(
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    b: &[T],
) -> Result<Vec<T>, ShapeError> {
    Gemm::new().gemm(m, n, k, a, b)
}

/// The product of the row-major `m x k` matrix `a` and the vector `x`, every element the
/// exact dot product of a row and `x` rounded once to `T`, the same bits on any thread
/// count.
///
/// A matrix-vector product reads each value of `a` once, so slicing it for a kernel would
/// only multiply the memory traffic: each row is an exact dot product ([`dot`](super::dot)'s
/// kernel), rows spread over `rayon`.
///
/// # Errors
/// [`ShapeError`] when `a` does not hold `m * k` values or `x` `k`.
///
/// ```
/// let a = [1e17, 1.0, -1e17, 2.0, 2.0, 2.0];
/// let y = fprev_runtime::exact::gemv(2, 3, &a, &[1.0, 1.0, 1.0])?;
/// assert_eq!(y, [1.0, 6.0]);
/// # Ok::<(), fprev_runtime::exact::ShapeError>(())
/// ```
pub fn gemv<T: MatrixElement>(m: usize, k: usize, a: &[T], x: &[T]) -> Result<Vec<T>, ShapeError> {
    check(Operand::A, m, k, a)?;
    check(Operand::X, k, 1, x)?;
    if k == 0 {
        return Ok(vec![T::narrow(0.0); m]);
    }
    let x = T::widen(x);
    Ok(a.par_chunks(k)
        .map(|row| {
            let mut acc = Accumulator::new();
            acc.add_dot(&T::widen(row), &x);
            T::narrow(acc.round_to(T::FORMAT))
        })
        .collect())
}

/// [`gemm`] on `ndarray` matrices of any layout.
///
/// # Errors
/// [`ShapeError::Inner`] when `a`'s columns and `b`'s rows differ.
///
/// ```
/// use ndarray::array;
/// let a = array![[1e16, 1.0, -1e16]];
/// let b = array![[1.0], [1.0], [1.0]];
/// assert_eq!(fprev_runtime::exact::gemm_array(a.view(), b.view())?, array![[1.0]]);
/// // A transposed view works too.
/// assert_eq!(fprev_runtime::exact::gemm_array(b.t(), b.view())?, array![[3.0]]);
/// # Ok::<(), fprev_runtime::exact::ShapeError>(())
/// ```
#[cfg(feature = "ndarray")]
pub fn gemm_array<T: MatrixElement>(
    a: ndarray::ArrayView2<'_, T>,
    b: ndarray::ArrayView2<'_, T>,
) -> Result<ndarray::Array2<T>, ShapeError> {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    if k != k2 {
        return Err(ShapeError::Inner { left: k, right: k2 });
    }
    // Row-major copies, whatever the views' strides.
    let a: Vec<T> = a.iter().copied().collect();
    let b: Vec<T> = b.iter().copied().collect();
    let c = gemm(m, n, k, &a, &b)?;
    Ok(ndarray::Array2::from_shape_fn((m, n), |(i, j)| {
        c[i * n + j]
    }))
}
