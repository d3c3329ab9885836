//! Registered functions and their pinned summation orders.
//!
//! `#[fprev::accumulator(reveal(op = "dot", sizes = [8, 100], dtype = f32))]` registers a
//! function through [`inventory`]; [`registered`] lists every registration linked into
//! the running binary and [`check_registered`], called from one `#[test]`, reveals each
//! at its sizes and compares the trees with the ones pinned under `fprev-orders/`. That
//! is how a project notices that a dependency upgrade, a target CPU or a thread count
//! changed its sums.
//!
//! ```no_run
//! #[fprev::accumulator(reveal(op = "sum", sizes = [4, 16]))]
//! pub fn total(x: &[f32]) -> f32 {
//!     let mut s = 0.0;
//!     for v in x {
//!         s += v;
//!     }
//!     s
//! }
//!
//! #[test]
//! fn summation_orders_are_pinned() {
//!     fprev::check_registered().unwrap();
//! }
//! ```
//!
//! Operations and the signature each needs (`T` is `f32`, `f64`, `half::f16` or
//! `half::bf16`):
//!
//! | op | signature | probed as |
//! | --- | --- | --- |
//! | `sum` | `fn(&[T]) -> T` | `f(x)` |
//! | `dot` | `fn(&[T], &[T]) -> T` | `f(x, ones)` |
//! | `gemv` | `fn(m: usize, n: usize, a: &[T], x: &[T]) -> Vec<T>` (`a` row-major `m x n`, `y = A x`) | `f(1, n, x, ones)[0]` |
//! | `gemm` | `fn(m: usize, n: usize, k: usize, a: &[T], b: &[T]) -> Vec<T>` (row-major, `C = A B`, `A` is `m x k`) | `f(1, 1, k, x, ones)[0]` |
//!
//! **Registrations in a library crate** are only seen by a binary that links the crate:
//! an integration test or example that checks them must name the crate, for instance
//! with `use the_crate as _;`, or the linker drops the registrations with the unused
//! crate.

mod check;

use std::fmt;

pub use check::{
    check_registered, check_registered_allow_empty, Check, CheckError, CheckOutcome, CheckSummary,
    CheckedOrder,
};

/// Environment variable: `1` rewrites every pinned order with the one revealed now.
/// Default: unset (pin only orders that have no file yet).
pub const FPREV_BLESS: &str = crate::scramble::vars::FPREV_BLESS;

/// Environment variable: the directory pinned orders live in. Default:
/// `$CARGO_MANIFEST_DIR/fprev-orders` (the package whose test runs), else
/// `./fprev-orders`.
pub const FPREV_ORDERS_DIR: &str = crate::scramble::vars::FPREV_ORDERS_DIR;

/// The operation a registered function computes, which decides how it is probed.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `fn(&[T]) -> T`.
    Sum,
    /// `fn(&[T], &[T]) -> T`.
    Dot,
    /// `fn(m, n, a, x) -> Vec<T>`.
    Gemv,
    /// `fn(m, n, k, a, b) -> Vec<T>`.
    Gemm,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Sum => "sum",
            Op::Dot => "dot",
            Op::Gemv => "gemv",
            Op::Gemm => "gemm",
        })
    }
}

/// Reveals the registered function's tree at one size with one seed.
pub type RevealFn =
    fn(n: usize, seed: u64) -> Result<crate::tree::SumTree, crate::reveal::RevealError>;

/// The signature of a registered `sum`.
pub type SumFn<T> = fn(&[T]) -> T;
/// The signature of a registered `dot`.
pub type DotFn<T> = fn(&[T], &[T]) -> T;
/// The signature of a registered `gemv`: `(m, n, a, x) -> y`, `a` row-major `m x n`.
pub type GemvFn<T> = fn(usize, usize, &[T], &[T]) -> Vec<T>;
/// The signature of a registered `gemm`: `(m, n, k, a, b) -> c`, row-major, `a` is `m x k`.
pub type GemmFn<T> = fn(usize, usize, usize, &[T], &[T]) -> Vec<T>;

