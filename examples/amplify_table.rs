//! Defour's Table II for the Rust ports: how often, and how far, each program's result
//! moves under four execution configurations.
//!
//! ```text
//! cargo run --release --example amplify_table            # 20 runs per configuration
//! FPREV_RUNS=100 cargo run --release --example amplify_table
//! # a sharded campaign with a report (docs/cargo-fprev.md)
//! FPREV_SEED=v3-0000000000000abc FPREV_SHARD=1/2 FPREV_TIME=1m FPREV_REPORT=ports.json \
//!     cargo run --release --example amplify_table
//! ```

mod ports;

use std::time::Instant;

use fprev::amplify::{amplify_named, AmplifyConfig, AmplifyReport, Stage};

fn row(name: &str, report: &AmplifyReport) {
    print!("{name:<12}");
    for stage in Stage::ALL {
        match report.stage(stage) {
            Some(s) => {
                let err = if s.norm2 == 0.0 {
                    "0".to_string()
                } else {
                    format!("{:.2e}", s.norm2)
                };
                print!(" | {err:>9} {:>3}/{:<3}", s.differing_count, s.run_count);
            }
            None => print!(" | {:>17}", "-"),
        }
    }
    println!();
}

fn main() {
    let start = Instant::now();
    let cfg = AmplifyConfig::from_env();
    println!(
        "Table II for the Rust ports: norm2 of the relative error vs the unscrambled run (max over runs) and differing runs / runs"
    );
    match cfg.time {
        Some(t) => println!(
            "{t:?} per program (split between the configurations), shard {}, pools of 1..={} threads",
            cfg.shard, cfg.max_threads
        ),
        None => println!(
            "{} runs per configuration, shard {}, pools of 1..={} threads",
            cfg.runs, cfg.shard, cfg.max_threads
        ),
    }
    println!(
        "{:<12} | {:^17} | {:^17} | {:^17} | {:^17}",
        "program", "1 same config", "2 distribution", "3 schedule", "4 loop order"
    );
    println!(
        "{:<12} | {:^17} | {:^17} | {:^17} | {:^17}",
        "", "error  #diff", "error  #diff", "error  #diff", "error  #diff"
    );

    let v = ports::inputs(1 << 18, 1);
    let reduction = amplify_named(&cfg, "reduction", || ports::reduction(&v));
    row("reduction", &reduction);

    let points = ports::inputs(1 << 16, 2);
    let histogram = amplify_named(&cfg, "histogram", || ports::histogram(&points, 256));
    row("histogram", &histogram);

    let n = 96;
    let (a, b) = (ports::inputs(n * n, 3), ports::inputs(n * n, 4));
    row(
        "sgemm",
        &amplify_named(&cfg, "sgemm", || ports::sgemm(&a, &b, n)),
    );

    let m = ports::csr(20_000, 16);
    let x = ports::inputs(20_000, 5);
    row("spmv", &amplify_named(&cfg, "spmv", || ports::spmv(&m, &x)));

    let n = 256;
    let (a, rhs) = (ports::dominant(n), ports::inputs(n, 6));
    row(
        "jacobi",
        &amplify_named(&cfg, "jacobi", || ports::jacobi(&a, &rhs, n, 5)),
    );

    let (vox, k, phi) = (
        ports::inputs(2048, 8),
        ports::inputs(256, 9),
        ports::inputs(256, 10),
    );
    row(
        "mri-q",
        &amplify_named(&cfg, "mri-q", || ports::mri_q(&vox, &k, &phi)),
    );

    let n = 32;
    let grid = ports::inputs(n * n * n, 12);
    row(
        "stencil",
        &amplify_named(&cfg, "stencil", || ports::stencil(&grid, n)),
    );

    println!();
    println!("Scheduling entropy (distinct executed orders / invocations, Defour's Figure 2):");
    for (name, report) in [("histogram", &histogram), ("reduction", &reduction)] {
        for stage in &report.stages {
            for (site, orders) in &stage.orders.sites {
                let distinct = orders
                    .iter()
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                println!(
                    "  {name:<10} {:<20} {site}: {distinct}/{}",
                    stage.stage.label(),
                    orders.len()
                );
            }
        }
    }
    println!(
        "campaign seed {}; total {:.1?}",
        reduction.campaign,
        start.elapsed()
    );
}
