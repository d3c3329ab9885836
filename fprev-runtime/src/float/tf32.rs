//! TF32, the operand format of NVIDIA Tensor Cores fed with f32 matrices: f32's sign and
//! 8-bit exponent with only the top 10 of its 23 fraction bits. A value is stored as the
//! f32 it stands for (the low 13 bits zero), which is also how it travels to a program:
//! as 4-byte f32 values.
//!
//! A Tensor Core reading f32 operands for a TF32 instruction ignores the low 13 bits
//! (MMA-Sim, Xie et al., arXiv:2511.10909, `truncate_to_tf32`; Khattak and Mikaitis,
//! arXiv:2512.07004); a library that rounds first uses `cvt.rna.tf32.f32` (nearest, ties
//! away from zero) or, on newer PTX, `cvt.rn.tf32.f32` (ties to even). [`Tf32Rounding`]
//! names the three, and [`Tf32::from_f32`] applies one.

use std::cmp::Ordering;
use std::fmt;

use super::{FloatFormat, ProbeFloat};

/// The f32 fraction bits TF32 drops.
const CUT: u32 = 13;
/// The mask of those bits.
const LOW: u32 = (1 << CUT) - 1;
/// f32's quiet-NaN bit, kept set so that a NaN stays a NaN once its low payload is cut.
const QUIET: u32 = 1 << 22;

/// How an f32 becomes a [`Tf32`]: the three conversions GPUs apply.
///
/// ```
/// use fprev::float::{Tf32, Tf32Rounding};
/// use fprev::ProbeFloat;
/// // 1 + 2^-11 + 2^-12 lies between 1 and 1 + 2^-10, nearer the latter
/// let x = 1.0f32 + 2f32.powi(-11) + 2f32.powi(-12);
/// assert_eq!(Tf32::from_f32(x, Tf32Rounding::TowardZero).to_f64(), 1.0);
/// assert_eq!(Tf32::from_f32(x, Tf32Rounding::NearestEven).to_f64(), 1.0 + 2f64.powi(-10));
/// // 1 + 2^-11 is a tie: to even (1), or away from zero (1 + 2^-10)
/// let tie = 1.0f32 + 2f32.powi(-11);
/// assert_eq!(Tf32::from_f32(tie, Tf32Rounding::NearestEven).to_f64(), 1.0);
/// assert_eq!(Tf32::from_f32(tie, Tf32Rounding::NearestAway).to_f64(), 1.0 + 2f64.powi(-10));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tf32Rounding {
    /// The low 13 bits dropped: what a Tensor Core does to raw f32 operands (MMA-Sim's
    /// `truncate_to_tf32`, validated on A100, H100 and B200).
    TowardZero,
    /// Round to nearest, ties to even (`cvt.rn.tf32.f32`).
    NearestEven,
    /// Round to nearest, ties away from zero (`cvt.rna.tf32.f32`, what cuBLAS and CUTLASS
    /// use to convert f32 operands).
    NearestAway,
}

/// NVIDIA's TensorFloat-32: 1 sign bit, 8 exponent bits (bias 127, f32's range, its
/// infinities, NaNs and subnormals), 10 fraction bits. An operand type, as FP8 is: the
/// product of two TF32 significands has at most 22 bits, so an f32 accumulator holds it
/// exactly wherever f32's range does.
///
/// ```
/// use fprev::float::Tf32;
/// use fprev::ProbeFloat;
/// // 1 + 2^-10 is the next TF32 value after 1; 1 + 2^-11 is a tie, rounded to even
/// assert_eq!(Tf32::from_f64_round(1.0 + 2f64.powi(-10)).to_f64(), 1.0 + 2f64.powi(-10));
/// assert_eq!(Tf32::from_f64_round(1.0 + 2f64.powi(-11)).to_f64(), 1.0);
/// // stored as the f32 it stands for
/// assert_eq!(Tf32::from_f64_round(1.5).to_bits(), 1.5f32.to_bits());
/// assert_eq!(Tf32::from_f64_round(1e39).to_f64(), f64::INFINITY);
/// ```
#[derive(Clone, Copy, Default)]
pub struct Tf32(u32);

impl Tf32 {
    /// The value whose f32 bits are `bits` with the low 13 cut (a NaN stays a NaN).
    ///
    /// ```
    /// use fprev::float::Tf32;
    /// assert_eq!(Tf32::from_bits(0x3F80_1FFF).to_bits(), 0x3F80_0000);
    /// ```
    pub const fn from_bits(bits: u32) -> Self {
        let nan = bits & 0x7F80_0000 == 0x7F80_0000 && bits & 0x007F_FFFF != 0;
        if nan {
            Tf32((bits | QUIET) & !LOW)
        } else {
            Tf32(bits & !LOW)
        }
    }

    /// Its f32 bits (the low 13 zero).
    pub const fn to_bits(self) -> u32 {
        self.0
    }

    /// The f32 it stands for.
    ///
    /// ```
    /// use fprev::float::Tf32;
    /// use fprev::ProbeFloat;
    /// assert_eq!(Tf32::from_f64_round(0.1).to_f32(), 0.0999755859375);
    /// ```
    pub fn to_f32(self) -> f32 {
        f32::from_bits(self.0)
    }

