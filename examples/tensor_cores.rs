//! GPUs without a GPU: every block-FMA preset of `fprev::fused` revealed at n = 32 and
//! n = 256 through the ordinary engine, with the calls and time each took, the block-FMA
//! model the verification fitted, and pictures of the distinct n = 32 trees (for
//! docs/tensor-cores.md), plus the FP8 dot recipe through `fprev::target::Products` and
//! the AMD CDNA1/CDNA2 pairwise-group presets as dot products.
//!
//! ```text
//! cargo run --release --example tensor_cores            # table; pictures into docs/
//! cargo run --release --example tensor_cores -- out/    # pictures into another folder
//! ```

use std::time::Instant;

use fprev::float::F8E4M3;
use fprev::fused::{BlockFma, PairwiseGroups};
use fprev::half::{bf16, f16};
use fprev::picture::Picture;
use fprev::target::{FnTarget, Products};
use fprev::{Reveal, RevealReport};

fn row(name: &str, n: usize, r: &RevealReport, secs: f64) {
    let fit = r
        .verification
        .fused
        .map(|f| {
            let out = f.frac_out.map_or("RN".to_string(), |k| format!("{k}"));
            format!("frac {} / out {out}", f.frac)
        })
        .unwrap_or_else(|| "plain".into());
    println!(
        "| {name} | {n} | {} | {} | {:.1} | {} | {} |",
        r.probes,
        r.replays,
        secs * 1e3,
        fit,
        r.tree.describe()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "docs".into()));
    std::fs::create_dir_all(&dir)?;
    println!("| preset | n | probes | other calls | ms | fitted model | tree |");
    println!("|---|---|---|---|---|---|---|");
    for (name, model) in BlockFma::PRESETS {
        for n in [32usize, 256] {
            let start = Instant::now();
            let r = Reveal::new(n).run_target(FnTarget(|x: &[f32]| model.sum(x)))?;
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(r.tree, model.tree(n), "{name} n = {n}");
            row(name, n, &r, secs);
            // one picture per distinct tree at n = 32 (ada-fp8 draws as h100, the slow
            // FP8 path as the fast one until n passes its 128-product chunks, the TF32
            // and CDNA3 presets as v100, a100 and h100, b200-fp8 as h100-fp8, whose block sizes
            // they share)
            let same_shape = [
                "ada-fp8",
                "h100-fp8-slow",
                "a100-tf32",
                "h100-tf32",
                "b200-tf32",
                "cdna3-f16",
                "cdna3-xf32",
                "cdna3-fp8",
                "b200-fp8",
            ];
            if n == 32 && !same_shape.contains(name) {
                let svg = Picture::new()
                    .title(format!("fprev::fused::BlockFma {name}, n = {n}"))
                    .render(&r.tree);
                std::fs::write(dir.join(format!("tensor_core_{name}_{n}.svg")), svg)?;
            }
        }
    }
    // the FP8 recipe: masks and units spread over both operands of the products
    let model = BlockFma::H100_FP8;
    for n in [32usize, 256] {
        let start = Instant::now();
        let dot = |a: &[F8E4M3], b: &[F8E4M3]| -> f32 { model.dot(a, b) };
        let r = Reveal::new(n).run_target(Products::new(dot))?;
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(r.tree, model.tree(n));
        row("h100-fp8, E4M3 dot", n, &r, secs);
    }
    // AMD CDNA1/CDNA2: binary trees of f32 additions over f16 or bf16 products
    for (name, model) in PairwiseGroups::PRESETS {
        for n in [32usize, 256] {
            let start = Instant::now();
            let r = if name.contains("bf16") {
                let dot = |a: &[bf16], b: &[bf16]| -> f32 { model.dot(a, b) };
                Reveal::new(n).run_target(Products::new(dot))?
            } else {
                let dot = |a: &[f16], b: &[f16]| -> f32 { model.dot(a, b) };
                Reveal::new(n).run_target(Products::new(dot))?
            };
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(r.tree, model.tree(n), "{name} n = {n}");
            row(&format!("{name} dot"), n, &r, secs);
        }
    }
    Ok(())
}
