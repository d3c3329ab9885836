//! The revelation engine's cost table: wall time, calls, and the ratio of wall time to
//! (calls x one bare call), for several orders and sizes, f32. Methods: `default` (guess
//! a known order and prove it, else search), FPRev's search alone with random or smallest
//! pivots, and Basic.
//!
//! ```text
//! cargo run --release --example reveal_table            # n = 2^4 .. 2^14
//! FPREV_TABLE_MAX_LOG2=16 cargo run --release --example reveal_table
//! FPREV_TABLE_ORDERS=numpy-pairwise FPREV_TABLE_LOG2=13,17 cargo run --release --example reveal_table
//! ```
//!
//! Times are medians of several runs; calls are probes plus the replay checks. Before each
//! run the bare call is timed over as many back-to-back calls on one input (the machine's
//! speed drifts), and the ratio is the median over runs of wall / (calls x bare): near 1.0
//! means the engine adds nothing to the target's own cost. `par` reveals with `run_sync`
//! (probes of a batch answered on every core).

use std::time::{Duration, Instant};

use fprev::reveal::Pivot;
use fprev::target::{FnTarget, SyncFnTarget};
use fprev::{orders, Algorithm, Reveal, SumTree};
use rand::{Rng, SeedableRng};

/// A summation target as the table calls it.
type Sum<'a> = &'a (dyn Fn(&[f32]) -> f32 + Sync);

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Time of one bare call, from a block of `calls` back-to-back calls on one input (at
/// most about 0.2 s of them).
fn bare_call(f: &dyn Fn(&[f32]) -> f32, n: usize, calls: u64) -> Duration {
    let x = vec![1.0f32; n];
    let reps = calls.clamp(20, (200_000_000 / n as u64).max(20));
    let t = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(f(std::hint::black_box(&x)));
    }
    t.elapsed() / reps as u32
}

struct Row {
    order: &'static str,
    n: usize,
    how: &'static str,
    wall: Duration,
    calls: u64,
    bare: Duration,
    /// Median over runs of wall / (calls x bare), each bare timed right before its run.
    ratio: f64,
    par: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Method {
    /// The defaults: known orders guessed and proved, else FPRev with random pivots.
    Default,
    /// FPRev's search alone.
    Search(Pivot),
    Basic,
}

fn measure(
    order: &'static str,
    n: usize,
    f: &(dyn Fn(&[f32]) -> f32 + Sync),
    method: Method,
    par: bool,
) -> Row {
    let runs = if n >= 1 << 14 { 3 } else { 7 };
    let reveal = |run: u64| {
        let r = match method {
            Method::Default => Reveal::new(n),
            Method::Search(pivot) => Reveal::new(n).known_orders(false).pivot(pivot),
            Method::Basic => Reveal::new(n).algorithm(Algorithm::Basic),
        }
        .seed(run);
        let t = Instant::now();
        let report = if par {
            r.run_target(SyncFnTarget(f))
        } else {
            r.run_target(FnTarget(f))
        };
        let wall = t.elapsed();
        let report = report.unwrap_or_else(|e| panic!("{order} n={n}: {e}"));
        (wall, report.probes + report.replays)
    };
    // The machine's speed drifts: time the bare calls right before each run, so every
    // ratio compares times taken moments apart. A first run warms up and counts calls.
    let (_, mut calls) = reveal(0);
    let (mut walls, mut bares, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let bare = bare_call(f, n, calls);
        let (wall, c) = reveal(run);
        calls = c;
        ratios.push(wall.as_secs_f64() / (bare.as_secs_f64() * c as f64));
        walls.push(wall);
        bares.push(bare);
    }
    ratios.sort_by(f64::total_cmp);
    let how = match method {
        Method::Default => "default",
        Method::Search(Pivot::Smallest) => "search/smallest",
        Method::Search(_) => "search/random",
        Method::Basic => "basic",
    };
    Row {
        order,
        n,
        how,
        wall: median(walls),
        calls,
        bare: median(bares),
        ratio: ratios[ratios.len() / 2],
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
            ("sequential", &orders::sequential::<f32>),
            ("reverse", &orders::reverse::<f32>),
            ("numpy-pairwise", &orders::numpy_pairwise::<f32>),
            ("balanced", &orders::balanced::<f32>),
            ("random", &random),
        ];
        for (name, f) in orders {
            if only.as_ref().is_some_and(|o| !o.iter().any(|x| x == name)) {
                continue;
            }
            let mut methods = vec![
                (Method::Default, false),
                (Method::Search(Pivot::Random), false),
            ];
            if name == "numpy-pairwise" {
                methods.push((Method::Default, true));
                methods.push((Method::Search(Pivot::Random), true));
            }
            if n <= 1 << 11 || name == "sequential" {
                methods.push((Method::Search(Pivot::Smallest), false));
            }
            if n <= 1 << 10 {
                methods.push((Method::Basic, false));
            }
            for (method, par) in methods {
                rows.push(measure(name, n, f, method, par));
            }
        }
    }
    println!("| order | n | method | wall (median) | calls | bare call | wall / (calls x bare) |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {}{} | {:.3} ms | {} | {:.2} us | {:.2} |",
            r.order,
            r.n,
            r.how,
            if r.par { " (par)" } else { "" },
            r.wall.as_secs_f64() * 1e3,
            r.calls,
            r.bare.as_secs_f64() * 1e6,
            r.ratio
        );
    }
}
