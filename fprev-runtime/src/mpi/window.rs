//! The exact allreduce's fast path: each value cut at one fixed-point boundary per
//! element, so that MPI adds the parts as plain 64-bit integers, and refined only where
//! the cut could change the rounding.
//!
//! **Keys.** One `MPI_MAX` of a 16-bit [`key`] per element gives the largest exponent
//! field `E` among the element's values, and whether they hold infinities or NaNs, or
//! only `-0.0` ([`start`]). Every finite value of the element then lies in
//! `(-2^(t+1), 2^(t+1))` for `t = max(E, 1) - 1023`.
//!
//! **First digit.** Each rank sends `floor(x / 2^L)` for `L = t + 1 - b`
//! ([`first_digit`]): an integer in `[-2^b, 2^b)`, where `b` ([`digit_bits`]) leaves room
//! in an `i64` for the sum of one such integer per rank (`P * 2^b <= 2^63`), so
//! `MPI_SUM` on `i64` gives their exact sum `d`. What the cut drops of each value,
//! `x - floor(x / 2^L) * 2^L`, lies in `[0, 2^L)`, so the exact sum `S` lies in
//! `[d * 2^L, (d + P) * 2^L)`. Rounding to nearest is monotone: when both ends of that
//! interval round to the same float, every number between them does, `S` among them,
//! and that float is the correctly rounded sum ([`resolve_first`]). With `L <= -1074`
//! nothing is cut (every float is a multiple of `2^-1074`) and `d * 2^L` is `S`. The ends
//! lie `P * 2^L = 2^(t + 1 - b + log2 P)` apart, `2^(t - 56)` at 8 ranks, a sixteenth of
//! the last place of a sum near `2^t`: about one element in ten or twenty needs more,
//! the others cost 2 bytes of key and 8 of digit against `MPI_SUM`'s 8 (f32 sums, with
//! 24 bits, almost never need more).
//!
//! **Refinement.** For the elements left undecided (the same ones on every rank, since
//! the decision is made from reduced values), each rank sends the next `b` bits below
//! the cut, `floor(x / 2^L_k) mod 2^b` for `L_k = L - (k - 1) * b`, and a flag saying
//! whether `x` has bits below `L_k` ([`refine`]). Summed, the digits are `S` less a rest
//! in `[0, F * 2^L_k)`, where `F` counts the flags: `F = 0` means the digits are `S`
//! exactly (a sum that cancels to zero ends here), otherwise the two ends decide as
//! before ([`resolve_refined`]). After [`MAX_DIGITS`] digits an element still undecided
//! (a tie with a value far below it, a sum that cancels more than about `2b` bits and
//! still has bits below, or one within `F * 2^L_3` of a rounding boundary) takes the
//! accumulator images, as do infinities and NaNs.
//!
//! [`round`] rounds the digits' exact sum once; [`resolve_first`] rounds one digit with a
//! single integer-to-float conversion (correctly rounded by the hardware) and an exact
//! scaling by `2^L` when the result is a normal number, [`round`] otherwise.

use crate::exact::{pow2, RoundingFormat};

/// Most digits per element; an element still undecided after them takes the general
/// path.
pub(crate) const MAX_DIGITS: usize = 3;
/// Ranks the digit path serves: with 1024 ranks a digit is down to 53 bits, the width
/// of a value's significand.
pub(crate) const MAX_RANKS: usize = 1023;

const EXPONENT: u64 = 0x7FF;
const FRACTION: u64 = (1 << 52) - 1;
const NEGATIVE_ZERO: u64 = 1 << 63;
/// The lowest weight of a float's bit: every finite float is a multiple of `2^-1074`.
const LOWEST: i32 = -1074;

/// The signed significand and the weight of its lowest bit: `x = m * 2^e` (finite `x`).
#[inline]
fn parts(bits: u64) -> (i64, i32) {
    let biased = ((bits >> 52) & EXPONENT) as i32;
    let m = ((bits & FRACTION) | (u64::from(biased != 0) << 52)) as i64;
    // 0 or -1: m, or -m in two's complement, without a branch
    let sign = (bits as i64) >> 63;
    ((m ^ sign) - sign, biased.max(1) - 1075)
}

