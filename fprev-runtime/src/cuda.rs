//! The GPU backend: reveal cuBLAS, Tensor Core and CUDA-kernel summation orders, and
//! scramble kernel launches to expose atomics' nondeterminism.
//!
//! Everything here exists with and without the `cuda` cargo feature, so code written
//! against it builds everywhere. Without the feature every entry point returns
//! [`CudaError::NotCompiled`]; with it but on a machine without an NVIDIA driver (or
//! without cuBLAS / NVRTC) it returns [`CudaError::NoDevice`] or
//! [`CudaError::MissingLibrary`]. The CUDA libraries are loaded at run time (cudarc,
//! `dynamic-loading`, CUDA 12.8 API), so no CUDA toolkit is needed to build.
//!
//! Targets answer fprev's probes in batches, one probe per output row: a gemm
//! `C = A * ones` with probe `k` in row `k` of `A` reads its answer from `C[k, 0]`.
//!
//! - [`Device::gemm`]: cuBLAS `sgemm` (f32) or `cublasGemmEx` with f16/bf16 operands and
//!   f32 accumulation (Tensor Cores: multiway trees), under a chosen [`MathMode`].
//! - [`Device::gemv`]: cuBLAS `sgemv`, either storage order.
//! - [`Device::reduction`]: fprev's NVRTC kernels, a shared-memory tree reduction
//!   (deterministic; [`ReductionConfig::expected_tree`] is its order) and Defour's
//!   atomicAdd `GlobalSum` (nondeterministic: revealing it fails with
//!   [`RevealError::Nondeterministic`](crate::reveal::RevealError::Nondeterministic) or
//!   [`Inconsistent`](crate::reveal::RevealError::Inconsistent)).
//! - [`Device::amplify`]: run an atomic kernel many times under scrambled launches
//!   ([`PRELUDE`], [`LaunchScramble`]) and count distinct results ([`variability_table`]).
//! - [`kernels_ptx`]: check the CUDA sources with NVRTC alone, no GPU needed.
//!
//! ```
//! use fprev::cuda::{CudaError, Device, GemmConfig};
//! match Device::open(0) {
//!     Ok(dev) => {
//!         let gemm = dev.gemm::<fprev::half::f16>(GemmConfig::new(32))?;
//!         let report = fprev::Reveal::new(32).accept_flat(true).run_target(gemm)?;
//!         println!("{} Tensor Cores: {}", dev.info().name, report.tree);
//!     }
//!     Err(e @ (CudaError::NotCompiled | CudaError::NoDevice { .. })) => println!("skipped: {e}"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod amplifier;
mod blas_config;
mod device;
mod error;
mod gemm_input;
mod launch;
mod math;
mod model;
mod reduction_config;
mod targets;

#[cfg(feature = "cuda")]
#[path = "cuda/backend.rs"]
mod imp;
#[cfg(not(feature = "cuda"))]
#[path = "cuda/stub.rs"]
mod imp;

pub use amplifier::{variability_table, AtomicKernel, GpuAmplifyConfig, Variability};
pub use blas_config::{GemmConfig, GemvConfig, GemvLayout};
pub use device::{device_scramble_ids, Device, DeviceInfo};
pub use error::CudaError;
pub use gemm_input::{GemmInput, GemmOperand};
pub use launch::{device_thread_permutation, LaunchPlan, LaunchScramble, SCRAMBLE_ALGORITHM};
pub use math::{MathMode, TF32};
pub use reduction_config::{ReductionConfig, ReductionKernel};
pub use targets::{GemmTarget, GemvTarget, ReductionTarget};

