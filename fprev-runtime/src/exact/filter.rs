//! The fast front end of the accumulator: small floating-point expansions that absorb
//! values with error-free transformations, so that the wide digits are rarely touched.
//!
//! Each of [`LANES`] independent lanes keeps a short expansion (a leading sum and the sum
//! of its rounding errors). Adding a value is two TwoSums; the second one's error is the
//! part the expansion could not hold. When it is zero in every lane (the common case for a
//! moderate dynamic range) the group of values is absorbed and nothing else happens, and
//! the loop vectorizes. Otherwise the leftover errors go to the wide digits; if a lane
//! overflowed or met a NaN or an infinity, the group is not absorbed at all and its values
//! take the general path instead. When leftovers are frequent (a huge dynamic range), the
//! filter is only overhead, so blocks of values go straight to the digits for a while.

use super::accumulator::{Accumulator, NEG_ZERO_BITS};

/// Independent expansions, so the loop has no carried dependency and vectorizes.
const LANES: usize = 8;
/// Values per block when deciding whether the filter pays off.
const BLOCK: usize = 1024;
/// A block with more than this many groups spilling to the digits switches to direct mode.
const SPILL_LIMIT: usize = BLOCK / LANES / 8;
/// Blocks to run in direct mode before trying the filter again (doubles on each failure).
const MAX_DIRECT_BLOCKS: usize = 64;

/// Knuth's TwoSum: `s + e == a + b` exactly, `s = fl(a + b)`, when nothing overflows.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Lane state for sums: leading sums start at `-0.0` so that a lane still at `-0.0` at the
/// end proves every value it absorbed was `-0.0` (IEEE addition keeps `-0.0` only then).
struct SumLanes {
    hi: [f64; LANES],
    lo: [f64; LANES],
}

impl SumLanes {
    fn new() -> Self {
        SumLanes {
            hi: [-0.0; LANES],
            lo: [0.0; LANES],
        }
    }

    /// Moves the lanes into the accumulator.
    fn flush(&self, acc: &mut Accumulator, absorbed_any: bool) {
        if absorbed_any {
            let all_neg_zero = self.hi.iter().all(|h| h.to_bits() == NEG_ZERO_BITS);
            acc.note_many(all_neg_zero);
        }
        for &v in self.hi.iter().chain(self.lo.iter()) {
            if v != 0.0 {
                acc.add_finite_unflagged(v);
            }
        }
    }
}

/// Absorbs one group; returns whether it spilled.
#[inline(always)]
fn sum_group(acc: &mut Accumulator, lanes: &mut SumLanes, group: &[f64; LANES]) -> bool {
    let mut hi = [0.0; LANES];
    let mut lo = [0.0; LANES];
    let mut err = [0.0; LANES];
    for j in 0..LANES {
        let (s, e1) = two_sum(lanes.hi[j], group[j]);
        let (t, e2) = two_sum(lanes.lo[j], e1);
        hi[j] = s;
        lo[j] = t;
        err[j] = e2;
    }
    let mut spill = false;
    for e in err {
        // NaN compares unequal to zero, so non-finite lanes spill too.
        spill |= e != 0.0;
    }
    if !spill {
        lanes.hi = hi;
        lanes.lo = lo;
        return false;
    }
    sum_spill(acc, lanes, group, hi, lo, err);
    true
}

#[cold]
#[inline(never)]
fn sum_spill(
    acc: &mut Accumulator,
    lanes: &mut SumLanes,
    group: &[f64; LANES],
    hi: [f64; LANES],
    lo: [f64; LANES],
    err: [f64; LANES],
) {
    if err.iter().all(|e| e.is_finite()) {
        lanes.hi = hi;
        lanes.lo = lo;
        for e in err {
            if e != 0.0 {
                acc.add_finite_unflagged(e);
            }
        }
    } else {
        for &x in group {
            acc.add(x);
        }
    }
}

#[inline(always)]
fn add_slice_kernel(acc: &mut Accumulator, xs: &[f64]) {
    let mut lanes = SumLanes::new();
    let mut direct_blocks = 0usize;
    let mut backoff = 1usize;
    let mut blocks = xs.chunks_exact(BLOCK);
    for block in blocks.by_ref() {
        if direct_blocks > 0 {
            direct_blocks -= 1;
            add_direct(acc, block);
            continue;
        }
        let mut spills = 0usize;
        for group in block.chunks_exact(LANES) {
            let group: &[f64; LANES] = group.try_into().unwrap_or(&[0.0; LANES]);
            spills += sum_group(acc, &mut lanes, group) as usize;
        }
        if spills > SPILL_LIMIT {
            direct_blocks = backoff;
            backoff = (backoff * 2).min(MAX_DIRECT_BLOCKS);
        } else {
            backoff = 1;
        }
    }
    let rest = blocks.remainder();
    let mut groups = rest.chunks_exact(LANES);
    for group in groups.by_ref() {
        let group: &[f64; LANES] = group.try_into().unwrap_or(&[0.0; LANES]);
        sum_group(acc, &mut lanes, group);
    }
    for &x in groups.remainder() {
        acc.add(x);
    }
    lanes.flush(acc, xs.len() >= LANES);
}

