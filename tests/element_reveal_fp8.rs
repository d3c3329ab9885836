//! `ElementReveal` on FP8 products: masks and units spread over both operands (each probe
//! its own row of `A` and column of `B`), every element checked on random operands of its
//! own. FP8 E4M3 and E5M2 (and AMD's FNUZ variants) gemm, gemv and dot with f32
//! accumulation in known orders
//! (sequential, pairwise, the H100 FP8 block-FMA chain): the exact tree per element or a
//! typed error, never a different tree, and each group's fitted arithmetic (none for
//! plain additions, the model's widths and block size for a fused chain). Seeds print on failure; `FPREV_PROPTEST_CASES`
//! raises the number of seeds.

mod common;

use common::cases;
use fprev::float::{F8E4M3Fnuz, F8E5M2Fnuz, ProbeFloat, ProbeScale, F8E4M3, F8E5M2};
use fprev::fused::BlockFma;
use fprev::ops::{self, Element, ElementCoverage, ElementOrders, ElementReveal};
use fprev::reveal::FittedFused;
use fprev::{RevealError, SumTree};

/// How one output element sums its `k` products.
#[derive(Clone, Copy, Debug)]
enum ElementSumOrder {
    Sequential,
    Pairwise,
    Fused(BlockFma),
}

impl ElementSumOrder {
    fn tree(self, k: usize) -> SumTree {
        match self {
            ElementSumOrder::Sequential => SumTree::sequential(k),
            ElementSumOrder::Pairwise => SumTree::pairwise(k),
            ElementSumOrder::Fused(m) => m.tree(k),
        }
    }

    /// Row `a` dotted with column `b` (products exact in f32).
    fn dot<I: ProbeFloat>(self, a: &[I], b: &[I]) -> f32 {
        match self {
            ElementSumOrder::Fused(m) => m.dot(a, b),
            _ => {
                let x: Vec<f32> = a
                    .iter()
                    .zip(b)
                    .map(|(p, q)| (p.to_f64() * q.to_f64()) as f32)
                    .collect();
                self.tree(a.len()).replay(&x)
            }
        }
    }
}

const ORDERS: [ElementSumOrder; 3] = [
    ElementSumOrder::Sequential,
    ElementSumOrder::Pairwise,
    ElementSumOrder::Fused(BlockFma::H100_FP8),
];

/// An `m x k` by `k x n` FP8 gemm whose element `(i, j)` sums in `order(i, j)`.
fn gemm<I: ProbeFloat>(
    m: usize,
    k: usize,
    n: usize,
    order: impl Fn(usize, usize) -> ElementSumOrder,
) -> impl ops::Reduction<f32, Input = I> {
    ops::gemm(m, k, n, move |a: &[I], b: &[I], c: &mut [f32]| {
        let mut col = Vec::with_capacity(k);
        for j in 0..n {
            col.clear();
            col.extend((0..k).map(|l| b[l * n + j]));
            for i in 0..m {
                c[i * n + j] = order(i, j).dot(&a[i * k..(i + 1) * k], &col);
            }
        }
    })
}

/// Whether `k` products of `I` need masks over both operands: one operand's range
/// cannot swamp a sum of `k` units in f32 (E4M3 at every `k` here, E5M2 from 64 on).
fn needs_spread<I: ProbeFloat>(k: usize) -> bool {
    ProbeScale::for_formats(I::FORMAT, f32::FORMAT, k).is_none()
}

fn uniform(seed: u64, what: &str, o: &ElementOrders, truth: &SumTree, spread: bool) {
    assert_eq!(
        o.operands_spread, spread,
        "seed {seed}: {what}: operands spread"
    );
    assert!(
        o.is_uniform(),
        "seed {seed}: {what}: {} groups, {} unresolved",
        o.groups.len(),
        o.unresolved.len()
    );
    assert_eq!(
        o.groups[0].tree, *truth,
        "seed {seed}: {what}: a different tree"
    );
    println!("{what}: {} calls, {} probes", o.calls, o.probes);
}

