//! The exact allreduce's fast path: each element's values as signed 53-bit digits of one
//! fixed-point window, which MPI adds as plain 64-bit integers.
//!
//! A first allreduce (`MPI_MAX`) gives every element a [`key`]: its largest exponent
//! (and whether it holds infinities, NaNs or only zeros). The window of that element
//! covers the 159 bits below its largest value's leading bit, in three digits of 53 bits
//! each; a value whose lowest set bit falls below the window does not [`fit`](place) and
//! sends its chunk down the general path (accumulator images). An `i64` digit has room
//! for the sum of up to [`MAX_RANKS`] digits, so `MPI_SUM` on the digits is exact, and
//! [`round`] rounds the exact sum once.

use crate::exact::{pow2, RoundingFormat};

/// Digits per element.
pub(crate) const DIGITS: usize = 3;
/// Bits per digit.
const DIGIT_BITS: i32 = 53;
const DIGIT_MASK: i64 = (1 << DIGIT_BITS) - 1;
/// Ranks whose digits an `i64` sums without overflow: 1023 * (2^53 - 1) < 2^63.
pub(crate) const MAX_RANKS: usize = 1023;

/// Keys at or above this mean an infinity or a NaN among the element's values.
pub(crate) const NONFINITE: i32 = 2048;

/// The key of one value: `0` for `-0.0`, `1` for `+0.0`, `2 + max(e, 1)` with `e` the
/// biased exponent for other finite values, [`NONFINITE`] for infinities and NaNs. The
/// largest key over the ranks says where the element's window lies, and whether the
/// element is only zeros (and which zero), with one `MPI_MAX`.
pub(crate) fn key(x: f64) -> i32 {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i32;
    if biased == 0x7FF {
        NONFINITE
    } else if x == 0.0 {
        i32::from(bits >> 63 == 0)
    } else {
        1 + biased.max(1)
    }
}

/// The weight (log2) of digit 0's lowest bit for an element whose largest key is
/// `key` (2..=2048, a nonzero finite value).
fn bottom(key: i32) -> i32 {
    // leading bit of the largest value: (key - 1) - 1023; the window's 159 bits end there
    (key - 1) - 1023 + 1 - DIGIT_BITS * DIGITS as i32
}