/// Adds values one by one to the digits (the filter would only get in the way).
#[inline(always)]
fn add_direct(acc: &mut Accumulator, xs: &[f64]) {
    let mut all_neg_zero = true;
    for &x in xs {
        if x.is_finite() {
            all_neg_zero &= x.to_bits() == NEG_ZERO_BITS;
            acc.add_finite_unflagged(x);
        } else {
            acc.add(x);
        }
    }
    acc.note_many(all_neg_zero);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn add_slice_avx2(acc: &mut Accumulator, xs: &[f64]) {
    add_slice_kernel(acc, xs)
}

/// Adds every value of `xs` to `acc` exactly, using AVX2 where the CPU has it.
pub(crate) fn add_slice(acc: &mut Accumulator, xs: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function was compiled for.
        unsafe { add_slice_avx2(acc, xs) };
        return;
    }
    add_slice_kernel(acc, xs)
}

/// Lane state for dot products: products and their FMA errors in separate expansions.
struct DotLanes {
    hi: [f64; LANES],
    lo: [f64; LANES],
    err_hi: [f64; LANES],
    err_lo: [f64; LANES],
}

/// Products at least this large (and finite) have an exactly representable FMA error.
const SAFE_PRODUCT: f64 = 2.004168360008973e-292; // 2^-968

#[inline(always)]
fn dot_group(acc: &mut Accumulator, lanes: &mut DotLanes, x: &[f64; LANES], y: &[f64; LANES]) {
    let mut next = [[0.0; LANES]; 4];
    let mut spill_a = [0.0; LANES];
    let mut spill_b = [0.0; LANES];
    let mut unsafe_product = false;
    for j in 0..LANES {
        let p = x[j] * y[j];
        let e = x[j].mul_add(y[j], -p);
        // Also false for NaN and infinity.
        unsafe_product |= !(p.abs() >= SAFE_PRODUCT && p.abs() < f64::INFINITY);
        let (s, e1) = two_sum(lanes.hi[j], p);
        let (t, e2) = two_sum(lanes.lo[j], e1);
        let (u, e3) = two_sum(lanes.err_hi[j], e);
        let (v, e4) = two_sum(lanes.err_lo[j], e3);
        next[0][j] = s;
        next[1][j] = t;
        next[2][j] = u;
        next[3][j] = v;
        spill_a[j] = e2;
        spill_b[j] = e4;
    }
    let mut spill = unsafe_product;
    for j in 0..LANES {
        spill |= spill_a[j] != 0.0;
        spill |= spill_b[j] != 0.0;
    }
    if !spill {
        [lanes.hi, lanes.lo, lanes.err_hi, lanes.err_lo] = next;
        return;
    }
    dot_spill(acc, lanes, x, y, next, spill_a, spill_b, unsafe_product);
}

#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn dot_spill(
    acc: &mut Accumulator,
    lanes: &mut DotLanes,
    x: &[f64; LANES],
    y: &[f64; LANES],
    next: [[f64; LANES]; 4],
    spill_a: [f64; LANES],
    spill_b: [f64; LANES],
    unsafe_product: bool,
) {
    let finite = spill_a.iter().chain(spill_b.iter()).all(|e| e.is_finite());
    if finite && !unsafe_product {
        [lanes.hi, lanes.lo, lanes.err_hi, lanes.err_lo] = next;
        for e in spill_a.into_iter().chain(spill_b) {
            if e != 0.0 {
                acc.add_finite_unflagged(e);
            }
        }
    } else {
        for j in 0..LANES {
            acc.add_product(x[j], y[j]);
        }
    }
}

#[inline(always)]
fn add_dot_kernel(acc: &mut Accumulator, x: &[f64], y: &[f64]) {
    let mut lanes = DotLanes {
        hi: [-0.0; LANES],
        lo: [0.0; LANES],
        err_hi: [0.0; LANES],
        err_lo: [0.0; LANES],
    };
    let mut xs = x.chunks_exact(LANES);
    let mut ys = y.chunks_exact(LANES);
    for (gx, gy) in xs.by_ref().zip(ys.by_ref()) {
        let gx: &[f64; LANES] = gx.try_into().unwrap_or(&[0.0; LANES]);
        let gy: &[f64; LANES] = gy.try_into().unwrap_or(&[0.0; LANES]);
        dot_group(acc, &mut lanes, gx, gy);
    }
    for (&a, &b) in xs.remainder().iter().zip(ys.remainder()) {
        acc.add_product(a, b);
    }
    if x.len() >= LANES {
        // Absorbed products are never zero, so a lane left at -0.0 absorbed nothing.
        let all_neg_zero = lanes.hi.iter().all(|h| h.to_bits() == NEG_ZERO_BITS);
        acc.note_many(all_neg_zero);
    }
    let parts = [lanes.hi, lanes.lo, lanes.err_hi, lanes.err_lo];
    for v in parts.into_iter().flatten() {
        if v != 0.0 {
            acc.add_finite_unflagged(v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn add_dot_avx2(acc: &mut Accumulator, x: &[f64], y: &[f64]) {
    add_dot_kernel(acc, x, y)
}

/// Adds the exact dot product of two slices of equal length.
pub(crate) fn add_dot(acc: &mut Accumulator, x: &[f64], y: &[f64]) {
    debug_assert_eq!(x.len(), y.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function was compiled for.
        unsafe { add_dot_avx2(acc, x, y) };
        return;
    }
    add_dot_kernel(acc, x, y)
}
