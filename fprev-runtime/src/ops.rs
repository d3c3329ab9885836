//! Operations as probe targets: dot, gemv, gemm and other k-reductions, answered in
//! batches, with the summation order of every output element.
//!
//! A k-reduction evaluates `lanes` independent inputs of `k` values at once and gives
//! every lane `outputs` results, each a sum over that lane's `k` values. A gemm
//! `C = A B` is one with the rows of `A` as lanes and `B` all ones: `C[i, j]` sums row
//! `i` of `A`. So one gemm call answers one probe *per row* (masks in different places in
//! different rows), and every column answers it at once: a gemm of size 512 is revealed in
//! a handful of calls where one probe per call would need a thousand.
//!
//! [`ElementReveal`] reveals the order of every output element: it reveals one tree with
//! probes spread over the lanes, then checks every element's answers against that tree
//! (each recorded probe and seeded random inputs, bit for bit). Elements that disagree
//! (edge tiles, remainder rows) are revealed again with every lane answering the same
//! probe, and grouped by tree.
//!
//! FP8 operands (and any operand format whose range alone cannot swamp a sum of `k`
//! units) put masks and units over both operands of the products: each probe then
//! needs a row of `A` and a column of `B` of its own, so a call answers probes along a
//! matching of rows and columns (a gemv or a dot product one per call), and every
//! element is checked on random operands of its own
//! ([`ElementOrders::operands_spread`] says so).
//!
//! ```
//! use fprev::ops::{self, ElementReveal};
//! // A 4 x 8 by 8 x 3 product summing each dot product in two halves.
//! let gemm = ops::gemm(4, 8, 3, |a: &[f32], b: &[f32], c: &mut [f32]| {
//!     for i in 0..4 {
//!         for j in 0..3 {
//!             let half = |r: std::ops::Range<usize>| r.fold(0.0f32, |s, l| s + a[i * 8 + l] * b[l * 3 + j]);
//!             c[i * 3 + j] = half(0..4) + half(4..8);
//!         }
//!     }
//! });
//! let orders = ElementReveal::new().run(gemm)?;
//! assert!(orders.is_uniform());
//! assert_eq!(orders.groups[0].tree.to_string(), "((((0+1)+2)+3)+(((4+5)+6)+7))");
//! assert!(orders.calls <= 20); // the probes, the verification, the checks of every element
//! # Ok::<(), fprev::RevealError>(())
//! ```

mod adapters;
mod elements;
mod scaled;
mod scaled_fit;
mod scaled_products;

pub use adapters::{
    dot, gemm, gemv, reduction, Batched, DotReduction, GemmReduction, GemvReduction, KReduction,
};
use adapters::{split_operands, spreads_operands, OperandPair};
pub use elements::{Element, ElementCoverage, ElementOrders, ElementReveal, OrderGroup};
pub use scaled::{ScaledDot, ScaledDotShape, ScaledOperands};
pub use scaled_fit::{
    reveal_scaled_dot, ScaledArithmetic, ScaledDotError, ScaledDotReport, ScaledTreeSource,
    SCALED_FIT_DRAWS,
};
pub use scaled_products::ProductOrder;

use crate::black_box::TargetError;
use crate::float::ProbeFloat;

/// The shape of a k-reduction: `lanes` inputs of `k` values each per call, `outputs`
/// results per lane.
///
/// ```
/// let s = fprev::ops::ReductionShape { lanes: 4, k: 16, outputs: 2 };
/// assert_eq!(s.elements(), 8);
/// assert_eq!(s.to_string(), "4 x 2 outputs over k = 16");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReductionShape {
    /// Independent inputs per call (rows of `A` for gemm/gemv, 1 for a dot product).
    pub lanes: usize,
    /// Summands per output: the reduction length.
    pub k: usize,
    /// Results per lane (columns of `C` for gemm, 1 for gemv and dot).
    pub outputs: usize,
}

impl ReductionShape {
    /// Number of output elements, `lanes * outputs`.
    pub fn elements(&self) -> usize {
        self.lanes * self.outputs
    }
}

impl std::fmt::Display for ReductionShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} x {} outputs over k = {}",
            self.lanes, self.outputs, self.k
        )
    }
}

