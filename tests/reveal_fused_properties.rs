//! Property tests for fused adders: block-FMA chains on every preset and a grid of
//! (nfma, frac, frac_out, aligned/late accumulator, chunk, alignment by the product's or
//! the operands' exponents, exponent clamp, the alignment's rounding, a two-stage cut of
//! the running value) values, random tree shapes whose
//! multi-way nodes are block-FMA nodes, and f16/bf16/FP8 operands of products accumulated
//! in f32. Every case ends in the exact tree or a typed error, never a different tree;
//! most cases must succeed (a run that verified nothing fails). Seeds print on failure.
//! `FPREV_PROPTEST_CASES` and `FPREV_MAX_N` raise the case count and the largest n.

mod common;

use common::{cases, max_n, random_tree, rng, Shape};
use fprev::float::{ProbeFloat, F8E4M3, F8E5M2};
use fprev::fused::{AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, Rounding};
use fprev::half::{bf16, f16};
use fprev::target::{FnTarget, Products};
use fprev::{Reveal, RevealError, RevealReport, SumTree};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A random model of the grid.
fn random_model(r: &mut ChaCha8Rng) -> BlockFma {
    let nfma = [2usize, 3, 4, 8, 16, 32][r.random_range(0..6)];
    let frac = r.random_range(12..=40u32);
    let frac_out = if r.random_bool(0.5) {
        None
    } else {
        Some(r.random_range(13..=23u32))
    };
    let accumulator = if r.random_bool(0.7) {
        AccumulatorJoin::Aligned
    } else {
        AccumulatorJoin::Late
    };
    let chunk = r
        .random_bool(0.25)
        .then(|| nfma * r.random_range(2..=8usize));
    let alignment = if r.random_bool(0.5) {
        Alignment::OperandExponents
    } else {
        Alignment::ProductExponent
    };
    let min_exp = r.random_bool(0.5).then_some(-126);
    // the later parameters from a stream of their own, so that the draws above (and the
    // case's length after them) stay those of the grid before they were added
    let mut r = r.clone();
    r.set_stream(0x2_57A6E);
    // the alignment step's rounding: truncation on every published unit; the others
    // are not fitted, so they must end in a typed refusal or their tree
    let align_rounding = match r.random_range(0..20) {
        0 => Rounding::NearestEven,
        1 => Rounding::TowardNegative,
        _ => Rounding::TowardZero,
    };
    // AMD CDNA3's two-stage cut of the running value, around its widths (within the
    // alignment widths the verification fits it with)
    let two_stage = accumulator == AccumulatorJoin::Aligned && frac <= 30;
    let accumulator_cut = if two_stage && r.random_bool(0.25) {
        AccumulatorCut::TwoStage {
            block_frac: r.random_range(26..=34),
            acc_frac: r.random_range(20..=26),
            rounding: if r.random_bool(0.5) {
                Rounding::TowardNegative
            } else {
                Rounding::TowardZero
            },
            halves: nfma >= 4 && r.random_bool(0.3),
            acc_reach: None,
        }
    } else {
        AccumulatorCut::WithProducts
    };
    BlockFma {
        nfma,
        frac,
        frac_out,
        accumulator,
        chunk,
        alignment,
        min_exp,
        align_rounding,
        accumulator_cut,
    }
}

/// The outcome of one case: the exact tree, or an error of a kind that says why. A
/// different tree passes only where the report says the model's width was not excluded
/// (`excluded_width <= frac`: the format's range cannot separate it, and says so).
fn judge(
    seed: u64,
    what: &str,
    truth: &SumTree,
    got: Result<RevealReport, RevealError>,
    frac: u32,
) -> bool {
    match got {
        Ok(r) if r.tree != *truth && r.verification.excluded_width <= frac => {
            eprintln!(
                "seed {seed}: {what}: width {frac} not excluded (excluded below {}): flagged, not silent",
                r.verification.excluded_width
            );
            false
        }
        Ok(r) => {
            let t = r.tree;
            assert_eq!(
                &t,
                truth,
                "seed {seed}: {what}: revealed a different tree\n{}",
                t.diff(truth).map(|d| d.to_string()).unwrap_or_default()
            );
            true
        }
        Err(e) => {
            // typed refusals a fused adder may legitimately cause
            assert!(
                matches!(
                    e,
                    RevealError::Indistinguishable { .. }
                        | RevealError::FusedUnverified { .. }
                        | RevealError::NotPlainSummation { .. }
                        | RevealError::Inconsistent { .. }
                        | RevealError::PrecisionTooLow { .. }
                        | RevealError::OutOfRange { .. }
                        // an adder keeping every unit the narrowest masks can reach
                        | RevealError::OrderIndependent { .. }
                ),
                "seed {seed}: {what}: unexpected error {e}"
            );
            eprintln!("seed {seed}: {what}: refused: {e}");
            false
        }
    }
}

