//! `FPREV_CHAINS=1` prints the chain report when the test process exits.
// Counting and registration are compiled out with the `off` feature.
#![cfg(not(feature = "off"))]

#[fprev::accumulator]
fn total(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    s
}

/// Runs only inside the child process started below.
#[test]
fn child() {
    if std::env::var_os("FPREV_TEST_CHILD").is_some() {
        assert_eq!(total(&[1.0; 100]), 100.0);
    }
}

fn run_child(target: &std::path::Path) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--test-threads=1"])
        .env("FPREV_TEST_CHILD", "1")
        .env(fprev::chains::FPREV_CHAINS, "1")
        .env("CARGO_TARGET_DIR", target)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn report_printed_at_exit_and_merged() {
    let target = std::env::temp_dir().join(format!("fprev-exit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&target);
    let err = run_child(&target);
    assert!(
        err.contains("fprev chains: 1 accumulation site(s)"),
        "{err}"
    );
    assert!(err.contains("accumulator_exit::total"), "{err}");
    assert!(err.contains("sequential"), "{err}");
    // Whole-number terms far below 2^53: a counter, ranked below reductions.
    assert!(
        err.contains("[exact integer: order cannot change it]"),
        "{err}"
    );
    // A second process of the same run (same parent) merges into the same record.
    let err = run_child(&target);
    assert!(err.contains("(2 process(es) so far)"), "{err}");
    let merged = std::fs::read_to_string(target.join("fprev").join("chains.txt")).unwrap();
    assert!(merged.starts_with("merged from 2 process(es)"), "{merged}");
    assert!(
        merged.contains("       100       100.0          1.0          2"),
        "{merged}"
    );
    let _ = std::fs::remove_dir_all(&target);
}
