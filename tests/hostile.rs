//! Hostile input to the library: sizes, degenerate targets and the tree readers (issue 19).
//! Every case gets a typed error or the right result, never a panic or an abort.

use std::cell::Cell;

use fprev::{Reveal, RevealError, SumTree};

#[test]
fn zero_values_are_refused() {
    let e = fprev::reveal(0, |x: &[f32]| x.iter().sum::<f32>()).unwrap_err();
    assert!(matches!(e, RevealError::InvalidSize { n: 0, .. }), "{e}");
}

#[test]
fn one_value_calls_the_target_once_and_checks_the_answer() {
    let calls = Cell::new(0);
    let t = fprev::reveal(1, |x: &[f32]| {
        calls.set(calls.get() + 1);
        x[0]
    })
    .unwrap();
    assert_eq!((t.to_string(), calls.get()), ("0".to_string(), 1));

    let e = fprev::reveal(1, |_: &[f32]| f32::NAN).unwrap_err();
    assert!(matches!(e, RevealError::SingleInput { .. }), "{e}");
    assert!(e.to_string().contains("answered NaN"), "{e}");
    let e = fprev::reveal(1, |x: &[f64]| 2.0 * x[0]).unwrap_err();
    assert!(matches!(e, RevealError::SingleInput { .. }), "{e}");
    let e = fprev::reveal(1, |_: &[f32]| -> f32 { panic!("no") }).unwrap_err();
    assert!(matches!(e, RevealError::Target { .. }), "{e}");
    assert!(e.to_string().contains("panicked: no"), "{e}");
}

#[test]
fn sizes_beyond_the_memory_budget_are_refused_before_allocating() {
    let started = std::time::Instant::now();
    let e = fprev::reveal(100_000_000, |x: &[f32]| x.iter().sum::<f32>()).unwrap_err();
    match &e {
        RevealError::OutOfMemory {
            n: 100_000_000,
            bytes,
            budget: Some(b),
            ..
        } => assert!(bytes > b),
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("--max-memory"), "{e}");
    // Basic keeps every pair's answer: quadratic, refused far earlier
    let e = Reveal::new(200_000)
        .algorithm(fprev::Algorithm::Basic)
        .run(|x: &[f32]| x.iter().sum::<f32>())
        .unwrap_err();
    assert!(matches!(e, RevealError::OutOfMemory { .. }), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // the budget is the caller's to raise or lower
    let e = Reveal::new(4096)
        .max_memory(4096)
        .run(|x: &[f32]| x.iter().sum::<f32>())
        .unwrap_err();
    assert!(matches!(e, RevealError::OutOfMemory { n: 4096, .. }), "{e}");
}

#[test]
fn a_target_that_always_returns_zero_is_told_so() {
    for n in [3usize, 8, 100] {
        for zero in [0.0f32, -0.0] {
            let e = fprev::reveal(n, |_: &[f32]| zero).unwrap_err();
            assert!(matches!(e, RevealError::ConstantAnswers { .. }), "{e}");
            assert!(
                e.to_string().contains(&format!("every answer was {zero}")),
                "{e}"
            );
        }
    }
}

#[test]
fn sort_then_sum_is_a_data_dependent_order() {
    let sorted = |key: fn(f32) -> f32| {
        move |x: &[f32]| {
            let mut v = x.to_vec();
            v.sort_by(|a, b| key(*a).total_cmp(&key(*b)));
            v.iter().fold(0.0f32, |a, &b| a + b)
        }
    };
    for key in [|v: f32| v, |v: f32| -v, |v: f32| v.abs()] {
        let e = fprev::reveal(64, sorted(key)).unwrap_err();
        assert!(matches!(e, RevealError::DataDependent { n: 64, .. }), "{e}");
        assert!(
            e.to_string().contains("data-dependent order suspected"),
            "{e}"
        );
    }
    // an exact sum is still order-independent, not data-dependent
    let e = fprev::reveal(64, fprev::exact::sum).unwrap_err();
    assert_eq!(e, RevealError::OrderIndependent { n: 64 });
}

#[test]
fn hint_sizes_are_pluralised() {
    let one: SumTree = "0".parse().unwrap();
    let e = Reveal::new(4)
        .hint(one)
        .run(|x: &[f32]| x.iter().sum::<f32>())
        .unwrap_err();
    assert!(e.to_string().ends_with("a hint has 1 leaf"), "{e}");
    let two: SumTree = "(0+1)".parse().unwrap();
    let e = Reveal::new(4)
        .hint(two)
        .run(|x: &[f32]| x.iter().sum::<f32>())
        .unwrap_err();
    assert!(e.to_string().ends_with("a hint has 2 leaves"), "{e}");
}

/// Set in the child process that [`thread_counts_out_of_range_do_not_abort`] starts.
const CHILD: &str = "FPREV_TEST_CHILD";

#[test]
fn thread_counts_out_of_range_do_not_abort() {
    if std::env::var_os(CHILD).is_some() {
        // the child: amplify with FPREV_THREADS=5000 (it aborted the process), and a
        // configured pool size of 5000 too
        let cfg = fprev::AmplifyConfig::from_env();
        let x: Vec<f64> = (0..64).map(f64::from).collect();
        let report = fprev::amplify(&cfg.clone().runs(4), || x.iter().sum::<f64>());
        assert!(report.is_reproducible());
        let report = fprev::amplify(&cfg.runs(4).max_threads(5000), || x.iter().sum::<f64>());
        assert!(report.is_reproducible());
        return;
    }
    let o = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "thread_counts_out_of_range_do_not_abort",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env("FPREV_THREADS", "5000")
        .env_remove("FPREV_RUNS")
        .output()
        .expect("run the child");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}: {err}", o.status);
    assert!(
        err.contains("ignoring FPREV_THREADS=\"5000\"")
            && err.contains("up to 256")
            && err.contains("using the default (available cores, at least 4)"),
        "{err}"
    );
    assert!(
        err.contains("is out of range (1 to 256); using 256 threads"),
        "{err}"
    );
}
