//! `cargo fprev test`: the copy's tests run once unscrambled, then once per seed and mode
//! (a round), each failure of a round confirmed alone; the findings written out.
//!
//! The unscrambled run is the identity order (`FPREV_SCRAMBLE=identity`: every reduction
//! runs as written, but each site it reaches is counted), so it also tells which tests
//! reach a scrambled site: the rounds run only those, every seed side by side.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fprev::scramble::ReplayToken;

use crate::annotated_copy::{cargo_args, prepare};
use crate::cargo_flags::TestArgs;
use crate::cli_output::{write_file, write_log, CargoFprevError};
use crate::confirm::Confirm;
use crate::findings::Summary;
use crate::interrupt::{catch_interrupts, interrupted};
use crate::runner::{self, TestBinary, TestOutcome};
use crate::scramble_env::{env_for, finding_env, MODES};
use crate::seed_plan::{times, token_of, SeedPlan};

/// Runs `cargo fprev test`: the copy annotated and built, the unscrambled runs, the
/// findings of the previous report replayed, the rounds, the report written.
pub fn test(a: &TestArgs) -> Result<ExitCode, CargoFprevError> {
    let start = Instant::now();
    let plan = SeedPlan::new(a)?;
    let previous = previous_report(a)?;
    let p = prepare(&a.copy, true)?;
    catch_interrupts();
    let build_start = Instant::now();
    eprintln!(
        "cargo fprev: annotated {} function(s) in {} package(s); building the tests once",
        p.annotated.len(),
        p.packages.len()
    );
    let bins = runner::build(&p.tree, &p.target_dir, &p.packages, &cargo_args(&a.copy))?;
    let build_s = build_start.elapsed().as_secs_f64();
    let logs = crate::workspace::create_out(&a.out)?;
    let bar = progress_bar(&plan, a, bins.len());
    let mut summary = Summary {
        ids: vec![crate::findings::new_id(&format!("{}", a.out.display()))],
        modes: a.modes.clone(),
        functions_annotated: p.annotated.len() as u64,
        seed_ranges: vec![crate::findings::SeedRange {
            base: a.seed,
            shard: (plan.shard.index(), plan.shard.count()),
            count: 0,
        }],
        ..Summary::default()
    };
    let baseline = unscrambled(&bins, a, &logs, &bar, &mut summary)?;
    let mut rounds = Rounds {
        a,
        bins: &bins,
        baseline: &baseline,
        logs: &logs,
        bar: &bar,
        reach: vec![Reach::Every; bins.len()],
        confirming: Duration::ZERO,
    };
    for k in 0..bins.len() {
        rounds.learn(k);
    }
    if let Some((path, prev)) = &previous {
        rounds.replay_previous(path, prev, plan.shard, &mut summary)?;
    }
    let rounds_start = Instant::now();
    let over = || plan.budget.is_some_and(|b| start.elapsed() >= b) || interrupted();
    let pool = Pool::new(a);
    if pool.jobs > 1 {
        let seeds = |j: u64| plan.nth_shard_seed(j);
        rounds.pooled(&pool, &seeds, &over, &mut summary)?;
    } else {
        for i in plan.shard_seeds() {
            if over() {
                break;
            }
            let token = token_of(a, i);
            summary.seed_ranges[0].count += 1;
            for mode in &a.modes {
                rounds.round(mode, &token, &mut summary)?;
            }
        }
    }
    summary.scrambled_s = (rounds_start.elapsed() - rounds.confirming).as_secs_f64();
    bar.finish_and_clear();
    summary.interrupted = interrupted();
    summary.build_s = build_s;
    summary.wall_s = start.elapsed().as_secs_f64();
    summary.finished = fprev::amplify::utc_now();
    summary.unscrambled_failures.sort();
    summary.unscrambled_failures.dedup();
    report(a, &summary)
}

