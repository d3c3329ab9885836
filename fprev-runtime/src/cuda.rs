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
//!   [`RevealError::Nondeterministic`](crate::RevealError::Nondeterministic) or
//!   [`Inconsistent`](crate::RevealError::Inconsistent)).
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

mod error;
mod launch;
mod model;

#[cfg(feature = "cuda")]
#[path = "cuda/backend.rs"]
mod imp;
#[cfg(not(feature = "cuda"))]
#[path = "cuda/stub.rs"]
mod imp;

pub use error::CudaError;
pub use launch::{device_thread_permutation, LaunchPlan, LaunchScramble, SCRAMBLE_ALGORITHM};

use crate::float::{FloatFormat, ProbeFloat, ProbeScale};
use crate::target::{OperandSplit, ProbeBatch, Target, TargetError};
use crate::tree::SumTree;

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
        Ok(GemmTarget {
            state: imp::CublasGemm::new(&self.inner, config, I::OPERAND)?,
            config,
            spread: I::OPERAND != GemmOperand::F32
                && config.spread.unwrap_or_else(|| spreads::<I>(config.n)),
            split: OperandSplit::default(),
            a: Vec::new(),
            b: Vec::new(),
            a32: Vec::new(),
            b32: Vec::new(),
        })
    }

    /// A cuBLAS `sgemv` target.
    pub fn gemv(&self, config: GemvConfig) -> Result<GemvTarget, CudaError> {
        Ok(GemvTarget {
            state: imp::CublasGemv::new(&self.inner, config)?,
            config,
        })
    }

    /// An NVRTC-compiled reduction kernel target.
    pub fn reduction(&self, config: ReductionConfig) -> Result<ReductionTarget, CudaError> {
        config.validate()?;
        Ok(ReductionTarget {
            state: imp::ReductionRunner::new(&self.inner, config)?,
            config,
        })
    }

    /// Run an atomic kernel `config.runs` times on one seeded input and count the
    /// distinct results (the amplifier on the GPU).
    pub fn amplify(&self, config: GpuAmplifyConfig) -> Result<Variability, CudaError> {
        imp::amplify(&self.inner, &config)
    }
}

/// The operand format of a cuBLAS gemm, chosen by [`GemmInput`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmOperand {
    /// `f32` (`cublasSgemm`).
    F32,
    /// IEEE half (`cublasGemmEx`, `CUDA_R_16F`).
    F16,
    /// bfloat16 (`cublasGemmEx`, `CUDA_R_16BF`).
    Bf16,
}

/// Element types a gemm target takes as inputs; it always accumulates and answers in f32.
pub trait GemmInput: crate::ProbeFloat + sealed::Sealed {
    /// The cuBLAS operand type.
    const OPERAND: GemmOperand;
}

impl GemmInput for f32 {
    const OPERAND: GemmOperand = GemmOperand::F32;
}
impl GemmInput for half::f16 {
    const OPERAND: GemmOperand = GemmOperand::F16;
}
impl GemmInput for half::bf16 {
    const OPERAND: GemmOperand = GemmOperand::Bf16;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// cuBLAS math mode (`cublasSetMathMode`).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MathMode {
    /// `CUBLAS_DEFAULT_MATH`: Tensor Cores for f16/bf16 operands, none for f32.
    #[default]
    Default,
    /// `CUBLAS_PEDANTIC_MATH`: the prescribed precision throughout, no Tensor Cores.
    Pedantic,
    /// `CUBLAS_TF32_TENSOR_OP_MATH`: f32 operands rounded to TF32 on Tensor Cores; the
    /// target then declares TF32 inputs so probes stay exact.
    Tf32,
}

/// TF32 as a probe input format: f32's range, 11 significant bits.
pub const TF32: FloatFormat = FloatFormat {
    name: "tf32",
    precision: 11,
    min_exp: -126,
    max_exp: 127,
};

