//! Cost of scrambling: permutation generation, compiled in but off, and on.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fprev::scramble::rng::{shuffle_with, stream};
use fprev::scramble::{permutation, shuffle, with_config, ScrambleConfig, Shuffle};

mod kernels;

fn permutations(c: &mut Criterion) {
    let mut g = c.benchmark_group("permutation");
    for n in [1usize << 10, 1 << 16, 1 << 20] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("fisher-yates", n), &n, |b, &n| {
            let mut rng = stream(1, 2, 3);
            b.iter(|| permutation(Shuffle::FisherYates, n, &mut rng))
        });
        for (name, sh) in [
            ("fisher-yates-u32-in-place", Shuffle::FisherYates),
            ("sattolo-u32-in-place", Shuffle::Sattolo),
        ] {
            g.bench_with_input(BenchmarkId::new(name, n), &n, |b, &n| {
                let mut rng = stream(1, 2, 3);
                let mut p: Vec<u32> = (0..n as u32).collect();
                b.iter(|| shuffle(sh, &mut p, &mut rng))
            });
        }
        // The generic entry point: the same swaps through a callback, which cannot
        // prefetch an unknown container.
        g.bench_with_input(
            BenchmarkId::new("fisher-yates-u32-swap-callback", n),
            &n,
            |b, &n| {
                let mut rng = stream(1, 2, 3);
                let mut p: Vec<u32> = (0..n as u32).collect();
                b.iter(|| shuffle_with(Shuffle::FisherYates, n, &mut rng, |i, j| p.swap(i, j)))
            },
        );
    }
    g.finish();
}

fn loops(c: &mut Criterion) {
    let small: Vec<f32> = (0..4096).map(|i| i as f32 * 1e-3).collect();
    let mut big: Vec<f32> = vec![1.0; 1 << 22];
    let on = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .seed(1);
    let mut g = c.benchmark_group("compute-bound");
    g.throughput(Throughput::Elements(small.len() as u64));
    g.bench_function("plain", |b| {
        b.iter(|| kernels::compute_plain(black_box(&small)))
    });
    g.bench_function("scramble-off", |b| {
        with_config(&ScrambleConfig::off(), || {
            b.iter(|| kernels::compute_scrambled(black_box(&small)))
        })
    });
    g.bench_function("scramble-on", |b| {
        with_config(&on, || {
            b.iter(|| kernels::compute_scrambled(black_box(&small)))
        })
    });
    g.finish();
    let mut g = c.benchmark_group("memory-bound");
    g.throughput(Throughput::Elements(big.len() as u64));
    g.bench_function("plain", |b| {
        b.iter(|| kernels::memory_plain(black_box(&mut big)))
    });
    g.bench_function("scramble-off", |b| {
        with_config(&ScrambleConfig::off(), || {
            b.iter(|| kernels::memory_scrambled(black_box(&mut big)))
        })
    });
    g.bench_function("scramble-on", |b| {
        with_config(&on, || {
            b.iter(|| kernels::memory_scrambled(black_box(&mut big)))
        })
    });
    g.finish();
    let terms: Vec<f64> = (0..1_000_000).map(|i| (i % 1000) as f64 * 1e-3).collect();
    let mut g = c.benchmark_group("reduction-1e6-f64");
    g.throughput(Throughput::Elements(terms.len() as u64));
    g.bench_function("plain", |b| {
        b.iter(|| kernels::reduction_plain(black_box(&terms)))
    });
    g.bench_function("scramble-off", |b| {
        with_config(&ScrambleConfig::off(), || {
            b.iter(|| kernels::reduction_scrambled(black_box(&terms)))
        })
    });
    // Each iteration draws the next invocation's shape: the mix of the default.
    g.bench_function("scramble-on-shapes", |b| {
        with_config(&on.clone().shapes(true), || {
            b.iter(|| kernels::reduction_scrambled(black_box(&terms)))
        })
    });
    g.finish();
}

/// Short reductions called many times (a 15-term `.fold`, an 8-term dot product): the
/// per-call cost of starting and finishing a scrambled reduction. Each iteration makes
/// 1024 calls, 128 under each of 8 seeds, so the figure averages over drawn shapes.
/// Every variant goes through the same configuration changes: `plain` (the function
/// without `#[scramble]`) and `off` differ from `shapes` by the scrambled calls only.
fn short_reductions(c: &mut Criterion) {
    const SEEDS: u64 = 8;
    const CALLS: usize = 128;
    let xs: Vec<f64> = (0..CALLS).map(|i| 1.5 + i as f64 * 0.37).collect();
    let pairs: Vec<([f64; 8], [f64; 8])> = (0..CALLS)
        .map(|i| {
            let a = std::array::from_fn(|j| ((i * 8 + j) as f64).sin());
            let b = std::array::from_fn(|j| ((i * 8 + j) as f64).cos() * 1e3);
            (a, b)
        })
        .collect();
    let shapes = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true);
    let off = ScrambleConfig::off();
    let configs = |cfg: &ScrambleConfig| -> Vec<ScrambleConfig> {
        (1..=SEEDS).map(|seed| cfg.clone().seed(seed)).collect()
    };
    let mut g = c.benchmark_group("short-reductions");
    g.throughput(Throughput::Elements(SEEDS * CALLS as u64));
    type Fold = fn(f64) -> f64;
    let folds: [(&str, Fold, &ScrambleConfig); 3] = [
        ("plain", kernels::series_plain, &off),
        ("off", kernels::series_scrambled, &off),
        ("shapes", kernels::series_scrambled, &shapes),
    ];
    for (name, f, cfg) in folds {
        let cfgs = configs(cfg);
        g.bench_function(format!("fold15/{name}"), |bch| {
            bch.iter(|| {
                let mut s = 0.0;
                for cfg in &cfgs {
                    with_config(cfg, || {
                        for &x in &xs {
                            s += f(black_box(x));
                        }
                    });
                }
                s
            })
        });
    }
    type Dot = fn(&[f64; 8], &[f64; 8]) -> f64;
    let dots: [(&str, Dot, &ScrambleConfig); 3] = [
        ("plain", kernels::dot8_plain, &off),
        ("off", kernels::dot8_scrambled, &off),
        ("shapes", kernels::dot8_scrambled, &shapes),
    ];
    for (name, f, cfg) in dots {
        let cfgs = configs(cfg);
        g.bench_function(format!("dot8/{name}"), |bch| {
            bch.iter(|| {
                let mut s = 0.0;
                for cfg in &cfgs {
                    with_config(cfg, || {
                        for (a, b) in &pairs {
                            s += f(black_box(a), black_box(b));
                        }
                    });
                }
                s
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = permutations, loops, short_reductions
}
criterion_main!(benches);
