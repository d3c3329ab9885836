//! Re-running a failure alone: what makes a failing scrambled run a finding (it fails
//! again alone with its token) and, on demand, the smallest set of sites to blame.

use std::path::Path;
use std::time::Duration;

use crate::blame;
use crate::cli_output::{sanitize, write_log, CargoFprevError};
use crate::findings::{Finding, ScrambleSite, Status, Summary};
use crate::runner::{self, TestBinary, TestOutcome};
use crate::scramble_env::{env_for, finding_env};

/// One scrambled run's failures, to be confirmed alone.
pub(crate) struct Confirm<'a> {
    pub bin: &'a TestBinary,
    pub mode: &'a str,
    pub token: &'a str,
    pub limit: Duration,
    pub logs: &'a Path,
    pub blame: bool,
    pub factor: f64,
}

/// A confirmation's outcome and the runs it took.
type CheckResult = Result<(Checked, usize), CargoFprevError>;

/// What re-running one test alone found.
enum Checked {
    /// It failed (or stopped) again: a finding.
    Finding(Box<Finding>),
    /// It passed alone with the same token: flaky on its own, not a finding.
    NotReproduced(String),
    /// Nothing to report (a timeout candidate that passed, or failed, unscrambled).
    Nothing,
}

impl Confirm<'_> {
    /// Re-runs each of `tests` alone with the token that made it fail (or stop), and
    /// records the findings in the order of `tests`. Failures are re-run several at a
    /// time, one process each (as the scrambled run ran them side by side on its test
    /// threads); timeouts one at a time, as their limit is a wall time that others'
    /// load would stretch.
    pub fn confirm_all(
        &self,
        tests: Vec<String>,
        timeout: bool,
        summary: &mut Summary,
    ) -> Result<(), CargoFprevError> {
        let (mode, token) = (self.mode, self.token);
        let tests: Vec<String> = tests
            .into_iter()
            .filter(|t| {
                !summary
                    .findings
                    .iter()
                    .any(|f| &f.test == t && f.mode == mode && f.token == token)
            })
            .collect();
        let workers = if timeout {
            1
        } else {
            std::thread::available_parallelism()
                .map_or(1, std::num::NonZeroUsize::get)
                .min(tests.len())
        };
        let results: Vec<CheckResult> = if workers <= 1 {
            tests.iter().map(|t| self.check(t, timeout)).collect()
        } else {
            let next = std::sync::atomic::AtomicUsize::new(0);
            let slots: Vec<std::sync::Mutex<Option<CheckResult>>> =
                tests.iter().map(|_| std::sync::Mutex::new(None)).collect();
            std::thread::scope(|scope| {
                for _ in 0..workers {
                    scope.spawn(|| loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(test) = tests.get(i) else { break };
                        let result = self.check(test, timeout);
                        if let Ok(mut slot) = slots[i].lock() {
                            *slot = Some(result);
                        }
                    });
                }
            });
            slots
                .into_iter()
                .map(|slot| {
                    slot.into_inner().ok().flatten().unwrap_or_else(|| {
                        Err(CargoFprevError(
                            "a confirming run ended without a result".into(),
                        ))
                    })
                })
                .collect()
        };
        for result in results {
            let (checked, runs) = result?;
            summary.runs += runs as u64;
            match checked {
                Checked::Finding(f) => summary.findings.push(*f),
                Checked::NotReproduced(t) => summary.not_reproduced.push(t),
                Checked::Nothing => {}
            }
        }
        Ok(())
    }

    /// Replays `previous`, a finding of an earlier report made with this confirmation's
    /// mode and token: failing again it is a finding of this run too (`still_failing`),
    /// passing it is `fixed`.
    pub fn replay(&self, previous: &Finding, summary: &mut Summary) -> Result<(), CargoFprevError> {
        let (checked, runs) = self.check(&previous.test, previous.kind == "timeout")?;
        summary.runs += runs as u64;
        match checked {
            Checked::Finding(mut f) => {
                f.status = Status::StillFailing;
                summary.findings.push(*f);
            }
            Checked::NotReproduced(_) | Checked::Nothing => {
                let mut f = previous.clone();
                f.status = Status::Fixed;
                f.seen = 1;
                summary.fixed.push(f);
            }
        }
        Ok(())
    }

    /// Re-runs `test` alone with the token that made it fail (or stop), and the runs
    /// that took.
    fn check(&self, test: &str, timeout: bool) -> CheckResult {
        let (mode, token) = (self.mode, self.token);
        let mut runs = 0;
        let name = format!("alone-{mode}-{token}-{}", sanitize(test));
        let mut limit = self.limit;
        if timeout {
            // A test the stopped run never finished: its own unscrambled time, alone,
            // sets its limit (most such tests were merely queued behind a slow one).
            let args = vec![test.to_string(), "--exact".to_string()];
            let plain = runner::run(self.bin, &args, &env_for("off", "0"), Some(self.limit))?;
            runs += 1;
            if plain.timed_out || plain.tests.get(test) != Some(&TestOutcome::Passed) {
                return Ok((Checked::Nothing, runs));
            }
            limit = plain.wall.mul_f64(self.factor) + Duration::from_secs(5);
        }
        let (run, sites) = run_alone(self.bin, test, mode, token, Some(limit), self.logs, &name)?;
        runs += 1;
        let failed = run.tests.get(test) == Some(&TestOutcome::Failed) || run.crashed;
        let (kind, message, at) = if timeout && run.timed_out {
            (
                "timeout",
                format!(
                    "still running after {:.1} s alone ({} times its unscrambled time alone, \
                     plus 5 s)",
                    limit.as_secs_f64(),
                    self.factor
                ),
                None,
            )
        } else if failed {
            let (at, msg) = runner::panic_site(run.messages.get(test).map_or("", String::as_str));
            ("fail", msg, at)
        } else if timeout {
            return Ok((Checked::Nothing, runs));
        } else {
            return Ok((
                Checked::NotReproduced(format!("{test} ({mode} {token})")),
                runs,
            ));
        };
        let coverage = run
            .scramble_line
            .as_deref()
            .map(|l| l.trim_start_matches("fprev scramble: ").to_string());
        let blamed = if self.blame && kind == "fail" && !sites.is_empty() {
            let (set, blame_runs) = blame_search(self.bin, test, mode, token, Some(limit), &sites)?;
            runs += blame_runs;
            Some(set)
        } else {
            None
        };
        let finding = Finding {
            test: test.to_string(),
            package: self.bin.package.clone(),
            target: self.bin.target.clone(),
            kind: kind.to_string(),
            mode: mode.to_string(),
            token: token.to_string(),
            replay: Some(replay_command(self.bin, mode, token, test)?),
            message,
            at,
            coverage,
            sites,
            blame: blamed,
            status: Status::New,
            seen: 1,
        };
        Ok((Checked::Finding(Box::new(finding)), runs))
    }
}

