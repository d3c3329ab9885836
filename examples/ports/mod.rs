//! Rust/rayon ports of the programs of Defour's Table II, each with its accumulations
//! visible to `#[fprev::scramble]` or running on `fprev::launch`.
//!
//! Shared by `examples/amplify_table.rs` and `tests/amplify_ports.rs`.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use fprev::amplify::chunk_len;
use rayon::prelude::*;

/// Deterministic inputs with magnitudes spread over a few binades.
pub fn inputs(n: usize, salt: u64) -> Vec<f32> {
    let mut s = salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            (u - 0.3) * 2f32.powi((s % 12) as i32 - 6)
        })
        .collect()
}

/// CUDA-SDK-style reduction: chunk partial sums in parallel, then their sum.
#[fprev::scramble]
pub fn reduction(v: &[f32]) -> f32 {
    v.par_chunks(chunk_len(2048))
        .map(|chunk| {
            let mut s = 0.0f32;
            for x in chunk.iter() {
                s += *x;
            }
            s
        })
        .sum::<f32>()
}

/// Atomic float add by compare-and-swap, as CUDA's `atomicAdd(float*)`.
pub fn atomic_add(cell: &AtomicU32, v: f32) {
    let mut cur = cell.load(Ordering::Relaxed);
    loop {
        let new = (f32::from_bits(cur) + v).to_bits();
        match cell.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => cur = seen,
        }
    }
}

/// MRI-GRID-like histogram: every thread of a kernel launch adds a few points into
/// shared bins with atomic float adds.
#[fprev::scramble]
pub fn histogram(v: &[f32], bins: usize) -> Vec<f32> {
    const PER_THREAD: usize = 8;
    let cells: Vec<AtomicU32> = (0..bins).map(|_| AtomicU32::new(0)).collect();
    let block = 64u32;
    let grid = v.len().div_ceil(PER_THREAD * block as usize) as u32;
    fprev::launch(grid, block, |ctx| {
        let first = ctx.global_x() * PER_THREAD;
        for k in 0..PER_THREAD {
            if let Some(&x) = v.get(first + k) {
                let bin = ((first + k) * 31 + (x.to_bits() as usize & 7)) % bins;
                atomic_add(&cells[bin], x);
            }
        }
    });
    cells
        .iter()
        .map(|c| f32::from_bits(c.load(Ordering::Relaxed)))
        .collect()
}

/// Register-tiled SGEMM, `c = a * b` for `n` x `n` row-major matrices.
#[fprev::scramble]
pub fn sgemm(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
    const TILE: usize = 16;
    let mut c = vec![0.0f32; n * n];
    c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
        for kk in (0..n).step_by(TILE) {
            for j in 0..n {
                let mut s = 0.0f32;
                for k in kk..(kk + TILE).min(n) {
                    s += a[i * n + k] * b[k * n + j];
                }
                row[j] += s;
            }
        }
    });
    c
}

/// A CSR sparse matrix.
pub struct Csr {
    pub row_ptr: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<f32>,
}

/// A random CSR matrix with `per_row` entries per row.
pub fn csr(n: usize, per_row: usize) -> Csr {
    let vals = inputs(n * per_row, 7);
    let cols = (0..n * per_row)
        .map(|k| (k * 7919 + k / per_row * 104_729) % n)
        .collect();
    Csr {
        row_ptr: (0..=n).map(|r| r * per_row).collect(),
        cols,
        vals,
    }
}

/// CSR sparse matrix-vector product, one row per task.
#[fprev::scramble]
pub fn spmv(m: &Csr, x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0f32; m.row_ptr.len() - 1];
    y.par_iter_mut().enumerate().for_each(|(r, yr)| {
        let mut s = 0.0f32;
        for k in m.row_ptr[r]..m.row_ptr[r + 1] {
            s += m.vals[k] * x[m.cols[k]];
        }
        *yr = s;
    });
    y
}

/// Jacobi iterations on a diagonally dominant dense system; returns the iterate and the
/// squared residual norm of each iteration (a parallel reduction).
#[fprev::scramble]
pub fn jacobi(a: &[f32], b: &[f32], n: usize, iterations: usize) -> (Vec<f32>, Vec<f32>) {
    let mut x = vec![0.0f32; n];
    let mut residuals = Vec::new();
    for _ in 0..iterations {
        let next: Vec<f32> = (0..n)
            .into_par_iter()
            .map(|i| {
                let mut s = b[i];
                for j in 0..n {
                    if j != i {
                        s -= a[i * n + j] * x[j];
                    }
                }
                s / a[i * n + i]
            })
            .collect();
        let r: f32 = (0..n)
            .into_par_iter()
            .with_min_len(chunk_len(16))
            .map(|i| (next[i] - x[i]) * (next[i] - x[i]))
            .sum();
        residuals.push(r);
        x = next;
    }
    (x, residuals)
}

/// MRI-Q-like: for every voxel, a sum of trigonometric terms over k-space samples.
#[fprev::scramble]
pub fn mri_q(voxels: &[f32], k: &[f32], phi: &[f32]) -> Vec<f32> {
    let mut q = vec![0.0f32; voxels.len()];
    q.par_iter_mut().enumerate().for_each(|(v, out)| {
        let mut s = 0.0f32;
        for j in 0..k.len() {
            s += phi[j] * (std::f32::consts::TAU * k[j] * voxels[v]).cos();
        }
        *out = s;
    });
    q
}

/// 7-point stencil on an `n`^3 grid: a fixed expression per point, no accumulation
/// across iterations, so no order can change it. Its loops are order-free by
/// declaration (as an OpenMP `parallel for` would say), so they are scrambled whole.
#[fprev::scramble(loops)]
pub fn stencil(input: &[f32], n: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; n * n * n];
    let at = |i: usize, j: usize, k: usize| input[(i * n + j) * n + k];
    out.par_chunks_mut(n * n)
        .enumerate()
        .for_each(|(i, plane)| {
            if i == 0 || i == n - 1 {
                return;
            }
            for j in 1..n - 1 {
                for k in 1..n - 1 {
                    plane[j * n + k] = 0.4 * at(i, j, k)
                        + 0.1 * (at(i - 1, j, k) + at(i + 1, j, k))
                        + 0.1 * (at(i, j - 1, k) + at(i, j + 1, k))
                        + 0.1 * (at(i, j, k - 1) + at(i, j, k + 1));
                }
            }
        });
    out
}

/// A diagonally dominant `n` x `n` matrix.
pub fn dominant(n: usize) -> Vec<f32> {
    let mut a = inputs(n * n, 11);
    for i in 0..n {
        a[i * n + i] = n as f32;
    }
    a
}
