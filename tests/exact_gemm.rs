//! `exact::gemm` and `exact::gemv` against the exact dot product of each row and column
//! (itself checked against big integers in `tests/exact.rs`): random, ill-conditioned and
//! wide-range inputs, edge sizes, any thread count, any kernel, IEEE special values.
//!
//! Every random case derives from a printed seed; `FPREV_SEED` replays one.

#[path = "../benches/common/exact_solvers.rs"]
mod solvers;

use fprev::exact::{
    self, Accumulator, Gemm, GemmKernel, Matrixmultiply, Operand, RoundingFormat, ShapeError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The seed of the random cases (override with `FPREV_SEED`).
fn base_seed() -> u64 {
    fprev::scramble::property_seed(1)
}

/// How the random matrices are drawn.
#[derive(Clone, Copy, Debug)]
enum MatrixKind {
    /// Uniform in [-1, 1].
    Unit,
    /// Random sign and mantissa, binary exponents in [-30, 30].
    Moderate,
    /// Binary exponents in [-1000, 1000].
    Wide,
    /// Rows of `a` that nearly cancel against the columns of `b`: large terms in pairs
    /// of opposite sign, the exact result many orders of magnitude below them.
    Cancelling,
    /// Small integers: the products are exact and many elements exactly zero.
    Integers,
}

const KINDS: [MatrixKind; 5] = [
    MatrixKind::Unit,
    MatrixKind::Moderate,
    MatrixKind::Wide,
    MatrixKind::Cancelling,
    MatrixKind::Integers,
];

fn with_exponent(rng: &mut ChaCha8Rng, lo: i32, hi: i32) -> f64 {
    let mantissa = 1.0 + rng.random::<f64>();
    let sign = if rng.random::<bool>() { -1.0 } else { 1.0 };
    let e = rng.random_range(lo..=hi);
    sign * mantissa * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
}

/// An `m x k` matrix `a` and a `k x n` matrix `b` of the given kind.
fn draw(
    kind: MatrixKind,
    (m, n, k): (usize, usize, usize),
    rng: &mut ChaCha8Rng,
) -> (Vec<f64>, Vec<f64>) {
    let value = |rng: &mut ChaCha8Rng| match kind {
        MatrixKind::Unit => rng.random_range(-1.0..=1.0),
        MatrixKind::Moderate => with_exponent(rng, -30, 30),
        MatrixKind::Wide => with_exponent(rng, -1000, 1000),
        MatrixKind::Integers => rng.random_range(-3i32..=3) as f64,
        MatrixKind::Cancelling => with_exponent(rng, -2, 2),
    };
    let mut a: Vec<f64> = (0..m * k).map(|_| value(rng)).collect();
    let b: Vec<f64> = (0..k * n).map(|_| value(rng)).collect();
    if let (MatrixKind::Cancelling, true) = (kind, n > 0) {
        // Each row's second half mirrors its first against the first column's halves, so
        // that element (i, 0) cancels down to a tiny remainder and its neighbours nearly do.
        let half = k / 2;
        for i in 0..m {
            for l in 0..half {
                let (p, q) = (b[l * n], b[(half + l) * n]);
                if q != 0.0 {
                    a[i * k + half + l] = -a[i * k + l] * p / q;
                }
            }
            if k > 0 {
                a[i * k] += with_exponent(rng, -60, -40);
            }
        }
    }
    (a, b)
}

/// Column `j` of the row-major `k x n` matrix `b`.
fn column(b: &[f64], k: usize, n: usize, j: usize) -> Vec<f64> {
    (0..k).map(|l| b[l * n + j]).collect()
}

/// The reference: each element as the exact dot product of its row and column, rounded
/// once to `format`.
fn reference(
    a: &[f64],
    b: &[f64],
    (m, n, k): (usize, usize, usize),
    format: RoundingFormat,
) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for j in 0..n {
        let col = column(b, k, n, j);
        for i in 0..m {
            let mut acc = Accumulator::new();
            acc.add_dot(&a[i * k..(i + 1) * k], &col);
            out[i * n + j] = acc.round_to(format);
        }
    }
    out
}

/// The first element where `got` and `want` differ in bits (NaN equals NaN).
fn first_difference(got: &[f64], want: &[f64]) -> Option<(usize, f64, f64)> {
    got.iter()
        .zip(want)
        .enumerate()
        .find(|(_, (g, w))| g.to_bits() != w.to_bits() && !(g.is_nan() && w.is_nan()))
        .map(|(i, (g, w))| (i, *g, *w))
}

