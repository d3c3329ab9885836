//! The FP6 and FP4 element types of the OCP Microscaling (MX) specification (v1.0,
//! 2023, §5.3): E3M2 and E2M3 (6 bits) and E2M1 (4 bits), the operands of block-scaled
//! Tensor Core instructions (`tcgen05.mma kind::mxf8f6f4` and `kind::mxf4nvf4`).
//!
//! None of them has infinities or NaNs: every code is a number. Conversions from `f64`
//! round to nearest, ties to even, and saturate at the largest finite value (the
//! specification's conversion for these types, and what ml_dtypes' `float4_e2m1fn`,
//! `float6_e3m2fn` and `float6_e2m3fn` do); a NaN becomes `-0`, as in ml_dtypes. Each
//! value is stored as its code in the low bits of a byte.

use super::byte_fields::{binade, field_magnitude, magnitude_fields};
use super::{FloatFormat, ProbeFloat};

/// The fixed facts of one narrow format with no special codes.
struct NarrowLayout {
    /// Exponent bits.
    exp_bits: u32,
    /// Fraction bits.
    man_bits: u32,
    bias: i32,
}

const E2M1: NarrowLayout = NarrowLayout {
    exp_bits: 2,
    man_bits: 1,
    bias: 1,
};

const E3M2: NarrowLayout = NarrowLayout {
    exp_bits: 3,
    man_bits: 2,
    bias: 3,
};

const E2M3: NarrowLayout = NarrowLayout {
    exp_bits: 2,
    man_bits: 3,
    bias: 1,
};

impl NarrowLayout {
    /// The sign bit's position (the code's width minus one).
    fn sign_shift(&self) -> u32 {
        self.exp_bits + self.man_bits
    }

    /// Codes of the format: `2^(1 + exp_bits + man_bits)`.
    fn codes(&self) -> u16 {
        1 << (self.sign_shift() + 1)
    }

    fn max(&self) -> f64 {
        let e = (1 << self.exp_bits) - 1 - self.bias;
        (2.0 - 2f64.powi(-(self.man_bits as i32))) * 2f64.powi(e)
    }

    fn decode(&self, code: u8) -> f64 {
        let code = u32::from(code) & (u32::from(self.codes()) - 1);
        let sign = if code >> self.sign_shift() != 0 {
            -1.0
        } else {
            1.0
        };
        let e = (code >> self.man_bits) & ((1 << self.exp_bits) - 1);
        let m = code & ((1 << self.man_bits) - 1);
        sign * field_magnitude(e, m, self.man_bits, self.bias)
    }

    fn encode(&self, x: f64) -> u8 {
        let sign_bit = 1u8 << self.sign_shift();
        if x.is_nan() {
            return sign_bit;
        }
        let sign = if x.is_sign_negative() { sign_bit } else { 0 };
        let ax = x.abs();
        let min_exp = 1 - self.bias;
        let max = self.max();
        // saturate: beyond the largest finite value (after rounding) is that value
        let r = if ax >= max {
            max
        } else {
            let e = if ax == 0.0 {
                min_exp
            } else {
                binade(ax).max(min_exp)
            };
            let q = 2f64.powi(e - self.man_bits as i32);
            ((ax / q).round_ties_even() * q).min(max)
        };
        if r == 0.0 {
            return sign;
        }
        sign | magnitude_fields(r, self.man_bits, self.bias)
    }
}

/// A 4- or 6-bit type: its code sits in the low bits of a byte, every code a number.
macro_rules! narrow {
    ($name:ident, $layout:ident, $fmt:literal, $precision:literal, $min_exp:literal, $max_exp:literal, $doc:literal) => {
        byte_coded_float!(
            $name,
            $layout,
            ((1u16 << (1 + $layout.exp_bits + $layout.man_bits)) - 1) as u8,
            "The value with this code (only the format's low bits are read).",
            $fmt,
            $precision,
            $min_exp,
            $max_exp,
            $doc
        );

        impl $name {
            /// Codes of the format (16 for FP4, 64 for FP6).
            pub const CODES: u16 = 1 << (1 + $layout.exp_bits + $layout.man_bits);
        }
    };
}

narrow!(
    F4E2M1,
    E2M1,
    "e2m1",
    2,
    0,
    2,
    "OCP MX FP4 E2M1 (ml_dtypes' `float4_e2m1fn`): 2 exponent bits (bias 1), 1 fraction \
     bit, the values ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}, no infinities or NaNs (overflow \
     saturates at 6).\n\n```\nuse fprev::float::F4E2M1;\nuse fprev::ProbeFloat;\nassert_eq!(F4E2M1::from_bits(0x7).to_f64(), 6.0);\nassert_eq!(F4E2M1::from_f64_round(100.0).to_f64(), 6.0);\nassert_eq!(F4E2M1::from_f64_round(2.5).to_f64(), 2.0); // a tie, to even\nassert_eq!(F4E2M1::from_bits(0x9).to_f64(), -0.5);\n```"
);

