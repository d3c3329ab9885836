//! cuBLAS math modes, and TF32 as a probe input format.

use crate::float::{FloatFormat, ProbeFloat, Tf32};

/// cuBLAS math mode (`cublasSetMathMode`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MathMode {
    /// `CUBLAS_DEFAULT_MATH`: Tensor Cores for f16/bf16 operands, none for f32.
    #[default]
    Default,
    /// `CUBLAS_PEDANTIC_MATH`: the prescribed precision throughout, no Tensor Cores.
    Pedantic,
    /// `CUBLAS_TF32_TENSOR_OP_MATH`: f32 operands rounded to TF32 on Tensor Cores; the
    /// target then declares TF32 inputs so probes stay exact.
    Tf32,
}

/// TF32 as a probe input format: f32's range, 11 significant bits (the format of
/// [`Tf32`], the operand type).
pub const TF32: FloatFormat = Tf32::FORMAT;
