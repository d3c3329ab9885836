//! Solvers shared by `examples/cg.rs` and `tests/exact_gemm.rs`: conjugate gradient with
//! its dot products and sparse products through `fprev::exact`'s dot kernel, and block
//! conjugate gradient for several right-hand sides built on matrix products, plain or
//! exact.

#![allow(dead_code)]

use fprev::exact::{self, Accumulator, ShapeError};
use rayon::prelude::*;

/// A sparse matrix in compressed-row form.
pub struct Sparse {
    pub n: usize,
    pub row_start: Vec<usize>,
    pub cols: Vec<usize>,
    pub vals: Vec<f64>,
}

impl Sparse {
    /// The 5-point Laplacian on an `m` x `m` grid, coupling `eps` in the y direction.
    pub fn laplacian(m: usize, eps: f64) -> Sparse {
        // (scaling by 1 changes no bit)
        Sparse::scaled_laplacian(m, eps, &vec![1.0; m * m])
    }

    /// The 5-point Laplacian on an `m` x `m` grid with Dirichlet boundaries, with
    /// coupling `eps` in the y direction (1 is the plain Poisson problem) and then scaled
    /// symmetrically by `scale` (`D A D` stays SPD but its condition number grows).
    pub fn scaled_laplacian(m: usize, eps: f64, scale: &[f64]) -> Sparse {
        let (mut row_start, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
        for i in 0..m {
            for j in 0..m {
                let row = i * m + j;
                let mut push = |col: usize, v: f64| {
                    cols.push(col);
                    vals.push(scale[row] * v * scale[col]);
                };
                if i > 0 {
                    push(row - m, -eps);
                }
                if j > 0 {
                    push(row - 1, -1.0);
                }
                push(row, 2.0 + 2.0 * eps);
                if j + 1 < m {
                    push(row + 1, -1.0);
                }
                if i + 1 < m {
                    push(row + m, -eps);
                }
                row_start.push(cols.len());
            }
        }
        Sparse {
            n: m * m,
            row_start,
            cols,
            vals,
        }
    }

    /// `out = A x`, each row an exact dot product of its values and the gathered `x`,
    /// rows spread over rayon.
    pub fn exact_product(&self, x: &[f64], out: &mut [f64]) {
        out.par_iter_mut().enumerate().for_each(|(r, o)| {
            let span = self.row_start[r]..self.row_start[r + 1];
            let gathered: Vec<f64> = self.cols[span.clone()].iter().map(|&c| x[c]).collect();
            let mut acc = Accumulator::new();
            acc.add_dot(&self.vals[span], &gathered);
            *o = acc.finish();
        });
    }
}

/// What one solve produced.
#[derive(Debug, PartialEq)]
pub struct Solve {
    /// Relative residual norm per iteration.
    pub history: Vec<f64>,
    /// One number that changes if any bit of the solution changes.
    pub x_hash: u64,
}

/// FNV-style hash of the bits of `x`.
pub fn hash_bits(x: &[f64]) -> u64 {
    x.iter().fold(0xcbf2_9ce4_8422_2325, |h, v| {
        (h ^ v.to_bits()).wrapping_mul(0x100_0000_01b3)
    })
}

/// Unpreconditioned CG, dot products by `exact::par_dot`, sparse products by
/// [`Sparse::exact_product`]: the same bits on any thread count.
pub fn cg_exact(a: &Sparse, b: &[f64], tol: f64, max_iter: usize) -> Result<Solve, ShapeError> {
    let dot = |x: &[f64], y: &[f64]| {
        exact::par_dot(x, y).map_err(|e| ShapeError::Inner {
            left: e.left,
            right: e.right,
        })
    };
    let n = a.n;
    let (mut x, mut r, mut p, mut ap) = (vec![0.0; n], b.to_vec(), b.to_vec(), vec![0.0; n]);
    let b_norm = dot(b, b)?.sqrt();
    let mut rr = dot(&r, &r)?;
    let mut history = vec![rr.sqrt() / b_norm];
    while history.len() <= max_iter && rr.sqrt() > tol * b_norm {
        a.exact_product(&p, &mut ap);
        let alpha = rr / dot(&p, &ap)?;
        x.par_iter_mut()
            .zip(&p)
            .for_each(|(xi, pi)| *xi += alpha * pi);
        r.par_iter_mut()
            .zip(&ap)
            .for_each(|(ri, api)| *ri -= alpha * api);
        let rr_next = dot(&r, &r)?;
        let beta = rr_next / rr;
        rr = rr_next;
        p.par_iter_mut()
            .zip(&r)
            .for_each(|(pi, ri)| *pi = ri + beta * *pi);
        history.push(rr.sqrt() / b_norm);
    }
    Ok(Solve {
        history,
        x_hash: hash_bits(&x),
    })
}

/// A dense symmetric positive definite `n x n` matrix: the 2-D Laplacian of an
/// `m x m` grid (`n = m^2`) scaled symmetrically by `scale`, stored densely.
pub fn dense_spd(m: usize, eps: f64, scale: &[f64]) -> Vec<f64> {
    let sparse = Sparse::laplacian(m, eps);
    let n = sparse.n;
    let mut a = vec![0.0; n * n];
    for r in 0..n {
        for i in sparse.row_start[r]..sparse.row_start[r + 1] {
            let c = sparse.cols[i];
            a[r * n + c] = scale[r] * sparse.vals[i] * scale[c];
        }
    }
    a
}

/// A matrix product `(m, n, k, a, b) -> a * b`, row-major.
pub type Product<'a> =
    dyn FnMut(usize, usize, usize, &[f64], &[f64]) -> Result<Vec<f64>, ShapeError> + 'a;

/// The plain product the way a parallel BLAS splits a long inner dimension: each thread
/// sums its part of `k`, the parts are added in rayon's reduction order. The bits then
/// depend on the thread count.
pub fn plain_split_k(
    m: usize,
    n: usize,
    k: usize,
    a: &[f64],
    b: &[f64],
) -> Result<Vec<f64>, ShapeError> {
    let chunk = k.div_ceil(rayon::current_num_threads()).max(1);
    let starts: Vec<usize> = (0..k).step_by(chunk).collect();
    Ok(starts
        .par_iter()
        .map(|&start| {
            let end = (start + chunk).min(k);
            let mut c = vec![0.0; m * n];
            for i in 0..m {
                for l in start..end {
                    let ail = a[i * k + l];
                    for j in 0..n {
                        c[i * n + j] += ail * b[l * n + j];
                    }
                }
            }
            c
        })
        .reduce(
            || vec![0.0; m * n],
            |mut x, y| {
                x.iter_mut().zip(y).for_each(|(p, q)| *p += q);
                x
            },
        ))
}

/// The exact product.
pub fn exact_product(
    m: usize,
    n: usize,
    k: usize,
    a: &[f64],
    b: &[f64],
) -> Result<Vec<f64>, ShapeError> {
    exact::gemm(m, n, k, a, b)
}

/// `a^T` for the row-major `rows x cols` matrix `a`.
fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; rows * cols];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

