//! The exact allreduce's fast path: each element's values as signed digits of one
//! fixed-point window, which MPI adds as plain 64-bit integers.
//!
//! A first allreduce (`MPI_MAX`) gives every element a [`key`]: the weight of the
//! highest set bit of its values and of the lowest (and whether it holds infinities,
//! NaNs or only zeros). The element's window runs exactly from the one to the other
//! ([`plan`]), in as few digits as cover it: one digit for values that share their
//! exponent, two for values within about 2^67 of each other, three within about 2^127.
//! A digit holds `b` bits, where `b` leaves room in an `i64` for the sum of one digit per
//! rank ([`digit_bits`]: 60 bits for 8 ranks), so `MPI_SUM` on the digits is exact, and
//! [`round`] rounds the exact sum once. Every value fits its window by construction.

use crate::exact::{pow2, RoundingFormat};

/// Most digits per element; an element needing more takes the general path.
pub(crate) const MAX_DIGITS: usize = 3;
/// Ranks the window path serves: with 1024 ranks a digit is down to 53 bits, the width
/// of a value's significand, which one digit must hold.
pub(crate) const MAX_RANKS: usize = 1023;

/// A first key at or above this means an infinity or a NaN among the element's values.
pub(crate) const NONFINITE: u16 = 4096;
/// First key of a nonzero value: the weight of its highest set bit plus this (at least
/// 3, above the two zero keys).
const TOP_BIAS: i32 = 1077;
/// Second key: this minus the weight of the lowest set bit (so `MPI_MAX` finds the
/// lowest), always above 0 for a nonzero value.
const LOW_BIAS: i32 = 1100;
const FRACTION: u64 = (1 << 52) - 1;

/// The significand and the weight of its lowest bit: `x = m * 2^e` (finite `x`).
fn parts(bits: u64) -> (u64, i32) {
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let m = (bits & FRACTION) | (u64::from(biased != 0) << 52);
    (m, biased.max(1) - 1075)
}

/// The keys of one value. First: `0` for `-0.0`, `1` for `+0.0`, [`NONFINITE`] for
/// infinities and NaNs, else the weight of the highest set bit plus `TOP_BIAS`. Second:
/// `0` for those, else `LOW_BIAS` minus the weight of the lowest set bit. The largest
/// keys over the ranks say where the element's window lies, whether it is only zeros
/// (and which zero), with one `MPI_MAX`.
pub(crate) fn key(x: f64) -> [u16; 2] {
    let bits = x.to_bits();
    if (bits >> 52) & 0x7FF == 0x7FF {
        return [NONFINITE, 0];
    }
    if x == 0.0 {
        return [u16::from(bits >> 63 == 0), 0];
    }
    let (m, e) = parts(bits);
    let top = e + 63 - m.leading_zeros() as i32;
    let low = e + m.trailing_zeros() as i32;
    // top in -1074..=1023 and low too: both keys in 3..=2174
    [(top + TOP_BIAS) as u16, (LOW_BIAS - low) as u16]
}

/// Bits per digit for `ranks` ranks: an `i64` holds the sum of `ranks` digits of that
/// many bits (`ranks * 2^b <= 2^63`); 53 to 62.
pub(crate) fn digit_bits(ranks: usize) -> i32 {
    let headroom = (usize::BITS - ranks.saturating_sub(1).leading_zeros()) as i32;
    (63 - headroom).clamp(53, 62)
}

/// What an element's reduced keys call for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum WindowPlan {
    /// Only zeros: this one (`+0.0` when any is `+0.0`, as IEEE addition gives).
    Zero(f64),
    /// `digits` digits of `b` bits, digit 0's lowest bit weighing `2^base`.
    Window {
        /// Weight (log2) of digit 0's lowest bit: the lowest set bit of any value.
        base: i32,
        /// Digits, 1 to [`MAX_DIGITS`].
        digits: usize,
    },
    /// Infinities or NaNs, or values spread over more than the digits hold.
    General,
}

