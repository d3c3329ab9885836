//! One seed is one consistent other platform: a reduction site combines its terms in the
//! same shape at every call (its tree a function of seed, site and number of terms), so
//! computing a value twice and comparing the bits passes under every mode and seed, as it
//! does on any fixed build, while golden values still fail. Declared order-free loops and
//! `FPREV_VARY=call` still draw at every call.

#![cfg(not(feature = "off"))] // needs scrambling compiled in; see scramble_off.rs

use fprev::scramble::{with_config, ScrambleConfig, Shuffle, Vary};

fn data(n: usize, salt: usize) -> Vec<f64> {
    // Magnitudes spread over many binades so that every sum depends on its order.
    (0..n)
        .map(|i| {
            let x = ((i * 7919 + salt * 104_729) % 1013) as f64 - 506.0;
            x * 10f64.powi((i % 11) as i32 - 5)
        })
        .collect()
}

/// y = A x for a row-major `rows` x `x.len()` matrix: one reduction site, reached once
/// per row.
#[fprev::scramble]
fn matvec(a: &[f64], x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; a.len() / x.len()];
    for (r, yr) in y.iter_mut().enumerate() {
        let row = &a[r * x.len()..(r + 1) * x.len()];
        let mut s = 0.0;
        for (aij, xj) in row.iter().zip(x) {
            s += aij * xj;
        }
        *yr = s;
    }
    y
}

/// A BiCG-style pair of products: the transpose's product is not needed here, the
/// solver simply calls the plain one twice (with `p == pp` in the first iteration).
fn both_products(a: &[f64], p: &[f64], pp: &[f64]) -> (Vec<f64>, Vec<f64>) {
    (matvec(a, p), matvec(a, pp))
}

/// An iterator reduction and a nested block sum: two more kinds of site; `plain` is
/// the same body unannotated, the golden value.
macro_rules! norms {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        fn $name(v: &[f64]) -> (f64, f64) {
            let squares: f64 = v.iter().map(|x| x * x).sum();
            let mut blocks = 0.0;
            for c in v.chunks(37) {
                let mut part = 0.0;
                for x in c {
                    part += x;
                }
                blocks += part;
            }
            (squares, blocks)
        }
    };
}
norms!(
    #[fprev::scramble]
    norms
);
norms!(plain_norms);

/// A loop the user declares order-free: a real scheduler may run it in another order at
/// every call, so it still draws per call.
#[fprev::scramble(loops)]
fn declared(v: &[f64]) -> Vec<usize> {
    let mut seen = Vec::new();
    for (i, _) in v.iter().enumerate() {
        seen.push(i);
    }
    seen
}

