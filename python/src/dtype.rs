//! The float formats the package probes in, by their NumPy names, and the dispatch from
//! a runtime name pair (operands, accumulator) to the engine's generic types.

use fprev_runtime::float::{F8E4M3Fnuz, F8E5M2Fnuz, F8E4M3, F8E5M2};
use fprev_runtime::ProbeFloat;
use half::{bf16, f16};
use pyo3::exceptions::PyValueError;
use pyo3::PyResult;

/// An operand or accumulator format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE binary64.
    F64,
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16 (NumPy through ml_dtypes).
    BF16,
    /// OCP FP8 E4M3 (ml_dtypes' `float8_e4m3fn`).
    F8E4M3,
    /// OCP FP8 E5M2 (ml_dtypes' `float8_e5m2`).
    F8E5M2,
    /// AMD MI300's FP8 E4M3FNUZ (ml_dtypes' `float8_e4m3fnuz`).
    F8E4M3Fnuz,
    /// AMD MI300's FP8 E5M2FNUZ (ml_dtypes' `float8_e5m2fnuz`).
    F8E5M2Fnuz,
    /// NVIDIA's TensorFloat-32, an operand type of Tensor Core instructions: NumPy has no
    /// such dtype, so its values travel as the float32 values they stand for (the low 13
    /// bits zero), and the callable answers in float32 or float64.
    Tf32,
}

impl Dtype {
    /// The format named `name` (NumPy's names, and fprev's short ones).
    pub fn parse(name: &str) -> PyResult<Dtype> {
        match name {
            "float64" | "f64" | "double" => Ok(Dtype::F64),
            "float32" | "f32" | "single" => Ok(Dtype::F32),
            "float16" | "f16" | "half" => Ok(Dtype::F16),
            "bfloat16" | "bf16" => Ok(Dtype::BF16),
            "float8_e4m3fn" | "float8_e4m3" | "f8e4m3" => Ok(Dtype::F8E4M3),
            "float8_e5m2" | "f8e5m2" => Ok(Dtype::F8E5M2),
            "float8_e4m3fnuz" | "e4m3fnuz" => Ok(Dtype::F8E4M3Fnuz),
            "float8_e5m2fnuz" | "e5m2fnuz" => Ok(Dtype::F8E5M2Fnuz),
            "tf32" | "tensorfloat32" | "tfloat32" => Ok(Dtype::Tf32),
            other => Err(PyValueError::new_err(format!(
                "unsupported dtype {other:?}: expected float64, float32, float16, bfloat16, \
                 float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz or tf32"
            ))),
        }
    }

    /// NumPy's name.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F64 => "float64",
            Dtype::F32 => "float32",
            Dtype::F16 => "float16",
            Dtype::BF16 => "bfloat16",
            Dtype::F8E4M3 => "float8_e4m3fn",
            Dtype::F8E5M2 => "float8_e5m2",
            Dtype::F8E4M3Fnuz => "float8_e4m3fnuz",
            Dtype::F8E5M2Fnuz => "float8_e5m2fnuz",
            Dtype::Tf32 => "tf32",
        }
    }

    /// Bytes per item.
    pub fn width(self) -> usize {
        match self {
            Dtype::F64 => 8,
            Dtype::F32 | Dtype::Tf32 => 4,
            Dtype::F16 | Dtype::BF16 => 2,
            Dtype::F8E4M3 | Dtype::F8E5M2 | Dtype::F8E4M3Fnuz | Dtype::F8E5M2Fnuz => 1,
        }
    }

    /// The value with these raw bits.
    pub fn bits_to_f64(self, bits: u64) -> f64 {
        match self {
            Dtype::F64 => f64::from_bits(bits),
            // a tf32 value is stored as the float32 it stands for
            Dtype::F32 | Dtype::Tf32 => f64::from(f32::from_bits(bits as u32)),
            Dtype::F16 => f16::from_bits(bits as u16).to_f64(),
            Dtype::BF16 => bf16::from_bits(bits as u16).to_f64(),
            Dtype::F8E4M3 => F8E4M3::from_bits(bits as u8).to_f64(),
            Dtype::F8E5M2 => F8E5M2::from_bits(bits as u8).to_f64(),
            Dtype::F8E4M3Fnuz => F8E4M3Fnuz::from_bits(bits as u8).to_f64(),
            Dtype::F8E5M2Fnuz => F8E5M2Fnuz::from_bits(bits as u8).to_f64(),
        }
    }
}

