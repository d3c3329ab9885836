//! The cost of scrambling as ratios from one run (single thread):
//! permutation generation rate, plain vs compiled-in-but-off vs on.
//!
//! ```text
//! cargo run --release --example scramble_overhead
//! ```

#[path = "../benches/kernels.rs"]
mod kernels;

use std::hint::black_box;
use std::time::{Duration, Instant};

use fprev::scramble::rng::{shuffle_with, stream};
use fprev::scramble::{with_config, ScrambleConfig, Shuffle};

/// Best of `reps` timings of `f` (the least disturbed by the other jobs on the machine).
fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// Plain and off interleaved, best of many rounds each, so drift hits both alike.
fn paired(rounds: usize, mut plain: impl FnMut(), mut off: impl FnMut()) -> (Duration, Duration) {
    let (mut p, mut o) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        p = p.min(best(1, &mut plain));
        o = o.min(best(1, &mut off));
    }
    (p, o)
}

/// CPU seconds this process has used (utime + stime from /proc, 10 ms ticks): on a
/// shared machine it counts only the time we actually had a core.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn permutation_rate(n: usize) {
    let mut rng = stream(1, 2, 3);
    let mut p: Vec<u32> = (0..n as u32).collect();
    let wall = best(20, || {
        shuffle_with(Shuffle::FisherYates, n, &mut rng, |i, j| p.swap(i, j))
    });
    // About two CPU seconds of shuffling, timed by CPU time.
    let reps = (400_000_000 / n).max(1);
    let (c0, t0) = (cpu_seconds(), Instant::now());
    for _ in 0..reps {
        shuffle_with(Shuffle::FisherYates, n, &mut rng, |i, j| p.swap(i, j));
    }
    let (c1, elapsed) = (cpu_seconds(), t0.elapsed());
    let cpu = match (c0, c1) {
        (Some(a), Some(b)) if b > a => format!("{:.0}", (reps * n) as f64 / (b - a) / 1e6),
        _ => "?".to_string(),
    };
    println!(
        "  n = 2^{:<2}: {:>4} M indices/s per CPU second, {:>4.0} wall best-of-20, {:>4.0} wall sustained",
        n.trailing_zeros(),
        cpu,
        n as f64 / wall.as_secs_f64() / 1e6,
        (reps * n) as f64 / elapsed.as_secs_f64() / 1e6
    );
}

fn main() {
    println!("permutation generation (Fisher-Yates in place on u32, one thread):");
    for n in [1 << 10, 1 << 16, 1 << 20] {
        permutation_rate(n);
    }
    let n = 1 << 16;
    let mut rng = stream(1, 2, 3);
    let t = best(20, || {
        drop(black_box(fprev::scramble::permutation(
            Shuffle::FisherYates,
            n,
            &mut rng,
        )))
    });
    println!(
        "  permutation() with allocation and identity fill, n = 2^16: {:.0} M indices/s wall",
        n as f64 / t.as_secs_f64() / 1e6
    );

    let small: Vec<f32> = (0..4096).map(|i| i as f32 * 1e-3).collect();
    let (mut big, mut big2) = (vec![1.0f32; 1 << 22], vec![1.0f32; 1 << 22]);
    let on = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .seed(1);
    let reps = 200;
    with_config(&ScrambleConfig::off(), || {
        let (plain, off) = paired(
            reps,
            || {
                black_box(kernels::compute_plain(black_box(&small)));
            },
            || {
                black_box(kernels::compute_scrambled(black_box(&small)));
            },
        );
        let on_t = with_config(&on, || {
            best(reps, || {
                black_box(kernels::compute_scrambled(black_box(&small)));
            })
        });
        println!(
            "compute-bound loop (4096 x sin*cos): plain {plain:.2?}, off {off:.2?} ({:+.2}%), on {on_t:.2?} (x{:.2})",
            (off.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0,
            on_t.as_secs_f64() / plain.as_secs_f64()
        );
        let (plain, off) = paired(
            reps / 4,
            || kernels::memory_plain(black_box(&mut big)),
            || kernels::memory_scrambled(black_box(&mut big2)),
        );
        let on_t = with_config(&on, || {
            best(5, || kernels::memory_scrambled(black_box(&mut big)))
        });
        println!(
            "memory-bound loop (2^22 f32 streaming update): plain {plain:.2?}, off {off:.2?} ({:+.2}%), on {on_t:.2?} (x{:.1})",
            (off.as_secs_f64() / plain.as_secs_f64() - 1.0) * 100.0,
            on_t.as_secs_f64() / plain.as_secs_f64()
        );
    });
}
