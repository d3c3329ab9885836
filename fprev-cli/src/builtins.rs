//! The built-in real-library targets of `fprev reveal <target>`.
//!
//! Each one calls the library exactly as user code would, on inputs of length `n` (or
//! `rows x n` by `n x cols` matrices), through [`fprev::ops`] so that matrix products are
//! probed one row per probe. This file is also compiled into the integration tests, which
//! assert the orders the libraries' sources imply.

use fprev::ops::{self, ElementOrders, ElementReveal};
use fprev::{ProbeFloat, RevealError};

/// A built-in target.
pub struct Builtin {
    /// Name on the command line.
    pub name: &'static str,
    /// What it calls.
    pub about: &'static str,
    /// Accepted `--dtype` values.
    pub dtypes: &'static [&'static str],
    /// Whether it is a matrix product (revealed per output element).
    pub matrix: bool,
}

/// Every built-in target, in `fprev targets` order.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "iter-sum",
        about: "x.iter().sum() on a slice (core::iter::Sum for floats)",
        dtypes: &["f32", "f64"],
        matrix: false,
    },
    Builtin {
        name: "unrolled4",
        about: "a hand-unrolled loop: 4 accumulators, (a0+a1)+(a2+a3), then the tail",
        dtypes: &["f32", "f64", "f16", "bf16"],
        matrix: false,
    },
    Builtin {
        name: "ndarray-sum",
        about: "ndarray Array1::sum (numeric_util::unrolled_fold)",
        dtypes: &["f32", "f64"],
        matrix: false,
    },
    Builtin {
        name: "ndarray-dot",
        about: "ndarray 1-D dot with a vector of ones (numeric_util::unrolled_dot)",
        dtypes: &["f32", "f64"],
        matrix: false,
    },
    Builtin {
        name: "ndarray-matmul",
        about: "ndarray Array2::dot, rows x n by n x cols (matrixmultiply inside)",
        dtypes: &["f32", "f64"],
        matrix: true,
    },
    Builtin {
        name: "matrixmultiply-gemm",
        about: "matrixmultiply::sgemm / dgemm, rows x n by n x cols",
        dtypes: &["f32", "f64"],
        matrix: true,
    },
    Builtin {
        name: "matrixmultiply-f16",
        about: "f16 operands widened to f32 and multiplied by sgemm (--dtype f16 --acc-dtype f32)",
        dtypes: &["f32", "f16"],
        matrix: true,
    },
    Builtin {
        name: "nalgebra-matmul",
        about: "nalgebra DMatrix * DMatrix, rows x n by n x cols",
        dtypes: &["f32", "f64"],
        matrix: true,
    },
    Builtin {
        name: "rayon-sum",
        about: "rayon x.par_iter().sum() (work stealing: the order can change run to run)",
        dtypes: &["f32", "f64"],
        matrix: false,
    },
];

/// Look a target up by name.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Size of a built-in revelation.
#[derive(Clone, Copy, Debug)]
pub struct Size {
    /// Summands per output (`k` of a matrix product).
    pub n: usize,
    /// Rows of `A` (matrix targets).
    pub rows: usize,
    /// Columns of `B` (matrix targets).
    pub cols: usize,
}

impl Size {
    /// A square problem.
    pub fn square(n: usize) -> Size {
        Size {
            n,
            rows: n,
            cols: n,
        }
    }
}

/// Float types the built-ins are generic over.
pub trait Real:
    ProbeFloat
    + ndarray::LinalgScalar
    + nalgebra::RealField
    + Copy
    + std::iter::Sum
    + for<'a> std::iter::Sum<&'a Self>
{
    /// `sgemm` or `dgemm`, row-major, `C = A B`.
    fn gemm(m: usize, k: usize, n: usize, a: &[Self], b: &[Self], c: &mut [Self]);
}

/// `Real` for a float type through its matrixmultiply routine (`sgemm` / `dgemm`).
macro_rules! real_via {
    ($t:ty, $gemm:path) => {
        impl Real for $t {
            fn gemm(m: usize, k: usize, n: usize, a: &[$t], b: &[$t], c: &mut [$t]) {
                assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
                let (k_i, n_i) = (k as isize, n as isize);
                // SAFETY: the slices hold the row-major matrices the strides describe.
                unsafe {
                    $gemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k_i,
                        1,
                        b.as_ptr(),
                        n_i,
                        1,
                        0.0,
                        c.as_mut_ptr(),
                        n_i,
                        1,
                    )
                }
            }
        }
    };
}

real_via!(f32, matrixmultiply::sgemm);
real_via!(f64, matrixmultiply::dgemm);

