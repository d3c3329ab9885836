//! Prints how much exactness costs: `fprev::exact` against plain sums, dot products and
//! matrix products, and against the `accurate` and `xsum` crates, as medians of several
//! runs.
//!
//! `cargo run --release --example exact_table` (set `FPREV_EXACT_REPS` for more runs;
//! pass `sum`, `dot` or `gemm` to print only those rows).
//! Each pair of contenders runs alternately, so background load hits both alike. On a
//! shared machine a run is sometimes preempted for a whole scheduler slice, which inflates
//! medians; the fastest run of each is the better estimate of the intrinsic cost, so the
//! table shows both ratios.

#[path = "../benches/common/exact_workloads.rs"]
mod workloads;

use accurate::sum::OnlineExactSum;
use accurate::traits::*;
use fprev::exact::{self, GemmKernel, Matrixmultiply};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;
use xsum::{Xsum, XsumAuto, XsumLarge};

fn time_ms<R>(f: &mut impl FnMut() -> R) -> f64 {
    let start = Instant::now();
    black_box(f());
    start.elapsed().as_secs_f64() * 1e3
}

/// Minimum and median of some timings.
#[derive(Clone, Copy)]
struct Timings {
    min: f64,
    median: f64,
}

fn stats(mut v: Vec<f64>) -> Timings {
    v.sort_by(f64::total_cmp);
    Timings {
        min: v[0],
        median: v[v.len() / 2],
    }
}

/// Timings of `reps` alternating runs of `ours` and `base`, in milliseconds.
fn duel<A, B>(
    reps: usize,
    mut ours: impl FnMut() -> A,
    mut base: impl FnMut() -> B,
) -> (Timings, Timings) {
    black_box(ours());
    black_box(base());
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        if rep % 2 == 0 {
            a.push(time_ms(&mut ours));
            b.push(time_ms(&mut base));
        } else {
            b.push(time_ms(&mut base));
            a.push(time_ms(&mut ours));
        }
    }
    (stats(a), stats(b))
}

fn row(name: &str, baseline: &str, (ours, base): (Timings, Timings)) {
    println!(
        "| {name:<34} | {:>8.2} | {baseline:<33} | {:>8.2} | {:>5.2}x | {:>5.2}x |",
        ours.min,
        base.min,
        ours.min / base.min,
        ours.median / base.median
    );
}

/// Runs `ours` and `base` once each (for sizes too slow to repeat).
fn once<A, B>(mut ours: impl FnMut() -> A, mut base: impl FnMut() -> B) -> (Timings, Timings) {
    let (b, a) = (time_ms(&mut base), time_ms(&mut ours));
    (Timings { min: a, median: a }, Timings { min: b, median: b })
}

/// The plain product the exact one is compared with: the same kernel, same threads.
fn plain_gemm(n: usize, a: &[f64], b: &[f64], c: &mut [f64]) -> f64 {
    Matrixmultiply.gemm(n, n, n, a, b, c);
    c[0]
}

/// `sgemm` with its rows split over rayon as [`Matrixmultiply`] does for `dgemm`.
fn plain_sgemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) -> f32 {
    let rows = n.div_ceil(rayon::current_num_threads()).max(64).min(n);
    c.par_chunks_mut(rows * n)
        .zip(a.par_chunks(rows * n))
        .for_each(|(c, a)| {
            // SAFETY: `a` holds `c.len() / n` rows of n values, `b` n x n, row-major.
            unsafe {
                matrixmultiply::sgemm(
                    c.len() / n,
                    n,
                    n,
                    1.0,
                    a.as_ptr(),
                    n as isize,
                    1,
                    b.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                )
            }
        });
    c[0]
}

fn gemm_rows(reps: usize) {
    for n in [256, 1024] {
        let a = workloads::spread(n * n, -1, 0, 5);
        let b = workloads::spread(n * n, -1, 0, 6);
        let mut c = vec![0.0; n * n];
        row(
            &format!("gemm {n}^3, uniform-like (2^-1..2^1)"),
            "Matrixmultiply (dgemm)",
            duel(
                reps,
                || exact::gemm(n, n, n, &a, &b),
                || plain_gemm(n, &a, &b, &mut c),
            ),
        );
        let mut reused = exact::Gemm::new();
        row(
            &format!("Gemm (reused buffers) {n}^3"),
            "Matrixmultiply (dgemm)",
            duel(
                reps,
                || reused.gemm(n, n, n, &a, &b),
                || plain_gemm(n, &a, &b, &mut c),
            ),
        );
    }
    // As the exponent range of the inputs widens, more elements need the exact dot.
    let n = 512;
    let mut c = vec![0.0; n * n];
    for (lo, hi) in [(-10, 10), (-30, 30), (-100, 100), (-1000, 1000)] {
        let a = workloads::spread(n * n, lo, hi, 7);
        let b = workloads::spread(n * n, lo, hi, 8);
        row(
            &format!("gemm {n}^3, exponents 2^{lo}..2^{hi}"),
            "Matrixmultiply (dgemm)",
            duel(
                reps.min(3),
                || exact::gemm(n, n, n, &a, &b),
                || plain_gemm(n, &a, &b, &mut c),
            ),
        );
    }
    let n = 1024;
    let a: Vec<f32> = workloads::spread(n * n, -1, 0, 9)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let b: Vec<f32> = workloads::spread(n * n, -1, 0, 10)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let mut c = vec![0.0f32; n * n];
    row(
        &format!("gemm f32 {n}^3"),
        "matrixmultiply::sgemm (same split)",
        duel(
            reps.min(5),
            || exact::gemm(n, n, n, &a, &b),
            || plain_sgemm(n, &a, &b, &mut c),
        ),
    );
    let n = 2048;
    let a = workloads::spread(n * n, -1, 0, 11);
    let b = workloads::spread(n * n, -1, 0, 12);
    let mut c = vec![0.0; n * n];
    row(
        &format!("gemm {n}^3 (one run)"),
        "Matrixmultiply (dgemm)",
        once(
            || exact::gemm(n, n, n, &a, &b),
            || plain_gemm(n, &a, &b, &mut c),
        ),
    );
}

