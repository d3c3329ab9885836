//! The two 8-bit formats of the OCP "OFP8" specification (v1.0, 2023), which current
//! Tensor Cores multiply: E4M3 (bias 7, no infinities, one NaN pattern per sign, largest
//! finite 448) and E5M2 (bias 15, IEEE-like: infinities and NaNs, largest finite 57344).
//!
//! Written here rather than taken from a crate: the conversions are a few lines once the
//! format is data, and every one of the 256 codes of each format is tested against the
//! specification's formula (see the tests), which is the bar a dependency would have to
//! clear too. Conversions from `f64` round to nearest, ties to even; a value beyond the
//! largest finite one after rounding becomes NaN in E4M3 (the specification's
//! non-saturating mode) and infinity in E5M2.

use super::byte_fields::{binade, field_magnitude, magnitude_fields};
use super::{FloatFormat, ProbeFloat};

/// The fixed facts of one 8-bit format.
struct Fp8Layout {
    man_bits: u32,
    bias: i32,
    /// Largest finite magnitude.
    max: f64,
    /// Whether the all-ones exponent holds infinities and NaNs (E5M2) or, except for the
    /// one NaN mantissa, ordinary numbers (E4M3).
    ieee_top: bool,
    /// The code of +NaN.
    nan: u8,
    /// AMD's FNUZ variants (MI300): finite and NaN only, no negative zero, the one NaN
    /// at 0x80 where -0 would be, every other code an ordinary number.
    fnuz: bool,
}

const E4M3: Fp8Layout = Fp8Layout {
    man_bits: 3,
    bias: 7,
    max: 448.0,
    ieee_top: false,
    nan: 0x7F,
    fnuz: false,
};

/// E4M3FNUZ (AMD MI300): bias 8, largest 240 = 1.875 x 2^7.
const E4M3FNUZ: Fp8Layout = Fp8Layout {
    man_bits: 3,
    bias: 8,
    max: 240.0,
    ieee_top: false,
    nan: 0x80,
    fnuz: true,
};

/// E5M2FNUZ (AMD MI300): bias 16, largest 57344 = 1.75 x 2^15.
const E5M2FNUZ: Fp8Layout = Fp8Layout {
    man_bits: 2,
    bias: 16,
    max: 57344.0,
    ieee_top: false,
    nan: 0x80,
    fnuz: true,
};

const E5M2: Fp8Layout = Fp8Layout {
    man_bits: 2,
    bias: 15,
    max: 57344.0,
    ieee_top: true,
    nan: 0x7E,
    fnuz: false,
};

impl Fp8Layout {
    fn exp_field_max(&self) -> u32 {
        (1 << (7 - self.man_bits)) - 1
    }

    fn decode(&self, code: u8) -> f64 {
        if self.fnuz && code == 0x80 {
            return f64::NAN;
        }
        let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = u32::from(code & 0x7F) >> self.man_bits;
        let m = u32::from(code) & ((1 << self.man_bits) - 1);
        let top = e == self.exp_field_max();
        if top && self.ieee_top {
            return if m == 0 {
                sign * f64::INFINITY
            } else {
                f64::NAN
            };
        }
        if top && !self.ieee_top && !self.fnuz && m == (1 << self.man_bits) - 1 {
            return f64::NAN;
        }
        sign * field_magnitude(e, m, self.man_bits, self.bias)
    }

    fn encode(&self, x: f64) -> u8 {
        if x.is_nan() {
            return self.nan;
        }
        let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
        let ax = x.abs();
        // FNUZ has one zero: -0 and negatives that round to zero are +0
        let zero = if self.fnuz { 0 } else { sign };
        if ax == 0.0 {
            return zero;
        }
        let min_exp = 1 - self.bias;
        // the quantum of ax's binade (the subnormal one below 2^min_exp)
        let e = if ax.is_finite() { binade(ax) } else { i32::MAX };
        let q_exp = e.clamp(min_exp, 64) - self.man_bits as i32;
        let q = 2f64.powi(q_exp);
        let r = if ax.is_finite() {
            (ax / q).round_ties_even() * q
        } else {
            f64::INFINITY
        };
        if r > self.max {
            return if self.ieee_top {
                sign | ((self.exp_field_max() as u8) << self.man_bits)
            } else {
                sign | self.nan
            };
        }
        if r == 0.0 {
            return zero;
        }
        sign | magnitude_fields(r, self.man_bits, self.bias)
    }
}