/// The key of one value: its exponent field `E` times two, plus one unless it is
/// `-0.0`. The largest key over the ranks carries the largest `E` (`0x7FF`: an infinity
/// or a NaN) and, where that is 0, whether every value was `-0.0` (key 0).
#[inline]
pub(crate) fn key(x: f64) -> u16 {
    let bits = x.to_bits();
    ((((bits >> 52) & EXPONENT) as u16) << 1) | u16::from(bits != NEGATIVE_ZERO)
}

/// How an element starts, from its reduced key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Start {
    /// Cut at `2^L` (the argument is `L`): [`first_digit`] and [`resolve_first`].
    Cut(i32),
    /// Every value is `-0.0`, and so is the sum.
    NegativeZero,
    /// Infinities or NaNs: the accumulator images.
    General,
}

/// The start of an element whose reduced key is `key`, for digits of `b` bits.
#[inline]
pub(crate) fn start(key: u16, b: i32) -> Start {
    if key >> 1 == EXPONENT as u16 {
        Start::General
    } else if key == 0 {
        Start::NegativeZero
    } else {
        Start::Cut(cut(key, b))
    }
}

/// Where [`start`] cuts an element whose reduced key is `key`: `L = t + 1 - b`, every
/// value lying below `2^(t+1)` for `t = max(E, 1) - 1023`. Also defined for the other
/// starts, whose digits are sent but not read, so that the digits need no branch.
#[inline]
pub(crate) fn cut(key: u16, b: i32) -> i32 {
    i32::from(key >> 1).max(1) - 1022 - b
}

/// `floor(x / 2^low)` for a finite `x` below `2^(low + b)` in magnitude (as [`start`]
/// cuts): in `[-2^b, 2^b)`. Some number, not read, for an infinity or a NaN.
#[inline]
pub(crate) fn first_digit(x: f64, low: i32) -> i64 {
    let (m, e) = parts(x.to_bits());
    let s = e - low;
    // x < 2^(low + b) puts s at most b - 53 (< 10); an arithmetic shift right floors
    (m << s.clamp(0, 63)) >> (-s).clamp(0, 63)
}

/// `f64` holding `d * 2^low` rounded once to `format`.
#[inline]
fn scaled(d: i64, low: i32, b: i32, format: RoundingFormat) -> f64 {
    if d == 0 {
        return 0.0;
    }
    if (-1022..=1023).contains(&low) {
        let scale = f64::from_bits(((low + 1023) as u64) << 52);
        // the conversions round to nearest, ties to even; the scaling is exact while the
        // result is a normal f64, and an infinity past the largest is the rounding too
        match format.precision_bits() {
            53 => {
                let v = d as f64 * scale;
                if v.abs() >= f64::MIN_POSITIVE {
                    return v;
                }
            }
            24 => {
                let v = f64::from(d as f32) * scale;
                if v.abs() > f64::from(f32::MAX) {
                    return f64::INFINITY.copysign(v);
                }
                if v.abs() >= f64::from(f32::MIN_POSITIVE) {
                    return v;
                }
            }
            _ => {}
        }
    }
    round(&[d], low, b, format)
}

/// The sum of an element cut at `2^low` whose first digits summed over `ranks` ranks
/// to `d`, rounded once to `format`; `None` when the cut leaves the rounding open.
#[inline]
pub(crate) fn resolve_first(
    d: i64,
    low: i32,
    ranks: i64,
    b: i32,
    format: RoundingFormat,
) -> Option<f64> {
    if low <= LOWEST {
        // nothing was cut: d * 2^low is the sum
        return Some(round(&[d], low, b, format));
    }
    let lo = scaled(d, low, b, format);
    let hi = scaled(d.checked_add(ranks)?, low, b, format);
    (lo.to_bits() == hi.to_bits()).then_some(lo)
}

