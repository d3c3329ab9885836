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

use fprev::scramble::reduce::{combine, CombineShape};
use fprev::scramble::rng::{shuffle_with, stream};
use fprev::scramble::{shuffle, with_config, ScrambleConfig, Shuffle};

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

/// CPU seconds this process has used (utime + stime from /proc, 10 ms ticks): on a
/// shared machine it counts only the time we actually had a core.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 0 {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    }
}

/// Seconds per call of the plain and the compiled-in-but-off kernel, one sample of each
/// per round.
struct Paired {
    plain: Vec<f64>,
    off: Vec<f64>,
}

/// Plain and off alternate on the same `data` (so that page placement cannot favour
/// one), in the order ABBA within each round so that drift and neighbours on the
/// machine hit both alike; each sample runs `calls` calls, tens of milliseconds, far
/// above the timer's resolution and a scheduler tick's noise.
fn paired<D>(
    rounds: usize,
    calls: usize,
    data: &mut D,
    mut plain: impl FnMut(&mut D),
    mut off: impl FnMut(&mut D),
) -> Paired {
    let mut sample = |f: &mut dyn FnMut(&mut D)| {
        let t = Instant::now();
        for _ in 0..calls {
            f(data);
        }
        t.elapsed().as_secs_f64() / calls as f64
    };
    // One untimed round: caches, pages and branch predictors warm for both.
    sample(&mut plain);
    sample(&mut off);
    let mut p = Paired {
        plain: Vec::new(),
        off: Vec::new(),
    };
    for round in 0..rounds {
        if round % 2 == 0 {
            p.plain.push(sample(&mut plain));
            p.off.push(sample(&mut off));
        } else {
            p.off.push(sample(&mut off));
            p.plain.push(sample(&mut plain));
        }
    }
    p
}

impl Paired {
    /// Medians of both, the difference of the medians and the median of the per-round
    /// ratios off/plain (with its quartiles): the ratio of two samples taken a few
    /// milliseconds apart is far less disturbed than either time alone.
    fn report(&self) -> String {
        let (plain, off) = (median(&self.plain), median(&self.off));
        let mut ratios: Vec<f64> = self
            .off
            .iter()
            .zip(&self.plain)
            .map(|(o, p)| o / p - 1.0)
            .collect();
        ratios.sort_by(f64::total_cmp);
        let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f).round() as usize] * 100.0;
        format!(
            "plain {:.2?}, off {:.2?} (medians {:+.2}%; per-round off/plain {:+.2}%, quartiles {:+.2}% .. {:+.2}%, {} rounds)",
            Duration::from_secs_f64(plain),
            Duration::from_secs_f64(off),
            (off / plain - 1.0) * 100.0,
            median(&ratios) * 100.0,
            q(0.25),
            q(0.75),
            ratios.len()
        )
    }

    fn plain_median(&self) -> f64 {
        median(&self.plain)
    }
}

/// In-place generation rate of `shuffle` on `n` u32: best of 20 single shuffles (wall),
/// and about half a CPU second of back-to-back shuffles (by CPU time).
fn permutation_rate(sh: Shuffle, n: usize) {
    let mut rng = stream(1, 2, 3);
    let mut p: Vec<u32> = (0..n as u32).collect();
    let wall = best(20, || shuffle(sh, &mut p, &mut rng));
    let callback = best(20, || shuffle_with(sh, n, &mut rng, |i, j| p.swap(i, j)));
    let reps = (100_000_000 / n).max(1);
    let (c0, t0) = (cpu_seconds(), Instant::now());
    for _ in 0..reps {
        shuffle(sh, &mut p, &mut rng);
    }
    let (c1, elapsed) = (cpu_seconds(), t0.elapsed());
    let cpu = match (c0, c1) {
        (Some(a), Some(b)) if b > a => format!("{:.0}", (reps * n) as f64 / (b - a) / 1e6),
        _ => "?".to_string(),
    };
    let rate = |t: Duration| n as f64 / t.as_secs_f64() / 1e6;
    println!(
        "  {:<12} n = 2^{:<2}: {:>4.0} wall best-of-20, {:>4} per CPU second, {:>4.0} wall sustained; shuffle_with (swap callback) {:>4.0} best-of-20",
        sh.name(),
        n.trailing_zeros(),
        rate(wall),
        cpu,
        (reps * n) as f64 / elapsed.as_secs_f64() / 1e6,
        rate(callback)
    );
}