/// An 8-bit type: its code is the whole byte, and a code can be a NaN.
macro_rules! fp8 {
    ($name:ident, $layout:ident, $fmt:literal, $precision:literal, $min_exp:literal, $max_exp:literal, $doc:literal) => {
        byte_coded_float!(
            $name,
            $layout,
            0xFF,
            "The value with this code.",
            $fmt,
            $precision,
            $min_exp,
            $max_exp,
            $doc
        );

        impl $name {
            /// Whether this is a NaN code.
            pub fn is_nan(self) -> bool {
                $layout.decode(self.0).is_nan()
            }
        }
    };
}

fp8!(
    F8E4M3,
    E4M3,
    "f8e4m3",
    4,
    -6,
    8,
    "OCP FP8 E4M3: 4 exponent bits (bias 7), 3 fraction bits, largest finite 448, no \
     infinities (overflow rounds to NaN).\n\n```\nuse fprev::float::F8E4M3;\nuse \
     fprev::ProbeFloat;\nassert_eq!(F8E4M3::from_f64_round(448.0).to_bits(), 0x7E);\nassert!(F8E4M3::from_f64_round(1000.0).is_nan());\nassert_eq!(F8E4M3::from_bits(0x01).to_f64(), 2f64.powi(-9));\n```"
);

fp8!(
    F8E5M2,
    E5M2,
    "f8e5m2",
    3,
    -14,
    15,
    "OCP FP8 E5M2: 5 exponent bits (bias 15), 2 fraction bits, largest finite 57344, \
     IEEE infinities and NaNs.\n\n```\nuse fprev::float::F8E5M2;\nuse \
     fprev::ProbeFloat;\nassert_eq!(F8E5M2::from_f64_round(57344.0).to_bits(), 0x7B);\nassert_eq!(F8E5M2::from_f64_round(1e6).to_f64(), f64::INFINITY);\nassert_eq!(F8E5M2::from_bits(0x01).to_f64(), 2f64.powi(-16));\n```"
);

fp8!(
    F8E4M3Fnuz,
    E4M3FNUZ,
    "e4m3fnuz",
    4,
    -7,
    7,
    "AMD's FP8 E4M3FNUZ (MI300 matrix cores): 4 exponent bits (bias 8), 3 fraction bits, \
     largest finite 240, no infinities, no negative zero, the one NaN at 0x80 (overflow \
     rounds to NaN).\n\n```\nuse fprev::float::F8E4M3Fnuz;\nuse \
     fprev::ProbeFloat;\nassert_eq!(F8E4M3Fnuz::from_f64_round(240.0).to_bits(), 0x7F);\nassert!(F8E4M3Fnuz::from_bits(0x80).is_nan());\nassert_eq!(F8E4M3Fnuz::from_f64_round(-0.0).to_bits(), 0x00);\n```"
);

