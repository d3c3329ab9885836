//! The element types a cuBLAS gemm target takes, and the operand format each is sent as.

/// The operand format of a cuBLAS gemm, chosen by [`GemmInput`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmOperand {
    /// `f32` (`cublasSgemm`).
    F32,
    /// IEEE half (`cublasGemmEx`, `CUDA_R_16F`).
    F16,
    /// bfloat16 (`cublasGemmEx`, `CUDA_R_16BF`).
    Bf16,
}

/// Element types a gemm target takes as inputs; it always accumulates and answers in f32.
pub trait GemmInput: crate::float::ProbeFloat + sealed::Sealed {
    /// The cuBLAS operand type.
    const OPERAND: GemmOperand;
}

impl GemmInput for f32 {
    const OPERAND: GemmOperand = GemmOperand::F32;
}
impl GemmInput for half::f16 {
    const OPERAND: GemmOperand = GemmOperand::F16;
}
impl GemmInput for half::bf16 {
    const OPERAND: GemmOperand = GemmOperand::Bf16;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}
