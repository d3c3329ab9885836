//! `cargo fprev test`: the copy's tests run once unscrambled, then once per seed and mode
//! (a round), each failure of a round confirmed alone; the findings written out.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fprev::scramble::ReplayToken;

use crate::confirm::Confirm;
use crate::findings::Summary;
use crate::runner::{self, Outcome, TestBinary};
use crate::{
    annotate, cargo_args, catch_interrupts, env_for, finding_env, interrupted, prepare, write_file,
    write_log, Failure, TestArgs, MODES,
};

/// What the arguments ask for, checked before anything is copied or built.
struct Plan {
    /// Seeds per mode (`u64::MAX`: until the time budget runs out).
    seeds: u64,
    budget: Option<Duration>,
    shard: fprev::amplify::Shard,
}

impl Plan {
    fn new(a: &TestArgs) -> Result<Plan, Failure> {
        for m in &a.modes {
            if !MODES.contains(&m.as_str()) {
                return Err(Failure(format!(
                    "unknown mode `{m}` (expected {})",
                    MODES.join(", ")
                )));
            }
        }
        if a.seeds == Some(0) {
            return Err(Failure("--seeds 0 runs nothing".into()));
        }
        let budget = match &a.time {
            Some(t) => Some(
                fprev::amplify::parse_duration(t)
                    .map_err(|e| Failure(format!("--time {t}: {e}")))?,
            ),
            None => None,
        };
        let seeds = a
            .seeds
            .unwrap_or(if budget.is_some() { u64::MAX } else { 8 });
        let shard = match &a.shard {
            Some(s) => s
                .parse::<fprev::amplify::Shard>()
                .map_err(|e| Failure(format!("--shard {s}: {e}")))?,
            None => fprev::amplify::Shard::WHOLE,
        };
        if !(a.timeout_factor.is_finite() && a.timeout_factor >= 1.0) {
            return Err(Failure(format!(
                "--timeout-factor {} must be a number of at least 1",
                a.timeout_factor
            )));
        }
        Ok(Plan {
            seeds,
            budget,
            shard,
        })
    }

    /// This shard's seed indices, in order; with a time budget the rounds stop early.
    fn shard_seeds(&self) -> impl Iterator<Item = u64> + Clone {
        let shard = self.shard;
        (0..self.seeds)
            .filter(move |i| i % u64::from(shard.count()) == u64::from(shard.index() - 1))
    }
}

pub fn test(a: &TestArgs) -> Result<ExitCode, Failure> {
    let start = Instant::now();
    let plan = Plan::new(a)?;
    let p = prepare(&a.copy, true, annotate::Attribute::Scramble)?;
    catch_interrupts();
    let build_start = Instant::now();
    eprintln!(
        "cargo fprev: annotated {} function(s) in {} package(s); building the tests once",
        p.annotated.len(),
        p.packages.len()
    );
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    let build_s = build_start.elapsed().as_secs_f64();
    let logs = a.out.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| Failure(format!("cannot create {}: {e}", logs.display())))?;
    let bar = progress_bar(&plan, a, bins.len());
    let mut summary = Summary {
        modes: a.modes.clone(),
        functions_annotated: p.annotated.len(),
        ..Summary::default()
    };
    let baseline = unscrambled(&bins, a, &logs, &bar, &mut summary)?;
    let mut rounds = Rounds {
        a,
        bins: &bins,
        baseline: &baseline,
        logs: &logs,
        bar: &bar,
        reach: vec![None; bins.len()],
    };
    for i in plan.shard_seeds() {
        if plan.budget.is_some_and(|b| start.elapsed() >= b) || interrupted() {
            break;
        }
        let token = ReplayToken::new(a.seed.wrapping_add(i + 1)).to_string();
        summary.seeds.push(token.clone());
        for mode in &a.modes {
            rounds.round(mode, &token, &mut summary)?;
        }
    }
    bar.finish_and_clear();
    summary.interrupted = interrupted();
    summary.build_s = build_s;
    summary.wall_s = start.elapsed().as_secs_f64();
    summary.unscrambled_failures.sort();
    summary.unscrambled_failures.dedup();
    report(a, &summary)
}

