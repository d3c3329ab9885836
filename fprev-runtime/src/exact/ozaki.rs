//! The Ozaki scheme: an exact dot product built from ordinary, unordered dot products.
//!
//! Each vector is cut into slices of few bits each (relative to a per-slice power of two),
//! stored as small integers in `f64`. A dot product of two such integer vectors has every
//! partial sum below 2^53, so any summation order, any blocking, any thread count gives
//! the same exact result. The slice dot products are then combined, each scaled by its
//! power of two, in the exact accumulator. This is how Mukunoki, Ozaki, Ogita and
//! Iakymchuk get reproducible BLAS results from a vendor's fast, non-reproducible kernel.

use super::accumulator::{Accumulator, LOW_EXP, NEG_ZERO_BITS};
use super::pow2;

/// One slice of a vector: `values[i] * 2^scale_exp` is the slice's part of element `i`,
/// and every `values[i]` is an integer below `2^bits`.
struct Slice {
    values: Vec<f64>,
    scale_exp: i32,
}

/// Exponent `t` with `|v| < 2^t`, for finite nonzero `v`.
fn exponent_above(v: f64) -> i32 {
    let bits = v.to_bits() & !NEG_ZERO_BITS;
    let biased = (bits >> 52) as i32;
    if biased == 0 {
        // Subnormal: the leading one is bit (63 - lz) of the fraction, worth 2^(idx - 1074).
        (63 - bits.leading_zeros() as i32) - 1074 + 1
    } else {
        biased - 1023 + 1
    }
}

/// Cuts `x` (finite values) into slices of at most `bits` bits each, until nothing is left.
fn split(x: &[f64], bits: i32) -> Vec<Slice> {
    let mut rest = x.to_vec();
    let mut slices = Vec::new();
    let mut top = max_abs(&rest);
    while top != 0.0 {
        let scale_exp = (exponent_above(top) - bits).max(-1074);
        // 2^-scale_exp in two factors, each representable, applied one after the other.
        let up_first = pow2((-scale_exp).clamp(-1022, 1023) / 2);
        let up_second = pow2(-scale_exp - (-scale_exp).clamp(-1022, 1023) / 2);
        // Magnitudes of finite doubles order like their bit patterns without the sign.
        let mut next_top_bits = 0u64;
        let values: Vec<f64> = rest
            .iter_mut()
            .map(|r| {
                let head = truncate_to(*r, scale_exp);
                *r -= head; // exact: only the bits below 2^scale_exp remain
                next_top_bits = next_top_bits.max(r.to_bits() & !NEG_ZERO_BITS);
                head * up_first * up_second // an integer below 2^bits, exactly
            })
            .collect();
        slices.push(Slice { values, scale_exp });
        top = f64::from_bits(next_top_bits);
    }
    slices
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// `v` with every bit below `2^scale_exp` cleared (rounding toward zero), on the bits.
#[inline(always)]
fn truncate_to(v: f64, scale_exp: i32) -> f64 {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let lsb_exp = biased.max(1) - 1075;
    let clear = (scale_exp - lsb_exp).clamp(0, 64);
    let kept = if clear >= 53 {
        bits & NEG_ZERO_BITS // everything is below 2^scale_exp: a signed zero
    } else {
        bits & (u64::MAX << clear)
    };
    f64::from_bits(kept)
}

/// Adds `s * 2^k` exactly (for a finite `s`).
fn add_scaled(acc: &mut Accumulator, s: f64, k: i32) {
    if !s.is_finite() {
        acc.add(s);
        return;
    }
    if s == 0.0 {
        return;
    }
    let bits = s.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as i64;
    let mantissa = (bits & ((1 << 52) - 1)) | (((biased != 0) as u64) << 52);
    let pos = biased.max(1) - 1075 + k as i64 - LOW_EXP as i64;
    let neg = (bits as i64) >> 63;
    if pos >= 0 {
        acc.add_wide(mantissa as u128, pos as u32, neg);
    } else {
        // Only reachable with an inner dot that returned a non-integer: keep what fits.
        acc.add_wide((mantissa >> (-pos).min(63)) as u128, 0, neg);
    }
}

/// Bits per slice so that a dot product of `n` slice pairs stays below 2^53.
fn slice_bits(n: usize) -> i32 {
    let log2_n = usize::BITS as i32 - (n.max(1) - 1).leading_zeros() as i32;
    ((53 - log2_n) / 2).max(1)
}

/// Elements handled in one Ozaki pass. Splitting and all slice products of a block stay in
/// cache, short blocks allow wider slices (fewer of them), and each block's slices follow
/// its own largest element. Every block's partial results are exact, so blocking changes
/// nothing in the result.
const BLOCK: usize = 1 << 13;

/// The exact dot product of equal-length finite vectors, through `inner`.
pub(crate) fn dot_into<F>(acc: &mut Accumulator, x: &[f64], y: &[f64], inner: &mut F)
where
    F: FnMut(&[f64], &[f64]) -> f64,
{
    for (bx, by) in x.chunks(BLOCK).zip(y.chunks(BLOCK)) {
        let bits = slice_bits(bx.len());
        let xs = split(bx, bits);
        let ys = split(by, bits);
        for sx in &xs {
            for sy in &ys {
                let s = inner(&sx.values, &sy.values);
                add_scaled(acc, s, sx.scale_exp + sy.scale_exp);
            }
        }
    }
    if x.is_empty() {
        return;
    }
    let all_neg_zero = x
        .iter()
        .zip(y)
        .all(|(a, b)| (a * b).to_bits() == NEG_ZERO_BITS);
    acc.note_many(all_neg_zero);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_clears_low_bits() {
        assert_eq!(truncate_to(7.75, 1), 6.0);
        assert_eq!(truncate_to(-7.75, 0), -7.0);
        assert_eq!(truncate_to(0.3, 5), 0.0);
        assert_eq!(truncate_to(5e-324, -1074), 5e-324);
    }

    #[test]
    fn slices_reassemble_the_vector() {
        let x = [1.0 / 3.0, -1e-310, 7e300, 0.0, -2.5];
        let slices = split(&x, 10);
        for (i, &v) in x.iter().enumerate() {
            let mut acc = Accumulator::new();
            for s in &slices {
                assert!(s.values[i].abs() < 1024.0 && s.values[i].fract() == 0.0);
                add_scaled(&mut acc, s.values[i], s.scale_exp);
            }
            assert_eq!(acc.finish(), v);
        }
    }

    #[test]
    fn slice_bits_keep_sums_exact() {
        assert_eq!(slice_bits(1), 26);
        assert_eq!(slice_bits(1 << 20), 16);
        assert_eq!(slice_bits(1_000_000), 16);
    }
}
