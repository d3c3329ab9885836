//! Property tests of sweeps: random trees whose truth is known switch at a random size;
//! the sweep must find exactly that breakpoint and exactly those trees. Every failure
//! names its seed; `FPREV_PROPTEST_CASES` sets how many cases run.

mod common;

use common::{cases, random_tree, rng, Shape};
use fprev::target::FnTarget;
use fprev::{Reveal, SumTree};
use rand::Rng;

fn check(seed: u64, shape: Shape) {
    let mut r = rng(seed);
    let n = r.random_range(2..=200);
    let before = random_tree(n, shape, &mut r);
    let after = random_tree(n, shape, &mut r);
    let switch = r.random_range(1..=9usize);
    let sizes: Vec<usize> = (1..=8).collect();
    let tree_at = |size: usize| if size < switch { &before } else { &after };
    let sweep = Reveal::new(n)
        .seed(seed)
        .accept_flat(true)
        .sweep(sizes.iter().copied(), |size| {
            let t: SumTree = tree_at(size).clone();
            FnTarget(move |x: &[f64]| t.replay(x))
        })
        .unwrap_or_else(|e| panic!("seed {seed}: n = {n}, {shape:?}: {e}"));
    for &size in &sizes {
        assert_eq!(
            sweep.tree(size),
            Some(tree_at(size)),
            "seed {seed}: n = {n}, {shape:?}, switch at {switch}: wrong tree at size {size}"
        );
    }
    let want: Vec<usize> = if before != after && (2..=8).contains(&switch) {
        vec![switch]
    } else {
        Vec::new()
    };
    assert_eq!(
        sweep.breakpoints(),
        want,
        "seed {seed}: n = {n}, {shape:?}, switch at {switch}"
    );
    let ranges = sweep.ranges();
    assert_eq!(ranges.len(), want.len() + 1, "seed {seed}");
    assert_eq!(
        ranges.iter().map(|r| r.sizes).sum::<usize>(),
        8,
        "seed {seed}"
    );
}

#[test]
fn binary_trees_switch_where_they_are_told() {
    for case in 0..cases(24) {
        check(0x5EE9_0000 + u64::from(case), Shape::Binary);
    }
}

#[test]
fn fused_trees_are_searched_at_every_size_and_still_exact() {
    // a tree with fused nodes has no probe-set proof: every size is searched
    for case in 0..cases(8) {
        check(0x5EE9_1000 + u64::from(case), Shape::Mixed);
    }
}

#[test]
fn the_same_tree_at_every_size_has_no_breakpoint() {
    for case in 0..cases(8) {
        let seed = 0x5EE9_2000 + u64::from(case);
        let mut r = rng(seed);
        let n = r.random_range(16..=300);
        let truth = random_tree(n, Shape::Binary, &mut r);
        let sweep = fprev::sweep([1, 2, 4, 8, 16], n, |_| {
            FnTarget(|x: &[f32]| truth.replay(x))
        })
        .unwrap_or_else(|e| panic!("seed {seed}: n = {n}: {e}"));
        assert!(sweep.breakpoints().is_empty(), "seed {seed}");
        assert!(
            sweep.points()[1..].iter().all(|p| p.from_previous),
            "seed {seed}: a size was searched"
        );
        assert_eq!(sweep.ranges()[0].tree, truth, "seed {seed}");
    }
}