/// Names the registered function's float type.
pub type DtypeFn = fn() -> &'static str;

/// A function registered by `#[fprev::accumulator(reveal(..))]`.
pub struct Registration {
    /// `module::path::function`.
    pub name: &'static str,
    /// Source file of the function.
    pub file: &'static str,
    /// Line of the function.
    pub line: u32,
    /// The operation.
    pub op: Op,
    /// Sizes to reveal (the reduction length).
    pub sizes: &'static [usize],
    dtype: DtypeFn,
    reveal: RevealFn,
}

impl Registration {
    /// Not public API: built by generated code.
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        file: &'static str,
        line: u32,
        op: Op,
        sizes: &'static [usize],
        dtype: DtypeFn,
        reveal: RevealFn,
    ) -> Registration {
        Registration {
            name,
            file,
            line,
            op,
            sizes,
            dtype,
            reveal,
        }
    }

    /// The float type's name (`f32`, `f64`, `f16`, `bf16`).
    pub fn dtype(&self) -> &'static str {
        (self.dtype)()
    }

    /// Reveal the function's tree over `n` inputs (seeded pivots and verification).
    pub fn reveal(
        &self,
        n: usize,
        seed: u64,
    ) -> Result<crate::tree::SumTree, crate::reveal::RevealError> {
        (self.reveal)(n, seed)
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("name", &self.name)
            .field("op", &self.op)
            .field("sizes", &self.sizes)
            .field("dtype", &self.dtype())
            .field("file", &self.file)
            .field("line", &self.line)
            .finish()
    }
}

impl fmt::Display for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} over {}, sizes {:?}; {}:{})",
            self.name,
            self.op,
            self.dtype(),
            self.sizes,
            self.file,
            self.line
        )
    }
}

inventory::collect!(Registration);

/// Every registration linked into this binary, sorted by name.
///
/// ```
/// #[fprev::accumulator(reveal(op = "sum", sizes = [4]))]
/// fn total(x: &[f64]) -> f64 {
///     x.iter().sum()
/// }
/// # let _ = total;
/// let names: Vec<&str> = fprev::registered().iter().map(|r| r.name).collect();
/// assert!(names.iter().any(|n| n.ends_with("total")));
/// ```
pub fn registered() -> Vec<&'static Registration> {
    let mut v: Vec<&'static Registration> = inventory::iter::<Registration>.into_iter().collect();
    v.sort_by(|a, b| (a.name, a.line).cmp(&(b.name, b.line)));
    v
}

/// Not public API. Used by generated code.
#[doc(hidden)]
pub mod private {
    use crate::float::ProbeFloat;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    use crate::reveal::{Reveal, RevealError};
    use crate::tree::SumTree;

    pub use super::{DotFn, GemmFn, GemvFn, Op, Registration, SumFn};

    fn ones<T: ProbeFloat>(n: usize) -> Vec<T> {
        vec![T::from_f64_round(1.0); n]
    }

    fn first<T: ProbeFloat>(v: Vec<T>, op: &str) -> T {
        match v.first() {
            Some(&x) => x,
            None => panic!("the registered {op} returned an empty vector"),
        }
    }

    /// Whether the annotated function was entered: its body marks it, a reveal of its
    /// registration checks it, so that a registration that names another function (an
    /// associated function's bare name finding a free twin) is an error, not a
    /// silently wrong tree. A relaxed load per call (and a store on the first).
    pub struct Arrival {
        entered: AtomicBool,
        /// Held by a reveal of this registration: a second one (a test beside another,
        /// both pinning the same function) waits, so neither clears the mark while the
        /// other is looking for it.
        revealing: Mutex<()>,
    }

    impl Arrival {
        /// Not yet entered.
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Arrival {
            Arrival {
                entered: AtomicBool::new(false),
                revealing: Mutex::new(()),
            }
        }

        /// The annotated function was entered.
        #[inline]
        pub fn arrive(&self) {
            if !self.entered.load(Ordering::Relaxed) {
                self.entered.store(true, Ordering::Relaxed);
            }
        }
    }

