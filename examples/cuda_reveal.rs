//! Reveal what an NVIDIA GPU does when it sums: the f32 cuBLAS gemm order, the multiway
//! trees of f16/bf16 Tensor Core gemm, and how many different results an atomicAdd
//! kernel gives under scrambled launches.
//!
//! `cargo run --release --features cuda --example cuda_reveal [n...]` (default n = 32 256).
//! Without the feature or without a GPU it says so and exits cleanly (with
//! `FPREV_CUDA_REQUIRED=1`, it fails instead).

use fprev::cuda::{self, AtomicKernel, Device, GemmConfig, GpuAmplifyConfig, MathMode};
use fprev::half::{bf16, f16};
use fprev::{Reveal, RevealReport, Target};

fn reveal(n: usize, target: impl Target<f32>) -> Result<RevealReport, fprev::RevealError> {
    Reveal::new(n).accept_flat(true).run_target(target)
}

fn show(label: &str, r: Result<RevealReport, fprev::RevealError>) {
    match r {
        Ok(r) => {
            let s = r.tree.stats();
            println!(
                "{label}: max arity {}, depth {}, {} probes\n  {}",
                s.max_arity, s.depth, r.probes, r.tree
            );
        }
        Err(e) => println!("{label}: {e}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![32, 256]
    } else {
        sizes
    };
    let dev = match Device::open(0) {
        Ok(d) => d,
        Err(e) => {
            let required =
                std::env::var("FPREV_CUDA_REQUIRED").is_ok_and(|v| !v.is_empty() && v != "0");
            if required {
                return Err(format!("cuda_reveal: FPREV_CUDA_REQUIRED is set, but {e}").into());
            }
            println!("cuda_reveal: nothing to reveal here: {e}");
            return Ok(());
        }
    };
    let info = dev.info();
    println!(
        "{} (compute capability {}.{}); f16 Tensor Core fused width expected: {}",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.expected_tensor_core_arity()
            .map_or("unknown".to_string(), |k| k.to_string())
    );
    for &n in &sizes {
        let pedantic = GemmConfig::new(n).math(MathMode::Pedantic);
        show(
            &format!("f32 sgemm n={n}"),
            reveal(n, dev.gemm::<f32>(pedantic)?),
        );
        show(
            &format!("f16 gemmEx (Tensor Cores) n={n}"),
            reveal(n, dev.gemm::<f16>(GemmConfig::new(n))?),
        );
        show(
            &format!("bf16 gemmEx (Tensor Cores) n={n}"),
            reveal(n, dev.gemm::<bf16>(GemmConfig::new(n))?),
        );
    }
    let mut rows = Vec::new();
    for kernel in [
        AtomicKernel::GlobalSum,
        AtomicKernel::Histogram { bins: 64 },
    ] {
        for scrambled in [false, true] {
            rows.push(dev.amplify(GpuAmplifyConfig::new(kernel).runs(100).scrambled(scrambled))?);
        }
    }
    println!("\natomicAdd variability (2^20 elements, 1024 x 256 threads, 100 launches):");
    print!("{}", cuda::variability_table(&rows));
    Ok(())
}
