//! Every operation entry point (`ops::gemm`, `gemv`, `dot`, `reduction` through
//! `ElementReveal`) checks its answers as `Reveal` does: an operation that is not a plain
//! summation (here one that truncates its results to whole numbers) is refused with the
//! error `Reveal` gives for one of its elements, never returned as trees.

use std::mem::discriminant;

use fprev::ops::{self, ElementReveal};
use fprev::{Reveal, RevealError};

const K: usize = 8;

/// One element: the products of `a` and `b` added in order, then truncated.
fn truncated(a: &[f32], b: impl Iterator<Item = f32>) -> f32 {
    a.iter().zip(b).fold(0.0f32, |s, (x, y)| s + x * y).trunc()
}

/// What `Reveal` says of one element (its second operand all ones).
fn reveal_error() -> RevealError {
    Reveal::new(K)
        .run(|x: &[f32]| truncated(x, std::iter::repeat(1.0)))
        .expect_err("a truncating sum is not a plain summation")
}

fn assert_same(what: &str, got: Result<ops::ElementOrders, RevealError>) {
    let want = reveal_error();
    match got {
        Err(e) => assert_eq!(
            discriminant(&e),
            discriminant(&want),
            "{what}: {e} / {want}"
        ),
        Ok(o) => panic!("{what}: accepted as {o}; Reveal says {want}"),
    }
}

#[test]
fn a_truncating_operation_is_refused_by_every_entry_point() {
    let (m, n) = (4, 4);
    let gemm = ops::gemm(m, K, n, |a: &[f32], b: &[f32], c: &mut [f32]| {
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = truncated(&a[i * K..(i + 1) * K], (0..K).map(|l| b[l * n + j]));
            }
        }
    });
    assert_same("gemm", ElementReveal::new().run(gemm));
    let gemv = ops::gemv(m, K, |a: &[f32], x: &[f32], y: &mut [f32]| {
        for i in 0..m {
            y[i] = truncated(&a[i * K..(i + 1) * K], x.iter().copied());
        }
    });
    assert_same("gemv", ElementReveal::new().run(gemv));
    let dot = ops::dot(K, |x: &[f32], y: &[f32]| truncated(x, y.iter().copied()));
    assert_same("dot", ElementReveal::new().run(dot));
    let sums = ops::reduction(m, K, 1, |x: &[f32], out: &mut [f32]| {
        for (i, o) in out.iter_mut().enumerate() {
            *o = truncated(&x[i * K..(i + 1) * K], std::iter::repeat(1.0));
        }
    });
    assert_same("reduction", ElementReveal::new().run(sums));
}

#[test]
fn a_plain_operation_is_still_revealed() {
    let gemm = ops::gemm(4, K, 4, |a: &[f32], b: &[f32], c: &mut [f32]| {
        for i in 0..4 {
            for j in 0..4 {
                c[i * 4 + j] = (0..K).fold(0.0f32, |s, l| s + a[i * K + l] * b[l * 4 + j]);
            }
        }
    });
    let o = ElementReveal::new().run(gemm).expect("a plain gemm");
    assert!(o.is_uniform());
    assert_eq!(o.groups[0].tree, fprev::SumTree::sequential(K));
}

/// A batched target answers a guessed tree's proof one probe set per lane: a right hint
/// is proved in a few calls, a wrong one is refuted and the search finds the truth.
#[test]
fn batched_proofs_pack_probe_sets_into_lanes() {
    use fprev::ops::Batched;
    use fprev::SumTree;
    let (rows, k) = (16, 256);
    let gemv = || {
        ops::gemv(rows, k, |a: &[f32], x: &[f32], y: &mut [f32]| {
            for (row, yi) in a.chunks(k).zip(y.iter_mut()) {
                let products: Vec<f32> = row.iter().zip(x).map(|(p, q)| p * q).collect();
                *yi = fprev::orders::balanced(&products);
            }
        })
    };
    let truth = SumTree::pairwise(k);
    let mut right = Batched::new(gemv(), 0);
    let r = Reveal::new(k)
        .hint(truth.clone())
        .run_target(&mut right)
        .unwrap();
    assert_eq!(r.tree, truth);
    assert_eq!(r.recognized.as_deref(), Some("hint"));
    // the proof's inputs, 16 to a call, plus the checks: far fewer calls than k
    assert!(right.calls() * 4 < k as u64, "{} calls", right.calls());
    let mut wrong = Batched::new(gemv(), 0);
    let r = Reveal::new(k)
        .hint(SumTree::sequential(k))
        .run_target(&mut wrong)
        .unwrap();
    assert_eq!(r.tree, truth);
    assert_ne!(r.recognized.as_deref(), Some("hint"));
}
