//! `FPREV_SEED=<token> cargo test <name>` replays the same bits whether the test runs
//! alone or inside the whole suite, at any `--test-threads`, and a failing test under
//! `FPREV_SCRAMBLE` prints the command that replays it.
//!
//! The driver re-runs this test binary as child processes; the `child_*` tests do the
//! work there (ignored in a plain run: they only make sense under the driver).

#![cfg(not(feature = "off"))]

use std::process::Command;

#[fprev::scramble]
fn total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

fn data() -> Vec<f64> {
    (0..5000)
        .map(|i| ((i * 7919 % 1013) as f64 - 506.0) * 10f64.powi(i % 9 - 4))
        .collect()
}

const CHILD: &str = "FPREV_TEST_CHILD";

#[test]
#[ignore = "run by scrambled_runs_replay_alone_and_in_the_suite as a child process"]
fn child_bits() {
    let v = data();
    let bits: Vec<String> = (0..3)
        .map(|_| format!("{:016x}", total(&v).to_bits()))
        .collect();
    println!("BITS={}", bits.join(","));
    assert_eq!(bits.len(), 3);
}

#[test]
#[ignore = "run by scrambled_runs_replay_alone_and_in_the_suite as a child process"]
fn child_noise() {
    // Other tests in the same process reach the same site: a process-wide invocation
    // counter would make child_bits depend on them.
    let v = data();
    let n = (0..7).map(|_| total(&v)).filter(|x| x.is_finite()).count();
    assert_eq!(n, 7);
}

#[test]
#[ignore = "run by a_failing_test_prints_its_replay_command as a child process"]
fn child_fails() {
    let v = data();
    let s = total(&v);
    assert!(s.is_finite(), "{s}");
    if std::env::var(CHILD).as_deref() == Ok("fail") {
        panic!("order-dependent: {s}");
    }
}

fn child(args: &[&str], mode: &str) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary");
    Command::new(exe)
        .args(args)
        .env(CHILD, mode)
        .env("FPREV_SCRAMBLE", "shapes")
        .env("FPREV_SEED", "v3-00000000000bead5")
        .output()
        .expect("run the test binary")
}

fn bits_of(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.split("BITS=").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no BITS line in {stdout}"))
        .to_string()
}

#[test]
fn scrambled_runs_replay_alone_and_in_the_suite() {
    if std::env::var_os(CHILD).is_some() {
        return; // the child's own copy of the driver
    }
    let alone = bits_of(&child(
        &["child_bits", "--exact", "--include-ignored", "--nocapture"],
        "1",
    ));
    for threads in ["1", "4"] {
        let suite = bits_of(&child(
            &[
                "child_",
                "--include-ignored",
                "--nocapture",
                "--test-threads",
                threads,
            ],
            "1",
        ));
        assert_eq!(alone, suite, "--test-threads {threads}");
    }
    // Scrambling did act: some call was reassociated.
    let calls: Vec<&str> = alone.split(',').collect();
    let plain = format!("{:016x}", {
        let v = data();
        fprev::scramble::with_config(&fprev::scramble::ScrambleConfig::off(), || total(&v))
            .to_bits()
    });
    assert!(
        calls.iter().any(|b| *b != plain),
        "never reassociated: {alone}"
    );
}

#[test]
fn a_failing_test_prints_its_replay_command() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let out = child(&["child_fails", "--exact", "--include-ignored"], "fail");
    assert!(!out.status.success());
    // libtest shows a failing test's panic output (the hook's line included) in its
    // "failures" section on stdout; the exit report goes to stderr.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains(
            "replay: FPREV_SCRAMBLE=shapes FPREV_SEED=v3-00000000000bead5 cargo test child_fails -- --exact"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("fprev scramble: 1 of 1 scramble site(s) reached"),
        "coverage line at exit: {stderr}"
    );
}
