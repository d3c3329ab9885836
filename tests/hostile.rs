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
    assert_eq!(e, RevealError::OrderIndependent { n: 64, wider: None });
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

/// A seeded fuzz harness for the tree readers (canonical text and JSON): valid trees'
/// text mutated, and random token streams; no input may panic, and whatever reads back
/// is a tree that writes and reads back to itself. Each case's seed is printed when it
/// fails (rerun one with `FPREV_SEED=<seed> FPREV_PROPTEST_CASES=1`).
mod fuzz {
    use fprev::SumTree;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const TOKENS: &[&str] = &[
        "(",
        ")",
        "+",
        "0",
        "1",
        "2",
        "7",
        "10",
        "4294967295",
        "99999999999",
        " ",
        "\n",
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\"format\"",
        "\"fprev-sum-tree/1\"",
        "\"leaves\"",
        "\"nodes\"",
        "\"canonical\"",
        "null",
        "-1",
        "1e9",
        "2147483647",
        "\u{e9}",
    ];

    fn seed_text(rng: &mut ChaCha8Rng) -> String {
        let n = rng.random_range(0..40);
        let t = match rng.random_range(0..4) {
            0 => SumTree::sequential(n),
            1 => SumTree::pairwise(n),
            2 => SumTree::fused(n),
            _ => SumTree::numpy_pairwise(n),
        };
        if rng.random_bool(0.5) {
            t.to_string()
        } else {
            t.to_json()
        }
    }

    fn mutate(rng: &mut ChaCha8Rng, s: &str) -> String {
        let mut b: Vec<char> = s.chars().collect();
        for _ in 0..rng.random_range(0..6) {
            let at = rng.random_range(0..=b.len());
            match rng.random_range(0..4) {
                0 => {
                    let tok = TOKENS[rng.random_range(0..TOKENS.len())];
                    b.splice(at..at, tok.chars());
                }
                1 if at < b.len() => {
                    let end = rng.random_range(at..=b.len().min(at + 8));
                    b.drain(at..end);
                }
                2 if at < b.len() => b[at] = rng.random_range(' '..='~'),
                _ => {
                    let end = rng.random_range(at..=b.len().min(at + 16));
                    let copy: Vec<char> = b[at..end].to_vec();
                    b.splice(at..at, copy);
                }
            }
        }
        b.into_iter().collect()
    }

    /// One case; how many readers accepted its text.
    fn one_case(seed: u64) -> usize {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let text = if rng.random_bool(0.7) {
            let s = seed_text(&mut rng);
            mutate(&mut rng, &s)
        } else {
            (0..rng.random_range(0..40))
                .map(|_| TOKENS[rng.random_range(0..TOKENS.len())])
                .collect()
        };
        let parsed = [text.parse::<SumTree>().ok(), SumTree::from_json(&text).ok()];
        let accepted = parsed.iter().flatten().count();
        for t in parsed.into_iter().flatten() {
            assert!(t.leaf_count() <= text.len(), "{text:?}");
            assert_eq!(t.to_string().parse::<SumTree>().as_ref(), Ok(&t));
            assert_eq!(SumTree::from_json(&t.to_json()).as_ref(), Ok(&t));
            let ones = vec![1.0f64; t.leaf_count()];
            assert_eq!(t.replay(&ones), t.leaf_count() as f64);
            assert_eq!(t.stats().leaves, t.leaf_count());
        }
        accepted
    }

    #[test]
    fn tree_readers_never_panic() {
        let mut accepted = 0;
        let cases =
            fprev::scramble::fuzz_cases("tree reader fuzz", 0x0019_7EE0_0000, 20_000, |seed| {
                accepted += one_case(seed)
            });
        // the mutations must leave enough valid trees for the round trips to be tested
        assert!(
            accepted as u64 * 20 >= cases,
            "{accepted} of {cases} accepted"
        );
    }
}

