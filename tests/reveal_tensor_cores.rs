//! Tensor Cores as the published models describe them (Khattak and Mikaitis,
//! arXiv:2512.07004; Xie et al., MMA-Sim, arXiv:2511.10909): products aligned by the sum
//! of their operands' exponents, the block exponent clamped, f32 results truncated. Every
//! preset, at one instruction's k and a few chained, through the product target a dot
//! product is probed with: the exact tree, and a fitted arithmetic that contains the
//! preset's own constants. Seeds print on failure.

mod common;

use common::{cases, reveal_dot, rng};
use fprev::float::{F8E4M3Fnuz, F8E5M2Fnuz, Tf32, F8E4M3, F8E5M2};
use fprev::fused::{
    AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, PairwiseGroups, Rounding,
};
use fprev::half::{bf16, f16};
use fprev::target::Products;
use fprev::{Reveal, RevealError, RevealReport};
use rand::Rng;

/// The preset's tree, and its alignment width among those the fit found consistent.
fn check_published(name: &str, model: BlockFma, n: usize, seed: u64, r: RevealReport) {
    assert_eq!(r.tree, model.tree(n), "seed {seed}: {name} n = {n}: tree");
    let fit = r
        .verification
        .fused
        .unwrap_or_else(|| panic!("seed {seed}: {name} n = {n}: no fitted arithmetic"));
    assert!(
        (fit.frac..=fit.frac_max).contains(&model.frac),
        "seed {seed}: {name} n = {n}: {} fraction bits outside the fitted {fit:?}",
        model.frac
    );
    assert_eq!(
        fit.alignment,
        Alignment::OperandExponents,
        "seed {seed}: {name} n = {n}: {fit:?}"
    );
    assert!(
        fit.alignment_decided,
        "seed {seed}: {name} n = {n}: the inputs did not tell the alignment rules apart: {fit:?}"
    );
    assert_eq!(
        fit.frac_out, model.frac_out,
        "seed {seed}: {name} n = {n}: result width {fit:?}"
    );
    match model.accumulator_cut {
        AccumulatorCut::WithProducts => assert_eq!(
            fit.accumulator_cut,
            AccumulatorCut::WithProducts,
            "seed {seed}: {name}"
        ),
        AccumulatorCut::TwoStage {
            block_frac,
            acc_frac,
            rounding,
            halves,
            ..
        } if n > model.nfma => {
            // the widths the answers allow hold the preset's, under its rounding
            let AccumulatorCut::TwoStage {
                rounding: r,
                halves: h,
                ..
            } = fit.accumulator_cut
            else {
                panic!("seed {seed}: {name} n = {n}: no aligned join fitted: {fit:?}");
            };
            assert_eq!(r, rounding, "seed {seed}: {name} n = {n}: {fit:?}");
            assert_eq!(h, halves, "seed {seed}: {name} n = {n}: halves: {fit:?}");
            // FP8 products carry few bits, so two halved blocks may cut alike either
            // way; four tell the roundings apart
            assert!(
                fit.accumulator_cut_rounding_decided || (halves && n < 4 * model.nfma),
                "seed {seed}: {name}: {fit:?}"
            );
            let [(b0, b1), (c0, c1)] = fit.accumulator_cut_ranges.expect("ranges");
            assert!(
                (b0..=b1).contains(&block_frac) && (c0..=c1).contains(&acc_frac),
                "seed {seed}: {name} n = {n}: {fit:?}"
            );
        }
        // one block: nothing joins it
        AccumulatorCut::TwoStage { .. } => {}
    }
    check_structure(name, model, n, seed, fit.structure);
    println!(
        "{name} n = {n}: {} probes, {} replays, fitted {fit:?}",
        r.probes, r.replays
    );
}

