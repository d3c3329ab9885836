//! Prints how much exactness costs: `fprev::exact` against plain sums and against the
//! `accurate` and `xsum` crates, as medians of several runs.
//!
//! `cargo run --release --example exact_table` (set `FPREV_EXACT_REPS` for more runs).
//! Each pair of contenders runs alternately, so background load hits both alike. On a
//! shared machine a run is sometimes preempted for a whole scheduler slice, which inflates
//! medians; the fastest run of each is the better estimate of the intrinsic cost, so the
//! table shows both ratios.

#[path = "../benches/common/exact_workloads.rs"]
mod workloads;

use accurate::sum::OnlineExactSum;
use accurate::traits::*;
use fprev::exact;
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
struct Stats {
    min: f64,
    median: f64,
}

fn stats(mut v: Vec<f64>) -> Stats {
    v.sort_by(f64::total_cmp);
    Stats {
        min: v[0],
        median: v[v.len() / 2],
    }
}

/// Timings of `reps` alternating runs of `ours` and `base`, in milliseconds.
fn duel<A, B>(
    reps: usize,
    mut ours: impl FnMut() -> A,
    mut base: impl FnMut() -> B,
) -> (Stats, Stats) {
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

fn row(name: &str, baseline: &str, (ours, base): (Stats, Stats)) {
    println!(
        "| {name:<34} | {:>8.2} | {baseline:<33} | {:>8.2} | {:>5.2}x | {:>5.2}x |",
        ours.min,
        base.min,
        ours.min / base.min,
        ours.median / base.median
    );
}

fn main() {
    let reps = std::env::var("FPREV_EXACT_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    println!(
        "{} rayon threads, {reps} alternating runs each (ms: fastest run)\n",
        rayon::current_num_threads()
    );
    println!("| exact                              | ms       | baseline                          | ms       | ratio  | ratio of medians |");
    println!("|------------------------------------|----------|-----------------------------------|----------|--------|--------|");

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
    drop(xs);

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
        "same bits on 2^22 values in 1e-6..1e6: xsum XsumLarge {} ({:e} vs exact {:e})",
        large.sum().to_bits() == exact::sum(&xs).to_bits(),
        large.sum(),
        exact::sum(&xs)
    );
}
