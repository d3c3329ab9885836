//! Exact dot products at near the speed of a plain one.
//!
//! Each product is split without error by an FMA, `x*y = p + e`, and both parts go into
//! fixed-point bins held in ordinary doubles (Demmel and Nguyen's binned summation). For
//! a block of products with a known bound, a few *levels* are set up: level `j` is a
//! running sum that starts at `1.5 * 2^K_j`, with `K_0` above anything the block can add
//! up to and each next `K_j` [`LEVEL_BITS`] lower. Adding `v` to a level is three
//! additions that are exact by construction: `s = S + v` rounds `v` to the level's grid,
//! `q = s - S` is that rounded part, and `r = v - q` is what is left for the next level.
//! The running sum never leaves its binade, so nothing is lost; when the last level
//! leaves nothing over, the levels hold the block's exact sum. The products run through
//! levels `0..P`, their errors through `1..E`; both counts start small and grow when a
//! block leaves something over (a moderate range needs four of each: 24 additions for
//! four products, with no comparison on the way, where TwoSum expansions need 36).
//!
//! The bound comes from the previous block (four times its largest product); a block
//! that exceeds it runs again with its own. A block whose products are NaN, infinite,
//! too large or too small for the levels, lose bits to underflow, or need more than five
//! levels goes to the exponent bins instead.

use super::bins::Bins;
use super::{two_sum, FilterSchedule};
use crate::exact::accumulator::{Accumulator, NEG_ZERO_BITS};
use crate::exact::pow2;

/// Lanes of the kernel: one AVX2 vector.
const LANES: usize = 4;
/// Products per block: every level of a lane receives at most `2 * BLOCK / LANES` values.
const BLOCK: usize = 256;
/// Most levels a chain may use.
const MAX_LEVELS: usize = 5;
/// Grids of the levels: the products use grids `0..P`, their errors (at most 2^-53 of a
/// product) the next ones down, `1..E + 1`.
const GRIDS: usize = MAX_LEVELS + 1;
/// Levels tried first (enough for factors within a factor of a few of each other); a
/// block that needs more raises the count for the rest of the call.
const FIRST_LEVELS: Levels = Levels {
    products: 2,
    errors: 2,
};
/// Blocks after which the level counts go back to [`FIRST_LEVELS`], so that one unusual
/// block does not slow down the rest of a long call.
const LEVELS_RESET: u32 = 1024;
/// Bits between consecutive grids: 53, less the headroom for the `BLOCK / LANES = 2^6`
/// additions each level of a lane receives and two guard bits.
const LEVEL_BITS: i32 = 53 - 8;
/// Headroom of the first product level over the bound.
const FIRST_HEADROOM: i32 = 8;
/// Products at least this large have an exactly representable FMA error.
const SAFE_PRODUCT: f64 = 2.004168360008973e-292; // 2^-969
/// Bounds on the block's largest product for which every level's grid is a normal number
/// and the first level's running sum stays finite.
const LEAST_BOUND: f64 = 2.3432762717119234e-243; // 2^-806
const MOST_BOUND: f64 = 1.0972248137587377e304; // 2^1010
/// The next block's bound, in multiples of this block's largest product.
const BOUND_MARGIN: f64 = 64.0;
/// Components of the running total above this are emptied into the digits between blocks.
const FLUSH_ABOVE: f64 = 1.0715086071862673e301; // 2^1000

/// How many levels each chain runs through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Levels {
    /// The products use grids `0..products`.
    pub(super) products: usize,
    /// Their FMA errors use grids `1..errors + 1`.
    pub(super) errors: usize,
}

/// A block's sum per grid and lane, as the kernels return it.
pub(super) struct BlockSum {
    /// `totals[g][lane]`: what the levels on grid `g` of the lane received, exactly
    /// (unless `added`).
    pub(super) totals: [[f64; LANES]; GRIDS],
    /// The products left something after their last level (or one was NaN).
    pub(super) products_left: bool,
    /// The errors left something after their last level.
    pub(super) errors_left: bool,
    /// The smallest product magnitude seen (zero products count).
    pub(super) smallest: f64,
    /// The largest product magnitude seen (NaN is not seen).
    pub(super) largest: f64,
    /// Whether the kernel already added the totals to the running total (the common
    /// case: within the bound, complete, no product near underflow, a nonzero sum).
    pub(super) added: bool,
}

