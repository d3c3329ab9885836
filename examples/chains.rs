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

/// A prefix sum and a float counter: listed last, since no order changes the counter and
/// the order of a running value is its meaning.
#[fprev::accumulator]
fn cumsum(x: &[f64]) -> (Vec<f64>, f64) {
    let mut out = Vec::with_capacity(x.len());
    let mut s = 0.0;
    let mut n = 0.0;
    for v in x {
        s += v;
        n += 1.0;
        out.push(s);
    }
    (out, n)
}

fn main() {
    let x: Vec<f64> = (0..10_000).map(|i| (i as f64).sin()).collect();
    let y: Vec<f32> = (0..8192).map(|i| (i as f32).cos()).collect();
    for _ in 0..3 {
        std::hint::black_box(dot(&x, &x));
    }
    std::hint::black_box(dot_lanes(&y, &y));
    std::hint::black_box(matmul(32, 32, 256, &y[..32 * 256], &y[..256 * 32]));
    std::hint::black_box(cumsum(&x[..1000]));
    print!("{}", fprev::chains::report());
}
