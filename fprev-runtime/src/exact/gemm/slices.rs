//! The Ozaki split of the factors: each row of `A` and column of `B` cut, relative to its
//! own largest magnitude, into short integer slices whose products a kernel computes
//! exactly, and a tail.
//!
//! Row `r` of `A`, with `|a| < 2^e`: `A1 = trunc(a * 2^(beta_a - e))`, an integer below
//! `2^beta_a`, is the slice; `a - A1 * 2^(e - beta_a)` the tail. Column `c` of `B`, with
//! `|b| < 2^f`, gives two slices of `beta_b` bits, `B1` and `B2`, and the tail below them.
//! With `beta_a + beta_b` bits and `k` terms, every partial sum of `A1 * B1` and `A1 * B2`
//! stays below 2^53, so any kernel computes them exactly in any order. Truncation keeps
//! the slices and tails exact even where scaling a tiny value underflows: such a value's
//! slice is zero either way, and tails are differences taken at the original scale.

use rayon::prelude::*;

/// Rows and columns whose largest magnitude lies outside `2^LOWEST_EXP..2^HIGHEST_EXP`
/// are computed exactly instead: the slices' scale factors must be normal numbers.
const LOWEST_EXP: i32 = -960;
const HIGHEST_EXP: i32 = 990;

/// What a row of `A` or a column of `B` holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum LineKind {
    /// Finite, not all zero, within range: sliced.
    Sliced {
        /// Every magnitude is below `2^exp`.
        exp: i32,
    },
    /// All zeros (their signs are in the [`Line`]).
    Zero,
    /// Holds a NaN or an infinity, or lies outside the range the slices support.
    Other,
}

/// A row of `A` or a column of `B`, with the norms the error bound needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Line {
    pub(super) kind: LineKind,
    /// Signs of the line's values: every sign bit set, every sign bit clear.
    pub(super) all_negative: bool,
    pub(super) all_positive: bool,
    /// Row of `A`: `||A1||` (integer units). Column of `B`: `||tail|| / 2^(f - 2 beta_b)`.
    pub(super) slice_norm: f64,
    /// Row of `A`: `||tail|| / 2^(e - beta_a)`. Column of `B`: `||b|| / 2^f`.
    pub(super) tail_norm: f64,
}