/// The block size, where `c` enters and the promotion interval the report states: the
/// model's own, or, where the tree cannot tell, a range that holds them.
fn check_structure(
    name: &str,
    model: BlockFma,
    n: usize,
    seed: u64,
    s: Option<fprev::reveal::ChainStructure>,
) {
    let s = s.unwrap_or_else(|| panic!("seed {seed}: {name} n = {n}: no block structure"));
    let at = format!("seed {seed}: {name} n = {n}: {s:?}");
    assert_eq!(s.n, n, "{at}");
    if n <= model.nfma {
        // one block: at least n products per block, c and promotion unseen
        assert_eq!((s.nfma.value, s.nfma.max), (n, None), "{at}");
        assert_eq!(s.accumulator, None, "{at}");
        assert_eq!(s.promotion, None, "{at}");
        return;
    }
    assert_eq!(
        (s.nfma.value, s.nfma.min, s.nfma.max),
        (model.nfma, model.nfma, Some(model.nfma)),
        "{at}"
    );
    match model.chunk.filter(|&c| c < n) {
        Some(c) if c == model.nfma => {
            assert_eq!(s.accumulator, Some(AccumulatorJoin::Late), "{at}");
            assert_eq!(s.promotion, None, "{at}");
        }
        Some(c) => {
            assert_eq!(s.accumulator, Some(model.accumulator), "{at}");
            let p = s.promotion.unwrap_or_else(|| panic!("{at}: no promotion"));
            assert_eq!((p.value, p.min), (c, c), "{at}");
        }
        None => {
            assert_eq!(s.accumulator, Some(model.accumulator), "{at}");
            assert_eq!(s.promotion, None, "{at}");
            assert!(s.unpromoted_from <= n, "{at}");
        }
    }
}

#[test]
fn chain_structures_of_random_models_hold_their_parameters() {
    // tree -> structure only (no reveal): every block size, join and promotion interval
    for k in 0..cases(400) {
        let seed = 0x00C4_A140 + u64::from(k);
        let mut r = rng(seed);
        let nfma = r.random_range(1..=40usize);
        let accumulator = if r.random_bool(0.5) {
            AccumulatorJoin::Aligned
        } else {
            AccumulatorJoin::Late
        };
        let chunk = r
            .random_bool(0.5)
            .then(|| nfma * r.random_range(1..=8usize));
        let n = r.random_range(1..=600usize);
        let model = BlockFma {
            nfma,
            accumulator,
            chunk,
            ..BlockFma::V100
        };
        let tree = model.tree(n);
        let Some(s) = fprev::reveal::ChainStructure::of(&tree) else {
            // no multi-term node: blocks of one or two products, or one or two values
            assert!(
                nfma <= 2 || n <= 2,
                "case {k} seed {seed}: {model:?} n = {n}: no structure"
            );
            continue;
        };
        // the named parameters draw the tree exactly
        let named = BlockFma {
            nfma: s.nfma.value,
            accumulator: s.accumulator.unwrap_or(AccumulatorJoin::Aligned),
            chunk: s.promotion.map(|p| p.value),
            ..BlockFma::V100
        };
        assert_eq!(
            named.tree(n),
            tree,
            "case {k} seed {seed}: {model:?} n = {n}: {s:?}"
        );
        // and the true block size lies within the consistent range
        assert!(
            s.nfma.min <= nfma && s.nfma.max.is_none_or(|m| nfma <= m),
            "case {k} seed {seed}: {model:?} n = {n}: {s:?}"
        );
    }
}

#[test]
fn fnuz_operands_reveal_fp8_blocks_with_their_arithmetic() {
    // AMD MI300's FP8 formats as the operands of the FP8 block models: one block and a
    // chain, the tree exact and the published widths measured
    for (k, n) in [32usize, 128].into_iter().enumerate() {
        let seed = 0x00F0_0200 + k as u64;
        for model in [BlockFma::H100_FP8, BlockFma::ADA_FP8] {
            let r = reveal_dot::<F8E4M3Fnuz>(model, n, seed)
                .unwrap_or_else(|e| panic!("seed {seed}: e4m3fnuz n = {n}: {e}"));
            check_published("e4m3fnuz", model, n, seed, r);
            let r = reveal_dot::<F8E5M2Fnuz>(model, n, seed)
                .unwrap_or_else(|e| panic!("seed {seed}: e5m2fnuz n = {n}: {e}"));
            check_published("e5m2fnuz", model, n, seed, r);
        }
    }
}

