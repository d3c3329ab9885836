//! `#[scramble(chains)]`: one build, two bodies. A process started with `FPREV_CHAINS=1`
//! counts the function's chains, as `#[accumulator]` would, and runs it as written; any
//! other process runs the scrambled body, which counts nothing. `cargo fprev chains`
//! runs the test build of `cargo fprev test` this way instead of building a second copy.

#![cfg(not(feature = "off"))] // needs both bodies compiled in; see scramble_off.rs

use fprev::scramble::{with_config, ScrambleConfig, Shuffle};

fn data(n: usize) -> Vec<f64> {
    // Magnitudes over many binades, so that the sum depends on its order.
    (0..n)
        .map(|i| ((i * 7919) % 1013) as f64 * 10f64.powi((i % 11) as i32 - 5) - 3.0)
        .collect()
}

#[fprev::scramble(chains)]
fn total(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    s
}

/// Two sites, one an iterator sum, and an early return: both bodies keep the function's
/// meaning.
#[fprev::scramble(chains)]
fn norms(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let squares: f64 = v.iter().map(|x| x * x).sum();
    let mut blocks = 0.0;
    for c in v.chunks(37) {
        let part: f64 = c.iter().sum();
        blocks += part;
    }
    (squares, blocks)
}

/// Returns `impl Trait`: two bodies would return two types, so it keeps the scrambled
/// one only, and its chains go uncounted.
#[fprev::scramble(chains)]
fn scaler(v: &[f64]) -> impl Fn(f64) -> f64 {
    let s: f64 = v.iter().sum();
    move |x| x * s
}

fn plain_total(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    s
}

/// Runs only inside the child process started below, with `FPREV_CHAINS=1`.
#[test]
fn child() {
    if std::env::var_os("FPREV_TEST_CHILD").is_none() {
        return;
    }
    let x = data(2000);
    assert_eq!(total(&x).to_bits(), plain_total(&x).to_bits());
    assert_eq!(norms(&x).0, x.iter().map(|v| v * v).sum::<f64>());
    assert_eq!(norms(&[]), (0.0, 0.0));
    assert_eq!(scaler(&x)(2.0), 2.0 * x.iter().sum::<f64>());
    // Under a scramble configuration too, the counting body runs as written.
    let cfg = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true)
        .seed(3);
    let inside = with_config(&cfg, || total(&x));
    assert_eq!(inside.to_bits(), plain_total(&x).to_bits());
    let report = fprev::chains::report();
    let site = report.site("total").expect("total counted");
    assert_eq!(site.max_chain, 2000);
    assert_eq!(site.shape, fprev::chains::ChainShape::Sequential);
    assert!(report.site("norms").is_some(), "{report}");
    assert!(report.site("scaler").is_none(), "{report}");
}

#[test]
fn a_process_without_fprev_chains_scrambles_and_one_with_it_counts() {
    let x = data(2000);
    let plain = plain_total(&x);
    let differs = (0..24).any(|seed| {
        let cfg = ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true)
            .seed(seed);
        with_config(&cfg, || total(&x)).to_bits() != plain.to_bits()
    });
    assert!(
        differs,
        "no seed reordered total: the scrambled body never ran"
    );
    assert!(
        fprev::chains::report()
            .site("total")
            .is_none_or(|s| s.adds == 0),
        "the scrambled body counted chains"
    );

    let target = std::env::temp_dir().join(format!("fprev-scramble-chains-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&target);
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "child", "--test-threads=1"])
        .env("FPREV_TEST_CHILD", "1")
        .env(fprev::chains::FPREV_CHAINS, "1")
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run the child");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("scramble_chains::total"), "{err}");
    assert!(err.contains("scramble_chains::norms"), "{err}");
    let _ = std::fs::remove_dir_all(&target);
}
