//! The filter's hot loops written with AVX2 and FMA intrinsics, so that the expansions
//! provably live in registers (the portable versions round-trip them through the stack on
//! every group). Callers must check that the CPU has AVX2 and FMA.

use super::{
    add_general, add_products, all_finite, as_group, spill_errors, DotLanes, Expansion, Narrow,
    LANES, SAFE_PRODUCT, SPILL_LIMIT,
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

/// [`super::dot_filter_block`] written with AVX2 and FMA intrinsics.
#[target_feature(enable = "avx2,fma")]
#[allow(unused_unsafe)]
pub(super) unsafe fn dot_filter_block(
    acc: &mut Accumulator,
    lanes: &mut DotLanes,
    x: &[f64],
    y: &[f64],
) -> usize {
    /// One lane-quad of a three-component expansion plus `v`; returns the leftover.
    #[inline(always)]
    unsafe fn plus(e: &mut [__m256d; 3], v: __m256d) -> __m256d {
        unsafe {
            let (a, r) = two_sum_v(e[0], v);
            let (b, r) = two_sum_v(e[1], r);
            let (c, r) = two_sum_v(e[2], r);
            *e = [a, b, c];
            r
        }
    }

    let mut spills = 0usize;
    let mut done = 0;
    unsafe {
        let load = |e: &Expansion, half: usize| -> [__m256d; 3] {
            [
                _mm256_loadu_pd(e.parts[0].as_ptr().add(4 * half)),
                _mm256_loadu_pd(e.parts[1].as_ptr().add(4 * half)),
                _mm256_loadu_pd(e.parts[2].as_ptr().add(4 * half)),
            ]
        };
        let mut p0 = load(&lanes.products, 0);
        let mut p1 = load(&lanes.products, 1);
        let mut e0 = load(&lanes.errors, 0);
        let mut e1 = load(&lanes.errors, 1);
        let zero = _mm256_setzero_pd();
        let abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
        let safe_min = _mm256_set1_pd(SAFE_PRODUCT);
        let inf = _mm256_set1_pd(f64::INFINITY);
        for (gx, gy) in x.chunks_exact(LANES).zip(y.chunks_exact(LANES)) {
            let x0 = _mm256_loadu_pd(gx.as_ptr());
            let x1 = _mm256_loadu_pd(gx.as_ptr().add(4));
            let y0 = _mm256_loadu_pd(gy.as_ptr());
            let y1 = _mm256_loadu_pd(gy.as_ptr().add(4));
            let q0 = _mm256_mul_pd(x0, y0);
            let q1 = _mm256_mul_pd(x1, y1);
            let f0 = _mm256_fmsub_pd(x0, y0, q0);
            let f1 = _mm256_fmsub_pd(x1, y1, q1);
            let (mut np0, mut np1, mut ne0, mut ne1) = (p0, p1, e0, e1);
            let l0 = plus(&mut np0, q0);
            let l1 = plus(&mut np1, q1);
            let l2 = plus(&mut ne0, f0);
            let l3 = plus(&mut ne1, f1);
            // Unsafe products (tiny, huge, NaN) fail the ordered comparisons.
            let a0 = _mm256_and_pd(q0, abs_mask);
            let a1 = _mm256_and_pd(q1, abs_mask);
            let bad = _mm256_or_pd(
                _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_NGE_UQ>(a0, safe_min),
                    _mm256_cmp_pd::<_CMP_NGE_UQ>(a1, safe_min),
                ),
                _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_EQ_OQ>(a0, inf),
                    _mm256_cmp_pd::<_CMP_EQ_OQ>(a1, inf),
                ),
            );
            let left = _mm256_or_pd(
                _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_NEQ_UQ>(l0, zero),
                    _mm256_cmp_pd::<_CMP_NEQ_UQ>(l1, zero),
                ),
                _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_NEQ_UQ>(l2, zero),
                    _mm256_cmp_pd::<_CMP_NEQ_UQ>(l3, zero),
                ),
            );
            let any = _mm256_or_pd(bad, left);
            if _mm256_testz_pd(any, any) == 0 {
                spills += 1;
                let mut rest = [0.0; 2 * LANES];
                _mm256_storeu_pd(rest.as_mut_ptr(), l0);
                _mm256_storeu_pd(rest.as_mut_ptr().add(4), l1);
                _mm256_storeu_pd(rest.as_mut_ptr().add(8), l2);
                _mm256_storeu_pd(rest.as_mut_ptr().add(12), l3);
                done += LANES;
                let finite = rest.iter().all(|v| v.is_finite());
                if _mm256_testz_pd(bad, bad) == 0 || !finite {
                    add_products(acc, as_group(gx), as_group(gy));
                } else {
                    spill_errors(acc, *as_group(&rest[..LANES]));
                    spill_errors(acc, *as_group(&rest[LANES..]));
                    (p0, p1, e0, e1) = (np0, np1, ne0, ne1);
                }
                if 2 * spills > SPILL_LIMIT {
                    break;
                }
                continue;
            }
            done += LANES;
            (p0, p1, e0, e1) = (np0, np1, ne0, ne1);
        }
        let store = |e: &mut Expansion, half: usize, v: [__m256d; 3]| {
            for (k, part) in v.into_iter().enumerate() {
                _mm256_storeu_pd(e.parts[k].as_mut_ptr().add(4 * half), part);
            }
        };
        store(&mut lanes.products, 0, p0);
        store(&mut lanes.products, 1, p1);
        store(&mut lanes.errors, 0, e0);
        store(&mut lanes.errors, 1, e1);
    }
    done
}