/// A seeded fuzz harness for the accumulator-state reader (`Accumulator::from_bytes`):
/// states of random sums, mutated (bytes flipped, cut, repeated, inserted) or made up.
/// No input may panic; whatever reads back is canonical (it writes back to the very same
/// bytes), rounds without panicking, and merges; an unmutated state reads back to the
/// same sum. Rerun one case with `FPREV_SEED=<seed> FPREV_PROPTEST_CASES=1`.
mod fuzz_states {
    use fprev::exact::Accumulator;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_state(rng: &mut ChaCha8Rng) -> Accumulator {
        let mut acc = Accumulator::new();
        for _ in 0..rng.random_range(0..6) {
            let x = match rng.random_range(0..6) {
                0 => f64::from_bits(rng.random()),
                1 => -0.0,
                2 => rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-1074..1000)),
                3 => rng.random_range(-1e6..1e6),
                4 => f64::MAX,
                _ => rng.random_range(-1.0..1.0),
            };
            if rng.random_bool(0.2) {
                acc.add_product(x, f64::from_bits(rng.random()));
            } else {
                acc.add(x);
            }
        }
        acc
    }

    /// One case; whether its (possibly mutated) bytes were read.
    fn one_case(seed: u64) -> bool {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let acc = random_state(&mut rng);
        let mut bytes = acc.to_bytes();
        let back = Accumulator::from_bytes(&bytes).expect("a state read back");
        assert_eq!(back.to_bytes(), bytes);
        let (a, b) = (back.finish(), acc.finish());
        assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        match rng.random_range(0..5) {
            0 => {
                let at = rng.random_range(0..bytes.len());
                bytes[at] ^= 1 << rng.random_range(0..8);
            }
            1 => bytes.truncate(rng.random_range(0..bytes.len())),
            2 => {
                let at = rng.random_range(0..=bytes.len());
                let extra: Vec<u8> = (0..rng.random_range(1..9)).map(|_| rng.random()).collect();
                bytes.splice(at..at, extra);
            }
            3 => {
                let at = rng.random_range(4..8);
                bytes[at] = rng.random();
            }
            _ => {
                bytes = (0..rng.random_range(0..40)).map(|_| rng.random()).collect();
                if rng.random_bool(0.7) && bytes.len() >= 6 {
                    let flags = bytes[5] & 0x3F;
                    bytes[..6].copy_from_slice(&[b'F', b'P', b'X', b'A', 1, flags]);
                }
            }
        }
        match Accumulator::from_bytes(&bytes) {
            Ok(read) => {
                assert_eq!(read.to_bytes(), bytes, "accepted bytes are canonical");
                let _ = read.finish();
                let _ = read.finish_f32();
                let mut merged = read.clone();
                merged.merge(&acc);
                merged.merge_bytes(&bytes).expect("read once, read twice");
                let _ = merged.to_bytes();
                true
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                false
            }
        }
    }

    #[test]
    fn state_reader_never_panics() {
        let (mut accepted, mut refused) = (0u64, 0u64);
        let cases =
            fprev::scramble::fuzz_cases("state reader fuzz", 0x00AC_C000_0000, 20_000, |seed| {
                if one_case(seed) {
                    accepted += 1
                } else {
                    refused += 1
                }
            });
        // both sides of the reader must be exercised
        assert!(
            cases < 100 || (accepted * 50 >= cases && refused * 2 >= cases),
            "{accepted} accepted, {refused} refused of {cases}"
        );
    }
}

#[test]
fn a_constant_target_is_told_so_whatever_the_constant() {
    for c in [1.0f32, 2.0, 3.0] {
        let e = fprev::reveal(64, |_: &[f32]| c).unwrap_err();
        assert!(matches!(e, RevealError::ConstantAnswers { .. }), "{c}: {e}");
        assert!(
            e.to_string().contains(&format!("every answer was {c}")),
            "{e}"
        );
    }
}