/// The arithmetic an element reveal reports for its one group: none for plain
/// additions, and for a block-FMA chain the model's own widths within the consistent
/// ranges, products aligned by their operands' exponent sum, and its block size.
fn arithmetic_matches(seed: u64, what: &str, got: Option<FittedFused>, order: ElementSumOrder) {
    let ElementSumOrder::Fused(m) = order else {
        assert!(
            got.is_none(),
            "seed {seed}: {what}: arithmetic {got:?} for plain additions"
        );
        return;
    };
    let a = got.unwrap_or_else(|| panic!("seed {seed}: {what}: no arithmetic for a fused tree"));
    assert!(
        a.frac <= m.frac && m.frac <= a.frac_max.max(a.frac),
        "seed {seed}: {what}: frac {}-{} misses {}",
        a.frac,
        a.frac_max,
        m.frac
    );
    assert_eq!(a.frac_out, m.frac_out, "seed {seed}: {what}: frac_out");
    assert_eq!(a.alignment, m.alignment, "seed {seed}: {what}: alignment");
    let nfma = a.structure.map(|s| s.nfma);
    assert!(
        nfma.is_some_and(|c| c.min <= m.nfma && c.max.is_none_or(|x| m.nfma <= x)),
        "seed {seed}: {what}: block size {nfma:?} misses {}",
        m.nfma
    );
}

fn gemm_case<I: ProbeFloat>(seed: u64, order: ElementSumOrder, (m, k, n): (usize, usize, usize)) {
    let what = format!("{} gemm {m} x {k} x {n}, {order:?}", I::FORMAT.name);
    let o = ElementReveal::new()
        .seed(seed)
        .run(gemm::<I>(m, k, n, |_, _| order))
        .unwrap_or_else(|e| panic!("seed {seed}: {what}: {e}"));
    // a fused adder at small k: one operand holds the masks but its random values
    // cannot tell alignment widths apart, so ElementReveal spreads after all
    let spread = needs_spread::<I>(k) || matches!(order, ElementSumOrder::Fused(_));
    uniform(seed, &what, &o, &order.tree(k), spread);
    arithmetic_matches(seed, &what, o.groups[0].arithmetic, order);
    assert_eq!(o.shape.elements(), m * n);
}

#[test]
fn fp8_gemm_4x32x4_in_known_orders() {
    for seed in 0..u64::from(cases(1)) {
        for order in ORDERS {
            gemm_case::<F8E4M3>(seed, order, (4, 32, 4));
            gemm_case::<F8E5M2>(seed, order, (4, 32, 4));
            gemm_case::<F8E4M3Fnuz>(seed, order, (4, 32, 4));
            gemm_case::<F8E5M2Fnuz>(seed, order, (4, 32, 4));
        }
    }
}

#[test]
fn fp8_gemm_long_k_in_known_orders() {
    for seed in 0..u64::from(cases(1)) {
        for (order, shape) in [
            (ElementSumOrder::Sequential, (3, 64, 5)),
            (ElementSumOrder::Pairwise, (4, 128, 2)),
            (ElementSumOrder::Fused(BlockFma::H100_FP8), (2, 256, 3)),
            (ElementSumOrder::Fused(BlockFma::H100_FP8_SLOW), (3, 256, 3)),
        ] {
            gemm_case::<F8E4M3>(seed, order, shape);
            gemm_case::<F8E5M2>(seed, order, shape);
        }
    }
}

fn gemv_dot_case<I: ProbeFloat>(seed: u64, order: ElementSumOrder, k: usize) {
    let truth = order.tree(k);
    let what = format!("{} gemv 3 x {k}, {order:?}", I::FORMAT.name);
    let g = ops::gemv(3, k, move |a: &[I], x: &[I], y: &mut [f32]| {
        for (row, yi) in a.chunks(k).zip(y.iter_mut()) {
            *yi = order.dot(row, x);
        }
    });
    let o = ElementReveal::new()
        .seed(seed)
        .run(g)
        .unwrap_or_else(|e| panic!("seed {seed}: {what}: {e}"));
    let spread = needs_spread::<I>(k) || matches!(order, ElementSumOrder::Fused(_));
    uniform(seed, &what, &o, &truth, spread);
    arithmetic_matches(seed, &what, o.groups[0].arithmetic, order);
    let what = format!("{} dot {k}, {order:?}", I::FORMAT.name);
    let d = ops::dot(k, move |x: &[I], y: &[I]| order.dot(x, y));
    let o = ElementReveal::new()
        .seed(seed)
        .run(d)
        .unwrap_or_else(|e| panic!("seed {seed}: {what}: {e}"));
    let spread = needs_spread::<I>(k) || matches!(order, ElementSumOrder::Fused(_));
    uniform(seed, &what, &o, &truth, spread);
    arithmetic_matches(seed, &what, o.groups[0].arithmetic, order);
}