impl BlockSum {
    /// The totals of the levels' running sums, for the kernels' slow path.
    fn from_sums(
        products: &[[f64; LANES]],
        errors: &[[f64; LANES]],
        starts: &[f64; GRIDS],
        left: [bool; 2],
        smallest: f64,
        largest: f64,
    ) -> BlockSum {
        let mut totals = [[0.0; LANES]; GRIDS];
        for (offset, sums) in [(0, products), (1, errors)] {
            for (g, sum) in sums.iter().enumerate() {
                for (t, v) in totals[g + offset].iter_mut().zip(sum) {
                    // Exact: the sum and its start lie in the same binade.
                    *t += *v - starts[g + offset];
                }
            }
        }
        BlockSum {
            totals,
            products_left: left[0],
            errors_left: left[1],
            smallest,
            largest,
            added: false,
        }
    }
}

/// How a kernel runs over a block: the levels' starting values, made for products at
/// most `bound` in magnitude, and how many levels each chain uses.
pub(super) struct LevelPlan {
    pub(super) starts: [f64; GRIDS],
    pub(super) bound: f64,
    pub(super) levels: Levels,
}

/// The starting values `1.5 * 2^K_g` of the levels on each grid for a block whose
/// products are at most `bound` in magnitude; `None` where a grid would leave the normal
/// range.
fn starts(bound: f64) -> Option<[f64; GRIDS]> {
    if !(LEAST_BOUND..MOST_BOUND).contains(&bound) {
        return None;
    }
    // bound < 2^e with bound normal.
    let e = ((bound.to_bits() >> 52) & 0x7FF) as i32 - 1022;
    let k0 = e + FIRST_HEADROOM;
    let mut starts = [0.0; GRIDS];
    for (j, s) in starts.iter_mut().enumerate() {
        *s = 1.5 * pow2(k0 - LEVEL_BITS * j as i32);
    }
    Some(starts)
}

/// `max` that skips NaN (the kernels catch NaN as a remainder).
#[inline(always)]
fn max_skip_nan(m: f64, v: f64) -> f64 {
    if v > m {
        v
    } else {
        m
    }
}

/// Adds `v` to a level; returns the remainder for the next one.
#[inline(always)]
fn level(s: &mut f64, v: f64) -> f64 {
    let t = *s + v;
    let q = t - *s;
    *s = t;
    v - q
}

