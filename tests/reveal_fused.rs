//! Fused adders as Tensor Cores build them: block-FMA chains, truncating nodes, FP8
//! operands spread over both factors of a product. The exact tree or a typed error,
//! never a different tree.

use fprev::float::{F8E4M3, F8E5M2};
use fprev::fused::{AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, Rounding};
use fprev::target::{FnTarget, Products};
use fprev::{Reveal, RevealError, SumTree};

fn chain(nfma: usize, frac: u32) -> BlockFma {
    BlockFma {
        nfma,
        frac,
        frac_out: None,
        accumulator: AccumulatorJoin::Aligned,
        chunk: None,
        alignment: Alignment::ProductExponent,
        min_exp: None,
        align_rounding: Rounding::TowardZero,
        accumulator_cut: AccumulatorCut::WithProducts,
    }
}

#[test]
fn a_chain_whose_running_value_survives_next_to_the_mask_is_revealed() {
    // 9-way nodes (running value + 8 terms) keeping terms within 2^30 of their largest:
    // with the narrowest masks the running value of earlier blocks survives next to M
    let model = chain(8, 30);
    let r = Reveal::new(64)
        .run_target(FnTarget(|x: &[f32]| model.sum(x)))
        .unwrap();
    assert_eq!(r.tree, model.tree(64));
    assert!(r.verification.wide_masks);
    let fit = r.verification.fused.expect("fitted");
    assert!(fit.frac <= 30, "{fit:?}");
    println!("{} probes, {:?}", r.probes, r.verification);
}

#[test]
fn two_seventeen_way_chains_over_halves_are_revealed() {
    let model = BlockFma {
        chunk: Some(128),
        ..chain(16, 30)
    };
    let r = Reveal::new(256)
        .run_target(FnTarget(|x: &[f32]| model.sum(x)))
        .unwrap();
    assert_eq!(r.tree, model.tree(256));
}

fn sort_blocks_of_4(x: &[f32]) -> f32 {
    let mut total = 0.0f32;
    for block in x.chunks(4) {
        let mut b = block.to_vec();
        b.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
        let s: f32 = b.iter().sum();
        total += s;
    }
    total
}

#[test]
fn sorting_in_blocks_is_refused() {
    let e = Reveal::new(8).run(sort_blocks_of_4).unwrap_err();
    assert!(
        matches!(
            e,
            RevealError::FusedUnverified { .. } | RevealError::Inconsistent { .. }
        ),
        "{e}"
    );
}

#[test]
fn integer_truncated_blocks_are_refused() {
    let e = Reveal::new(8)
        .run(|x: &[f32]| {
            x.chunks(4)
                .map(|b| b.iter().sum::<f32>().trunc())
                .sum::<f32>()
        })
        .unwrap_err();
    assert!(
        matches!(
            e,
            RevealError::FusedUnverified { .. } | RevealError::NotPlainSummation { .. }
        ),
        "{e}"
    );
}

#[test]
fn accept_flat_does_not_switch_verification_off() {
    let e = Reveal::new(16)
        .accept_flat(true)
        .run(|_: &[f32]| 0.0f32)
        .unwrap_err();
    assert!(
        matches!(
            e,
            RevealError::FusedUnverified { .. } | RevealError::ConstantAnswers { .. }
        ),
        "{e}"
    );
    let sorted = |x: &[f32]| {
        let mut v = x.to_vec();
        v.sort_by(f32::total_cmp);
        v.iter().sum::<f32>()
    };
    let e = Reveal::new(16).accept_flat(true).run(sorted).unwrap_err();
    assert!(
        matches!(
            e,
            RevealError::FusedUnverified { .. } | RevealError::DataDependent { .. }
        ),
        "{e}"
    );
}

#[test]
fn every_preset_is_revealed_at_32_and_256() {
    for (name, model) in BlockFma::PRESETS {
        for n in [32usize, 256] {
            let start = std::time::Instant::now();
            let r = Reveal::new(n)
                .run_target(FnTarget(|x: &[f32]| model.sum(x)))
                .unwrap_or_else(|e| panic!("{name} n = {n}: {e}"));
            assert_eq!(r.tree, model.tree(n), "{name} n = {n}");
            println!(
                "{name:>14} n = {n:>3}: {} probes + {} calls, {:.1} ms: {}",
                r.probes,
                r.replays,
                start.elapsed().as_secs_f64() * 1e3,
                r.tree.describe()
            );
        }
    }
}