/// The plan of an element whose keys, reduced by `MPI_MAX`, are `key`, for digits of
/// `b` bits.
pub(crate) fn plan(key: [u16; 2], b: i32) -> WindowPlan {
    match key[0] {
        0 => WindowPlan::Zero(-0.0),
        1 => WindowPlan::Zero(0.0),
        k if k >= NONFINITE => WindowPlan::General,
        k => {
            let top = i32::from(k) - TOP_BIAS;
            let base = LOW_BIAS - i32::from(key[1]);
            let digits = ((top - base + 1 + b - 1) / b) as usize;
            if digits > MAX_DIGITS {
                WindowPlan::General
            } else {
                WindowPlan::Window { base, digits }
            }
        }
    }
}

/// Add `x` (finite) into `digits`, its element's window of `b`-bit digits from
/// `2^base`, as planned from keys that include `x`'s.
pub(crate) fn place(x: f64, base: i32, b: i32, digits: &mut [i64]) {
    if x == 0.0 {
        return;
    }
    let bits = x.to_bits();
    let (mut m, e) = parts(bits);
    let mut shift = e - base;
    if shift < 0 {
        // only zeros below the window: its base is at or below x's lowest set bit
        m >>= -shift;
        shift = 0;
    }
    let (digit, within) = ((shift / b) as usize, shift % b);
    let wide = u128::from(m) << within;
    let mask = (1u128 << b) - 1;
    let (low, high) = ((wide & mask) as i64, (wide >> b) as i64);
    let sign = if bits >> 63 == 1 { -1 } else { 1 };
    digits[digit] += sign * low;
    if high != 0 {
        // the window reaches x's highest bit, so this digit exists
        digits[digit + 1] += sign * high;
    }
}

