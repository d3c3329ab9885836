//! Criterion benchmarks of revealing matrix products (few samples: each is a whole reveal).
//!
//! `cargo bench --bench ops`

#[allow(dead_code)]
#[path = "../src/builtins.rs"]
mod builtins;

use builtins::Size;
use criterion::{criterion_group, criterion_main, Criterion};
use fprev::ops::ElementReveal;

fn gemm(c: &mut Criterion) {
    let mut g = c.benchmark_group("reveal_sgemm_all_elements");
    g.sample_size(10);
    for n in [512usize, 1024] {
        g.bench_function(format!("matrixmultiply_{n}"), |b| {
            b.iter(|| {
                let o = builtins::reveal::<f32>(
                    "matrixmultiply-gemm",
                    Size::square(n),
                    &ElementReveal::new(),
                    None,
                )
                .expect("reveal");
                assert!(o.calls <= 8 && o.is_uniform());
            })
        });
    }
    g.finish();
}

fn sums(c: &mut Criterion) {
    let mut g = c.benchmark_group("reveal_sum");
    g.sample_size(20);
    for name in ["iter-sum", "ndarray-sum"] {
        g.bench_function(format!("{name}_4096"), |b| {
            b.iter(|| {
                builtins::reveal::<f32>(name, Size::square(4096), &ElementReveal::new(), None)
                    .expect("reveal")
            })
        });
    }
    g.finish();
}

criterion_group!(benches, gemm, sums);
criterion_main!(benches);