narrow!(
    F6E3M2,
    E3M2,
    "e3m2",
    3,
    -2,
    4,
    "OCP MX FP6 E3M2 (ml_dtypes' `float6_e3m2fn`): 3 exponent bits (bias 3), 2 fraction \
     bits, largest 28, smallest subnormal 2^-4, no infinities or NaNs (overflow saturates \
     at 28).\n\n```\nuse fprev::float::F6E3M2;\nuse fprev::ProbeFloat;\nassert_eq!(F6E3M2::from_bits(0x1F).to_f64(), 28.0);\nassert_eq!(F6E3M2::from_bits(0x01).to_f64(), 0.0625);\nassert_eq!(F6E3M2::from_f64_round(-1e9).to_f64(), -28.0);\n```"
);

narrow!(
    F6E2M3,
    E2M3,
    "e2m3",
    4,
    0,
    2,
    "OCP MX FP6 E2M3 (ml_dtypes' `float6_e2m3fn`): 2 exponent bits (bias 1), 3 fraction \
     bits, largest 7.5, smallest subnormal 0.125, no infinities or NaNs (overflow \
     saturates at 7.5).\n\n```\nuse fprev::float::F6E2M3;\nuse fprev::ProbeFloat;\nassert_eq!(F6E2M3::from_bits(0x1F).to_f64(), 7.5);\nassert_eq!(F6E2M3::from_bits(0x01).to_f64(), 0.125);\nassert_eq!(F6E2M3::from_f64_round(0.0625).to_f64(), 0.0); // a tie, to the even zero\n```"
);

/// The element (operand) type of a block-scaled dot product, named at run time (the
/// command line's `--dtype` with `--op scaled-dot`): FP4, FP6 or FP8.
///
/// ```
/// use fprev::float::ElementType;
/// assert_eq!(ElementType::parse("e2m1"), Some(ElementType::E2M1));
/// assert_eq!(ElementType::parse("float6_e3m2fn"), Some(ElementType::E3M2));
/// assert_eq!(ElementType::E2M1.value(6.0), Some(6.0));
/// assert_eq!(ElementType::E2M1.value(2.5), None); // not an E2M1 value
/// assert_eq!(ElementType::E4M3.format().max_exp, 8);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// [`F4E2M1`].
    E2M1,
    /// [`F6E3M2`].
    E3M2,
    /// [`F6E2M3`].
    E2M3,
    /// [`F8E4M3`](super::F8E4M3).
    E4M3,
    /// [`F8E5M2`](super::F8E5M2).
    E5M2,
}

impl ElementType {
    /// Every element type.
    pub const ALL: [ElementType; 5] = [
        ElementType::E2M1,
        ElementType::E3M2,
        ElementType::E2M3,
        ElementType::E4M3,
        ElementType::E5M2,
    ];