#[test]
fn every_preset_reveals_one_and_several_instructions_with_its_arithmetic() {
    for (k, (name, model)) in BlockFma::PRESETS.iter().enumerate() {
        let fp8 = model.frac_out == Some(13);
        // one instruction's k (a single fused node), then 2 and 4 chained
        for blocks in [1, 2, 4] {
            let n = model.nfma * blocks;
            let seed = 0x7C0_0000 + (k * 8 + blocks) as u64;
            let r = if *name == "cdna3-fp8" {
                reveal_dot::<F8E4M3Fnuz>(*model, n, seed)
            } else if fp8 {
                reveal_dot::<F8E4M3>(*model, n, seed)
            } else if name.ends_with("-tf32") || name.ends_with("-xf32") {
                reveal_dot::<Tf32>(*model, n, seed)
            } else {
                reveal_dot::<f16>(*model, n, seed)
            };
            let r = r.unwrap_or_else(|e| panic!("seed {seed}: {name} n = {n}: {e}"));
            check_published(name, *model, n, seed, r);
        }
    }
}

#[test]
fn fp8_gemm_dots_reveal_with_fast_and_chunked_accumulation() {
    for (model, n) in [
        (BlockFma::ADA_FP8, 64),
        (BlockFma::H100_FP8, 256),
        (BlockFma::H100_FP8_SLOW, 512),
    ] {
        let seed = 0x7C1_0000 + n as u64;
        let r = reveal_dot::<F8E5M2>(model, n, seed)
            .unwrap_or_else(|e| panic!("seed {seed}: {model:?} n = {n}: {e}"));
        check_published("fp8 gemm", model, n, seed, r);
    }
}

#[test]
fn a_product_aligned_model_is_not_fitted_as_an_operand_aligned_one() {
    // the textbook rule on the same preset: still revealed, and named for what it is
    let model = BlockFma {
        alignment: Alignment::ProductExponent,
        min_exp: None,
        ..BlockFma::A100
    };
    let r = reveal_dot::<bf16>(model, 32, 0x7C2).unwrap();
    assert_eq!(r.tree, model.tree(32));
    let fit = r.verification.fused.expect("fitted");
    assert_eq!(fit.alignment, Alignment::ProductExponent, "{fit:?}");
    assert!((fit.frac..=fit.frac_max).contains(&model.frac), "{fit:?}");
}

/// A dot of f16 or bf16 operands (drawn from `r`) through `model`.
fn random_16bit_dot(
    model: BlockFma,
    n: usize,
    seed: u64,
    r: &mut impl Rng,
) -> Result<RevealReport, RevealError> {
    if r.random_bool(0.5) {
        reveal_dot::<f16>(model, n, seed)
    } else {
        reveal_dot::<bf16>(model, n, seed)
    }
}

/// The refusals a unit outside the fitted family may get: never another tree.
fn fused_refusal(e: &RevealError) -> bool {
    matches!(
        e,
        RevealError::Indistinguishable { .. }
            | RevealError::FusedUnverified { .. }
            | RevealError::NotPlainSummation { .. }
    )
}

