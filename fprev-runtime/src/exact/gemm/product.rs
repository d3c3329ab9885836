//! The exact product itself: slices and kernel calls, the per-element decision, and the
//! exact dot products for the elements the decision leaves open.

use super::decide::decide;
use super::slices::{pow2, split_columns, split_rows, zeroed, Line, LineKind};
use super::GemmKernel;
use crate::exact::filter::DotScratch;
use crate::exact::{Accumulator, RoundingFormat};
use rayon::prelude::*;

/// Inner length of one exact slice product; longer products add several, in integers.
const CHUNK: usize = 4096;
/// Elements whose row and column exponents sum outside this range are computed exactly:
/// their scaled slice products must stay normal and finite.
const PRODUCT_EXP: std::ops::RangeInclusive<i32> = -900..=900;

/// `ceil(log2(n))` for `n >= 1`.
fn ceil_log2(n: usize) -> i32 {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as i32
}

/// Upper bound factor for the error of a floating-point dot product of `len` terms,
/// any order, with or without FMA: `gamma_len = len u / (1 - len u)`, rounded up.
fn gamma(len: usize) -> f64 {
    let lu = len as f64 * f64::EPSILON * 0.5;
    lu / (1.0 - lu) * (1.0 + 1e-10)
}

/// Absolute error a dot product of `len` terms may add through underflow: at most one
/// unit of the smallest subnormal per operation.
fn underflow_slack(len: usize) -> f64 {
    2.0 * len as f64 * f64::from_bits(1)
}

/// The sign a product gets when all of its terms are zeros (a line of zeros against a
/// finite line): `-0.0` only if every term is `-0.0`. `None` when it cannot tell.
fn zero_product(row: &Line, col: &Line) -> Option<f64> {
    let (zero, other) = match (row.kind, col.kind) {
        (LineKind::Zero, LineKind::Zero | LineKind::Sliced { .. }) => (row, col),
        (LineKind::Sliced { .. }, LineKind::Zero) => (col, row),
        _ => return None,
    };
    let negative = if zero.all_positive {
        other.all_negative
    } else if zero.all_negative {
        other.all_positive
    } else {
        return None;
    };
    Some(if negative { -0.0 } else { 0.0 })
}

/// An integer below 2^100 as two doubles whose sum is exactly `v`.
fn split_i128(v: i128) -> (f64, f64) {
    let hi = v as f64;
    // |v - hi| is at most half an ulp of hi: below 2^47, exact in a double.
    (hi, (v - hi as i128) as f64)
}

/// Whether a kernel's result can be an exact slice product: an integer below 2^53.
fn integral(v: f64) -> bool {
    v.fract() == 0.0 && v.abs() < 9007199254740992.0
}

/// The buffers of one product, kept by a `Gemm` between calls so that repeated products
/// reuse their memory instead of faulting in fresh pages.
#[derive(Clone, Default)]
pub(super) struct ProductBuffers {
    slice: Vec<f64>,
    left: Vec<f64>,
    slices: Vec<f64>,
    right: Vec<f64>,
    products: Vec<f64>,
    rest: Vec<f64>,
    chunk: Vec<f64>,
    totals: Vec<i64>,
}

impl std::fmt::Debug for ProductBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = [
            &self.slice,
            &self.left,
            &self.slices,
            &self.right,
            &self.products,
            &self.rest,
            &self.chunk,
        ]
        .iter()
        .map(|v| v.capacity())
        .sum::<usize>()
            + self.totals.capacity();
        write!(f, "ProductBuffers {{ {held} values held }}")
    }
}

/// `a * b` (m x k by k x n, row-major, finite or not) rounded once to `format`, each
/// element correctly rounded; `kernel` does the heavy work.
pub(super) fn product<K: GemmKernel>(
    kernel: &mut K,
    work: &mut ProductBuffers,
    (m, n, k): (usize, usize, usize),
    a: &[f64],
    b: &[f64],
    format: RoundingFormat,
) -> Vec<f64> {
    if m == 0 || n == 0 {
        return Vec::new();
    }
    if k == 0 {
        return vec![0.0; m * n];
    }
    let mut out = vec![0.0; m * n];
    let open = if format == RoundingFormat::F64 {
        sliced(kernel, work, (m, n, k), a, b, &mut out)
    } else {
        direct(kernel, work, (m, n, k), a, b, &mut out, format)
    };
    exact_elements(&mut out, (m, n, k), a, b, &open, format);
    out
}

