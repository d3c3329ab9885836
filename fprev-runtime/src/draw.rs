//! The few random draws the runtime makes outside scrambling (check inputs, pivots, the
//! CUDA amplifier's values), written out on `rand_core` so the library needs no `rand`.
//!
//! Each function draws exactly what `rand` 0.9's method of the same meaning draws from the
//! same generator (named in its doc), so seeds keep the inputs they had with `rand`; the
//! tests below check that against `rand` itself.

use rand_core::RngCore;

/// Canon's multiply method on 32-bit draws (rand 0.9 `UniformInt::<u32>::sample_single`):
/// a value in `0..range`, `range >= 1`.
fn canon_u32<R: RngCore + ?Sized>(rng: &mut R, range: u32) -> u32 {
    let m = u64::from(rng.next_u32()) * u64::from(range);
    let (mut result, lo) = ((m >> 32) as u32, m as u32);
    if lo > range.wrapping_neg() {
        let hi2 = ((u64::from(rng.next_u32()) * u64::from(range)) >> 32) as u32;
        result += u32::from(lo.checked_add(hi2).is_none());
    }
    result
}

/// Canon's multiply method on 64-bit draws (rand 0.9 `UniformInt::<u64>::sample_single`).
fn canon_u64<R: RngCore + ?Sized>(rng: &mut R, range: u64) -> u64 {
    let m = u128::from(rng.next_u64()) * u128::from(range);
    let (mut result, lo) = ((m >> 64) as u64, m as u64);
    if lo > range.wrapping_neg() {
        let hi2 = ((u128::from(rng.next_u64()) * u128::from(range)) >> 64) as u64;
        result += u64::from(lo.checked_add(hi2).is_none());
    }
    result
}

/// A value in `0..len` (`len >= 1`): `rng.random_range(0..len)` for `usize` in rand 0.9,
/// which draws 32 bits whenever `len` fits in 32 bits.
pub(crate) fn below<R: RngCore + ?Sized>(rng: &mut R, len: usize) -> usize {
    debug_assert!(len >= 1);
    match u32::try_from(len) {
        Ok(l) => canon_u32(rng, l) as usize,
        Err(_) => canon_u64(rng, len as u64) as usize,
    }
}

/// A value in `lo..hi` (`lo < hi`): `rng.random_range(lo..hi)` for `i32` in rand 0.9.
pub(crate) fn range_i32<R: RngCore + ?Sized>(rng: &mut R, lo: i32, hi: i32) -> i32 {
    debug_assert!(lo < hi);
    let range = hi.wrapping_sub(lo) as u32;
    lo.wrapping_add(canon_u32(rng, range) as i32)
}

/// A value in `0..hi` (`hi >= 1`): `rng.random_range(0..hi)` for `u32` in rand 0.9.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn below_u32<R: RngCore + ?Sized>(rng: &mut R, hi: u32) -> u32 {
    canon_u32(rng, hi)
}

/// Uniform in `[0, 1)` with 53 random bits: `rng.random::<f64>()` in rand 0.9.
pub(crate) fn unit_f64<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform in `[0, 1)` with 24 random bits: `rng.random::<f32>()` in rand 0.9.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn unit_f32<R: RngCore + ?Sized>(rng: &mut R) -> f32 {
    (rng.next_u32() >> 8) as f32 * (1.0 / (1u32 << 24) as f32)
}

/// A fair coin from the top bit of a 32-bit draw: `rng.random::<bool>()` in rand 0.9.
pub(crate) fn coin<R: RngCore + ?Sized>(rng: &mut R) -> bool {
    (rng.next_u32() as i32) < 0
}

/// A seed that differs from run to run, from the standard library alone: the process's
/// randomly keyed `RandomState` hasher over the time, the process id and a counter.
pub(crate) fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Two generators on the same seed: ours and rand's must read the same stream.
    fn pair(seed: u64) -> (ChaCha8Rng, ChaCha8Rng) {
        (
            ChaCha8Rng::seed_from_u64(seed),
            ChaCha8Rng::seed_from_u64(seed),
        )
    }

    #[test]
    fn draws_match_rand_0_9() {
        let lens = [
            1usize,
            2,
            3,
            7,
            100,
            1 << 20,
            (1 << 31) + 5,
            u32::MAX as usize,
        ];
        let big = [(1usize << 32) + 1, 1 << 40, usize::MAX / 3];
        for seed in 0..20u64 {
            let (mut a, mut b) = pair(seed);
            for _ in 0..200 {
                for &len in lens.iter().chain(&big) {
                    assert_eq!(below(&mut a, len), b.random_range(0..len), "len {len}");
                }
                for (lo, hi) in [(0, 1), (0, 26), (-20, 20), (-8, 9), (i32::MIN, i32::MAX)] {
                    assert_eq!(range_i32(&mut a, lo, hi), b.random_range(lo..hi));
                }
                assert_eq!(below_u32(&mut a, 1000), b.random_range(0..1000u32));
                assert_eq!(unit_f64(&mut a).to_bits(), b.random::<f64>().to_bits());
                assert_eq!(unit_f32(&mut a).to_bits(), b.random::<f32>().to_bits());
                assert_eq!(coin(&mut a), b.random::<bool>());
            }
        }
    }

    #[test]
    fn fresh_seeds_differ() {
        let seeds: std::collections::HashSet<u64> = (0..100).map(|_| fresh_seed()).collect();
        assert_eq!(seeds.len(), 100);
    }
}
