//! Sweeps over synthetic kernels whose order changes at sizes the tests choose.

use super::*;
use crate::black_box::FnTarget;
use std::cell::Cell;

/// `lanes` accumulators, lane `l` summing `x[l], x[l + lanes], ...` in order, then the
/// lanes combined in order: a SIMD loop of `lanes` lanes.
fn lanes_sum(x: &[f32], lanes: usize) -> f32 {
    let mut acc = vec![None::<f32>; lanes];
    for (i, &v) in x.iter().enumerate() {
        let a = &mut acc[i % lanes];
        *a = Some(a.map_or(v, |s| s + v));
    }
    let mut total = None::<f32>;
    for s in acc.into_iter().flatten() {
        total = Some(total.map_or(s, |t| t + s));
    }
    total.unwrap_or(0.0)
}

/// The tree of [`lanes_sum`], written out independently of the code.
fn lanes_tree(n: usize, lanes: usize) -> SumTree {
    let lane = |l: usize| {
        let mut text = l.to_string();
        for i in (l + lanes..n).step_by(lanes) {
            text = format!("({text}+{i})");
        }
        text
    };
    let mut text = lane(0);
    for l in 1..lanes.min(n) {
        text = format!("({text}+{})", lane(l));
    }
    text.parse().expect("a valid tree")
}

/// Two in-order blocks of `n/2`, added.
fn blocks2(x: &[f32]) -> f32 {
    let (a, b) = x.split_at(x.len() / 2);
    crate::orders::sequential(a) + crate::orders::sequential(b)
}

#[test]
fn sequential_then_blocked_breaks_at_four_rows() {
    let n = 256;
    let sweep = sweep(1..=8, n, |rows| {
        FnTarget(move |x: &[f32]| {
            if rows < 4 {
                crate::orders::sequential(x)
            } else {
                blocks2(x)
            }
        })
    })
    .unwrap();
    assert_eq!(sweep.breakpoints(), vec![4]);
    // leaves 0..127 in order, 128..255 in order, the two blocks added
    let block = |from: usize| {
        let mut text = from.to_string();
        for i in from + 1..from + 128 {
            text = format!("({text}+{i})");
        }
        text
    };
    let blocked: SumTree = format!("({}+{})", block(0), block(128)).parse().unwrap();
    for rows in 1..=3 {
        assert_eq!(
            sweep.tree(rows),
            Some(&SumTree::sequential(n)),
            "rows {rows}"
        );
    }
    for rows in 4..=8 {
        assert_eq!(sweep.tree(rows), Some(&blocked), "rows {rows}");
    }
    let ranges = sweep.ranges();
    assert_eq!(ranges.len(), 2);
    assert_eq!(
        (ranges[0].first, ranges[0].last, ranges[0].sizes),
        (1, 3, 3)
    );
    assert_eq!(
        (ranges[1].first, ranges[1].last, ranges[1].sizes),
        (4, 8, 5)
    );
    assert_eq!(
        sweep.describe("M"),
        "M = 1..3: 256 in order; M = 4..8: 2 blocks of 128, combined in order; \
         each block 128 in order"
    );
    // searched at the first size and at the breakpoint, proved everywhere else
    let proved: Vec<usize> = sweep
        .points()
        .iter()
        .filter(|p| p.from_previous)
        .map(|p| p.size)
        .collect();
    assert_eq!(proved, vec![2, 3, 5, 6, 7, 8]);
}

