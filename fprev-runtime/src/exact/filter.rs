//! The fast front end of the accumulator: small floating-point expansions that absorb
//! values with error-free transformations, so that the wide digits are rarely touched.
//!
//! Each of [`LANES`] independent lanes keeps a short expansion (a leading sum and the sums
//! of its rounding errors). Adding a value is a chain of TwoSums; the last one's error is
//! the part the expansion could not hold. When it is zero in every lane (the common case
//! for a moderate dynamic range) the group of values is absorbed and nothing else happens,
//! and the loop vectorizes. Otherwise the leftover errors go to the wide digits; if a lane
//! overflowed or met a NaN or an infinity, the group is not absorbed and its values take
//! the general path instead.
//!
//! Sums try three levels, block by block, each retried after a backoff when it gives up:
//! a narrow filter (two components, flushed every block so its sums stay small: about
//! 2^90 of dynamic range, 12 flops a value), a wide one (three components, kept across
//! blocks), and direct mode. Dot products have a kernel of their own (`dot.rs`).
//!
//! When leftovers are frequent (a huge dynamic range) the filters are only overhead, so
//! blocks of values go straight to integer bins indexed by their exponent (`bins.rs`).

use super::accumulator::{Accumulator, NEG_ZERO_BITS};
use bins::Bins;

#[cfg(target_arch = "x86_64")]
mod avx2;
mod bins;
mod dot;

pub(crate) use dot::{add_dot, DotScratch};

// The accumulator's two bulk entry points live here, beside the filters they run, so
// that the accumulator (the wide digits) does not depend on its own front end.
impl Accumulator {
    /// Adds every value of `xs` exactly.
    ///
    /// Small floating-point expansions (two or three components per lane, TwoSum, eight
    /// lanes, AVX2 where available) absorb the values first; only rounding errors they
    /// cannot hold exactly reach the wide digits. With a moderate dynamic range that
    /// almost never happens, so this runs near memory speed; with a huge one, values go
    /// to the digits directly.
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add_slice(&[0.1; 10]);
    /// assert_eq!(acc.finish(), 1.0000000000000000555); // the exact sum, rounded once
    /// ```
    pub fn add_slice(&mut self, xs: &[f64]) {
        add_slice(self, xs);
    }

    /// Adds every value of `xs` exactly (each widens to `f64` without rounding, then
    /// takes [`add_slice`](Self::add_slice)'s path): the accumulator of an `f32` sum,
    /// rounded once by [`finish_f32`](Self::finish_f32).
    ///
    /// ```
    /// let mut acc = fprev::exact::Accumulator::new();
    /// acc.add_slice_f32(&[16_777_216.0, 1.0, 1.0]);
    /// assert_eq!(acc.finish_f32(), 16_777_218.0); // plain f32 addition gives 16777216
    /// ```
    pub fn add_slice_f32(&mut self, xs: &[f32]) {
        let mut buf = [0.0f64; BLOCK];
        for chunk in xs.chunks(BLOCK) {
            for (b, &x) in buf.iter_mut().zip(chunk) {
                *b = f64::from(x);
            }
            add_slice(self, &buf[..chunk.len()]);
        }
    }

    /// Adds the exact dot product of `x` and `y` (pairs beyond the shorter slice are
    /// ignored; [`crate::exact::dot`] checks the lengths).
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add_dot(&[1e20, 1.0, -1e20], &[1e20, 3.0, 1e20]);
    /// assert_eq!(acc.finish(), 3.0);
    /// ```
    pub fn add_dot(&mut self, x: &[f64], y: &[f64]) {
        let n = x.len().min(y.len());
        add_dot(self, &x[..n], &y[..n]);
    }
}

/// Independent expansions, so the loop has no carried dependency and vectorizes.
const LANES: usize = 8;
/// Values per block when deciding whether the filter pays off.
const BLOCK: usize = 1024;
/// Once more than this many groups of a block spilled to the digits, the rest of the block
/// and the next ones run in direct mode.
const SPILL_LIMIT: usize = BLOCK / LANES / 16;
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

/// A three-component expansion per lane. The leading sums start at `-0.0` so that a lane
/// still at `-0.0` at the end proves every value it absorbed was `-0.0` (IEEE addition
/// keeps `-0.0` only then).
#[derive(Clone, Copy)]
struct Expansion {
    parts: [[f64; LANES]; 3],
}