fn progress_bar(plan: &Plan, a: &TestArgs, binaries: usize) -> indicatif::ProgressBar {
    let bar = if plan.budget.is_some() {
        indicatif::ProgressBar::no_length()
    } else {
        let planned = plan.shard_seeds().count();
        indicatif::ProgressBar::new((binaries * (1 + planned * a.modes.len())) as u64)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} runs (ETA {eta}) {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// The unscrambled runs: what fails here is the crate's own failure, never a finding.
/// An error when no test passes (nothing to compare against).
fn unscrambled(
    bins: &[TestBinary],
    a: &TestArgs,
    logs: &Path,
    bar: &indicatif::ProgressBar,
    summary: &mut Summary,
) -> Result<Vec<runner::Run>, Failure> {
    let mut baseline = Vec::new();
    for (k, bin) in bins.iter().enumerate() {
        bar.set_message(format!("unscrambled {}", bin.target));
        let run = runner::run(bin, &a.test_args, &env_for("off", "0"), None)?;
        write_log(logs, &format!("unscrambled-{k}-{}", bin.target), &run.log);
        for (t, o) in &run.tests {
            if *o == Outcome::Failed {
                summary.unscrambled_failures.push(t.clone());
            }
        }
        summary.tests += run.tests.len();
        summary.runs += 1;
        summary.unscrambled_s += run.wall.as_secs_f64();
        bar.inc(1);
        baseline.push(run);
    }
    let passing: usize = baseline
        .iter()
        .map(|r| r.tests.values().filter(|o| **o == Outcome::Passed).count())
        .sum();
    if passing == 0 {
        bar.finish_and_clear();
        return Err(Failure(if summary.tests == 0 {
            "the selected packages have no tests to run".into()
        } else {
            format!(
                "no test passes unscrambled ({} fail): nothing to compare against",
                summary.unscrambled_failures.len()
            )
        }));
    }
    Ok(baseline)
}

/// The scrambled rounds: what they share from one seed to the next.
struct Rounds<'a> {
    a: &'a TestArgs,
    bins: &'a [TestBinary],
    baseline: &'a [runner::Run],
    logs: &'a Path,
    bar: &'a indicatif::ProgressBar,
    /// Which tests each binary's first scrambled run saw reach a scrambled site: the later
    /// runs run only those (`None`: not learned yet).
    reach: Vec<Option<Reach>>,
}

impl Rounds<'_> {
    /// Every binary once under `mode` and `token`, each failure confirmed alone.
    fn round(&mut self, mode: &str, token: &str, summary: &mut Summary) -> Result<(), Failure> {
        for k in 0..self.bins.len() {
            if interrupted() {
                break;
            }
            self.bar
                .set_message(format!("{mode} {token} {}", self.bins[k].target));
            self.run_binary(k, mode, token, summary)?;
            self.bar.inc(1);
        }
        Ok(())
    }

    fn run_binary(
        &mut self,
        k: usize,
        mode: &str,
        token: &str,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        let (bin, base) = (&self.bins[k], &self.baseline[k]);
        let limit = base.wall.mul_f64(self.a.timeout_factor) + Duration::from_secs(5);
        let mut env = finding_env(mode, token);
        let mut args = self.a.test_args.clone();
        let reached_file = self.logs.join(format!("tests-reached-{k}.txt"));
        // the tests this run runs, when not every one
        let mut narrowed: Option<Vec<String>> = None;
        match &self.reach[k] {
            None => env.push(("FPREV_TESTS_OUT".into(), reached_file.display().to_string())),
            Some(Reach::Every) => {}
            // No test of this binary reaches a scrambled site: every seed runs it exactly
            // as the unscrambled run did.
            Some(Reach::Only(tests)) if tests.is_empty() => return Ok(()),
            Some(Reach::Only(tests)) => {
                args = tests.clone();
                args.push("--exact".into());
                narrowed = Some(tests.clone());
            }
        }
        let run = runner::run(bin, &args, &env, Some(limit))?;
        if self.reach[k].is_none() {
            let learned = Reach::learn(&reached_file, &run, base, &self.a.test_args);
            if let Reach::Only(tests) = &learned {
                // (a hidden bar's `println` prints nothing)
                self.bar.suspend(|| {
                    eprintln!(
                        "cargo fprev: {}: {} of {} tests reach a scrambled site; \
                         the other runs run only those",
                        bin.target,
                        tests.len(),
                        base.tests.len()
                    );
                });
            }
            self.reach[k] = Some(learned);
        }
        if interrupted() {
            // The binary was interrupted too: its failures are not findings.
            return Ok(());
        }
        summary.runs += 1;
        summary.scrambled_s += run.wall.as_secs_f64();
        write_log(
            self.logs,
            &format!("{mode}-{token}-{k}-{}", bin.target),
            &run.log,
        );
        if summary.coverage.len() <= k {
            let line = run
                .log
                .lines()
                .find_map(|l| l.strip_prefix("fprev scramble: "))
                .unwrap_or("no coverage line (no scrambled code linked)");
            summary
                .coverage
                .push((bin.target.clone(), line.to_string()));
        }
        let (failed, stopped) = to_confirm(&run, base, narrowed.as_deref());
        let confirm = Confirm {
            bin,
            mode,
            token,
            limit,
            logs: self.logs,
            blame: self.a.blame,
            factor: self.a.timeout_factor,
        };
        confirm.confirm_all(failed, false, summary)?;
        confirm.confirm_all(stopped, true, summary)
    }
}

