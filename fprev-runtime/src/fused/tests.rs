use super::*;

fn rz_sum(frac: u32, min_exp: Option<i32>, terms: &[(f64, i32)]) -> f64 {
    aligned_sum(frac, min_exp, Rounding::TowardZero, terms).0
}

#[test]
fn aligned_sums_truncate_below_the_largest_exponent() {
    // 2^3 + 2^-21: with 23 bits below 2^3 the quantum is 2^-20, the small term goes
    let at = |v: &[f64]| -> Vec<(f64, i32)> { v.iter().map(|&x| (x, binade_or_min(x))).collect() };
    // 2^3 + 2^-21: with 23 bits below 2^3 the quantum is 2^-20, the small term goes
    assert_eq!(rz_sum(23, None, &at(&[8.0, 2f64.powi(-21)])), 8.0);
    assert_eq!(
        rz_sum(24, None, &at(&[8.0, 2f64.powi(-21)])),
        8.0 + 2f64.powi(-21)
    );
    // truncation is toward zero for negative terms too
    assert_eq!(rz_sum(2, None, &at(&[4.0, -0.75])), 4.0);
    assert_eq!(rz_sum(2, None, &at(&[4.0, -1.75])), 3.0);
    assert_eq!(rz_sum(10, None, &at(&[0.0, 0.0])), 0.0);
    assert!(rz_sum(10, None, &at(&[f64::NAN, 1.0])).is_nan());
    // a cancelling sum is +0, whatever the signs
    let zero = rz_sum(10, None, &at(&[-1.0, 1.0, -0.0]));
    assert!(zero == 0.0 && zero.is_sign_positive());
    // the largest exponent clamped at 2^0: 2^-3 keeps 2 bits below 2^0, so it is cut
    assert_eq!(
        rz_sum(2, Some(0), &at(&[2f64.powi(-3), 2f64.powi(-3)])),
        0.0
    );
    assert_eq!(rz_sum(2, None, &at(&[2f64.powi(-3), 2f64.powi(-3)])), 0.25);
    // a product 1.5 x 1.5 aligned by its operands' exponents (0 + 0) keeps 2 bits
    // below 2^0, so 2.25 survives whole; by its own exponent (1) it does not
    assert_eq!(rz_sum(2, None, &[(2.25, 0), (0.0, 0)]), 2.25);
    assert_eq!(rz_sum(2, None, &[(2.25, 1), (0.0, 0)]), 2.0);
}

#[test]
fn outputs_keep_frac_out_bits() {
    assert_eq!(output(1.0 + 2f64.powi(-14), Some(13), -126), 1.0);
    assert_eq!(
        output(-(1.0 + 2f64.powi(-13)), Some(13), -126),
        -(1.0 + 2f64.powi(-13))
    );
    assert_eq!(output(16385.0, Some(13), -126), 16384.0);
    assert_eq!(output(3.3, None, -126), 3.3);
    // below 2^min_exp the quantum stays that of 2^min_exp (the format's subnormals)
    assert_eq!(output(2f64.powi(-130) * 1.75, Some(2), -126), 0.0);
    assert_eq!(
        output(2f64.powi(-125) * 1.875, Some(2), -126),
        2f64.powi(-125) * 1.75
    );
}

#[test]
fn trees_match_the_chains() {
    assert_eq!(
        BlockFma::V100.tree(9).to_string(),
        "(((0+1+2+3)+4+5+6+7)+8)"
    );
    let late = BlockFma {
        accumulator: AccumulatorJoin::Late,
        ..BlockFma::V100
    };
    assert_eq!(late.tree(9).to_string(), "(((0+1+2+3)+(4+5+6+7))+8)");
    let chunked = BlockFma {
        chunk: Some(8),
        ..BlockFma::V100
    };
    assert_eq!(
        chunked.tree(16).to_string(),
        "(((0+1+2+3)+4+5+6+7)+((8+9+10+11)+12+13+14+15))"
    );
    for (name, p) in BlockFma::PRESETS.iter().chain(BlockFma::F16_RESULT_PRESETS) {
        p.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(p.tree(300).leaf_count(), 300);
    }
}

#[test]
fn sums_follow_their_trees_exactly_on_exact_data() {
    // small integers: every model computes the exact sum
    let x: Vec<f32> = (0..300).map(|i| (i % 7) as f32).collect();
    let want: f32 = x.iter().sum();
    for (_, p) in BlockFma::PRESETS {
        assert_eq!(p.sum(&x), want);
        assert_eq!(p.sum_tree(&p.tree(300), &x), want);
    }
}
