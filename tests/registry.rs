//! Registration through `#[accumulator(reveal(..))]` and pinned orders.
// Counting and registration are compiled out with the `off` feature.
#![cfg(not(feature = "off"))]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use fprev::registry::{Check, CheckOutcome, Op};

#[fprev::accumulator(reveal(op = "sum", sizes = [4, 9]))]
fn seq_sum(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    s
}

#[fprev::accumulator(reveal(op = "dot", sizes = [6], dtype = f64))]
fn lanes_dot(a: &[f64], b: &[f64]) -> f64 {
    let (mut even, mut odd) = (0.0, 0.0);
    for i in 0..a.len() {
        if i % 2 == 0 {
            even += a[i] * b[i];
        } else {
            odd += a[i] * b[i];
        }
    }
    even + odd
}

#[fprev::accumulator(reveal(op = "gemv", sizes = [5]))]
fn gemv(m: usize, n: usize, a: &[f32], x: &[f32]) -> Vec<f32> {
    (0..m)
        .map(|i| (0..n).rev().fold(0.0, |acc, j| acc + a[i * n + j] * x[j]))
        .collect()
}

#[fprev::accumulator(reveal(op = "gemm", sizes = [4]))]
fn gemm(m: usize, n: usize, k: usize, a: &[f64], b: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

#[fprev::accumulator(reveal(op = "sum", sizes = [8], dtype = bf16))]
fn generic_pairwise<T: Copy + std::ops::Add<Output = T>>(x: &[T]) -> T {
    if x.len() == 1 {
        return x[0];
    }
    let (l, r) = x.split_at(x.len() / 2);
    generic_pairwise(l) + generic_pairwise(r)
}

static CALLS: AtomicUsize = AtomicUsize::new(0);

/// Sums forwards on odd calls, backwards on even ones: a nondeterministic order.
#[fprev::accumulator(reveal(op = "sum", sizes = [6]))]
fn flaky_sum(x: &[f32]) -> f32 {
    if CALLS.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
        x.iter().fold(0.0, |a, &b| a + b)
    } else {
        x.iter().rev().fold(0.0, |a, &b| a + b)
    }
}

/// Associated functions register with their path from the module (issue 14, item 8).
mod methods {
    pub struct Data;

    impl Data {
        #[fprev::accumulator(reveal(op = "sum", sizes = [4], path = "Data::total"))]
        pub fn total(x: &[f32]) -> f32 {
            let mut s = 0.0;
            for v in x.iter().rev() {
                s += v;
            }
            s
        }
    }

    pub trait Stats {
        fn len_of(x: &[f64]) -> f64;

        /// A provided method, registered for one implementer.
        #[fprev::accumulator(reveal(op = "sum", sizes = [4], path = "<Data as Stats>::mean"))]
        fn mean(x: &[f64]) -> f64 {
            let mut s = 0.0;
            for v in x {
                s += v;
            }
            s / Self::len_of(x)
        }
    }

    impl Stats for Data {
        fn len_of(_: &[f64]) -> f64 {
            1.0
        }
    }
}

#[test]
fn associated_functions_register_with_their_path() {
    use methods::Stats as _;
    assert_eq!(methods::Data::total(&[1.0, 2.0]), 3.0);
    assert_eq!(methods::Data::mean(&[1.0, 2.0]), 3.0);
    let regs = fprev::registered();
    let tree = |n: &str| {
        let r = regs
            .iter()
            .find(|r| r.name == format!("registry::methods::{n}"));
        let r = r.unwrap_or_else(|| panic!("{n} not registered: {regs:?}"));
        r.reveal(4, 0).unwrap().to_string()
    };
    assert_eq!(
        tree("total"),
        "(((3+2)+1)+0)"
            .parse::<fprev::SumTree>()
            .unwrap()
            .to_string()
    );
    assert_eq!(tree("mean"), "(((0+1)+2)+3)");
}

/// An associated function that names neither `self` nor `Self` is registered by its bare
/// name, which here finds a free function of the same name: revealing it is an error
/// that says so, not the free function's tree.
mod twins {
    pub fn total(x: &[f32]) -> f32 {
        x.iter().rev().sum()
    }

    pub struct Twin;

    impl Twin {
        #[fprev::accumulator(reveal(op = "sum", sizes = [4]))]
        pub fn total(x: &[f32]) -> f32 {
            let mut s = 0.0;
            for v in x {
                s += v;
            }
            s
        }
    }
}

#[test]
fn a_registration_that_finds_a_twin_is_an_error() {
    assert_eq!(twins::Twin::total(&[1.0, 2.0]), twins::total(&[1.0, 2.0]));
    let regs = fprev::registered();
    let r = regs
        .iter()
        .find(|r| r.name == "registry::twins::total")
        .unwrap_or_else(|| panic!("twins::total not registered: {regs:?}"));
    let err = r.reveal(4, 0).unwrap_err();
    assert!(
        matches!(&err, fprev::RevealError::NotTheRegisteredFunction { name } if name == "registry::twins::total"),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("never entered") && msg.contains("path = "),
        "{msg}"
    );
    // The functions that are what they register are entered, so they still reveal (the
    // other tests), including through a path (`methods`).
    assert!(regs
        .iter()
        .find(|r| r.name == "registry::seq_sum")
        .is_some_and(|r| r.reveal(4, 0).is_ok()));
}