#[test]
fn block_fma_chains_on_a_grid_of_parameters() {
    let total = cases(24);
    let mut revealed = 0;
    for case in 0..total {
        let seed = 0xF05E_0000 + u64::from(case);
        let mut r = rng(seed);
        let model = random_model(&mut r);
        // a few large cases, mostly small ones
        let n = if case % 12 == 11 {
            r.random_range(1024..=max_n(2048).max(1024))
        } else {
            r.random_range(3..=300usize)
        };
        let what = format!("{model:?} n = {n}");
        let got = Reveal::new(n)
            .seed(seed)
            .run_target(FnTarget(|x: &[f32]| model.sum(x)));
        revealed += usize::from(judge(seed, &what, &model.tree(n), got, model.frac));
    }
    assert!(
        revealed * 10 >= total as usize * 7,
        "only {revealed} of {total} chains revealed"
    );
}

#[test]
fn every_preset_reveals_its_chain() {
    for (k, (name, model)) in BlockFma::PRESETS.iter().enumerate() {
        let seed = 0x9E5E + k as u64;
        let n = rng(seed).random_range(40..=400usize);
        let got = Reveal::new(n)
            .seed(seed)
            .run_target(FnTarget(|x: &[f32]| model.sum(x)));
        assert!(
            judge(
                seed,
                &format!("{name} n = {n}"),
                &model.tree(n),
                got,
                model.frac
            ),
            "seed {seed}: preset {name} must reveal"
        );
    }
}

#[test]
fn random_shapes_with_block_fma_nodes() {
    let total = cases(24);
    let mut revealed = 0;
    for case in 0..total {
        let seed = 0x5AFE_0000 + u64::from(case);
        let mut r = rng(seed);
        let n = r.random_range(2..=max_n(512).min(300));
        let shape = if case % 2 == 0 {
            Shape::Multiway
        } else {
            Shape::Mixed
        };
        let truth = random_tree(n, shape, &mut r);
        let model = random_model(&mut r);
        let got = Reveal::new(n)
            .seed(seed)
            .accept_flat(true)
            .run_target(FnTarget(|x: &[f32]| model.sum_tree(&truth, x)));
        revealed += usize::from(judge(
            seed,
            &format!("{model:?} over {shape:?} n = {n}"),
            &truth,
            got,
            model.frac,
        ));
    }
    assert!(
        revealed * 10 >= total as usize * 7,
        "only {revealed} of {total} shapes revealed"
    );
}

fn products_case<I: ProbeFloat>(seed: u64, model: BlockFma, n: usize) -> bool {
    let dot = |a: &[I], b: &[I]| -> f32 { model.dot(a, b) };
    let got = Reveal::new(n).seed(seed).run_target(Products::new(dot));
    judge(
        seed,
        &format!("{} operands, {model:?} n = {n}", I::FORMAT.name),
        &model.tree(n),
        got,
        model.frac,
    )
}

#[test]
fn narrow_operands_accumulated_in_f32() {
    let total = cases(16);
    let mut revealed = 0;
    for case in 0..total {
        let seed = 0x0B8E_0000 + u64::from(case);
        let mut r = rng(seed);
        let model = random_model(&mut r);
        let n = r.random_range(3..=max_n(512).min(256));
        revealed += usize::from(match case % 4 {
            0 => products_case::<f16>(seed, model, n),
            1 => products_case::<bf16>(seed, model, n),
            2 => products_case::<F8E4M3>(seed, model, n),
            _ => products_case::<F8E5M2>(seed, model, n),
        });
    }
    assert!(
        revealed * 10 >= total as usize * 7,
        "only {revealed} of {total} products revealed"
    );
}
