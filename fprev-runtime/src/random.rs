//! Seeded random draws: the SplitMix64 mix, the one unbiased bounded draw, and the few
//! values drawn outside scrambling (check inputs, pivots, the CUDA amplifier's values),
//! written out on `rand_core` so the library needs no `rand`.
//!
//! Scrambling, the revealing engine and the GPU amplifier all draw bounded integers
//! through [`below`], so one seed means one sequence of draws everywhere. Its algorithm
//! is part of the replay token (scrambled orders are drawn with it): never change what
//! it draws without a bump of [`ALGORITHM_VERSION`](crate::scramble::ALGORITHM_VERSION).

use rand_core::RngCore;

/// SplitMix64's finalizer: a bijective mix used to derive keys and run seeds.
pub(crate) const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in `0..n` (`n >= 1`), unbiased: Lemire's multiply-and-reject on 32-bit
/// draws when `n` fits in 32 bits, on 64-bit draws otherwise.
#[inline]
pub fn below<R: RngCore + ?Sized>(rng: &mut R, n: usize) -> usize {
    debug_assert!(n >= 1);
    if n <= u32::MAX as usize {
        below_u32(rng, n as u32) as usize
    } else {
        below_u64(rng, n as u64) as usize
    }
}

/// [`below`] for a 32-bit bound (`n >= 1`).
#[inline]
pub(crate) fn below_u32<R: RngCore + ?Sized>(rng: &mut R, n: u32) -> u32 {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    if (m as u32) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
        }
    }
    (m >> 32) as u32
}

#[inline]
fn below_u64<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as u64
}

/// A value in `lo..hi` (`lo < hi`), drawn with [`below_u32`].
pub(crate) fn range_i32<R: RngCore + ?Sized>(rng: &mut R, lo: i32, hi: i32) -> i32 {
    debug_assert!(lo < hi);
    let range = hi.wrapping_sub(lo) as u32;
    lo.wrapping_add(below_u32(rng, range) as i32)
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
    fn unit_draws_and_coins_match_rand_0_9() {
        for seed in 0..20u64 {
            let (mut a, mut b) = pair(seed);
            for _ in 0..200 {
                assert_eq!(unit_f64(&mut a).to_bits(), b.random::<f64>().to_bits());
                assert_eq!(unit_f32(&mut a).to_bits(), b.random::<f32>().to_bits());
                assert_eq!(coin(&mut a), b.random::<bool>());
            }
        }
    }

    #[test]
    fn bounded_draws_stay_in_range_and_hit_every_value() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[below(&mut rng, 7)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        assert_eq!(below(&mut rng, 1), 0);
        for len in [(1usize << 32) + 1, 1 << 40, usize::MAX / 3] {
            assert!(below(&mut rng, len) < len);
        }
        for (lo, hi) in [(0, 1), (0, 26), (-20, 20), (-8, 9), (i32::MIN, i32::MAX)] {
            for _ in 0..100 {
                assert!((lo..hi).contains(&range_i32(&mut rng, lo, hi)));
            }
        }
        let mut hit = [false; 17];
        for _ in 0..2000 {
            hit[(range_i32(&mut rng, -8, 9) + 8) as usize] = true;
        }
        assert!(hit.iter().all(|&h| h));
    }

    #[test]
    fn fresh_seeds_differ() {
        let seeds: std::collections::HashSet<u64> = (0..100).map(|_| fresh_seed()).collect();
        assert_eq!(seeds.len(), 100);
    }
}