impl Expansion {
    fn new() -> Self {
        Expansion {
            parts: [[-0.0; LANES], [0.0; LANES], [0.0; LANES]],
        }
    }

    /// The expansion after adding `v`, and what it could not hold.
    #[inline(always)]
    fn plus(&self, v: &[f64; LANES]) -> (Expansion, [f64; LANES]) {
        let mut next = *self;
        let mut left = [0.0; LANES];
        for j in 0..LANES {
            let (a, e1) = two_sum(self.parts[0][j], v[j]);
            let (b, e2) = two_sum(self.parts[1][j], e1);
            let (c, e3) = two_sum(self.parts[2][j], e2);
            next.parts[0][j] = a;
            next.parts[1][j] = b;
            next.parts[2][j] = c;
            left[j] = e3;
        }
        (next, left)
    }

    /// Whether every lane's leading sum is still `-0.0`.
    fn all_neg_zero(&self) -> bool {
        self.parts[0].iter().all(|h| h.to_bits() == NEG_ZERO_BITS)
    }

    /// Moves the (finite) components into the accumulator.
    fn flush(&self, acc: &mut Accumulator) {
        for v in self.parts.iter().flatten() {
            if *v != 0.0 {
                acc.add_finite_unflagged(*v);
            }
        }
    }
}

/// Whether any entry is nonzero or NaN.
#[inline(always)]
fn any_nonzero(v: &[f64; LANES]) -> bool {
    let mut spill = false;
    for e in v {
        spill |= *e != 0.0;
    }
    spill
}

/// Absorbs one group; returns whether it spilled. Nothing here takes the state by
/// reference, so it can stay in registers.
#[inline(always)]
fn sum_group(acc: &mut Accumulator, exp: Expansion, group: &[f64; LANES]) -> (Expansion, bool) {
    let (next, left) = exp.plus(group);
    if !any_nonzero(&left) {
        return (next, false);
    }
    if all_finite(&left) {
        spill_errors(acc, left);
        (next, true)
    } else {
        add_general(acc, group);
        (exp, true)
    }
}

#[inline(always)]
fn all_finite(v: &[f64; LANES]) -> bool {
    let mut ok = true;
    for e in v {
        ok &= e.is_finite();
    }
    ok
}

/// Adds the (finite) leftovers of a group to the digits.
#[cold]
#[inline(never)]
fn spill_errors(acc: &mut Accumulator, left: [f64; LANES]) {
    for e in left {
        if e != 0.0 {
            acc.add_finite_unflagged(e);
        }
    }
}

/// Adds values that overflowed a lane or held NaN/infinity through the general path.
#[cold]
#[inline(never)]
fn add_general(acc: &mut Accumulator, group: &[f64]) {
    for &x in group {
        acc.add(x);
    }
}

/// Decides block by block between the narrow filter, the wide one and direct mode: each
/// falls back to the next when it gives up, and is retried after a backoff.
struct FilterSchedule {
    wide_blocks: usize,
    wide_backoff: usize,
    direct_blocks: usize,
    direct_backoff: usize,
}

impl FilterSchedule {
    fn new() -> Self {
        FilterSchedule {
            wide_blocks: 0,
            wide_backoff: 1,
            direct_blocks: 0,
            direct_backoff: 1,
        }
    }

    /// Whether the next block should skip the filters.
    fn take_direct(&mut self) -> bool {
        if self.direct_blocks > 0 {
            self.direct_blocks -= 1;
            true
        } else {
            false
        }
    }

    /// Whether the next block should skip the narrow filter.
    fn take_wide(&mut self) -> bool {
        if self.wide_blocks > 0 {
            self.wide_blocks -= 1;
            true
        } else {
            false
        }
    }

    /// Records whether the narrow filter got through a whole block.
    fn narrow(&mut self, completed: bool) {
        if completed {
            self.wide_backoff = 1;
        } else {
            self.wide_blocks = self.wide_backoff;
            self.wide_backoff = (self.wide_backoff * 2).min(MAX_DIRECT_BLOCKS);
        }
    }

