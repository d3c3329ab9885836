//! Annotate hot loops, run them, and print where the long addition chains are.
//!
//! `cargo run --example chains --no-default-features` (or run any test binary with
//! `FPREV_CHAINS=1` to get the same report at exit).

/// A plain dot product: one chain as long as the vectors.
#[fprev::accumulator]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

/// Eight lanes: eight chains of n/8, then a short combination.
#[fprev::accumulator]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        lanes[i % 8] += x * y;
    }
    lanes.iter().sum()
}

/// A naive matrix product: one chain of k per output element.
#[fprev::accumulator]
fn matmul(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0;
            for p in 0..k {
                acc += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = acc;
        }
    }
    c
}

fn main() {
    let x: Vec<f64> = (0..10_000).map(|i| (i as f64).sin()).collect();
    let y: Vec<f32> = (0..8192).map(|i| (i as f32).cos()).collect();
    for _ in 0..3 {
        std::hint::black_box(dot(&x, &x));
    }
    std::hint::black_box(dot_lanes(&y, &y));
    std::hint::black_box(matmul(32, 32, 256, &y[..32 * 256], &y[..256 * 32]));
    print!("{}", fprev::chains::report());
}