/// The exact sum held by `digits` (1 to [`MAX_DIGITS`] summed digits of `b` bits from
/// `2^base`), rounded once to `format`, as the `f64` holding that value.
pub(crate) fn round(digits: &[i64], base: i32, b: i32, format: RoundingFormat) -> f64 {
    let mut d = [0i64; MAX_DIGITS];
    d[..digits.len()].copy_from_slice(digits);
    // carries upward: the lower digits in [0, 2^b); the top one keeps the sign
    for k in 0..MAX_DIGITS - 1 {
        let carry = d[k] >> b;
        d[k] &= (1i64 << b) - 1;
        d[k + 1] += carry;
    }
    // magnitude = high * 2^b + low, from the signed value h * 2^b + d[0]
    let h = (i128::from(d[2]) << b) + i128::from(d[1]);
    let (high, low, negative) = if h >= 0 {
        (h as u128, d[0] as u64, false)
    } else if d[0] == 0 {
        ((-h) as u128, 0, true)
    } else {
        ((-h - 1) as u128, ((1i64 << b) - d[0]) as u64, true)
    };
    if high == 0 && low == 0 {
        // nonzero values that cancel: +0 (as IEEE addition gives)
        return 0.0;
    }
    let lead = if high != 0 {
        b + 127 - high.leading_zeros() as i32
    } else {
        63 - low.leading_zeros() as i32
    };
    if let Some(v) = round_normal(high, low, lead, base, b, format) {
        return if negative { -v } else { v };
    }
    let p = format.precision_bits() as i32;
    // bits of the magnitude to drop: the last kept one weighs 2^(max(E, emin) - (p-1))
    let exponent = base + lead;
    let dropped = exponent.max(format.min_exp()) - (p - 1) - base;
    let bit = |i: i32| -> bool {
        if i < b {
            low >> i & 1 == 1
        } else {
            high.checked_shr((i - b) as u32).unwrap_or(0) & 1 == 1
        }
    };
    let shifted = |s: i32| -> u64 {
        // the magnitude >> s, known to fit in 64 bits (0 past a result below the
        // format's smallest subnormal)
        if s >= b {
            high.checked_shr((s - b) as u32).unwrap_or(0) as u64
        } else {
            ((high << (b - s)) as u64) | (low >> s)
        }
    };
    let (kept, scale) = if dropped <= 0 {
        // exact: at most p bits (p <= 53), so the magnitude is `low` plus a few high bits
        (shifted(0), base)
    } else {
        let mut kept = shifted(dropped);
        let half = bit(dropped - 1);
        let below = dropped - 1;
        let sticky = if below <= 0 {
            false
        } else if below <= b {
            low & ((1u64 << below) - 1) != 0
        } else {
            let mask = 1u128
                .checked_shl((below - b) as u32)
                .map_or(u128::MAX, |m| m - 1);
            low != 0 || high & mask != 0
        };
        if half && (sticky || kept & 1 == 1) {
            kept += 1;
        }
        (kept, base + dropped)
    };
    // kept <= 2^p and scale >= the format's lowest exponent (-1074 for f64): the product
    // is exact in f64 unless past the format's largest value, which rounds to infinity
    let largest = pow2(format.max_exp()) * (2.0 - pow2(1 - p));
    let magnitude = if scale > 1023 {
        f64::INFINITY
    } else {
        let v = kept as f64 * pow2(scale);
        if v > largest {
            f64::INFINITY
        } else {
            v
        }
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// The common case of [`round`]: a result that is a normal number of the format. The
/// magnitude's top 64 bits, with a sticky bit for any below, rounded by the hardware (an
/// integer-to-float conversion rounds to nearest, ties to even; the sticky bit lies 11
/// bits below the last kept one), then scaled by a power of two exactly; `None` when
/// the result is subnormal or overflows.
fn round_normal(
    high: u128,
    low: u64,
    lead: i32,
    base: i32,
    b: i32,
    format: RoundingFormat,
) -> Option<f64> {
    // magnitude = top * 2^s (+ what sticky says is below)
    let s = (lead + 1 - 64).max(0);
    let (top, sticky) = if s == 0 {
        (((high << b) as u64) | low, false)
    } else if s >= b {
        let below = high & ((1u128 << (s - b)) - 1);
        ((high >> (s - b)) as u64, low != 0 || below != 0)
    } else {
        let top = ((high << (b - s)) as u64) | (low >> s);
        (top, low & ((1u64 << s) - 1) != 0)
    };
    let top = top | u64::from(sticky);
    let r = match format.precision_bits() {
        53 => top as f64,
        24 => f64::from(top as f32),
        _ => return None,
    };
    // r >= 1 is normal: its exponent moves by s + base when the result is normal too
    let exponent = ((r.to_bits() >> 52) & 0x7FF) as i32 - 1023 + s + base;
    if exponent < format.min_exp() || exponent > format.max_exp() {
        return None;
    }
    let field = ((exponent + 1023) as u64) << 52;
    Some(f64::from_bits((r.to_bits() & !(0x7FF << 52)) | field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::Accumulator;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The window path on `values` (one value per rank), or `None` when the element
    /// takes the general path, as the allreduce computes it.
    fn window_sum(values: &[f64], format: RoundingFormat) -> Option<f64> {
        let b = digit_bits(values.len());
        let k = values
            .iter()
            .map(|&v| key(v))
            .fold([0, 0], |a, k| [a[0].max(k[0]), a[1].max(k[1])]);
        match plan(k, b) {
            WindowPlan::Zero(z) => Some(z),
            WindowPlan::General => None,
            WindowPlan::Window { base, digits } => {
                let mut total = vec![0i64; digits];
                for &v in values {
                    let mut mine = vec![0i64; digits];
                    place(v, base, b, &mut mine);
                    for (t, m) in total.iter_mut().zip(mine) {
                        *t += m;
                    }
                }
                Some(round(&total, base, b, format))
            }
        }
    }

    fn exact(values: &[f64], format: RoundingFormat) -> f64 {
        let mut acc = Accumulator::new();
        acc.add_slice(values);
        acc.round_to(format)
    }

    #[test]
    fn the_window_rounds_as_the_accumulator_does() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x33);
        let (mut fitted, mut cases) = (0, 0);
        for case in 0..200_000 {
            // rank counts up to 16, and the most a digit's headroom allows
            let ranks = if case % 50 == 0 {
                MAX_RANKS
            } else {
                rng.random_range(1..=16)
            };
            let spread = [0, 4, 30, 60, 120, 1100][case % 6];
            let centre = rng.random_range(-1070..1020);
            let extreme = case % 7 == 0;
            let values: Vec<f64> = (0..ranks)
                .map(|_| {
                    let v = match rng.random_range(0..60) {
                        0 => 0.0,
                        1 => f64::from_bits(rng.random_range(1..1u64 << 52)),
                        2 => f64::MAX,
                        // significands of all ones: the digits' largest values
                        _ if extreme => f64::from_bits(
                            (((centre + 1075).clamp(1, 2046) as u64) << 52) | FRACTION,
                        ),
                        _ => {
                            let e = (centre + rng.random_range(0..=spread)).clamp(-1074, 1023);
                            rng.random_range(1.0..2.0) * pow2(e)
                        }
                    };
                    if rng.random_bool(if extreme { 0.02 } else { 0.5 }) {
                        -v
                    } else {
                        v
                    }
                })
                .collect();
            for format in [RoundingFormat::F64, RoundingFormat::F32] {
                cases += 1;
                if let Some(got) = window_sum(&values, format) {
                    fitted += 1;
                    let want = exact(&values, format);
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "case {case}: {values:?} in {format:?}: window {got:e}, exact {want:e}"
                    );
                }
            }
        }
        // most cases take the window: the comparison above is not vacuous
        assert!(fitted * 2 > cases, "{fitted} of {cases}");
    }

    #[test]
    fn ties_round_to_even_and_cancellation_gives_plus_zero() {
        let cases: &[&[f64]] = &[
            &[1.0, 2f64.powi(-53)],
            &[1.0, 2f64.powi(-53), 2f64.powi(-105)],
            &[1.0 + f64::EPSILON, 2f64.powi(-53)],
            &[-1.0, -(2f64.powi(-53))],
            &[1.5, -1.5],
            &[f64::MAX, f64::MAX],
            &[-f64::MAX, -f64::MAX, f64::MAX],
            &[f64::MIN_POSITIVE, -f64::MIN_POSITIVE / 2.0],
            &[1.0, 2f64.powi(-24)],
            &[1.0, 2f64.powi(-24), 2f64.powi(-60)],
            &[3.4e38, 3.4e38],
            &[-3.0, 1.0],
            &[5e-324, 5e-324, -1e-323],
        ];
        for values in cases {
            for format in [RoundingFormat::F64, RoundingFormat::F32] {
                let got = window_sum(values, format).expect("fits");
                let want = exact(values, format);
                assert_eq!(got.to_bits(), want.to_bits(), "{values:?} {format:?}");
            }
        }
        assert_eq!(key(-0.0), [0, 0]);
        assert_eq!(key(0.0), [1, 0]);
        assert_eq!(key(f64::NAN)[0], NONFINITE);
        assert_eq!(key(f64::NEG_INFINITY)[0], NONFINITE);
        // the window is as wide as the values' bits: one digit for one binade's worth
        let b = digit_bits(8);
        assert_eq!(b, 60);
        let max = |a: [u16; 2], k: [u16; 2]| [a[0].max(k[0]), a[1].max(k[1])];
        let one = plan(max(key(1.5), key(-1.25)), b);
        assert!(
            matches!(one, WindowPlan::Window { digits: 1, .. }),
            "{one:?}"
        );
        let two = plan(max(key(1.0), key(2f64.powi(-105))), b);
        assert!(
            matches!(two, WindowPlan::Window { digits: 2, .. }),
            "{two:?}"
        );
        assert_eq!(
            plan(max(key(1.0), key(2f64.powi(-200))), b),
            WindowPlan::General
        );
        assert_eq!(digit_bits(1), 62);
        assert_eq!(digit_bits(1023), 53);
    }
}