/// The portable kernel over one block (a multiple of [`LANES`] long, at most [`BLOCK`]).
/// The caller adds the totals.
fn level_block(x: &[f64], y: &[f64], plan: &LevelPlan) -> BlockSum {
    let (starts, levels) = (&plan.starts, plan.levels);
    let mut products = [[0.0; LANES]; MAX_LEVELS];
    let mut errors = [[0.0; LANES]; MAX_LEVELS];
    for (g, (p, e)) in products.iter_mut().zip(&mut errors).enumerate() {
        *p = [starts[g]; LANES];
        *e = [starts[g + 1]; LANES];
    }
    let (mut left_p, mut left_e) = (0u64, 0u64);
    let (mut smallest, mut largest) = (f64::INFINITY, 0.0);
    for (gx, gy) in x.chunks_exact(LANES).zip(y.chunks_exact(LANES)) {
        for j in 0..LANES {
            let p = gx[j] * gy[j];
            let e = gx[j].mul_add(gy[j], -p);
            smallest = smallest.min(p.abs());
            largest = max_skip_nan(largest, p.abs());
            let mut r = p;
            for sum in products[..levels.products].iter_mut() {
                r = level(&mut sum[j], r);
            }
            let mut g = e;
            for sum in errors[..levels.errors].iter_mut() {
                g = level(&mut sum[j], g);
            }
            left_p |= r.to_bits();
            left_e |= g.to_bits();
        }
    }
    // A remainder of -0.0 is nothing left: only the sign bit is ignored.
    let left = [left_p & !NEG_ZERO_BITS != 0, left_e & !NEG_ZERO_BITS != 0];
    BlockSum::from_sums(
        &products[..levels.products],
        &errors[..levels.errors],
        starts,
        left,
        smallest,
        largest,
    )
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! [`super::level_block`] with AVX2 and FMA intrinsics, one version per pair of level
    //! counts so that the levels stay in registers; the block's totals go into the running
    //! total without leaving them.

    use super::{BlockSum, LevelPlan, Total, BLOCK, GRIDS, LANES, SAFE_PRODUCT};
    use crate::exact::accumulator::Accumulator;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn level(s: &mut __m256d, v: __m256d) -> __m256d {
        unsafe {
            let t = _mm256_add_pd(*s, v);
            let q = _mm256_sub_pd(t, *s);
            *s = t;
            _mm256_sub_pd(v, q)
        }
    }

    /// Knuth's TwoSum on four lanes.
    #[inline(always)]
    unsafe fn two_sum(a: __m256d, b: __m256d) -> (__m256d, __m256d) {
        unsafe {
            let s = _mm256_add_pd(a, b);
            let bb = _mm256_sub_pd(s, a);
            let e = _mm256_add_pd(_mm256_sub_pd(a, _mm256_sub_pd(s, bb)), _mm256_sub_pd(b, bb));
            (s, e)
        }
    }

    /// Whether any bit but the sign bits is set.
    #[inline(always)]
    unsafe fn any_magnitude(v: __m256d, abs: __m256d) -> bool {
        unsafe {
            let v = _mm256_castpd_si256(_mm256_and_pd(v, abs));
            _mm256_testz_si256(v, v) == 0
        }
    }

    #[inline(always)]
    unsafe fn fold(v: __m256d, f: impl Fn(f64, f64) -> f64, init: f64) -> f64 {
        unsafe {
            let mut lanes = [0.0; LANES];
            _mm256_storeu_pd(lanes.as_mut_ptr(), v);
            lanes.into_iter().fold(init, f)
        }
    }

    // Over 100 lines because it is the exact dot's hot loop, kept as one function: the
    // level sums live in AVX2 registers across the whole loop, which helpers would have
    // to pass through memory or inline under the same target features.
    #[target_feature(enable = "avx2,fma")]
    #[allow(unused_unsafe)]
    unsafe fn run<const P: usize, const E: usize>(
        x: &[f64],
        y: &[f64],
        plan: &LevelPlan,
        total: &mut Total,
        acc: &mut Accumulator,
    ) -> BlockSum {
        let (starts, bound) = (&plan.starts, plan.bound);
        unsafe {
            let mut sp = [_mm256_setzero_pd(); P];
            for (reg, &start) in sp.iter_mut().zip(starts) {
                *reg = _mm256_set1_pd(start);
            }
            let mut se = [_mm256_setzero_pd(); E];
            for (reg, &start) in se.iter_mut().zip(&starts[1..]) {
                *reg = _mm256_set1_pd(start);
            }
            let abs = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
            let (mut left_p, mut left_e) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            let mut smallest = _mm256_set1_pd(f64::INFINITY);
            let mut largest = _mm256_setzero_pd();
            for (gx, gy) in x.chunks_exact(LANES).zip(y.chunks_exact(LANES)) {
                // The next block, while this one computes.
                _mm_prefetch::<_MM_HINT_T0>(gx.as_ptr().wrapping_add(BLOCK).cast());
                _mm_prefetch::<_MM_HINT_T0>(gy.as_ptr().wrapping_add(BLOCK).cast());
                let xv = _mm256_loadu_pd(gx.as_ptr());
                let yv = _mm256_loadu_pd(gy.as_ptr());
                let p = _mm256_mul_pd(xv, yv);
                let e = _mm256_fmsub_pd(xv, yv, p);
                let a = _mm256_and_pd(p, abs);
                smallest = _mm256_min_pd(smallest, a);
                // With a NaN operand `max` returns the second one: the running maximum.
                largest = _mm256_max_pd(a, largest);
                let mut r = p;
                for reg in sp.iter_mut() {
                    r = level(reg, r);
                }
                let mut g = e;
                for reg in se.iter_mut() {
                    g = level(reg, g);
                }
                left_p = _mm256_or_pd(left_p, r);
                left_e = _mm256_or_pd(left_e, g);
            }
            let left = [any_magnitude(left_p, abs), any_magnitude(left_e, abs)];
            let smallest = fold(smallest, f64::min, f64::INFINITY);
            let largest = fold(largest, f64::max, 0.0);
            let mut totals = [_mm256_setzero_pd(); GRIDS];
            for (g, reg) in sp.iter().enumerate() {
                // Exact: both lie in the same binade.
                totals[g] = _mm256_sub_pd(*reg, _mm256_set1_pd(starts[g]));
            }
            for (g, reg) in se.iter().enumerate() {
                let t = _mm256_sub_pd(*reg, _mm256_set1_pd(starts[g + 1]));
                // Two multiples of the grid below 2^(K_g - 1) each: exact.
                totals[g + 1] = _mm256_add_pd(totals[g + 1], t);
            }
            let nonzero = totals
                .iter()
                .fold(_mm256_setzero_pd(), |m, t| _mm256_or_pd(m, *t));
            let fast = largest <= bound
                && left == [false, false]
                && smallest >= SAFE_PRODUCT
                && any_magnitude(nonzero, abs);
            if !fast {
                let (mut products, mut errors) = ([[0.0; LANES]; P], [[0.0; LANES]; E]);
                for (sum, reg) in products.iter_mut().zip(sp) {
                    _mm256_storeu_pd(sum.as_mut_ptr(), reg);
                }
                for (sum, reg) in errors.iter_mut().zip(se) {
                    _mm256_storeu_pd(sum.as_mut_ptr(), reg);
                }
                return BlockSum::from_sums(&products, &errors, starts, left, smallest, largest);
            }
            let used = P.max(E + 1);
            let mut spill = _mm256_setzero_pd();
            let mut leftovers = [_mm256_setzero_pd(); GRIDS];
            for ((t, l), parts) in totals[..used]
                .iter()
                .zip(&mut leftovers)
                .zip(&mut total.parts)
            {
                let (a, r) = two_sum(_mm256_loadu_pd(parts[0].as_ptr()), *t);
                let (b, r) = two_sum(_mm256_loadu_pd(parts[1].as_ptr()), r);
                let (c, r) = two_sum(_mm256_loadu_pd(parts[2].as_ptr()), r);
                for (dst, reg) in parts.iter_mut().zip([a, b, c]) {
                    _mm256_storeu_pd(dst.as_mut_ptr(), reg);
                }
                *l = r;
                spill = _mm256_or_pd(spill, r);
            }
            if any_magnitude(spill, abs) {
                let mut values = [[0.0; LANES]; GRIDS];
                for (v, reg) in values.iter_mut().zip(leftovers) {
                    _mm256_storeu_pd(v.as_mut_ptr(), reg);
                }
                total.spill(acc, &values);
            }
            total.check(acc);
            BlockSum {
                totals: [[0.0; LANES]; GRIDS],
                products_left: false,
                errors_left: false,
                smallest,
                largest,
                added: true,
            }
        }
    }

    /// The kernel for the given level counts (2 to 5 each).
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn level_block(
        x: &[f64],
        y: &[f64],
        plan: &LevelPlan,
        total: &mut Total,
        acc: &mut Accumulator,
    ) -> BlockSum {
        macro_rules! dispatch {
            ($(($p:literal, $e:literal)),*) => {
                match (plan.levels.products, plan.levels.errors) {
                    $(($p, $e) => unsafe { run::<$p, $e>(x, y, plan, total, acc) },)*
                    _ => unsafe { run::<5, 5>(x, y, plan, total, acc) },
                }
            };
        }
        dispatch!(
            (2, 2),
            (3, 2),
            (4, 2),
            (5, 2),
            (2, 3),
            (3, 3),
            (4, 3),
            (5, 3),
            (2, 4),
            (3, 4),
            (4, 4),
            (5, 4),
            (2, 5),
            (3, 5),
            (4, 5)
        )
    }
}

