//! The scale types of block-scaled formats: one scale multiplies a block of
//! consecutive elements along `k`.
//!
//! - [`Ue8m0`]: the MX formats' shared scale (OCP Microscaling v1.0, §5.4; ml_dtypes'
//!   `float8_e8m0fnu`): 8 exponent bits, bias 127, no sign, no fraction, no zero. Code
//!   `c` is `2^(c - 127)` for `c` in `0..=254`; `255` is NaN.
//! - [`Ue4m3`]: NVFP4's scale (PTX ISA, `kind::mxf4nvf4` with `scale_vec::4X`): an E4M3
//!   value with its sign bit clear, so `0` (code `0x00`) up to 448 (`0x7E`); `0x7F` is
//!   NaN, and codes with the sign bit set are not scales.
//!
//! A scale is a multiplier, never a summand, so these are not [`ProbeFloat`]s: they
//! carry a code and its value, and [`ScaleType`] names them at run time.

use super::{ProbeFloat, F8E4M3};

/// An MX scale (UE8M0): a power of two `2^-127..=2^127`, or NaN (code 255).
///
/// ```
/// use fprev::float::Ue8m0;
/// assert_eq!(Ue8m0::from_bits(127).to_f64(), 1.0);
/// assert_eq!(Ue8m0::from_bits(0).to_f64(), 2f64.powi(-127));
/// assert!(Ue8m0::from_bits(255).to_f64().is_nan());
/// assert_eq!(Ue8m0::from_f64(0.25).map(Ue8m0::to_bits), Some(125));
/// assert_eq!(Ue8m0::from_f64(3.0), None); // not a power of two
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ue8m0(u8);

impl Ue8m0 {
    /// The scale with this code.
    pub const fn from_bits(bits: u8) -> Ue8m0 {
        Ue8m0(bits)
    }

    /// The code.
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The value: `2^(code - 127)`, NaN for code 255.
    pub fn to_f64(self) -> f64 {
        if self.0 == 255 {
            f64::NAN
        } else {
            crate::exact::pow2(i32::from(self.0) - 127)
        }
    }

    /// The scale whose value is exactly `x`; `None` when no code holds it.
    pub fn from_f64(x: f64) -> Option<Ue8m0> {
        if x.is_nan() || x <= 0.0 || !x.is_finite() {
            return None;
        }
        let e = x.log2();
        if e.fract() != 0.0 || !(-127.0..=127.0).contains(&e) {
            return None;
        }
        Some(Ue8m0((e as i32 + 127) as u8))
    }
}

/// NVFP4's scale (UE4M3): an unsigned E4M3 value, `0` to 448 (`0x00..=0x7E`), NaN at
/// `0x7F`.
///
/// ```
/// use fprev::float::Ue4m3;
/// assert_eq!(Ue4m3::from_bits(0x7E).map(Ue4m3::to_f64), Some(448.0));
/// assert_eq!(Ue4m3::from_bits(0x01).map(Ue4m3::to_f64), Some(2f64.powi(-9)));
/// assert_eq!(Ue4m3::from_bits(0x80), None); // the sign bit is no part of a scale
/// assert_eq!(Ue4m3::from_f64(1.125).map(Ue4m3::to_bits), Some(0x39));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ue4m3(u8);

impl Ue4m3 {
    /// The scale with this code; `None` when the sign bit is set.
    pub const fn from_bits(bits: u8) -> Option<Ue4m3> {
        if bits & 0x80 != 0 {
            None
        } else {
            Some(Ue4m3(bits))
        }
    }

    /// The code.
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The value, as the E4M3 code reads (NaN at `0x7F`).
    pub fn to_f64(self) -> f64 {
        F8E4M3::from_bits(self.0).to_f64()
    }

    /// The scale whose value is exactly `x` (`+0` included); `None` when no code holds it.
    pub fn from_f64(x: f64) -> Option<Ue4m3> {
        if x.is_nan() || x < 0.0 {
            return None;
        }
        let c = F8E4M3::from_f64_round(x);
        (c.to_f64() == x && !c.is_nan()).then_some(Ue4m3(c.to_bits() & 0x7F))
    }
}

/// The type of a block scale, named at run time (the command line's `--scale-dtype`).
///
/// ```
/// use fprev::float::ScaleType;
/// assert_eq!(ScaleType::parse("ue4m3"), Some(ScaleType::Ue4m3));
/// assert_eq!(ScaleType::Ue8m0.powers(), (-127, 127));
/// assert_eq!(ScaleType::Ue4m3.powers(), (-9, 8));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaleType {
    /// [`Ue8m0`], the MX formats' scale.
    Ue8m0,
    /// [`Ue4m3`], NVFP4's scale.
    Ue4m3,
}