#[test]
fn concurrent_reveals_of_one_registration_all_succeed() {
    // Tests pin the same function from several threads at once: none may clear the
    // entry mark while another reveal is looking for it.
    let regs = fprev::registered();
    let r = regs
        .iter()
        .find(|r| r.name == "registry::seq_sum")
        .expect("seq_sum registered");
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                s.spawn(move || {
                    (0..20)
                        .map(|k| r.reveal(4 + (t + k) % 6, k as u64).map(|_| ()))
                        .collect::<Result<Vec<()>, _>>()
                })
            })
            .collect();
        for h in handles {
            let got = h.join().expect("no panic");
            assert!(got.is_ok(), "{got:?}");
        }
    });
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fprev-registry-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn registrations_are_listed() {
    let regs = fprev::registered();
    let find = |n: &str| {
        regs.iter()
            .find(|r| r.name == format!("registry::{n}"))
            .unwrap_or_else(|| panic!("{n} not registered: {regs:?}"))
    };
    assert_eq!(find("seq_sum").op, Op::Sum);
    assert_eq!(find("seq_sum").sizes, &[4, 9]);
    assert_eq!(find("seq_sum").dtype(), "f32");
    assert_eq!(find("lanes_dot").dtype(), "f64");
    assert_eq!(find("gemv").op, Op::Gemv);
    assert_eq!(find("gemm").op, Op::Gemm);
    assert_eq!(find("generic_pairwise").dtype(), "bf16");
    assert!(find("seq_sum").to_string().contains("tests/registry.rs"));
}

#[test]
fn adapters_reveal_each_op() {
    let regs = fprev::registered();
    let tree = |n: &str, size: usize| {
        let r = regs.iter().find(|r| r.name.ends_with(n)).unwrap();
        r.reveal(size, 0).unwrap().to_string()
    };
    assert_eq!(tree("seq_sum", 4), "(((0+1)+2)+3)");
    assert_eq!(tree("lanes_dot", 6), "(((0+2)+4)+((1+3)+5))");
    assert_eq!(
        tree("gemv", 4),
        "(((3+2)+1)+0)"
            .parse::<fprev::SumTree>()
            .unwrap()
            .to_string()
    );
    assert_eq!(tree("gemm", 4), "(((0+1)+2)+3)");
    assert_eq!(
        tree("generic_pairwise", 8),
        fprev::SumTree::pairwise(8).to_string()
    );
}

#[test]
fn pin_then_match_then_detect_a_change() {
    let dir = scratch("pin");
    let check = Check::from_env()
        .dir(&dir)
        .bless(false)
        .filter("registry::seq_sum");
    let first = check.run().unwrap();
    assert_eq!(first.orders.len(), 2);
    assert!(first
        .orders
        .iter()
        .all(|o| o.outcome == CheckOutcome::Pinned));
    let pin = dir.join("registry.seq_sum.sum.f32.n4.tree");
    assert_eq!(std::fs::read_to_string(&pin).unwrap(), "(((0+1)+2)+3)\n");
    assert!(dir.join("registry.seq_sum.sum.f32.n4.dot").exists());

    let second = check.run().unwrap();
    assert!(second
        .orders
        .iter()
        .all(|o| o.outcome == CheckOutcome::Matched));

    // Someone's pin says the sum used to be pairwise: the check fails with the diff.
    std::fs::write(&pin, "((0+1)+(2+3))\n").unwrap();
    let err = check.run().unwrap_err();
    let msg = format!("{err:?}");
    assert_eq!(err.problems.len(), 1, "{msg}");
    assert!(msg.contains("summation order changed"), "{msg}");
    assert!(
        msg.contains("left:  ((0+1)+(2+3))") && msg.contains("right: (((0+1)+2)+3)"),
        "{msg}"
    );
    assert!(
        msg.contains("registry.seq_sum.sum.f32.n4.actual.dot"),
        "{msg}"
    );
    assert!(msg.contains("FPREV_BLESS=1"), "{msg}");
    assert!(dir.join("registry.seq_sum.sum.f32.n4.actual.dot").exists());

    let blessed = check.clone().bless(true).run().unwrap();
    assert!(blessed
        .orders
        .iter()
        .all(|o| o.outcome == CheckOutcome::Blessed));
    assert_eq!(std::fs::read_to_string(&pin).unwrap(), "(((0+1)+2)+3)\n");
    assert!(check.run().is_ok());
    assert!(!dir.join("registry.seq_sum.sum.f32.n4.actual.dot").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nondeterministic_function_fails() {
    let dir = scratch("flaky");
    let err = Check::from_env()
        .dir(&dir)
        .filter("flaky_sum")
        .run()
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("nondeterministic") || msg.contains("inconsistent"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn all_pin_in_a_fresh_directory() {
    let dir = scratch("all");
    let s = Check::from_env().dir(&dir).filter("registry::").run();
    let err = s.unwrap_err();
    // Everything but the flaky function and the twin pins.
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(err.to_string().contains("registry::twins::total"), "{err}");
    assert_eq!(err.summary.orders.len(), 8);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn finding_no_registration_fails_unless_allowed() {
    let dir = scratch("empty");
    let check = Check::from_env()
        .dir(&dir)
        .filter("no_function_has_this_name");
    let err = check.run().unwrap_err();
    assert_eq!(err.problems.len(), 1);
    let msg = err.to_string();
    assert!(
        msg.contains("nothing was checked") && msg.contains("use the_crate as _;"),
        "{msg}"
    );
    assert!(msg.contains("check_registered_allow_empty"), "{msg}");
    let summary = check.allow_empty(true).run().unwrap();
    assert!(summary.orders.is_empty());
    assert!(!dir.exists(), "an empty check writes nothing");
}
