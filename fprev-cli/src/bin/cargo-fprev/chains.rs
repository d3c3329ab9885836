//! `cargo fprev chains`: the chain report of a crate's own test suite, with nothing
//! edited. It runs the build of `cargo fprev test` (a copy of the workspace with
//! `#[fprev::scramble(chains)]` on every accumulating function, on the function's own
//! line, so the report's file:line are the original's): a test process started with
//! `FPREV_CHAINS=1` runs each function's chain-counting body, and the report that the
//! processes merge into `<target>/fprev/chains.txt` is printed and kept.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::annotated_copy::{cargo_args, prepare};
use crate::cargo_flags::CopyArgs;
use crate::cli_output::{write_file, CargoFprevError};
use crate::runner::{self, TestOutcome};

#[derive(Args)]
pub struct ChainsArgs {
    #[command(flatten)]
    pub copy: CopyArgs,
    /// Where chains.txt (the merged report) and the run logs go.
    #[arg(long, default_value = "fprev.out")]
    pub out: PathBuf,
    /// Arguments for the test binaries (a filter, --test-threads ...).
    #[arg(last = true)]
    pub test_args: Vec<String>,
}

pub fn chains(a: &ChainsArgs) -> Result<ExitCode, CargoFprevError> {
    let p = prepare(&a.copy, true)?;
    eprintln!(
        "cargo fprev: annotated {} function(s) in {} package(s) with \
         #[fprev::scramble(chains)]; building the tests (the build `cargo fprev test` runs)",
        p.annotated.len(),
        p.packages.len()
    );
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    // The test processes find the merged report's folder from CARGO_TARGET_DIR only
    // when it is absolute.
    let target = absolute(&p.target_dir)?;
    let dir = target.join("fprev");
    // Counts of an earlier run are never added to this one's.
    for f in ["chains.tsv", "chains.txt"] {
        let _ = std::fs::remove_file(dir.join(f));
    }
    let logs = crate::workspace::create_out(&a.out)?;
    let env = [
        ("FPREV_CHAINS".to_string(), "1".to_string()),
        ("CARGO_TARGET_DIR".to_string(), target.display().to_string()),
    ];
    let mut failed = Vec::new();
    let mut tests = 0;
    for (k, bin) in bins.iter().enumerate() {
        let run = runner::run(bin, &a.test_args, &env, None)?;
        let _ = std::fs::write(
            logs.join(format!("chains-{k}-{}.log", bin.target)),
            &run.log,
        );
        tests += run.tests.len();
        failed.extend(
            run.tests
                .iter()
                .filter(|(_, o)| **o == TestOutcome::Failed)
                .map(|(t, _)| t.clone()),
        );
        if run.crashed {
            failed.push(format!("{} (the binary crashed)", bin.target));
        }
    }
    let report = std::fs::read_to_string(dir.join("chains.txt")).map_err(|_| {
        CargoFprevError(format!(
            "the tests ran ({tests} test(s) in {} binaries) but wrote no chain report: \
             none of them called an annotated function",
            bins.len()
        ))
    })?;
    print!("{report}");
    let kept = a.out.join("chains.txt");
    write_file(&kept, &report)?;
    println!(
        "cargo fprev chains: {} function(s) annotated, {tests} test(s) run; wrote {}",
        p.annotated.len(),
        kept.display()
    );
    let uncounted: Vec<String> = p
        .annotated
        .iter()
        .filter_map(|(file, f)| {
            let why = f.without_chains?;
            Some(format!("  {file}:{}: {}: {why}", f.line, f.name))
        })
        .collect();
    if !uncounted.is_empty() {
        println!(
            "note: {} annotated function(s) count no chains (they keep the scrambled body \
             only):\n{}",
            uncounted.len(),
            uncounted.join("\n")
        );
    }
    if !failed.is_empty() {
        println!(
            "note: {} test(s) failed; counting chains changes no value (each function runs \
             as written), so they fail without fprev too (their counts are in the report up to where they stopped): {}",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn absolute(dir: &Path) -> Result<PathBuf, CargoFprevError> {
    std::fs::create_dir_all(dir)
        .and_then(|()| dir.canonicalize())
        .map_err(|e| CargoFprevError(format!("{}: {e}", dir.display())))
}
