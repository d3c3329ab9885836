//! Building the annotated copy's tests once and running the built binaries, as cargo
//! would run them, under one scrambling setting at a time.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::workspace::cargo;
use crate::Failure;

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
pub fn build(
    copy: &Path,
    target_dir: &Path,
    packages: &[String],
    cargo_args: &[String],
) -> Result<Vec<TestBinary>, Failure> {
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
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure(format!("cannot run cargo: {e}")))?;
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
    let status = child.wait().map_err(|e| Failure(format!("cargo: {e}")))?;
    if !status.success() {
        return Err(Failure(
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
pub enum Outcome {
    Passed,
    Failed,
    Ignored,
}

/// One run of one test binary.
#[derive(Debug)]
pub struct Run {
    pub tests: BTreeMap<String, Outcome>,
    /// Each failed test's captured output (libtest's `---- name stdout ----` section).
    pub messages: BTreeMap<String, String>,
    pub wall: Duration,
    pub timed_out: bool,
    /// The binary exited non-zero with no test reported failed (a crash, an abort).
    pub crashed: bool,
    pub log: String,
}

/// Runs `bin` with `args` and `env`, killed after `limit`.
pub fn run(
    bin: &TestBinary,
    args: &[String],
    env: &[(String, String)],
    limit: Option<Duration>,
) -> Result<Run, Failure> {
    let start = Instant::now();
    let mut cmd = Command::new(&bin.path);
    cmd.args(args)
        .current_dir(&bin.cwd)
        .env("CARGO_MANIFEST_DIR", &bin.cwd)
        .env_remove("FPREV_SCRAMBLE")
        .env_remove("FPREV_SEED")
        .env_remove("FPREV_VARY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Failure(format!("cannot run {}: {e}", bin.path.display())))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || read_all(stdout));
    let err_reader = std::thread::spawn(move || read_all(stderr));
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => return Err(Failure(format!("{}: {e}", bin.path.display()))),
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
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let (tests, messages) = parse_libtest(&stdout);
    let failed_any = tests.values().any(|o| *o == Outcome::Failed);
    let crashed = !timed_out && status.is_some_and(|s| !s.success()) && !failed_any;
    Ok(Run {
        tests,
        messages,
        wall,
        timed_out,
        crashed,
        log: format!("{stdout}\n--- stderr ---\n{stderr}"),
    })
}

fn read_all(r: Option<impl std::io::Read>) -> String {
    let mut s = Vec::new();
    if let Some(mut r) = r {
        let _ = r.read_to_end(&mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// Test outcomes (`test NAME ... ok|FAILED|ignored`) and failure messages from libtest's
/// human output.
pub fn parse_libtest(stdout: &str) -> (BTreeMap<String, Outcome>, BTreeMap<String, String>) {
    let mut tests = BTreeMap::new();
    let mut messages = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("test ") {
            if let Some((name, result)) = rest.rsplit_once(" ... ") {
                let word = result.split(|c: char| c.is_whitespace() || c == ',').next();
                let outcome = match word {
                    Some("ok") => Some(Outcome::Passed),
                    Some("FAILED") => Some(Outcome::Failed),
                    Some("ignored") => Some(Outcome::Ignored),
                    _ => None,
                };
                // `#[should_panic]` tests are listed as `test NAME - should panic ... ok`;
                // their name (for `--exact`, and the thread that runs them) is NAME
                let name = name.trim_end();
                let name = name.strip_suffix(" - should panic").unwrap_or(name);
                if let Some(o) = outcome {
                    tests.insert(name.to_string(), o);
                }
                continue;
            }
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            if let Some((n, m)) = current.take() {
                messages.insert(n, m);
            }
            current = Some((name.to_string(), String::new()));
            continue;
        }
        if line == "failures:" || line.starts_with("test result:") {
            if let Some((n, m)) = current.take() {
                messages.insert(n, m);
            }
            continue;
        }
        if let Some((_, m)) = current.as_mut() {
            m.push_str(line);
            m.push('\n');
        }
    }
    if let Some((n, m)) = current.take() {
        messages.insert(n, m);
    }
    (tests, messages)
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
        assert_eq!(tests["a::ok_one"], Outcome::Passed);
        assert_eq!(tests["a::bad"], Outcome::Failed);
        assert_eq!(tests["slow"], Outcome::Ignored);
        // the name `--exact` and libtest's thread know, without the test's mode
        assert_eq!(tests["a::bad_input"], Outcome::Passed);
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
    fn package_names_from_ids() {
        assert_eq!(package_name("path+file:///w/statrs#0.18.0"), "statrs");
        assert_eq!(package_name("path+file:///w/a/b#mycrate@0.1.0"), "mycrate");
        assert_eq!(package_name("mycrate 0.1.0 (path+file:///w)"), "mycrate");
    }
}