/// Random published-family models over random formats and lengths: the model's tree or
/// a typed refusal, never a different tree; most must reveal.
#[test]
fn random_operand_aligned_models_reveal_their_tree_or_refuse() {
    let total = cases(12);
    let mut revealed = 0;
    for case in 0..total {
        let seed = 0x7C3_0000 + u64::from(case);
        let mut r = rng(seed);
        let nfma = [4usize, 8, 16, 32][r.random_range(0..4)];
        let fp8 = r.random_bool(0.5);
        let model = BlockFma {
            nfma,
            frac: if fp8 {
                r.random_range(12..=16)
            } else {
                r.random_range(23..=27)
            },
            frac_out: if r.random_bool(0.7) {
                Some(if fp8 { 13 } else { 23 })
            } else {
                None
            },
            accumulator: if r.random_bool(0.8) {
                AccumulatorJoin::Aligned
            } else {
                AccumulatorJoin::Late
            },
            chunk: r.random_bool(0.2).then_some(nfma * 4),
            alignment: Alignment::OperandExponents,
            min_exp: Some(-126),
            align_rounding: Rounding::TowardZero,
            accumulator_cut: AccumulatorCut::WithProducts,
        };
        // AMD's units: the running value cut in a second stage, toward minus infinity
        // or zero, at widths around CDNA3's
        let model = if model.accumulator == AccumulatorJoin::Late && r.random_bool(0.6) {
            BlockFma {
                accumulator: AccumulatorJoin::Aligned,
                frac_out: None,
                min_exp: None,
                accumulator_cut: AccumulatorCut::TwoStage {
                    block_frac: r.random_range(28..=34),
                    acc_frac: r.random_range(23..=26),
                    rounding: if r.random_bool(0.5) {
                        Rounding::TowardNegative
                    } else {
                        Rounding::TowardZero
                    },
                    halves: nfma >= 4 && r.random_bool(0.3),
                    acc_reach: None,
                },
                ..model
            }
        } else {
            model
        };
        let n = nfma * r.random_range(1..=6usize) + r.random_range(0..3usize);
        // every operand format: the FP8 ones (OCP and AMD's FNUZ), the 16-bit ones, TF32
        let format = r.random_range(0..4usize);
        let (name, got) = if fp8 {
            match format {
                0 => ("e4m3", reveal_dot::<F8E4M3>(model, n, seed)),
                1 => ("e5m2", reveal_dot::<F8E5M2>(model, n, seed)),
                2 => ("e4m3fnuz", reveal_dot::<F8E4M3Fnuz>(model, n, seed)),
                _ => ("e5m2fnuz", reveal_dot::<F8E5M2Fnuz>(model, n, seed)),
            }
        } else {
            match format {
                0 | 1 => ("bf16", reveal_dot::<bf16>(model, n, seed)),
                2 => ("f16", reveal_dot::<f16>(model, n, seed)),
                _ => ("tf32", reveal_dot::<Tf32>(model, n, seed)),
            }
        };
        let context = format!("seed {seed}: {name} {model:?} n = {n}");
        let refusal = |e: &RevealError| {
            matches!(
                e,
                RevealError::Indistinguishable { .. }
                    | RevealError::FusedUnverified { .. }
                    | RevealError::PrecisionTooLow { .. }
                    | RevealError::OrderIndependent { .. }
            )
        };
        if tree_or_refusal(got, &model.tree(n), refusal, &context).is_some() {
            revealed += 1;
        }
    }
    assert!(
        revealed * 10 >= total as usize * 7,
        "only {revealed} of {total} revealed"
    );
}

/// AMD CDNA3's presets against vectors pinned from an independent implementation of
/// MMA-Sim's description (`fprev-cli/tests/python/cdna3_vectors.py`, which answers with
/// `tensor_core_dot.py --c amd`, and `--c amd-fp8` for the FP8 groups on both FNUZ
/// formats): every bit of every answer.
#[test]
fn cdna3_presets_match_pinned_vectors_bit_for_bit() {
    let text = include_str!("data/cdna3_vectors.txt");
    let hex = |s: &str| -> Vec<u32> {
        s.split(',')
            .map(|h| u32::from_str_radix(h, 16).expect("hex bits"))
            .collect()
    };
    let mut checked = 0;
    for (k, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, a, b) = (f[0], hex(f[2]), hex(f[3]));
        let want = u32::from_str_radix(f[4], 16).expect("hex bits");
        if PairwiseGroups::preset(name).is_some() {
            continue; // cdna1_and_cdna2_presets_match_pinned_vectors_bit_for_bit
        }
        let (name, operands) = name.split_once(':').unwrap_or((name, ""));
        let model = BlockFma::preset(name).unwrap_or_else(|| panic!("line {k}: {name}"));
        let fp8 = |v: &[u32]| -> Vec<u8> { v.iter().map(|&x| x as u8).collect() };
        let got: f32 = if operands == "e5m2fnuz" {
            let op = |v: &[u32]| -> Vec<F8E5M2Fnuz> {
                fp8(v).into_iter().map(F8E5M2Fnuz::from_bits).collect()
            };
            model.dot(&op(&a), &op(&b))
        } else if name.ends_with("fp8") {
            let op = |v: &[u32]| -> Vec<F8E4M3Fnuz> {
                fp8(v).into_iter().map(F8E4M3Fnuz::from_bits).collect()
            };
            model.dot(&op(&a), &op(&b))
        } else if name.ends_with("xf32") {
            let op = |v: &[u32]| -> Vec<Tf32> { v.iter().map(|&x| Tf32::from_bits(x)).collect() };
            model.dot(&op(&a), &op(&b))
        } else {
            let op =
                |v: &[u32]| -> Vec<f16> { v.iter().map(|&x| f16::from_bits(x as u16)).collect() };
            model.dot(&op(&a), &op(&b))
        };
        assert_eq!(got.to_bits(), want, "line {}: {line}: got {got:e}", k + 1);
        checked += 1;
    }
    assert!(checked >= 280, "{checked} vectors");
}

