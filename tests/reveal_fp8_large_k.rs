//! FP8 GEMM dots beyond one mask's reach: E4M3 products swamp at most 256 units in any
//! tree with an f32 accumulator, so larger k is revealed through a windowed prefix and a
//! proof of the chain it shows (see `fprev-runtime/src/reveal/reach.rs`). The tree must
//! be exact and the fitted arithmetic the published one; seeds print on failure.

mod common;

use common::{reveal_dot, rng};
use fprev::float::{F8E4M3Fnuz, ProbeFloat, F8E4M3};
use fprev::fused::{AccumulatorJoin, Alignment, BlockFma};
use fprev::target::Products;
use fprev::{Reveal, RevealError, RevealReport};
use rand::Rng;

/// The exact tree, 13 fraction bits kept and in the result, blocks of the model's size,
/// the running value aligned with each block, the model's promotion interval.
fn check(name: &str, model: BlockFma, n: usize, seed: u64) -> RevealReport {
    check_in::<F8E4M3>(name, model, n, seed, true)
}

/// With `width_decided` false, the result width need only be consistent: in a long
/// chain with fast accumulation the running value dominates the last block, whose
/// result width then shows only where its sum carries, which some draws of random
/// operands never make happen (k = 706 with 64 inputs, say).
fn check_in<I: ProbeFloat>(
    name: &str,
    model: BlockFma,
    n: usize,
    seed: u64,
    width_decided: bool,
) -> RevealReport {
    let r = reveal_dot::<I>(model, n, seed)
        .unwrap_or_else(|e| panic!("seed {seed}: {name} n = {n}: {e}"));
    assert_eq!(r.tree, model.tree(n), "seed {seed}: {name} n = {n}: tree");
    let fit = r
        .verification
        .fused
        .unwrap_or_else(|| panic!("seed {seed}: {name} n = {n}: no fitted arithmetic"));
    let at = format!("seed {seed}: {name} n = {n}: {fit:?}");
    assert_eq!((fit.frac, fit.frac_max), (13, 13), "{at}");
    // the result width: where few random inputs leave it open (fast accumulation at
    // large k), the fit draws more, up to 64
    if width_decided {
        assert_eq!(fit.frac_out, Some(13), "{at}");
        assert_eq!(fit.frac_out_range, Some((13, 13)), "{at}");
    } else {
        let (lo, hi) = fit
            .frac_out_range
            .unwrap_or_else(|| panic!("{at}: no width"));
        assert!((lo..=hi).contains(&13), "{at}");
    }
    assert_eq!(fit.alignment, Alignment::OperandExponents, "{at}");
    let s = fit
        .structure
        .unwrap_or_else(|| panic!("{at}: no structure"));
    assert_eq!(
        (s.nfma.value, s.nfma.min, s.nfma.max),
        (model.nfma, model.nfma, Some(model.nfma)),
        "{at}"
    );
    assert_eq!(s.accumulator, Some(AccumulatorJoin::Aligned), "{at}");
    match model.chunk {
        Some(c) => {
            let p = s.promotion.unwrap_or_else(|| panic!("{at}: no promotion"));
            assert_eq!((p.value, p.min), (c, c), "{at}");
        }
        None => assert_eq!(s.promotion, None, "{at}"),
    }
    assert!(r.verification.replayed >= 2, "{at}");
    println!(
        "{name} n = {n}: {} probes, {} replays, recognized {:?}",
        r.probes, r.replays, r.recognized
    );
    r
}

#[test]
fn fp8_gemm_dots_beyond_one_masks_reach_reveal_with_their_arithmetic() {
    for n in [512usize, 1024] {
        for (name, model) in [
            ("h100-fp8", BlockFma::H100_FP8),
            ("h100-fp8-slow", BlockFma::H100_FP8_SLOW),
        ] {
            let seed = 0x0F8_0000 + n as u64;
            check(name, model, n, seed);
        }
    }
}

#[test]
fn fp8_gemm_dots_of_k_4096_reveal_with_their_arithmetic() {
    for (name, model) in [
        ("h100-fp8", BlockFma::H100_FP8),
        ("h100-fp8-slow", BlockFma::H100_FP8_SLOW),
    ] {
        check(name, model, 4096, 0x0F8_4096);
    }
}

#[test]
fn random_k_beyond_the_reach_reveal_fast_and_chunked_accumulation() {
    let seed = 0x0F8_7A4D;
    let mut r = rng(seed);
    for case in 0..common::cases(4) {
        let n = r.random_range(257..=2048usize);
        let slow = r.random_bool(0.5);
        let (name, model) = if slow {
            ("h100-fp8-slow", BlockFma::H100_FP8_SLOW)
        } else {
            ("h100-fp8", BlockFma::H100_FP8)
        };
        let case_seed = seed + case as u64;
        check_in::<F8E4M3>(name, model, n, case_seed, slow);
    }
}