fn main() {
    println!("permutation generation (shuffle() in place on u32, one thread; M indices/s):");
    for sh in [Shuffle::FisherYates, Shuffle::Sattolo] {
        for n in [1 << 10, 1 << 16, 1 << 20] {
            permutation_rate(sh, n);
        }
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

    let mut small: Vec<f32> = (0..4096).map(|i| i as f32 * 1e-3).collect();
    let mut big = vec![1.0f32; 1 << 22];
    let on = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .seed(1);
    with_config(&ScrambleConfig::off(), || {
        // About 10 ms per sample (4096 sin*cos take some 40 µs).
        let compute = paired(
            40,
            250,
            &mut small,
            |v| {
                black_box(kernels::compute_plain(black_box(v)));
            },
            |v| {
                black_box(kernels::compute_scrambled(black_box(v)));
            },
        );
        let on_t = with_config(&on, || {
            best(200, || {
                black_box(kernels::compute_scrambled(black_box(&small)));
            })
        });
        println!(
            "compute-bound loop (4096 x sin*cos): {}; on x{:.2}",
            compute.report(),
            on_t.as_secs_f64() / compute.plain_median()
        );
        // About 30 ms per sample (a 16 MiB streaming pass takes some 2 ms), on one array.
        let memory = paired(
            30,
            16,
            &mut big,
            |v| kernels::memory_plain(black_box(v)),
            |v| kernels::memory_scrambled(black_box(v)),
        );
        let on_t = with_config(&on, || {
            best(5, || kernels::memory_scrambled(black_box(&mut big)))
        });
        println!(
            "memory-bound loop (2^22 f32 streaming update, no reduction: never rewritten): {}; on x{:.2}",
            memory.report(),
            on_t.as_secs_f64() / memory.plain_median()
        );
        reduction();
        keyed();
    });
}

/// A keyed reduction: column sums of a 4000 x 32 matrix (`acc[j] += row[j]`, a reduction
/// per column), plain vs compiled in but off, and on under 8 seeds (each its own shape
/// for the site).
fn keyed() {
    let (n, p) = (4000, 32);
    let mut x: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..p)
                .map(|j| ((i * 31 + j * 7) % 1013) as f64 * 1e-3)
                .collect()
        })
        .collect();
    let paired = paired(
        30,
        40,
        &mut x,
        |x| {
            black_box(kernels::column_sums_plain(black_box(x), p));
        },
        |x| {
            black_box(kernels::column_sums_scrambled(black_box(x), p));
        },
    );
    let plain = paired.plain_median();
    println!(
        "keyed reduction (column sums, 4000 x 32 f64, `acc[j] += row[j]`): {}",
        paired.report()
    );
    let mut on: Vec<f64> = (1..=8)
        .map(|seed| {
            let shapes = ScrambleConfig::off()
                .shuffle(Some(Shuffle::FisherYates))
                .shapes(true)
                .seed(seed);
            with_config(&shapes, || {
                best(15, || {
                    black_box(kernels::column_sums_scrambled(black_box(&x), p));
                })
            })
            .as_secs_f64()
        })
        .collect();
    on.sort_by(f64::total_cmp);
    println!(
        "  on, default shapes (8 seeds, best of 15 calls each): median x{:.2}, fastest x{:.2}, slowest x{:.2} of plain",
        median(&on) / plain,
        on[0] / plain,
        on[on.len() - 1] / plain
    );
}

/// The issue's anchor: a memory-bound 1e6-term f64 reduction, plain vs compiled in but
/// off vs on with the default shapes, and the combining cost of each shape alone.
fn reduction() {
    let mut terms: Vec<f64> = (0..1_000_000).map(|i| (i % 1000) as f64 * 1e-3).collect();
    let paired = paired(
        30,
        20,
        &mut terms,
        |v| {
            black_box(kernels::reduction_plain(black_box(v)));
        },
        |v| {
            black_box(kernels::reduction_scrambled(black_box(v)));
        },
    );
    let plain = paired.plain_median();
    println!(
        "memory-bound reduction (1e6 f64, `s += x`): {}",
        paired.report()
    );
    // On: each call draws the next shape of the mix; median over 60 calls.
    let shapes = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true)
        .seed(1);
    let mut on: Vec<f64> = with_config(&shapes, || {
        (0..60)
            .map(|_| {
                let t = Instant::now();
                black_box(kernels::reduction_scrambled(black_box(&terms)));
                t.elapsed().as_secs_f64()
            })
            .collect()
    });
    on.sort_by(f64::total_cmp);
    println!(
        "  on, default shapes (60 calls, one drawn shape each): median x{:.2}, quartiles x{:.2} .. x{:.2}, fastest x{:.2}, slowest x{:.2} of plain",
        median(&on) / plain,
        on[on.len() / 4] / plain,
        on[3 * on.len() / 4] / plain,
        on[0] / plain,
        on[on.len() - 1] / plain
    );
    println!(
        "  combining cost of each shape alone (reduce::combine over the same terms, best of 7):"
    );
    for shape in [
        CombineShape::Sequential,
        CombineShape::Lanes {
            lanes: 8,
            pairwise: true,
        },
        CombineShape::Lanes {
            lanes: 32,
            pairwise: false,
        },
        CombineShape::Blocked { block: 256 },
        CombineShape::Pairwise,
        CombineShape::Permuted(Shuffle::FisherYates),
        CombineShape::Permuted(Shuffle::Sattolo),
        CombineShape::Threads { threads: 8 },
        CombineShape::RandomTree,
    ] {
        let mut rng = stream(1, 2, 3);
        let t = best(7, || {
            black_box(combine(shape, black_box(&terms), &mut rng));
        });
        println!(
            "    {:<28} x{:.2}",
            shape.to_string(),
            t.as_secs_f64() / plain
        );
    }
}