impl ScaleType {
    /// Every scale type.
    pub const ALL: [ScaleType; 2] = [ScaleType::Ue8m0, ScaleType::Ue4m3];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ScaleType::Ue8m0 => "ue8m0",
            ScaleType::Ue4m3 => "ue4m3",
        }
    }

    /// The type called `name` (`ue8m0`, `ue4m3`, or ml_dtypes' `float8_e8m0fnu`).
    pub fn parse(name: &str) -> Option<ScaleType> {
        match name.to_ascii_lowercase().as_str() {
            "ue8m0" | "e8m0" | "float8_e8m0fnu" => Some(ScaleType::Ue8m0),
            "ue4m3" => Some(ScaleType::Ue4m3),
            _ => None,
        }
    }

    /// The smallest and largest exponents `e` whose power `2^e` is a scale of this type.
    pub fn powers(self) -> (i32, i32) {
        match self {
            ScaleType::Ue8m0 => (-127, 127),
            ScaleType::Ue4m3 => (F8E4M3::FORMAT.min_subnormal_exp(), F8E4M3::FORMAT.max_exp),
        }
    }

    /// The code of the scale exactly `x`, or `None` when this type holds no such scale.
    ///
    /// ```
    /// use fprev::float::ScaleType;
    /// assert_eq!(ScaleType::Ue8m0.code(1.0), Some(127));
    /// assert_eq!(ScaleType::Ue4m3.code(1.0), Some(0x38));
    /// assert_eq!(ScaleType::Ue4m3.code(-1.0), None);
    /// ```
    pub fn code(self, x: f64) -> Option<u8> {
        match self {
            ScaleType::Ue8m0 => Ue8m0::from_f64(x).map(Ue8m0::to_bits),
            ScaleType::Ue4m3 => Ue4m3::from_f64(x).map(Ue4m3::to_bits),
        }
    }

    /// The value of code `bits`; `None` for a code that is no scale (`Ue4m3` with the
    /// sign bit set).
    pub fn value(self, bits: u8) -> Option<f64> {
        match self {
            ScaleType::Ue8m0 => Some(Ue8m0::from_bits(bits).to_f64()),
            ScaleType::Ue4m3 => Ue4m3::from_bits(bits).map(Ue4m3::to_f64),
        }
    }

    /// The exponent a scale value `s` contributes to an alignment by the scales'
    /// exponents: `floor(log2 s)`, clamped below at the type's smallest normal exponent
    /// (a subnormal UE4M3 scale keeps its denormalised significand, as an operand does).
    ///
    /// ```
    /// use fprev::float::ScaleType;
    /// assert_eq!(ScaleType::Ue4m3.exponent(3.0), 1);
    /// assert_eq!(ScaleType::Ue4m3.exponent(2f64.powi(-9)), -6);
    /// assert_eq!(ScaleType::Ue8m0.exponent(2f64.powi(-127)), -127);
    /// ```
    pub fn exponent(self, s: f64) -> i32 {
        let min = match self {
            ScaleType::Ue8m0 => -127,
            ScaleType::Ue4m3 => F8E4M3::FORMAT.min_exp,
        };
        if s == 0.0 || !s.is_finite() {
            return min;
        }
        ((((s.to_bits() >> 52) & 0x7FF) as i32) - 1023).max(min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ue8m0_codes_are_the_powers_of_two_and_read_back() {
        for code in 0..=254u8 {
            let v = Ue8m0::from_bits(code).to_f64();
            assert_eq!(v, 2f64.powi(i32::from(code) - 127), "code {code}");
            assert_eq!(Ue8m0::from_f64(v), Some(Ue8m0::from_bits(code)));
            assert_eq!(ScaleType::Ue8m0.code(v), Some(code));
        }
        assert!(Ue8m0::from_bits(255).to_f64().is_nan());
        for bad in [
            0.0,
            -1.0,
            1.5,
            f64::NAN,
            f64::INFINITY,
            2f64.powi(-128),
            2f64.powi(128),
        ] {
            assert_eq!(Ue8m0::from_f64(bad), None, "{bad}");
        }
    }

    #[test]
    fn ue4m3_codes_are_the_non_negative_e4m3_values() {
        let mut seen = Vec::new();
        for code in 0..=255u8 {
            let Some(s) = Ue4m3::from_bits(code) else {
                assert!(code >= 0x80, "code {code:#04x}");
                continue;
            };
            assert!(code < 0x80);
            let v = s.to_f64();
            let e4m3 = F8E4M3::from_bits(code).to_f64();
            if code == 0x7F {
                assert!(v.is_nan());
                continue;
            }
            assert_eq!(v, e4m3);
            assert!(v >= 0.0);
            assert_eq!(Ue4m3::from_f64(v).map(Ue4m3::to_bits), Some(code));
            seen.push(v);
        }
        assert_eq!(seen.len(), 127);
        assert_eq!(seen.iter().copied().fold(0.0, f64::max), 448.0);
        assert_eq!(Ue4m3::from_f64(-0.0).map(Ue4m3::to_bits), Some(0));
        assert_eq!(Ue4m3::from_f64(1.0625), None);
        assert_eq!(Ue4m3::from_f64(-2.0), None);
    }

    #[test]
    fn every_power_a_scale_type_names_is_one_of_its_scales() {
        for t in ScaleType::ALL {
            let (lo, hi) = t.powers();
            for e in lo..=hi {
                let code = t.code(2f64.powi(e)).expect("a power in range");
                assert_eq!(t.value(code), Some(2f64.powi(e)));
            }
            assert_eq!(t.code(2f64.powi(lo - 1)), None, "{}", t.name());
            assert_eq!(t.code(2f64.powi(hi + 1)), None, "{}", t.name());
            assert_eq!(ScaleType::parse(t.name()), Some(t));
        }
    }
}