    /// Records whether the wide filter got through (the rest of) a block.
    fn wide(&mut self, completed: bool) {
        if completed {
            self.direct_backoff = 1;
        } else {
            self.direct_blocks = self.direct_backoff;
            self.direct_backoff = (self.direct_backoff * 2).min(MAX_DIRECT_BLOCKS);
        }
    }
}

/// The narrow filter's lanes: two components, flushed after every block so the leading
/// sums stay small (a block's worth of values) and two components hold them exactly for
/// a dynamic range of about 2^90.
#[derive(Clone, Copy)]
struct Narrow {
    hi: [f64; LANES],
    lo: [f64; LANES],
}

impl Narrow {
    fn new() -> Self {
        Narrow {
            hi: [-0.0; LANES],
            lo: [0.0; LANES],
        }
    }

    /// Moves the lanes into the wide expansion (two vector additions, much cheaper than
    /// sixteen trips to the digits). Zeros go in as `-0.0`, so a wide lane stays `-0.0`
    /// exactly when everything it ever absorbed was `-0.0`.
    #[inline(always)]
    fn flush_into(&self, acc: &mut Accumulator, exp: &mut Expansion) {
        let lo = self.lo.map(|v| if v == 0.0 { -0.0 } else { v });
        *exp = sum_group(acc, *exp, &self.hi).0;
        *exp = sum_group(acc, *exp, &lo).0;
    }
}

/// Runs the narrow filter over a block (a multiple of [`LANES`] long), giving up like
/// [`filter_block`]; returns how many values it consumed.
#[inline(always)]
fn narrow_block(acc: &mut Accumulator, exp: &mut Expansion, block: &[f64]) -> usize {
    let mut lanes = Narrow::new();
    let mut spills = 0usize;
    let mut done = 0;
    for group in block.chunks_exact(LANES) {
        let group = as_group(group);
        let mut next = lanes;
        let mut left = [0.0; LANES];
        for j in 0..LANES {
            let (a, e1) = two_sum(lanes.hi[j], group[j]);
            let (b, e2) = two_sum(lanes.lo[j], e1);
            next.hi[j] = a;
            next.lo[j] = b;
            left[j] = e2;
        }
        done += LANES;
        if any_nonzero(&left) {
            spills += 1;
            if all_finite(&left) {
                spill_errors(acc, left);
                lanes = next;
            } else {
                add_general(acc, group);
            }
            if spills > SPILL_LIMIT {
                break;
            }
        } else {
            lanes = next;
        }
    }
    lanes.flush_into(acc, exp);
    done
}

fn as_group(s: &[f64]) -> &[f64; LANES] {
    s.try_into().unwrap_or(&[0.0; LANES])
}

/// Runs the filter over a block (a multiple of [`LANES`] long). Gives up once more than
/// [`SPILL_LIMIT`] groups spilled; returns how many values it consumed.
#[inline(always)]
fn filter_block(acc: &mut Accumulator, exp: &mut Expansion, block: &[f64]) -> usize {
    let mut state = *exp;
    let mut spills = 0usize;
    let mut done = 0;
    for group in block.chunks_exact(LANES) {
        let spilled;
        (state, spilled) = sum_group(acc, state, as_group(group));
        done += LANES;
        spills += spilled as usize;
        if spills > SPILL_LIMIT {
            break;
        }
    }
    *exp = state;
    done
}

/// The sum kernel, with the filters passed in (portable or AVX2 builds of the same loops).
#[inline(always)]
fn add_slice_kernel<N, W>(acc: &mut Accumulator, xs: &[f64], narrow: N, wide: W)
where
    N: Fn(&mut Accumulator, &mut Expansion, &[f64]) -> usize,
    W: Fn(&mut Accumulator, &mut Expansion, &[f64]) -> usize,
{
    let mut exp = Expansion::new();
    let mut mode = FilterSchedule::new();
    let mut bins = None;
    let mut blocks = xs.chunks_exact(BLOCK);
    for block in blocks.by_ref() {
        if mode.take_direct() {
            add_direct(acc, &mut bins, block);
            continue;
        }
        let mut done = 0;
        if !mode.take_wide() {
            done = narrow(acc, &mut exp, block);
            mode.narrow(done == block.len());
        }
        if done < block.len() {
            let rest = &block[done..];
            let wide_done = wide(acc, &mut exp, rest);
            if wide_done < rest.len() {
                add_direct(acc, &mut bins, &rest[wide_done..]);
            }
            mode.wide(wide_done == rest.len());
        }
    }
    let rest = blocks.remainder();
    let mut groups = rest.chunks_exact(LANES);
    for group in groups.by_ref() {
        exp = sum_group(acc, exp, as_group(group)).0;
    }
    for &x in groups.remainder() {
        acc.add(x);
    }
    if xs.len() >= LANES {
        acc.note_many(exp.all_neg_zero());
    }
    exp.flush(acc);
    if let Some(bins) = bins.as_mut() {
        bins.empty_into(acc);
    }
}