/// The running total of the blocks' level sums: a three-component expansion per grid
/// and lane. Grid `g` of every block has about the same magnitude, so each expansion
/// sees values of one magnitude and rarely has anything left over.
struct Total {
    parts: [[[f64; LANES]; 3]; GRIDS],
}

impl Total {
    fn new() -> Self {
        Total {
            parts: [[[0.0; LANES]; 3]; GRIDS],
        }
    }

    /// Adds a block's totals; what the expansions cannot hold goes to the digits.
    fn add(&mut self, acc: &mut Accumulator, totals: &[[f64; LANES]; GRIDS]) {
        let mut left = [[0.0; LANES]; GRIDS];
        for ((level, parts), l) in totals.iter().zip(&mut self.parts).zip(&mut left) {
            for (j, (&v, l)) in level.iter().zip(l).enumerate() {
                let (a, r) = two_sum(parts[0][j], v);
                let (b, r) = two_sum(parts[1][j], r);
                let (c, r) = two_sum(parts[2][j], r);
                (parts[0][j], parts[1][j], parts[2][j]) = (a, b, c);
                *l = r;
            }
        }
        self.spill(acc, &left);
        self.check(acc);
    }

    /// Moves the leftovers of an addition to the digits.
    #[cold]
    fn spill(&self, acc: &mut Accumulator, left: &[[f64; LANES]; GRIDS]) {
        for &v in left.iter().flatten().filter(|v| **v != 0.0) {
            acc.add_finite_unflagged(v);
        }
    }

