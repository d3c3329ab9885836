//! The GPU backend through cudarc (CUDA 12.8 API, libraries loaded at run time).
//!
//! Every entry point first checks that the library it needs can be loaded (cudarc panics
//! when a dynamically loaded library or symbol is missing) and runs inside
//! `catch_unwind`, so a machine without a driver gets [`CudaError::NoDevice`] and a
//! driver too old for a symbol gets [`CudaError::Driver`], never a panic.

use std::collections::HashSet;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cudarc::cublas::result::CublasError;
use cudarc::cublas::{result as blas, sys as blas_sys, CudaBlas};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DriverError,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{
    AmplifyConfig, AtomicKernel, CudaError, DeviceInfo, GemmConfig, GemvConfig, GemvLayout,
    LaunchPlan, LaunchScramble, MathMode, Operand, Reduction as Kind, ReductionConfig, Variability,
    KERNELS, PRELUDE,
};
use crate::target::{Probe, ProbeBatch};

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
pub(crate) struct Device(Arc<Inner>);

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

impl Device {
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

    pub fn open(ordinal: usize) -> Result<Device, CudaError> {
        let count = Device::count()?;
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
            Ok(Device(Arc::new(Inner {
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

fn cublas_handle(dev: &Device, math: MathMode) -> Result<CudaBlas, CudaError> {
    if !present(cudarc::cublas::sys::is_culib_present) {
        return Err(CudaError::MissingLibrary { library: "cublas" });
    }
    guarded("creating the cuBLAS handle", || {
        let blas = CudaBlas::new(dev.stream()).map_err(bl("creating the handle"))?;
        let mode = match math {
            MathMode::Default => blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH,
            MathMode::Pedantic => blas_sys::cublasMath_t::CUBLAS_PEDANTIC_MATH,
            MathMode::Tf32 => blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
        };
        // SAFETY: a live handle and a valid mode.
        unsafe { blas_sys::cublasSetMathMode(*blas.handle(), mode) }
            .result()
            .map_err(bl("setting the math mode"))?;
        Ok(blas)
    })
}

/// Device operands: f32, or f16/bf16 as raw bits.
enum Operands {
    F32(CudaSlice<f32>),
    Half(CudaSlice<u16>),
}

fn half_bits(op: Operand, v: f32) -> u16 {
    match op {
        Operand::Bf16 => half::bf16::from_f32(v).to_bits(),
        _ => half::f16::from_f32(v).to_bits(),
    }
}

fn upload(
    stream: &Arc<CudaStream>,
    op: Operand,
    host: &[f32],
    dst: &mut Operands,
) -> Result<(), CudaError> {
    match dst {
        Operands::F32(d) => stream.memcpy_htod(host, d),
        Operands::Half(d) => {
            let bits: Vec<u16> = host.iter().map(|&v| half_bits(op, v)).collect();
            stream.memcpy_htod(&bits, d)
        }
    }
    .map_err(drv("uploading the input"))
}

fn alloc_operands(
    stream: &Arc<CudaStream>,
    op: Operand,
    host: &[f32],
) -> Result<Operands, CudaError> {
    Ok(match op {
        Operand::F32 => Operands::F32(stream.clone_htod(host).map_err(drv("allocating"))?),
        _ => {
            let bits: Vec<u16> = host.iter().map(|&v| half_bits(op, v)).collect();
            Operands::Half(stream.clone_htod(&bits).map_err(drv("allocating"))?)
        }
    })
}

fn ptr_of(ops: &Operands, stream: &CudaStream) -> u64 {
    match ops {
        Operands::F32(d) => d.device_ptr(stream).0,
        Operands::Half(d) => d.device_ptr(stream).0,
    }
}

pub(crate) struct Gemm {
    dev: Device,
    blas: CudaBlas,
    cfg: GemmConfig,
    op: Operand,
    a: Operands,
    b: Operands,
    c: CudaSlice<f32>,
    host: Vec<f32>,
    host_c: Vec<f32>,
}

impl Gemm {
    pub fn new(dev: &Device, cfg: GemmConfig, op: Operand) -> Result<Gemm, CudaError> {
        let (n, rows, cols) = (cfg.n, cfg.rows, cfg.cols);
        check_shape(
            "gemm",
            &[("n", n), ("rows", rows), ("cols", cols)],
            rows.saturating_mul(n),
        )?;
        let blas = cublas_handle(dev, cfg.math)?;
        let stream = dev.stream();
        guarded("allocating the gemm operands", || {
            let host = vec![0.0f32; rows * n];
            Ok(Gemm {
                a: alloc_operands(&stream, op, &host)?,
                b: alloc_operands(&stream, op, &vec![1.0f32; n * cols])?,
                c: stream
                    .alloc_zeros::<f32>(rows * cols)
                    .map_err(drv("allocating C"))?,
                host,
                host_c: vec![0.0; rows],
                dev: dev.clone(),
                blas,
                cfg,
                op,
            })
        })
    }

    /// `C = A * B` on the rows in `self.host`; column 0 of C into `self.host_c`.
    fn run(&mut self) -> Result<(), CudaError> {
        guarded("running the gemm", || {
            let stream = self.dev.stream();
            upload(&stream, self.op, &self.host, &mut self.a)?;
            let (m, n, k) = (
                self.cfg.rows as i32,
                self.cfg.cols as i32,
                self.cfg.n as i32,
            );
            let handle = *self.blas.handle();
            let a = ptr_of(&self.a, &stream);
            let b = ptr_of(&self.b, &stream);
            let (c, _sync_c) = self.c.device_ptr_mut(&stream);
            let (alpha, beta) = (1.0f32, 0.0f32);
            let (t, nt) = (
                blas_sys::cublasOperation_t::CUBLAS_OP_T,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
            );
            // A is stored row-major rows x k, i.e. column-major k x rows: op(A) = A^T.
            // SAFETY: the buffers hold rows*k, k*cols and rows*cols elements of the
            // stated types, on the handle's stream; alpha/beta are host pointers.
            unsafe {
                match self.op {
                    Operand::F32 => blas::sgemm(
                        handle,
                        t,
                        nt,
                        m,
                        n,
                        k,
                        &alpha,
                        a as *const f32,
                        k,
                        b as *const f32,
                        k,
                        &beta,
                        c as *mut f32,
                        m,
                    ),
                    _ => {
                        let ty = match self.op {
                            Operand::Bf16 => blas_sys::cudaDataType_t::CUDA_R_16BF,
                            _ => blas_sys::cudaDataType_t::CUDA_R_16F,
                        };
                        blas::gemm_ex(
                            handle,
                            t,
                            nt,
                            m,
                            n,
                            k,
                            &alpha as *const f32 as *const c_void,
                            a as *const c_void,
                            ty,
                            k,
                            b as *const c_void,
                            ty,
                            k,
                            &beta as *const f32 as *const c_void,
                            c as *mut c_void,
                            blas_sys::cudaDataType_t::CUDA_R_32F,
                            m,
                            blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                            blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                        )
                    }
                }
            }
            .map_err(bl("gemm"))?;
            drop(_sync_c);
            let rows = self.cfg.rows;
            stream
                .memcpy_dtoh(&self.c.slice(0..rows), &mut self.host_c[..rows])
                .map_err(drv("downloading C"))?;
            stream.synchronize().map_err(drv("waiting for the gemm"))
        })
    }

    pub fn call(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        let n = self.cfg.n;
        check_len(n, x.len())?;
        self.host.fill(0.0);
        self.host[..n].copy_from_slice(x);
        self.run()?;
        Ok(self.host_c[0])
    }

    pub fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        check_len(self.cfg.n, batch.background.len())?;
        for (probes, out) in batch
            .probes
            .chunks(self.cfg.rows)
            .zip(out.chunks_mut(self.cfg.rows))
        {
            fill_rows(&mut self.host, self.cfg.n, batch, probes);
            self.run()?;
            out.copy_from_slice(&self.host_c[..probes.len()]);
        }
        Ok(())
    }
}

pub(crate) struct Gemv {
    dev: Device,
    blas: CudaBlas,
    cfg: GemvConfig,
    a: CudaSlice<f32>,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    host: Vec<f32>,
    staged: Vec<f32>,
    host_y: Vec<f32>,
}

impl Gemv {
    pub fn new(dev: &Device, cfg: GemvConfig) -> Result<Gemv, CudaError> {
        let (n, rows) = (cfg.n, cfg.rows);
        check_shape("gemv", &[("n", n), ("rows", rows)], rows.saturating_mul(n))?;
        let blas = cublas_handle(dev, MathMode::Default)?;
        let stream = dev.stream();
        guarded("allocating the gemv operands", || {
            Ok(Gemv {
                a: stream
                    .alloc_zeros::<f32>(rows * n)
                    .map_err(drv("allocating A"))?,
                x: stream
                    .clone_htod(&vec![1.0f32; n])
                    .map_err(drv("allocating x"))?,
                y: stream
                    .alloc_zeros::<f32>(rows)
                    .map_err(drv("allocating y"))?,
                host: vec![0.0; rows * n],
                staged: vec![0.0; rows * n],
                host_y: vec![0.0; rows],
                dev: dev.clone(),
                blas,
                cfg,
            })
        })
    }

    fn run(&mut self) -> Result<(), CudaError> {
        guarded("running the gemv", || {
            let stream = self.dev.stream();
            let (n, rows) = (self.cfg.n, self.cfg.rows);
            let staged: &[f32] = match self.cfg.layout {
                GemvLayout::ColMajor => {
                    for r in 0..rows {
                        for j in 0..n {
                            self.staged[r + j * rows] = self.host[r * n + j];
                        }
                    }
                    &self.staged
                }
                _ => &self.host,
            };
            stream
                .memcpy_htod(staged, &mut self.a)
                .map_err(drv("uploading A"))?;
            let handle = *self.blas.handle();
            let (a, _sa) = self.a.device_ptr(&stream);
            let (x, _sx) = self.x.device_ptr(&stream);
            let (y, sy) = self.y.device_ptr_mut(&stream);
            let (alpha, beta) = (1.0f32, 0.0f32);
            let (trans, m, cols, lda) = match self.cfg.layout {
                GemvLayout::ColMajor => (blas_sys::cublasOperation_t::CUBLAS_OP_N, rows, n, rows),
                _ => (blas_sys::cublasOperation_t::CUBLAS_OP_T, n, rows, n),
            };
            // SAFETY: A holds rows*n, x n and y rows floats, on the handle's stream.
            unsafe {
                blas::sgemv(
                    handle,
                    trans,
                    m as i32,
                    cols as i32,
                    &alpha,
                    a as *const f32,
                    lda as i32,
                    x as *const f32,
                    1,
                    &beta,
                    y as *mut f32,
                    1,
                )
            }
            .map_err(bl("gemv"))?;
            drop(sy);
            stream
                .memcpy_dtoh(&self.y, &mut self.host_y)
                .map_err(drv("downloading y"))?;
            stream.synchronize().map_err(drv("waiting for the gemv"))
        })
    }

    pub fn call(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        let n = self.cfg.n;
        check_len(n, x.len())?;
        self.host.fill(0.0);
        self.host[..n].copy_from_slice(x);
        self.run()?;
        Ok(self.host_y[0])
    }

    pub fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        check_len(self.cfg.n, batch.background.len())?;
        for (probes, out) in batch
            .probes
            .chunks(self.cfg.rows)
            .zip(out.chunks_mut(self.cfg.rows))
        {
            fill_rows(&mut self.host, self.cfg.n, batch, probes);
            self.run()?;
            out.copy_from_slice(&self.host_y[..probes.len()]);
        }
        Ok(())
    }
}

pub(crate) struct Reduction {
    dev: Device,
    k: Kernels,
    cfg: ReductionConfig,
    rows: usize,
    x: CudaSlice<f32>,
    partial: CudaSlice<f32>,
    out: CudaSlice<f32>,
    perm: CudaSlice<u32>,
    host: Vec<f32>,
    host_out: Vec<f32>,
    scramble: Option<LaunchScramble>,
    launches: u64,
}

/// Grid and block of a 1-D launch over `rows` probes.
fn launch_config(blocks: usize, rows: usize, threads: usize, shared: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, rows as u32, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: shared as u32,
    }
}

impl Reduction {
    pub fn new(dev: &Device, cfg: ReductionConfig) -> Result<Reduction, CudaError> {
        let rows = cfg.rows.min((MAX_BATCH_ELEMS / cfg.n).max(1));
        let k = dev.kernels()?;
        let stream = dev.stream();
        guarded("allocating the reduction buffers", || {
            Ok(Reduction {
                x: stream
                    .alloc_zeros::<f32>(rows * cfg.n)
                    .map_err(drv("allocating x"))?,
                partial: stream
                    .alloc_zeros::<f32>(rows * cfg.blocks)
                    .map_err(drv("allocating partials"))?,
                out: stream
                    .alloc_zeros::<f32>(rows)
                    .map_err(drv("allocating out"))?,
                perm: stream
                    .alloc_zeros::<u32>(cfg.blocks)
                    .map_err(drv("allocating the block permutation"))?,
                host: vec![0.0; rows * cfg.n],
                host_out: vec![0.0; rows],
                scramble: cfg.scramble.map(LaunchScramble::new),
                launches: 0,
                dev: dev.clone(),
                k,
                cfg,
                rows,
            })
        })
    }

    pub fn launches(&self) -> u64 {
        self.launches
    }

    /// One launch over the first `used` rows of `self.host`.
    fn run(&mut self, used: usize) -> Result<(), CudaError> {
        guarded("running the reduction", || {
            let stream = self.dev.stream();
            let ReductionConfig {
                n,
                kind,
                threads,
                blocks,
                ..
            } = self.cfg;
            let plan = match &mut self.scramble {
                Some(s) => s.next_launch(blocks),
                None => LaunchPlan::identity(blocks),
            };
            self.launches += 1;
            stream
                .memcpy_htod(&self.host[..used * n], &mut self.x)
                .map_err(drv("uploading x"))?;
            stream
                .memcpy_htod(&plan.block_perm, &mut self.perm)
                .map_err(drv("uploading the block permutation"))?;
            let n32 = n as u32;
            match kind {
                Kind::SharedTree => {
                    let parts = blocks as u32;
                    let mut b = stream.launch_builder(&self.k.tree_partial);
                    b.arg(&self.x)
                        .arg(&n32)
                        .arg(&mut self.partial)
                        .arg(&self.perm)
                        .arg(&plan.thread_seed)
                        .arg(&plan.flags);
                    // SAFETY: argument types and buffer sizes match the kernel.
                    unsafe { b.launch(launch_config(blocks, used, threads, threads * 4)) }
                        .map_err(drv("launching fprev_tree_partial"))?;
                    let mut b = stream.launch_builder(&self.k.tree_final);
                    b.arg(&self.partial).arg(&parts).arg(&mut self.out);
                    // SAFETY: as above.
                    unsafe { b.launch(launch_config(used, 1, threads, threads * 4)) }
                        .map_err(drv("launching fprev_tree_final"))?;
                }
                _ => {
                    stream
                        .memset_zeros(&mut self.out)
                        .map_err(drv("zeroing the result"))?;
                    let (null, bins) = (0u64, 1u32);
                    let mut b = stream.launch_builder(&self.k.global_sum);
                    b.arg(&self.x)
                        .arg(&null)
                        .arg(&n32)
                        .arg(&bins)
                        .arg(&mut self.out)
                        .arg(&self.perm)
                        .arg(&plan.thread_seed)
                        .arg(&plan.flags);
                    // SAFETY: argument types and buffer sizes match the kernel.
                    unsafe { b.launch(launch_config(blocks, used, threads, 0)) }
                        .map_err(drv("launching fprev_global_sum"))?;
                }
            }
            stream
                .memcpy_dtoh(&self.out.slice(0..used), &mut self.host_out[..used])
                .map_err(drv("downloading the sums"))?;
            stream
                .synchronize()
                .map_err(drv("waiting for the reduction"))
        })
    }

    pub fn call(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        let n = self.cfg.n;
        check_len(n, x.len())?;
        self.host[..n].copy_from_slice(x);
        self.run(1)?;
        Ok(self.host_out[0])
    }

    pub fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        let n = self.cfg.n;
        check_len(n, batch.background.len())?;
        for (probes, out) in batch
            .probes
            .chunks(self.rows)
            .zip(out.chunks_mut(self.rows))
        {
            fill_rows(&mut self.host[..probes.len() * n], n, batch, probes);
            self.run(probes.len())?;
            out.copy_from_slice(&self.host_out[..probes.len()]);
        }
        Ok(())
    }
}

pub(crate) fn amplify(dev: &Device, cfg: &AmplifyConfig) -> Result<Variability, CudaError> {
    let bins = match cfg.kernel {
        AtomicKernel::GlobalSum => 1,
        AtomicKernel::Histogram { bins } => bins,
    };
    let check = ReductionConfig::new(cfg.n, Kind::AtomicAdd)
        .threads(cfg.threads)
        .blocks(cfg.blocks);
    check.validate()?;
    if cfg.runs == 0 || bins == 0 || bins > u32::MAX as usize || cfg.n > MAX_BATCH_ELEMS {
        return Err(CudaError::InvalidConfig(format!(
            "amplify needs runs >= 1, 1..2^32 bins and n <= {MAX_BATCH_ELEMS} (runs {}, bins {bins}, n {})",
            cfg.runs, cfg.n
        )));
    }
    // Values spread over 2^-8..2^8 so that the order of the additions shows in the bits.
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let values: Vec<f32> = (0..cfg.n)
        .map(|_| rng.random::<f32>() * 2f32.powi(rng.random_range(-8..=8)))
        .collect();
    let addresses: Vec<u32> = (0..cfg.n)
        .map(|_| rng.random_range(0..bins as u32))
        .collect();
    let k = dev.kernels()?;
    guarded("running the amplifier", || {
        let stream = dev.stream();
        let val = stream
            .clone_htod(&values)
            .map_err(drv("uploading values"))?;
        let adr = stream
            .clone_htod(&addresses)
            .map_err(drv("uploading addresses"))?;
        let mut res = stream
            .alloc_zeros::<f32>(bins)
            .map_err(drv("allocating the result"))?;
        let mut perm = stream
            .alloc_zeros::<u32>(cfg.blocks)
            .map_err(drv("allocating the block permutation"))?;
        let (n32, bins32) = (cfg.n as u32, bins as u32);
        let mut scramble = LaunchScramble::new(cfg.seed);
        let mut host = vec![0.0f32; bins];
        let mut seen: HashSet<Vec<u32>> = HashSet::new();
        let mut lo = vec![f32::INFINITY; bins];
        let mut hi = vec![f32::NEG_INFINITY; bins];
        let mut first: Option<Vec<u32>> = None;
        let mut first_difference = None;
        for run in 0..cfg.runs {
            let plan = if cfg.scrambled {
                scramble.next_launch(cfg.blocks)
            } else {
                LaunchPlan::identity(cfg.blocks)
            };
            stream
                .memcpy_htod(&plan.block_perm, &mut perm)
                .map_err(drv("uploading the block permutation"))?;
            stream
                .memset_zeros(&mut res)
                .map_err(drv("zeroing the result"))?;
            let mut b = stream.launch_builder(&k.global_sum);
            b.arg(&val)
                .arg(&adr)
                .arg(&n32)
                .arg(&bins32)
                .arg(&mut res)
                .arg(&perm)
                .arg(&plan.thread_seed)
                .arg(&plan.flags);
            // SAFETY: argument types and buffer sizes match the kernel; every address
            // is below `bins`.
            unsafe { b.launch(launch_config(cfg.blocks, 1, cfg.threads, 0)) }
                .map_err(drv("launching fprev_global_sum"))?;
            stream
                .memcpy_dtoh(&res, &mut host)
                .map_err(drv("downloading the result"))?;
            stream
                .synchronize()
                .map_err(drv("waiting for the kernel"))?;
            let bits: Vec<u32> = host.iter().map(|v| v.to_bits()).collect();
            for (i, &v) in host.iter().enumerate() {
                lo[i] = lo[i].min(v);
                hi[i] = hi[i].max(v);
            }
            match &first {
                None => first = Some(bits.clone()),
                Some(f) if *f != bits && first_difference.is_none() => {
                    first_difference = Some(if cfg.scrambled {
                        scramble.token(plan.launch)
                    } else {
                        format!("hardware launch {run}")
                    });
                }
                _ => {}
            }
            seen.insert(bits);
        }
        let spread = lo
            .iter()
            .zip(&hi)
            .map(|(l, h)| (*h as f64) - (*l as f64))
            .fold(0.0, f64::max);
        Ok(Variability {
            kernel: cfg.kernel,
            scrambled: cfg.scrambled,
            runs: cfg.runs,
            distinct: seen.len(),
            spread,
            first: first.as_ref().map(|b| f32::from_bits(b[0])).unwrap_or(0.0),
            first_difference,
        })
    })
}

pub(crate) fn scramble_ids(
    dev: &Device,
    plan: &LaunchPlan,
    threads: usize,
) -> Result<Vec<(u32, u32)>, CudaError> {
    let blocks = plan.block_perm.len();
    ReductionConfig::new(blocks.max(1), Kind::SharedTree)
        .threads(threads)
        .blocks(blocks)
        .validate()?;
    let k = dev.kernels()?;
    guarded("running fprev_scramble_ids", || {
        let stream = dev.stream();
        let perm = stream
            .clone_htod(&plan.block_perm)
            .map_err(drv("uploading the block permutation"))?;
        let mut ids = stream
            .alloc_zeros::<u32>(2 * blocks * threads)
            .map_err(drv("allocating ids"))?;
        let mut b = stream.launch_builder(&k.scramble_ids);
        b.arg(&mut ids)
            .arg(&perm)
            .arg(&plan.thread_seed)
            .arg(&plan.flags);
        // SAFETY: ids holds two u32 per thread of the grid.
        unsafe { b.launch(launch_config(blocks, 1, threads, 0)) }
            .map_err(drv("launching fprev_scramble_ids"))?;
        let host = stream.clone_dtoh(&ids).map_err(drv("downloading ids"))?;
        Ok(host.chunks(2).map(|p| (p[0], p[1])).collect())
    })
}
