//! Cost of chain counting: an f64 dot product of 1e6 elements, plain vs
//! `#[fprev::accumulator]` (target: at most 2x). Build with `--features off` to check that
//! the compiled-out version matches the plain loop.
//!
//! `cargo bench --no-default-features --bench chains` (add `--features off` for the
//! compiled-out numbers).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

#[inline(never)]
fn dot_plain(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[inline(never)]
#[fprev::accumulator]
fn dot_counted(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[inline(never)]
#[fprev::accumulator]
fn dot_iter_counted(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[inline(never)]
fn dot_iter_plain(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn bench(c: &mut Criterion) {
    let n = 1_000_000;
    let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.001).sin()).collect();
    let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.002).cos()).collect();
    assert_eq!(
        dot_plain(&a, &b).to_bits(),
        dot_counted(&a, &b).to_bits(),
        "counting changed the result"
    );
    let mut g = c.benchmark_group("dot_f64_1e6");
    g.sample_size(20);
    g.bench_function("plain_loop", |t| {
        t.iter(|| dot_plain(black_box(&a), black_box(&b)))
    });
    g.bench_function("counted_loop", |t| {
        t.iter(|| dot_counted(black_box(&a), black_box(&b)))
    });
    g.bench_function("plain_iter_sum", |t| {
        t.iter(|| dot_iter_plain(black_box(&a), black_box(&b)))
    });
    g.bench_function("counted_iter_sum", |t| {
        t.iter(|| dot_iter_counted(black_box(&a), black_box(&b)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