fn check_f64(a: &[f64], b: &[f64], shape: (usize, usize, usize), context: &str) -> Vec<f64> {
    let (m, n, k) = shape;
    let got = exact::gemm(m, n, k, a, b).unwrap_or_else(|e| panic!("{context}: {e}"));
    let want = reference(a, b, shape, RoundingFormat::F64);
    if let Some((i, g, w)) = first_difference(&got, &want) {
        panic!(
            "{context}: element ({}, {}) is {g:e} ({:#x}), the exact dot product rounds to \
             {w:e} ({:#x})",
            i / n,
            i % n,
            g.to_bits(),
            w.to_bits()
        );
    }
    got
}

fn shapes() -> Vec<(usize, usize, usize)> {
    vec![
        (0, 0, 0),
        (0, 3, 2),
        (3, 0, 2),
        (2, 3, 0),
        (1, 1, 1),
        (1, 1, 7),
        (7, 1, 13),
        (1, 13, 7),
        (13, 7, 31),
        (31, 29, 67),
        (67, 61, 257),
        (40, 37, 512),
    ]
}

#[test]
fn every_element_is_the_correctly_rounded_dot_product() {
    let seed = base_seed();
    for (s, shape) in shapes().into_iter().enumerate() {
        for kind in KINDS {
            let case_seed = seed.wrapping_mul(1000) + s as u64;
            let mut rng = ChaCha8Rng::seed_from_u64(case_seed);
            let (a, b) = draw(kind, shape, &mut rng);
            check_f64(
                &a,
                &b,
                shape,
                &format!("{kind:?} {shape:?}, seed {case_seed} (FPREV_SEED={seed})"),
            );
        }
    }
}

#[test]
fn long_inner_dimensions_sum_their_chunks_exactly() {
    // k beyond one exact slice product of 4096 terms.
    let seed = base_seed();
    for (kind, k) in [
        (MatrixKind::Unit, 4099),
        (MatrixKind::Moderate, 8200),
        (MatrixKind::Cancelling, 4500),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed + k as u64);
        let shape = (3, 5, k);
        let (a, b) = draw(kind, shape, &mut rng);
        check_f64(
            &a,
            &b,
            shape,
            &format!("{kind:?} k = {k}, seed {}", seed + k as u64),
        );
    }
}

#[test]
fn rows_and_columns_of_different_scales() {
    // Each row and column scaled by its own power of two, over 2^±400: the slices follow
    // each line's own exponent, and elements near the range limits go the exact way.
    let seed = base_seed() + 77;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (m, n, k) = (23, 19, 41);
    let (mut a, mut b) = draw(MatrixKind::Unit, (m, n, k), &mut rng);
    for i in 0..m {
        let s = 2f64.powi(rng.random_range(-400..=400));
        a[i * k..(i + 1) * k].iter_mut().for_each(|v| *v *= s);
    }
    for j in 0..n {
        let s = 2f64.powi(rng.random_range(-500..=500));
        (0..k).for_each(|l| b[l * n + j] *= s);
    }
    check_f64(&a, &b, (m, n, k), &format!("scaled lines, seed {seed}"));
}

#[test]
fn same_bits_for_every_thread_count_and_kernel() {
    let seed = base_seed() + 5;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let shape = (97, 89, 300);
    let (m, n, k) = shape;
    for kind in [
        MatrixKind::Unit,
        MatrixKind::Moderate,
        MatrixKind::Cancelling,
        MatrixKind::Wide,
    ] {
        let (a, b) = draw(kind, shape, &mut rng);
        let want = check_f64(&a, &b, shape, &format!("{kind:?}, seed {seed}"));
        for threads in 1..=8 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap_or_else(|e| panic!("thread pool: {e}"));
            let got = pool
                .install(|| exact::gemm(m, n, k, &a, &b))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                first_difference(&got, &want),
                None,
                "{kind:?}, {threads} threads, seed {seed}"
            );
        }
        // Kernels that sum in other orders give other rest terms, never other results.
        let reversed = |m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]| {
            for i in 0..m {
                for j in 0..n {
                    c[i * n + j] = (0..k).rev().map(|l| a[i * k + l] * b[l * n + j]).sum();
                }
            }
        };
        let fused = |m: usize, n: usize, k: usize, a: &[f64], b: &[f64], c: &mut [f64]| {
            for i in 0..m {
                for j in 0..n {
                    c[i * n + j] =
                        (0..k).fold(0.0, |s: f64, l| a[i * k + l].mul_add(b[l * n + j], s));
                }
            }
        };
        let got = Gemm::new().kernel(reversed).gemm(m, n, k, &a, &b);
        assert_eq!(
            got.as_deref().ok().and_then(|g| first_difference(g, &want)),
            None
        );
        let got = Gemm::new().kernel(fused).gemm(m, n, k, &a, &b);
        assert_eq!(
            got.as_deref().ok().and_then(|g| first_difference(g, &want)),
            None
        );
        // A reused workspace, and a second product of another shape in between.
        let mut gemm = Gemm::new();
        let _ = gemm.gemm(3, 2, 5, &[1.0; 15], &[2.0; 10]);
        let got = gemm.gemm(m, n, k, &a, &b);
        assert_eq!(
            got.as_deref().ok().and_then(|g| first_difference(g, &want)),
            None
        );
    }
}