    /// Empties the expansions into the digits when they grow large enough that the next
    /// block could overflow them.
    #[inline(always)]
    fn check(&mut self, acc: &mut Accumulator) {
        if self.parts[0][0].iter().any(|v| v.abs() > FLUSH_ABOVE) {
            self.flush(acc);
        }
    }

    fn flush(&mut self, acc: &mut Accumulator) {
        for v in self.parts.iter_mut().flatten().flatten() {
            if *v != 0.0 {
                acc.add_finite_unflagged(*v);
            }
            *v = 0.0;
        }
    }
}

/// Whether some product of the block lost bits to underflow: smaller than
/// [`SAFE_PRODUCT`] (its FMA error is not exact) and not zero because a factor is.
fn has_tiny_product(x: &[f64], y: &[f64]) -> bool {
    x.iter()
        .zip(y)
        .any(|(&a, &b)| (a * b).abs() < SAFE_PRODUCT && a != 0.0 && b != 0.0)
}

/// Records the products of a block whose exact sum is zero: the result stays `-0.0` only
/// if every product was `-0.0`.
fn note_zero_block(acc: &mut Accumulator, x: &[f64], y: &[f64]) {
    let all_neg_zero = x
        .iter()
        .zip(y)
        .all(|(&a, &b)| (a * b).to_bits() == NEG_ZERO_BITS);
    acc.note_many(all_neg_zero);
}

/// Products straight to the exponent bins, each as its FMA split; a block with a product
/// whose split is not exact (too small, NaN, infinite) takes the general path.
fn dot_direct(acc: &mut Accumulator, bins: &mut Option<Bins>, x: &[f64], y: &[f64]) {
    let mut parts = [0.0; 2 * BLOCK];
    let n = x.len();
    debug_assert!(n <= BLOCK);
    let mut exact = true;
    for (j, (&a, &b)) in x.iter().zip(y).enumerate() {
        let p = a * b;
        parts[j] = p;
        parts[n + j] = a.mul_add(b, -p);
        exact &= (p.abs() >= SAFE_PRODUCT && p.abs() < f64::INFINITY) || a == 0.0 || b == 0.0;
    }
    if exact {
        bins.get_or_insert_with(Bins::new).add(acc, &parts[..2 * n]);
        acc.note_many(parts[..n].iter().all(|p| p.to_bits() == NEG_ZERO_BITS));
    } else {
        for (&a, &b) in x.iter().zip(y) {
            acc.add_product(a, b);
        }
    }
}

