//! Known orders, the canonical text contract, and the cost of adversarial orders.

use fprev::reveal::Pivot;
use fprev::target::FnTarget;
use fprev::{Reveal, SumTree};

#[test]
fn canonical_text_contract() {
    let t = fprev::reveal(4, |x: &[f32]| x.iter().fold(0.0, |a, &b| a + b)).unwrap();
    assert_eq!(t.to_string(), "(((0+1)+2)+3)");
    let fused = Reveal::new(5)
        .accept_flat(true)
        .run(|x: &[f64]| fprev::float::exact_sum_rounded(x))
        .unwrap();
    assert_eq!(fused.to_string(), "(0+1+2+3+4)");
}

#[test]
fn reverse_order_is_near_linear_with_random_pivots() {
    let n = 1000;
    let rev = |x: &[f32]| x.iter().rev().fold(0.0f32, |a, &b| a + b);
    // the search itself, without the known-order guess
    let r = Reveal::new(n)
        .known_orders(false)
        .run_target(FnTarget(rev))
        .unwrap();
    assert_eq!(r.tree, SumTree::reverse(n));
    assert!(r.probes < 5000, "reverse order took {} probes", r.probes);
    // guessed and proved: one probe per inner node, plus the verification's re-asks
    let r = Reveal::new(n).run_target(FnTarget(rev)).unwrap();
    assert_eq!(r.tree, SumTree::reverse(n));
    assert_eq!(r.recognized.as_deref(), Some("reverse"));
    assert!(r.probes < n as u64 + 50, "{} probes", r.probes);
    // the papers' fixed pivot is quadratic, and must still be right
    let r = Reveal::new(200)
        .known_orders(false)
        .pivot(Pivot::Smallest)
        .run_target(FnTarget(rev))
        .unwrap();
    assert!(r.probes >= 200 * 199 / 2);
}

#[test]
fn numpy_shaped_pairwise() {
    // NumPy's float32 pairwise sum (fprev::orders::numpy_pairwise): the order published
    // in the FPRev paper for n = 32, written out here from that description.
    let pairwise = fprev::orders::numpy_pairwise::<f32>;
    let t = fprev::reveal(32, pairwise).unwrap();
    let lanes: Vec<String> = (0..8)
        .map(|k| format!("((({}+{})+{})+{})", k, k + 8, k + 16, k + 24))
        .collect();
    let expected = format!(
        "((({}+{})+({}+{}))+(({}+{})+({}+{})))",
        lanes[0], lanes[1], lanes[2], lanes[3], lanes[4], lanes[5], lanes[6], lanes[7]
    );
    assert_eq!(t.to_string(), expected);
    let big = fprev::Reveal::new(4096).run_sync(pairwise).unwrap();
    assert_eq!(big.leaf_count(), 4096);
}

#[test]
fn parallel_probing_matches_sequential() {
    let truth = SumTree::pairwise(300);
    let a = Reveal::new(300).run(|x: &[f32]| truth.replay(x)).unwrap();
    let b = Reveal::new(300)
        .run_sync(|x: &[f32]| truth.replay(x))
        .unwrap();
    assert_eq!(a, truth);
    assert_eq!(b, truth);
}

/// f16 operands accumulated in f32 (a mixed-precision op): masks, units and the
/// verification's random inputs must all be exact in f16.
#[test]
fn mixed_precision_operands_verify() {
    use fprev::float::{FloatFormat, ProbeFloat};
    use fprev::half::f16;
    use fprev::target::{Target, TargetError};
    struct F16Dot;
    impl Target<f32> for F16Dot {
        fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
            // operands stored as f16, products with 1.0 and sums in f32, 2 lanes
            let (mut a, mut b) = (0.0f32, 0.0f32);
            for (i, v) in x.iter().enumerate() {
                let h = f16::from_f32(*v).to_f32();
                if i % 2 == 0 {
                    a += h;
                } else {
                    b += h;
                }
            }
            Ok(a + b)
        }
        fn input_format(&self) -> Option<FloatFormat> {
            Some(f16::FORMAT)
        }
    }
    for n in [7usize, 64, 300] {
        let r = Reveal::new(n).run_target(F16Dot).unwrap();
        let evens: Vec<usize> = (0..n).step_by(2).collect();
        assert_eq!(r.tree.children(r.tree.root()).len(), 2, "n={n}: {}", r.tree);
        assert!(r.scale.mask <= 65504.0, "mask must fit f16");
        assert_eq!(
            r.tree
                .leaves_under(r.tree.children(r.tree.root())[0] as usize),
            evens
        );
    }
}
