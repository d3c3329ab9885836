//! cuBLAS targets: gemm (`sgemm`, `cublasGemmEx` with f16/bf16 operands and f32
//! accumulation) and `sgemv`, one probe per row of `A`.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::cublas::{result as blas, sys as blas_sys, CudaBlas};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::{bl, check_len, check_shape, drv, fill_rows, guarded, present, DeviceContext};
use crate::black_box::ProbeBatch;
use crate::cuda::{CudaError, GemmConfig, GemmOperand, GemvConfig, GemvLayout, MathMode};

fn cublas_handle(dev: &DeviceContext, math: MathMode) -> Result<CudaBlas, CudaError> {
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
enum DeviceOperands {
    F32(CudaSlice<f32>),
    Half(CudaSlice<u16>),
}

fn half_bits(op: GemmOperand, v: f32) -> u16 {
    match op {
        GemmOperand::Bf16 => half::bf16::from_f32(v).to_bits(),
        _ => half::f16::from_f32(v).to_bits(),
    }
}

fn upload(
    stream: &Arc<CudaStream>,
    op: GemmOperand,
    host: &[f32],
    dst: &mut DeviceOperands,
) -> Result<(), CudaError> {
    match dst {
        DeviceOperands::F32(d) => stream.memcpy_htod(host, d),
        DeviceOperands::Half(d) => {
            let bits: Vec<u16> = host.iter().map(|&v| half_bits(op, v)).collect();
            stream.memcpy_htod(&bits, d)
        }
    }
    .map_err(drv("uploading the input"))
}

fn alloc_operands(
    stream: &Arc<CudaStream>,
    op: GemmOperand,
    host: &[f32],
) -> Result<DeviceOperands, CudaError> {
    Ok(match op {
        GemmOperand::F32 => {
            DeviceOperands::F32(stream.clone_htod(host).map_err(drv("allocating"))?)
        }
        _ => {
            let bits: Vec<u16> = host.iter().map(|&v| half_bits(op, v)).collect();
            DeviceOperands::Half(stream.clone_htod(&bits).map_err(drv("allocating"))?)
        }
    })
}

fn ptr_of(ops: &DeviceOperands, stream: &CudaStream) -> u64 {
    match ops {
        DeviceOperands::F32(d) => d.device_ptr(stream).0,
        DeviceOperands::Half(d) => d.device_ptr(stream).0,
    }
}

pub(crate) struct CublasGemm {
    dev: DeviceContext,
    blas: CudaBlas,
    cfg: GemmConfig,
    op: GemmOperand,
    a: DeviceOperands,
    b: DeviceOperands,
    c: CudaSlice<f32>,
    host: Vec<f32>,
    host_c: Vec<f32>,
    /// `B` as uploaded last (column-major, `n x cols`): ones, or a probe's second
    /// operand in column 0 when probes are spread over both operands.
    host_b: Vec<f32>,
}

impl CublasGemm {
    pub fn new(
        dev: &DeviceContext,
        cfg: GemmConfig,
        op: GemmOperand,
    ) -> Result<CublasGemm, CudaError> {
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
            let host_b = vec![1.0f32; n * cols];
            Ok(CublasGemm {
                a: alloc_operands(&stream, op, &host)?,
                b: alloc_operands(&stream, op, &host_b)?,
                host_b,
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
                    GemmOperand::F32 => blas::sgemm(
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
                            GemmOperand::Bf16 => blas_sys::cudaDataType_t::CUDA_R_16BF,
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

    /// Row 0 of `A` set to `a` (the other rows zero), column 0 of `B` to `b`: `C[0][0]`
    /// is their dot product. `B` stays as given until the next call of this kind.
    pub fn call_operands(&mut self, a: &[f32], b: &[f32]) -> Result<f32, CudaError> {
        let n = self.cfg.n;
        check_len(n, a.len())?;
        check_len(n, b.len())?;
        self.host.fill(0.0);
        self.host[..n].copy_from_slice(a);
        self.host_b[..n].copy_from_slice(b);
        guarded("uploading B", || {
            upload(&self.dev.stream(), self.op, &self.host_b, &mut self.b)
        })?;
        self.run()?;
        Ok(self.host_c[0])
    }

    /// `x` in row 0 (see [`RowTarget::call_row`]).
    pub fn call(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        self.call_row(x)
    }

    /// One probe per row (see [`RowTarget::probe_rows`]).
    pub fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        self.probe_rows(batch, out)
    }
}

pub(crate) struct CublasGemv {
    dev: DeviceContext,
    blas: CudaBlas,
    cfg: GemvConfig,
    a: CudaSlice<f32>,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
    host: Vec<f32>,
    staged: Vec<f32>,
    host_y: Vec<f32>,
}

impl CublasGemv {
    pub fn new(dev: &DeviceContext, cfg: GemvConfig) -> Result<CublasGemv, CudaError> {
        let (n, rows) = (cfg.n, cfg.rows);
        check_shape("gemv", &[("n", n), ("rows", rows)], rows.saturating_mul(n))?;
        let blas = cublas_handle(dev, MathMode::Default)?;
        let stream = dev.stream();
        guarded("allocating the gemv operands", || {
            Ok(CublasGemv {
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

    /// `x` in row 0 (see [`RowTarget::call_row`]).
    pub fn call(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        self.call_row(x)
    }

    /// One probe per row (see [`RowTarget::probe_rows`]).
    pub fn probe_batch(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        self.probe_rows(batch, out)
    }
}

/// A cuBLAS target that answers one probe per row: `rows` rows of `n` values in a host
/// buffer, one call, one answer per row. gemm and gemv differ only in the call.
trait RowTarget {
    /// Values per row and rows per call.
    fn dims(&self) -> (usize, usize);
    /// The rows of the next call.
    fn rows_mut(&mut self) -> &mut [f32];
    /// One call on the rows; the answers then in [`answers`](Self::answers).
    fn run_rows(&mut self) -> Result<(), CudaError>;
    /// One answer per row of the last call.
    fn answers(&self) -> &[f32];

    /// `x` in row 0, the other rows zero: the answer of row 0.
    fn call_row(&mut self, x: &[f32]) -> Result<f32, CudaError> {
        let n = self.dims().0;
        check_len(n, x.len())?;
        let rows = self.rows_mut();
        rows.fill(0.0);
        rows[..n].copy_from_slice(x);
        self.run_rows()?;
        Ok(self.answers()[0])
    }

    /// The batch's probes, `rows` per call, one per row.
    fn probe_rows(
        &mut self,
        batch: &ProbeBatch<'_, f32>,
        out: &mut [f32],
    ) -> Result<(), CudaError> {
        let (n, rows) = self.dims();
        check_len(n, batch.background.len())?;
        for (probes, out) in batch.probes.chunks(rows).zip(out.chunks_mut(rows)) {
            fill_rows(self.rows_mut(), n, batch, probes);
            self.run_rows()?;
            out.copy_from_slice(&self.answers()[..probes.len()]);
        }
        Ok(())
    }
}

impl RowTarget for CublasGemm {
    fn dims(&self) -> (usize, usize) {
        (self.cfg.n, self.cfg.rows)
    }
    fn rows_mut(&mut self) -> &mut [f32] {
        &mut self.host
    }
    fn run_rows(&mut self) -> Result<(), CudaError> {
        self.run()
    }
    fn answers(&self) -> &[f32] {
        &self.host_c
    }
}

impl RowTarget for CublasGemv {
    fn dims(&self) -> (usize, usize) {
        (self.cfg.n, self.cfg.rows)
    }
    fn rows_mut(&mut self) -> &mut [f32] {
        &mut self.host
    }
    fn run_rows(&mut self) -> Result<(), CudaError> {
        self.run()
    }
    fn answers(&self) -> &[f32] {
        &self.host_y
    }
}