/// Solves the `s x s` system `m z = rhs` (`rhs` with `s` columns) by Gaussian elimination
/// with partial pivoting, sequentially: the same bits wherever it runs.
fn solve_small(mut m: Vec<f64>, mut rhs: Vec<f64>, s: usize) -> Vec<f64> {
    for col in 0..s {
        let pivot = (col..s)
            .max_by(|&i, &j| m[i * s + col].abs().total_cmp(&m[j * s + col].abs()))
            .unwrap_or(col);
        for j in 0..s {
            m.swap(col * s + j, pivot * s + j);
            rhs.swap(col * s + j, pivot * s + j);
        }
        let d = m[col * s + col];
        for i in col + 1..s {
            let f = m[i * s + col] / d;
            for j in 0..s {
                m[i * s + j] -= f * m[col * s + j];
                rhs[i * s + j] -= f * rhs[col * s + j];
            }
        }
    }
    for col in (0..s).rev() {
        for j in 0..s {
            let mut v = rhs[col * s + j];
            for i in col + 1..s {
                v -= m[col * s + i] * rhs[i * s + j];
            }
            rhs[col * s + j] = v / m[col * s + col];
        }
    }
    rhs
}

/// Block conjugate gradient (O'Leary) for `A X = B` with `s` right-hand sides: every
/// reduction is a matrix product through `product` (`A P`, `P^T A P`, `R^T R`, the
/// updates), so the run is reproducible exactly when the products are. Stops when every
/// column's residual is below `tol` relative to its right-hand side.
pub fn block_cg(
    a: &[f64],
    n: usize,
    b: &[f64],
    s: usize,
    product: &mut Product<'_>,
    tol: f64,
    max_iter: usize,
) -> Result<Solve, ShapeError> {
    let column_norms = |r: &[f64]| -> Vec<f64> {
        (0..s)
            .map(|j| {
                (0..n)
                    .map(|i| r[i * s + j] * r[i * s + j])
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    };
    let b_norms = column_norms(b);
    let mut x = vec![0.0; n * s];
    let mut r = b.to_vec();
    let mut p = r.clone();
    let mut rr = product(s, s, n, &transpose(&r, n, s), &r)?;
    let residual = |rr: &[f64]| {
        (0..s)
            .map(|j| rr[j * s + j].max(0.0).sqrt() / b_norms[j])
            .fold(0.0, f64::max)
    };
    let mut history = vec![residual(&rr)];
    while history.len() <= max_iter && residual(&rr) > tol {
        let q = product(n, s, n, a, &p)?;
        let pq = product(s, s, n, &transpose(&p, n, s), &q)?;
        let alpha = solve_small(pq, rr.clone(), s);
        let step = product(n, s, s, &p, &alpha)?;
        let q_step = product(n, s, s, &q, &alpha)?;
        x.iter_mut().zip(&step).for_each(|(xi, d)| *xi += d);
        r.iter_mut().zip(&q_step).for_each(|(ri, d)| *ri -= d);
        let rr_next = product(s, s, n, &transpose(&r, n, s), &r)?;
        let beta = solve_small(rr.clone(), rr_next.clone(), s);
        let p_beta = product(n, s, s, &p, &beta)?;
        p.iter_mut()
            .zip(r.iter().zip(&p_beta))
            .for_each(|(pi, (ri, pb))| *pi = ri + pb);
        rr = rr_next;
        history.push(residual(&rr));
    }
    Ok(Solve {
        history,
        x_hash: hash_bits(&x),
    })
}