/// CUDA source of the scrambling prelude: `FPREV_SCRAMBLE_PARAMS`,
/// `FPREV_SCRAMBLE_BEGIN()`, `fprev_block_idx()`, `fprev_thread_idx()`. Prepend it to a
/// kernel's source before NVRTC compiles it; [`LaunchScramble`] fills its parameters.
///
/// For a kernel of your own (1-D grid and blocks of at most 1024 threads):
///
/// ```text
/// extern "C" __global__ void k(const float* x, float* out, unsigned n, FPREV_SCRAMBLE_PARAMS) {
///     FPREV_SCRAMBLE_BEGIN();                       // all threads, before anything else
///     unsigned i = fprev_block_idx() * blockDim.x + fprev_thread_idx();
///     ...
/// }
/// ```
///
/// and per launch, `let plan = scramble.next_launch(blocks)`: upload `plan.block_perm`
/// (u32, one per block) and pass its device pointer, `plan.thread_seed` (u64) and
/// `plan.flags` (u32) as the last three arguments; print `scramble.token(plan.launch)`
/// next to any result that differs, to replay that launch.
pub const PRELUDE: &str = include_str!("cuda/prelude.cuh");

/// CUDA source of fprev's own reduction kernels (compiled after [`PRELUDE`]).
pub const KERNELS: &str = include_str!("cuda/kernels.cu");

/// Whether this build has the GPU backend at all.
///
/// ```
/// assert_eq!(fprev::cuda::compiled(), cfg!(feature = "cuda"));
/// ```
pub fn compiled() -> bool {
    cfg!(feature = "cuda")
}

/// [`PRELUDE`] and [`KERNELS`] compiled to PTX by NVRTC: needs `libnvrtc` but no GPU,
/// so CI can check the CUDA sources on any machine that has the library.
pub fn kernels_ptx() -> Result<String, CudaError> {
    imp::kernels_ptx()
}

#[cfg(test)]
mod tests {
    use super::targets::spreads;
    use super::*;
    use crate::float::{ProbeFloat, ProbeScale};

    #[test]
    fn same_auto_traits_with_and_without_the_feature() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<Device>();
        send_sync::<CudaError>();
        send::<GemmTarget<half::f16>>();
        send::<GemvTarget>();
        send::<ReductionTarget>();
    }

    #[test]
    fn only_long_f16_gemms_spread_their_probes() {
        // f16 holds M and e with room for n units up to 2^13; bf16 and f32 have f32's range
        assert!(!spreads::<half::f16>(8192));
        assert!(spreads::<half::f16>(8193));
        assert!(spreads::<half::f16>(1 << 20));
        assert!(!spreads::<half::bf16>(1 << 20));
        assert!(!spreads::<f32>(1 << 20));
        // a spread probe is exact in the operands and their product, which f32 holds
        let s = ProbeScale::for_formats(half::f16::FORMAT.product(), f32::FORMAT, 1 << 20)
            .expect("the product's range holds a mask");
        for v in [s.mask, -s.mask, s.unit] {
            let (a, b) = crate::black_box::split_product::<half::f16>(v).expect("splits");
            assert_eq!(a.to_f64() * b.to_f64(), v);
        }
    }

    #[test]
    fn configs_validate() {
        assert!(ReductionConfig::new(1000, ReductionKernel::SharedTree)
            .validate()
            .is_ok());
        assert!(ReductionConfig::new(1000, ReductionKernel::SharedTree)
            .threads(100)
            .validate()
            .is_err());
        assert!(ReductionConfig::new(0, ReductionKernel::AtomicAdd)
            .validate()
            .is_err());
    }

    #[test]
    fn table_has_one_line_per_row() {
        let t = variability_table(&[Variability::example(), Variability::example()]);
        assert_eq!(t.lines().count(), 3);
        assert!(t.contains("GlobalSum"));
    }

    #[test]
    fn prelude_declares_what_kernels_use() {
        for name in [
            "FPREV_SCRAMBLE_PARAMS",
            "FPREV_SCRAMBLE_BEGIN",
            "fprev_block_idx",
            "fprev_thread_idx",
        ] {
            assert!(PRELUDE.contains(name), "{name}");
            assert!(KERNELS.contains(name), "{name}");
        }
    }
}