fn main() {
    let reps = std::env::var("FPREV_EXACT_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let only = std::env::args().nth(1).unwrap_or_default();
    let wants = |part: &str| only.is_empty() || only == part;
    println!(
        "{} rayon threads, {reps} alternating runs each (ms: fastest run)\n",
        rayon::current_num_threads()
    );
    println!("| exact                              | ms       | baseline                          | ms       | ratio  | ratio of medians |");
    println!("|------------------------------------|----------|-----------------------------------|----------|--------|--------|");

    if wants("sum") {
        sums(reps);
    }
    if wants("dot") {
        dots(reps);
    }
    if wants("gemm") {
        gemm_rows(reps);
    }
}

fn sums(reps: usize) {
    let xs = workloads::moderate(1 << 26, 1);
    row(
        "par_sum, 2^26, range 1e-6..1e6",
        "rayon par_iter().sum()",
        duel(reps, || exact::par_sum(&xs), || xs.par_iter().sum::<f64>()),
    );
    row(
        "sum, 2^26, range 1e-6..1e6",
        "iter().sum()",
        duel(reps, || exact::sum(&xs), || xs.iter().sum::<f64>()),
    );
    drop(xs);

    let xs = workloads::worst(1 << 24, 2);
    let agree = [
        {
            let mut large = XsumLarge::new();
            large.add_list(&xs);
            large.sum()
        },
        {
            let mut auto = XsumAuto::new();
            auto.add_list(&xs);
            auto.sum()
        },
        xs.iter()
            .copied()
            .sum_with_accumulator::<OnlineExactSum<f64>>(),
    ]
    .map(|v| v.to_bits() == exact::sum(&xs).to_bits());
    let sum = || exact::sum(&xs);
    row(
        "sum, 2^24, range 1e-301..1e301",
        "xsum XsumAuto",
        duel(reps.min(5), sum, || {
            let mut acc = XsumAuto::new();
            acc.add_list(&xs);
            acc.sum()
        }),
    );
    row(
        "sum, 2^24, range 1e-301..1e301",
        "xsum XsumLarge (wrong bits, below)",
        duel(reps, sum, || {
            let mut acc = XsumLarge::new();
            acc.add_list(&xs);
            acc.sum()
        }),
    );
    row(
        "sum, 2^24, range 1e-301..1e301",
        "accurate OnlineExactSum",
        duel(reps.min(5), sum, || {
            xs.iter()
                .copied()
                .sum_with_accumulator::<OnlineExactSum<f64>>()
        }),
    );
    row(
        "par_sum, 2^24, range 1e-301..1e301",
        "accurate OnlineExactSum, parallel",
        duel(
            reps.min(5),
            || exact::par_sum(&xs),
            || {
                xs.par_iter()
                    .copied()
                    .parallel_sum_with_accumulator::<OnlineExactSum<f64>>()
            },
        ),
    );
    row(
        "par_sum, 2^24, range 1e-301..1e301",
        "rayon par_iter().sum()",
        duel(reps, || exact::par_sum(&xs), || xs.par_iter().sum::<f64>()),
    );
    println!(
        "\nsame bits as exact::sum on the 1e-301..1e301 input: xsum XsumLarge {}, XsumAuto {}, \
         accurate {}",
        agree[0], agree[1], agree[2]
    );
    // XsumLarge 0.1.6 goes wrong on long inputs with a moderate range; say so if it does.
    let xs = workloads::moderate(1 << 22, 1);
    let mut large = XsumLarge::new();
    large.add_list(&xs);
    println!(
        "same bits on 2^22 values in 1e-6..1e6: xsum XsumLarge {} ({:e} vs exact {:e})\n",
        large.sum().to_bits() == exact::sum(&xs).to_bits(),
        large.sum(),
        exact::sum(&xs)
    );
}

fn dots(reps: usize) {
    let x = workloads::moderate(1_000_000, 3);
    let y = workloads::moderate(1_000_000, 4);
    let many = reps * 5;
    row(
        "dot, 1e6",
        "plain dot (zip/map/sum)",
        duel(many, || exact::dot(&x, &y), || workloads::plain_dot(&x, &y)),
    );
    row(
        "par_dot, 1e6",
        "rayon plain dot",
        duel(
            many,
            || exact::par_dot(&x, &y),
            || x.par_iter().zip(&y).map(|(a, b)| a * b).sum::<f64>(),
        ),
    );
    row(
        "ozaki_dot, 1e6",
        "plain dot (zip/map/sum)",
        duel(
            reps.min(5),
            || exact::ozaki_dot(&x, &y),
            || workloads::plain_dot(&x, &y),
        ),
    );
}
