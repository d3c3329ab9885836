//! The shapes of the cuBLAS targets: a gemm and a gemv answering one probe per row.

use super::MathMode;

/// Shape of a gemm target: `C (rows x cols) = A (rows x n) * ones (n x cols)`; `n` is the
/// reduction length. Defaults: `rows = cols = n` (the papers' `n x n x n` matmul, clamped
/// to `[1, 1024]`), [`MathMode::Default`].
///
/// ```
/// let c = fprev::cuda::GemmConfig::new(32).rows(64).cols(8);
/// assert_eq!((c.n, c.rows, c.cols), (32, 64, 8));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmConfig {
    /// Reduction length `k`.
    pub n: usize,
    /// Rows of `A` and `C`: probes answered per call.
    pub rows: usize,
    /// Columns of `B` and `C`; the answer is read from column 0.
    pub cols: usize,
    /// cuBLAS math mode.
    pub math: MathMode,
    /// Spread each probe over both operands, one probe per call (f16 and bf16 operands
    /// only): `None` (the default) spreads where one operand's range cannot swamp `n`
    /// units; `Some(true)` always, for the widest masks the product's range allows (a
    /// Tensor Core adder keeping more alignment bits than f16's range leaves room for is
    /// then revealed rather than refused as indistinguishable).
    pub spread: Option<bool>,
}

impl GemmConfig {
    /// Defaults for reduction length `n`.
    pub fn new(n: usize) -> GemmConfig {
        let side = n.clamp(1, 1024);
        GemmConfig {
            n,
            rows: side,
            cols: side,
            math: MathMode::Default,
            spread: None,
        }
    }
    /// Spread probes over both operands (see [`GemmConfig::spread`]).
    ///
    /// ```
    /// let c = fprev::cuda::GemmConfig::new(4096).spread_operands(true);
    /// assert_eq!(c.spread, Some(true));
    /// ```
    pub fn spread_operands(mut self, on: bool) -> Self {
        self.spread = Some(on);
        self
    }
    /// Probes per call (rows of `A`).
    pub fn rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
    /// Columns of `B`.
    pub fn cols(mut self, cols: usize) -> Self {
        self.cols = cols;
        self
    }
    /// cuBLAS math mode.
    pub fn math(mut self, math: MathMode) -> Self {
        self.math = math;
        self
    }
}

/// How a gemv target stores its matrix (probe `k` is row `k` either way).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GemvLayout {
    /// Rows contiguous: `cublasSgemv` with `CUBLAS_OP_T` (a dot product per row).
    #[default]
    RowMajor,
    /// Columns contiguous: `cublasSgemv` with `CUBLAS_OP_N` (columns scaled and added).
    ColMajor,
}

/// Shape of a gemv target `y (rows) = A (rows x n) * ones (n)`. Defaults: `rows =
/// min(n, 1024)`, [`GemvLayout::RowMajor`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemvConfig {
    /// Reduction length.
    pub n: usize,
    /// Probes per call.
    pub rows: usize,
    /// Storage of `A`.
    pub layout: GemvLayout,
}

impl GemvConfig {
    /// Defaults for reduction length `n`.
    pub fn new(n: usize) -> GemvConfig {
        GemvConfig {
            n,
            rows: n.clamp(1, 1024),
            layout: GemvLayout::RowMajor,
        }
    }
    /// Probes per call.
    pub fn rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
    /// Storage of `A`.
    pub fn layout(mut self, layout: GemvLayout) -> Self {
        self.layout = layout;
        self
    }
}