/// The report whose findings are replayed first: `--previous FILE`, or the findings.json
/// an earlier run left in `--out`; read before anything is built, so that a bad file is
/// refused at once.
fn previous_report(a: &TestArgs) -> Result<Option<(std::path::PathBuf, Summary)>, CargoFprevError> {
    let (path, implicit) = match &a.previous {
        Some(p) if p.as_os_str() == "none" => return Ok(None),
        Some(p) => (p.clone(), false),
        None => {
            let p = a.out.join("findings.json");
            if !p.is_file() {
                return Ok(None);
            }
            (p, true)
        }
    };
    match read_report(&path, a.copy.source.max_input_bytes) {
        Ok(report) => Ok(Some((path, report))),
        // the report an earlier run left (an older fprev's, a damaged one) is no reason
        // to refuse tonight's run: it is said and left alone
        Err(e) if implicit => {
            eprintln!("cargo fprev: note: the earlier findings are not replayed: {e}");
            Ok(None)
        }
        Err(e) => Err(CargoFprevError(format!("--previous {e}"))),
    }
}

/// A findings report, read with the input cap.
fn read_report(path: &Path, max_bytes: u64) -> Result<Summary, String> {
    let name = path.display().to_string();
    let text = crate::limits::read_capped_text(path, max_bytes, "--max-input-bytes")?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{name}: not JSON: {e}"))?;
    Summary::from_value(&name, &value)
}

/// How the rounds after the first run: `jobs` test-binary processes at once, each with
/// `threads` test threads (`None`: the binary's default). One process with a thread per
/// core idles cores while its last, longest tests finish; processes of different seeds
/// side by side keep every core busy to the end.
struct Pool {
    jobs: usize,
    threads: Option<usize>,
    /// How much longer a run takes than the unscrambled run with all test threads: its
    /// time limit is stretched by that much.
    stretch: f64,
}

impl Pool {
    /// One process at a time, with the binary's default test threads.
    const ONE: Pool = Pool {
        jobs: 1,
        threads: None,
        stretch: 1.0,
    };

    fn new(a: &TestArgs) -> Pool {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        // The user's own thread count (an argument or RUST_TEST_THREADS) is kept as is.
        let user_threads = a.test_args.iter().any(|t| t.starts_with("--test-threads"))
            || std::env::var_os("RUST_TEST_THREADS").is_some();
        let jobs = match a.jobs {
            Some(j) => j.max(1),
            None if user_threads => 1,
            None => cores.min(4),
        };
        if jobs <= 1 {
            return Pool::ONE;
        }
        if user_threads {
            return Pool {
                jobs,
                threads: None,
                stretch: jobs as f64,
            };
        }
        let threads = (cores / jobs).max(1);
        Pool {
            jobs,
            threads: Some(threads),
            stretch: (cores as f64 / threads as f64).max(1.0),
        }
    }
}

