//! Building the annotated copy's tests once and running the built binaries, as cargo
//! would run them, under one scrambling setting at a time.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cli_output::CargoFprevError;
use crate::copy_manifests;
use crate::workspace::cargo;

/// A built test binary.
#[derive(Clone, Debug)]
pub struct TestBinary {
    pub path: PathBuf,
    pub package: String,
    /// The target's name (`mylib`, `integration`).
    pub target: String,
    /// The package's directory in the copy: tests run there, as under `cargo test`.
    pub cwd: PathBuf,
}

/// Builds every test binary of `packages` in `copy` (`cargo test --no-run`), into
/// `target_dir`. Cargo's errors are passed through.
///
/// When the tests are built optimized, incremental compilation is off (unless the user's
/// `CARGO_INCREMENTAL` says otherwise): it turns off the local ThinLTO that lets an
/// optimized crate inline across its codegen units, and annotated functions land in
/// other units than the plain build put them in, so a small function such as smartcore's
/// `partial_dot` lost the inlining its plain build had (its slowest test: 10-14 s
/// scrambled incrementally, 9-12 s without). No float result depends on it.
pub fn build(
    copy: &Path,
    target_dir: &Path,
    packages: &[String],
    cargo_args: &[String],
) -> Result<Vec<TestBinary>, CargoFprevError> {
    let mut cmd = Command::new(cargo());
    cmd.current_dir(copy)
        .env("CARGO_TARGET_DIR", target_dir)
        .args([
            "test",
            "--no-run",
            "--message-format=json-render-diagnostics",
        ]);
    for p in packages {
        cmd.args(["-p", p]);
    }
    cmd.args(cargo_args);
    if std::env::var_os("CARGO_INCREMENTAL").is_none()
        && copy_manifests::builds_tests_optimized(&copy.join("Cargo.toml"))
    {
        cmd.env("CARGO_INCREMENTAL", "0");
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .map_err(|e| CargoFprevError(format!("cannot run cargo: {e}")))?;
    let mut bins = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let Ok(m) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if m["reason"] != "compiler-artifact" || m["profile"]["test"] != true {
                continue;
            }
            let Some(exe) = m["executable"].as_str() else {
                continue;
            };
            let manifest = PathBuf::from(m["manifest_path"].as_str().unwrap_or(""));
            bins.push(TestBinary {
                path: PathBuf::from(exe),
                package: package_name(m["package_id"].as_str().unwrap_or("")),
                target: m["target"]["name"].as_str().unwrap_or("").to_string(),
                cwd: manifest.parent().map(Path::to_path_buf).unwrap_or_default(),
            });
        }
    }
    let status = child
        .wait()
        .map_err(|e| CargoFprevError(format!("cargo: {e}")))?;
    if !status.success() {
        return Err(CargoFprevError(
            "the tests of the annotated copy do not build (cargo's errors above); \
             check that `cargo test --no-run` builds them unannotated"
                .into(),
        ));
    }
    Ok(bins)
}

/// `path+file:///..#name@1.0` or `registry+..#name@1.0` or `name 1.0 (..)`: the name.
fn package_name(id: &str) -> String {
    if let Some((_, tail)) = id.rsplit_once('#') {
        let tail = tail.split('@').next().unwrap_or(tail);
        // `#0.1.0` alone (the name is the directory's): take the path's last part.
        if tail.chars().next().is_some_and(|c| c.is_ascii_digit()) {
            return id
                .split('#')
                .next()
                .and_then(|p| p.rsplit('/').next())
                .unwrap_or(tail)
                .to_string();
        }
        return tail.to_string();
    }
    id.split(' ').next().unwrap_or(id).to_string()
}

/// The outcome of one test in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestOutcome {
    Passed,
    Failed,
    Ignored,
}

/// One run of one test binary.
#[derive(Debug)]
pub struct Run {
    pub tests: BTreeMap<String, TestOutcome>,
    /// Each failed test's captured output (libtest's `---- name stdout ----` section).
    pub messages: BTreeMap<String, String>,
    pub wall: Duration,
    pub timed_out: bool,
    /// The binary exited non-zero with no test reported failed (a crash, an abort).
    pub crashed: bool,
    /// Standard output then standard error, each cut at half of `--max-log-bytes` with a
    /// note of what was not kept.
    pub log: String,
    /// The runtime's `fprev scramble: ...` coverage line, wherever it came in the
    /// output (also past what the log kept).
    pub scramble_line: Option<String>,
}

/// Whether `bin` lists `test` by name (`--list`), as libtest binaries do.
pub fn lists(bin: &TestBinary, test: &str) -> Result<bool, CargoFprevError> {
    let list = vec![test.to_string(), "--exact".into(), "--list".into()];
    let listed = run(bin, &list, &[], None)?;
    Ok(listed.log.contains(&format!("{test}: test")))
}

