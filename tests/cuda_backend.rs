//! The GPU backend, both ways: without a usable GPU the same calls must fail with the
//! typed errors (`NotCompiled` without the `cuda` feature, `NoDevice` with it); with an
//! NVIDIA GPU the ignored tests reveal real orders.
//!
//! Run: `cargo test --test cuda_backend` (no GPU needed), and on a GPU machine
//! `FPREV_CUDA_REQUIRED=1 cargo test --features cuda --test cuda_backend --
//! --include-ignored --nocapture --test-threads=1` (the trees are printed; a missing
//! device, driver or library fails every test instead of skipping); `scripts/gpu_verify.sh`
//! does that and more in one prepared run.

use std::sync::Mutex;

use fprev::cuda::{
    self, AtomicKernel, CudaError, Device, GemmConfig, GemvConfig, GemvLayout, GpuAmplifyConfig,
    LaunchScramble, MathMode, ReductionConfig, ReductionKernel,
};
use fprev::half::{bf16, f16};
use fprev::{Reveal, RevealError, SumTree};

/// One GPU test at a time: they share the device and print tables.
static GPU: Mutex<()> = Mutex::new(());

/// `FPREV_CUDA_REQUIRED=1` (set by `scripts/gpu_verify.sh` on a GPU machine) turns every
/// skip into a failure: there a missing driver, library or device is the finding.
fn skip(test: &str, why: impl std::fmt::Display) {
    let required = std::env::var("FPREV_CUDA_REQUIRED").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(!required, "{test}: FPREV_CUDA_REQUIRED is set, but {why}");
    println!("SKIPPED {test}: {why}");
}

/// Device 0; the GPU tests are ignored unless asked for, so a missing device fails them.
fn device(test: &str) -> Device {
    match Device::open(0) {
        Ok(d) => d,
        Err(e) => panic!("{test} needs an NVIDIA GPU and `--features cuda`: {e}"),
    }
}

#[test]
fn missing_backend_or_device_is_a_typed_error() {
    assert_eq!(cuda::compiled(), cfg!(feature = "cuda"));
    match (Device::open(0), Device::count()) {
        (Ok(d), Ok(count)) => {
            assert!(count >= 1);
            println!(
                "device 0: {} (compute capability {:?})",
                d.info().name,
                d.info().compute_capability
            );
        }
        (Err(CudaError::NotCompiled), Err(CudaError::NotCompiled)) => {
            assert!(!cuda::compiled());
            skip("GPU checks", "not compiled with cuda");
        }
        (Err(CudaError::NoDevice { reason }), _) => {
            assert!(cuda::compiled());
            assert!(!reason.is_empty());
            skip("GPU checks", format!("no CUDA device ({reason})"));
        }
        (a, b) => panic!("inconsistent answers: open {a:?}, count {b:?}"),
    }
    // A device past the end is never a panic either.
    assert!(Device::open(1 << 20).is_err());
}

#[test]
fn error_messages_say_what_to_do() {
    assert!(CudaError::NotCompiled
        .to_string()
        .contains("--features cuda"));
    let e = CudaError::NoDevice { reason: "x".into() };
    assert!(e.to_string().starts_with("no CUDA device"));
}

#[test]
fn kernels_compile_with_nvrtc() {
    // NVRTC needs no GPU: wherever libnvrtc loads, the CUDA sources are checked.
    match cuda::kernels_ptx() {
        Ok(ptx) => {
            for k in [
                "fprev_tree_partial",
                "fprev_tree_final",
                "fprev_global_sum",
                "fprev_scramble_ids",
            ] {
                assert!(ptx.contains(&format!(".entry {k}")), "{k} missing from PTX");
            }
            println!("NVRTC compiled the kernels: {} bytes of PTX", ptx.len());
        }
        Err(CudaError::NotCompiled) => {
            assert!(!cuda::compiled());
            skip("kernels_compile_with_nvrtc", "not compiled with cuda");
        }
        Err(e @ CudaError::MissingLibrary { .. }) => skip("kernels_compile_with_nvrtc", e),
        Err(e) => panic!("{e}"),
    }
}

