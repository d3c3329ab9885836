//! The GPU targets: cuBLAS gemm and gemv, and fprev's reduction kernels, answering
//! fprev's probes in batches.

use super::imp;
use super::{
    CudaError, GemmConfig, GemmInput, GemmOperand, GemvConfig, MathMode, ReductionConfig, TF32,
};
use crate::black_box::{OperandSplit, ProbeBatch, Target, TargetError};
use crate::float::{FloatFormat, ProbeFloat, ProbeScale};

fn target_error(e: CudaError) -> TargetError {
    TargetError::new(e.to_string())
}

/// A cuBLAS gemm answering one probe per row of `A` (see [`Device::gemm`](super::Device::gemm)).
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
pub(super) fn spreads<I: GemmInput>(n: usize) -> bool {
    let (operand, acc) = (I::FORMAT, f32::FORMAT);
    I::OPERAND != GemmOperand::F32
        && ProbeScale::for_formats(operand, acc, n).is_none()
        && ProbeScale::for_formats(operand.product(), acc, n).is_some()
}

impl<I: GemmInput> GemmTarget<I> {
    pub(super) fn open(dev: &imp::DeviceContext, config: GemmConfig) -> Result<Self, CudaError> {
        Ok(GemmTarget {
            state: imp::CublasGemm::new(dev, config, I::OPERAND)?,
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

/// A cuBLAS `sgemv` answering one probe per row (see [`Device::gemv`](super::Device::gemv)).
pub struct GemvTarget {
    state: imp::CublasGemv,
    config: GemvConfig,
}

impl GemvTarget {
    pub(super) fn open(dev: &imp::DeviceContext, config: GemvConfig) -> Result<Self, CudaError> {
        Ok(GemvTarget {
            state: imp::CublasGemv::new(dev, config)?,
            config,
        })
    }

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

/// An NVRTC reduction kernel answering one probe per grid row (see [`Device::reduction`](super::Device::reduction)).
pub struct ReductionTarget {
    state: imp::ReductionRunner,
    config: ReductionConfig,
}

impl ReductionTarget {
    pub(super) fn open(
        dev: &imp::DeviceContext,
        config: ReductionConfig,
    ) -> Result<Self, CudaError> {
        config.validate()?;
        Ok(ReductionTarget {
            state: imp::ReductionRunner::new(dev, config)?,
            config,
        })
    }

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
