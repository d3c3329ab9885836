//! Criterion benchmarks of the revelation engine (f32): FPRev with random and smallest
//! pivots, and Basic, on sequential, reverse, NumPy-shaped pairwise and balanced orders.
//! The table with probe counts and overhead ratios is `examples/reveal_table.rs`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fprev::reveal::Pivot;
use fprev::{Algorithm, Reveal};

fn sequential(x: &[f32]) -> f32 {
    x.iter().fold(0.0, |a, &b| a + b)
}

fn reverse(x: &[f32]) -> f32 {
    x.iter().rev().fold(0.0, |a, &b| a + b)
}

fn balanced(x: &[f32]) -> f32 {
    if x.len() == 1 {
        return x[0];
    }
    let (a, b) = x.split_at(x.len() / 2);
    balanced(a) + balanced(b)
}

/// NumPy's float32 pairwise sum shape: 8 lanes per block of at most 128, halves above.
fn numpy_pairwise(a: &[f32]) -> f32 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |s, &v| s + v);
    }
    if n <= 128 {
        let mut r = [0.0f32; 8];
        r.copy_from_slice(&a[..8]);
        let mut chunks = a[8..].chunks_exact(8);
        for c in &mut chunks {
            for k in 0..8 {
                r[k] += c[k];
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in chunks.remainder() {
            res += v;
        }
        return res;
    }
    let mut n2 = n / 2;
    n2 -= n2 % 8;
    numpy_pairwise(&a[..n2]) + numpy_pairwise(&a[n2..])
}

type Order = (&'static str, fn(&[f32]) -> f32);

fn bench(c: &mut Criterion) {
    let orders: [Order; 4] = [
        ("sequential", sequential),
        ("reverse", reverse),
        ("numpy-pairwise", numpy_pairwise),
        ("balanced", balanced),
    ];
    let mut g = c.benchmark_group("reveal-f32");
    g.sample_size(10);
    for (name, f) in orders {
        for log2 in [6u32, 10, 13] {
            let n = 1usize << log2;
            g.bench_with_input(
                BenchmarkId::new(format!("{name}/fprev-random"), n),
                &n,
                |b, &n| b.iter(|| Reveal::new(n).run(f).expect("reveal")),
            );
            if log2 <= 10 {
                g.bench_with_input(
                    BenchmarkId::new(format!("{name}/fprev-smallest"), n),
                    &n,
                    |b, &n| {
                        b.iter(|| {
                            Reveal::new(n)
                                .pivot(Pivot::Smallest)
                                .run(f)
                                .expect("reveal")
                        })
                    },
                );
            }
            if log2 <= 6 {
                g.bench_with_input(BenchmarkId::new(format!("{name}/basic"), n), &n, |b, &n| {
                    b.iter(|| {
                        Reveal::new(n)
                            .algorithm(Algorithm::Basic)
                            .run(f)
                            .expect("reveal")
                    })
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
