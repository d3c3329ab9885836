//! [`SumType`]: the floating-point type an order model adds in, decided from the revealed
//! type (its public path is `fprev::model::SumType`).

use super::ProbeFloat;

/// The floating-point type emitted code adds in: the input type, or the wider
/// accumulator a library converts float16/bfloat16 inputs to.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SumType {
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
}

impl SumType {
    /// The type that adds values of `T`: `f64` for `f64`, `f32` for every narrower type
    /// (float16, bfloat16 and FP8 sums accumulate in float32 in the libraries modelled).
    pub fn of<T: ProbeFloat>() -> SumType {
        if T::FORMAT == f64::FORMAT {
            SumType::F64
        } else {
            SumType::F32
        }
    }

    /// `f32` or `f64`.
    pub fn name(self) -> &'static str {
        match self {
            SumType::F32 => "f32",
            SumType::F64 => "f64",
        }
    }
}