#[test]
fn eight_lanes_then_sixteen() {
    let n = 300;
    let sizes = [64, 256, 1024, 4096, 8192, 16384];
    let sweep = sweep(sizes, n, |chunk| {
        let lanes = if chunk < 4096 { 8 } else { 16 };
        FnTarget(move |x: &[f32]| lanes_sum(x, lanes))
    })
    .unwrap();
    assert_eq!(sweep.breakpoints(), vec![4096]);
    for &chunk in &sizes {
        let lanes = if chunk < 4096 { 8 } else { 16 };
        assert_eq!(
            sweep.tree(chunk),
            Some(&lanes_tree(n, lanes)),
            "chunk {chunk}"
        );
    }
    assert_eq!(
        sweep.describe("chunk"),
        format!(
            "chunk = 64..1024: {}; chunk = 4096..16384: {}",
            lanes_tree(n, 8).describe(),
            lanes_tree(n, 16).describe()
        )
    );
    assert_eq!(sweep.tree(100), None);
}

#[test]
fn over_lengths_eight_lanes_then_sixteen_from_4096_values() {
    let lengths = [1000, 2048, 3000, 4096, 6000, 8192];
    let lanes = |n: usize| if n < 4096 { 8 } else { 16 };
    let sweep = sweep_lengths(lengths, |n| {
        FnTarget(move |x: &[f32]| lanes_sum(x, lanes(n)))
    })
    .unwrap();
    assert_eq!(sweep.breakpoints(), vec![4096]);
    assert_eq!(sweep.n(), 8192);
    for &n in &lengths {
        assert_eq!(sweep.tree(n), Some(&lanes_tree(n, lanes(n))), "n = {n}");
    }
    let ranges = sweep.ranges();
    assert_eq!(
        ranges
            .iter()
            .map(|r| (r.first, r.last, r.sizes))
            .collect::<Vec<_>>(),
        vec![(1000, 3000, 3), (4096, 8192, 3)]
    );
    assert_eq!(ranges[0].tree, lanes_tree(3000, 8));
    assert_eq!(ranges[1].tree, lanes_tree(8192, 16));
    // from 4096 values on, each length is guessed from its structure and proved
    for p in &sweep.points()[3..] {
        assert_eq!(
            p.recognized.as_deref(),
            Some("structure-guided"),
            "n = {}",
            p.size
        );
    }
}

#[test]
fn over_lengths_an_order_that_only_grows_has_no_breakpoint() {
    let sweep = sweep_lengths([16, 17, 100, 1000], |_| {
        FnTarget(|x: &[f64]| x.iter().sum::<f64>())
    })
    .unwrap();
    assert!(sweep.breakpoints().is_empty());
    assert_eq!(sweep.describe("k"), "k = 16..1000: 1000 in order");
    // a pairwise split moves with the length: only lengths that halve alike share one
    let pairwise = sweep_lengths([512, 768, 1024], |_| {
        FnTarget(crate::orders::balanced::<f64>)
    })
    .unwrap();
    assert_eq!(pairwise.breakpoints(), vec![768, 1024]);
    assert!(matches!(
        sweep_lengths([4, 2], |_| FnTarget(|x: &[f64]| x.iter().sum::<f64>())),
        Err(SweepError::NotIncreasing {
            previous: 4,
            size: 2
        })
    ));
}

/// A summation order as code.
type OrderFn = fn(&[f32]) -> f32;

/// Calls of `order` over a sweep of `sizes` sizes of an invariant target of `n` values:
/// (calls at the first size, which searches or proves a library order; calls per later
/// size, which proves the previous size's tree).
fn calls_per_size(n: usize, sizes: usize, order: OrderFn) -> (u64, u64) {
    let calls = Cell::new(0u64);
    let sweep = sweep(1..=sizes, n, |_| {
        FnTarget(|x: &[f32]| {
            calls.set(calls.get() + 1);
            order(x)
        })
    })
    .unwrap();
    assert!(sweep.breakpoints().is_empty());
    assert!(sweep.points()[1..].iter().all(|p| p.from_previous));
    let first = sweep.points()[0].probes + sweep.points()[0].replays;
    (first, (calls.get() - first) / (sizes as u64 - 1))
}