/// AMD CDNA1/CDNA2's pairwise groups against vectors pinned from the same independent
/// script (`tensor_core_dot.py --c pairwise`, `--ftz` for CDNA2): every bit of every
/// answer, and on CDNA2 some answers that only the flush of subnormals explains.
#[test]
fn cdna1_and_cdna2_presets_match_pinned_vectors_bit_for_bit() {
    let text = include_str!("data/cdna3_vectors.txt");
    let hex = |s: &str| -> Vec<u16> {
        s.split(',')
            .map(|h| u16::from_str_radix(h, 16).expect("hex bits"))
            .collect()
    };
    let (mut checked, mut flushed) = (0, 0);
    for (k, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(model) = PairwiseGroups::preset(f[0]) else {
            continue;
        };
        let (a, b) = (hex(f[2]), hex(f[3]));
        let want = u32::from_str_radix(f[4], 16).expect("hex bits");
        let unflushed = PairwiseGroups {
            flush_subnormals: false,
            ..model
        };
        let (got, plain): (f32, f32) = if f[0].contains("bf16") {
            let op = |v: &[u16]| -> Vec<bf16> { v.iter().map(|&x| bf16::from_bits(x)).collect() };
            let (a, b) = (op(&a), op(&b));
            (model.dot(&a, &b), unflushed.dot(&a, &b))
        } else {
            let op = |v: &[u16]| -> Vec<f16> { v.iter().map(|&x| f16::from_bits(x)).collect() };
            let (a, b) = (op(&a), op(&b));
            (model.dot(&a, &b), unflushed.dot(&a, &b))
        };
        assert_eq!(got.to_bits(), want, "line {}: {line}: got {got:e}", k + 1);
        checked += 1;
        if got.to_bits() != plain.to_bits() {
            flushed += 1;
        }
    }
    assert!(checked >= 250, "{checked} vectors");
    assert!(flushed >= 10, "only {flushed} vectors show CDNA2's flush");
}

/// CDNA1/CDNA2's pairwise groups through the product target: plain binary trees, so
/// the exact tree comes back with no fused arithmetic, at one instruction's k and
/// chained (CDNA2's flush of subnormals never meets fprev's probes and checks, whose
/// operands are normal).
#[test]
fn cdna1_and_cdna2_pairwise_groups_reveal_their_trees() {
    for &(name, model) in PairwiseGroups::PRESETS {
        for n in [
            model.group,
            2 * model.group,
            4 * model.group,
            4 * model.group + 3,
        ] {
            let r = if name.contains("bf16") {
                Reveal::new(n).run_target(Products::new(|a: &[bf16], b: &[bf16]| -> f32 {
                    model.dot(a, b)
                }))
            } else {
                Reveal::new(n).run_target(Products::new(|a: &[f16], b: &[f16]| -> f32 {
                    model.dot(a, b)
                }))
            }
            .unwrap_or_else(|e| panic!("{name} n = {n}: {e}"));
            assert_eq!(r.tree, model.tree(n), "{name} n = {n}");
            assert!(r.arithmetic().is_none(), "{name} n = {n}: fused arithmetic");
        }
    }
}