/// Shape of a gemm target: `C (rows x cols) = A (rows x n) * ones (n x cols)`; `n` is the
/// reduction length. Defaults: `rows = cols = n` (the papers' `n x n x n` matmul, clamped
/// to `[1, 1024]`), [`MathMode::Default`].
///
/// ```
/// let c = fprev::cuda::GemmConfig::new(32).rows(64).cols(8);
/// assert_eq!((c.n, c.rows, c.cols), (32, 64, 8));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmConfig {
    /// Reduction length `k`.
    pub n: usize,
    /// Rows of `A` and `C`: probes answered per call.
    pub rows: usize,
    /// Columns of `B` and `C`; the answer is read from column 0.
    pub cols: usize,
    /// cuBLAS math mode.
    pub math: MathMode,
    /// Spread each probe over both operands, one probe per call (f16 and bf16 operands
    /// only): `None` (the default) spreads where one operand's range cannot swamp `n`
    /// units; `Some(true)` always, for the widest masks the product's range allows (a
    /// Tensor Core adder keeping more alignment bits than f16's range leaves room for is
    /// then revealed rather than refused as indistinguishable).
    pub spread: Option<bool>,
}

impl GemmConfig {
    /// Defaults for reduction length `n`.
    pub fn new(n: usize) -> GemmConfig {
        let side = n.clamp(1, 1024);
        GemmConfig {
            n,
            rows: side,
            cols: side,
            math: MathMode::Default,
            spread: None,
        }
    }
    /// Spread probes over both operands (see [`GemmConfig::spread`]).
    ///
    /// ```
    /// let c = fprev::cuda::GemmConfig::new(4096).spread_operands(true);
    /// assert_eq!(c.spread, Some(true));
    /// ```
    pub fn spread_operands(mut self, on: bool) -> Self {
        self.spread = Some(on);
        self
    }
    /// Probes per call (rows of `A`).
    pub fn rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
    /// Columns of `B`.
    pub fn cols(mut self, cols: usize) -> Self {
        self.cols = cols;
        self
    }
    /// cuBLAS math mode.
    pub fn math(mut self, math: MathMode) -> Self {
        self.math = math;
        self
    }
}

/// How a gemv target stores its matrix (probe `k` is row `k` either way).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GemvLayout {
    /// Rows contiguous: `cublasSgemv` with `CUBLAS_OP_T` (a dot product per row).
    #[default]
    RowMajor,
    /// Columns contiguous: `cublasSgemv` with `CUBLAS_OP_N` (columns scaled and added).
    ColMajor,
}

/// Shape of a gemv target `y (rows) = A (rows x n) * ones (n)`. Defaults: `rows =
/// min(n, 1024)`, [`GemvLayout::RowMajor`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemvConfig {
    /// Reduction length.
    pub n: usize,
    /// Probes per call.
    pub rows: usize,
    /// Storage of `A`.
    pub layout: GemvLayout,
}

impl GemvConfig {
    /// Defaults for reduction length `n`.
    pub fn new(n: usize) -> GemvConfig {
        GemvConfig {
            n,
            rows: n.clamp(1, 1024),
            layout: GemvLayout::RowMajor,
        }
    }
    /// Probes per call.
    pub fn rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
    /// Storage of `A`.
    pub fn layout(mut self, layout: GemvLayout) -> Self {
        self.layout = layout;
        self
    }
}

/// Which reduction kernel a [`ReductionTarget`] runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReductionKernel {
    /// Grid-stride partial sums, a shared-memory halving tree per block, then one block
    /// folding the partials the same way: deterministic, even under scrambling.
    SharedTree,
    /// Defour's `GlobalSum`: every element `atomicAdd`-ed into one result, in whatever
    /// order the hardware serves the atomics: nondeterministic, and fprev says so.
    AtomicAdd,
}

/// A reduction kernel launch. Defaults: 256 threads per block, enough blocks for four
/// elements per thread (at most 1024), 64 probes per launch, no scrambling.
///
/// ```
/// use fprev::cuda::{ReductionKernel, ReductionConfig};
/// let c = ReductionConfig::new(4096, ReductionKernel::SharedTree).threads(128).scramble(Some(7));
/// assert_eq!((c.blocks, c.threads, c.scramble), (8, 128, Some(7)));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReductionConfig {
    /// Elements per sum.
    pub n: usize,
    /// The kernel.
    pub kind: ReductionKernel,
    /// Threads per block: a power of two, at most 1024.
    pub threads: usize,
    /// Blocks per probe (grid x dimension).
    pub blocks: usize,
    /// Probes answered per launch (grid y dimension).
    pub rows: usize,
    /// Scramble block and thread ids from this seed, a new permutation every launch.
    pub scramble: Option<u64>,
}