#[test]
fn an_invariant_target_is_proved_not_searched() {
    // The proof asks up to 16 pairwise disjoint nodes of one height per call, so what a
    // proved size costs follows how many nodes of the tree sit side by side: about n/7 for
    // NumPy's blocks of 8 lanes at n = 4096, 6 calls per 8 nodes for 8 lanes of chains, a
    // call per node for two chains (what searching costs is 2n to 3n). The bounds sit a
    // little above what the proof takes, so a proof that grows costlier fails here.
    let lanes8: OrderFn = |x| lanes_sum(x, 8);
    let cases: [(&str, OrderFn, usize, u64); 6] = [
        (
            "numpy pairwise",
            crate::orders::numpy_pairwise::<f32>,
            1024,
            370,
        ),
        (
            "numpy pairwise",
            crate::orders::numpy_pairwise::<f32>,
            4096,
            680,
        ),
        ("8 lanes", lanes8, 1024, 920),
        ("8 lanes", lanes8, 4096, 3450),
        ("two blocks", blocks2, 1024, 1060),
        ("two blocks", blocks2, 4096, 4130),
    ];
    for (name, order, n, most) in cases {
        let (first, per_size) = calls_per_size(n, 4, order);
        println!("{name}, n = {n}: first size {first} calls, then {per_size} per size");
        assert!(
            per_size <= most,
            "{name}, n = {n}: {per_size} calls per proved size (first size {first})"
        );
    }
    // a searched size costs more than two calls per value, a proved one well under half
    let (first, per_size) = calls_per_size(1024, 3, lanes8);
    assert!(
        first > 2 * 1024 && per_size * 3 < first,
        "{first} vs {per_size}"
    );
}

#[test]
fn calls_made_are_the_calls_reported() {
    let calls = Cell::new(0u64);
    let sweep = sweep([3, 5, 9], 100, |_| {
        FnTarget(|x: &[f32]| {
            calls.set(calls.get() + 1);
            crate::orders::numpy_pairwise(x)
        })
    })
    .unwrap();
    assert_eq!(sweep.probes() + sweep.replays(), calls.get());
}

#[test]
fn bad_input_is_a_typed_error() {
    let seq = |_| FnTarget(crate::orders::sequential::<f32>);
    assert_eq!(sweep(Vec::new(), 8, seq).unwrap_err(), SweepError::NoSizes);
    assert_eq!(
        sweep([1, 3, 2], 8, seq).unwrap_err(),
        SweepError::NotIncreasing {
            previous: 3,
            size: 2
        }
    );
    assert_eq!(
        sweep([1, 1], 8, seq).unwrap_err(),
        SweepError::NotIncreasing {
            previous: 1,
            size: 1
        }
    );
    let e = sweep([1], 0, seq).unwrap_err();
    assert!(
        matches!(e, SweepError::Size(RevealError::InvalidSize { .. })),
        "{e}"
    );
    let e = sweep([1], usize::MAX / 2, seq).unwrap_err();
    assert!(
        matches!(e, SweepError::Size(RevealError::InvalidSize { .. })),
        "{e}"
    );
}

#[test]
fn a_failure_names_its_size() {
    // max instead of a sum from size 5 on
    let e = sweep(1..=8, 32, |size| {
        FnTarget(move |x: &[f32]| {
            if size < 5 {
                x.iter().sum::<f32>()
            } else {
                x.iter().copied().fold(f32::MIN, f32::max)
            }
        })
    })
    .unwrap_err();
    assert_eq!(e.size(), Some(5));
    assert!(e.to_string().starts_with("at size 5: "), "{e}");
    // a target that panics at one size
    let e = sweep(1..=4, 32, |size| {
        FnTarget(move |x: &[f32]| {
            assert!(size != 2, "kernel has no 2-row variant");
            x.iter().sum::<f32>()
        })
    })
    .unwrap_err();
    assert_eq!(e.size(), Some(2));
    assert!(e.to_string().contains("kernel has no 2-row variant"), "{e}");
}