#[test]
fn ieee_special_values_follow_the_dot_product() {
    let (m, n, k) = (4, 5, 6);
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() + 9);
    let (mut a, mut b) = draw(MatrixKind::Unit, (m, n, k), &mut rng);
    a[0] = f64::NAN; // row 0: NaN everywhere
    a[k + 1] = f64::INFINITY; // row 1: inf times column values, NaN against a zero
    b[n + 2] = 0.0; // column 2 meets the infinity with a zero
    a[2 * k..3 * k].fill(-0.0); // row 2: all -0.0
    for l in 0..k {
        b[l * n + 3] = 0.0; // column 3: all +0.0
        b[l * n + 4] = -(l as f64 + 1.0); // column 4: negative
    }
    a[3 * k..4 * k].fill(0.0); // row 3: all +0.0
    let got = exact::gemm(m, n, k, &a, &b).unwrap_or_default();
    let want = reference(&a, &b, (m, n, k), RoundingFormat::F64);
    assert_eq!(first_difference(&got, &want), None, "{got:?} vs {want:?}");
    assert!(got[..n].iter().all(|v| v.is_nan()));
    assert!(got[n + 2].is_nan());
    // -0.0 * negative values: +0.0; +0.0 * negative values: -0.0.
    assert_eq!(got[2 * n + 4].to_bits(), 0.0f64.to_bits());
    assert_eq!(got[3 * n + 4].to_bits(), (-0.0f64).to_bits());
    // An empty inner dimension: every element is an empty sum, +0.0.
    assert_eq!(exact::gemm::<f64>(2, 2, 0, &[], &[]), Ok(vec![0.0; 4]));
}

#[test]
fn f32_products_round_once() {
    let seed = base_seed() + 11;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for shape in [(1, 1, 3), (17, 13, 64), (33, 40, 300)] {
        let (m, n, k) = shape;
        for kind in [
            MatrixKind::Unit,
            MatrixKind::Moderate,
            MatrixKind::Cancelling,
            MatrixKind::Integers,
        ] {
            let (a, b) = draw(kind, shape, &mut rng);
            let a: Vec<f32> = a.iter().map(|&v| v as f32).collect();
            let b: Vec<f32> = b.iter().map(|&v| v as f32).collect();
            let got = exact::gemm(m, n, k, &a, &b).unwrap_or_default();
            let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
            let want = reference(&wide(&a), &wide(&b), shape, RoundingFormat::F32);
            let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
            assert_eq!(
                first_difference(&got, &want),
                None,
                "{kind:?} {shape:?}, seed {seed}"
            );
        }
    }
    // 1 + 2^-24 + 2^-60: rounding the f64 sum to f32 would round twice and give 1.
    let a = [1.0f32, 2f32.powi(-24), 2f32.powi(-60)];
    assert_eq!(
        exact::gemm(1, 1, 3, &a, &[1.0; 3]),
        Ok(vec![1.0 + f32::EPSILON])
    );
}

#[test]
fn gemv_is_the_dot_product_of_each_row() {
    let seed = base_seed() + 13;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for kind in KINDS {
        let (m, k) = (37, 1100);
        let (a, x) = draw(kind, (m, 1, k), &mut rng);
        let want = reference(&a, &x, (m, 1, k), RoundingFormat::F64);
        let got = exact::gemv(m, k, &a, &x).unwrap_or_default();
        assert_eq!(first_difference(&got, &want), None, "{kind:?}, seed {seed}");
        let through_kernel = Gemm::new().gemv(m, k, &a, &x).unwrap_or_default();
        assert_eq!(first_difference(&through_kernel, &want), None, "{kind:?}");
        let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let got32 = exact::gemv(m, k, &a32, &x32).unwrap_or_default();
        let want32 = reference(
            &a32.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            &x32.iter().map(|&v| v as f64).collect::<Vec<_>>(),
            (m, 1, k),
            RoundingFormat::F32,
        );
        let got32: Vec<f64> = got32.iter().map(|&v| v as f64).collect();
        assert_eq!(first_difference(&got32, &want32), None, "{kind:?} f32");
    }
}

