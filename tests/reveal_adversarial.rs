//! Targets that are not plain summations must give a typed error: never a panic, a hang
//! or a wrong tree.

use fprev::{Algorithm, Reveal, RevealError};
use std::cell::Cell;

fn all_algorithms<T: fprev::ProbeFloat>(n: usize, f: impl Fn(&[T]) -> T) -> Vec<RevealError> {
    [Algorithm::FPRev, Algorithm::Basic, Algorithm::Naive]
        .into_iter()
        .filter(|a| *a != Algorithm::Naive || n <= 8)
        .map(|a| match Reveal::new(n).algorithm(a).run(&f) {
            Ok(t) => panic!("{a:?} revealed {t} from a target that is not a plain sum"),
            Err(e) => e,
        })
        .collect()
}

#[test]
fn nan_output() {
    for e in all_algorithms(6, |_: &[f32]| f32::NAN) {
        assert!(
            matches!(e, RevealError::NonFinite { .. } | RevealError::Naive { .. }),
            "{e}"
        );
    }
}

#[test]
fn max_is_out_of_range() {
    for e in all_algorithms(8, |x: &[f32]| x.iter().cloned().fold(f32::MIN, f32::max)) {
        assert!(
            matches!(
                e,
                RevealError::OutOfRange { .. } | RevealError::Naive { .. }
            ),
            "{e}"
        );
    }
}

#[test]
fn random_answers() {
    let state = Cell::new(0x1234_5678u64);
    let noisy = |_: &[f64]| {
        let s = state
            .get()
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state.set(s);
        (s >> 11) as f64 / (1u64 << 53) as f64 * 10.0
    };
    // Fractional answers: no whole number of units, or (naive search, which sums random
    // inputs) two answers to one input.
    for e in all_algorithms(7, noisy) {
        assert!(
            matches!(e, RevealError::NotInteger { .. })
                || matches!(&e, RevealError::Naive { detail } if detail.contains("nondeterministic")),
            "{e:?}"
        );
        assert!(
            e.to_string().contains("not a plain summation")
                || e.to_string().contains("nondeterministic"),
            "{e}"
        );
    }
    // whole-number random answers in range: outside [0, 1] units, or no tree joins them
    let noisy_int = |_: &[f64]| {
        let s = state
            .get()
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state.set(s);
        ((s >> 33) % 30) as f64
    };
    for e in all_algorithms(32, noisy_int) {
        assert!(
            matches!(
                e,
                RevealError::OutOfRange { .. } | RevealError::Inconsistent { .. }
            ),
            "{e:?}"
        );
    }
}

#[test]
fn flaky_order() {
    let calls = Cell::new(0u64);
    let flaky = |x: &[f32]| {
        calls.set(calls.get() + 1);
        if calls.get() % 3 == 0 {
            x.iter().rev().fold(0.0, |a, &b| a + b)
        } else {
            x.iter().fold(0.0, |a, &b| a + b)
        }
    };
    // An order that changes between calls: probe answers no tree can join (the message
    // names that cause), or, for the naive search, one input answered twice differently.
    for n in [8usize, 64] {
        for e in all_algorithms(n, flaky) {
            match &e {
                RevealError::Inconsistent { .. } => {
                    assert!(e.to_string().contains("changes between calls"), "{e}")
                }
                RevealError::Naive { detail } => {
                    assert!(detail.contains("nondeterministic"), "{e}")
                }
                _ => panic!("n = {n}: {e:?}"),
            }
        }
    }
}

#[test]
fn kahan_is_not_a_plain_sum() {
    let kahan = |x: &[f32]| {
        let (mut s, mut c) = (0.0f32, 0.0f32);
        for &v in x {
            let y = v - c;
            let t = s + y;
            c = (t - s) - y;
            s = t;
        }
        s
    };
    // The probes see a sequential sum (compensation cancels on probe inputs); the check
    // on random inputs refuses it, naming compensation among the causes.
    for n in [8usize, 100] {
        for e in all_algorithms(n, kahan) {
            match &e {
                RevealError::NotPlainSummation { .. } => {
                    assert!(e.to_string().contains("compensated/Kahan"), "{e}")
                }
                RevealError::Naive { detail } => {
                    assert!(detail.contains("not a plain summation"), "{e}")
                }
                _ => panic!("n = {n}: {e:?}"),
            }
        }
    }
}

