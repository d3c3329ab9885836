//! The filter's hot loops written with AVX2 and FMA intrinsics, so that the expansions
//! provably live in registers (the portable versions round-trip them through the stack on
//! every group). Callers must check that the CPU has AVX2 and FMA.

use super::{
    add_general, all_finite, as_group, spill_errors, Expansion, Narrow, LANES, SPILL_LIMIT,
};
use crate::exact::accumulator::Accumulator;
use std::arch::x86_64::*;

/// Knuth's TwoSum on four lanes.
#[inline(always)]
unsafe fn two_sum_v(a: __m256d, b: __m256d) -> (__m256d, __m256d) {
    unsafe {
        let s = _mm256_add_pd(a, b);
        let bb = _mm256_sub_pd(s, a);
        let e = _mm256_add_pd(_mm256_sub_pd(a, _mm256_sub_pd(s, bb)), _mm256_sub_pd(b, bb));
        (s, e)
    }
}

/// [`super::narrow_block`] written with AVX2 intrinsics.
#[target_feature(enable = "avx2,fma")]
#[allow(unused_unsafe)]
pub(super) unsafe fn narrow_block(
    acc: &mut Accumulator,
    exp: &mut Expansion,
    block: &[f64],
) -> usize {
    let mut spills = 0usize;
    let mut done = 0;
    let mut lanes = Narrow::new();
    unsafe {
        let mut a0 = _mm256_loadu_pd(lanes.hi.as_ptr());
        let mut a1 = _mm256_loadu_pd(lanes.hi.as_ptr().add(4));
        let mut b0 = _mm256_setzero_pd();
        let mut b1 = _mm256_setzero_pd();
        let zero = _mm256_setzero_pd();
        for group in block.chunks_exact(LANES) {
            let x0 = _mm256_loadu_pd(group.as_ptr());
            let x1 = _mm256_loadu_pd(group.as_ptr().add(4));
            let (na0, e0) = two_sum_v(a0, x0);
            let (na1, e1) = two_sum_v(a1, x1);
            let (nb0, e0) = two_sum_v(b0, e0);
            let (nb1, e1) = two_sum_v(b1, e1);
            let nz = _mm256_or_pd(
                _mm256_cmp_pd::<_CMP_NEQ_UQ>(e0, zero),
                _mm256_cmp_pd::<_CMP_NEQ_UQ>(e1, zero),
            );
            done += LANES;
            if _mm256_testz_pd(nz, nz) == 0 {
                spills += 1;
                let mut left = [0.0; LANES];
                _mm256_storeu_pd(left.as_mut_ptr(), e0);
                _mm256_storeu_pd(left.as_mut_ptr().add(4), e1);
                if !all_finite(&left) {
                    add_general(acc, as_group(group));
                } else {
                    spill_errors(acc, left);
                    (a0, a1, b0, b1) = (na0, na1, nb0, nb1);
                }
                if spills > SPILL_LIMIT {
                    break;
                }
                continue;
            }
            (a0, a1, b0, b1) = (na0, na1, nb0, nb1);
        }
        _mm256_storeu_pd(lanes.hi.as_mut_ptr(), a0);
        _mm256_storeu_pd(lanes.hi.as_mut_ptr().add(4), a1);
        _mm256_storeu_pd(lanes.lo.as_mut_ptr(), b0);
        _mm256_storeu_pd(lanes.lo.as_mut_ptr().add(4), b1);
    }
    lanes.flush_into(acc, exp);
    done
}

/// [`super::filter_block`] written with AVX2 intrinsics, so the expansion provably lives in
/// registers (the portable version round-trips it through the stack on every group).
#[target_feature(enable = "avx2,fma")]
#[allow(unused_unsafe)]
pub(super) unsafe fn filter_block(
    acc: &mut Accumulator,
    exp: &mut Expansion,
    block: &[f64],
) -> usize {
    let mut spills = 0usize;
    let mut done = 0;
    unsafe {
        let p = &mut exp.parts;
        let mut a0 = _mm256_loadu_pd(p[0].as_ptr());
        let mut a1 = _mm256_loadu_pd(p[0].as_ptr().add(4));
        let mut b0 = _mm256_loadu_pd(p[1].as_ptr());
        let mut b1 = _mm256_loadu_pd(p[1].as_ptr().add(4));
        let mut c0 = _mm256_loadu_pd(p[2].as_ptr());
        let mut c1 = _mm256_loadu_pd(p[2].as_ptr().add(4));
        let zero = _mm256_setzero_pd();
        for group in block.chunks_exact(LANES) {
            let x0 = _mm256_loadu_pd(group.as_ptr());
            let x1 = _mm256_loadu_pd(group.as_ptr().add(4));
            let (na0, e0) = two_sum_v(a0, x0);
            let (na1, e1) = two_sum_v(a1, x1);
            let (nb0, e0) = two_sum_v(b0, e0);
            let (nb1, e1) = two_sum_v(b1, e1);
            let (nc0, e0) = two_sum_v(c0, e0);
            let (nc1, e1) = two_sum_v(c1, e1);
            // Unordered-or-unequal: NaN leftovers count as spills too.
            let nz = _mm256_or_pd(
                _mm256_cmp_pd::<_CMP_NEQ_UQ>(e0, zero),
                _mm256_cmp_pd::<_CMP_NEQ_UQ>(e1, zero),
            );
            if _mm256_testz_pd(nz, nz) == 0 {
                spills += 1;
                let mut left = [0.0; LANES];
                _mm256_storeu_pd(left.as_mut_ptr(), e0);
                _mm256_storeu_pd(left.as_mut_ptr().add(4), e1);
                done += LANES;
                if !all_finite(&left) {
                    add_general(acc, as_group(group));
                } else {
                    spill_errors(acc, left);
                    (a0, a1, b0, b1, c0, c1) = (na0, na1, nb0, nb1, nc0, nc1);
                }
                if spills > SPILL_LIMIT {
                    break;
                }
                continue;
            }
            done += LANES;
            (a0, a1, b0, b1, c0, c1) = (na0, na1, nb0, nb1, nc0, nc1);
        }
        _mm256_storeu_pd(p[0].as_mut_ptr(), a0);
        _mm256_storeu_pd(p[0].as_mut_ptr().add(4), a1);
        _mm256_storeu_pd(p[1].as_mut_ptr(), b0);
        _mm256_storeu_pd(p[1].as_mut_ptr().add(4), b1);
        _mm256_storeu_pd(p[2].as_mut_ptr(), c0);
        _mm256_storeu_pd(p[2].as_mut_ptr().add(4), c1);
    }
    done
}
