//! Accumulation chains: how many additions were chained into one value (Defour's
//! accumulator identification), counted by `#[fprev::accumulator]` and by [`Tracked`].
//!
//! A long chain of floating-point additions into one accumulator is where summation
//! order matters most: a sequential loop chains `n` additions, a blocked or strided loop
//! several shorter chains, a tree `~log2 n`. `#[fprev::accumulator]` rewrites the
//! accumulation sites of a function so each site records, per call, the chains it built
//! (kept in plain locals while the function runs and merged into the site's atomic
//! counters once when it returns); [`report`] lists the sites, longest chain first, with
//! a guess of the shape.
//!
//! ```
//! #[fprev::accumulator]
//! fn dot(a: &[f64], b: &[f64]) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..a.len() {
//!         s += a[i] * b[i];
//!     }
//!     s
//! }
//!
//! let x = vec![1.0; 1000];
//! assert_eq!(dot(&x, &x), 1000.0);
//! let report = fprev::chains::report();
//! let site = report.site("dot").unwrap();
//! assert_eq!(site.max_chain, 1000);
//! assert_eq!(site.shape, fprev::chains::ChainShape::Sequential);
//! println!("{report}");
//! ```
//!
//! Set `FPREV_CHAINS=1` ([`FPREV_CHAINS`]) to have the report printed on standard error
//! when the process exits (`cargo test` included): the runtime registers a C `atexit`
//! handler the first time a site records, which runs after `main` (and after the test
//! harness) returns or calls `std::process::exit`.

mod exit_report;
mod frame;
mod merged;
mod report;
mod site;
mod source;
mod tracked;

pub use report::{ChainReport, ChainShape, Order, SiteChains, HISTOGRAM_BUCKETS};
pub use site::{report, Site};
pub use source::{AccumulationKind, SiteSource};
pub use tracked::Tracked;

pub use crate::scramble::vars::FPREV_CHAINS;

/// Forget every count recorded so far (for tests that compare reports).
///
/// ```
/// fprev::chains::reset();
/// assert!(fprev::chains::report().sites.iter().all(|s| s.adds == 0));
/// ```
pub fn reset() {
    for s in site::all_sites() {
        s.clear();
    }
}

const UNREAD: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;
static COUNTING: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(UNREAD);

/// `FPREV_CHAINS`, read once per process (its one reader): `1` counts and prints the
/// report at exit; unset, empty or `0` does not; anything else says so and does not.
#[cold]
fn read_counting() -> bool {
    use core::sync::atomic::Ordering::Relaxed;
    let on = match std::env::var(FPREV_CHAINS) {
        Ok(v) if v == "1" => true,
        Ok(v) if v.is_empty() || v == "0" => false,
        Ok(v) => {
            // Two threads may read at once: the one that stores the value warns.
            if COUNTING
                .compare_exchange(UNREAD, OFF, Relaxed, Relaxed)
                .is_ok()
            {
                eprintln!(
                    "fprev: {FPREV_CHAINS}={v:?} is not 0 or 1; using the default (no chain counting, no report at exit)"
                );
            }
            false
        }
        Err(_) => false,
    };
    COUNTING.store(if on { ON } else { OFF }, Relaxed);
    on
}

/// Not public API. Used by generated code.
#[doc(hidden)]
pub mod private {
    pub use super::frame::{Finish, Frame, OnDrop, PlaceChain, PlaceChains, VarChain};
    pub use super::site::{ChainStats, CountingIter, Site};
    /// Not public API: [`AccumulationKind`](super::AccumulationKind) under the name generated code spells.
    pub use super::source::AccumulationKind as SiteKind;

    /// Not public API. Used by generated code.
    pub use super::tracked::Tracked;

    /// Whether this process counts chains (`FPREV_CHAINS=1`): which of its two bodies a
    /// function under `#[scramble(chains)]` runs. Read once per process, so that every
    /// call of a run takes the same body.
    #[inline]
    pub fn counting() -> bool {
        match super::COUNTING.load(core::sync::atomic::Ordering::Relaxed) {
            super::OFF => false,
            super::ON => true,
            _ => super::read_counting(),
        }
    }

    /// Whether a value's type is one of the float types whose chains are counted
    /// (`f32`, `f64`, `half::f16`, `half::bf16`, or a reference to one). Decided per
    /// monomorphized type, so generic code counts its float instances only; the string
    /// comparison folds to a constant in optimized builds.
    #[inline(always)]
    pub fn is_float<T: ?Sized>(_: *const T) -> bool {
        is_float_name(core::any::type_name::<T>())
    }

