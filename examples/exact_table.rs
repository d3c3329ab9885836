//! Prints how much exactness costs: `fprev::exact` against plain sums and against the
//! `accurate` and `xsum` crates, as medians of several runs.
//!
//! `cargo run --release --example exact_table` (set `FPREV_EXACT_REPS` for more runs).

#[path = "../benches/common/exact_workloads.rs"]
mod workloads;

use accurate::sum::OnlineExactSum;
use accurate::traits::*;
use fprev::exact;
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;
use xsum::{Xsum, XsumLarge};

/// Median wall time of `reps` runs of `f`, in milliseconds.
fn median_ms<R>(reps: usize, mut f: impl FnMut() -> R) -> f64 {
    black_box(f()); // warm up caches and the thread pool
    let mut times: Vec<f64> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn row(name: &str, baseline: &str, ms: f64, base_ms: f64) {
    println!(
        "| {name:<34} | {ms:>9.2} | {baseline:<30} | {base_ms:>9.2} | {:>6.2}x |",
        ms / base_ms
    );
}

fn main() {
    let reps = std::env::var("FPREV_EXACT_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    println!(
        "{} rayon threads, median of {reps} runs\n",
        rayon::current_num_threads()
    );
    println!("| exact                              |   ms      | baseline                       |   ms      | ratio   |");
    println!("|------------------------------------|-----------|--------------------------------|-----------|---------|");

    let n = 1 << 26;
    let xs = workloads::moderate(n, 1);
    let plain = median_ms(reps, || xs.par_iter().sum::<f64>());
    let ours = median_ms(reps, || exact::par_sum(&xs));
    row(
        "par_sum, 2^26, moderate range",
        "rayon par_iter().sum()",
        ours,
        plain,
    );
    let plain_seq = median_ms(reps, || xs.iter().sum::<f64>());
    let ours_seq = median_ms(reps, || exact::sum(&xs));
    row(
        "sum, 2^26, moderate range",
        "iter().sum()",
        ours_seq,
        plain_seq,
    );
    drop(xs);

    let n = 1 << 24;
    let xs = workloads::worst(n, 2);
    let ours = median_ms(reps, || exact::sum(&xs));
    let ours_par = median_ms(reps, || exact::par_sum(&xs));
    let xsum_ms = median_ms(reps, || {
        let mut acc = XsumLarge::new();
        acc.add_list(&xs);
        acc.sum()
    });
    let accurate_ms = median_ms(reps.min(3), || {
        xs.iter()
            .copied()
            .sum_with_accumulator::<OnlineExactSum<f64>>()
    });
    let accurate_par = median_ms(reps.min(3), || {
        xs.par_iter()
            .copied()
            .parallel_sum_with_accumulator::<OnlineExactSum<f64>>()
    });
    let plain_par = median_ms(reps, || xs.par_iter().sum::<f64>());
    row(
        "sum, 2^24, range 1e-301..1e301",
        "xsum XsumLarge",
        ours,
        xsum_ms,
    );
    row(
        "sum, 2^24, range 1e-301..1e301",
        "accurate OnlineExactSum",
        ours,
        accurate_ms,
    );
    row(
        "par_sum, 2^24, range 1e-301..1e301",
        "accurate OnlineExactSum (par)",
        ours_par,
        accurate_par,
    );
    row(
        "par_sum, 2^24, range 1e-301..1e301",
        "rayon par_iter().sum()",
        ours_par,
        plain_par,
    );
    drop(xs);

    let n = 1_000_000;
    let x = workloads::moderate(n, 3);
    let y = workloads::moderate(n, 4);
    let dot_reps = reps * 5;
    let plain = median_ms(dot_reps, || workloads::plain_dot(&x, &y));
    let ours = median_ms(dot_reps, || exact::dot(&x, &y));
    let ours_par = median_ms(dot_reps, || exact::par_dot(&x, &y));
    let plain_par = median_ms(dot_reps, || {
        x.par_iter().zip(&y).map(|(a, b)| a * b).sum::<f64>()
    });
    let ozaki = median_ms(reps, || exact::ozaki_dot(&x, &y));
    row("dot, 1e6", "plain dot (zip/map/sum)", ours, plain);
    row("par_dot, 1e6", "rayon plain dot", ours_par, plain_par);
    row("ozaki_dot, 1e6", "plain dot (zip/map/sum)", ozaki, plain);
}