#[test]
fn shape_mismatches_are_errors() {
    let err = exact::gemm(2, 3, 4, &[0.0; 8], &[0.0; 11]);
    assert_eq!(
        err,
        Err(ShapeError::Length {
            operand: Operand::B,
            expected: 12,
            found: 11
        })
    );
    assert_eq!(
        exact::gemm::<f64>(usize::MAX, 2, 2, &[], &[0.0; 4]),
        Err(ShapeError::TooLarge {
            operand: Operand::A
        })
    );
    assert_eq!(
        exact::gemv(2, 3, &[0.0; 6], &[0.0; 2]),
        Err(ShapeError::Length {
            operand: Operand::X,
            expected: 3,
            found: 2
        })
    );
    assert!(exact::gemv(2, 3, &[0.0f32; 5], &[0.0; 3]).is_err());
    let message = format!(
        "{}",
        exact::gemm(1, 1, 2, &[0.0; 3], &[0.0; 2]).unwrap_err()
    );
    assert!(message.contains("`a` holds 3 values"), "{message}");
}

#[test]
fn the_default_kernel_is_a_plain_product() {
    let mut c = vec![f64::NAN; 6];
    Matrixmultiply.gemm(
        2,
        3,
        2,
        &[1.0, 2.0, 3.0, 4.0],
        &[1.0, 0.0, 1.0, 0.0, 1.0, 1.0],
        &mut c,
    );
    assert_eq!(c, [1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
}

#[cfg(feature = "ndarray")]
#[test]
fn ndarray_views_of_any_layout() {
    use ndarray::Array2;
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() + 17);
    let (a, b) = draw(MatrixKind::Moderate, (9, 7, 11), &mut rng);
    let a = Array2::from_shape_vec((9, 11), a).unwrap_or_default();
    let b = Array2::from_shape_vec((11, 7), b).unwrap_or_default();
    let want = exact::gemm(
        9,
        7,
        11,
        a.as_slice().unwrap_or(&[]),
        b.as_slice().unwrap_or(&[]),
    );
    let got = exact::gemm_array(a.view(), b.view()).map(|c| c.iter().copied().collect());
    assert_eq!(got, want);
    // Column-major copies, through transposed views.
    let at = a.t().as_standard_layout().into_owned();
    let bt = b.t().as_standard_layout().into_owned();
    let got = exact::gemm_array(at.t(), bt.t()).map(|c| c.iter().copied().collect());
    assert_eq!(got, want);
    assert_eq!(
        exact::gemm_array(a.view(), a.view()).err(),
        Some(ShapeError::Inner { left: 11, right: 9 })
    );
}

/// The solvers of `examples/cg.rs`: CG through the exact dot kernel and block CG through
/// `exact::gemm` give the same bits on rayon pools of 1 to 8 threads.
#[test]
fn solvers_are_bit_identical_on_every_pool() {
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() + 19);
    let sparse = solvers::Sparse::laplacian(12, 0.1);
    let rhs: Vec<f64> = (0..sparse.n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let (m, s) = (6, 3);
    let n = m * m;
    let scale: Vec<f64> = (0..n)
        .map(|_| 2f64.powf(rng.random_range(-3.0..3.0)))
        .collect();
    let dense = solvers::dense_spd(m, 0.05, &scale);
    let block_rhs: Vec<f64> = (0..n * s).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut first = None;
    for threads in 1..=8 {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap_or_else(|e| panic!("thread pool: {e}"));
        let runs = pool.install(|| {
            let cg = solvers::cg_exact(&sparse, &rhs, 1e-10, 1000);
            let mut product = solvers::exact_product;
            let block = solvers::block_cg(&dense, n, &block_rhs, s, &mut product, 1e-10, 500);
            (cg, block)
        });
        let (Ok(cg), Ok(block)) = runs else {
            panic!("solver error on {threads} threads: {runs:?}");
        };
        assert!(cg.history.len() > 10 && block.history.len() > 5);
        let bits = |solve: &solvers::Solve| {
            (
                solve
                    .history
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>(),
                solve.x_hash,
            )
        };
        let now = (bits(&cg), bits(&block));
        match &first {
            None => first = Some(now),
            Some(want) => assert_eq!(*want, now, "{threads} threads"),
        }
    }
}