/// A block kernel: portable, or AVX2 where the CPU has it.
trait Kernel {
    /// Runs the levels over a block.
    fn block(
        &self,
        x: &[f64],
        y: &[f64],
        plan: &LevelPlan,
        total: &mut Total,
        acc: &mut Accumulator,
    ) -> BlockSum;
}

struct Portable;

impl Kernel for Portable {
    fn block(
        &self,
        x: &[f64],
        y: &[f64],
        plan: &LevelPlan,
        _total: &mut Total,
        _acc: &mut Accumulator,
    ) -> BlockSum {
        level_block(x, y, plan)
    }
}

/// The AVX2 and FMA kernels; only made where the CPU has both.
#[cfg(target_arch = "x86_64")]
struct Avx2(());

#[cfg(target_arch = "x86_64")]
impl Kernel for Avx2 {
    #[inline(always)]
    fn block(
        &self,
        x: &[f64],
        y: &[f64],
        plan: &LevelPlan,
        total: &mut Total,
        acc: &mut Accumulator,
    ) -> BlockSum {
        // SAFETY: an `Avx2` exists only where the CPU has AVX2 and FMA.
        unsafe { avx2::level_block(x, y, plan, total, acc) }
    }
}

/// The dot product driver's state across blocks.
struct DotState {
    total: Total,
    levels: Levels,
    blocks: u32,
    /// The bound for the next block's products (0 when there is none yet).
    bound: f64,
    mode: FilterSchedule,
    bins: Option<Bins>,
}

impl DotState {
    fn new() -> Self {
        DotState {
            total: Total::new(),
            levels: FIRST_LEVELS,
            blocks: 0,
            bound: 0.0,
            mode: FilterSchedule::new(),
            bins: None,
        }
    }

    /// Adds one block (a multiple of [`LANES`], at most [`BLOCK`] long, of which the
    /// first `real` products are the caller's and the rest zero padding) with the level
    /// kernel; returns `false`, having added nothing, when the block needs direct mode.
    #[inline(always)]
    fn try_block<K: Kernel>(
        &mut self,
        acc: &mut Accumulator,
        x: &[f64],
        y: &[f64],
        real: usize,
        kernel: &K,
    ) -> bool {
        self.blocks += 1;
        if self.blocks % LEVELS_RESET == 0 {
            self.levels = FIRST_LEVELS;
        }
        let mut bound = self.bound;
        if bound == 0.0 {
            let largest = x
                .iter()
                .zip(y)
                .fold(0.0, |m, (a, b)| max_skip_nan(m, (a * b).abs()));
            if largest == 0.0 {
                if has_tiny_product(x, y) {
                    return false;
                }
                note_zero_block(acc, &x[..real], &y[..real]);
                return true;
            }
            bound = largest;
        }
        loop {
            let Some(starts) = starts(bound) else {
                self.bound = 0.0;
                return false;
            };
            let plan = LevelPlan {
                starts,
                bound,
                levels: self.levels,
            };
            let sum = kernel.block(x, y, &plan, &mut self.total, acc);
            // Within the bound, the next block's bound follows this one's products; a
            // block without nonzero products keeps the old one.
            if sum.largest > 0.0 {
                self.bound = BOUND_MARGIN * sum.largest;
            }
            if sum.added {
                acc.note_many(false);
                return true;
            }
            if sum.largest > bound {
                // The levels were set up for smaller products: run again with the block's own.
                bound = sum.largest;
                continue;
            }
            if sum.products_left || sum.errors_left {
                let before = self.levels;
                if sum.products_left {
                    self.levels.products = (self.levels.products + 1).min(MAX_LEVELS);
                }
                if sum.errors_left {
                    self.levels.errors = (self.levels.errors + 1).min(MAX_LEVELS);
                }
                if self.levels == before {
                    return false;
                }
                continue;
            }
            if sum.smallest < SAFE_PRODUCT && has_tiny_product(x, y) {
                return false;
            }
            if sum.totals.iter().flatten().all(|&v| v == 0.0) {
                note_zero_block(acc, &x[..real], &y[..real]);
            } else {
                acc.note_many(false);
                self.total.add(acc, &sum.totals);
            }
            return true;
        }
    }

