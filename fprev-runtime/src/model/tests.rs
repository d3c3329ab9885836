//! Models against trees whose truth is known: the shape constructors, reference code
//! revealed by FPRev, independent implementations, and emitted code compiled by rustc.

use super::fit::candidates;
use super::*;
use crate::black_box::FnTarget;
use rand::{Rng, SeedableRng};

fn seeded(seed: u64) -> rand_chacha::ChaCha8Rng {
    rand_chacha::ChaCha8Rng::seed_from_u64(seed)
}

/// Values of mixed magnitudes and signs, so that different orders give different bits.
fn values(rng: &mut impl Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| rng.random_range(-1.0f32..1.0) * 2f32.powi(rng.random_range(-20..20)))
        .collect()
}

const SIZES: [usize; 16] = [
    1, 2, 3, 7, 8, 9, 31, 33, 64, 100, 127, 129, 300, 1000, 1057, 4099,
];

#[test]
fn a_shapes_sum_is_its_trees_replay() {
    for seed in 0..4 {
        let mut rng = seeded(seed);
        for n in SIZES {
            let x = values(&mut rng, n);
            for s in candidates() {
                assert_eq!(
                    s.sum(&x).to_bits(),
                    s.tree(n).replay(&x).to_bits(),
                    "{s} n={n} seed={seed}"
                );
                assert_eq!(s.tree(n).leaf_count(), n, "{s} n={n}");
            }
        }
    }
}

#[test]
fn the_library_shapes_are_the_known_trees() {
    for n in SIZES.into_iter().chain([0, 5000, 32_769]) {
        assert_eq!(ModelShape::Sequential.tree(n), SumTree::sequential(n));
        assert_eq!(ModelShape::Reverse.tree(n), SumTree::reverse(n));
        let numpy = ModelShape::NumpyPairwise {
            lanes: 8,
            block: 128,
        };
        assert_eq!(numpy.tree(n), SumTree::numpy_pairwise(n), "n={n}");
        let xla = ModelShape::XlaWindows { window: 32 };
        assert_eq!(xla.tree(n), SumTree::xla_tree_reduction(n), "n={n}");
    }
}

/// A k-way unrolled loop written as users write it, independently of the model code.
fn unrolled4(x: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let mut chunks = x.chunks_exact(4);
    for c in &mut chunks {
        for k in 0..4 {
            acc[k] += c[k];
        }
    }
    let mut s = ((acc[0] + acc[1]) + acc[2]) + acc[3];
    for v in chunks.remainder() {
        s += v;
    }
    s
}

#[test]
fn the_shapes_are_what_the_revealer_finds() {
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    for n in [1, 2, 3, 5, 8, 13, 100, 257] {
        let unrolled = ModelShape::Unrolled {
            lanes: 4,
            combine: Combine::InOrder,
        };
        assert_eq!(
            crate::reveal(n, unrolled4).unwrap(),
            unrolled.tree(n),
            "n={n}"
        );
        let rayon_sum = |x: &[f64]| {
            use rayon::prelude::*;
            one.install(|| x.par_iter().sum::<f64>())
        };
        let rayon1 = ModelShape::RayonHalving { threads: 1 };
        assert_eq!(
            crate::reveal(n, rayon_sum).unwrap(),
            rayon1.tree(n),
            "n={n}"
        );
    }
}

/// rayon's `par_iter().sum()` on a pool of a fixed number of threads is not one tree:
/// the splitter splits a stolen job again (`splits = max(threads, splits / 2)`), and
/// which jobs are stolen depends on the threads' timing. Two witnesses: with the other
/// worker held, nothing can be stolen and the tree is `rayon-halving threads=2`,
/// deterministically; free, on 4 threads, the fit sees one input summed to other bits
/// and refuses with the sizes where it saw that.
#[test]
fn rayon_on_a_fixed_pool_of_several_threads_is_refused_as_nondeterministic() {
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let sum = |x: &[f64]| pool.install(|| x.par_iter().sum::<f64>());

    // the other worker held in a job of its own: no thief, the halving tree
    let (started, wait_started) = std::sync::mpsc::channel();
    let (release, held) = std::sync::mpsc::channel::<()>();
    pool.spawn(move || {
        started.send(()).unwrap();
        held.recv().ok();
    });
    wait_started.recv().unwrap();
    for n in [100, 1000, 5000] {
        assert_eq!(
            crate::reveal(n, sum).unwrap(),
            ModelShape::RayonHalving { threads: 2 }.tree(n),
            "n={n}"
        );
    }
    release.send(()).unwrap();

    // free (4 threads on any machine): the same input sums to other bits; refused,
    // with the sizes
    let four = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    let sum4 = |x: &[f64]| four.install(|| x.par_iter().sum::<f64>());
    let e = fit(|_n| FnTarget(sum4), 1..=100_000).unwrap_err();
    let ModelError::Nondeterministic { sizes } = &e else {
        panic!("{e}")
    };
    assert!(!sizes.is_empty() && sizes.len() <= 3, "{e}");
    assert!(
        e.to_string().contains("changes from call to call at n = "),
        "{e}"
    );
}