#[test]
fn fp8_gemv_and_dot_in_known_orders() {
    for seed in 0..u64::from(cases(1)) {
        for order in ORDERS {
            gemv_dot_case::<F8E4M3>(seed, order, 64);
            gemv_dot_case::<F8E5M2>(seed, order, 64);
            // AMD MI300's FNUZ formats through the same adapters
            gemv_dot_case::<F8E4M3Fnuz>(seed, order, 64);
            gemv_dot_case::<F8E5M2Fnuz>(seed, order, 64);
        }
    }
}

#[test]
fn fp8_gemm_columns_in_two_orders_come_out_as_two_groups() {
    let (m, k, n) = (4, 32, 6);
    // columns 1 and 4 pairwise, the others the H100 FP8 chain
    let odd = |j: usize| j % 3 == 1;
    let order = move |_: usize, j: usize| {
        if odd(j) {
            ElementSumOrder::Pairwise
        } else {
            ElementSumOrder::Fused(BlockFma::H100_FP8)
        }
    };
    for seed in 0..u64::from(cases(1)) {
        for coverage in [ElementCoverage::Batched, ElementCoverage::Exhaustive] {
            let what = format!("E4M3 gemm with two column orders, {coverage:?}");
            let o = ElementReveal::new()
                .seed(seed)
                .coverage(coverage)
                .run(gemm::<F8E4M3>(m, k, n, order))
                .unwrap_or_else(|e| panic!("seed {seed}: {what}: {e}"));
            assert!(o.operands_spread);
            assert!(o.unresolved.is_empty(), "seed {seed}: {what}");
            assert_eq!(o.groups.len(), 2, "seed {seed}: {what}: {o}");
            for g in &o.groups {
                let j = g.elements[0].output;
                let want: Vec<Element> = (0..m)
                    .flat_map(|lane| {
                        (0..n)
                            .filter(move |&o| odd(o) == odd(j))
                            .map(move |output| Element { lane, output })
                    })
                    .collect();
                assert_eq!(g.elements, want, "seed {seed}: {what}: group of column {j}");
                assert_eq!(
                    g.tree,
                    order(0, j).tree(k),
                    "seed {seed}: {what}: tree of column {j}"
                );
                arithmetic_matches(seed, &what, g.arithmetic, order(0, j));
            }
            println!("{what}: {} calls, {} probes", o.calls, o.probes);
        }
    }
}

#[test]
fn an_fp8_lane_in_another_order_is_its_own_group() {
    // the last row (an edge tile) sums sequentially, the others pairwise
    let (m, k, n) = (5, 64, 3);
    let order = move |i: usize, _: usize| {
        if i == m - 1 {
            ElementSumOrder::Sequential
        } else {
            ElementSumOrder::Pairwise
        }
    };
    let seed = 7;
    let o = ElementReveal::new()
        .seed(seed)
        .run(gemm::<F8E5M2>(m, k, n, order))
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert_eq!(o.groups.len(), 2, "seed {seed}: {o}");
    assert_eq!(o.groups[0].tree, SumTree::pairwise(k));
    assert_eq!(o.groups[0].elements.len(), (m - 1) * n);
    assert_eq!(o.groups[1].tree, SumTree::sequential(k));
    assert!(o.groups[1].elements.iter().all(|e| e.lane == m - 1));
}

/// An FP8 op that answers an input it has seen before in another order: the same call
/// twice gives different bits.
#[test]
fn a_nondeterministic_fp8_op_is_reported() {
    use std::collections::HashMap;
    let k = 32;
    let mut seen: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut answer = move |a: &[F8E4M3], b: &[F8E4M3]| -> f32 {
        let key: Vec<u64> = a.iter().chain(b).map(|v| v.to_bits_u64()).collect();
        let times = seen.entry(key).or_insert(0);
        *times += 1;
        let order = if *times % 2 == 1 {
            ElementSumOrder::Sequential
        } else {
            ElementSumOrder::Pairwise
        };
        order.dot(a, b)
    };
    let d = ops::dot(k, &mut answer);
    match ElementReveal::new().run(d) {
        Err(RevealError::Nondeterministic { .. }) => {}
        other => panic!("a dot answering repeated inputs differently: {other:?}"),
    }
    let (m, n) = (3, 3);
    let g = ops::gemm(m, k, n, |a: &[F8E4M3], b: &[F8E4M3], c: &mut [f32]| {
        for i in 0..m {
            for j in 0..n {
                let col: Vec<F8E4M3> = (0..k).map(|l| b[l * n + j]).collect();
                c[i * n + j] = answer(&a[i * k..(i + 1) * k], &col);
            }
        }
    });
    match ElementReveal::new().run(g) {
        Err(RevealError::Nondeterministic { .. }) => {}
        other => panic!("a gemm answering repeated inputs differently: {other:?}"),
    }
}