    /// `adapter.reveal(n, seed)`, an error unless the annotated function (`arrival`'s)
    /// was entered while revealing. Calls of the function from elsewhere during the
    /// reveal can only hide a wrong registration, never fail a right one.
    pub fn reveal_entered(
        adapter: &impl Adapter,
        arrival: &Arrival,
        name: &str,
        n: usize,
        seed: u64,
    ) -> Result<SumTree, RevealError> {
        let _alone = arrival
            .revealing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        arrival.entered.store(false, Ordering::Relaxed);
        let tree = adapter.reveal(n, seed)?;
        if arrival.entered.load(Ordering::Relaxed) {
            Ok(tree)
        } else {
            Err(RevealError::NotTheRegisteredFunction {
                name: name.to_string(),
            })
        }
    }

    /// A registered function bound to its probing convention.
    pub trait Adapter {
        /// Reveal at size `n` with `seed`.
        fn reveal(&self, n: usize, seed: u64) -> Result<SumTree, RevealError>;
        /// The float type's name.
        fn dtype(&self) -> &'static str;
    }

    /// `f(x)`.
    pub struct SumAdapter<T>(SumFn<T>);
    /// `f(x, ones)`.
    pub struct DotAdapter<T>(DotFn<T>);
    /// `f(1, n, x, ones)[0]`.
    pub struct GemvAdapter<T>(GemvFn<T>);
    /// `f(1, 1, k, x, ones)[0]`.
    pub struct GemmAdapter<T>(GemmFn<T>);

    /// Probe `f(x)`.
    pub fn sum<T: ProbeFloat>(f: fn(&[T]) -> T) -> SumAdapter<T> {
        SumAdapter(f)
    }

    /// Probe `f(x, ones)`.
    pub fn dot<T: ProbeFloat>(f: fn(&[T], &[T]) -> T) -> DotAdapter<T> {
        DotAdapter(f)
    }

    /// Probe `f(1, n, x, ones)[0]`.
    pub fn gemv<T: ProbeFloat>(f: GemvFn<T>) -> GemvAdapter<T> {
        GemvAdapter(f)
    }

    /// Probe `f(1, 1, k, x, ones)[0]`.
    pub fn gemm<T: ProbeFloat>(f: GemmFn<T>) -> GemmAdapter<T> {
        GemmAdapter(f)
    }

    impl<T: ProbeFloat> Adapter for SumAdapter<T> {
        fn reveal(&self, n: usize, seed: u64) -> Result<SumTree, RevealError> {
            Reveal::new(n).seed(seed).run_sync(self.0)
        }
        fn dtype(&self) -> &'static str {
            T::FORMAT.name
        }
    }

    impl<T: ProbeFloat> Adapter for DotAdapter<T> {
        fn reveal(&self, n: usize, seed: u64) -> Result<SumTree, RevealError> {
            let (f, y) = (self.0, ones::<T>(n));
            Reveal::new(n).seed(seed).run_sync(move |x: &[T]| f(x, &y))
        }
        fn dtype(&self) -> &'static str {
            T::FORMAT.name
        }
    }

    impl<T: ProbeFloat> Adapter for GemvAdapter<T> {
        fn reveal(&self, n: usize, seed: u64) -> Result<SumTree, RevealError> {
            let (f, y) = (self.0, ones::<T>(n));
            Reveal::new(n)
                .seed(seed)
                .run_sync(move |a: &[T]| first(f(1, n, a, &y), "gemv"))
        }
        fn dtype(&self) -> &'static str {
            T::FORMAT.name
        }
    }

    impl<T: ProbeFloat> Adapter for GemmAdapter<T> {
        fn reveal(&self, k: usize, seed: u64) -> Result<SumTree, RevealError> {
            let (f, b) = (self.0, ones::<T>(k));
            Reveal::new(k)
                .seed(seed)
                .run_sync(move |a: &[T]| first(f(1, 1, k, a, &b), "gemm"))
        }
        fn dtype(&self) -> &'static str {
            T::FORMAT.name
        }
    }
}
