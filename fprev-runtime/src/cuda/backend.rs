//! The GPU backend through cudarc (CUDA 12.8 API, libraries loaded at run time).
//!
//! Every entry point first checks that the library it needs can be loaded (cudarc panics
//! when a dynamically loaded library or symbol is missing) and runs inside
//! `catch_unwind`, so a machine without a driver gets [`CudaError::NoDevice`] and a
//! driver too old for a symbol gets [`CudaError::Driver`], never a panic.
//!
//! This file holds the device and the shared helpers; cuBLAS targets are in
//! `backend_blas.rs`, the NVRTC kernels' targets and the amplifier in `backend_kernels.rs`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cudarc::cublas::result::CublasError;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError};
use cudarc::nvrtc;

use super::{CudaError, DeviceInfo, KERNELS, PRELUDE};
use crate::black_box::{Probe, ProbeBatch};

#[path = "backend_blas.rs"]
mod blas;
#[path = "backend_kernels.rs"]
mod kernels;

pub(crate) use blas::{CublasGemm, CublasGemv};
pub(crate) use kernels::{amplify, scramble_ids, ReductionRunner};

/// At most this many f32 values in one batched input (256 MiB).
const MAX_BATCH_ELEMS: usize = 1 << 26;

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".into()
    }
}

/// Run `f`, turning a cudarc panic (missing library or symbol) into an error.
fn guarded<R>(
    during: &'static str,
    f: impl FnOnce() -> Result<R, CudaError>,
) -> Result<R, CudaError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(CudaError::Driver {
            during,
            message: format!("cudarc panicked: {}", panic_text(p)),
        })
    })
}

/// The error's name (`CUDA_ERROR_NO_DEVICE`): formatting a `DriverError` itself calls
/// back into the driver, which may be the thing that is broken.
fn driver_text(e: DriverError) -> String {
    format!("{:?}", e.0)
}

fn drv(during: &'static str) -> impl Fn(DriverError) -> CudaError {
    move |e| CudaError::Driver {
        during,
        message: driver_text(e),
    }
}

fn bl(during: &'static str) -> impl Fn(CublasError) -> CudaError {
    move |e| CudaError::Blas {
        during,
        message: e.to_string(),
    }
}

/// Whether a dynamically loaded library can be opened (false on any panic too).
fn present(probe: unsafe fn() -> bool) -> bool {
    // SAFETY: the probes only try `dlopen` on the library's candidate names.
    catch_unwind(|| unsafe { probe() }).unwrap_or(false)
}

fn driver_present() -> Result<(), CudaError> {
    if present(cudarc::driver::sys::is_culib_present) {
        Ok(())
    } else {
        Err(CudaError::NoDevice {
            reason: "the NVIDIA driver library (libcuda.so) is not installed or not on the \
                     library path"
                .into(),
        })
    }
}

#[derive(Clone)]
pub(crate) struct DeviceContext(Arc<Inner>);

struct Inner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    kernels: Mutex<Option<Kernels>>,
}

#[derive(Clone)]
struct Kernels {
    tree_partial: CudaFunction,
    tree_final: CudaFunction,
    global_sum: CudaFunction,
    scramble_ids: CudaFunction,
}

impl DeviceContext {
    pub fn count() -> Result<usize, CudaError> {
        driver_present()?;
        // A driver library that cannot even count devices means no usable device.
        let counted = catch_unwind(CudaContext::device_count).map_err(|p| CudaError::NoDevice {
            reason: format!("the driver library is unusable: {}", panic_text(p)),
        })?;
        counted
            .map(|c| c.max(0) as usize)
            .map_err(|e| CudaError::NoDevice {
                reason: format!("the driver could not start: {}", driver_text(e)),
            })
    }