fn progress_bar(plan: &SeedPlan, a: &TestArgs, binaries: usize) -> indicatif::ProgressBar {
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

/// The unscrambled runs, in the identity order (which counts the sites it reaches, in
/// the file [`reached_file`] names): what fails here is the crate's own failure, never a
/// finding. An error when no test passes (nothing to compare against).
fn unscrambled(
    bins: &[TestBinary],
    a: &TestArgs,
    logs: &Path,
    bar: &indicatif::ProgressBar,
    summary: &mut Summary,
) -> Result<Vec<runner::Run>, CargoFprevError> {
    let mut baseline = Vec::new();
    for (k, bin) in bins.iter().enumerate() {
        bar.set_message(format!("unscrambled {}", bin.target));
        // processes append to it: nothing of an earlier, interrupted call stays
        let reached = reached_file(logs, k);
        let _ = std::fs::remove_file(&reached);
        let mut env = env_for("identity", "0");
        env.push(("FPREV_TESTS_OUT".into(), reached.display().to_string()));
        let run = runner::run(bin, &a.test_args, &env, None)?;
        write_log(logs, &format!("unscrambled-{k}-{}", bin.target), &run.log);
        for (t, o) in &run.tests {
            if *o == TestOutcome::Failed {
                summary.unscrambled_failures.push(t.clone());
            }
        }
        summary.tests += run.tests.len() as u64;
        summary.runs += 1;
        summary.unscrambled_s += run.wall.as_secs_f64();
        bar.inc(1);
        baseline.push(run);
    }
    let passing: usize = baseline
        .iter()
        .map(|r| {
            r.tests
                .values()
                .filter(|o| **o == TestOutcome::Passed)
                .count()
        })
        .sum();
    if passing == 0 {
        bar.finish_and_clear();
        // a binary that listed no test and failed was refused its arguments, most often
        let refused = baseline
            .iter()
            .zip(bins)
            .find(|(r, _)| r.crashed && r.tests.is_empty());
        return Err(CargoFprevError(if let Some((run, bin)) = refused {
            let said = run
                .log
                .split_once("\n--- stderr ---\n")
                .and_then(|(_, err)| err.lines().find(|l| !l.trim().is_empty()))
                .unwrap_or("nothing on standard error");
            format!(
                "the test binary {} ran no test and failed: {said} (check the arguments after --)",
                bin.target
            )
        } else if summary.tests == 0 {
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

/// The file where binary `k`'s unscrambled run writes the names of the tests that reached
/// a scrambled site.
fn reached_file(logs: &Path, k: usize) -> std::path::PathBuf {
    logs.join(format!("tests-reached-{k}.txt"))
}

/// The scrambled rounds: what they share from one seed to the next.
struct Rounds<'a> {
    a: &'a TestArgs,
    bins: &'a [TestBinary],
    baseline: &'a [runner::Run],
    logs: &'a Path,
    bar: &'a indicatif::ProgressBar,
    /// Which tests each binary's unscrambled run saw reach a scrambled site: the rounds
    /// run only those.
    reach: Vec<Reach>,
    /// Time spent confirming failures, not counted as the scrambled runs' time.
    confirming: Duration,
}

/// One scrambled run of one binary, before its failures are confirmed.
struct Launched {
    run: runner::Run,
    /// The tests it ran, when not every one (sorted).
    narrowed: Option<Vec<String>>,
}

impl Rounds<'_> {
    /// Every binary once under `mode` and `token`, each failure confirmed alone.
    fn round(
        &mut self,
        mode: &str,
        token: &str,
        summary: &mut Summary,
    ) -> Result<(), CargoFprevError> {
        for k in 0..self.bins.len() {
            if interrupted() {
                break;
            }
            self.bar
                .set_message(format!("{mode} {token} {}", self.bins[k].target));
            if let Some(launched) = self.launch(k, mode, token, &Pool::ONE)? {
                let t = Instant::now();
                self.settle(k, mode, token, launched, summary)?;
                self.confirming += t.elapsed();
            }
            self.bar.inc(1);
        }
        Ok(())
    }

    /// The rounds of `seeds` (every mode each), `pool.jobs` runs at a time; each run's
    /// failures confirmed, in seed, mode and binary order, as its turn comes.
    fn pooled(
        &mut self,
        pool: &Pool,
        seeds: &(dyn Fn(u64) -> Option<u64> + Sync),
        over: &(dyn Fn() -> bool + Sync),
        summary: &mut Summary,
    ) -> Result<(), CargoFprevError> {
        // Run `i` is (seed, mode, binary) in that nesting, computed from `i` (never
        // listed: a `--time` campaign's seeds have no end).
        let (modes, bins) = (self.a.modes.len(), self.bins.len());
        if modes == 0 || bins == 0 {
            return Ok(());
        }
        let a = self.a;
        let work = |i: usize| -> Option<(String, &String, usize)> {
            let seed = seeds(u64::try_from(i / (modes * bins)).ok()?)?;
            let r = i % (modes * bins);
            Some((token_of(a, seed), &a.modes[r / bins], r % bins))
        };
        use std::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        // Runs from this index on are not started: the time budget ran out at a seed's
        // start (a seed is run whole or not at all), or an error ended the rounds.
        let stop = AtomicUsize::new(usize::MAX);
        let (tx, rx) = std::sync::mpsc::channel();
        let this = &*self;
        let mut confirming = Duration::ZERO;
        let result = std::thread::scope(|scope| {
            for _ in 0..pool.jobs {
                let tx = tx.clone();
                let (work, next, stop) = (&work, &next, &stop);
                scope.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((token, mode, k)) = work(i) else {
                        break;
                    };
                    if k == 0 && *mode == this.a.modes[0] && over() {
                        stop.fetch_min(i, Ordering::Relaxed);
                    }
                    if i >= stop.load(Ordering::Relaxed) {
                        break;
                    }
                    this.bar
                        .set_message(format!("{mode} {token} {}", this.bins[k].target));
                    let launched = this.launch(k, mode, &token, pool);
                    if tx.send((i, launched)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            let mut ready = std::collections::BTreeMap::new();
            let mut turn = 0;
            let mut last_token: Option<String> = None;
            let mut settle = |turn: usize, launched: Result<Option<Launched>, CargoFprevError>| {
                // every run settled was launched: its index has a seed
                let Some((token, mode, k)) = work(turn) else {
                    return Ok(());
                };
                if last_token.as_ref() != Some(&token) {
                    summary.seed_ranges[0].count += 1;
                    last_token = Some(token.clone());
                }
                if let Some(launched) = launched? {
                    let t = Instant::now();
                    this.settle(k, mode, &token, launched, summary)?;
                    confirming += t.elapsed();
                }
                this.bar.inc(1);
                Ok::<(), CargoFprevError>(())
            };
            for (i, launched) in rx {
                ready.insert(i, launched);
                while let Some(launched) = ready.remove(&turn) {
                    if let Err(e) = settle(turn, launched) {
                        stop.store(0, Ordering::Relaxed);
                        return Err(e);
                    }
                    turn += 1;
                }
            }
            Ok(())
        });
        self.confirming += confirming;
        result
    }

    /// Runs binary `k` once scrambled; `None` when none of its tests reach a scrambled
    /// site (every seed would run it exactly as the unscrambled run did).
    fn launch(
        &self,
        k: usize,
        mode: &str,
        token: &str,
        pool: &Pool,
    ) -> Result<Option<Launched>, CargoFprevError> {
        let bin = &self.bins[k];
        let limit = times(self.limit(k), pool.stretch);
        let env = finding_env(mode, token);
        let mut args = self.a.test_args.clone();
        let mut narrowed: Option<Vec<String>> = None;
        match &self.reach[k] {
            Reach::Every => {}
            Reach::Only(tests) if tests.is_empty() => return Ok(None),
            Reach::Only(tests) => {
                args = tests.clone();
                args.push("--exact".into());
                narrowed = Some(tests.clone());
            }
        }
        if let Some(t) = pool.threads {
            args.push(format!("--test-threads={t}"));
        }
        let run = runner::run(bin, &args, &env, Some(limit))?;
        Ok(Some(Launched { run, narrowed }))
    }

    /// Replays the findings of an earlier report, before any new seed: each is still
    /// failing or fixed. Shard k of N replays the findings k, k + N, ... of the report,
    /// so that the shards of a night replay each once. A finding whose test is gone, fails
    /// unscrambled now, or came from an `assert_reproducible!` process report (its
    /// regressions file replays those) is said so and left out.
    fn replay_previous(
        &self,
        path: &Path,
        previous: &Summary,
        shard: fprev::amplify::Shard,
        summary: &mut Summary,
    ) -> Result<(), CargoFprevError> {
        let (k, n) = (shard.index() as usize, shard.count() as usize);
        let mine: Vec<&crate::findings::Finding> =
            previous.findings.iter().skip(k - 1).step_by(n).collect();
        if mine.is_empty() {
            return Ok(());
        }
        eprintln!(
            "cargo fprev: replaying {} finding(s) of {} first",
            mine.len(),
            path.display()
        );
        for f in mine {
            let found = self.bins.iter().enumerate().find(|(k, b)| {
                b.package == f.package
                    && b.target == f.target
                    && self.baseline[*k].tests.contains_key(&f.test)
            });
            let why_not = if f.kind == "differs" {
                Some("a campaign's finding: its fprev-regressions file replays it")
            } else if !MODES.contains(&f.mode.as_str()) || f.token.parse::<ReplayToken>().is_err() {
                Some("not a mode and token of this fprev")
            } else if found.is_none() {
                Some("no such test in the built tests any more")
            } else {
                None
            };
            let Some((k, bin)) = found.filter(|_| why_not.is_none()) else {
                eprintln!(
                    "cargo fprev: note: {} ({} {}) of {} not replayed: {}",
                    f.test,
                    f.mode,
                    f.token,
                    path.display(),
                    why_not.unwrap_or("")
                );
                continue;
            };
            if self.baseline[k].tests.get(&f.test) != Some(&TestOutcome::Passed) {
                eprintln!(
                    "cargo fprev: note: {} ({} {}) not replayed: it fails unscrambled now",
                    f.test, f.mode, f.token
                );
                continue;
            }
            let confirm = Confirm {
                bin,
                mode: &f.mode,
                token: &f.token,
                limit: self.limit(k),
                logs: self.logs,
                blame: self.a.blame,
                factor: self.a.timeout_factor,
            };
            confirm.replay(f, summary)?;
        }
        Ok(())
    }

    /// A scrambled run's time limit (and each confirmation's).
    fn limit(&self, k: usize) -> Duration {
        times(self.baseline[k].wall, self.a.timeout_factor).saturating_add(Duration::from_secs(5))
    }

    /// Files what binary `k`'s unscrambled run says of which tests reach a site.
    fn learn(&mut self, k: usize) {
        let (bin, base) = (&self.bins[k], &self.baseline[k]);
        let learned = Reach::learn(&reached_file(self.logs, k), base, &self.a.test_args);
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
        self.reach[k] = learned;
    }

    /// Logs a scrambled run and confirms its failures alone.
    fn settle(
        &self,
        k: usize,
        mode: &str,
        token: &str,
        launched: Launched,
        summary: &mut Summary,
    ) -> Result<(), CargoFprevError> {
        let (bin, base) = (&self.bins[k], &self.baseline[k]);
        let Launched { run, narrowed } = launched;
        if interrupted() {
            // The binary was interrupted too: its failures are not findings.
            return Ok(());
        }
        summary.runs += 1;
        write_log(
            self.logs,
            &format!("{mode}-{token}-{k}-{}", bin.target),
            &run.log,
        );
        if summary.coverage.len() <= k {
            // the runtime prints the line as the process exits: a killed or crashed
            // process never does
            let missing = if run.timed_out {
                "no coverage line (the run was stopped at its time limit)"
            } else if run.crashed {
                "no coverage line (the run crashed)"
            } else {
                "no coverage line (no scrambled code linked)"
            };
            let line = run
                .scramble_line
                .as_deref()
                .and_then(|l| l.strip_prefix("fprev scramble: "))
                .unwrap_or(missing);
            summary
                .coverage
                .push((bin.target.clone(), line.to_string()));
        }
        let (failed, stopped) = to_confirm(&run, base, narrowed.as_deref());
        let confirm = Confirm {
            bin,
            mode,
            token,
            limit: self.limit(k),
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
    let passed_before = |t: &String| base.tests.get(t) == Some(&TestOutcome::Passed);
    let failed = if run.crashed {
        // A crash names no test.
        base.tests
            .keys()
            .filter(|t| {
                passed_before(t) && run.tests.get(*t) != Some(&TestOutcome::Passed) && ran(t)
            })
            .cloned()
            .collect()
    } else {
        run.tests
            .iter()
            .filter(|(t, o)| **o == TestOutcome::Failed && passed_before(t))
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
fn report(a: &TestArgs, summary: &Summary) -> Result<ExitCode, CargoFprevError> {
    print!("{}", summary.to_console());
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
    /// thread in the unscrambled run).
    Only(Vec<String>),
}

impl Reach {
    /// What the unscrambled run's `FPREV_TESTS_OUT` file says. It ran the identity
    /// order, which counts every site it reaches as a seed's run would, and up to a
    /// test's first site every seed runs that test exactly as it did: a test that
    /// reached no site cannot change under any seed. Every doubt runs every test: test
    /// arguments of the user's (a filter the names would widen), a run that did not end
    /// normally (the file may be missing), a reach on a thread that is no test's (a
    /// test's own threads, rayon's workers, `main`).
    fn learn(file: &Path, base: &runner::Run, user_args: &[String]) -> Reach {
        let text = std::fs::read_to_string(file);
        let _ = std::fs::remove_file(file);
        if !user_args.is_empty() || base.timed_out || base.crashed {
            return Reach::Every;
        }
        let Ok(text) = text else {
            // The runtime writes the file at exit once scrambling has started, which the
            // first scrambled site of a process does: a run that ended normally without
            // it reached no site at all.
            return if base.scramble_line.is_none() {
                Reach::Only(Vec::new())
            } else {
                Reach::Every
            };
        };
        let mut tests = Vec::new();
        let mut processes = 0;
        for name in text.lines() {
            if name.starts_with("# process ") {
                // a test that ran its own binary: the child's reach is its parent's too
                processes += 1;
                if processes > 1 {
                    return Reach::Every;
                }
                continue;
            }
            if name == "main" || !base.tests.contains_key(name) {
                return Reach::Every;
            }
            if base.tests.get(name) == Some(&TestOutcome::Passed) {
                tests.push(name.to_string());
            }
        }
        // sorted (lines of a set, but the file is not trusted) for binary search
        tests.sort();
        tests.dedup();
        Reach::Only(tests)
    }
}
