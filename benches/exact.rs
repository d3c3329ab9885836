//! Criterion benchmarks of `fprev::exact` against plain and other exact summations, dot
//! products and matrix products.
//!
//! `cargo bench --bench exact` (`cargo bench --bench exact -- gemm` for the matrix
//! products only). Sample counts are small so the whole run takes a few minutes;
//! `cargo run --release --example exact_table` prints the same ratios in one table, and
//! measures 2048^3 once.

#[path = "common/exact_workloads.rs"]
mod exact_workloads;

use accurate::sum::OnlineExactSum;
use accurate::traits::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fprev::exact::{self, GemmKernel, Matrixmultiply};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Duration;
use xsum::{Xsum, XsumAuto, XsumLarge};

fn quick<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group
}

fn moderate_sum(c: &mut Criterion) {
    let xs = exact_workloads::moderate(1 << 26, 1);
    let mut group = quick(c, "sum_2^26_moderate");
    group.bench_function("rayon_par_iter_sum", |b| {
        b.iter(|| black_box(&xs).par_iter().sum::<f64>())
    });
    group.bench_function("exact_par_sum", |b| {
        b.iter(|| exact::par_sum(black_box(&xs)))
    });
    group.finish();
}

fn worst_sum(c: &mut Criterion) {
    let xs = exact_workloads::worst(1 << 22, 2);
    let mut group = quick(c, "sum_2^22_range_1e301");
    group.bench_function("exact_sum", |b| b.iter(|| exact::sum(black_box(&xs))));
    group.bench_function("exact_par_sum", |b| {
        b.iter(|| exact::par_sum(black_box(&xs)))
    });
    group.bench_function("xsum_auto", |b| {
        b.iter(|| {
            let mut acc = XsumAuto::new();
            acc.add_list(black_box(&xs));
            acc.sum()
        })
    });
    // Faster, but its result is wrong on long inputs (see examples/exact_table.rs).
    group.bench_function("xsum_large", |b| {
        b.iter(|| {
            let mut acc = XsumLarge::new();
            acc.add_list(black_box(&xs));
            acc.sum()
        })
    });
    group.bench_function("accurate_online_exact_sum", |b| {
        b.iter(|| {
            black_box(&xs)
                .iter()
                .copied()
                .sum_with_accumulator::<OnlineExactSum<f64>>()
        })
    });
    group.finish();
}

fn dots(c: &mut Criterion) {
    let x = exact_workloads::moderate(1_000_000, 3);
    let y = exact_workloads::moderate(1_000_000, 4);
    let mut group = quick(c, "dot_1e6");
    for (name, f) in [
        (
            "plain",
            (|x, y| Ok(exact_workloads::plain_dot(x, y)))
                as fn(&[f64], &[f64]) -> Result<f64, exact::LengthMismatch>,
        ),
        ("exact_dot", exact::dot),
        ("exact_par_dot", exact::par_dot),
    ] {
        group.bench_with_input(BenchmarkId::from_parameter(name), &(), |b, _| {
            b.iter(|| f(black_box(&x), black_box(&y)))
        });
    }
    group.finish();
}

fn gemms(c: &mut Criterion) {
    for n in [256, 1024] {
        let a = exact_workloads::spread(n * n, -1, 0, 5);
        let b = exact_workloads::spread(n * n, -1, 0, 6);
        let mut group = c.benchmark_group(format!("gemm_{n}^3"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(if n > 500 { 8 } else { 3 }));
        let mut out = vec![0.0; n * n];
        group.bench_function("matrixmultiply", |bench| {
            bench.iter(|| Matrixmultiply.gemm(n, n, n, black_box(&a), black_box(&b), &mut out))
        });
        group.bench_function("exact_gemm", |bench| {
            bench.iter(|| exact::gemm(n, n, n, black_box(&a), black_box(&b)))
        });
        let mut reused = exact::Gemm::new();
        group.bench_function("exact_Gemm_reused", |bench| {
            bench.iter(|| reused.gemm(n, n, n, black_box(&a), black_box(&b)))
        });
        group.finish();
    }
}

criterion_group!(benches, moderate_sum, worst_sum, dots, gemms);
criterion_main!(benches);