/// The command that replays `test` of `bin`. A binary that does not list the test by
/// name (a `harness = false` target with a harness of its own, which runs whole) is
/// named by its target, so that the replay runs that binary as the campaign did.
pub(crate) fn replay_command(
    bin: &TestBinary,
    mode: &str,
    token: &str,
    test: &str,
) -> Result<String, CargoFprevError> {
    let target = if runner::lists(bin, test)? {
        String::new()
    } else {
        format!(" --target {}", bin.target)
    };
    Ok(format!(
        "cargo fprev replay -p {}{target} --mode {mode} {token} {test}",
        bin.package
    ))
}

/// Runs `test` alone under `mode` and `token`, and reads the sites it reached.
pub(crate) fn run_alone(
    bin: &TestBinary,
    test: &str,
    mode: &str,
    token: &str,
    limit: Option<Duration>,
    logs: &Path,
    name: &str,
) -> Result<(runner::Run, Vec<ScrambleSite>), CargoFprevError> {
    let out = logs.join(format!("{}.sites", sanitize(name)));
    let mut env = finding_env(mode, token);
    env.push(("FPREV_SITES_OUT".into(), out.display().to_string()));
    let args = vec![test.to_string(), "--exact".to_string()];
    let run = runner::run(bin, &args, &env, limit)?;
    write_log(logs, name, &run.log);
    let sites = blame::parse_sites(&std::fs::read_to_string(&out).unwrap_or_default());
    Ok((run, sites))
}

/// ddmin over `sites`: the smallest set whose scrambling alone fails `test`.
pub(crate) fn blame_search(
    bin: &TestBinary,
    test: &str,
    mode: &str,
    token: &str,
    limit: Option<Duration>,
    sites: &[ScrambleSite],
) -> Result<(Vec<ScrambleSite>, usize), CargoFprevError> {
    let args = vec![test.to_string(), "--exact".to_string()];
    blame::ddmin(sites, |subset| {
        let mut env = finding_env(mode, token);
        let labels: Vec<&str> = subset.iter().map(|s| s.label.as_str()).collect();
        env.push(("FPREV_SITES".into(), labels.join(",")));
        let run = runner::run(bin, &args, &env, limit)?;
        Ok(run.tests.get(test) == Some(&TestOutcome::Failed) || run.crashed)
    })
}