impl ReductionConfig {
    /// Defaults for `n` elements.
    pub fn new(n: usize, kind: ReductionKernel) -> ReductionConfig {
        ReductionConfig {
            n,
            kind,
            threads: 256,
            blocks: default_blocks(n, 256),
            rows: 64,
            scramble: None,
        }
    }
    /// Threads per block (recomputes the default block count).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self.blocks = default_blocks(self.n, threads);
        self
    }
    /// Blocks per probe.
    pub fn blocks(mut self, blocks: usize) -> Self {
        self.blocks = blocks;
        self
    }
    /// Probes per launch.
    pub fn rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
    /// Scrambled launches from `seed` (`None`: hardware ids).
    pub fn scramble(mut self, seed: Option<u64>) -> Self {
        self.scramble = seed;
        self
    }

    /// The summation tree the [`ReductionKernel::SharedTree`] kernels compute for this
    /// configuration, scrambled or not (a GPU must reveal exactly this); `None` for
    /// [`ReductionKernel::AtomicAdd`], which has no single order, or an invalid configuration.
    ///
    /// ```
    /// use fprev::cuda::{ReductionKernel, ReductionConfig};
    /// let cfg = ReductionConfig::new(8, ReductionKernel::SharedTree).threads(2).blocks(2);
    /// // Thread t of block b sums b*2 + t and b*2 + t + 4; each block halves; the two
    /// // partials are added last.
    /// let tree = cfg.expected_tree().unwrap();
    /// assert_eq!(tree.to_string(), "(((0+4)+(1+5))+((2+6)+(3+7)))");
    /// ```
    pub fn expected_tree(&self) -> Option<SumTree> {
        if self.kind != ReductionKernel::SharedTree || self.validate().is_err() {
            return None;
        }
        model::shared_tree(self)
    }

    /// Why this configuration cannot launch, if it cannot.
    pub(crate) fn validate(&self) -> Result<(), CudaError> {
        let bad = |what: String| Err(CudaError::InvalidConfig(what));
        if self.n == 0 || self.n > u32::MAX as usize {
            return bad(format!("n = {} must be in 1..=2^32-1", self.n));
        }
        if !self.threads.is_power_of_two() || self.threads > 1024 {
            return bad(format!(
                "threads = {} must be a power of two at most 1024",
                self.threads
            ));
        }
        if self.blocks == 0 || self.blocks > i32::MAX as usize {
            return bad(format!("blocks = {} must be in 1..=2^31-1", self.blocks));
        }
        if self.rows == 0 || self.rows > 65535 {
            return bad(format!("rows = {} must be in 1..=65535", self.rows));
        }
        Ok(())
    }
}

fn default_blocks(n: usize, threads: usize) -> usize {
    n.div_ceil(threads.max(1) * 4).clamp(1, 1024)
}

/// Which atomic kernel [`Device::amplify`] runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicKernel {
    /// All elements into one result.
    GlobalSum,
    /// Elements into `bins` results by a seeded random address (a weighted histogram).
    Histogram {
        /// Number of bins.
        bins: usize,
    },
}

/// An amplifier run on the GPU. Defaults: 2^20 elements, 256 threads, 1024 blocks,
/// 100 runs, seed 0, scrambled.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuAmplifyConfig {
    /// The kernel.
    pub kernel: AtomicKernel,
    /// Elements.
    pub n: usize,
    /// Threads per block.
    pub threads: usize,
    /// Blocks.
    pub blocks: usize,
    /// Launches.
    pub runs: u64,
    /// Seed of the input data and of the scrambling.
    pub seed: u64,
    /// Scramble block and thread ids (otherwise only the hardware varies the order).
    pub scrambled: bool,
}