fn reveal_tree<X: fprev::Target<f32>>(n: usize, target: X) -> Result<SumTree, RevealError> {
    Ok(Reveal::new(n).accept_flat(true).run_target(target)?.tree)
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn sgemm_order_is_revealed_and_stable() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("sgemm_order_is_revealed_and_stable");
    for n in [32, 256] {
        let cfg = GemmConfig::new(n).math(MathMode::Pedantic);
        let a = reveal_tree(n, dev.gemm::<f32>(cfg).unwrap()).unwrap();
        let b = reveal_tree(n, dev.gemm::<f32>(cfg).unwrap()).unwrap();
        assert_eq!(a, b, "f32 cuBLAS gemm order changed between two targets");
        println!("{} f32 sgemm n={n}: {a}", dev.info().name);
        assert_eq!(a.stats().max_arity, 2, "f32 sgemm should be binary: {a}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn tensor_core_gemm_is_multiway() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("tensor_core_gemm_is_multiway");
    let expected = dev.info().expected_tensor_core_arity();
    for n in [32, 256] {
        let f = reveal_tree(n, dev.gemm::<f16>(GemmConfig::new(n)).unwrap()).unwrap();
        let b = reveal_tree(n, dev.gemm::<bf16>(GemmConfig::new(n)).unwrap()).unwrap();
        let (fs, bs) = (f.stats(), b.stats());
        println!(
            "{} f16 gemm n={n} (max arity {}, expected {expected:?}): {f}",
            dev.info().name,
            fs.max_arity
        );
        println!(
            "{} bf16 gemm n={n} (max arity {}): {b}",
            dev.info().name,
            bs.max_arity
        );
        assert!(
            fs.max_arity > 2,
            "f16 Tensor Core gemm should be multiway: {f}"
        );
        if let Some(k) = expected {
            assert_eq!(fs.max_arity, k, "fused width on {}", dev.info().name);
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn spread_operands_reveal_the_same_tensor_core_tree() {
    // Probes over both operands (one per call) must give the tree that probes in A's
    // rows give, where both work; past n = 8192 only the spread probes fit f16's range.
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("spread_operands_reveal_the_same_tensor_core_tree");
    let n = 256;
    let rows = dev.gemm::<f16>(GemmConfig::new(n)).unwrap();
    assert!(!rows.spreads_operands());
    let spread = dev
        .gemm::<f16>(GemmConfig::new(n).spread_operands(true))
        .unwrap();
    assert!(spread.spreads_operands());
    let by_rows = reveal_tree(n, rows).unwrap();
    let by_spread = reveal_tree(n, spread).unwrap();
    assert_eq!(by_spread, by_rows, "{}", dev.info().name);
    let long = dev
        .gemm::<f16>(GemmConfig::new(1 << 14).rows(1).cols(1))
        .unwrap();
    assert!(long.spreads_operands());
    let t = reveal_tree(1 << 14, long).unwrap();
    println!(
        "{} f16 gemm n=16384 (spread): {}",
        dev.info().name,
        t.describe()
    );
    assert_eq!(t.leaf_count(), 1 << 14);
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn gemv_orders_are_revealed() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("gemv_orders_are_revealed");
    for layout in [GemvLayout::RowMajor, GemvLayout::ColMajor] {
        let n = 128;
        let t = reveal_tree(n, dev.gemv(GemvConfig::new(n).layout(layout)).unwrap()).unwrap();
        println!("{} sgemv {layout:?} n={n}: {t}", dev.info().name);
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn shared_tree_reduction_is_deterministic_even_scrambled() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("shared_tree_reduction_is_deterministic_even_scrambled");
    let n = 4096;
    let cfg = ReductionConfig::new(n, ReductionKernel::SharedTree).threads(64);
    let plain = reveal_tree(n, dev.reduction(cfg).unwrap()).unwrap();
    let scrambled = reveal_tree(n, dev.reduction(cfg.scramble(Some(3))).unwrap()).unwrap();
    assert_eq!(plain, scrambled, "logical ids decide every operand");
    assert_eq!(
        Some(&plain),
        cfg.expected_tree().as_ref(),
        "the kernel's documented order"
    );
    let s = plain.stats();
    println!(
        "shared-tree reduction n={n}: depth {}, {} inner nodes",
        s.depth, s.inner_nodes
    );
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn atomic_reduction_is_reported_nondeterministic() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("atomic_reduction_is_reported_nondeterministic");
    let n = 1 << 14;
    let cfg = ReductionConfig::new(n, ReductionKernel::AtomicAdd).scramble(Some(11));
    match Reveal::new(n).run_target(dev.reduction(cfg).unwrap()) {
        Err(
            e @ (RevealError::Nondeterministic { .. }
            | RevealError::Inconsistent { .. }
            | RevealError::NotPlainSummation { .. }),
        ) => println!("atomicAdd reduction: {e}"),
        other => panic!("an atomicAdd reduction must not reveal one order: {other:?}"),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn prelude_matches_its_host_mirror() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("prelude_matches_its_host_mirror");
    let (blocks, threads) = (16, 128);
    let plan = LaunchScramble::new(9).next_launch(blocks);
    let ids = cuda::device_scramble_ids(&dev, &plan, threads).unwrap();
    for b in 0..blocks {
        for t in 0..threads {
            let want = (plan.block_perm[b], plan.logical_thread(b, t, threads));
            assert_eq!(ids[b * threads + t], want, "hardware block {b} thread {t}");
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU: cargo test --features cuda --test cuda_backend -- --ignored"]
fn scrambled_atomics_vary() {
    let _g = GPU.lock().unwrap_or_else(|p| p.into_inner());
    let dev = device("scrambled_atomics_vary");
    let mut rows = Vec::new();
    for kernel in [
        AtomicKernel::GlobalSum,
        AtomicKernel::Histogram { bins: 64 },
    ] {
        for scrambled in [false, true] {
            let cfg = GpuAmplifyConfig::new(kernel).runs(50).scrambled(scrambled);
            rows.push(dev.amplify(cfg).unwrap());
        }
    }
    println!("{}", cuda::variability_table(&rows));
    let scrambled_sum = &rows[1];
    assert!(
        scrambled_sum.distinct > 1,
        "2^20 scrambled float atomics gave one result in 50 launches"
    );
}
