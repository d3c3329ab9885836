//! Real library targets against the orders their sources imply, and the per-element
//! machinery of `fprev::ops` on operations whose elements differ on purpose.

#[allow(dead_code)]
#[path = "../src/builtins.rs"]
mod builtins;

use builtins::Size;
use fprev::ops::{self, Element, ElementCoverage, ElementReveal};
use fprev::SumTree;

fn tree(text: &str) -> SumTree {
    text.parse().expect("expected tree")
}

/// `((lo+lo+1)+...)+hi-1`: one accumulator over `lo..hi`.
fn chain(items: impl IntoIterator<Item = usize>) -> String {
    let mut it = items.into_iter();
    let mut s = it.next().expect("non-empty").to_string();
    for i in it {
        s = format!("({s}+{i})");
    }
    s
}

fn add(a: String, b: String) -> String {
    format!("({a}+{b})")
}

/// ndarray `numeric_util::unrolled_fold` / `unrolled_dot` (ndarray-0.17.2
/// src/numeric_util.rs): eight accumulators p0..p7 over `x[8i + j]` while 8 remain, then
/// `acc = 0 + (p0+p4)`, `+ (p1+p5)`, `+ (p2+p6)`, `+ (p3+p7)`, then the (< 8) leftovers
/// in order.
fn ndarray_unrolled(n: usize) -> SumTree {
    let full = n / 8 * 8;
    if full == 0 {
        // every accumulator stays an exact zero: the leftovers are added in order
        return tree(&chain(0..n));
    }
    let p = |j: usize| chain((j..full).step_by(8));
    let mut acc = add(p(0), p(4));
    for j in 1..4 {
        acc = add(acc, add(p(j), p(j + 4)));
    }
    for i in full..n {
        acc = add(acc, i.to_string());
    }
    tree(&acc)
}

/// matrixmultiply 0.3 `gemm_loop` (src/gemm.rs, LOOP 4): k is cut in `kc`-sized blocks
/// (`S_KC = D_KC = 256`, src/archparam_defaults.rs); the kernel sums each block in one
/// register accumulator from zero (`kernel_x86_avx`, fused multiply-add with b = 1), the
/// first block is stored with beta = 0 and every later block added to C (`betap = 1`).
fn matrixmultiply_k(k: usize) -> SumTree {
    let mut acc: Option<String> = None;
    for lo in (0..k).step_by(256) {
        let block = chain(lo..(lo + 256).min(k));
        acc = Some(match acc {
            None => block,
            Some(a) => add(a, block),
        });
    }
    tree(&acc.expect("k > 0"))
}

fn one_order(name: &str, size: Size) -> SumTree {
    let o = builtins::reveal::<f32>(name, size, &ElementReveal::new(), None).expect(name);
    assert!(o.is_uniform(), "{name}: {o}");
    o.groups[0].tree.clone()
}

#[test]
fn iterator_sum_is_sequential() {
    // core::iter::Sum for f32/f64 (library/core/src/iter/traits/accum.rs,
    // `float_sum_product!`): `iter.fold(-0.0, |a, b| a + b)`, one accumulator in order.
    for n in [2, 17, 100] {
        assert_eq!(
            one_order("iter-sum", Size::square(n)),
            SumTree::sequential(n)
        );
        let o = builtins::reveal::<f64>("iter-sum", Size::square(n), &ElementReveal::new(), None)
            .expect("f64");
        assert_eq!(o.groups[0].tree, SumTree::sequential(n));
    }
}

#[test]
fn hand_unrolled_loop() {
    // builtins::unrolled4: lanes l = 0..4 over x[4i + l], (a0+a1)+(a2+a3), then the tail.
    let n = 14;
    let lane = |l: usize| chain((l..12).step_by(4));
    let body = add(add(lane(0), lane(1)), add(lane(2), lane(3)));
    let expected = tree(&add(add(body, "12".into()), "13".into()));
    assert_eq!(one_order("unrolled4", Size::square(n)), expected);
    let o = builtins::reveal_unrolled::<fprev::half::bf16>(n, &ElementReveal::new()).expect("bf16");
    assert_eq!(o.groups[0].tree, expected);
}

#[test]
fn ndarray_sum_and_dot_use_eight_lanes() {
    for n in [32, 37, 8, 5] {
        assert_eq!(
            one_order("ndarray-sum", Size::square(n)),
            ndarray_unrolled(n),
            "sum n={n}"
        );
        assert_eq!(
            one_order("ndarray-dot", Size::square(n)),
            ndarray_unrolled(n),
            "dot n={n}"
        );
    }
}

