//! Not public API. The receiver wrapper that the generated code of both attributes
//! dispatches `.sum()` / `.fold(..)` receivers through.

/// Not public API. A `.sum()` / `.fold(..)` receiver, wrapped so that the generated
/// code can tell an iterator from anything else without a trait from the user's type.
///
/// Method lookup prefers an inherent method to a trait method on the same receiver
/// type, and skips an inherent one whose bounds do not hold. So each attribute gives
/// `Wrap` an inherent method bounded by `Iterator` (or `ParallelIterator`) that wraps
/// the iterator into its counting or reducing adapter, and a trait method of the same
/// name, for every `T`, that hands the receiver back untouched:
/// `chains::private::{Wrap::__fprev_count, ViaOther}`,
/// `scramble::private::{Wrap::__fprev_reduce, ViaValue}` and
/// `scramble::private::{Wrap::__fprev_par_sum, ViaParValue}`. Both take the wrapper by
/// value, so it holds the receiver itself (no `Option` to take it out of a `&mut`), and
/// the site comes as the function's table and a constant index: a site costs its caller
/// no generic helper of its own. A long function with 64 iterator sites compiled 0.1 G
/// instructions (of 5.7 G) faster than with a trait for each case.
///
/// ```
/// use fprev_runtime::chains::private::{Site, ViaOther as _, Wrap};
/// use fprev_runtime::chains::AccumulationKind;
/// static SITES: [Site; 1] = [Site::here("m::f", "x.iter().sum()", AccumulationKind::Iterator)];
/// let x = [1.0f64, 2.0];
/// let s: f64 = Wrap(x.iter()).__fprev_count(&SITES, 0).sum();
/// assert_eq!(s, 3.0);
/// // Not an iterator: handed back as it is.
/// assert_eq!(Wrap(7u8).__fprev_count(&SITES, 0), 7);
/// ```
pub struct Wrap<T>(pub T);