/// What one rank sends for a refinement cut at `2^low`: `[floor(x / 2^low) mod 2^b, 1
/// if x has bits below 2^low else 0]` (finite `x`).
#[inline]
pub(crate) fn refine(x: f64, low: i32, b: i32) -> [i64; 2] {
    let (m, e) = parts(x.to_bits());
    let s = e - low;
    let mask = (1i64 << b) - 1;
    if s >= b {
        // a multiple of 2^b
        [0, 0]
    } else if s >= 0 {
        [((i128::from(m) << s) as i64) & mask, 0]
    } else {
        let r = -s;
        let below = if r >= 64 {
            m != 0
        } else {
            m.unsigned_abs() & ((1u64 << r) - 1) != 0
        };
        [(m >> r.min(63)) & mask, i64::from(below)]
    }
}

/// The sum given by summed `digits` (lowest first, digit `i` weighing
/// `2^(base + i * b)`) and `flags` ranks with bits below `2^base`, rounded once to
/// `format`; `None` when those bits leave the rounding open.
pub(crate) fn resolve_refined(
    digits: &[i64],
    base: i32,
    b: i32,
    flags: i64,
    format: RoundingFormat,
) -> Option<f64> {
    let lo = round(digits, base, b, format);
    if flags == 0 {
        return Some(lo);
    }
    let mut up = [0i64; MAX_DIGITS];
    up[..digits.len()].copy_from_slice(digits);
    up[0] = up[0].checked_add(flags)?;
    let hi = round(&up[..digits.len()], base, b, format);
    (lo.to_bits() == hi.to_bits()).then_some(lo)
}

