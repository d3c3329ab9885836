//! The GPU backend when fprev is built without the `cuda` feature: the same types, none
//! of which can be constructed, and every entry point returns `NotCompiled`.

use super::{AmplifyConfig, CudaError, DeviceInfo, GemmConfig, GemvConfig, LaunchPlan, Operand};
use super::{ReductionConfig, Variability};
use crate::target::ProbeBatch;

/// Uninhabited: no device can be opened without the feature.
#[derive(Clone)]
pub(crate) enum Device {}

impl Device {
    pub fn open(_ordinal: usize) -> Result<Device, CudaError> {
        Err(CudaError::NotCompiled)
    }
    pub fn count() -> Result<usize, CudaError> {
        Err(CudaError::NotCompiled)
    }
    pub fn info(&self) -> &DeviceInfo {
        match *self {}
    }
}

pub(crate) enum Gemm {}

impl Gemm {
    pub fn new(device: &Device, _config: GemmConfig, _op: Operand) -> Result<Gemm, CudaError> {
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

pub(crate) enum Gemv {}

impl Gemv {
    pub fn new(device: &Device, _config: GemvConfig) -> Result<Gemv, CudaError> {
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

pub(crate) enum Reduction {}

impl Reduction {
    pub fn new(device: &Device, _config: ReductionConfig) -> Result<Reduction, CudaError> {
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

pub(crate) fn amplify(device: &Device, _config: &AmplifyConfig) -> Result<Variability, CudaError> {
    match *device {}
}

pub(crate) fn scramble_ids(
    device: &Device,
    _plan: &LaunchPlan,
    _threads: usize,
) -> Result<Vec<(u32, u32)>, CudaError> {
    match *device {}
}

pub(crate) fn kernels_ptx() -> Result<String, CudaError> {
    Err(CudaError::NotCompiled)
}
