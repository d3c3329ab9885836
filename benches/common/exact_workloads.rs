//! Inputs shared by `benches/exact.rs` and `examples/exact_table.rs`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Random sign, mantissa in [1, 2), binary exponent uniform in `lo..=hi`.
pub fn spread(n: usize, lo: i32, hi: i32, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mantissa = 1.0 + rng.random::<f64>();
            let sign = if rng.random::<bool>() { -1.0 } else { 1.0 };
            let e = rng.random_range(lo..=hi);
            sign * mantissa * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
        })
        .collect()
}

/// Moderate dynamic range: magnitudes within 2^-20..2^20 (about 1e-6..1e6).
pub fn moderate(n: usize, seed: u64) -> Vec<f64> {
    spread(n, -20, 20, seed)
}

/// The worst case: magnitudes spread over 2^-1000..2^1000 (about 1e-301..1e301).
pub fn worst(n: usize, seed: u64) -> Vec<f64> {
    spread(n, -1000, 1000, seed)
}

/// The dot product everyone writes.
pub fn plain_dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}