/// `2^k` for `k` in the normal range.
#[inline(always)]
pub(super) fn pow2(k: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `v` rounded toward zero to an integer, for `|v| < 2^53` (a conversion instruction
/// where `f64::trunc` may be a library call).
#[inline(always)]
fn truncate(v: f64) -> f64 {
    v as i64 as f64
}

/// The smallest `e` with `v < 2^e`, for finite positive `v`.
fn exponent_above(v: f64) -> i32 {
    let bits = v.to_bits();
    let biased = (bits >> 52) as i32;
    if biased == 0 {
        (63 - bits.leading_zeros() as i32) - 1074 + 1
    } else {
        biased - 1023 + 1
    }
}

/// An upper bound on `sqrt(sum)` for a sum of `count` squares computed in floating point:
/// room for the rounding of every square and addition, and for squares that underflowed.
fn norm_bound(sum_of_squares: f64, count: usize) -> f64 {
    let floor = count as f64 * pow2(-1000);
    (sum_of_squares + floor).sqrt() * (1.0 + (count as f64 + 4.0) * f64::EPSILON)
}

/// What a scan of a line found.
#[derive(Clone, Copy)]
struct LineScan {
    largest: f64,
    finite: bool,
    all_negative: bool,
    all_positive: bool,
}

impl LineScan {
    const EMPTY: LineScan = LineScan {
        largest: 0.0,
        finite: true,
        all_negative: true,
        all_positive: true,
    };

    #[inline(always)]
    fn add(&mut self, v: f64) {
        self.finite &= v.is_finite();
        self.largest = self.largest.max(v.abs());
        self.all_negative &= v.is_sign_negative();
        self.all_positive &= v.is_sign_positive();
    }

    fn line(self) -> Line {
        let kind = if !self.finite {
            LineKind::Other
        } else if self.largest == 0.0 {
            LineKind::Zero
        } else {
            let exp = exponent_above(self.largest);
            if (LOWEST_EXP..=HIGHEST_EXP).contains(&exp) {
                LineKind::Sliced { exp }
            } else {
                LineKind::Other
            }
        };
        Line {
            kind,
            all_negative: self.all_negative,
            all_positive: self.all_positive,
            slice_norm: 0.0,
            tail_norm: 0.0,
        }
    }
}

/// `v` emptied and refilled with `len` zeros, keeping its memory.
pub(super) fn zeroed(v: &mut Vec<f64>, len: usize) -> &mut [f64] {
    v.clear();
    v.resize(len, 0.0);
    v
}

/// Splits the rows of `a` (m x k, row-major) with `beta` bits per slice into `slice`
/// (m x k, integers) and `left` (m x 2k: the slice at scale, then the tail); returns one
/// [`Line`] per row.
pub(super) fn split_rows(
    a: &[f64],
    (m, k): (usize, usize),
    beta: i32,
    slice: &mut Vec<f64>,
    left: &mut Vec<f64>,
) -> Vec<Line> {
    let slice = zeroed(slice, m * k);
    let left = zeroed(left, m * 2 * k);
    let mut rows = vec![LineScan::EMPTY.line(); m];
    if k == 0 {
        return rows;
    }
    slice
        .par_chunks_mut(k)
        .zip(left.par_chunks_mut(2 * k))
        .zip(a.par_chunks(k))
        .zip(rows.par_iter_mut())
        .for_each(|(((slice, left), a), line)| {
            let mut scan = LineScan::EMPTY;
            a.iter().for_each(|&v| scan.add(v));
            *line = scan.line();
            let LineKind::Sliced { exp } = line.kind else {
                return;
            };
            let up = pow2(beta - exp);
            let down = pow2(exp - beta);
            let (at_scale, tail) = left.split_at_mut(k);
            let (mut slice_sq, mut tail_sq) = (0.0, 0.0);
            for (((&v, s), h), t) in a.iter().zip(slice).zip(at_scale).zip(tail) {
                let integer = truncate(v * up);
                *s = integer;
                *h = integer * down;
                *t = v - *h;
                slice_sq += integer * integer;
                let scaled = *t * up;
                tail_sq += scaled * scaled;
            }
            line.slice_norm = norm_bound(slice_sq, k);
            line.tail_norm = norm_bound(tail_sq, k);
        });
    rows
}

/// Splits the columns of `b` (k x n, row-major) into two slices of `beta` bits each:
/// `slices` (k x 2n: the first slice, then the second) and `right` (2k x n: the tail
/// below both slices, then `b` itself); returns one [`Line`] per column. Columns that are
/// not sliced are zero in both.
pub(super) fn split_columns(
    b: &[f64],
    (k, n): (usize, usize),
    beta: i32,
    slices: &mut Vec<f64>,
    right: &mut Vec<f64>,
) -> Vec<Line> {
    let mut scans = vec![LineScan::EMPTY; n];
    for row in b.chunks_exact(n.max(1)) {
        for (scan, &v) in scans.iter_mut().zip(row) {
            scan.add(v);
        }
    }
    let mut cols: Vec<Line> = scans.into_iter().map(LineScan::line).collect();
    // Per column: the scales of the first slice, of the second, and of the whole column.
    let scales: Vec<Option<[f64; 5]>> = cols
        .iter()
        .map(|line| match line.kind {
            LineKind::Sliced { exp } => Some([
                pow2(beta - exp),
                pow2(exp - beta),
                pow2(2 * beta - exp),
                pow2(exp - 2 * beta),
                pow2(-exp),
            ]),
            _ => None,
        })
        .collect();
    let slices = zeroed(slices, k * 2 * n);
    let right = zeroed(right, 2 * k * n);
    if n == 0 || k == 0 {
        return cols;
    }
    let (tails, copy) = right.split_at_mut(k * n);
    slices
        .par_chunks_mut(2 * n)
        .zip(tails.par_chunks_mut(n))
        .zip(copy.par_chunks_mut(n))
        .zip(b.par_chunks(n))
        .for_each(|(((slices, tail), copy), b)| {
            let (first, second) = slices.split_at_mut(n);
            for c in 0..n {
                let Some([up1, down1, up2, down2, _]) = scales[c] else {
                    continue;
                };
                let v = b[c];
                let s1 = truncate(v * up1);
                let rest = v - s1 * down1;
                let s2 = truncate(rest * up2);
                first[c] = s1;
                second[c] = s2;
                tail[c] = rest - s2 * down2;
                copy[c] = v;
            }
        });
    // Column norms, a row at a time so the loop runs along memory.
    let mut tail_sq = vec![0.0; n];
    let mut whole_sq = vec![0.0; n];
    for (tail, whole) in tails_and_copy(right, k, n) {
        for c in 0..n {
            if let Some([_, _, up2, _, up0]) = scales[c] {
                let t = tail[c] * up2;
                let w = whole[c] * up0;
                tail_sq[c] += t * t;
                whole_sq[c] += w * w;
            }
        }
    }
    for (c, line) in cols.iter_mut().enumerate() {
        line.slice_norm = norm_bound(tail_sq[c], k);
        line.tail_norm = norm_bound(whole_sq[c], k);
    }
    cols
}

/// Scans the rows of `a` (m x k) without splitting them: each [`Line`] gets the row's
/// norm as its `slice_norm` (for values whose squares neither overflow nor underflow,
/// such as widened `f32`).
pub(super) fn scan_rows(a: &[f64], m: usize, k: usize) -> Vec<Line> {
    if k == 0 {
        return vec![LineScan::EMPTY.line(); m];
    }
    a.par_chunks(k)
        .map(|row| {
            let mut scan = LineScan::EMPTY;
            row.iter().for_each(|&v| scan.add(v));
            let mut line = scan.line();
            line.slice_norm = norm_bound(row.iter().map(|v| v * v).sum(), k);
            line
        })
        .collect()
}

/// [`scan_rows`] for the columns of `b` (k x n).
pub(super) fn scan_columns(b: &[f64], k: usize, n: usize) -> Vec<Line> {
    let mut scans = vec![LineScan::EMPTY; n];
    let mut squares = vec![0.0; n];
    for row in b.chunks_exact(n.max(1)) {
        for ((scan, sq), &v) in scans.iter_mut().zip(&mut squares).zip(row) {
            scan.add(v);
            *sq += v * v;
        }
    }
    scans
        .into_iter()
        .zip(squares)
        .map(|(scan, sq)| {
            let mut line = scan.line();
            line.slice_norm = norm_bound(sq, k);
            line
        })
        .collect()
}

/// The rows of the tail half and of the copy half of `right`, side by side.
fn tails_and_copy(right: &[f64], k: usize, n: usize) -> impl Iterator<Item = (&[f64], &[f64])> {
    let (tails, copy) = right.split_at(k * n);
    tails.chunks_exact(n).zip(copy.chunks_exact(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_tails_reassemble_the_values() {
        let a = [1.0 / 3.0, -7e-300, 2.5, 0.0, -1e-320];
        let (mut slice, mut left) = (Vec::new(), Vec::new());
        let rows = split_rows(&a, (1, 5), 20, &mut slice, &mut left);
        let LineKind::Sliced { exp } = rows[0].kind else {
            panic!("row not sliced: {:?}", rows[0].kind);
        };
        assert_eq!(exp, 2);
        for (i, &v) in a.iter().enumerate() {
            let s = slice[i];
            assert!(s.fract() == 0.0 && s.abs() < 2f64.powi(20));
            assert_eq!(left[i] + left[5 + i], v);
            assert_eq!(left[i], s * 2f64.powi(2 - 20));
        }
        let b = [3.0, 1e-310, -0.1, 1e290];
        let (mut slices, mut right) = (Vec::new(), Vec::new());
        let cols = split_columns(&b, (4, 1), 15, &mut slices, &mut right);
        let LineKind::Sliced { exp } = cols[0].kind else {
            panic!("column not sliced: {:?}", cols[0].kind);
        };
        assert_eq!(exp, 964);
        for (i, &v) in b.iter().enumerate() {
            let (s1, s2) = (slices[2 * i], slices[2 * i + 1]);
            assert!(s1.fract() == 0.0 && s2.fract() == 0.0);
            let back = s1 * 2f64.powi(exp - 15) + s2 * 2f64.powi(exp - 30) + right[i];
            assert_eq!(back, v, "{v:e}");
            assert_eq!(right[4 + i], v);
        }
    }

    #[test]
    fn special_and_zero_lines() {
        let (mut slice, mut left) = (Vec::new(), Vec::new());
        let values = [1.0, f64::NAN, -0.0, -0.0, 0.0, -0.0];
        let rows = split_rows(&values, (3, 2), 20, &mut slice, &mut left);
        assert_eq!(rows[0].kind, LineKind::Other);
        assert_eq!(rows[1].kind, LineKind::Zero);
        assert!(rows[1].all_negative && !rows[1].all_positive);
        assert_eq!(rows[2].kind, LineKind::Zero);
        assert!(!rows[2].all_negative && !rows[2].all_positive);
        assert!(slice.iter().all(|v| *v == 0.0));
        let rows = split_rows(&[1e300, 1e-300], (2, 1), 20, &mut slice, &mut left);
        assert_eq!(rows[0].kind, LineKind::Other);
    }
}