    /// `x` converted as `how` says. Infinities stay, a NaN stays a NaN (quiet, its
    /// payload's top 9 bits kept), signed zeros keep their sign; rounding to nearest
    /// past the largest TF32 value gives infinity.
    ///
    /// ```
    /// use fprev::float::{Tf32, Tf32Rounding};
    /// let max = f32::MAX; // 2^128 - 2^104: above TF32's largest, 2^128 - 2^117
    /// assert_eq!(Tf32::from_f32(max, Tf32Rounding::TowardZero).to_f32(), 2f32.powi(127) * (2.0 - 2f32.powi(-10)));
    /// assert_eq!(Tf32::from_f32(max, Tf32Rounding::NearestEven).to_f32(), f32::INFINITY);
    /// assert!(Tf32::from_f32(f32::NAN, Tf32Rounding::TowardZero).to_f32().is_nan());
    /// ```
    pub fn from_f32(x: f32, how: Tf32Rounding) -> Self {
        let bits = x.to_bits();
        if x.is_nan() || x.is_infinite() {
            return Tf32::from_bits(bits);
        }
        let sign = bits & 0x8000_0000;
        let mag = bits & 0x7FFF_FFFF;
        let low = mag & LOW;
        let half = 1 << (CUT - 1);
        // the magnitude's bits carry into the exponent field as rounding up should:
        // the largest binade's carry reaches the infinity code
        let up = match how {
            Tf32Rounding::TowardZero => false,
            Tf32Rounding::NearestAway => low >= half,
            Tf32Rounding::NearestEven => low > half || (low == half && mag & (1 << CUT) != 0),
        };
        let mag = (mag & !LOW) + if up { 1 << CUT } else { 0 };
        Tf32(sign | mag)
    }
}

impl ProbeFloat for Tf32 {
    const FORMAT: FloatFormat = FloatFormat {
        name: "tf32",
        precision: 11,
        min_exp: -126,
        max_exp: 127,
    };
    const ZERO: Self = Tf32(0);
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
    fn from_f64_round(x: f64) -> Self {
        // to f32 first would round twice; round at TF32's quantum directly instead
        if !x.is_finite() || x == 0.0 {
            return Tf32::from_bits((x as f32).to_bits());
        }
        let ax = x.abs();
        let e = ((ax.to_bits() >> 52) as i32 - 1023).max(Self::FORMAT.min_exp);
        let q = crate::exact::pow2(e - (Self::FORMAT.precision as i32 - 1));
        let r = (ax / q).round_ties_even() * q;
        // r has at most 11 significant bits in f32's range (or overflows to infinity,
        // as r past the largest TF32 value is at least 2^128)
        let r = r as f32;
        Tf32::from_bits(if x < 0.0 { -r } else { r }.to_bits())
    }
    fn add(self, other: Self) -> Self {
        // two TF32 values add exactly in f64: one rounding
        Self::from_f64_round(self.to_f64() + other.to_f64())
    }
    fn to_bits_u64(self) -> u64 {
        u64::from(self.0)
    }
    fn from_bits_u64(bits: u64) -> Self {
        Tf32::from_bits(bits as u32)
    }
}

impl PartialEq for Tf32 {
    fn eq(&self, other: &Self) -> bool {
        self.to_f32() == other.to_f32()
    }
}

impl PartialOrd for Tf32 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.to_f32().partial_cmp(&other.to_f32())
    }
}

impl fmt::Debug for Tf32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tf32({:#010x} = {})", self.0, self.to_f32())
    }
}