    pub fn open(ordinal: usize) -> Result<DeviceContext, CudaError> {
        let count = DeviceContext::count()?;
        if count == 0 {
            return Err(CudaError::NoDevice {
                reason: "the driver reports no CUDA device".into(),
            });
        }
        if ordinal >= count {
            return Err(CudaError::NoDevice {
                reason: format!("device {ordinal} asked for, {count} present"),
            });
        }
        guarded("opening the device", || {
            let ctx = CudaContext::new(ordinal).map_err(drv("creating the context"))?;
            let stream = ctx.default_stream();
            let name = ctx.name().map_err(drv("reading the device name"))?;
            let (major, minor) = ctx
                .compute_capability()
                .map_err(drv("reading the compute capability"))?;
            Ok(DeviceContext(Arc::new(Inner {
                ctx,
                stream,
                info: DeviceInfo {
                    ordinal,
                    name,
                    compute_capability: (major.max(0) as u32, minor.max(0) as u32),
                },
                kernels: Mutex::new(None),
            })))
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.0.info
    }

    fn stream(&self) -> Arc<CudaStream> {
        self.0.stream.clone()
    }

    /// fprev's kernels, compiled by NVRTC on first use.
    fn kernels(&self) -> Result<Kernels, CudaError> {
        let mut slot = self.0.kernels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let k = guarded("compiling the kernels", || {
            let ptx = compile_kernels()?;
            let module = self.0.ctx.load_module(ptx).map_err(|e| CudaError::Driver {
                during: "loading the kernels",
                message: if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                {
                    format!(
                        "{}: libnvrtc is newer than the driver; use an NVRTC no newer than \
                             the driver's CUDA version",
                        driver_text(e)
                    )
                } else {
                    driver_text(e)
                },
            })?;
            let f = |name| module.load_function(name).map_err(drv("finding a kernel"));
            Ok(Kernels {
                tree_partial: f("fprev_tree_partial")?,
                tree_final: f("fprev_tree_final")?,
                global_sum: f("fprev_global_sum")?,
                scramble_ids: f("fprev_scramble_ids")?,
            })
        })?;
        *slot = Some(k.clone());
        Ok(k)
    }
}

/// [`PRELUDE`] and [`KERNELS`] compiled by NVRTC (no device needed).
fn compile_kernels() -> Result<nvrtc::Ptx, CudaError> {
    if !present(cudarc::nvrtc::sys::is_culib_present) {
        return Err(CudaError::MissingLibrary { library: "nvrtc" });
    }
    guarded("compiling the kernels", || {
        let src = format!("{PRELUDE}\n{KERNELS}");
        let opts = nvrtc::CompileOptions {
            name: Some("fprev_kernels.cu".into()),
            ..Default::default()
        };
        nvrtc::compile_ptx_with_opts(src, opts).map_err(|e| match e {
            nvrtc::CompileError::CompileError { log, .. } => CudaError::Compile {
                log: log.to_string_lossy().into_owned(),
            },
            other => CudaError::Compile {
                log: format!("{other:?}"),
            },
        })
    })
}

/// The PTX of fprev's kernels.
pub(crate) fn kernels_ptx() -> Result<String, CudaError> {
    Ok(compile_kernels()?.to_src())
}

/// Rows of a batched input: probe `k` of `probes` in row `k`, zeros in unused rows.
fn fill_rows(host: &mut [f32], n: usize, batch: &ProbeBatch<'_, f32>, probes: &[Probe]) {
    host.fill(0.0);
    for (r, p) in probes.iter().enumerate() {
        let row = &mut host[r * n..(r + 1) * n];
        row.copy_from_slice(batch.background);
        row[p.plus] = batch.mask;
        row[p.minus] = -batch.mask;
    }
}

fn check_len(want: usize, got: usize) -> Result<(), CudaError> {
    if want == got {
        Ok(())
    } else {
        Err(CudaError::WrongLength { want, got })
    }
}

fn check_shape(what: &str, dims: &[(&str, usize)], elems: usize) -> Result<(), CudaError> {
    for (name, v) in dims {
        if *v == 0 || *v > i32::MAX as usize {
            return Err(CudaError::InvalidConfig(format!(
                "{what}: {name} = {v} must be in 1..=2^31-1"
            )));
        }
    }
    if elems > MAX_BATCH_ELEMS {
        return Err(CudaError::InvalidConfig(format!(
            "{what}: {elems} input values per call exceed {MAX_BATCH_ELEMS}; use fewer rows"
        )));
    }
    Ok(())
}
