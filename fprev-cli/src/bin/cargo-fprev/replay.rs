//! `cargo fprev replay` and `cargo fprev blame`: one finding's test run again in the
//! annotated copy under its mode and token, as it is, or with the sites it reached
//! narrowed to the smallest set whose scrambling alone fails it. Both take the same flags.

use std::process::ExitCode;

use fprev::scramble::ReplayToken;

use crate::annotated_copy::{cargo_args, prepare};
use crate::cargo_flags::CopyArgs;
use crate::cli_output::CargoFprevError;
use crate::confirm::{blame_search, run_alone};
use crate::runner::{self, TestBinary, TestOutcome};
use crate::scramble_env::{check_mode, env_for};

#[derive(clap::Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub copy: CopyArgs,
    /// The scrambling mode of the finding.
    #[arg(long, default_value = "shapes")]
    pub mode: String,
    /// The test target that holds the test (as a finding's `replay` names it for a
    /// `harness = false` target, which lists no tests by name).
    #[arg(long)]
    pub target: Option<String>,
    /// The finding's token (v3-...).
    pub token: String,
    /// The test's full name, as libtest prints it.
    pub test: String,
}

/// The finding's mode and token, checked before anything is copied or built.
fn finding_token(a: &ReplayArgs) -> Result<ReplayToken, CargoFprevError> {
    check_mode(&a.mode)?;
    a.token
        .parse()
        .map_err(|e| CargoFprevError(format!("TOKEN: {e}")))
}

/// Runs `cargo fprev replay`: the test alone in the built copy under the finding's mode
/// and token, its output shown; exit 2 when it fails.
pub fn replay(a: &ReplayArgs) -> Result<ExitCode, CargoFprevError> {
    let token = finding_token(a)?;
    let p = prepare(&a.copy, true)?;
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    if let Some(bin) = find_binary(&bins, &a.test, a.target.as_deref())? {
        let args = vec![a.test.clone(), "--exact".into(), "--nocapture".into()];
        let run = runner::run(bin, &args, &env_for(&a.mode, &token.to_string()), None)?;
        print!("{}", run.log);
        let failed = run.tests.get(&a.test) == Some(&TestOutcome::Failed) || run.crashed;
        println!(
            "cargo fprev replay: {} {} under FPREV_SCRAMBLE={} FPREV_SEED={token}",
            a.test,
            if failed { "FAILED" } else { "passed" },
            a.mode
        );
        return Ok(if failed {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        });
    }
    Err(CargoFprevError(format!(
        "no test named `{}` in the built tests of {}",
        a.test,
        p.packages.join(", ")
    )))
}

/// The built test binary that holds `test`: the one of target `target` when given (a
/// `harness = false` target lists no tests), else the one that lists it.
fn find_binary<'a>(
    bins: &'a [TestBinary],
    test: &str,
    target: Option<&str>,
) -> Result<Option<&'a TestBinary>, CargoFprevError> {
    if let Some(t) = target {
        return match bins.iter().find(|b| b.target == t) {
            Some(b) => Ok(Some(b)),
            None => Err(CargoFprevError(format!(
                "no test target `{t}` was built (targets: {})",
                bins.iter()
                    .map(|b| b.target.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        };
    }
    for bin in bins {
        if runner::lists(bin, test)? {
            return Ok(Some(bin));
        }
    }
    Ok(None)
}

/// Runs `cargo fprev blame`: the failing test run under the finding's token with only
/// some of the sites it reached scrambled, down to the smallest set that still fails it.
pub fn blame(a: &ReplayArgs) -> Result<ExitCode, CargoFprevError> {
    let token = finding_token(a)?.to_string();
    let p = prepare(&a.copy, true)?;
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    let Some(bin) = find_binary(&bins, &a.test, a.target.as_deref())? else {
        return Err(CargoFprevError(format!(
            "no test named `{}` in the built tests",
            a.test
        )));
    };
    let logs = p.target_dir.join("fprev-blame");
    std::fs::create_dir_all(&logs)
        .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", logs.display())))?;
    let (run, sites) = run_alone(bin, &a.test, &a.mode, &token, None, &logs, "blame-full")?;
    if run.tests.get(&a.test) != Some(&TestOutcome::Failed) && !run.crashed {
        return Err(CargoFprevError(format!(
            "{} passes under FPREV_SCRAMBLE={} FPREV_SEED={token}: nothing to blame",
            a.test, a.mode
        )));
    }
    if sites.is_empty() {
        return Err(CargoFprevError(format!(
            "{} fails, but its run reached no scramble site: the failure is not fprev's",
            a.test
        )));
    }
    let (set, runs) = blame_search(bin, &a.test, &a.mode, &token, None, &sites)?;
    println!(
        "{} fails under FPREV_SCRAMBLE={} FPREV_SEED={token} when only these {} of the {} \
         reduction site(s) it reached are scrambled ({runs} runs):",
        a.test,
        a.mode,
        set.len(),
        sites.len()
    );
    for s in &set {
        let code = std::fs::read_to_string(p.root.join(&s.file))
            .ok()
            .and_then(|t| {
                t.lines()
                    .nth(s.line as usize - 1)
                    .map(|l| l.trim().to_string())
            })
            .unwrap_or_default();
        println!("  {}:{}  {}\n      {}", s.file, s.line, s.label, code);
    }
    Ok(ExitCode::SUCCESS)
}