/// The plan for `f64`: one slice of `A` against two of `B` computed exactly, the rest
/// by one ordinary product of the tails. Returns the elements left open.
fn sliced<K: GemmKernel>(
    kernel: &mut K,
    work: &mut ProductBuffers,
    (m, n, k): (usize, usize, usize),
    a: &[f64],
    b: &[f64],
    out: &mut [f64],
) -> Vec<usize> {
    // Bits for the slices of one chunk, two parts to B's slices for one to A's: the rest
    // then starts 2 * beta_b and beta_a bits below the leading terms, about equally.
    let budget = 53 - ceil_log2(k.min(CHUNK));
    let beta_b = (budget + 1) / 3;
    let beta_a = budget - beta_b;
    let rows = split_rows(a, (m, k), beta_a, &mut work.slice, &mut work.left);
    let cols = split_columns(b, (k, n), beta_b, &mut work.slices, &mut work.right);

    slice_products(kernel, work, (m, n, k));
    // The rest: [A_hi | A_tail] * [B_tail ; B], an ordinary product.
    let rest = zeroed(&mut work.rest, m * n);
    kernel.gemm(m, n, 2 * k, &work.left, &work.right, rest);
    let (slices, totals) = (&work.products, &work.totals);

    let (row_factors, col_factors) = line_factors(&rows, &cols, k, (beta_a, beta_b));
    // Products that underflow inside the kernel, and in the bound itself.
    let slack = underflow_slack(2 * k);
    let open: Vec<Vec<usize>> = out
        .par_chunks_mut(n)
        .zip(rest.par_chunks(n))
        .zip(slices.par_chunks(2 * n))
        .zip(row_factors.par_iter())
        .enumerate()
        .map(|(r, (((out, rest), slices), rf))| {
            let mut open = Vec::new();
            for (c, cf) in col_factors.iter().enumerate() {
                let decided = if PRODUCT_EXP.contains(&(rf.exp + cf.exp)) {
                    // x1 2^beta_b + x2 as two doubles that hold it exactly: for one
                    // chunk the kernel's integers themselves, for several the sum of
                    // the i64 totals, split.
                    let exact = if totals.is_empty() {
                        let (x1, x2) = (slices[c], slices[n + c]);
                        (integral(x1) && integral(x2)).then(|| (x1 * pow2(beta_b), x2))
                    } else {
                        let (t1, t2) = (totals[r * 2 * n + c], totals[r * 2 * n + n + c]);
                        (t1 != i64::MAX && t2 != i64::MAX)
                            .then(|| split_i128(((t1 as i128) << beta_b) + t2 as i128))
                    };
                    exact.and_then(|(hi, lo)| {
                        let scale = rf.scale * cf.scale;
                        let bound = rf.bound[0] * cf.bound[0] + rf.bound[1] * cf.bound[1] + slack;
                        decide(hi * scale, lo * scale, rest[c], bound, RoundingFormat::F64)
                    })
                } else {
                    zero_product(&rows[r], &cols[c])
                };
                match decided {
                    Some(v) => out[c] = v,
                    None => open.push(r * n + c),
                }
            }
            open
        })
        .collect();
    open.concat()
}