/// A hand-unrolled sum: four accumulators over `x[4i..4i+4]`, combined as
/// `(a0 + a1) + (a2 + a3)`, then the tail added in order.
pub fn unrolled4<T: ProbeFloat>(x: &[T]) -> T {
    let mut acc = [T::ZERO; 4];
    let chunks = x.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        for l in 0..4 {
            acc[l] = acc[l].add(c[l]);
        }
    }
    let mut s = acc[0].add(acc[1]).add(acc[2].add(acc[3]));
    for &v in tail {
        s = s.add(v);
    }
    s
}

/// Reveal a built-in target's order(s) for one float type.
pub fn reveal<T: Real>(
    name: &str,
    size: Size,
    config: &ElementReveal,
    threads: Option<usize>,
) -> Result<ElementOrders, RevealError> {
    let Size { n, rows, cols } = size;
    let one = |f: &dyn Fn(&[T]) -> T| {
        config.run(ops::reduction(1, n, 1, |x: &[T], out: &mut [T]| {
            out[0] = f(x)
        }))
    };
    match name {
        "iter-sum" => one(&|x| x.iter().sum::<T>()),
        "unrolled4" => one(&|x| unrolled4(x)),
        "ndarray-sum" => one(&|x| ndarray::ArrayView1::from(x).sum()),
        "ndarray-dot" => {
            let ones = ndarray::Array1::<T>::ones(n);
            one(&|x| ndarray::ArrayView1::from(x).dot(&ones))
        }
        "ndarray-matmul" => {
            config.run(ops::gemm(rows, n, cols, |a: &[T], b: &[T], c: &mut [T]| {
                let a = ndarray::ArrayView2::from_shape((rows, n), a).expect("shape");
                let b = ndarray::ArrayView2::from_shape((n, cols), b).expect("shape");
                let p = a.dot(&b);
                for (dst, src) in c.iter_mut().zip(p.iter()) {
                    *dst = *src;
                }
            }))
        }
        "matrixmultiply-gemm" => {
            config.run(ops::gemm(rows, n, cols, |a: &[T], b: &[T], c: &mut [T]| {
                T::gemm(rows, n, cols, a, b, c)
            }))
        }
        "nalgebra-matmul" => {
            config.run(ops::gemm(rows, n, cols, |a: &[T], b: &[T], c: &mut [T]| {
                let a = nalgebra::DMatrix::from_row_slice(rows, n, a);
                let b = nalgebra::DMatrix::from_row_slice(n, cols, b);
                let p = a * b;
                for i in 0..rows {
                    for j in 0..cols {
                        c[i * cols + j] = p[(i, j)];
                    }
                }
            }))
        }
        "rayon-sum" => {
            use rayon::prelude::*;
            let sum = |x: &[T]| x.par_iter().sum::<T>();
            match threads {
                Some(t) => {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(t)
                        .build()
                        .map_err(|e| RevealError::Target {
                            probe: None,
                            message: format!("cannot start {t} rayon threads: {e}"),
                        })?;
                    pool.install(|| one(&sum))
                }
                None => one(&sum),
            }
        }
        "matrixmultiply-f16" => Err(RevealError::InvalidSize {
            n,
            reason: "matrixmultiply-f16 is revealed with reveal_f16_operands".into(),
        }),
        other => Err(RevealError::InvalidSize {
            n,
            reason: format!("no built-in target named {other:?}"),
        }),
    }
}

/// `matrixmultiply-f16`: f16 operands, converted to f32, multiplied by sgemm.
pub fn reveal_f16_operands(
    size: Size,
    config: &ElementReveal,
) -> Result<ElementOrders, RevealError> {
    use fprev::half::f16;
    let Size { n, rows, cols } = size;
    let (mut a32, mut b32) = (Vec::new(), Vec::new());
    config.run(ops::gemm(
        rows,
        n,
        cols,
        |a: &[f16], b: &[f16], c: &mut [f32]| {
            a32.clear();
            a32.extend(a.iter().map(|v| v.to_f32()));
            b32.clear();
            b32.extend(b.iter().map(|v| v.to_f32()));
            f32::gemm(rows, n, cols, &a32, &b32, c)
        },
    ))
}

/// `unrolled4` for the half types (no `Sum`/ndarray support needed).
pub fn reveal_unrolled<T: ProbeFloat>(
    n: usize,
    config: &ElementReveal,
) -> Result<ElementOrders, RevealError> {
    config.run(ops::reduction(1, n, 1, |x: &[T], out: &mut [T]| {
        out[0] = unrolled4(x)
    }))
}
