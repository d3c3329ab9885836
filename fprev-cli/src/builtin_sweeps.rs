//! Built-in sweeps: the library targets of `fprev reveal`, swept over the parameter that
//! changes their kernels' choices: the rows of a matrix product (batch invariance) and
//! the threads of a parallel sum.

use fprev::target::{Target, TargetError};
use fprev::{Reveal, Sweep, SweepError};

use crate::builtins::{self, Real};

/// What a built-in target is swept over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// Rows of `A` (the batch): element `(0, 0)` is revealed, row 0 checked.
    Rows,
    /// rayon threads.
    Threads,
}

impl Over {
    /// What a built-in is swept over, or why it cannot be.
    pub fn of(name: &str) -> Result<Over, String> {
        match name {
            "matrixmultiply-gemm" | "ndarray-matmul" | "nalgebra-matmul" => Ok(Over::Rows),
            "rayon-sum" => Ok(Over::Threads),
            other if builtins::find(other).is_some() => Err(format!(
                "{other} has no parameter to sweep: the matrix products sweep their rows \
                 (matrixmultiply-gemm, ndarray-matmul, nalgebra-matmul), rayon-sum its threads"
            )),
            other => Err(format!(
                "no built-in target {other:?}; `fprev targets` lists them"
            )),
        }
    }

    /// The word for a value in the output.
    pub fn label(self) -> &'static str {
        match self {
            Over::Rows => "rows",
            Over::Threads => "threads",
        }
    }
}

/// Row 0 of `rows x n` by `n x cols`: probes in row 0 of `A` (the other rows zero), ones
/// in `B`; answers element `(0, 0)` after checking that every element of row 0, which
/// sums the same values, answered the same bits.
struct Row0<T: Real> {
    name: String,
    rows: usize,
    n: usize,
    cols: usize,
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
}

impl<T: Real> Row0<T> {
    fn product(&mut self) {
        let (rows, n, cols) = (self.rows, self.n, self.cols);
        match self.name.as_str() {
            "ndarray-matmul" => {
                let a = ndarray::ArrayView2::from_shape((rows, n), &self.a[..]);
                let b = ndarray::ArrayView2::from_shape((n, cols), &self.b[..]);
                if let (Ok(a), Ok(b)) = (a, b) {
                    let p = a.dot(&b);
                    for (dst, src) in self.c.iter_mut().zip(p.iter()) {
                        *dst = *src;
                    }
                }
            }
            "nalgebra-matmul" => {
                let a = nalgebra::DMatrix::from_row_slice(rows, n, &self.a);
                let b = nalgebra::DMatrix::from_row_slice(n, cols, &self.b);
                let p = a * b;
                for j in 0..cols {
                    self.c[j] = p[(0, j)];
                }
            }
            _ => T::gemm(rows, n, cols, &self.a, &self.b, &mut self.c),
        }
    }
}

impl<T: Real> Target<T> for Row0<T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.a[..self.n].copy_from_slice(x);
        self.product();
        let first = self.c[0];
        if let Some(j) = (1..self.cols).find(|&j| self.c[j].to_bits_u64() != first.to_bits_u64()) {
            return Err(TargetError::new(format!(
                "element (0, {j}) answered {} where (0, 0) answered {} on the same values: \
                 row 0's elements sum in different orders (`fprev reveal {} --rows {} --cols {}` groups them)",
                self.c[j].to_f64(),
                first.to_f64(),
                self.name,
                self.rows,
                self.cols
            )));
        }
        Ok(first)
    }
}

/// The largest rayon pool a sweep starts: a pool is that many system threads at once.
const MAX_POOL_THREADS: usize = 1024;

/// rayon's parallel sum on a pool of a given size.
struct PoolSum(rayon::ThreadPool);

impl<T: Real + Send + Sync> Target<T> for PoolSum {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        use rayon::prelude::*;
        Ok(self.0.install(|| x.par_iter().sum::<T>()))
    }
}

/// A `rows x k` by `k x cols` product of built-in `name` whose row 0 is probed.
fn row0<T: Real>(name: &str, rows: usize, k: usize, cols: usize) -> Result<Row0<T>, TargetError> {
    if rows == 0 {
        return Err(TargetError::new("a product with no rows has no row 0"));
    }
    let zeros = |len: usize| {
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| TargetError::new(format!("cannot allocate {len} values")))?;
        v.resize(len, T::ZERO);
        Ok::<_, TargetError>(v)
    };
    let (a, mut b, c) = (zeros(rows * k)?, zeros(k * cols)?, zeros(rows * cols)?);
    b.iter_mut().for_each(|v| *v = T::from_f64_round(1.0));
    Ok(Row0 {
        name: name.to_string(),
        rows,
        n: k,
        cols,
        a,
        b,
        c,
    })
}

/// Sweeps matrix built-in `name` over the lengths `values` (`k`, the values element
/// `(0, 0)` sums), with `rows x cols` outputs.
pub fn sweep_k<T: Real + Send + Sync>(
    name: &str,
    reveal: &Reveal,
    values: &[usize],
    rows: usize,
    cols: usize,
) -> Result<Sweep, SweepError> {
    reveal.try_sweep_lengths(values.iter().copied(), |k| row0::<T>(name, rows, k, cols))
}

/// Sweeps built-in `name` over `values` (`over` says of what), `n` values summed.
pub fn sweep<T: Real + Send + Sync>(
    name: &str,
    over: Over,
    reveal: &Reveal,
    values: &[usize],
    n: usize,
    cols: usize,
) -> Result<Sweep, SweepError> {
    match over {
        Over::Rows => reveal.try_sweep(values.iter().copied(), |rows| {
            row0::<T>(name, rows, n, cols)
        }),
        Over::Threads => reveal.try_sweep::<T, _, _, _>(values.iter().copied(), |threads| {
            if threads == 0 {
                return Err(TargetError::new("a pool of 0 threads runs nothing"));
            }
            if threads > MAX_POOL_THREADS {
                return Err(TargetError::new(format!(
                    "a pool of {threads} threads: at most {MAX_POOL_THREADS} (each is a thread of the system)"
                )));
            }
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map(PoolSum)
                .map_err(|e| TargetError::new(format!("cannot start {threads} rayon threads: {e}")))
        }),
    }
}