impl GpuAmplifyConfig {
    /// Defaults for `kernel`.
    pub fn new(kernel: AtomicKernel) -> GpuAmplifyConfig {
        GpuAmplifyConfig {
            kernel,
            n: 1 << 20,
            threads: 256,
            blocks: 1024,
            runs: 100,
            seed: 0,
            scrambled: true,
        }
    }
    /// Elements.
    pub fn n(mut self, n: usize) -> Self {
        self.n = n;
        self
    }
    /// Launches.
    pub fn runs(mut self, runs: u64) -> Self {
        self.runs = runs;
        self
    }
    /// Seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Scrambled launches or hardware ids.
    pub fn scrambled(mut self, on: bool) -> Self {
        self.scrambled = on;
        self
    }
}

/// What an amplifier run saw: how many distinct results `runs` launches gave.
///
/// ```
/// let v = fprev::cuda::Variability::example();
/// println!("{}", fprev::cuda::variability_table(&[v]));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct Variability {
    /// The kernel.
    pub kernel: AtomicKernel,
    /// Whether launches were scrambled.
    pub scrambled: bool,
    /// Launches.
    pub runs: u64,
    /// Distinct output bit patterns (whole result vector).
    pub distinct: usize,
    /// Largest `max - min` over runs, over all outputs.
    pub spread: f64,
    /// Result of the first run, output 0.
    pub first: f32,
    /// Replay token of the first launch that differed from the first run, if any.
    pub first_difference: Option<String>,
}

impl Variability {
    #[doc(hidden)]
    pub fn example() -> Variability {
        Variability {
            kernel: AtomicKernel::GlobalSum,
            scrambled: true,
            runs: 100,
            distinct: 37,
            spread: 0.0625,
            first: 524_288.5,
            first_difference: Some(format!("{SCRAMBLE_ALGORITHM}:0:1")),
        }
    }
}

/// The variability rows as an aligned text table.
pub fn variability_table(rows: &[Variability]) -> String {
    let mut s = format!(
        "{:<18} {:<10} {:>6} {:>9} {:>12}  {}\n",
        "kernel", "launches", "runs", "distinct", "spread", "first difference"
    );
    for v in rows {
        let kernel = match v.kernel {
            AtomicKernel::GlobalSum => "GlobalSum".to_string(),
            AtomicKernel::Histogram { bins } => format!("Histogram({bins})"),
        };
        s.push_str(&format!(
            "{:<18} {:<10} {:>6} {:>9} {:>12.6e}  {}\n",
            kernel,
            if v.scrambled { "scrambled" } else { "hardware" },
            v.runs,
            v.distinct,
            v.spread,
            v.first_difference.as_deref().unwrap_or("-")
        ));
    }
    s
}

fn target_error(e: CudaError) -> TargetError {
    TargetError::new(e.to_string())
}

/// A cuBLAS gemm answering one probe per row of `A` (see [`Device::gemm`]).
///
/// Where the operand format alone cannot hold a mask that swamps a sum of `n` units
/// (f16 past `n = 8192`: its range is 40 binades), masks and units are spread over both
/// operands as the CPU adapters do ([`crate::ops::Batched::spreads_operands`]): row 0 of
/// `A` and column 0 of `B` carry one probe's factors, one probe per call, and the
/// engine's replay checks draw both operands at random.
pub struct GemmTarget<I: GemmInput> {
    state: imp::CublasGemm,
    config: GemmConfig,
    spread: bool,
    split: OperandSplit<I>,
    a: Vec<I>,
    b: Vec<I>,
    a32: Vec<f32>,
    b32: Vec<f32>,
}

/// Whether a gemm of `I` operands reducing `n` products spreads its probes over both
/// operands: no mask fits one operand's range, one fits the product's.
fn spreads<I: GemmInput>(n: usize) -> bool {
    let (operand, acc) = (I::FORMAT, f32::FORMAT);
    I::OPERAND != GemmOperand::F32
        && ProbeScale::for_formats(operand, acc, n).is_none()
        && ProbeScale::for_formats(operand.product(), acc, n).is_some()
}

impl<I: GemmInput> GemmTarget<I> {
    /// The shape and math mode.
    pub fn config(&self) -> &GemmConfig {
        &self.config
    }