    /// Whether an iterator over `I` items sums floats.
    #[inline(always)]
    pub fn is_float_type<I: ?Sized>() -> bool {
        is_float_name_outlined(core::any::type_name::<I>())
    }

    /// Whether a fold's accumulator of type `B` carries float sums: a counted float type,
    /// or a tuple with one among its components (`(f64, f64, usize)`).
    #[inline(always)]
    pub fn sums_floats<B>() -> bool {
        sums_floats_name(core::any::type_name::<B>())
    }

    #[inline(never)]
    fn sums_floats_name(name: &str) -> bool {
        if counted(name).is_some() {
            return true;
        }
        let Some(inner) = name.strip_prefix('(').and_then(|n| n.strip_suffix(')')) else {
            return false;
        };
        // The components, split at the commas outside brackets (`(Foo<f64, u8>, i32)`
        // has two, neither a float).
        let (mut depth, mut start) = (0usize, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    if counted(inner[start..i].trim()).is_some() {
                        return true;
                    }
                    start = i + 1;
                }
                _ => {}
            }
        }
        counted(inner[start..].trim()).is_some()
    }

    /// [`is_float_name`] as a call: asked once per iterator, so the string comparisons
    /// are compiled once rather than inlined into every iterator site, which made long
    /// annotated functions markedly slower to build.
    #[inline(never)]
    fn is_float_name_outlined(name: &str) -> bool {
        counted(name).is_some()
    }

    #[inline(always)]
    fn is_float_name(name: &str) -> bool {
        counted(name).is_some()
    }

    /// The float types whose chains are counted.
    #[derive(Clone, Copy)]
    enum Counted {
        F64,
        F32,
        F16,
        BF16,
    }

    impl Counted {
        #[inline(always)]
        fn size(self) -> usize {
            match self {
                Counted::F64 => 8,
                Counted::F32 => 4,
                Counted::F16 | Counted::BF16 => 2,
            }
        }

        /// The value at `p` and `2^p` of the type.
        ///
        /// # Safety
        /// `p` points to a live, aligned value of this type.
        #[inline(always)]
        unsafe fn read(self, p: *const u8) -> (f64, f64) {
            // SAFETY: as the caller promises.
            unsafe {
                match self {
                    Counted::F64 => (*(p as *const f64), 9007199254740992.0),
                    Counted::F32 => (f64::from(*(p as *const f32)), 16777216.0),
                    Counted::F16 => ((*(p as *const half::f16)).to_f64(), 2048.0),
                    Counted::BF16 => ((*(p as *const half::bf16)).to_f64(), 256.0),
                }
            }
        }
    }

    /// The counted float type a type's name names, and through how many references
    /// (`&f64`, `&mut f32`: one). One list for [`is_float`] and [`exact_value`].
    #[inline(always)]
    fn counted(name: &str) -> Option<(Counted, usize)> {
        let base = name.trim_start_matches('&');
        let refs = name.len() - base.len();
        let base = match refs {
            0 => base,
            _ => base.strip_prefix("mut ").unwrap_or(base),
        };
        let kind = match base {
            "f64" => Counted::F64,
            "f32" => Counted::F32,
            "half::binary16::f16" => Counted::F16,
            "half::bfloat::bf16" => Counted::BF16,
            _ => return None,
        };
        Some((kind, refs))
    }

    /// The value of `x` and `2^p` of its type when its type is one of the float types
    /// whose chains are counted (or a reference to one), `None` otherwise. Decided per
    /// monomorphized type, by the type's name and size, so generic code instantiated
    /// with a float is looked at too; one call per site instead of an autoref dispatch
    /// per operand, which kept a function dense in sites slow to build.
    #[inline(always)]
    pub fn exact_value<T: ?Sized>(x: &T) -> Option<(f64, f64)> {
        let (kind, refs) = counted(core::any::type_name::<T>())?;
        let size = core::mem::size_of_val(x);
        let p = x as *const T as *const u8;
        // SAFETY: the name is that of the counted type (or of a reference to it), and
        // the size agrees; `x` is a live, aligned reference, and a reference it holds
        // points to a live, aligned value.
        unsafe {
            match refs {
                0 if size == kind.size() => Some(kind.read(p)),
                1 if size == core::mem::size_of::<&f64>() => {
                    Some(kind.read(*(p as *const *const u8)))
                }
                _ => None,
            }
        }
    }

    /// Not public API. The receiver of a `.sum()` / `.fold(..)` site: an iterator is
    /// wrapped in a [`CountingIter`] (the inherent method below), anything else is
    /// handed back untouched ([`ViaOther`]).
    pub use crate::wrap::Wrap;

    impl<I: Iterator> Wrap<I> {
        /// Wrap the iterator, counting into site `index` of `sites`.
        #[inline]
        pub fn __fprev_count<const N: usize>(
            self,
            sites: &'static [Site; N],
            index: usize,
        ) -> CountingIter<I> {
            CountingIter {
                inner: self.0,
                count: 0,
                site: &sites[index],
                float: is_float_type::<I::Item>(),
            }
        }
    }

    impl<T> Wrap<&Vec<T>> {
        /// The address of a rebuilt vector's first element, which tells its type (see
        /// [`is_float`]).
        #[inline]
        pub fn __fprev_element(self) -> *const T {
            self.0.as_ptr()
        }
    }

    /// Not public API. Used by generated code: the fallback of [`Wrap`]'s dispatch.
    pub trait ViaOther {
        /// The receiver itself.
        type Out;
        /// Hand the receiver back.
        fn __fprev_count<const N: usize>(
            self,
            sites: &'static [Site; N],
            index: usize,
        ) -> Self::Out;

        /// Not a `Vec`: no element whose type a chain is counted for.
        #[inline]
        fn __fprev_element(self) -> *const ()
        where
            Self: Sized,
        {
            core::ptr::null()
        }
    }

    impl<T> ViaOther for Wrap<T> {
        type Out = T;
        #[inline]
        fn __fprev_count<const N: usize>(self, _: &'static [Site; N], _: usize) -> T {
            self.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::private::*;

    #[test]
    fn float_names() {
        assert!(is_float(&1.0f64 as *const f64));
        assert!(is_float(&1.0f32 as *const f32));
        assert!(is_float(&half::f16::ONE as *const half::f16));
        assert!(is_float(&half::bf16::ONE as *const half::bf16));
        assert!(is_float_type::<&f64>());
        assert!(!is_float(&1i32 as *const i32));
        assert!(!is_float(&String::new() as *const String));
    }

    #[test]
    fn fold_accumulators() {
        assert!(sums_floats::<f64>());
        assert!(sums_floats::<(f64, f64, f64, usize)>());
        assert!(sums_floats::<(usize, f32)>());
        assert!(sums_floats::<(half::bf16,)>());
        assert!(!sums_floats::<(usize, u8)>());
        assert!(!sums_floats::<i32>());
        assert!(!sums_floats::<Vec<f64>>());
        assert!(!sums_floats::<(Vec<f64>, i32)>());
        assert!(!sums_floats::<(std::collections::HashMap<u8, f64>, i32)>());
        assert!(!sums_floats::<((f64, f64), i32)>());
    }

    #[test]
    fn exact_values() {
        assert_eq!(exact_value(&3.0f64), Some((3.0, 9007199254740992.0)));
        assert_eq!(exact_value(&&2.5f32), Some((2.5, 16777216.0)));
        let mut m = -1.5f64;
        assert_eq!(exact_value(&&mut m), Some((-1.5, 9007199254740992.0)));
        assert_eq!(exact_value(&half::f16::from_f32(0.5)), Some((0.5, 2048.0)));
        assert_eq!(exact_value(&half::bf16::ONE), Some((1.0, 256.0)));
        let mut h = half::f16::ONE;
        assert_eq!(exact_value(&&mut h), Some((1.0, 2048.0)));
        // Counted through any number of references, read through one.
        assert!(is_float_type::<&&f64>());
        assert_eq!(exact_value(&&&1.0f64), None);
        assert_eq!(exact_value(&7i32), None);
        assert_eq!(exact_value(&7u64), None);
        assert_eq!(exact_value(&[1.0f64, 2.0][..]), None);
        assert_eq!(exact_value("f64"), None);
        // Generic code instantiated with a float is looked at (the autoref dispatch
        // this replaced gave `None` there).
        fn through<T>(x: &T) -> Option<(f64, f64)> {
            exact_value(x)
        }
        assert_eq!(through(&4.0f32), Some((4.0, 16777216.0)));
    }
}
