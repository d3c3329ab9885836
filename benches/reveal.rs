//! Criterion benchmarks of the revelation engine (f32): FPRev with random and smallest
//! pivots, and Basic, on sequential, reverse, NumPy-shaped pairwise and balanced orders.
//! The table with probe counts and overhead ratios is `examples/reveal_table.rs`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use fprev::reveal::Pivot;
use fprev::{orders, Algorithm, Reveal};

type NamedOrder = (&'static str, fn(&[f32]) -> f32);

fn bench(c: &mut Criterion) {
    let orders: [NamedOrder; 4] = [
        ("sequential", orders::sequential::<f32>),
        ("reverse", orders::reverse::<f32>),
        ("numpy-pairwise", orders::numpy_pairwise::<f32>),
        ("balanced", orders::balanced::<f32>),
    ];
    let mut g = c.benchmark_group("reveal-f32");
    g.sample_size(10);
    for (name, f) in orders {
        for log2 in [6u32, 10, 13] {
            let n = 1usize << log2;
            g.bench_with_input(
                BenchmarkId::new(format!("{name}/default"), n),
                &n,
                |b, &n| b.iter(|| Reveal::new(n).run(f).expect("reveal")),
            );
            g.bench_with_input(
                BenchmarkId::new(format!("{name}/fprev-random"), n),
                &n,
                |b, &n| b.iter(|| Reveal::new(n).known_orders(false).run(f).expect("reveal")),
            );
            if log2 <= 10 {
                g.bench_with_input(
                    BenchmarkId::new(format!("{name}/fprev-smallest"), n),
                    &n,
                    |b, &n| {
                        b.iter(|| {
                            Reveal::new(n)
                                .known_orders(false)
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