#[test]
fn wide_operands_do_not_spread() {
    // f32 and f16 operands hold masks and units in one operand: probes go one per lane,
    // in the calls the earlier tests of ElementReveal pin (fprev-runtime's ops tests),
    // plus what the engine's verification asks (sampled probes again, and random inputs)
    let g = ops::gemm(16, 32, 16, |a: &[f32], b: &[f32], c: &mut [f32]| {
        for i in 0..16 {
            for j in 0..16 {
                c[i * 16 + j] = (0..32).fold(0.0, |s, l| s + a[i * 32 + l] * b[l * 16 + j]);
            }
        }
    });
    let o = ElementReveal::new().run(g).unwrap();
    assert!(!o.operands_spread);
    assert_eq!((o.calls, o.probes), (15, 55));
    let g = ops::gemm(
        8,
        64,
        4,
        |a: &[fprev::half::f16], b: &[fprev::half::f16], c: &mut [f32]| {
            for i in 0..8 {
                for j in 0..4 {
                    c[i * 4 + j] = (0..64).fold(0.0f32, |s, l| {
                        s + a[i * 64 + l].to_f32() * b[l * 4 + j].to_f32()
                    });
                }
            }
        },
    );
    let o = ElementReveal::new().run(g).unwrap();
    assert!(!o.operands_spread);
    assert_eq!((o.calls, o.probes), (30, 150));
    let d = ops::dot(33, |x: &[f32], y: &[f32]| {
        x.iter().zip(y).fold(0.0f32, |s, (a, b)| s + a * b)
    });
    let o = ElementReveal::new().run(d).unwrap();
    assert!(!o.operands_spread);
    assert_eq!((o.calls, o.probes), (67, 56));
}

#[test]
fn f16_operands_with_a_tensor_core_adder() {
    use fprev::half::f16;
    let model = BlockFma::H100;
    let (m, k, n) = (4, 64, 4);
    let order = ElementSumOrder::Fused(model);
    let o = ElementReveal::new()
        .run(gemm::<f16>(m, k, n, move |_, _| order))
        .unwrap();
    println!("{o}{} calls, spread {}", o.calls, o.operands_spread);
    assert!(o.is_uniform());
    assert_eq!(o.groups[0].tree, model.tree(k));
    arithmetic_matches(0, "f16 gemm, H100", o.groups[0].arithmetic, order);
}

/// A user reduction with a second operand shared by all its outputs (no per-output
/// operand): one probe per call, every element still checked.
struct TwoSums {
    k: usize,
}

impl ops::Reduction<f32> for TwoSums {
    type Input = F8E4M3;
    fn shape(&self) -> ops::ReductionShape {
        ops::ReductionShape {
            lanes: 2,
            k: self.k,
            outputs: 2,
        }
    }
    fn eval(&mut self, x: &[F8E4M3], out: &mut [f32]) -> Result<(), fprev::target::TargetError> {
        let ones = vec![F8E4M3::from_f64_round(1.0); self.k];
        self.eval_operands(x, &ones, out).expect("has operands")
    }
    const OPERANDS: bool = true;
    fn eval_operands(
        &mut self,
        a: &[F8E4M3],
        b: &[F8E4M3],
        out: &mut [f32],
    ) -> Option<Result<(), fprev::target::TargetError>> {
        for (row, o) in a.chunks(self.k).zip(out.chunks_mut(2)) {
            // output 0 sequential, output 1 pairwise
            o[0] = ElementSumOrder::Sequential.dot(row, b);
            o[1] = ElementSumOrder::Pairwise.dot(row, b);
        }
        Some(Ok(()))
    }
}

#[test]
fn a_shared_second_operand_takes_one_probe_per_call() {
    let k = 32;
    let o = ElementReveal::new().run(TwoSums { k }).unwrap();
    assert!(o.operands_spread);
    assert_eq!(o.groups.len(), 2, "{o}");
    for g in &o.groups {
        let want = if g.elements[0].output == 0 {
            SumTree::sequential(k)
        } else {
            SumTree::pairwise(k)
        };
        assert_eq!(g.tree, want);
        assert!(g.elements.iter().all(|e| e.output == g.elements[0].output));
        assert_eq!(g.elements.len(), 2);
    }
}