/// `A1 * [B1 | B2]` into `work.products`, chunk by chunk: with more than one chunk, each
/// chunk's integers summed exactly in `work.totals` (empty for a single chunk).
fn slice_products<K: GemmKernel>(
    kernel: &mut K,
    work: &mut ProductBuffers,
    (m, n, k): (usize, usize, usize),
) {
    let slices = zeroed(&mut work.products, m * 2 * n);
    let totals = &mut work.totals;
    totals.clear();
    for start in (0..k).step_by(CHUNK) {
        let len = CHUNK.min(k - start);
        let b_rows = &work.slices[start * 2 * n..(start + len) * 2 * n];
        if len == k {
            kernel.gemm(m, 2 * n, k, &work.slice, b_rows, slices);
            break;
        }
        let chunk_a = &mut work.chunk;
        chunk_a.clear();
        for row in work.slice.chunks_exact(k) {
            chunk_a.extend_from_slice(&row[start..start + len]);
        }
        kernel.gemm(m, 2 * n, len, chunk_a, b_rows, slices);
        totals.resize(m * 2 * n, 0);
        for (t, &v) in totals.iter_mut().zip(slices.iter()) {
            // A non-integer (a kernel that broke its contract), or a sum beyond i64 (over
            // a thousand chunks), marks the element for the exact path below.
            *t = match (integral(v), *t) {
                (true, t) if t != i64::MAX => t.checked_add(v as i64).unwrap_or(i64::MAX),
                _ => i64::MAX,
            };
        }
    }
}

/// Per-line factors, so that an element costs a few multiplications: the slice
/// products scale by 2^(e - beta_a - 2 beta_b) * 2^f, and the bound on the rest's
/// error is gamma_2k (||A_hi|| ||B_tail|| + ||A_tail|| ||B||) (Cauchy-Schwarz bounds
/// the sums of |products| its rounding errors scale with), split the same way.
fn line_factors(
    rows: &[Line],
    cols: &[Line],
    k: usize,
    (beta_a, beta_b): (i32, i32),
) -> (Vec<Factors>, Vec<Factors>) {
    let gamma = gamma(2 * k) * (1.0 + 1e-10);
    let row_factors: Vec<Factors> = rows
        .iter()
        .map(|row| match row.kind {
            LineKind::Sliced { exp } => {
                let unit = gamma * pow2(exp - beta_a);
                Factors {
                    exp,
                    scale: pow2(exp - beta_a - 2 * beta_b),
                    bound: [
                        unit * row.slice_norm * pow2(-2 * beta_b),
                        unit * row.tail_norm,
                    ],
                }
            }
            _ => Factors::NONE,
        })
        .collect();
    let col_factors: Vec<Factors> = cols
        .iter()
        .map(|col| match col.kind {
            LineKind::Sliced { exp } => Factors {
                exp,
                scale: pow2(exp),
                bound: [col.slice_norm * pow2(exp), col.tail_norm * pow2(exp)],
            },
            _ => Factors::NONE,
        })
        .collect();
    (row_factors, col_factors)
}

/// What a row or a column contributes to each of its elements' decision.
#[derive(Clone, Copy)]
struct Factors {
    /// The line's exponent; far out of range for lines that are not sliced.
    exp: i32,
    /// Its power-of-two factor of the slice products' scale.
    scale: f64,
    /// Its factors of the two terms of the error bound.
    bound: [f64; 2],
}

impl Factors {
    const NONE: Factors = Factors {
        exp: i32::MIN / 4,
        scale: 0.0,
        bound: [0.0; 2],
    };
}

/// The plan for `f32` (and narrower): products of `f32` values are exact in `f64`, so
/// one ordinary `f64` product already has about 29 bits to spare. Returns the elements
/// left open.
fn direct<K: GemmKernel>(
    kernel: &mut K,
    work: &mut ProductBuffers,
    (m, n, k): (usize, usize, usize),
    a: &[f64],
    b: &[f64],
    out: &mut [f64],
    format: RoundingFormat,
) -> Vec<usize> {
    let rows = super::slices::scan_rows(a, m, k);
    let cols = super::slices::scan_columns(b, k, n);
    let rest = zeroed(&mut work.rest, m * n);
    kernel.gemm(m, n, k, a, b, rest);
    let slack = underflow_slack(k);
    let gamma = gamma(k);
    let open: Vec<Vec<usize>> = out
        .par_chunks_mut(n)
        .zip(rest.par_chunks(n))
        .zip(rows.par_iter())
        .enumerate()
        .map(|(r, ((out, rest), row))| {
            let mut open = Vec::new();
            for (c, col) in cols.iter().enumerate() {
                let decided = match (row.kind, col.kind) {
                    (LineKind::Sliced { .. }, LineKind::Sliced { .. }) => {
                        let bound = gamma * row.slice_norm * col.slice_norm * (1.0 + 1e-10) + slack;
                        decide(0.0, 0.0, rest[c], bound, format)
                    }
                    _ => zero_product(row, col),
                };
                match decided {
                    Some(v) => out[c] = v,
                    None => open.push(r * n + c),
                }
            }
            open
        })
        .collect();
    open.concat()
}