#[test]
fn the_two_stage_round_down_cut_is_what_separates_cdna3_from_one_aligned_block() {
    // the first block leaves c = -(1 + 2^-9 + 2^-20); the next block is 256 = 16 x 16,
    // so c is cut 24 bits below 2^8, toward minus infinity: -(1 + 2^-9 + 2^-16); cut
    // with the products (toward zero), it keeps -(1 + 2^-9)
    let model = BlockFma::CDNA3_F16;
    let one_stage = BlockFma {
        accumulator_cut: AccumulatorCut::WithProducts,
        ..model
    };
    let u = 1.0 + 2f64.powi(-10);
    let ops = |v: [f64; 9]| -> Vec<f16> { v.iter().map(|&x| f16::from_f64(x)).collect() };
    let a = ops([-u, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 16.0]);
    let b = ops([u, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 16.0]);
    let down: f32 = model.dot(&a, &b);
    let near: f32 = one_stage.dot(&a, &b);
    assert_eq!(f64::from(down), 255.0 - 2f64.powi(-9) - 2f64.powi(-16));
    assert_eq!(f64::from(near), 255.0 - 2f64.powi(-9));
    // and toward zero the cut goes the other way
    let toward_zero = BlockFma {
        accumulator_cut: AccumulatorCut::TwoStage {
            block_frac: 31,
            acc_frac: 24,
            rounding: Rounding::TowardZero,
            halves: false,
            acc_reach: None,
        },
        ..model
    };
    assert_eq!(
        f64::from(toward_zero.dot::<f16, f32>(&a, &b)),
        255.0 - 2f64.powi(-9)
    );
}

/// The two-stage family (AMD CDNA3's cut of the running value) over random widths,
/// roundings, block sizes, operand formats and lengths: the model's tree with its
/// rounding measured, or a typed refusal, never a different tree.
#[test]
fn random_two_stage_models_reveal_their_tree_or_refuse() {
    let total = cases(10);
    let mut revealed = 0;
    for case in 0..total {
        let seed = 0x7C5_0000 + u64::from(case);
        let mut r = rng(seed);
        let nfma = [4usize, 8, 16][r.random_range(0..3)];
        let rounding = [Rounding::TowardNegative, Rounding::TowardZero][r.random_range(0..2)];
        let model = BlockFma {
            nfma,
            frac: r.random_range(22..=26),
            accumulator_cut: AccumulatorCut::TwoStage {
                block_frac: r.random_range(28..=34),
                acc_frac: r.random_range(22..=26),
                rounding,
                halves: nfma >= 8 && r.random_bool(0.5),
                acc_reach: None,
            },
            ..BlockFma::CDNA3_F16
        };
        let n = nfma * r.random_range(2..=5usize) + r.random_range(0..2usize);
        let got = random_16bit_dot(model, n, seed, &mut r);
        let context = format!("seed {seed}: {model:?} n = {n}");
        if let Some(rep) = tree_or_refusal(got, &model.tree(n), fused_refusal, &context) {
            let fit = rep.verification.fused.expect("fitted");
            // a rounding the answers told apart is the model's
            if let AccumulatorCut::TwoStage { rounding: r, .. } = fit.accumulator_cut {
                assert!(
                    r == rounding || !fit.accumulator_cut_rounding_decided,
                    "{context}: {fit:?}"
                );
            }
            revealed += 1;
        }
    }
    assert!(
        revealed * 10 >= total as usize * 7,
        "only {revealed} of {total} two-stage models revealed"
    );
}

/// One instruction with an f16 result (rounded to nearest, as the published models write
/// f16 outputs): the probes keep every unit, as an exact sum would, and the block comes
/// back as the one node it is, with the widths its answers allow (the preset's within).
/// A plain f16 sum that is order-independent is still refused.
#[test]
fn a_single_block_with_an_f16_result_is_one_node_with_its_arithmetic() {
    for (k, model) in [BlockFma::H100, BlockFma::A100, BlockFma::V100]
        .into_iter()
        .enumerate()
    {
        let model = BlockFma {
            frac_out: None,
            ..model
        };
        let n = model.nfma;
        let seed = 0x7C6_0000 + k as u64;
        let dot = move |a: &[f16], b: &[f16]| -> f16 { model.dot(a, b) };
        let r = Reveal::new(n)
            .seed(seed)
            .run_target(Products::new(dot))
            .unwrap_or_else(|e| panic!("seed {seed}: n = {n}: {e}"));
        assert_eq!(r.tree, model.tree(n), "seed {seed}");
        let fit = r.verification.fused.expect("the block's arithmetic");
        assert!(
            (fit.frac..=fit.frac_max).contains(&model.frac) && fit.frac_out.is_none(),
            "seed {seed}: {fit:?}"
        );
    }
    let exact = |x: &[f16]| -> f16 { fprev::float::exact_sum_rounded(x) };
    let e = Reveal::new(16)
        .run(exact)
        .expect_err("a plain order-independent sum");
    assert!(matches!(e, RevealError::OrderIndependent { .. }), "{e}");
}