    /// Whether probes are spread over both operands, one probe per call (f16 operands
    /// past `n = 8192`, or as [`GemmConfig::spread_operands`] says); otherwise `A`'s rows
    /// carry one probe each and `B` is all ones.
    ///
    /// ```
    /// use fprev::cuda::{Device, GemmConfig};
    /// if let Ok(dev) = Device::open(0) {
    ///     let long = dev.gemm::<fprev::half::f16>(GemmConfig::new(1 << 14))?;
    ///     assert!(long.spreads_operands());
    ///     let short = dev.gemm::<fprev::half::f16>(GemmConfig::new(64))?;
    ///     assert!(!short.spreads_operands());
    /// }
    /// # Ok::<(), fprev::cuda::CudaError>(())
    /// ```
    pub fn spreads_operands(&self) -> bool {
        self.spread
    }

    /// One call with the operands `x` splits into, the answer from `C[0][0]`.
    fn call_spread(&mut self, x: &[f32]) -> Result<f32, TargetError> {
        self.split.operands(x, &mut self.a, &mut self.b)?;
        // the operands as the f32 values the backend uploads (exact: I is narrower)
        self.a32.clear();
        self.a32.extend(self.a.iter().map(|v| v.to_f64() as f32));
        self.b32.clear();
        self.b32.extend(self.b.iter().map(|v| v.to_f64() as f32));
        self.state
            .call_operands(&self.a32, &self.b32)
            .map_err(target_error)
    }
}

impl<I: GemmInput> Target<f32> for GemmTarget<I> {
    fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
        if self.spread {
            return self.call_spread(x);
        }
        self.state.call(x).map_err(target_error)
    }
    fn input_format(&self) -> Option<FloatFormat> {
        match (I::OPERAND, self.config.math) {
            _ if self.spread => Some(I::FORMAT.product()),
            (GemmOperand::F32, MathMode::Tf32) => Some(TF32),
            (GemmOperand::F32, _) => None,
            _ => Some(I::FORMAT),
        }
    }
    fn replay_format(&self) -> Option<FloatFormat> {
        self.spread.then_some(I::FORMAT)
    }
    fn random_input(&mut self, seed: u64, x: &mut [f32]) -> bool {
        self.spread && self.split.random_input(seed, x)
    }
    fn operand_exponents(&self, x: &[f32]) -> Option<Vec<i32>> {
        self.split.operand_exponents(x)
    }
    fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), TargetError> {
        if self.spread {
            let mut x = Vec::new();
            for (k, &p) in batch.probes.iter().enumerate() {
                batch.fill(k, &mut x);
                out[k] = self.call_spread(&x).map_err(|mut e| {
                    e.probe.get_or_insert(p);
                    e
                })?;
            }
            return Ok(());
        }
        self.state.probe_batch(batch, out).map_err(target_error)
    }
}

/// A cuBLAS `sgemv` answering one probe per row (see [`Device::gemv`]).
pub struct GemvTarget {
    state: imp::CublasGemv,
    config: GemvConfig,
}

impl GemvTarget {
    /// The shape.
    pub fn config(&self) -> &GemvConfig {
        &self.config
    }
}

impl Target<f32> for GemvTarget {
    fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
        self.state.call(x).map_err(target_error)
    }
    fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), TargetError> {
        self.state.probe_batch(batch, out).map_err(target_error)
    }
}

/// An NVRTC reduction kernel answering one probe per grid row (see [`Device::reduction`]).
pub struct ReductionTarget {
    state: imp::ReductionRunner,
    config: ReductionConfig,
}

impl ReductionTarget {
    /// The launch configuration.
    pub fn config(&self) -> &ReductionConfig {
        &self.config
    }

    /// Launches made so far (the scramble counter of the next one).
    pub fn launches(&self) -> u64 {
        self.state.launches()
    }
}

impl Target<f32> for ReductionTarget {
    fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
        self.state.call(x).map_err(target_error)
    }
    fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), TargetError> {
        self.state.probe_batch(batch, out).map_err(target_error)
    }
}

/// [`PRELUDE`] and [`KERNELS`] compiled to PTX by NVRTC: needs `libnvrtc` but no GPU,
/// so CI can check the CUDA sources on any machine that has the library.
pub fn kernels_ptx() -> Result<String, CudaError> {
    imp::kernels_ptx()
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let (a, b) = crate::target::split_product::<half::f16>(v).expect("splits");
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
