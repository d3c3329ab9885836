//! Sweeps over lengths of targets whose order is known, read back as models.

use super::*;
use crate::black_box::FnTarget;
use crate::model::fit::candidates;
use crate::model::{Combine, SumType};
use rand::{Rng, SeedableRng};

fn sweep_of(shape: ModelShape, lengths: impl IntoIterator<Item = usize>) -> Sweep {
    crate::sweep_lengths(lengths, |_| FnTarget(move |x: &[f32]| shape.sum(x))).unwrap()
}

/// Every family, a random model of it swept over random lengths: one model comes back,
/// whose tree is the target's at every swept length, fitted at the breakpoints.
#[test]
fn a_sweep_of_a_model_reads_as_that_model() {
    let shapes = candidates();
    for seed in 0..12u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let shape = shapes[rng.random_range(0..shapes.len())];
        let top = rng.random_range(40..400);
        let lengths: Vec<usize> = (1..=top).filter(|_| rng.random_bool(0.6)).collect();
        let sweep = sweep_of(shape, lengths.iter().copied());
        let got = fit_sweep(&sweep).unwrap_or_else(|e| panic!("{shape} seed={seed}: {e}"));
        let SweepModel::One(m) = got else {
            panic!("{shape} seed={seed}: {got:?}")
        };
        for &n in &lengths {
            assert_eq!(m.tree(n), shape.tree(n), "{shape} as {m} n={n} seed={seed}");
        }
        let e = m.evidence().unwrap();
        let mut all = [e.fitted.clone(), e.proved.clone()].concat();
        all.sort_unstable();
        assert_eq!(all, lengths, "{shape} seed={seed}");
        for b in sweep.breakpoints() {
            assert!(e.fitted.contains(&b), "{shape} breakpoint {b} seed={seed}");
        }
        assert_eq!(m.sum_type(), SumType::F32);
    }
}

/// NumPy's pairwise sum over 1..=1100: one model, not one range per breakpoint.
#[test]
fn numpys_sum_over_lengths_is_one_model() {
    let sweep =
        crate::sweep_lengths(1..=1100, |_| FnTarget(crate::orders::numpy_pairwise::<f64>)).unwrap();
    assert!(sweep.ranges().len() > 8, "{}", sweep.ranges().len());
    let Ok(SweepModel::One(m)) = sweep.model() else {
        panic!("{:?}", sweep.model())
    };
    assert_eq!(
        m.to_string(),
        "fprev-model/1 numpy-pairwise lanes=8 block=128 type=f64"
    );
    let e = m.evidence().unwrap();
    assert_eq!(e.fitted.len() + e.proved.len(), 1100);
    assert!(e.proved.len() > e.fitted.len(), "{e:?}");
}

/// Two algorithms, switched at a length no fit picks by itself: two pieces, each its
/// model, the switch where the kernel switches.
#[test]
fn a_kernel_that_switches_algorithm_reads_as_two_pieces() {
    let small = ModelShape::Unrolled {
        lanes: 4,
        combine: Combine::InOrder,
    };
    let large = ModelShape::NumpyPairwise {
        lanes: 8,
        block: 128,
    };
    let kernel = move |x: &[f32]| {
        if x.len() < 70 {
            small.sum(x)
        } else {
            large.sum(x)
        }
    };
    let sweep = crate::sweep_lengths(1..=300, |_| FnTarget(kernel)).unwrap();
    let Ok(SweepModel::Pieces(p)) = sweep.model() else {
        panic!("{:?}", sweep.model())
    };
    assert_eq!(p.len(), 2, "{p:?}");
    assert_eq!((p[0].first, p[0].last, p[0].sizes), (1, 69, 69));
    assert_eq!((p[1].first, p[1].last, p[1].sizes), (70, 300, 231));
    for piece in &p {
        for n in piece.first..=piece.last {
            assert_eq!(piece.model.tree(n), sweep.tree(n).unwrap().clone(), "n={n}");
        }
    }
    assert_eq!(p[1].model.shape(), large);
}

/// An order no family has (the first half in order, the second reversed) at every
/// length: no model and no handful of pieces, a NoFit naming the lengths.
#[test]
fn an_order_no_family_has_is_no_fit_with_the_lengths() {
    let odd = |x: &[f64]| {
        let (a, b) = x.split_at(x.len() / 2);
        crate::orders::sequential(a) + crate::orders::reverse(b)
    };
    let sweep = crate::sweep_lengths(1..=80, |_| FnTarget(odd)).unwrap();
    match sweep.model() {
        Err(ModelError::NoFit { fitted, closest }) => {
            assert!(fitted.contains(&80) && !closest.is_empty());
            assert!(closest.iter().all(|(_, bad)| !bad.is_empty()));
        }
        other => panic!("{other:?}"),
    }
}

/// More switches than a handful: left as ranges, with the reason.
#[test]
fn more_than_a_handful_of_pieces_is_no_fit() {
    // in order, then reversed, switching every 10 lengths: 20 runs
    let kernel = |x: &[f64]| {
        if (x.len() / 10) % 2 == 0 {
            crate::orders::sequential(x)
        } else {
            crate::orders::reverse(x)
        }
    };
    let sweep = crate::sweep_lengths(1..=200, |_| FnTarget(kernel)).unwrap();
    assert!(
        matches!(sweep.model(), Err(ModelError::NoFit { .. })),
        "{:?}",
        sweep.model()
    );
}

#[test]
fn a_sweep_over_another_parameter_is_a_sizes_error() {
    let sweep = crate::sweep(1..=3, 16, |_| FnTarget(crate::orders::sequential::<f32>)).unwrap();
    assert!(matches!(sweep.model(), Err(ModelError::Sizes(_))));
}

/// A fit given a sweep fits at its breakpoints, and takes its trees without revealing.
#[test]
fn a_fit_with_a_sweep_fits_at_its_breakpoints() {
    let calls = std::cell::Cell::new(0usize);
    let shape = ModelShape::NumpyPairwise {
        lanes: 8,
        block: 128,
    };
    let sweep = sweep_of(shape, 100..=400);
    let config = crate::model::FitConfig::default().with_sweep(&sweep);
    let m = crate::model::fit_with(
        &config,
        |n| {
            if (100..=400).contains(&n) {
                calls.set(calls.get() + 1);
            }
            FnTarget(move |x: &[f32]| shape.sum(x))
        },
        1..=400,
    )
    .unwrap();
    assert_eq!(m.shape(), shape);
    let fitted = &m.evidence().unwrap().fitted;
    for b in sweep.breakpoints() {
        assert!(
            fitted.contains(&b) && fitted.contains(&(b - 1)),
            "{b}: {fitted:?}"
        );
    }
    assert_eq!(calls.get(), 0, "a swept length was revealed again");
}
