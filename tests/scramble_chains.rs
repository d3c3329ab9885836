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

/// Signatures and bodies that both bodies must compile with: a method taking `self`
/// by value, a borrowed result, `?`, labelled loops, a nested item, `Self` in the body,
/// argument-position `impl Trait`, `unsafe`, a trait's provided method.
struct Readings {
    v: Vec<f64>,
}

impl Readings {
    const SCALE: f64 = 0.5;

    #[fprev::scramble(chains)]
    fn into_total(self) -> f64 {
        let mut s = 0.0;
        for x in self.v {
            s += x * Self::SCALE;
        }
        s
    }

    #[fprev::scramble(chains)]
    fn largest_prefix<'a>(&'a self, limit: f64) -> &'a [f64] {
        let mut s = 0.0;
        let mut end = 0;
        'scan: for (i, x) in self.v.iter().enumerate() {
            s += x;
            if s > limit {
                break 'scan;
            }
            end = i + 1;
        }
        &self.v[..end]
    }
}

#[fprev::scramble(chains)]
fn parsed_total(items: &[&str]) -> Result<f64, std::num::ParseFloatError> {
    fn parse(s: &str) -> Result<f64, std::num::ParseFloatError> {
        s.trim().parse()
    }
    let mut s = 0.0;
    for item in items {
        s += parse(item)?;
    }
    Ok(s)
}

#[fprev::scramble(chains)]
fn total_of(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut s = 0.0;
    for x in values {
        s += x;
    }
    s
}

/// # Safety
/// `p` points to `n` readable `f64`s.
#[fprev::scramble(chains)]
unsafe fn raw_total(p: *const f64, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += unsafe { *p.add(i) };
    }
    s
}

trait Weighted {
    fn weights(&self) -> &[f64];

    #[fprev::scramble(chains)]
    fn weight_sum(&self) -> f64 {
        self.weights().iter().sum()
    }
}

impl Weighted for Readings {
    fn weights(&self) -> &[f64] {
        &self.v
    }
}

/// The same values, whichever body runs.
fn check_signatures(x: &[f64]) {
    let plain: f64 = x.iter().fold(0.0, |s, v| s + v);
    let halves = x.iter().fold(0.0, |s, v| s + v * 0.5);
    assert_eq!(Readings { v: x.to_vec() }.into_total(), halves);
    let kept = Readings {
        v: vec![1.0, 2.0, 3.0, 4.0],
    };
    assert_eq!(kept.largest_prefix(6.5), &[1.0, 2.0, 3.0]);
    assert_eq!(parsed_total(&["1.5", " 2.5"]), Ok(4.0));
    assert!(parsed_total(&["1.5", "x"]).is_err());
    assert_eq!(total_of(x.iter().copied()), plain);
    assert_eq!(unsafe { raw_total(x.as_ptr(), x.len()) }, plain);
    assert_eq!(
        Readings { v: x.to_vec() }.weight_sum(),
        x.iter().sum::<f64>()
    );
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
    match std::env::var("FPREV_TEST_CHILD").as_deref() {
        Ok("count") => {}
        Ok("bad value") => {
            // FPREV_CHAINS=yes: neither 0 nor 1, so no counting (and a warning).
            let x = data(100);
            assert_eq!(total(&x).to_bits(), plain_total(&x).to_bits());
            assert!(fprev::chains::report().site("total").is_none());
            return;
        }
        _ => return,
    }
    let x = data(2000);
    assert_eq!(total(&x).to_bits(), plain_total(&x).to_bits());
    assert_eq!(norms(&x).0, x.iter().map(|v| v * v).sum::<f64>());
    assert_eq!(norms(&[]), (0.0, 0.0));
    check_signatures(&x);
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
    check_signatures(&x);
    assert!(
        fprev::chains::report()
            .site("total")
            .is_none_or(|s| s.adds == 0),
        "the scrambled body counted chains"
    );

    let err = run_child("count", "1");
    assert!(err.contains("scramble_chains::total"), "{err}");
    assert!(err.contains("scramble_chains::norms"), "{err}");
    // Every signature above counted its chains in the child.
    for f in [
        "into_total",
        "largest_prefix",
        "parsed_total",
        "total_of",
        "raw_total",
        "weight_sum",
    ] {
        assert!(err.contains(&format!("::{f} ")), "{f}: {err}");
    }
}

/// Runs `child` in a process of its own as `role`, with `FPREV_CHAINS=chains` and a
/// target folder of its own for the merged report; its standard error, once it passed.
fn run_child(role: &str, chains: &str) -> String {
    let target = std::env::temp_dir().join(format!(
        "fprev-scramble-chains-{}-{}",
        std::process::id(),
        role.replace(' ', "-")
    ));
    let _ = std::fs::remove_dir_all(&target);
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "child", "--test-threads=1", "--nocapture"])
        .env("FPREV_TEST_CHILD", role)
        .env(fprev::chains::FPREV_CHAINS, chains)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run the child");
    let _ = std::fs::remove_dir_all(&target);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

#[test]
fn a_value_of_fprev_chains_other_than_0_or_1_counts_nothing_and_says_so() {
    let err = run_child("bad value", "yes");
    assert_eq!(
        err.matches("FPREV_CHAINS=\"yes\" is not 0 or 1").count(),
        1,
        "{err}"
    );
    assert!(!err.contains("fprev chains:"), "{err}");
}