/// Runs `bin` with `args` and `env`, killed after `limit`.
pub fn run(
    bin: &TestBinary,
    args: &[String],
    env: &[(String, String)],
    limit: Option<Duration>,
) -> Result<Run, CargoFprevError> {
    let start = Instant::now();
    let mut cmd = Command::new(&bin.path);
    cmd.args(args)
        .current_dir(&bin.cwd)
        .env("CARGO_MANIFEST_DIR", &bin.cwd)
        .env_remove("FPREV_SCRAMBLE")
        .env_remove("FPREV_SEED")
        .env_remove("FPREV_VARY")
        // A test process that counts chains runs the function bodies as written.
        .env_remove("FPREV_CHAINS")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| CargoFprevError(format!("cannot run {}: {e}", bin.path.display())))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // each stream keeps half the log's bytes; libtest's lines are parsed as they go by
    let keep = usize::try_from(log_cap() / 2).unwrap_or(usize::MAX);
    let out_reader = std::thread::spawn(move || Capture::read(stdout, keep, true));
    let err_reader = std::thread::spawn(move || Capture::read(stderr, keep, false));
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => return Err(CargoFprevError(format!("{}: {e}", bin.path.display()))),
        }
        if limit.is_some_and(|l| start.elapsed() > l) {
            timed_out = true;
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = start.elapsed();
    let mut stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let scramble_line = stdout
        .scramble_line
        .clone()
        .or(stderr.scramble_line.clone());
    let (tests, messages) = stdout.libtest.finish();
    let failed_any = tests.values().any(|o| *o == TestOutcome::Failed);
    let crashed = !timed_out && status.is_some_and(|s| !s.success()) && !failed_any;
    let mut log = stdout.into_log("standard output");
    log.push_str("\n--- stderr ---\n");
    log.push_str(&stderr.into_log("standard error"));
    Ok(Run {
        tests,
        messages,
        wall,
        timed_out,
        crashed,
        log,
        scramble_line,
    })
}

/// Bytes of a run's output kept in its log (half for each stream); set from
/// `--max-log-bytes` before any run.
static LOG_CAP: AtomicU64 = AtomicU64::new(DEFAULT_LOG_CAP);
/// `--max-log-bytes`'s default: 64 MiB.
pub const DEFAULT_LOG_CAP: u64 = 64 << 20;
/// Bytes of one line read for parsing (libtest's lines are short); the rest of a longer
/// line still goes to the log, within its cap.
const MAX_LINE: usize = 64 << 10;
/// Bytes of one failed test's output kept as its message.
const MAX_MESSAGE: usize = 1 << 20;

/// Sets how many bytes of a run's output its log keeps.
pub fn set_log_cap(bytes: u64) {
    LOG_CAP.store(bytes, Ordering::Relaxed);
}

fn log_cap() -> u64 {
    LOG_CAP.load(Ordering::Relaxed)
}

/// One output stream of a run, read to its end in blocks: at most `keep` bytes of it
/// kept for the log and the count of the rest, while every line goes past the libtest
/// parser and the runtime's coverage line is noted, so memory does not grow with what
/// a test prints.
#[derive(Default)]
struct Capture {
    kept: Vec<u8>,
    dropped: u64,
    keep: usize,
    /// The line read so far (its first [`MAX_LINE`] bytes).
    line: Vec<u8>,
    parse: bool,
    libtest: Libtest,
    /// The runtime's `fprev scramble: ...` line, the first one.
    scramble_line: Option<String>,
}

