//! Measured costs of revealing real operations, printed as a table.
//!
//! `cargo run --release --example ops_table` (needs python3 on PATH for the exec rows).

#[allow(dead_code)]
#[path = "../src/builtins.rs"]
mod builtins;
#[allow(dead_code)]
#[path = "../src/exec.rs"]
mod exec;

use std::time::{Duration, Instant};

use builtins::Size;
use fprev::ops::ElementReveal;
use fprev::target::{Probe, ProbeBatch, Target};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn gemm_row(n: usize, runs: usize) {
    let mut times = Vec::new();
    let mut calls = 0;
    let mut uniform = true;
    for _ in 0..runs {
        let start = Instant::now();
        let o = builtins::reveal::<f32>(
            "matrixmultiply-gemm",
            Size::square(n),
            &ElementReveal::new(),
            None,
        )
        .expect("sgemm reveal");
        times.push(start.elapsed().as_secs_f64());
        calls = o.calls;
        uniform &= o.is_uniform();
    }
    println!(
        "| sgemm {n}x{n}x{n} (matrixmultiply), all elements | {calls} sgemm calls | median {:.3} s of {runs} | one order: {uniform} |",
        median(times)
    );
}

fn exec_row(n: usize, probes: usize, runs: usize) {
    let mut rates = Vec::new();
    for _ in 0..runs {
        let mut t = exec::Exec::<f32>::spawn(
            "python3 tests/python/sum_lines.py",
            exec::Protocol::Text,
            Duration::from_secs(30),
            Duration::from_secs(2),
        )
        .expect("python3");
        let bg = vec![1.0f32; n];
        let list: Vec<Probe> = (0..probes)
            .map(|k| Probe {
                plus: k % n,
                minus: (k + 1 + k / n) % n,
            })
            .filter(|p| p.plus != p.minus)
            .collect();
        let batch = ProbeBatch {
            background: &bg,
            probes: &list,
            mask: 2f32.powi(40),
        };
        let mut out = vec![0.0f32; list.len()];
        t.call(&bg).expect("warm-up answer"); // python has started
        let start = Instant::now();
        t.probe_batch(&batch, &mut out).expect("answers");
        rates.push(list.len() as f64 / start.elapsed().as_secs_f64());
    }
    println!(
        "| exec text protocol, n = {n}, python line-by-line responder | {probes} probes per run | median {:.0} probes/s of {runs} | |",
        median(rates)
    );
}

fn main() {
    println!("| what | work | time | note |");
    println!("|---|---|---|---|");
    gemm_row(512, 5);
    gemm_row(1024, 3);
    exec_row(64, 20_000, 3);
}