/// `x`'s bits in the operand format `I` (exact for every probe value).
pub fn bits_in<I: ProbeFloat, T: ProbeFloat>(x: T) -> u64 {
    I::from_f64_round(x.to_f64()).to_bits_u64()
}

/// Runs `$body` with `$I` (operands) and `$T` (accumulator) bound to the types named by
/// two [`Dtype`]s; an accumulator narrower than its operands is refused.
macro_rules! dispatch {
    ($input:expr, $acc:expr, |$I:ident, $T:ident| $body:expr) => {{
        use fprev_runtime::float::{F8E4M3Fnuz, F8E5M2Fnuz, Tf32, F8E4M3, F8E5M2};
        use half::{bf16, f16};
        use $crate::dtype::Dtype as D;
        let (input, acc) = ($input, $acc);
        match (input, acc) {
            (D::F64, D::F64) => {
                type $I = f64;
                type $T = f64;
                $body
            }
            (D::F32, D::F32) => {
                type $I = f32;
                type $T = f32;
                $body
            }
            (D::F16, D::F16) => {
                type $I = f16;
                type $T = f16;
                $body
            }
            (D::BF16, D::BF16) => {
                type $I = bf16;
                type $T = bf16;
                $body
            }
            (D::F32, D::F64) => {
                type $I = f32;
                type $T = f64;
                $body
            }
            (D::F16, D::F32) => {
                type $I = f16;
                type $T = f32;
                $body
            }
            (D::F16, D::F64) => {
                type $I = f16;
                type $T = f64;
                $body
            }
            (D::BF16, D::F32) => {
                type $I = bf16;
                type $T = f32;
                $body
            }
            (D::BF16, D::F64) => {
                type $I = bf16;
                type $T = f64;
                $body
            }
            (D::F8E4M3, D::F32) => {
                type $I = F8E4M3;
                type $T = f32;
                $body
            }
            (D::F8E4M3, D::F16) => {
                type $I = F8E4M3;
                type $T = f16;
                $body
            }
            (D::F8E4M3, D::BF16) => {
                type $I = F8E4M3;
                type $T = bf16;
                $body
            }
            (D::F8E5M2, D::F32) => {
                type $I = F8E5M2;
                type $T = f32;
                $body
            }
            (D::F8E5M2, D::F16) => {
                type $I = F8E5M2;
                type $T = f16;
                $body
            }
            (D::F8E5M2, D::BF16) => {
                type $I = F8E5M2;
                type $T = bf16;
                $body
            }
            (D::F8E4M3Fnuz, D::F32) => {
                type $I = F8E4M3Fnuz;
                type $T = f32;
                $body
            }
            (D::F8E4M3Fnuz, D::F16) => {
                type $I = F8E4M3Fnuz;
                type $T = f16;
                $body
            }
            (D::F8E4M3Fnuz, D::BF16) => {
                type $I = F8E4M3Fnuz;
                type $T = bf16;
                $body
            }
            (D::F8E5M2Fnuz, D::F32) => {
                type $I = F8E5M2Fnuz;
                type $T = f32;
                $body
            }
            (D::F8E5M2Fnuz, D::F16) => {
                type $I = F8E5M2Fnuz;
                type $T = f16;
                $body
            }
            (D::F8E5M2Fnuz, D::BF16) => {
                type $I = F8E5M2Fnuz;
                type $T = bf16;
                $body
            }
            (D::Tf32, D::F32) => {
                type $I = Tf32;
                type $T = f32;
                $body
            }
            (D::Tf32, D::F64) => {
                type $I = Tf32;
                type $T = f64;
                $body
            }
            (i, a) => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "cannot accumulate {} operands in {}: the accumulator must hold every operand \
                 exactly (use float32 or float64 for acc_dtype; FP8 operands accumulate in \
                 float32, float16 or bfloat16, tf32 operands in float32 or float64)",
                i.name(),
                a.name()
            ))),
        }
    }};
}
pub(crate) use dispatch;
