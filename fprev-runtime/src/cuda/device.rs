//! One CUDA device: what it is, and the targets and runs it opens.

use super::imp;
use super::{
    CudaError, GemmConfig, GemmInput, GemmTarget, GemvConfig, GemvTarget, GpuAmplifyConfig,
    LaunchPlan, ReductionConfig, ReductionTarget, Variability,
};

/// What a [`Device`] is.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Compute capability `(major, minor)`.
    pub compute_capability: (u32, u32),
}

impl DeviceInfo {
    /// The width of the fused adder f16 Tensor Core gemm is measured to use on this
    /// architecture (products plus the accumulator): 5 on V100 (sm_70), 9 on A100
    /// (sm_80), 17 on H100 (sm_90), as the FPRev papers and Fasi et al. (2021) report.
    /// `None` for architectures no one has measured yet: reveal them.
    ///
    /// ```
    /// # use fprev::cuda::DeviceInfo;
    /// # let info = DeviceInfo::example((9, 0));
    /// assert_eq!(info.expected_tensor_core_arity(), Some(17));
    /// ```
    pub fn expected_tensor_core_arity(&self) -> Option<usize> {
        match self.compute_capability {
            (7, 0) => Some(5),
            (8, 0) => Some(9),
            (9, 0) => Some(17),
            _ => None,
        }
    }

    /// An info value for examples and tests.
    #[doc(hidden)]
    pub fn example(compute_capability: (u32, u32)) -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "example".into(),
            compute_capability,
        }
    }
}

/// One CUDA device with its context and stream; cheap to clone.
#[derive(Clone)]
pub struct Device {
    inner: imp::DeviceContext,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("info", self.info()).finish()
    }
}

impl Device {
    /// Open device `ordinal`: [`CudaError::NotCompiled`] without the feature,
    /// [`CudaError::NoDevice`] when no driver or no such device is present. Never panics.
    pub fn open(ordinal: usize) -> Result<Device, CudaError> {
        Ok(Device {
            inner: imp::DeviceContext::open(ordinal)?,
        })
    }

    /// Number of CUDA devices (an error rather than 0 when there is no driver).
    pub fn count() -> Result<usize, CudaError> {
        imp::DeviceContext::count()
    }

    /// Name and compute capability.
    pub fn info(&self) -> &DeviceInfo {
        self.inner.info()
    }

    /// A cuBLAS gemm target: `sgemm` for `f32` inputs, `cublasGemmEx` with f32
    /// accumulation for [`half::f16`] / [`half::bf16`] inputs (Tensor Cores).
    pub fn gemm<I: GemmInput>(&self, config: GemmConfig) -> Result<GemmTarget<I>, CudaError> {
        GemmTarget::open(&self.inner, config)
    }

    /// A cuBLAS `sgemv` target.
    pub fn gemv(&self, config: GemvConfig) -> Result<GemvTarget, CudaError> {
        GemvTarget::open(&self.inner, config)
    }

    /// An NVRTC-compiled reduction kernel target.
    pub fn reduction(&self, config: ReductionConfig) -> Result<ReductionTarget, CudaError> {
        ReductionTarget::open(&self.inner, config)
    }

    /// Run an atomic kernel `config.runs` times on one seeded input and count the
    /// distinct results (the amplifier on the GPU).
    pub fn amplify(&self, config: GpuAmplifyConfig) -> Result<Variability, CudaError> {
        imp::amplify(&self.inner, &config)
    }
}

/// Run the prelude's `fprev_scramble_ids` kernel under `plan` and return, for every
/// hardware `(block, thread)`, the logical `(block, thread)` the device computed: the GPU
/// side of [`LaunchPlan::logical_thread`], for tests.
pub fn device_scramble_ids(
    device: &Device,
    plan: &LaunchPlan,
    threads: usize,
) -> Result<Vec<(u32, u32)>, CudaError> {
    imp::scramble_ids(&device.inner, plan, threads)
}