/// The tests of a scrambled run to re-run alone: those that failed (every one that did
/// not report passing, when the binary crashed), and those a timeout stopped before they
/// ended. Only tests that passed unscrambled, and that the run ran (`narrowed`, sorted).
fn to_confirm(
    run: &runner::Run,
    base: &runner::Run,
    narrowed: Option<&[String]>,
) -> (Vec<String>, Vec<String>) {
    let ran = |t: &String| narrowed.is_none_or(|n| n.binary_search(t).is_ok());
    let passed_before = |t: &String| base.tests.get(t) == Some(&Outcome::Passed);
    let failed = if run.crashed {
        // A crash names no test.
        base.tests
            .keys()
            .filter(|t| passed_before(t) && run.tests.get(*t) != Some(&Outcome::Passed) && ran(t))
            .cloned()
            .collect()
    } else {
        run.tests
            .iter()
            .filter(|(t, o)| **o == Outcome::Failed && passed_before(t))
            .map(|(t, _)| t.clone())
            .collect()
    };
    let stopped = if run.timed_out {
        base.tests
            .keys()
            .filter(|t| passed_before(t) && !run.tests.contains_key(*t) && ran(t))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    (failed, stopped)
}

/// Prints the table, writes findings.json, findings.md and junit.xml; the exit status
/// says whether anything was found.
fn report(a: &TestArgs, summary: &Summary) -> Result<ExitCode, Failure> {
    print_table(summary);
    write_file(&a.out.join("findings.json"), &summary.to_json())?;
    write_file(&a.out.join("findings.md"), &summary.to_markdown())?;
    write_file(&a.out.join("junit.xml"), &summary.to_junit())?;
    println!(
        "wrote {}/findings.json, findings.md, junit.xml and logs/",
        a.out.display()
    );
    if summary.interrupted {
        eprintln!("cargo fprev: interrupted: the report holds the runs made before");
        return Ok(ExitCode::from(130));
    }
    Ok(if summary.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// The tests of one binary that later scrambled runs must run.
#[derive(Clone, Debug)]
enum Reach {
    /// Every test (the user passed test arguments, or a reach could not be attributed).
    Every,
    /// Only these (passing unscrambled, and reaching a scrambled site on their own
    /// thread in the first scrambled run).
    Only(Vec<String>),
}

impl Reach {
    /// What the first scrambled run's `FPREV_TESTS_OUT` file says. A test that reached
    /// no scrambled site ran exactly as written, so no other seed can change it; every
    /// doubt runs every test: test arguments of the user's (a filter the names would
    /// widen), a run that did not end normally (the file may be missing), a reach on a
    /// thread that is no test's (a test's own threads, rayon's workers, `main`).
    fn learn(file: &Path, run: &runner::Run, base: &runner::Run, user_args: &[String]) -> Reach {
        let text = std::fs::read_to_string(file);
        let _ = std::fs::remove_file(file);
        if !user_args.is_empty() || run.timed_out || run.crashed {
            return Reach::Every;
        }
        let Ok(text) = text else {
            // The runtime writes the file at exit once scrambling has started, which the
            // first scrambled site of a process does: a run that reported every test and
            // ended normally without it reached no site at all.
            let complete = base.tests.keys().all(|t| run.tests.contains_key(t));
            return if complete && !run.log.contains("fprev scramble: ") {
                Reach::Only(Vec::new())
            } else {
                Reach::Every
            };
        };
        let mut tests = Vec::new();
        for name in text.lines() {
            if name == "main" || !base.tests.contains_key(name) {
                return Reach::Every;
            }
            if base.tests.get(name) == Some(&Outcome::Passed) {
                tests.push(name.to_string());
            }
        }
        // sorted (lines of a set, but the file is not trusted) for binary search
        tests.sort();
        tests.dedup();
        Reach::Only(tests)
    }
}

fn print_table(s: &Summary) {
    println!(
        "cargo fprev: {} finding(s); {} runs of {} tests ({} seeds x {} mode(s)), {:.0} s",
        s.findings.len(),
        s.runs,
        s.tests,
        s.seeds.len(),
        s.modes.len(),
        s.wall_s
    );
    if !s.findings.is_empty() {
        println!(
            "{:<50} {:<8} {:<13} {:<20} first assertion",
            "test", "kind", "mode", "token"
        );
        for f in &s.findings {
            println!(
                "{:<50} {:<8} {:<13} {:<20} {}",
                f.test,
                f.kind,
                f.mode,
                f.token,
                f.at.as_deref().unwrap_or("-")
            );
        }
        println!("replay one: {}", s.findings[0].replay);
    }
    if !s.unscrambled_failures.is_empty() {
        println!(
            "failing unscrambled (not findings): {}",
            s.unscrambled_failures.join(", ")
        );
    }
    if !s.not_reproduced.is_empty() {
        println!(
            "failed scrambled, passed alone with the same token (not findings): {}",
            s.not_reproduced.join(", ")
        );
    }
}