#[test]
fn a_tree_no_chain_carries_over_is_refused_naming_what_was_tried() {
    // pairwise f32 sums of E4M3 products: no block-FMA chain in the first 256
    let n = 1024;
    let tree = fprev::SumTree::pairwise(n);
    let dot = move |a: &[F8E4M3], b: &[F8E4M3]| -> f32 {
        let p: Vec<f32> = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x.to_f64() * y.to_f64()) as f32)
            .collect();
        tree.replay(&p)
    };
    let e = Reveal::new(n)
        .seed(3)
        .run_target(Products::new(dot))
        .unwrap_err();
    assert!(
        matches!(e, RevealError::TooLarge { tried: Some(_), .. }),
        "{e}"
    );
    let text = e.to_string();
    assert!(text.contains("first 256 products"), "{text}");
    assert!(!text.contains("--op dot"), "{text}");
}

#[test]
fn a_chain_whose_promotion_lies_beyond_the_prefix_is_refused_not_guessed() {
    // promoted every 512: the first 256 show an unpromoted chain, whose proof over 1024
    // fails at the first promotion
    let model = BlockFma {
        chunk: Some(512),
        ..BlockFma::H100_FP8
    };
    let e = reveal_dot::<F8E4M3>(model, 1024, 5).unwrap_err();
    assert!(
        matches!(e, RevealError::TooLarge { tried: Some(_), .. }),
        "{e}"
    );
    assert!(e.to_string().contains("proof failed"), "{e}");
}

#[test]
fn ada_blocks_and_fnuz_operands_beyond_the_reach_reveal_too() {
    // Ada's 16-product blocks, and AMD's E4M3 FNUZ operands (largest 240, smallest
    // 2^-10: the same 256-unit reach) under Hopper's chains
    check("ada-fp8", BlockFma::ADA_FP8, 1024, 0x0F8_ADA0);
    check_in::<F8E4M3Fnuz>(
        "e4m3fnuz h100-fp8",
        BlockFma::H100_FP8,
        768,
        0x0F8_F002,
        true,
    );
    check_in::<F8E4M3Fnuz>(
        "e4m3fnuz h100-fp8-slow",
        BlockFma::H100_FP8_SLOW,
        768,
        0x0F8_F003,
        true,
    );
}

#[test]
fn op_adapters_reveal_fp8_chains_beyond_the_reach() {
    use fprev::ops::{self, ElementReveal};
    for (model, k) in [
        (BlockFma::H100_FP8_SLOW, 512usize),
        (BlockFma::H100_FP8, 640),
    ] {
        let seed = 0x0F8_0A00 + k as u64;
        let d = ops::dot(k, move |x: &[F8E4M3], y: &[F8E4M3]| -> f32 {
            model.dot(x, y)
        });
        let o = ElementReveal::new()
            .seed(seed)
            .run(d)
            .unwrap_or_else(|e| panic!("seed {seed}: dot {k}: {e}"));
        assert!(o.is_uniform(), "seed {seed}: dot {k}");
        assert_eq!(o.groups[0].tree, model.tree(k), "seed {seed}: dot {k}");
        let (m, n) = (2, 3);
        let g = ops::gemm(m, k, n, move |a: &[F8E4M3], b: &[F8E4M3], c: &mut [f32]| {
            for j in 0..n {
                let col: Vec<F8E4M3> = (0..k).map(|l| b[l * n + j]).collect();
                for i in 0..m {
                    c[i * n + j] = model.dot(&a[i * k..(i + 1) * k], &col);
                }
            }
        });
        let o = ElementReveal::new()
            .seed(seed)
            .run(g)
            .unwrap_or_else(|e| panic!("seed {seed}: gemm {m} x {k} x {n}: {e}"));
        assert!(o.is_uniform(), "seed {seed}: gemm {k}");
        assert_eq!(o.groups[0].tree, model.tree(k), "seed {seed}: gemm {k}");
        let a = o.groups[0]
            .arithmetic
            .unwrap_or_else(|| panic!("seed {seed}: gemm {k}: no arithmetic"));
        assert_eq!(
            (a.frac, a.frac_max),
            (13, 13),
            "seed {seed}: gemm {k}: {a:?}"
        );
        println!("gemm 2 x {k} x 3: {} calls, {} probes", o.calls, o.probes);
    }
}