    /// The name used on the command line (`e2m1`, `e3m2`, `e2m3`, `f8e4m3`, `f8e5m2`).
    pub fn name(self) -> &'static str {
        self.format().name
    }

    /// The type called `name`: the command line's name or ml_dtypes' (`float4_e2m1fn`,
    /// `float6_e3m2fn`, `float6_e2m3fn`, `float8_e4m3fn`, `float8_e5m2`).
    pub fn parse(name: &str) -> Option<ElementType> {
        match name.to_ascii_lowercase().as_str() {
            "e2m1" | "fp4" | "float4_e2m1fn" => Some(ElementType::E2M1),
            "e3m2" | "float6_e3m2fn" => Some(ElementType::E3M2),
            "e2m3" | "float6_e2m3fn" => Some(ElementType::E2M3),
            "f8e4m3" | "e4m3" | "float8_e4m3fn" => Some(ElementType::E4M3),
            "f8e5m2" | "e5m2" | "float8_e5m2" => Some(ElementType::E5M2),
            _ => None,
        }
    }

    /// The format as data.
    pub fn format(self) -> FloatFormat {
        match self {
            ElementType::E2M1 => F4E2M1::FORMAT,
            ElementType::E3M2 => F6E3M2::FORMAT,
            ElementType::E2M3 => F6E2M3::FORMAT,
            ElementType::E4M3 => super::F8E4M3::FORMAT,
            ElementType::E5M2 => super::F8E5M2::FORMAT,
        }
    }

    /// `x` rounded to this type (its conversion from `f64`), as an `f64`.
    pub fn round(self, x: f64) -> f64 {
        match self {
            ElementType::E2M1 => F4E2M1::from_f64_round(x).to_f64(),
            ElementType::E3M2 => F6E3M2::from_f64_round(x).to_f64(),
            ElementType::E2M3 => F6E2M3::from_f64_round(x).to_f64(),
            ElementType::E4M3 => super::F8E4M3::from_f64_round(x).to_f64(),
            ElementType::E5M2 => super::F8E5M2::from_f64_round(x).to_f64(),
        }
    }

    /// `x` when it is a finite value of this type, else `None`.
    pub fn value(self, x: f64) -> Option<f64> {
        (x.is_finite() && self.round(x) == x).then_some(x)
    }

    /// The code of the value exactly `x` (in the low bits of a byte: 4 bits for FP4, 6
    /// for FP6, 8 for FP8), or `None` when `x` is no value of this type.
    ///
    /// ```
    /// use fprev::float::ElementType;
    /// assert_eq!(ElementType::E2M1.code(-6.0), Some(0b1111));
    /// assert_eq!(ElementType::E4M3.code(1.0), Some(0x38));
    /// assert_eq!(ElementType::E2M1.code(2.5), None);
    /// ```
    pub fn code(self, x: f64) -> Option<u8> {
        let x = self.value(x)?;
        Some(match self {
            ElementType::E2M1 => F4E2M1::from_f64_round(x).to_bits(),
            ElementType::E3M2 => F6E3M2::from_f64_round(x).to_bits(),
            ElementType::E2M3 => F6E2M3::from_f64_round(x).to_bits(),
            ElementType::E4M3 => super::F8E4M3::from_f64_round(x).to_bits(),
            ElementType::E5M2 => super::F8E5M2::from_f64_round(x).to_bits(),
        })
    }

    /// The largest finite value.
    pub fn max(self) -> f64 {
        match self {
            ElementType::E2M1 => 6.0,
            ElementType::E3M2 => 28.0,
            ElementType::E2M3 => 7.5,
            ElementType::E4M3 => 448.0,
            ElementType::E5M2 => 57344.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `code` straight from the MX specification's formula: sign,
    /// exponent field, mantissa field, no special codes.
    fn spec_value(code: u8, e_bits: u32, m_bits: u32, bias: i32) -> f64 {
        let s = if code >> (e_bits + m_bits) == 1 {
            -1.0
        } else {
            1.0
        };
        let e = (u32::from(code) >> m_bits) & ((1 << e_bits) - 1);
        let m = u32::from(code) & ((1 << m_bits) - 1);
        let frac = f64::from(m) / f64::from(1u32 << m_bits);
        if e == 0 {
            s * frac * 2f64.powi(1 - bias)
        } else {
            s * (1.0 + frac) * 2f64.powi(e as i32 - bias)
        }
    }

    fn check_all<T: ProbeFloat>(e_bits: u32, m_bits: u32, bias: i32, max: f64) {
        let codes = 1u16 << (1 + e_bits + m_bits);
        let mut finite = Vec::new();
        for code in 0..codes {
            let code = code as u8;
            let want = spec_value(code, e_bits, m_bits, bias);
            let got = T::from_bits_u64(u64::from(code)).to_f64();
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{} code {code:#04x}",
                T::FORMAT.name
            );
            // every code reads back to itself (zeros keep their sign)
            assert_eq!(T::from_f64_round(want).to_bits_u64(), u64::from(code));
            finite.push(want);
        }
        finite.sort_by(f64::total_cmp);
        finite.dedup();
        assert_eq!(*finite.last().unwrap(), max, "{}", T::FORMAT.name);
        // the format's description agrees with its codes
        let fmt = T::FORMAT;
        assert_eq!(fmt.precision, m_bits + 1);
        assert_eq!(fmt.min_exp, 1 - bias);
        assert!(max >= 2f64.powi(fmt.max_exp) && max < 2f64.powi(fmt.max_exp + 1));
        assert_eq!(
            finite.iter().find(|v| **v > 0.0).copied(),
            Some(2f64.powi(fmt.min_subnormal_exp()))
        );
        for w in finite.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mid = (a + b) / 2.0;
            let step = (b - a) / 8.0;
            assert_eq!(T::from_f64_round(mid - step).to_f64(), a);
            assert_eq!(T::from_f64_round(mid + step).to_f64(), b);
            let r = T::from_f64_round(mid);
            if a != 0.0 && b != 0.0 {
                // ties to the even code
                assert_eq!(r.to_bits_u64() % 2, 0, "{} mid {mid}", fmt.name);
            }
        }
        // saturation and NaN, as ml_dtypes converts
        assert_eq!(T::from_f64_round(f64::INFINITY).to_f64(), max);
        assert_eq!(T::from_f64_round(-max * 4.0).to_f64(), -max);
        let nan = T::from_f64_round(f64::NAN).to_f64();
        assert!(nan == 0.0 && nan.is_sign_negative());
    }

    #[test]
    fn e2m1_matches_the_specification_on_every_code() {
        check_all::<F4E2M1>(2, 1, 1, 6.0);
        let values: Vec<f64> = (0..8u8).map(|c| F4E2M1::from_bits(c).to_f64()).collect();
        assert_eq!(values, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    }

    #[test]
    fn e3m2_matches_the_specification_on_every_code() {
        check_all::<F6E3M2>(3, 2, 3, 28.0);
    }

    #[test]
    fn e2m3_matches_the_specification_on_every_code() {
        check_all::<F6E2M3>(2, 3, 1, 7.5);
    }

    #[test]
    fn element_types_name_their_formats() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::parse(t.name()), Some(t));
            let max = t.max();
            assert_eq!(t.value(max), Some(max), "{}", t.name());
            assert_eq!(t.round(max), max);
            assert!(max >= 2f64.powi(t.format().max_exp));
        }
        assert_eq!(ElementType::E2M3.value(0.0625), None);
    }
}