#[test]
fn order_independent_sum_is_reported() {
    let e = fprev::reveal(64, |x: &[f64]| fprev::float::exact_sum_rounded(x)).unwrap_err();
    assert_eq!(e, RevealError::OrderIndependent { n: 64, wider: None });
    // fprev's own exact sums, sequential and parallel, f64 and f32
    for n in [3usize, 64, 1000] {
        let e = fprev::reveal(n, fprev::exact::sum).unwrap_err();
        assert_eq!(e, RevealError::OrderIndependent { n, wider: None });
        let e = fprev::reveal(n, fprev::exact::sum_f32).unwrap_err();
        assert_eq!(
            e,
            RevealError::OrderIndependent {
                n,
                wider: Some("f64")
            }
        );
        let e = fprev::Reveal::new(n)
            .run_sync(fprev::exact::par_sum)
            .unwrap_err();
        assert_eq!(e, RevealError::OrderIndependent { n, wider: None });
    }
    // accepted as a tree, it is one fused node that replays bit for bit
    let t = fprev::Reveal::new(16)
        .accept_flat(true)
        .run(fprev::exact::sum)
        .unwrap();
    assert_eq!(t, fprev::SumTree::fused(16));
    // a wider accumulator looks the same to the probes
    let e = fprev::reveal(64, |x: &[f32]| {
        x.iter().map(|&v| v as f64).sum::<f64>() as f32
    })
    .unwrap_err();
    assert_eq!(
        e,
        RevealError::OrderIndependent {
            n: 64,
            wider: Some("f64")
        }
    );
    // a 16-bit sum accumulated in f32 says which accumulator to try
    let e = fprev::reveal(64, |x: &[fprev::half::f16]| {
        fprev::half::f16::from_f32(x.iter().map(|v| v.to_f32()).sum::<f32>())
    })
    .unwrap_err();
    assert_eq!(
        e,
        RevealError::OrderIndependent {
            n: 64,
            wider: Some("f32")
        }
    );
    assert!(
        e.to_string()
            .contains("try acc_dtype=\"float32\" in Python, --acc-dtype f32"),
        "{e}"
    );
}

/// float16 values added in eight f32 lanes (a vector register) and rounded once to
/// float16, as PyTorch's CPU sums do; the lanes' true tree, revealed in f32.
fn lanes_in_f32(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    for (i, v) in x.iter().enumerate() {
        acc[i % 8] += v;
    }
    acc.iter().sum()
}

/// The same sum with float16 values and a float16 answer, revealed in f32 (what
/// `acc_dtype="float32"` does in Python).
struct F16InF32Lanes;

impl fprev::Target<f32> for F16InF32Lanes {
    fn call(&mut self, x: &[f32]) -> Result<f32, fprev::target::TargetError> {
        Ok(fprev::half::f16::from_f32(lanes_in_f32(x)).to_f32())
    }
    fn input_format(&self) -> Option<fprev::float::FloatFormat> {
        Some(<fprev::half::f16 as fprev::ProbeFloat>::FORMAT)
    }
}

#[test]
fn f16_summed_in_an_f32_register_names_the_register_at_every_size() {
    use fprev::half::f16;
    let f16_lanes = |x: &[f16]| {
        let wide: Vec<f32> = x.iter().map(|v| v.to_f32()).collect();
        f16::from_f32(lanes_in_f32(&wide))
    };
    // up to 1024 values the register keeps every unit next to the masks; from 1025 on
    // the masks sit where it drops them, so the probes find the true tree and the
    // replays say which register added it (before, its rounding looked like broken
    // trees or a truncating adder)
    for (n, independent) in [(300, true), (1100, false), (2048, false)] {
        let e = Reveal::new(n).run(f16_lanes).unwrap_err();
        if independent {
            assert!(
                matches!(
                    e,
                    RevealError::OrderIndependent {
                        wider: Some("f32"),
                        ..
                    }
                ),
                "n = {n}: {e}"
            );
        } else {
            assert!(
                matches!(
                    e,
                    RevealError::WiderAccumulator {
                        operands: "f16",
                        wider: "f32",
                        ..
                    }
                ),
                "n = {n}: {e}"
            );
            assert!(e.to_string().contains("--acc-dtype f32"), "{e}");
        }
    }
    // in f32, answers rounded to float16 count 2048 units at most: larger sizes are
    // counted in windows, and the tree is the lanes' tree
    for n in [1100, 3000] {
        let truth = fprev::reveal(n, lanes_in_f32).unwrap();
        let r = Reveal::new(n)
            .verify(false)
            .run_target(F16InF32Lanes)
            .unwrap();
        assert_eq!(r.tree, truth, "n = {n}");
        assert_eq!(r.windowed, n > 2049, "n = {n}");
    }
    // a sum that really adds in float16 is revealed as before at those sizes
    for n in [1100, 2048] {
        let t = Reveal::new(n)
            .run(|x: &[f16]| {
                let mut acc = [f16::ZERO; 8];
                for (i, v) in x.iter().enumerate() {
                    acc[i % 8] += *v;
                }
                acc.iter().fold(f16::ZERO, |a, b| a + *b)
            })
            .unwrap();
        assert_eq!(t, fprev::reveal(n, lanes_in_f32).unwrap(), "n = {n}");
    }
}

#[test]
fn panicking_target_is_an_error() {
    let e = fprev::reveal(16, |x: &[f32]| {
        if x[3] < 0.0 {
            panic!("negative input");
        }
        x.iter().sum::<f32>()
    })
    .unwrap_err();
    assert!(matches!(e, RevealError::Target { .. }), "{e}");
}

#[test]
fn scaled_sum_is_not_integral() {
    let e = fprev::reveal(10, |x: &[f64]| x.iter().sum::<f64>() / 3.0).unwrap_err();
    assert!(
        matches!(
            e,
            RevealError::NotInteger { .. } | RevealError::OutOfRange { .. }
        ),
        "{e}"
    );
}

#[test]
fn zero_and_huge_sizes() {
    assert!(matches!(
        fprev::reveal(0, |_: &[f32]| 0.0).unwrap_err(),
        RevealError::InvalidSize { .. }
    ));
    assert!(matches!(
        fprev::reveal(1 << 29, |_: &[fprev::half::f16]| fprev::half::f16::ZERO).unwrap_err(),
        RevealError::TooLarge { .. }
    ));
}
