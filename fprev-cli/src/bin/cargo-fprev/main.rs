//! `cargo fprev`: point fprev's amplifier at a crate without editing it.
//!
//! `cargo fprev test` copies the workspace to a scratch directory, puts
//! `#[fprev::scramble]` on every function that accumulates (on the function's own line,
//! so every file:line stays the original's), builds the tests once, runs them
//! unscrambled, then once per seed and mode, and re-runs every test that failed alone
//! with its token. A finding fails scrambled, passes unscrambled and fails again alone:
//! an order dependence that replays. `cargo fprev replay` runs one finding again.
//! `cargo fprev scan` only reads: it lists the functions `test` would annotate and what
//! the attribute decides for each of their loops and chains.
//!
//! Exit status: 0 no findings, 2 findings, 1 an error (not a cargo project, tests that do
//! not build, nothing to annotate, every test failing unscrambled).
//!
//! This file is the clap root and the dispatch: each subcommand has a module of its own
//! (`test_rounds`, `replay`, `scan`, `chains`, `merge`), with its flags.

mod annotate;
mod annotated_copy;
mod blame;
mod cargo_flags;
mod chains;
mod cli_output;
mod confirm;
mod copy_manifests;
mod diff;
mod interrupt;
// The findings report, its merge and renderers, and what they read (the process reports
// of `assert_reproducible!` campaigns): one campaign system, shared by both binaries of
// this package.
#[path = "../../escape.rs"]
mod escape;
#[path = "../../findings.rs"]
mod findings;
#[path = "../../findings_merge.rs"]
mod findings_merge;
#[path = "../../findings_render.rs"]
mod findings_render;
#[path = "../../reports.rs"]
mod reports;
#[path = "../../stage_stats.rs"]
mod stage_stats;
// The limits `fprev` uses (input caps, durations), shared by both binaries of this
// package; cargo-fprev uses some of them.
#[allow(dead_code)]
#[path = "../../limits.rs"]
mod limits;
mod merge;
mod replay;
mod runner;
mod scan;
mod scramble_env;
mod seed_plan;
mod test_rounds;
mod workspace;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cargo_flags::TestArgs;
use cli_output::CargoFprevError;
use interrupt::interrupted;
use merge::MergeArgs;
use replay::ReplayArgs;
use scan::ScanArgs;

#[derive(Parser)]
#[command(
    name = "cargo-fprev",
    bin_name = "cargo fprev",
    version,
    about = "Run a crate's tests under scrambled float reductions, without editing it"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Annotate a copy, run its tests unscrambled and under every seed and mode, report
    /// the failures that replay. Exit 0: none; 2: findings; 1: error.
    Test(TestArgs),
    /// Run one test of the annotated copy with a token (as a finding's `replay` says).
    Replay(ReplayArgs),
    /// Find the smallest set of reductions whose reordering alone fails a test (delta
    /// debugging over the sites its failing run reached).
    Blame(ReplayArgs),
    /// List the functions `test` would annotate, with file:line, and what `#[scramble]`
    /// decides for each of their loops and chains (scrambled, or left alone and why).
    /// Reads the sources only: no copy, no build.
    Scan(ScanArgs),
    /// Count accumulation chains: run the tests of `test`'s build (built once for both)
    /// with `FPREV_CHAINS=1`, print the merged report (original file:line).
    Chains(chains::ChainsArgs),
    /// Join the findings.json of several shards or runs into one.
    Merge(MergeArgs),
}

/// Parses the command line (as `cargo fprev ...` or `cargo-fprev ...`), runs the
/// subcommand and maps its error to exit status 1 (130 when interrupted).
fn main() -> ExitCode {
    // `cargo fprev ...` runs `cargo-fprev fprev ...`.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "fprev") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        // --out is handed to test processes that run in the copy: made absolute here,
        // against the directory the user ran cargo fprev in
        Cmd::Test(mut a) => absolute(&a.out).and_then(|out| {
            a.out = out;
            test_rounds::test(&a)
        }),
        Cmd::Replay(a) => replay::replay(&a),
        Cmd::Blame(a) => replay::blame(&a),
        Cmd::Scan(a) => scan::scan(&a),
        Cmd::Chains(a) => chains::chains(&a),
        Cmd::Merge(a) => merge::merge(&a),
    };
    match result {
        Ok(code) => code,
        // an interrupt makes the build or a run fail: say what happened, not the failure
        Err(CargoFprevError(_)) if interrupted() => {
            eprintln!("cargo fprev: interrupted");
            ExitCode::from(130)
        }
        Err(CargoFprevError(msg)) => {
            eprintln!("cargo fprev: {msg}");
            ExitCode::from(1)
        }
    }
}

/// `path` against the current directory (an absolute path stays as it is).
fn absolute(path: &Path) -> Result<PathBuf, CargoFprevError> {
    std::path::absolute(path).map_err(|e| CargoFprevError(format!("{}: {e}", path.display())))
}