/// Computes the open elements as exact dot products (IEEE semantics for NaN and
/// infinities), a column of `b` gathered once for all of its open rows.
fn exact_elements(
    out: &mut [f64],
    (_, n, k): (usize, usize, usize),
    a: &[f64],
    b: &[f64],
    open: &[usize],
    format: RoundingFormat,
) {
    if open.is_empty() {
        return;
    }
    let mut by_column: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &i in open {
        by_column[i % n].push(i / n);
    }
    let values: Vec<(usize, f64)> = by_column
        .par_iter()
        .enumerate()
        .filter(|(_, rows)| !rows.is_empty())
        .flat_map_iter(|(c, rows)| {
            let column: Vec<f64> = b.iter().skip(c).step_by(n).copied().collect();
            let mut acc = Accumulator::new();
            // The rows of one column tend to need the same path: learn it once.
            let mut scratch = DotScratch::new();
            rows.iter()
                .map(|&r| {
                    acc.clear();
                    scratch.add_dot(&mut acc, &a[r * k..(r + 1) * k], &column);
                    (r * n + c, acc.round_to(format))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    for (i, v) in values {
        out[i] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::Matrixmultiply;

    /// A deterministic value in (-1, 1) for index `i`.
    fn value(i: usize) -> f64 {
        let x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
        (x as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    #[test]
    fn few_elements_need_the_exact_path() {
        let (m, n, k) = (64, 48, 300);
        let a: Vec<f64> = (0..m * k).map(value).collect();
        let b: Vec<f64> = (0..k * n).map(|i| value(i + 7919)).collect();
        let mut out = vec![0.0; m * n];
        let open = sliced(
            &mut Matrixmultiply,
            &mut ProductBuffers::default(),
            (m, n, k),
            &a,
            &b,
            &mut out,
        );
        // About one in a thousand for data like this; a bound gone loose would show here.
        assert!(open.len() * 50 < m * n, "{} of {} open", open.len(), m * n);
        let mut out = vec![0.0; m * n];
        let open = direct(
            &mut Matrixmultiply,
            &mut ProductBuffers::default(),
            (m, n, k),
            &a,
            &b,
            &mut out,
            RoundingFormat::F32,
        );
        assert!(
            open.len() * 50 < m * n,
            "{} of {} open (f32)",
            open.len(),
            m * n
        );
    }

    #[test]
    fn zero_lines_give_signed_zeros() {
        let line = |kind, all_negative, all_positive| Line {
            kind,
            all_negative,
            all_positive,
            slice_norm: 0.0,
            tail_norm: 0.0,
        };
        let pos_zeros = line(LineKind::Zero, false, true);
        let neg_zeros = line(LineKind::Zero, true, false);
        let negative = line(LineKind::Sliced { exp: 1 }, true, false);
        let mixed = line(LineKind::Sliced { exp: 1 }, false, false);
        let other = line(LineKind::Other, false, false);
        assert_eq!(
            zero_product(&pos_zeros, &negative).map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert_eq!(
            zero_product(&neg_zeros, &negative).map(f64::to_bits),
            Some(0.0f64.to_bits())
        );
        assert_eq!(
            zero_product(&mixed, &neg_zeros).map(f64::to_bits),
            Some(0.0f64.to_bits())
        );
        assert_eq!(zero_product(&pos_zeros, &other), None);
        assert_eq!(zero_product(&mixed, &mixed), None);
    }
}