impl Capture {
    fn read(r: Option<impl Read>, keep: usize, parse: bool) -> Capture {
        let mut c = Capture {
            keep,
            parse,
            ..Capture::default()
        };
        if let Some(mut r) = r {
            let mut block = vec![0u8; 64 << 10];
            loop {
                match r.read(&mut block) {
                    Ok(0) => break,
                    Ok(n) => c.feed(&block[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        if !c.line.is_empty() {
            c.end_line();
        }
        c
    }

    fn feed(&mut self, bytes: &[u8]) {
        let room = self.keep.saturating_sub(self.kept.len()).min(bytes.len());
        self.kept.extend_from_slice(&bytes[..room]);
        self.dropped += (bytes.len() - room) as u64;
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            let take = MAX_LINE.saturating_sub(self.line.len()).min(piece.len());
            self.line.extend_from_slice(&piece[..take]);
            if piece.ends_with(b"\n") {
                self.end_line();
            }
        }
    }

    fn end_line(&mut self) {
        let text = String::from_utf8_lossy(&self.line);
        let line = text.trim_end_matches(['\n', '\r']);
        if self.scramble_line.is_none() && line.starts_with("fprev scramble: ") {
            self.scramble_line = Some(line.to_string());
        }
        if self.parse {
            self.libtest.line(line);
        }
        self.line.clear();
    }

    /// The kept bytes as text, with a note of what was not kept.
    fn into_log(self, stream: &str) -> String {
        let mut log = String::from_utf8_lossy(&self.kept).into_owned();
        if self.dropped > 0 {
            log.push_str(&format!(
                "\n[cargo fprev: {} more bytes of {stream} not kept (--max-log-bytes)]\n",
                self.dropped
            ));
        }
        log
    }
}

/// libtest's human output read line by line: each test's outcome, and each failed
/// test's captured output (its first [`MAX_MESSAGE`] bytes).
#[derive(Default)]
struct Libtest {
    tests: BTreeMap<String, TestOutcome>,
    messages: BTreeMap<String, String>,
    current: Option<(String, String)>,
}

impl Libtest {
    fn line(&mut self, line: &str) {
        // inside a failure's captured output, `test x ... ok` is what the test printed (the
        // output of a test binary it ran itself), not this run's outcome
        if let Some(rest) = line
            .strip_prefix("test ")
            .filter(|_| self.current.is_none())
        {
            if let Some((name, result)) = rest.rsplit_once(" ... ") {
                let word = result.split(|c: char| c.is_whitespace() || c == ',').next();
                let outcome = match word {
                    Some("ok") => Some(TestOutcome::Passed),
                    Some("FAILED") => Some(TestOutcome::Failed),
                    Some("ignored") => Some(TestOutcome::Ignored),
                    _ => None,
                };
                // `#[should_panic]` tests are listed as `test NAME - should panic ... ok`;
                // their name (for `--exact`, and the thread that runs them) is NAME
                let name = name.trim_end();
                let name = name.strip_suffix(" - should panic").unwrap_or(name);
                if let Some(o) = outcome {
                    self.tests.insert(name.to_string(), o);
                }
                return;
            }
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            self.end_message();
            self.current = Some((name.to_string(), String::new()));
            return;
        }
        // libtest lists the failures (`failures:`) before its `test result:` line; a
        // `test result:` inside a failure's output is a nested run's, and the failure's
        // own panic comes after it
        if line == "failures:" || (line.starts_with("test result:") && self.current.is_none()) {
            self.end_message();
            return;
        }
        const CUT: &str = "[cargo fprev: the rest of this output is not kept: 1 MiB a test (--max-log-bytes does not raise it)]\n";
        if let Some((_, m)) = self.current.as_mut() {
            if m.ends_with(CUT) {
                // cut already: nothing more of this test's output
            } else if m.len() + line.len() < MAX_MESSAGE {
                m.push_str(line);
                m.push('\n');
            } else {
                m.push_str(CUT);
            }
        }
    }

    fn end_message(&mut self) {
        if let Some((n, m)) = self.current.take() {
            self.messages.insert(n, m);
        }
    }

    fn finish(&mut self) -> (BTreeMap<String, TestOutcome>, BTreeMap<String, String>) {
        self.end_message();
        (
            std::mem::take(&mut self.tests),
            std::mem::take(&mut self.messages),
        )
    }
}

/// Test outcomes (`test NAME ... ok|FAILED|ignored`) and failure messages from libtest's
/// human output, read whole (the runs read it as it comes, through [`Capture`]).
#[cfg(test)]
pub fn parse_libtest(stdout: &str) -> (BTreeMap<String, TestOutcome>, BTreeMap<String, String>) {
    let mut libtest = Libtest::default();
    for line in stdout.lines() {
        libtest.line(line);
    }
    libtest.finish()
}

/// The first `panicked at FILE:LINE:COL:` location in a failure's output, and the panic
/// message after it.
pub fn panic_site(message: &str) -> (Option<String>, String) {
    let mut lines = message.lines();
    while let Some(l) = lines.next() {
        if let Some(pos) = l.find("panicked at ") {
            let at = l[pos + "panicked at ".len()..]
                .trim_end_matches(':')
                .to_string();
            let text: Vec<&str> = lines
                .by_ref()
                .take_while(|l| {
                    !l.starts_with("note:")
                        && !l.starts_with("fprev:")
                        && !l.starts_with("stack backtrace:")
                })
                .collect();
            return (Some(at), text.join("\n"));
        }
    }
    (None, message.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_output_is_read() {
        let out = "\
running 3 tests
test a::ok_one ... ok
test a::bad ... FAILED
test slow ... ignored, needs time
test a::bad_input - should panic ... ok

failures:

---- a::bad stdout ----

thread 'a::bad' panicked at src/lib.rs:10:5:
assertion `left == right` failed
  left: 1.0000000000000002
 right: 1.0
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
fprev: scrambling was on (FPREV_SCRAMBLE=shapes); replay: ...

failures:
    a::bad

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out
";
        let (tests, messages) = parse_libtest(out);
        assert_eq!(tests["a::ok_one"], TestOutcome::Passed);
        assert_eq!(tests["a::bad"], TestOutcome::Failed);
        assert_eq!(tests["slow"], TestOutcome::Ignored);
        // the name `--exact` and libtest's thread know, without the test's mode
        assert_eq!(tests["a::bad_input"], TestOutcome::Passed);
        let (at, text) = panic_site(&messages["a::bad"]);
        assert_eq!(at.as_deref(), Some("src/lib.rs:10:5"));
        assert!(
            text.starts_with("assertion `left == right` failed"),
            "{text}"
        );
        assert!(
            text.contains("right: 1.0") && !text.contains("note:"),
            "{text}"
        );
    }

    #[test]
    fn a_test_binary_run_by_a_test_is_not_this_runs_outcome() {
        // Before: the child's `test child ... FAILED`, printed in the parent's failure,
        // was taken for a failure of `child`, which then passed alone: a false
        // not_reproduced.
        let out = "\
running 2 tests
test child ... ok
test parent ... FAILED

failures:

---- parent stdout ----
the child printed
running 1 test
test child ... FAILED
test result: FAILED. 0 passed; 1 failed

thread 'parent' panicked at src/lib.rs:9:5:
no

failures:
    parent

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out
";
        let (tests, messages) = parse_libtest(out);
        assert_eq!(tests.get("child"), Some(&TestOutcome::Passed));
        assert_eq!(tests.get("parent"), Some(&TestOutcome::Failed));
        let (at, _) = panic_site(&messages["parent"]);
        assert_eq!(at.as_deref(), Some("src/lib.rs:9:5"), "{messages:?}");
    }

    #[test]
    fn package_names_from_ids() {
        assert_eq!(package_name("path+file:///w/statrs#0.18.0"), "statrs");
        assert_eq!(package_name("path+file:///w/a/b#mycrate@0.1.0"), "mycrate");
        assert_eq!(package_name("mycrate 0.1.0 (path+file:///w)"), "mycrate");
    }
}

#[cfg(test)]
mod capture_tests {
    use super::*;

    /// Output far past the cap: the log keeps the cap and says how much more there was,
    /// and the outcomes, messages and coverage line after it are all still read.
    #[test]
    fn a_stream_keeps_its_cap_and_parses_every_line() {
        let mut text = String::new();
        text.push_str("running 2 tests\n");
        let noise = format!("{}\n", "x".repeat(999));
        for _ in 0..2000 {
            text.push_str(&noise);
        }
        text.push_str(&"y".repeat(200_000)); // one line longer than MAX_LINE
        text.push_str("\ntest a ... ok\ntest b ... FAILED\n\nfailures:\n\n---- b stdout ----\n");
        for _ in 0..3000 {
            text.push_str(&noise); // b's message, over MAX_MESSAGE
        }
        text.push_str("\nfailures:\n    b\n\ntest result: FAILED. 1 passed; 1 failed\n");
        text.push_str("fprev scramble: 3 site(s) reached\n");
        let keep = 10_000;
        let mut c = Capture::read(Some(text.as_bytes()), keep, true);
        assert_eq!(c.kept.len(), keep);
        assert_eq!(c.dropped, (text.len() - keep) as u64);
        assert_eq!(
            c.scramble_line.as_deref(),
            Some("fprev scramble: 3 site(s) reached")
        );
        let (tests, messages) = c.libtest.finish();
        assert_eq!(tests.get("a"), Some(&TestOutcome::Passed));
        assert_eq!(tests.get("b"), Some(&TestOutcome::Failed));
        let m = &messages["b"];
        assert!(m.len() <= MAX_MESSAGE + 200, "{}", m.len());
        assert!(
            m.ends_with("(--max-log-bytes does not raise it)]\n"),
            "{}",
            &m[m.len() - 200..]
        );
        let c = Capture::read(Some(text.as_bytes()), keep, true);
        let log = c.into_log("standard output");
        assert!(
            log.ends_with(&format!(
                "[cargo fprev: {} more bytes of standard output not kept (--max-log-bytes)]\n",
                text.len() - keep
            )),
            "{}",
            &log[log.len() - 120..]
        );
    }

    /// A stream read in small blocks parses as one read whole.
    #[test]
    fn lines_split_across_blocks_are_whole() {
        let text = "test one ... ok\ntest two - should panic ... ok\ntest three ... ignored\n";
        let mut c = Capture {
            keep: usize::MAX,
            parse: true,
            ..Capture::default()
        };
        for piece in text.as_bytes().chunks(3) {
            c.feed(piece);
        }
        let (tests, _) = c.libtest.finish();
        assert_eq!(tests, parse_libtest(text).0);
        assert_eq!(tests.len(), 3);
    }
}
