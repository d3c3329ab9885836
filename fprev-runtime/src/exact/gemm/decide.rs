//! Deciding the correctly rounded value from an enclosure of the exact one.
//!
//! An element of the product is known as `p1 + p2 + t ± e`: `p1 + p2` exactly (the slice
//! products), `t` an approximation of the rest, `e` a rigorous bound on its error. When
//! the whole interval rounds to the same value of the target format, that value is the
//! correctly rounded exact result, whatever `t` was: a different kernel, order or thread
//! count changes `t` and `e`, never the answer. Otherwise the caller computes the element
//! exactly.

use crate::exact::RoundingFormat;

/// Knuth's TwoSum: `s + r == a + b` exactly, `s = fl(a + b)`, when nothing overflows.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `2^k` for an exponent of a normal `f64`.
#[inline(always)]
fn pow2_normal(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// The value of `format` nearest to `v` (ties to even), as an `f64`, for the two formats
/// the products produce.
#[inline(always)]
fn round_to_format(v: f64, format: RoundingFormat) -> f64 {
    if format == RoundingFormat::F32 {
        v as f32 as f64
    } else {
        v
    }
}

/// The correctly rounded value in `format` of an exact value known to lie in
/// `[p1 + p2 + t - e, p1 + p2 + t + e]`, or `None` when that interval reaches a rounding
/// boundary, a zero, a subnormal or an overflow (the caller then computes it exactly).
///
/// `p1 + p2` must be exact, finite, and `e` finite and non-negative.
#[inline(always)]
pub(super) fn decide(p1: f64, p2: f64, t: f64, e: f64, format: RoundingFormat) -> Option<f64> {
    let (h, l) = two_sum(p1, p2);
    let (h2, l2) = two_sum(h, t);
    // h2 + l2 + l is the midpoint; folding l2 + l into one double costs at most half an
    // ulp of it, which joins the bound.
    let c = l2 + l;
    let mut e = e + c.abs() * f64::EPSILON;
    let (y, r) = two_sum(h2, c);
    if !(y.is_finite() && r.is_finite() && e.is_finite()) {
        return None;
    }
    // The candidate and the midpoint's offset from it, measured away from zero.
    let z = round_to_format(y, format);
    let offset = (y - z) + r;
    e += offset.abs() * f64::EPSILON;
    // The two additions to `e` rounded to nearest, each possibly down by half an ulp:
    // a relative margin far above that keeps `e` a bound (the sum of non-negative terms
    // loses at most a factor (1 - u)^2, and this product rounds up past it).
    e *= 1.0 + 4.0 * f64::EPSILON;
    let away = if z < 0.0 { -offset } else { offset };
    let magnitude = z.abs();
    let exponent = ((magnitude.to_bits() >> 52) & 0x7FF) as i32 - 1023;
    // Normal in the format, with room above for the next value up.
    if !(exponent > format.min_exp() + 1 && exponent < format.max_exp()) || magnitude == 0.0 {
        return None;
    }
    let p = format.precision_bits() as i32;
    let half_ulp = pow2_normal(exponent - p);
    // Below a power of two the spacing toward zero halves.
    let power_of_two = magnitude.to_bits() & ((1 << 52) - 1) == 0;
    let half_toward_zero = if power_of_two {
        half_ulp * 0.5
    } else {
        half_ulp
    };
    // Rounding is monotonic and the half spacings are powers of two, so these rounded
    // comparisons imply the exact ones.
    if away + e < half_ulp && away - e > -half_toward_zero {
        Some(z)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decides_only_inside_the_rounding_interval() {
        let one = 1.0;
        let u = f64::EPSILON; // spacing above 1
        assert_eq!(decide(one, 0.0, 0.0, 0.0, RoundingFormat::F64), Some(1.0));
        assert_eq!(
            decide(one, 0.0, 0.4 * u, 0.05 * u, RoundingFormat::F64),
            Some(1.0)
        );
        // The interval reaches the midpoint between 1 and 1 + u.
        assert_eq!(
            decide(one, 0.0, 0.4 * u, 0.2 * u, RoundingFormat::F64),
            None
        );
        // Below 1 the spacing is u / 2: a quarter of u down is a midpoint.
        assert_eq!(
            decide(one, 0.0, -0.2 * u, 0.01 * u, RoundingFormat::F64),
            Some(1.0)
        );
        assert_eq!(decide(one, 0.0, -0.25 * u, 0.0, RoundingFormat::F64), None); // a tie
        assert_eq!(
            decide(one, 0.0, -0.26 * u, 0.0, RoundingFormat::F64),
            Some(1.0 - u / 2.0)
        );
        assert_eq!(decide(-one, 0.0, 0.25 * u, 0.0, RoundingFormat::F64), None);
        assert_eq!(
            decide(-one, 0.0, 0.26 * u, 0.0, RoundingFormat::F64),
            Some(u / 2.0 - 1.0)
        );
        assert_eq!(
            decide(-one, 0.0, 0.2 * u, 0.0, RoundingFormat::F64),
            Some(-1.0)
        );
        // Exact parts that a single double could not hold.
        assert_eq!(
            decide(one, 0.75 * u, 0.0, 0.0, RoundingFormat::F64),
            Some(1.0 + u)
        );
        assert_eq!(decide(one, 0.5 * u, 0.0, 0.0, RoundingFormat::F64), None); // a tie
        assert_eq!(decide(0.0, 0.0, 0.0, 0.0, RoundingFormat::F64), None);
        assert_eq!(decide(1e-310, 0.0, 0.0, 0.0, RoundingFormat::F64), None);
        assert_eq!(decide(f64::MAX, 0.0, 0.0, 0.0, RoundingFormat::F64), None);
    }

    #[test]
    fn rounds_once_to_f32() {
        let u32 = f32::EPSILON as f64;
        // 1 + u32/2 is a tie in f32; just above it rounds up, just below down.
        assert_eq!(
            decide(1.0, 0.5 * u32, 1e-12, 1e-13, RoundingFormat::F32),
            Some(1.0 + u32)
        );
        assert_eq!(
            decide(1.0, 0.5 * u32, -1e-12, 1e-13, RoundingFormat::F32),
            Some(1.0)
        );
        assert_eq!(
            decide(1.0, 0.5 * u32, 0.0, 1e-13, RoundingFormat::F32),
            None
        );
        assert_eq!(decide(1e-40, 0.0, 0.0, 0.0, RoundingFormat::F32), None); // f32 subnormal
        assert_eq!(decide(3e38, 0.0, 0.0, 0.0, RoundingFormat::F32), None); // top binade
    }
}