#[test]
fn matrix_products_go_through_matrixmultiply_blocks() {
    // Edge tiles (5 x 7 is smaller than the 8 x 8 / 16 x 8 kernels) go through
    // `masked_kernel`, which runs the same kernel into a buffer: same order.
    let size = Size {
        n: 600,
        rows: 5,
        cols: 7,
    };
    assert_eq!(
        one_order("matrixmultiply-gemm", size),
        matrixmultiply_k(600)
    );
    let o = builtins::reveal::<f64>("matrixmultiply-gemm", size, &ElementReveal::new(), None)
        .expect("dgemm");
    assert!(o.is_uniform());
    assert_eq!(o.groups[0].tree, matrixmultiply_k(600));
    // nalgebra 0.35 `gemm_uninit` (src/base/blas_uninit.rs) calls matrixmultiply::sgemm
    // for dynamic matrices with every dimension above SMALL_DIM = 5; ndarray 0.17
    // `mat_mul_impl` (src/linalg/impl_linalg.rs) calls it without the blas feature.
    let size = Size {
        n: 300,
        rows: 8,
        cols: 9,
    };
    assert_eq!(one_order("nalgebra-matmul", size), matrixmultiply_k(300));
    assert_eq!(one_order("ndarray-matmul", size), matrixmultiply_k(300));
}

#[test]
fn f16_operands_with_f32_accumulation() {
    let o = builtins::reveal_f16_operands(
        Size {
            n: 300,
            rows: 4,
            cols: 4,
        },
        &ElementReveal::new(),
    )
    .expect("f16");
    assert!(o.is_uniform());
    assert_eq!(o.groups[0].tree, matrixmultiply_k(300));
}

#[test]
fn sgemm_256_in_few_calls() {
    let o = builtins::reveal::<f32>(
        "matrixmultiply-gemm",
        Size::square(256),
        &ElementReveal::new(),
        None,
    )
    .expect("sgemm");
    assert!(o.is_uniform());
    assert_eq!(o.groups[0].tree, SumTree::sequential(256));
    // a few calls for the probes (one per row of A) and the engine's verification
    assert!(o.calls <= 16, "{} calls", o.calls);
}

#[test]
fn rayon_sum_depends_on_threads() {
    // rayon's slice sum splits adaptively (rayon-1.12 src/iter/plumbing/mod.rs, Splitter:
    // `splits = current_num_threads()`, halved per split, reset when a job is stolen),
    // each piece summed in order and the halves added. With one thread there is no
    // stealing: one split (splits = 1), two halves summed in order, then added.
    let size = Size::square(64);
    let run =
        |threads| builtins::reveal::<f32>("rayon-sum", size, &ElementReveal::new(), Some(threads));
    let one = run(1).expect("1 thread").groups[0].tree.clone();
    assert_eq!(run(1).expect("again").groups[0].tree, one);
    assert_eq!(one, tree(&add(chain(0..32), chain(32..64))));
}

/// A gemm whose last two rows and last column sum backwards: three orders.
#[test]
fn elements_with_different_orders_are_grouped() {
    let (m, k, n) = (6, 10, 4);
    let op = || {
        ops::gemm(m, k, n, move |a: &[f64], b: &[f64], c: &mut [f64]| {
            for i in 0..m {
                for j in 0..n {
                    let terms = (0..k).map(|l| a[i * k + l] * b[l * n + j]);
                    c[i * n + j] = if i >= 4 {
                        terms.rev().fold(0.0, |s, t| s + t)
                    } else if j == n - 1 {
                        let v: Vec<f64> = terms.collect();
                        (v[..5].iter().fold(0.0, |s, t| s + t))
                            + v[5..].iter().fold(0.0, |s, t| s + t)
                    } else {
                        terms.fold(0.0, |s, t| s + t)
                    };
                }
            }
        })
    };
    for coverage in [ElementCoverage::Batched, ElementCoverage::Exhaustive] {
        let o = ElementReveal::new()
            .coverage(coverage)
            .run(op())
            .expect("grouped");
        assert_eq!(o.groups.len(), 3, "{coverage:?}: {o}");
        assert_eq!(o.groups[0].tree, SumTree::sequential(k));
        assert_eq!(o.groups[0].elements.len(), 12);
        let back = o.tree_of(Element { lane: 5, output: 0 }).expect("revealed");
        assert_eq!(back.to_string(), "(0+(1+(2+(3+(4+(5+(6+(7+(8+9)))))))))");
        let split = o.tree_of(Element { lane: 0, output: 3 }).expect("revealed");
        assert_eq!(*split, tree(&add(chain(0..5), chain(5..10))));
        assert!(o.unresolved.is_empty());
    }
}

#[test]
fn failures_of_the_operation_are_errors() {
    let op = ops::dot(8, |x: &[f32], _: &[f32]| -> f32 {
        if x.iter().any(|v| *v > 1.0) {
            panic!("no masks here")
        }
        x.iter().sum()
    });
    let e = ElementReveal::new().run(op).expect_err("panics");
    assert!(e.to_string().contains("no masks here"), "{e}");
    let op = ops::reduction(2, 8, 1, |x: &[f32], out: &mut [f32]| {
        for (row, o) in x.chunks(8).zip(out) {
            *o = row.iter().copied().fold(f32::MIN, f32::max);
        }
    });
    assert!(ElementReveal::new().run(op).is_err());
}