    #[inline(always)]
    fn block<K: Kernel>(&mut self, acc: &mut Accumulator, x: &[f64], y: &[f64], kernel: &K) {
        if self.mode.take_direct() {
            dot_direct(acc, &mut self.bins, x, y);
            return;
        }
        let done = self.try_block(acc, x, y, x.len(), kernel);
        if !done {
            dot_direct(acc, &mut self.bins, x, y);
        }
        self.mode.wide(done);
    }
}

#[inline(always)]
fn add_dot_kernel<K: Kernel>(
    acc: &mut Accumulator,
    x: &[f64],
    y: &[f64],
    kernel: K,
    state: &mut DotState,
) {
    if x.len() < 2 * LANES {
        for (&a, &b) in x.iter().zip(y) {
            acc.add_product(a, b);
        }
        return;
    }
    let mut bx = x.chunks_exact(BLOCK);
    let mut by = y.chunks_exact(BLOCK);
    for (cx, cy) in bx.by_ref().zip(by.by_ref()) {
        state.block(acc, cx, cy, &kernel);
    }
    let (rx, ry) = (bx.remainder(), by.remainder());
    if !rx.is_empty() {
        // Zero padding to whole lanes: the padding's products are +0.0, so the sign of a
        // zero result is decided on the real products only.
        let padded = rx.len().div_ceil(LANES) * LANES;
        let (mut px, mut py) = ([0.0; BLOCK], [0.0; BLOCK]);
        px[..rx.len()].copy_from_slice(rx);
        py[..ry.len()].copy_from_slice(ry);
        if !state.try_block(acc, &px[..padded], &py[..padded], rx.len(), &kernel) {
            dot_direct(acc, &mut state.bins, rx, ry);
        }
    }
    state.total.flush(acc);
    if let Some(bins) = state.bins.as_mut() {
        bins.empty_into(acc);
    }
}

/// State that many exact dot products in a row can share: the level counts and the
/// direct-mode backoff learned on one carry over to the next, and the exponent bins are
/// allocated once. Results are the same as with fresh state.
pub(crate) struct DotScratch(DotState);

impl DotScratch {
    pub(crate) fn new() -> Self {
        DotScratch(DotState::new())
    }

    /// Adds the exact dot product of two slices of equal length.
    pub(crate) fn add_dot(&mut self, acc: &mut Accumulator, x: &[f64], y: &[f64]) {
        debug_assert_eq!(x.len(), y.len());
        #[cfg(target_arch = "x86_64")]
        if super::has_avx2_fma() {
            // SAFETY: the CPU supports the features the function was compiled for.
            unsafe { add_dot_avx2(acc, x, y, &mut self.0) };
            return;
        }
        add_dot_kernel(acc, x, y, Portable, &mut self.0)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn add_dot_avx2(acc: &mut Accumulator, x: &[f64], y: &[f64], state: &mut DotState) {
    add_dot_kernel(acc, x, y, Avx2(()), state)
}

/// Adds the exact dot product of two slices of equal length.
pub(crate) fn add_dot(acc: &mut Accumulator, x: &[f64], y: &[f64]) {
    DotScratch::new().add_dot(acc, x, y)
}

/// The portable kernel, for the tests that pin it to the dispatched one.
#[cfg(test)]
pub(super) fn add_dot_portable(acc: &mut Accumulator, x: &[f64], y: &[f64]) {
    add_dot_kernel(acc, x, y, Portable, &mut DotState::new())
}