impl fmt::Display for Tf32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_f32(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of a TF32 code (sign, 8-bit exponent field, 10-bit fraction field)
    /// straight from the format's description.
    fn spec_value(code: u32) -> f64 {
        let s = if code >> 18 == 1 { -1.0 } else { 1.0 };
        let e = (code >> 10) & 0xFF;
        let m = f64::from(code & 0x3FF) / 1024.0;
        match e {
            0xFF if m == 0.0 => s * f64::INFINITY,
            0xFF => f64::NAN,
            0 => s * m * 2f64.powi(-126),
            _ => s * (1.0 + m) * 2f64.powi(e as i32 - 127),
        }
    }

    #[test]
    fn every_code_matches_the_description_and_reads_back() {
        for code in 0..(1u32 << 19) {
            let want = spec_value(code);
            let t = Tf32::from_bits(code << CUT);
            let got = t.to_f64();
            if want.is_nan() {
                assert!(got.is_nan(), "code {code:#07x}");
                assert!(Tf32::from_f64_round(got).to_f64().is_nan());
                continue;
            }
            assert_eq!(got.to_bits(), want.to_bits(), "code {code:#07x}");
            assert_eq!(
                Tf32::from_f64_round(want).to_bits(),
                code << CUT,
                "code {code:#07x}"
            );
            for how in [
                Tf32Rounding::TowardZero,
                Tf32Rounding::NearestEven,
                Tf32Rounding::NearestAway,
            ] {
                assert_eq!(Tf32::from_f32(want as f32, how).to_bits(), code << CUT);
            }
        }
    }

    /// Every f32 between two neighbouring TF32 values `a < b` (same sign, finite):
    /// what each conversion must give, checked on every one of the 2^13 low patterns.
    fn check_gap(a_bits: u32) {
        let a = f32::from_bits(a_bits);
        let b_bits = a_bits + (1 << CUT);
        let b = f32::from_bits(b_bits);
        assert!(a.abs() < b.abs());
        for low in 0..(1u32 << CUT) {
            let x = f32::from_bits(a_bits | low);
            let exact = f64::from(x);
            let (da, db) = ((exact - f64::from(a)).abs(), (f64::from(b) - exact).abs());
            let even = if (a_bits >> CUT) & 1 == 0 { a } else { b };
            let nearest_even = match da.partial_cmp(&db) {
                Some(Ordering::Less) => a,
                Some(Ordering::Greater) => b,
                _ => even,
            };
            let nearest_away = if da < db { a } else { b };
            let bits = |how| Tf32::from_f32(x, how).to_f32().to_bits();
            assert_eq!(bits(Tf32Rounding::TowardZero), a.to_bits(), "{x:e}");
            assert_eq!(
                bits(Tf32Rounding::NearestEven),
                nearest_even.to_bits(),
                "{x:e}"
            );
            assert_eq!(
                bits(Tf32Rounding::NearestAway),
                nearest_away.to_bits(),
                "{x:e}"
            );
            assert_eq!(
                Tf32::from_f64_round(exact).to_f32().to_bits(),
                nearest_even.to_bits(),
                "{x:e}"
            );
        }
    }

    #[test]
    fn every_cut_of_every_kind_of_value_rounds_as_described() {
        // subnormals, the subnormal/normal boundary, ordinary binades, odd and even
        // last bits, both signs
        for a_bits in [
            0x0000_0000u32,
            0x0000_2000,
            0x007F_E000,
            0x0080_0000,
            0x0080_2000,
            0x3F80_0000,
            0x3F80_2000,
            0x3FFF_E000,
            0x4B7F_E000,
            0x7F7F_C000,
        ] {
            check_gap(a_bits);
            check_gap(a_bits | 0x8000_0000);
        }
    }

    #[test]
    fn the_top_binade_rounds_to_infinity_or_stays() {
        let max = Tf32::from_bits(0x7F7F_E000).to_f32();
        assert_eq!(f64::from(max), (2.0 - 2f64.powi(-10)) * 2f64.powi(127));
        for low in [1u32, 0xFFF, 0x1000, 0x1FFF] {
            let x = f32::from_bits(0x7F7F_E000 | low);
            let to = |how| Tf32::from_f32(x, how).to_f32();
            assert_eq!(to(Tf32Rounding::TowardZero), max);
            let past_half = low >= 0x1000;
            let want_away = if past_half { f32::INFINITY } else { max };
            assert_eq!(to(Tf32Rounding::NearestAway), want_away);
            // max's last bit is odd, so the tie goes up too
            assert_eq!(to(Tf32Rounding::NearestEven), want_away);
            assert_eq!(Tf32::from_f64_round(f64::from(x)).to_f32(), want_away);
        }
        assert_eq!(Tf32::from_f64_round(-1e300).to_f64(), f64::NEG_INFINITY);
        // below the smallest subnormal's half: zero, keeping the sign
        let tiny = Tf32::from_f64_round(-(2f64.powi(-138)));
        assert_eq!(tiny.to_bits(), 0x8000_0000);
        assert_eq!(Tf32::from_f64_round(2f64.powi(-136)).to_bits(), 0x0000_2000);
    }

    #[test]
    fn nans_stay_nans_and_infinities_stay() {
        // a signalling NaN whose payload lies only in the cut bits
        let snan = f32::from_bits(0x7F80_0001);
        for how in [
            Tf32Rounding::TowardZero,
            Tf32Rounding::NearestEven,
            Tf32Rounding::NearestAway,
        ] {
            assert!(Tf32::from_f32(snan, how).to_f32().is_nan());
            assert!(Tf32::from_f32(-f32::NAN, how).to_f32().is_nan());
            assert_eq!(
                Tf32::from_f32(f32::NEG_INFINITY, how).to_f32(),
                f32::NEG_INFINITY
            );
        }
        assert!(Tf32::from_bits(0xFF80_0001).to_f32().is_nan());
        assert_eq!(Tf32::from_bits(0xFF80_0000).to_f32(), f32::NEG_INFINITY);
        assert!(Tf32::from_f64_round(f64::NAN).to_f64().is_nan());
    }

    #[test]
    fn additions_round_once() {
        let one = Tf32::from_f64_round(1.0);
        let half_ulp = Tf32::from_f64_round(2f64.powi(-11));
        // a tie between 1 and 1 + 2^-10: to even
        assert_eq!(one.add(half_ulp).to_f64(), 1.0);
        let three_quarter = Tf32::from_f64_round(3.0 * 2f64.powi(-12));
        assert_eq!(one.add(three_quarter).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(Tf32::FORMAT.exact_count_limit(), 1 << 11);
    }
}
