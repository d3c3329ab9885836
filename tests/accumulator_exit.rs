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

#[test]
fn report_printed_at_exit() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--test-threads=1"])
        .env("FPREV_TEST_CHILD", "1")
        .env(fprev::chains::FPREV_CHAINS, "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fprev chains: 1 accumulation site(s)"),
        "{err}"
    );
    assert!(err.contains("accumulator_exit::total"), "{err}");
    assert!(err.contains("sequential"), "{err}");
}