/// Add `x` (finite) into `digits`, the element's window for largest key `key`; `false`
/// when `x` has bits below the window (it is then left out, and the caller takes the
/// general path).
pub(crate) fn place(x: f64, key: i32, digits: &mut [i64; DIGITS]) -> bool {
    if x == 0.0 {
        return true;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let normal = i64::from(biased != 0);
    let mantissa = (bits & ((1 << 52) - 1)) | ((normal as u64) << 52);
    // x = mantissa * 2^(max(biased, 1) - 1075); its position in the window:
    let shift = (biased.max(1) - 1075) - bottom(key);
    let (mantissa, shift) = if shift >= 0 {
        (mantissa, shift)
    } else {
        let drop = -shift;
        if drop >= 64 || mantissa.trailing_zeros() < drop as u32 {
            return false;
        }
        (mantissa >> drop, 0)
    };
    // shift <= 106 because x's exponent is at most the largest one
    let (digit, within) = ((shift / DIGIT_BITS) as usize, shift % DIGIT_BITS);
    let wide = u128::from(mantissa) << within;
    let (low, high) = ((wide as i64) & DIGIT_MASK, (wide >> DIGIT_BITS) as i64);
    let sign = if bits >> 63 == 1 { -1 } else { 1 };
    digits[digit] += sign * low;
    if high != 0 {
        digits[digit + 1] += sign * high;
    }
    true
}

/// The exact sum held by `digits` (an element's summed window for largest key `key`,
/// `2..NONFINITE`), rounded once to `format`, as the `f64` holding that value.
pub(crate) fn round(digits: &[i64; DIGITS], key: i32, format: RoundingFormat) -> f64 {
    // carries into the top digit: every lower digit in [0, 2^53)
    let mut d = *digits;
    for k in 0..DIGITS - 1 {
        let carry = d[k] >> DIGIT_BITS;
        d[k] &= DIGIT_MASK;
        d[k + 1] += carry;
    }
    let negative = d[DIGITS - 1] < 0;
    if negative {
        // the magnitude: negate, then borrow so the lower digits are back in [0, 2^53)
        for v in d.iter_mut() {
            *v = -*v;
        }
        for k in 0..DIGITS - 1 {
            if d[k] < 0 {
                d[k] += 1 << DIGIT_BITS;
                d[k + 1] -= 1;
            }
        }
    }
    // magnitude = high * 2^53 + low
    let high = (d[2] as u128) << DIGIT_BITS | d[1] as u128;
    let low = d[0] as u64;
    if high == 0 && low == 0 {
        // nonzero values that cancel: +0 (as IEEE addition gives)
        return 0.0;
    }
    let lead = if high != 0 {
        DIGIT_BITS + 127 - high.leading_zeros() as i32
    } else {
        63 - low.leading_zeros() as i32
    };
    let base = bottom(key);
    let p = format.precision_bits() as i32;
    // bits of the magnitude to drop: the last kept one weighs 2^(max(E, emin) - (p-1))
    let exponent = base + lead;
    let dropped = exponent.max(format.min_exp()) - (p - 1) - base;
    let bit = |i: i32| -> bool {
        if i < DIGIT_BITS {
            low >> i & 1 == 1
        } else {
            high.checked_shr((i - DIGIT_BITS) as u32).unwrap_or(0) & 1 == 1
        }
    };
    let shifted = |s: i32| -> u64 {
        // the magnitude >> s, known to fit in 64 bits (0 past a result below the
        // format's smallest subnormal)
        if s >= DIGIT_BITS {
            high.checked_shr((s - DIGIT_BITS) as u32).unwrap_or(0) as u64
        } else {
            ((high << (DIGIT_BITS - s)) as u64) | (low >> s)
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
        } else if below <= DIGIT_BITS {
            low & ((1u64 << below) - 1) != 0
        } else {
            let mask = 1u128
                .checked_shl((below - DIGIT_BITS) as u32)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::Accumulator;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The window path on `columns` (one value per rank), or `None` when a value does
    /// not fit, as the allreduce computes it.
    fn window_sum(values: &[f64], format: RoundingFormat) -> Option<f64> {
        let k = values.iter().map(|&v| key(v)).max()?;
        if !(2..NONFINITE).contains(&k) {
            return None;
        }
        let mut total = [0i64; DIGITS];
        for &v in values {
            let mut mine = [0i64; DIGITS];
            if !place(v, k, &mut mine) {
                return None;
            }
            for (t, m) in total.iter_mut().zip(mine) {
                *t += m;
            }
        }
        Some(round(&total, k, format))
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
            let ranks = rng.random_range(1..=16);
            let spread = [4, 30, 60, 120, 1100][case % 5];
            let centre = rng.random_range(-1070..1020);
            let values: Vec<f64> = (0..ranks)
                .map(|_| {
                    let v = match rng.random_range(0..60) {
                        0 => 0.0,
                        1 => f64::from_bits(rng.random_range(1..1u64 << 52)),
                        2 => f64::MAX,
                        _ => {
                            let e = (centre + rng.random_range(0..=spread)).clamp(-1074, 1023);
                            rng.random_range(1.0..2.0) * pow2(e)
                        }
                    };
                    if rng.random_bool(0.5) {
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
        ];
        for values in cases {
            for format in [RoundingFormat::F64, RoundingFormat::F32] {
                let got = window_sum(values, format).expect("fits");
                let want = exact(values, format);
                assert_eq!(got.to_bits(), want.to_bits(), "{values:?} {format:?}");
            }
        }
        assert_eq!(key(-0.0), 0);
        assert_eq!(key(0.0), 1);
        assert_eq!(key(f64::NAN), NONFINITE);
        assert_eq!(key(f64::NEG_INFINITY), NONFINITE);
        // a value far below the largest does not fit
        let k = key(1.0);
        assert!(!place(2f64.powi(-200), k, &mut [0; DIGITS]));
        assert!(place(2f64.powi(-105), k, &mut [0; DIGITS]));
    }
}
