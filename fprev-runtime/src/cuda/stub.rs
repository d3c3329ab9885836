//! The GPU backend when fprev is built without the `cuda` feature: the same types, none
//! of which can be constructed, and every entry point returns `NotCompiled`.

use super::{
    CudaError, DeviceInfo, GemmConfig, GemmOperand, GemvConfig, GpuAmplifyConfig, LaunchPlan,
};
use super::{ReductionConfig, Variability};
use crate::black_box::ProbeBatch;

/// Uninhabited: no device can be opened without the feature.
#[derive(Clone)]
pub(crate) enum DeviceContext {}

impl DeviceContext {
    pub fn open(_ordinal: usize) -> Result<DeviceContext, CudaError> {
        Err(CudaError::NotCompiled)
    }
    pub fn count() -> Result<usize, CudaError> {
        Err(CudaError::NotCompiled)
    }
    pub fn info(&self) -> &DeviceInfo {
        match *self {}
    }
}

pub(crate) enum CublasGemm {}

impl CublasGemm {
    pub fn new(
        device: &DeviceContext,
        _config: GemmConfig,
        _op: GemmOperand,
    ) -> Result<CublasGemm, CudaError> {
        match *device {}
    }
    pub fn call(&mut self, _x: &[f32]) -> Result<f32, CudaError> {
        match *self {}
    }
    pub fn call_operands(&mut self, _a: &[f32], _b: &[f32]) -> Result<f32, CudaError> {
        match *self {}
    }
    pub fn probe_batch(
        &mut self,
        _b: &ProbeBatch<'_, f32>,
        _o: &mut [f32],
    ) -> Result<(), CudaError> {
        match *self {}
    }
}

pub(crate) enum CublasGemv {}

impl CublasGemv {
    pub fn new(device: &DeviceContext, _config: GemvConfig) -> Result<CublasGemv, CudaError> {
        match *device {}
    }
    pub fn call(&mut self, _x: &[f32]) -> Result<f32, CudaError> {
        match *self {}
    }
    pub fn probe_batch(
        &mut self,
        _b: &ProbeBatch<'_, f32>,
        _o: &mut [f32],
    ) -> Result<(), CudaError> {
        match *self {}
    }
}

pub(crate) enum ReductionRunner {}

impl ReductionRunner {
    pub fn new(
        device: &DeviceContext,
        _config: ReductionConfig,
    ) -> Result<ReductionRunner, CudaError> {
        match *device {}
    }
    pub fn launches(&self) -> u64 {
        match *self {}
    }
    pub fn call(&mut self, _x: &[f32]) -> Result<f32, CudaError> {
        match *self {}
    }
    pub fn probe_batch(
        &mut self,
        _b: &ProbeBatch<'_, f32>,
        _o: &mut [f32],
    ) -> Result<(), CudaError> {
        match *self {}
    }
}

pub(crate) fn amplify(
    device: &DeviceContext,
    _config: &GpuAmplifyConfig,
) -> Result<Variability, CudaError> {
    match *device {}
}

pub(crate) fn scramble_ids(
    device: &DeviceContext,
    _plan: &LaunchPlan,
    _threads: usize,
) -> Result<Vec<(u32, u32)>, CudaError> {
    match *device {}
}

pub(crate) fn kernels_ptx() -> Result<String, CudaError> {
    Err(CudaError::NotCompiled)
}