fp8!(
    F8E5M2Fnuz,
    E5M2FNUZ,
    "e5m2fnuz",
    3,
    -15,
    15,
    "AMD's FP8 E5M2FNUZ (MI300 matrix cores): 5 exponent bits (bias 16), 2 fraction bits, \
     largest finite 57344, no infinities, no negative zero, the one NaN at 0x80 (overflow \
     rounds to NaN).\n\n```\nuse fprev::float::F8E5M2Fnuz;\nuse \
     fprev::ProbeFloat;\nassert_eq!(F8E5M2Fnuz::from_f64_round(57344.0).to_bits(), 0x7F);\nassert!(F8E5M2Fnuz::from_f64_round(1e6).is_nan());\nassert_eq!(F8E5M2Fnuz::from_bits(0x01).to_f64(), 2f64.powi(-17));\n```"
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `code` straight from the specification's tables: sign, exponent
    /// field, mantissa field, with the special encodings of each format.
    fn spec_value(code: u8, e_bits: u32, m_bits: u32, bias: i32, ieee: bool) -> f64 {
        let s = if code >> 7 == 1 { -1.0 } else { 1.0 };
        let e = (u32::from(code) >> m_bits) & ((1 << e_bits) - 1);
        let m = u32::from(code) & ((1 << m_bits) - 1);
        let e_max = (1 << e_bits) - 1;
        if ieee && e == e_max {
            return if m == 0 { s * f64::INFINITY } else { f64::NAN };
        }
        if !ieee && e == e_max && m == (1 << m_bits) - 1 {
            return f64::NAN;
        }
        let frac = f64::from(m) / f64::from(1u32 << m_bits);
        if e == 0 {
            s * frac * 2f64.powi(1 - bias)
        } else {
            s * (1.0 + frac) * 2f64.powi(e as i32 - bias)
        }
    }

    fn check_all<T: ProbeFloat>(e_bits: u32, m_bits: u32, bias: i32, ieee: bool, max: f64) {
        let mut finite = Vec::new();
        for code in 0..=255u8 {
            let want = spec_value(code, e_bits, m_bits, bias, ieee);
            let got = T::from_bits_u64(u64::from(code)).to_f64();
            if want.is_nan() {
                assert!(got.is_nan(), "{} code {code:#04x}", T::FORMAT.name);
                assert!(T::from_f64_round(got).to_f64().is_nan());
                continue;
            }
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{} code {code:#04x}",
                T::FORMAT.name
            );
            // every non-NaN code reads back to itself (zeros keep their sign)
            assert_eq!(T::from_f64_round(want).to_bits_u64(), u64::from(code));
            if want.is_finite() {
                finite.push(want);
            }
        }
        finite.sort_by(f64::total_cmp);
        finite.dedup();
        assert_eq!(*finite.last().unwrap(), max);
        // midpoints between neighbours round to the even code; just off them, to the nearer
        for w in finite.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mid = (a + b) / 2.0;
            let r = T::from_f64_round(mid).to_f64();
            let even = if T::from_f64_round(a).to_bits_u64() % 2 == 0 {
                a
            } else {
                b
            };
            if a == 0.0 && b > 0.0 || a < 0.0 && b == 0.0 {
                // the zero code is even on both sides
                assert_eq!(r.abs(), 0.0, "{} mid {mid}", T::FORMAT.name);
            } else {
                assert_eq!(r, even, "{} mid {mid}", T::FORMAT.name);
            }
            let step = (b - a) / 8.0;
            assert_eq!(T::from_f64_round(mid - step).to_f64(), a);
            assert_eq!(T::from_f64_round(mid + step).to_f64(), b);
        }
        assert_eq!(T::FORMAT.exact_count_limit(), 1 << (m_bits + 1));
    }

    #[test]
    fn e4m3_matches_the_specification_on_every_code() {
        check_all::<F8E4M3>(4, 3, 7, false, 448.0);
        // overflow is NaN (no infinities); up to the rounding boundary it is 448
        assert_eq!(F8E4M3::from_f64_round(463.9).to_f64(), 448.0);
        assert_eq!(F8E4M3::from_f64_round(464.0).to_f64(), 448.0);
        assert!(F8E4M3::from_f64_round(464.1).is_nan());
        assert!(F8E4M3::from_f64_round(f64::INFINITY).is_nan());
        assert_eq!(F8E4M3::from_f64_round(2f64.powi(-10)).to_f64(), 0.0);
        assert_eq!(
            F8E4M3::from_f64_round(2f64.powi(-10) * 1.01).to_f64(),
            2f64.powi(-9)
        );
    }

    #[test]
    fn e5m2_matches_the_specification_on_every_code() {
        check_all::<F8E5M2>(5, 2, 15, true, 57344.0);
        assert_eq!(F8E5M2::from_f64_round(61439.0).to_f64(), 57344.0);
        assert_eq!(F8E5M2::from_f64_round(61440.0).to_f64(), f64::INFINITY);
        assert_eq!(
            F8E5M2::from_f64_round(f64::NEG_INFINITY).to_f64(),
            f64::NEG_INFINITY
        );
    }

    /// An FNUZ code straight from AMD's description: 0x80 is NaN, every other code
    /// sign, exponent, mantissa with no special exponent.
    fn fnuz_value(code: u8, m_bits: u32, bias: i32) -> f64 {
        if code == 0x80 {
            return f64::NAN;
        }
        let s = if code >> 7 == 1 { -1.0 } else { 1.0 };
        let e = u32::from(code & 0x7F) >> m_bits;
        let m = u32::from(code) & ((1 << m_bits) - 1);
        let frac = f64::from(m) / f64::from(1u32 << m_bits);
        if e == 0 {
            s * frac * 2f64.powi(1 - bias)
        } else {
            s * (1.0 + frac) * 2f64.powi(e as i32 - bias)
        }
    }

    fn check_fnuz<T: ProbeFloat>(m_bits: u32, bias: i32, max: f64) {
        let mut finite = Vec::new();
        for code in 0..=255u8 {
            let want = fnuz_value(code, m_bits, bias);
            let got = T::from_bits_u64(u64::from(code)).to_f64();
            if want.is_nan() {
                assert!(got.is_nan(), "{} code {code:#04x}", T::FORMAT.name);
                assert_eq!(T::from_f64_round(f64::NAN).to_bits_u64(), 0x80);
                continue;
            }
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{} code {code:#04x}",
                T::FORMAT.name
            );
            assert_eq!(T::from_f64_round(want).to_bits_u64(), u64::from(code));
            finite.push(want);
        }
        finite.sort_by(f64::total_cmp);
        assert_eq!(*finite.last().unwrap(), max, "{}", T::FORMAT.name);
        assert_eq!(finite[0], -max, "{}", T::FORMAT.name);
        // one zero: -0 and tiny negatives come back +0
        assert_eq!(T::from_f64_round(-0.0).to_bits_u64(), 0);
        assert_eq!(
            T::from_f64_round(-finite[finite.len() / 2 + 1] / 4.0).to_bits_u64(),
            0
        );
        // beyond the largest after rounding: NaN
        assert!(T::from_f64_round(max * 1.2).to_f64().is_nan());
        assert!(T::from_f64_round(f64::NEG_INFINITY).to_f64().is_nan());
        for w in finite.windows(2) {
            let (a, b) = (w[0], w[1]);
            let mid = (a + b) / 2.0;
            let step = (b - a) / 8.0;
            assert_eq!(T::from_f64_round(mid - step).to_f64(), a);
            assert_eq!(T::from_f64_round(mid + step).to_f64(), b);
        }
        assert_eq!(T::FORMAT.exact_count_limit(), 1 << (m_bits + 1));
        assert_eq!(T::FORMAT.min_exp, 1 - bias);
    }

    #[test]
    fn fnuz_formats_match_their_description_on_every_code() {
        check_fnuz::<F8E4M3Fnuz>(3, 8, 240.0);
        check_fnuz::<F8E5M2Fnuz>(2, 16, 57344.0);
    }

    #[test]
    fn additions_round_once() {
        let a = F8E4M3::from_f64_round(1.0);
        let b = F8E4M3::from_f64_round(0.0625);
        // 1 + 1/16 is a tie between 1 and 1.125: to even (1)
        assert_eq!(a.add(b).to_f64(), 1.0);
        let c = F8E4M3::from_f64_round(0.125);
        assert_eq!(a.add(c).to_f64(), 1.125);
    }
}