/// `got`'s report when it is `expected`'s tree (a different tree fails the test), `None`
/// when it is a refusal `allowed` accepts (printed with `context`); any other error
/// fails the test.
fn tree_or_refusal(
    got: Result<fprev::RevealReport, RevealError>,
    expected: &fprev::SumTree,
    allowed: impl Fn(&RevealError) -> bool,
    context: &str,
) -> Option<fprev::RevealReport> {
    match got {
        Ok(rep) => {
            assert_eq!(rep.tree, *expected, "{context}: a different tree");
            Some(rep)
        }
        Err(e) => {
            assert!(allowed(&e), "{context}: unexpected error {e}");
            eprintln!("{context}: refused: {e}");
            None
        }
    }
}

/// Units whose alignment rounds each term to nearest even or toward minus infinity
/// instead of cutting it toward zero (no published unit does; the family includes them):
/// the fit tries them where no truncating model reproduces the answers, so such a unit
/// comes back with its tree and its rounding measured, or is refused with a typed error,
/// never answered with another tree.
#[test]
fn non_truncating_alignments_are_fitted_with_their_rounding() {
    let total = cases(12);
    let mut revealed = 0;
    let mut told = 0;
    for case in 0..total {
        let seed = 0x7C8_0000 + u64::from(case);
        let mut r = rng(seed);
        let base = [BlockFma::V100, BlockFma::A100, BlockFma::H100][r.random_range(0..3)];
        let rounding = [Rounding::NearestEven, Rounding::TowardNegative][r.random_range(0..2)];
        let model = BlockFma {
            align_rounding: rounding,
            ..base
        };
        let n = model.nfma * r.random_range(1..=4usize);
        let got = random_16bit_dot(model, n, seed, &mut r);
        let context = format!("seed {seed}: {model:?} n = {n}");
        if let Some(rep) = tree_or_refusal(got, &model.tree(n), fused_refusal, &context) {
            let fit = rep.verification.fused.expect("fitted");
            assert!(
                fit.align_rounding == rounding || !fit.align_rounding_decided,
                "{context}: {fit:?}"
            );
            assert!(
                (fit.frac..=fit.frac_max).contains(&model.frac),
                "{context}: {fit:?}"
            );
            told += usize::from(fit.align_rounding_decided);
            revealed += 1;
        }
    }
    println!("{revealed} of {total} revealed, {told} with their rounding told apart");
    assert!(
        revealed * 10 >= total as usize * 7 && told * 2 >= revealed,
        "{revealed} of {total} revealed, {told} with their rounding told apart"
    );
}

/// Split-K: a dot split into slices, each its own chain, the slices added in order in
/// f32. Revealed as the chain restarted every slice, with the slice length measured as
/// the promotion interval.
#[test]
fn split_k_dots_reveal_with_their_slice_length() {
    for (k, (base, n, parts)) in [(BlockFma::H100, 256usize, 4usize), (BlockFma::A100, 96, 3)]
        .into_iter()
        .enumerate()
    {
        let model = base.split_k(n, parts);
        let seed = 0x7C9_0000 + k as u64;
        let r = reveal_dot::<f16>(model, n, seed)
            .unwrap_or_else(|e| panic!("seed {seed}: split-K {parts} n = {n}: {e}"));
        check_published("split-K", model, n, seed, r.clone());
        let s = r
            .verification
            .fused
            .and_then(|f| f.structure)
            .expect("structure");
        let p = s.promotion.expect("a promotion interval");
        assert_eq!(p.value, n / parts, "seed {seed}: {s:?}");
    }
}