fn plain_matvec(a: &[f64], x: &[f64]) -> Vec<f64> {
    a.chunks(x.len())
        .map(|row| {
            let mut s = 0.0;
            for (aij, xj) in row.iter().zip(x) {
                s += aij * xj;
            }
            s
        })
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Every mode a user can set with `FPREV_SCRAMBLE`: shapes, fisher-yates, sattolo.
fn modes() -> [(&'static str, ScrambleConfig); 3] {
    let on = |s| ScrambleConfig::off().shuffle(Some(s));
    [
        ("shapes", on(Shuffle::FisherYates).shapes(true)),
        ("fisher-yates", on(Shuffle::FisherYates)),
        ("sattolo", on(Shuffle::Sattolo)),
    ]
}

const SEEDS: u64 = 24;

#[test]
fn computing_twice_gives_the_same_bits_under_every_mode_and_seed() {
    let (cols, rows) = (300, 8);
    let a = data(cols * rows, 1);
    let p = data(cols, 2);
    let pp = p.clone();
    let v = data(5000, 3);
    for (mode, cfg) in modes() {
        for seed in 0..SEEDS {
            let cfg = cfg.clone().seed(seed);
            let ctx = format!("FPREV_SCRAMBLE={mode} FPREV_SEED={}", cfg.token());
            with_config(&cfg, || {
                let (ap, app) = both_products(&a, &p, &pp);
                assert_eq!(bits(&ap), bits(&app), "{ctx}: A·p and A·pp with p == pp");
                let first = norms(&v);
                let second = norms(&v);
                assert_eq!(
                    (first.0.to_bits(), first.1.to_bits()),
                    (second.0.to_bits(), second.1.to_bits()),
                    "{ctx}: the same norms twice"
                );
                // Another test's thread and a rayon worker are the same platform too.
                let elsewhere = std::thread::Builder::new()
                    .name("another test".into())
                    .spawn({
                        let v = v.clone();
                        move || norms(&v)
                    })
                    .expect("spawn")
                    .join()
                    .expect("join");
                assert_eq!(first.0.to_bits(), elsewhere.0.to_bits(), "{ctx}: thread");
                let in_task = rayon::join(|| norms(&v), || ()).0;
                assert_eq!(first.1.to_bits(), in_task.1.to_bits(), "{ctx}: rayon task");
            });
        }
    }
    // The comparisons above compared scrambled runs, not plain ones.
    for name in ["matvec", "norms"] {
        let reached: u64 = fprev::scramble::sites()
            .iter()
            .filter(|s| s.kind.is_some() && s.label.contains(name))
            .map(|s| s.reached)
            .sum();
        assert!(reached > 0, "{name}'s sites never ran scrambled");
    }
}

#[test]
fn golden_values_still_fail_under_every_mode() {
    let (cols, rows) = (300, 8);
    let a = data(cols * rows, 1);
    let p = data(cols, 2);
    let v = data(5000, 3);
    let golden_product = bits(&plain_matvec(&a, &p));
    let golden_norms = plain_norms(&v);
    for (mode, cfg) in modes() {
        let (mut product, mut squares, mut blocks) = (0, 0, 0);
        for seed in 0..SEEDS {
            with_config(&cfg.clone().seed(seed), || {
                product += usize::from(bits(&matvec(&a, &p)) != golden_product);
                let (s, b) = norms(&v);
                squares += usize::from(s.to_bits() != golden_norms.0.to_bits());
                blocks += usize::from(b.to_bits() != golden_norms.1.to_bits());
            });
        }
        assert!(
            product > 0 && squares > 0 && blocks > 0,
            "{mode}: some seed of {SEEDS} must move each result off its plain value \
             (moved: product {product}, squares {squares}, blocks {blocks})"
        );
    }
}

#[test]
fn the_same_site_over_another_length_may_take_another_tree() {
    // The shape is fixed per site; the tree it builds follows the number of terms, as a
    // library's blocking does. Prefixes of one input are reductions of other lengths.
    let v = data(4096, 4);
    let cfg = modes()[0].1.clone().seed(5);
    with_config(&cfg, || {
        for n in [1, 2, 3, 17, 1000, 4096] {
            let once = norms(&v[..n]);
            let again = norms(&v[..n]);
            assert_eq!(once.0.to_bits(), again.0.to_bits(), "n = {n}");
        }
    });
}

#[test]
fn vary_call_draws_anew_at_every_call() {
    let v = data(5000, 3);
    let mut differed = 0;
    for (_, cfg) in modes() {
        for seed in 0..SEEDS {
            with_config(&cfg.clone().seed(seed).vary(Vary::Call), || {
                let (a, b) = (norms(&v), norms(&v));
                differed += usize::from(a.0.to_bits() != b.0.to_bits());
            });
        }
    }
    assert!(differed > 0, "FPREV_VARY=call never drew two shapes");
}

#[test]
fn declared_order_free_loops_still_draw_at_every_call() {
    let v = data(64, 5);
    let cfg = modes()[1].1.clone().seed(11);
    let orders: Vec<Vec<usize>> = with_config(&cfg, || (0..4).map(|_| declared(&v)).collect());
    assert!(
        orders.iter().any(|o| o != &orders[0]),
        "a declared loop ran in one order four times: {:?}",
        &orders[0][..8]
    );
    for o in &orders {
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..64).collect::<Vec<_>>(), "every item once");
    }
}