/// A target whose answers change from call to call on random inputs only (the probes'
/// inputs, of two or three distinct values, are summed alike every time): its tree
/// misses a random input, and the fit says the answers change rather than that the
/// target is no plain summation (what a racing rayon pool on a loaded machine looked
/// like).
#[test]
fn answers_that_change_on_random_inputs_only_are_nondeterministic() {
    let calls = std::cell::Cell::new(0u64);
    let sum = |x: &[f64]| -> f64 {
        calls.set(calls.get() + 1);
        let mut values: Vec<u64> = x.iter().map(|v| v.to_bits()).collect();
        values.sort_unstable();
        values.dedup();
        let s: f64 = x.iter().sum();
        if values.len() > 4 && calls.get() % 2 == 0 {
            f64::from_bits(s.to_bits() ^ 1)
        } else {
            s
        }
    };
    let e = fit(|_n| FnTarget(sum), 1..=2000).unwrap_err();
    assert!(matches!(e, ModelError::Nondeterministic { .. }), "{e}");
    // Summed in one order always, the same target fits.
    let one_order = |x: &[f64]| -> f64 { x.iter().sum() };
    assert!(fit(|_n| FnTarget(one_order), 1..=2000).is_ok());
}

#[test]
fn every_spec_reads_back() {
    for s in candidates() {
        for t in [SumType::F32, SumType::F64] {
            let m = OrderModel::new(s, t);
            let text = m.to_string();
            assert_eq!(OrderModel::parse(&text).unwrap(), m, "{text}");
        }
    }
}

#[test]
fn bad_specs_are_typed_errors() {
    for bad in [
        "",
        "fprev-model/2 sequential type=f32",
        "fprev-model/1",
        "fprev-model/1 spiral type=f32",
        "fprev-model/1 sequential",
        "fprev-model/1 sequential type=f16",
        "fprev-model/1 sequential type=f32 extra=1",
        "fprev-model/1 unrolled type=f32",
        "fprev-model/1 unrolled lanes=0 type=f32",
        "fprev-model/1 unrolled lanes=99999999999999999999 type=f32",
        "fprev-model/1 unrolled lanes=4 combine=random type=f32",
        "fprev-model/1 numpy-pairwise lanes=8 block=4 type=f32",
        "fprev-model/1 xla-windows window=1 type=f32",
        "fprev-model/1 sequential type=f32 type=f32",
        "fprev-model/1 sequential nokey type=f32",
    ] {
        assert!(
            matches!(OrderModel::parse(bad), Err(ModelError::Spec(_))),
            "{bad:?} was accepted"
        );
    }
}

#[test]
fn fit_recovers_every_family() {
    // shapes that coincide with an earlier candidate on these sizes fit as that one:
    // the check is on trees, at sizes the fit never saw
    for (i, s) in candidates().into_iter().enumerate() {
        let m = fit_with(
            &FitConfig::default().proofs(4).reach(3),
            |_n| FnTarget(move |x: &[f32]| s.sum(x)),
            1..=600,
        )
        .unwrap_or_else(|e| panic!("{s}: {e}"));
        let e = m.evidence().unwrap();
        // a model holds where it was checked: up to its largest proof (numpy's block of
        // 1024 is an unrolled loop of 8 lanes below 1025 values)
        let top = *e.proved.last().unwrap();
        let mut rng = seeded(i as u64);
        for n in (0..6).map(|_| rng.random_range(601..=top)) {
            assert!(
                m.tree(n) == s.tree(n),
                "{s} fitted as {m}, n={n} (seed {i})"
            );
        }
        assert_eq!(e.proved.len(), 4);
        assert!(e.proved.iter().all(|n| e.fitted.binary_search(n).is_err()));
    }
}