/// Bits per digit for `ranks` ranks: an `i64` holds the sum of `ranks` digits of that
/// many bits (`ranks * 2^b <= 2^63`); 53 to 62.
pub(crate) fn digit_bits(ranks: usize) -> i32 {
    let headroom = (usize::BITS - ranks.saturating_sub(1).leading_zeros()) as i32;
    (63 - headroom).clamp(53, 62)
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

    /// The digit path on one element (one value per rank), every stage as the allreduce
    /// runs it; `None` when the element goes on to the accumulator images.
    fn digit_sum(values: &[f64], format: RoundingFormat) -> Option<f64> {
        let b = digit_bits(values.len());
        let ranks = values.len() as i64;
        let low = match start(values.iter().map(|&v| key(v)).max()?, b) {
            Start::Cut(low) => low,
            Start::NegativeZero => return Some(-0.0),
            Start::General => return None,
        };
        let d = values.iter().map(|&v| first_digit(v, low)).sum::<i64>();
        if let Some(v) = resolve_first(d, low, ranks, b, format) {
            return Some(v);
        }
        let mut digits = vec![d];
        for level in 1..MAX_DIGITS as i32 {
            let cut = low - level * b;
            let (mut digit, mut flags) = (0i64, 0i64);
            for &v in values {
                let [x, f] = refine(v, cut, b);
                digit = digit.checked_add(x).expect("digits have headroom");
                flags += f;
            }
            digits.insert(0, digit);
            if let Some(v) = resolve_refined(&digits, cut, b, flags, format) {
                return Some(v);
            }
        }
        None
    }

    fn exact(values: &[f64], format: RoundingFormat) -> f64 {
        let mut acc = Accumulator::new();
        acc.add_slice(values);
        acc.round_to(format)
    }

    #[test]
    fn the_digits_round_as_the_accumulator_does() {
        let seed = 0x33;
        println!("seed {seed:#x}");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
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
            let cancel = case % 5 == 0;
            let mut values: Vec<f64> = (0..ranks)
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
            if cancel && ranks > 1 {
                // the last value cancels the first (and sometimes one more is tiny): sums
                // of zero and sums far below the values
                values[ranks - 1] = -values[0];
                if ranks > 2 && rng.random_bool(0.5) {
                    values[1] = pow2(rng.random_range(-1074..-900));
                }
            }
            for format in [RoundingFormat::F64, RoundingFormat::F32] {
                cases += 1;
                if let Some(got) = digit_sum(&values, format) {
                    fitted += 1;
                    let want = exact(&values, format);
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "seed {seed:#x} case {case}: {values:?} in {format:?}: digits {got:e}, \
                         exact {want:e}"
                    );
                }
            }
        }
        // almost every case takes the digits: the comparison above is not vacuous
        assert!(fitted * 10 > cases * 9, "{fitted} of {cases}");
    }

    #[test]
    fn ties_round_to_even_and_cancellation_gives_plus_zero() {
        let cases: &[&[f64]] = &[
            &[1.0, 2f64.powi(-53)],
            &[1.0, 2f64.powi(-53), 2f64.powi(-105)],
            &[1.0, 2f64.powi(-53), 2f64.powi(-1074)],
            &[1.0 + f64::EPSILON, 2f64.powi(-53)],
            &[-1.0, -(2f64.powi(-53))],
            &[1.5, -1.5],
            &[1e300, -1e300, 1e-300],
            &[1e300, -1e300, 5e-324],
            &[f64::MAX, f64::MAX],
            &[-f64::MAX, -f64::MAX, f64::MAX],
            &[f64::MAX, 2f64.powi(970)],
            &[f64::MAX, 2f64.powi(970), -5e-324],
            &[f64::MIN_POSITIVE, -f64::MIN_POSITIVE / 2.0],
            &[1.0, 2f64.powi(-24)],
            &[1.0, 2f64.powi(-24), 2f64.powi(-60)],
            &[3.4e38, 3.4e38],
            &[-3.0, 1.0],
            &[5e-324, 5e-324, -1e-323],
            &[0.0, -0.0],
            &[-0.0, -0.0],
            &[-0.0, 5e-324],
        ];
        let mut general = Vec::new();
        for (i, values) in cases.iter().enumerate() {
            for format in [RoundingFormat::F64, RoundingFormat::F32] {
                let Some(got) = digit_sum(values, format) else {
                    general.push((i, format));
                    continue;
                };
                let want = exact(values, format);
                assert_eq!(got.to_bits(), want.to_bits(), "{values:?} {format:?}");
            }
        }
        // left to the accumulator images: a tie with a value far below it, sums that
        // cancel far below their values and keep bits further below, and a sum a hair
        // below f64's overflow threshold
        let (f64, f32) = (RoundingFormat::F64, RoundingFormat::F32);
        let images = [(2, f64), (6, f64), (6, f32), (7, f64), (7, f32), (11, f64)];
        assert_eq!(general, images);
        assert_eq!(start(key(-0.0), 60), Start::NegativeZero);
        assert_eq!(
            start(key(0.0).max(key(-0.0)), 60),
            Start::Cut(-1022 + 1 - 60)
        );
        assert_eq!(start(key(f64::NAN), 60), Start::General);
        assert_eq!(start(key(f64::NEG_INFINITY), 60), Start::General);
        // 1.5 lies below 2^1, so a 60-bit digit from 2^-59 up holds it: one digit
        assert_eq!(start(key(1.5), 60), Start::Cut(-59));
        assert_eq!(first_digit(1.5, -59), 3 << 58);
        assert_eq!(first_digit(-1.5, -59), -(3 << 58));
        // floors: 2^-70 cut at 2^-59 is 0, its negative -1
        assert_eq!(first_digit(2f64.powi(-70), -59), 0);
        assert_eq!(first_digit(-(2f64.powi(-70)), -59), -1);
        assert_eq!(
            refine(-(2f64.powi(-70)), -119, 60),
            [(1 << 60) - (1 << 49), 0]
        );
        assert_eq!(refine(2f64.powi(-200), -119, 60), [0, 1]);
        assert_eq!(digit_bits(1), 62);
        assert_eq!(digit_bits(8), 60);
        assert_eq!(digit_bits(1023), 53);
    }
}
