//! The revelation engine's cost table: wall time, probes, and the ratio of wall time to
//! (calls x one bare call), for several orders and sizes, FPRev (random and smallest
//! pivot) and Basic, f32.
//!
//! ```text
//! cargo run --release --example reveal_table            # n = 2^4 .. 2^14
//! FPREV_TABLE_MAX_LOG2=16 cargo run --release --example reveal_table
//! FPREV_TABLE_ORDERS=numpy-pairwise FPREV_TABLE_LOG2=13,17 cargo run --release --example reveal_table
//! ```
//!
//! Times are medians of several runs; the bare call is the median of many calls of the
//! target on one input. A ratio near 1.0 means the engine adds nothing to the target's
//! own cost. `par` reveals with `run_sync` (probes of a row answered on both cores).

use std::time::{Duration, Instant};

use fprev::reveal::Pivot;
use fprev::target::{FnTarget, SyncFnTarget};
use fprev::{Algorithm, Reveal, SumTree};
use rand::{Rng, SeedableRng};

/// A summation target as the table calls it.
type Sum<'a> = &'a (dyn Fn(&[f32]) -> f32 + Sync);

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

/// NumPy's float32 pairwise sum (numpy/_core/src/umath/loops_utils.h.src, pairwise_sum):
/// 8 lanes per block of at most 128, blocks split in halves rounded to multiples of 8.
fn numpy_pairwise(a: &[f32]) -> f32 {
    let n = a.len();
    if n < 8 {
        let mut s = 0.0f32;
        for &v in a {
            s += v;
        }
        s
    } else if n <= 128 {
        let mut r = [0.0f32; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i + 8 <= n {
            for k in 0..8 {
                r[k] += a[i + k];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        numpy_pairwise(&a[..n2]) + numpy_pairwise(&a[n2..])
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn bare_call(f: &dyn Fn(&[f32]) -> f32, n: usize) -> Duration {
    let x = vec![1.0f32; n];
    let reps = (2_000_000 / n).clamp(20, 20_000);
    let mut samples = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..reps {
            std::hint::black_box(f(std::hint::black_box(&x)));
        }
        samples.push(t.elapsed() / reps as u32);
    }
    median(samples)
}

struct Row {
    order: &'static str,
    n: usize,
    how: String,
    wall: Duration,
    probes: u64,
    bare: Duration,
    par: bool,
}

fn measure(
    order: &'static str,
    n: usize,
    f: &(dyn Fn(&[f32]) -> f32 + Sync),
    algorithm: Algorithm,
    pivot: Pivot,
    par: bool,
    bare: Duration,
) -> Row {
    let runs = if n >= 1 << 14 { 3 } else { 5 };
    let mut walls = Vec::new();
    let mut probes = 0;
    for run in 0..runs {
        let r = Reveal::new(n).algorithm(algorithm).pivot(pivot).seed(run);
        let t = Instant::now();
        let report = if par {
            r.run_target(SyncFnTarget(f))
        } else {
            r.run_target(FnTarget(f))
        };
        walls.push(t.elapsed());
        let report = report.unwrap_or_else(|e| panic!("{order} n={n}: {e}"));
        probes = report.probes;
    }
    let how = match (algorithm, pivot) {
        (Algorithm::Basic, _) => "basic".to_string(),
        (_, Pivot::Smallest) => "fprev/smallest".to_string(),
        _ => "fprev/random".to_string(),
    };
    Row {
        order,
        n,
        how,
        wall: median(walls),
        probes,
        bare,
        par,
    }
}

fn main() {
    let max_log2: u32 = std::env::var("FPREV_TABLE_MAX_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(14);
    let only: Option<Vec<String>> = std::env::var("FPREV_TABLE_ORDERS")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let sizes: Vec<u32> = match std::env::var("FPREV_TABLE_LOG2") {
        Ok(v) => v.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
        Err(_) => (4..=max_log2).step_by(2).collect(),
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let mut rows = Vec::new();
    for log2 in sizes {
        let n = 1usize << log2;
        // A random binary tree: repeatedly add two random partial sums.
        let mut pool: Vec<usize> = (0..n).collect();
        let mut nodes = Vec::new();
        while pool.len() > 1 {
            let a = pool.swap_remove(rng.random_range(0..pool.len()));
            let b = pool.swap_remove(rng.random_range(0..pool.len()));
            nodes.push(vec![a, b]);
            pool.push(n + nodes.len() - 1);
        }
        let random_tree = SumTree::from_nodes(n, nodes).expect("valid tree");
        let random = |x: &[f32]| random_tree.replay(x);
        let orders: [(&'static str, Sum); 5] = [
            ("sequential", &sequential),
            ("reverse", &reverse),
            ("numpy-pairwise", &numpy_pairwise),
            ("balanced", &balanced),
            ("random", &random),
        ];
        for (name, f) in orders {
            if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == name)) {
                continue;
            }
            let bare = bare_call(f, n);
            rows.push(measure(
                name,
                n,
                f,
                Algorithm::FPRev,
                Pivot::Random,
                false,
                bare,
            ));
            if name == "numpy-pairwise" {
                rows.push(measure(
                    name,
                    n,
                    f,
                    Algorithm::FPRev,
                    Pivot::Random,
                    true,
                    bare,
                ));
            }
            if n <= 1 << 11 || name == "sequential" {
                rows.push(measure(
                    name,
                    n,
                    f,
                    Algorithm::FPRev,
                    Pivot::Smallest,
                    false,
                    bare,
                ));
            }
            if n <= 1 << 10 {
                rows.push(measure(
                    name,
                    n,
                    f,
                    Algorithm::Basic,
                    Pivot::Random,
                    false,
                    bare,
                ));
            }
        }
    }
    println!(
        "| order | n | algorithm | wall (median) | probes | bare call | wall / (probes x bare) |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|");
    for r in rows {
        let ideal = r.bare.as_secs_f64() * (r.probes + 8) as f64;
        println!(
            "| {} | {} | {}{} | {:.3} ms | {} | {:.2} us | {:.2} |",
            r.order,
            r.n,
            r.how,
            if r.par { " (par)" } else { "" },
            r.wall.as_secs_f64() * 1e3,
            r.probes,
            r.bare.as_secs_f64() * 1e6,
            r.wall.as_secs_f64() / ideal
        );
    }
}