/// An operation that sums `k` values per output, for many lanes in one call.
///
/// `Input` is the operands' format; results are `T` (f16 operands with f32
/// accumulation: `Input = half::f16`, `T = f32`). Build one with [`gemm`], [`gemv`],
/// [`dot`] or [`reduction`], or implement it for your own operation.
///
/// ```
/// use fprev::ops::{Reduction, ReductionShape};
/// use fprev::target::TargetError;
/// /// Row sums of a 3 x 5 matrix.
/// struct RowSums;
/// impl Reduction<f64> for RowSums {
///     type Input = f64;
///     fn shape(&self) -> ReductionShape { ReductionShape { lanes: 3, k: 5, outputs: 1 } }
///     fn eval(&mut self, x: &[f64], out: &mut [f64]) -> Result<(), TargetError> {
///         for (row, o) in x.chunks(5).zip(out) { *o = row.iter().sum(); }
///         Ok(())
///     }
/// }
/// let orders = fprev::ops::ElementReveal::new().run(RowSums)?;
/// assert_eq!(orders.groups[0].tree, fprev::SumTree::sequential(5));
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub trait Reduction<T: ProbeFloat> {
    /// The operands' format.
    type Input: ProbeFloat;

    /// Lanes, reduction length and outputs per lane.
    fn shape(&self) -> ReductionShape;

    /// Evaluate: `input` holds `lanes` rows of `k` values (row-major), `out` receives
    /// `lanes` rows of `outputs` results.
    fn eval(&mut self, input: &[Self::Input], out: &mut [T]) -> Result<(), TargetError>;

    /// Whether the reduction is a product with a second operand that
    /// [`eval_operands`](Self::eval_operands) can set (dot, gemv, gemm).
    const OPERANDS: bool = false;

    /// Evaluate a product with the second operand given: `b` holds `k` values, the
    /// factor of each position (for a gemm, every column of `B` is `b`). Used when masks
    /// and units must spread over both operands because one operand's range cannot
    /// swamp a sum (FP8, f16 at large `k`). The default (no second operand) is `None`.
    fn eval_operands(
        &mut self,
        input: &[Self::Input],
        b: &[Self::Input],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        let _ = (input, b, out);
        None
    }

    /// Whether [`eval_columns`](Self::eval_columns) takes a second operand per output
    /// (a gemm's `B`, one column per output); with it, one call answers a probe per
    /// row-and-column pair when masks spread over both operands.
    const COLUMNS: bool = false;

    /// Evaluate a product with a second operand per output: `b` holds `k x outputs`
    /// values, row-major, and output `j` of lane `i` is row `i` of `input` with column
    /// `j` of `b` (a gemm's `A` and `B`). The default answers a one-output reduction
    /// through [`eval_operands`](Self::eval_operands) and is `None` otherwise.
    ///
    /// ```
    /// use fprev::ops::{self, Reduction};
    /// // C = A B with A 1 x 2 and B 2 x 2: each column of B its own factors
    /// let mut g = ops::gemm(1, 2, 2, |a: &[f64], b: &[f64], c: &mut [f64]| {
    ///     for j in 0..2 {
    ///         c[j] = a[0] * b[j] + a[1] * b[2 + j];
    ///     }
    /// });
    /// let mut c = [0.0; 2];
    /// g.eval_columns(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0], &mut c).unwrap()?;
    /// assert_eq!(c, [13.0, 16.0]);
    /// # Ok::<(), fprev::target::TargetError>(())
    /// ```
    fn eval_columns(
        &mut self,
        input: &[Self::Input],
        b: &[Self::Input],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        if self.shape().outputs == 1 {
            self.eval_operands(input, b, out)
        } else {
            None
        }
    }
}

impl<T: ProbeFloat, R: Reduction<T> + ?Sized> Reduction<T> for &mut R {
    type Input = R::Input;
    fn shape(&self) -> ReductionShape {
        (**self).shape()
    }
    fn eval(&mut self, input: &[Self::Input], out: &mut [T]) -> Result<(), TargetError> {
        (**self).eval(input, out)
    }
    const OPERANDS: bool = R::OPERANDS;
    fn eval_operands(
        &mut self,
        input: &[Self::Input],
        b: &[Self::Input],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        (**self).eval_operands(input, b, out)
    }
    const COLUMNS: bool = R::COLUMNS;
    fn eval_columns(
        &mut self,
        input: &[Self::Input],
        b: &[Self::Input],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        (**self).eval_columns(input, b, out)
    }
}

/// Convert between probe formats; exact for every value the engine puts in a probe
/// (masks and units are chosen representable in both formats).
pub(crate) fn convert<A: ProbeFloat, B: ProbeFloat>(x: A) -> B {
    B::from_f64_round(x.to_f64())
}