#[test]
fn fp8_dot_products_spread_masks_over_both_operands() {
    let model = BlockFma::H100_FP8;
    for n in [32usize, 256] {
        let dot = |a: &[F8E4M3], b: &[F8E4M3]| -> f32 { model.dot(a, b) };
        let r = Reveal::new(n).run_target(Products::new(dot)).unwrap();
        assert_eq!(r.tree, model.tree(n));
        let dot = |a: &[F8E5M2], b: &[F8E5M2]| -> f32 { model.dot(a, b) };
        let r = Reveal::new(n).run_target(Products::new(dot)).unwrap();
        assert_eq!(r.tree, model.tree(n));
    }
    // a plain sequential f32 dot over FP8 operands
    let dot = |a: &[F8E4M3], b: &[F8E4M3]| -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (fprev::ProbeFloat::to_f64(*x) * fprev::ProbeFloat::to_f64(*y)) as f32)
            .fold(0.0, |s, p| s + p)
    };
    let r = Reveal::new(64).run_target(Products::new(dot)).unwrap();
    assert_eq!(r.tree, SumTree::sequential(64));
}

#[test]
fn fp8_sums_in_one_operand_are_refused_with_a_reason() {
    let sum = |x: &[f32]| x.iter().sum::<f32>();
    struct E4m3Sum<F>(F);
    impl<F: FnMut(&[f32]) -> f32> fprev::Target<f32> for E4m3Sum<F> {
        fn call(&mut self, x: &[f32]) -> Result<f32, fprev::target::TargetError> {
            Ok((self.0)(x))
        }
        fn input_format(&self) -> Option<fprev::float::FloatFormat> {
            Some(<F8E4M3 as fprev::ProbeFloat>::FORMAT)
        }
    }
    let e = Reveal::new(64).run_target(E4m3Sum(sum)).unwrap_err();
    assert!(matches!(e, RevealError::TooLarge { .. }), "{e}");
}

#[test]
fn narrow_block_results_switch_to_windowed_counts() {
    // results truncated to 11 fraction bits: unit counts exact below 2^12, not 2^24
    let model = BlockFma {
        frac_out: Some(11),
        ..BlockFma::H100
    };
    let n = 4200;
    let r = Reveal::new(n)
        .run_target(FnTarget(|x: &[f32]| model.sum(x)))
        .unwrap();
    assert_eq!(r.verification.count_bits, Some(12));
    assert_eq!(r.tree, model.tree(n));
}

#[test]
fn op_adapters_spread_fp8_masks_over_both_operands() {
    use fprev::ops::{self, Batched};
    let model = BlockFma::H100_FP8;
    let k = 64;
    // a dot, a gemv and a gemm whose every output runs the H100 FP8 chain, one probe
    // per call with both operands set
    let d = ops::dot(k, |x: &[F8E4M3], y: &[F8E4M3]| -> f32 { model.dot(x, y) });
    let mut t = Batched::new(d, 0);
    assert!(t.spreads_operands());
    let r = Reveal::new(k).run_target(&mut t).unwrap();
    assert_eq!(r.tree, model.tree(k));
    let g = ops::gemv(3, k, |a: &[F8E4M3], x: &[F8E4M3], y: &mut [f32]| {
        for (row, yi) in a.chunks(k).zip(y.iter_mut()) {
            *yi = model.dot(row, x);
        }
    });
    let r = Reveal::new(k).run_target(Batched::new(g, 0)).unwrap();
    assert_eq!(r.tree, model.tree(k));
    let g = ops::gemm(2, k, 2, |a: &[F8E4M3], b: &[F8E4M3], c: &mut [f32]| {
        for i in 0..2 {
            for j in 0..2 {
                let col: Vec<F8E4M3> = (0..k).map(|l| b[l * 2 + j]).collect();
                c[i * 2 + j] = model.dot(&a[i * k..(i + 1) * k], &col);
            }
        }
    });
    let r = Reveal::new(k).run_target(Batched::new(g, 3)).unwrap();
    assert_eq!(r.tree, model.tree(k));
    // f32 operands never need it
    let d = ops::dot(k, |x: &[f32], y: &[f32]| {
        x.iter().zip(y).map(|(a, b)| a * b).sum::<f32>()
    });
    assert!(!Batched::new(d, 0).spreads_operands());
}