#[test]
fn an_order_that_changes_past_the_fit_is_refused() {
    // sequential up to 1500 values, pairwise above: the fit over 1..=1000 sees only the
    // sequential part, and its proofs (up to 10 000) find the change
    let r = fit(
        |_n| {
            FnTarget(|x: &[f64]| {
                if x.len() <= 1500 {
                    crate::orders::sequential(x)
                } else {
                    crate::orders::balanced(x)
                }
            })
        },
        1..=1000,
    );
    match r {
        Err(e @ (ModelError::Disproved { .. } | ModelError::NoFit { .. })) => {
            assert!(e.to_string().contains("sequential"), "{e}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn bad_sizes_are_typed_errors() {
    let f = |_n| FnTarget(|x: &[f32]| x.iter().sum::<f32>());
    assert!(matches!(fit(f, [0, 1]), Err(ModelError::Sizes(_))));
    assert!(matches!(fit(f, []), Err(ModelError::Sizes(_))));
}

#[test]
fn a_target_that_fails_is_reported_with_its_size() {
    let e = fit(
        |n| {
            FnTarget(
                move |x: &[f32]| {
                    if n == 7 {
                        f32::NAN
                    } else {
                        x.iter().sum()
                    }
                },
            )
        },
        1..=10,
    )
    .unwrap_err();
    assert!(matches!(e, ModelError::Reveal { n: 7, .. }), "{e}");
}

/// xorshift64*, written out in the emitted test program too: the same values on both sides.
fn xorshift(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
    let m = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    let e = ((r >> 3) % 40) as i32 - 20;
    m * 2f64.powi(e)
}

const PROGRAM_MAIN: &str = r#"
fn xorshift(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
    let m = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
    let e = ((r >> 3) % 40) as i32 - 20;
    m * 2f64.powi(e)
}

fn main() {
    for arg in std::env::args().skip(1) {
        let n: usize = arg.parse().unwrap();
        let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ n as u64;
        let x: Vec<_> = (0..n).map(|_| xorshift(&mut state) as _).collect();
        println!("{}", sum(&x).to_bits());
    }
}
"#;

fn emitted_sizes() -> Vec<usize> {
    let mut rng = seeded(49);
    let mut sizes: Vec<usize> = (0..=40)
        .chain([127, 128, 129, 1000, 4099, 65_537])
        .collect();
    sizes.extend((0..12).map(|_| rng.random_range(41..300_000)));
    sizes
}

/// The emitted Rust of every family, compiled by rustc alone, adds like the model.
#[test]
fn emitted_rust_compiles_and_sums_like_the_model() {
    let dir = std::env::temp_dir().join(format!("fprev-model-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sizes = emitted_sizes();
    let mut shapes = candidates();
    shapes.retain(|s| {
        matches!(
            s,
            ModelShape::Sequential
                | ModelShape::Reverse
                | ModelShape::Unrolled { lanes: 4, .. }
                | ModelShape::NumpyPairwise {
                    lanes: 8,
                    block: 128
                }
                | ModelShape::XlaWindows { window: 32 }
                | ModelShape::RayonHalving { threads: 4 }
                | ModelShape::TorchCascade { width: 8, .. }
        )
    });
    for (i, s) in shapes.into_iter().enumerate() {
        for t in [SumType::F32, SumType::F64] {
            let m = OrderModel::new(s, t);
            let src = dir.join(format!("m{i}_{}.rs", t.name()));
            let exe = dir.join(format!("m{i}_{}", t.name()));
            std::fs::write(&src, format!("{}{PROGRAM_MAIN}", m.emit(Lang::Rust))).unwrap();
            let out = std::process::Command::new(&rustc)
                .args(["-O", "--edition", "2021", "-o"])
                .arg(&exe)
                .arg(&src)
                .output()
                .expect("rustc runs");
            assert!(
                out.status.success(),
                "{m}: rustc failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let out = std::process::Command::new(&exe)
                .args(sizes.iter().map(|n| n.to_string()))
                .output()
                .unwrap();
            let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(String::from)
                .collect();
            assert_eq!(lines.len(), sizes.len(), "{m}");
            for (n, line) in sizes.iter().zip(lines) {
                let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ *n as u64;
                let x: Vec<f64> = (0..*n).map(|_| xorshift(&mut state)).collect();
                let want = match t {
                    SumType::F32 => {
                        let x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                        u64::from(m.sum(&x).to_bits())
                    }
                    SumType::F64 => m.sum(&x).to_bits(),
                };
                // an empty slice included: +0.0 on both sides, bit for bit
                assert_eq!(line, want.to_string(), "{m} n={n}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(feature = "serde")]
#[test]
fn the_serde_form_is_the_spec() {
    for s in candidates() {
        let m = OrderModel::new(s, SumType::F32);
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(json, format!("\"{m}\""));
        assert_eq!(serde_json::from_str::<OrderModel>(&json).unwrap(), m);
    }
    assert!(serde_json::from_str::<OrderModel>("\"fprev-model/1 spiral type=f32\"").is_err());
}