/// Adds values straight to the exponent bins (NaN and infinities through the general
/// path, which keeps IEEE's rules).
///
/// Direct mode only starts after a block spilled, that is after nonzero values, so the
/// "only -0.0 so far" flag is already cleared and this path need not track it.
#[inline(always)]
fn add_direct(acc: &mut Accumulator, bins: &mut Option<Bins>, xs: &[f64]) {
    bins.get_or_insert_with(Bins::new).add(acc, xs);
    acc.note_many(false);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn add_slice_avx2(acc: &mut Accumulator, xs: &[f64]) {
    // SAFETY (for the closure): this function only runs where AVX2 is available.
    add_slice_kernel(
        acc,
        xs,
        |acc, exp, block| unsafe { avx2::narrow_block(acc, exp, block) },
        |acc, exp, block| unsafe { avx2::filter_block(acc, exp, block) },
    )
}

/// Whether the CPU runs the AVX2 + FMA builds of the kernels.
#[cfg(target_arch = "x86_64")]
fn has_avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Adds every value of `xs` to `acc` exactly, using AVX2 where the CPU has it.
pub(crate) fn add_slice(acc: &mut Accumulator, xs: &[f64]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU supports the features the function was compiled for.
        unsafe { add_slice_avx2(acc, xs) };
        return;
    }
    add_slice_kernel(acc, xs, narrow_block, filter_block)
}

#[cfg(test)]
mod tests {
    //! The dispatching entry points run the AVX2 kernels on most machines; these tests pin
    //! the portable kernels to the same bits.
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn vectors() -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut out: Vec<Vec<f64>> = Vec::new();
        for (lo, hi) in [
            (-2, 2),
            (-30, 30),
            (-1000, 1000),
            (-1074, -1000),
            (1000, 1023),
        ] {
            for n in [0, 5, 8, 1000, 5000] {
                out.push(
                    (0..n)
                        .map(|_| {
                            let e = rng.random_range(lo..=hi);
                            let m = 1.0 + rng.random::<f64>();
                            let s = if rng.random::<bool>() { -1.0 } else { 1.0 };
                            s * m * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
                        })
                        .collect(),
                );
            }
        }
        let mut special = out[3].clone();
        special[100] = f64::INFINITY;
        out.push(special);
        out.push(vec![-0.0; 3000]);
        out
    }

    #[test]
    fn portable_and_dispatched_kernels_agree() {
        for xs in vectors() {
            let mut portable = Accumulator::new();
            add_slice_kernel(&mut portable, &xs, narrow_block, filter_block);
            let mut dispatched = Accumulator::new();
            add_slice(&mut dispatched, &xs);
            let mut one_by_one = Accumulator::new();
            xs.iter().for_each(|&x| one_by_one.add(x));
            let want = one_by_one.finish().to_bits();
            assert_eq!(portable.finish().to_bits(), want, "n = {}", xs.len());
            assert_eq!(dispatched.finish().to_bits(), want, "n = {}", xs.len());

            let ys: Vec<f64> = xs.iter().rev().map(|v| v * 0.75).collect();
            let mut portable = Accumulator::new();
            dot::add_dot_portable(&mut portable, &xs, &ys);
            let mut dispatched = Accumulator::new();
            add_dot(&mut dispatched, &xs, &ys);
            let mut one_by_one = Accumulator::new();
            xs.iter()
                .zip(&ys)
                .for_each(|(&a, &b)| one_by_one.add_product(a, b));
            let want = one_by_one.finish().to_bits();
            assert_eq!(portable.finish().to_bits(), want, "dot n = {}", xs.len());
            assert_eq!(dispatched.finish().to_bits(), want, "dot n = {}", xs.len());
        }
    }
}
