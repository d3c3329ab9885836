//! Not public API. Used by generated code.
//!
//! `#[fprev::scramble]` expands float reductions into a [`RunningReduction`] (one relaxed atomic
//! load when off), declared loops into a check of [`loops`] and rayon sources into one of
//! [`schedule`]; when on, a [`Scrambler`] reorders the items. A rayon `.sum()` whose
//! chain keeps positions (`zip`, `enumerate`) goes through [`ParSum`]: its items stay
//! paired and in order, only the association of the sum changes.

use rayon::iter::{IndexedParallelIterator, IntoParallelIterator, ParallelIterator};
use rayon::iter::{IntoParallelRefIterator, IntoParallelRefMutIterator};
use rayon::slice::ParallelSlice;

/// Not public API. Used by generated code.
pub use super::reduce::{KeyedReduction, RunningReduction};

/// Not public API. Used by generated code.
pub use super::call_site::{CallSite, SiteKind};
/// Not public API. Used by generated code.
pub use super::reduce::ViaValue;
/// Not public API. Used by generated code.
pub use super::scrambler::Scrambler;
/// Not public API. Used by generated code.
pub use super::sites::{FnSites, LeftAlone};
use super::state::{fast_state, LOOPS, SCHEDULE};
/// Not public API. Used by generated code.
pub use super::Shuffle;
/// Not public API. Used by generated code.
pub use crate::wrap::Wrap;
/// Not public API. Used by generated code.
pub use rayon::iter::Either;

/// Not public API. [`RunningReduction::begin_at_in`] as a free function: a path without a type
/// annotation to check per call.
#[inline(always)]
pub fn reduction_at<T, const N: usize>(
    sites: &'static [CallSite; N],
    index: usize,
    place: &mut T,
) -> RunningReduction<T> {
    RunningReduction::begin_at_in(sites, index, place)
}

/// Not public API. [`KeyedReduction::begin_in`] as a free function.
#[inline(always)]
pub fn keyed_reduction<K: Copy + Eq + std::hash::Hash, T, const N: usize>(
    sites: &'static [CallSite; N],
    index: usize,
) -> KeyedReduction<K, T> {
    KeyedReduction::begin_in(sites, index)
}

/// Not public API. [`RunningReduction::begin_in`] as a free function.
#[inline(always)]
pub fn reduction<T, const N: usize>(
    sites: &'static [CallSite; N],
    index: usize,
) -> RunningReduction<T> {
    RunningReduction::begin_in(sites, index)
}

/// Not public API. The scrambler of a sequential loop entry, `None` when loops are not
/// scrambled.
#[inline(always)]
pub fn loops(site: &'static CallSite) -> Option<Scrambler> {
    if fast_state() & LOOPS == 0 {
        None
    } else {
        Scrambler::begin(site, LOOPS)
    }
}

/// Not public API. The scrambler of a parallel iterator, `None` when the schedule is not
/// scrambled.
#[inline(always)]
pub fn schedule(site: &'static CallSite) -> Option<Scrambler> {
    if fast_state() & SCHEDULE == 0 {
        None
    } else {
        Scrambler::begin(site, SCHEDULE)
    }
}

/// Not public API. `x.par_iter()` in scrambled order.
pub trait ParRef<'data> {
    /// The unscrambled iterator.
    type Iter: ParallelIterator;
    /// Not public API.
    fn __fprev_par_iter(
        &'data self,
        site: &'static CallSite,
    ) -> Either<Self::Iter, rayon::vec::IntoIter<<Self::Iter as ParallelIterator>::Item>>;
}

impl<'data, I: IntoParallelRefIterator<'data> + ?Sized> ParRef<'data> for I {
    type Iter = I::Iter;
    fn __fprev_par_iter(
        &'data self,
        site: &'static CallSite,
    ) -> Either<Self::Iter, rayon::vec::IntoIter<<Self::Iter as ParallelIterator>::Item>> {
        match schedule(site) {
            None => Either::Left(self.par_iter()),
            Some(s) => Either::Right(s.shuffle_vec(self.par_iter().collect()).into_par_iter()),
        }
    }
}

/// Not public API. `x.par_iter_mut()` in scrambled order.
pub trait ParMut<'data> {
    /// The unscrambled iterator.
    type Iter: ParallelIterator;
    /// Not public API.
    fn __fprev_par_iter_mut(
        &'data mut self,
        site: &'static CallSite,
    ) -> Either<Self::Iter, rayon::vec::IntoIter<<Self::Iter as ParallelIterator>::Item>>;
}

impl<'data, I: IntoParallelRefMutIterator<'data> + ?Sized> ParMut<'data> for I {
    type Iter = I::Iter;
    fn __fprev_par_iter_mut(
        &'data mut self,
        site: &'static CallSite,
    ) -> Either<Self::Iter, rayon::vec::IntoIter<<Self::Iter as ParallelIterator>::Item>> {
        match schedule(site) {
            None => Either::Left(self.par_iter_mut()),
            Some(s) => Either::Right(s.shuffle_vec(self.par_iter_mut().collect()).into_par_iter()),
        }
    }
}

/// Not public API. `x.par_chunks(k)` in scrambled chunk order.
pub trait ParChunks<T: Sync> {
    /// Not public API.
    fn __fprev_par_chunks(
        &self,
        site: &'static CallSite,
        chunk_size: usize,
    ) -> Either<rayon::slice::Chunks<'_, T>, rayon::vec::IntoIter<&[T]>>;
}

impl<T: Sync, S: ParallelSlice<T> + ?Sized> ParChunks<T> for S {
    fn __fprev_par_chunks(
        &self,
        site: &'static CallSite,
        chunk_size: usize,
    ) -> Either<rayon::slice::Chunks<'_, T>, rayon::vec::IntoIter<&[T]>> {
        let slice = self.as_parallel_slice();
        match schedule(site) {
            None => Either::Left(slice.par_chunks(chunk_size)),
            Some(s) => Either::Right(
                s.shuffle_vec(slice.chunks(chunk_size).collect())
                    .into_par_iter(),
            ),
        }
    }
}

/// Not public API. `(a..b).into_par_iter()` in scrambled order.
pub fn into_par_iter<R>(
    site: &'static CallSite,
    range: R,
) -> Either<R::Iter, rayon::vec::IntoIter<R::Item>>
where
    R: IntoParallelIterator,
    R::Iter: IndexedParallelIterator,
{
    match schedule(site) {
        None => Either::Left(range.into_par_iter()),
        Some(s) => Either::Right(
            s.shuffle_vec(range.into_par_iter().collect())
                .into_par_iter(),
        ),
    }
}

/// Not public API. `(a..b).into_par_iter()` in scrambled order.
pub trait ParRange: Sized {
    /// The unscrambled iterator.
    type Iter: ParallelIterator;
    /// Not public API.
    fn __fprev_into_par_iter(
        self,
        site: &'static CallSite,
    ) -> Either<Self::Iter, rayon::vec::IntoIter<<Self::Iter as ParallelIterator>::Item>>;
}

impl<R: IntoParallelIterator> ParRange for R
where
    R::Iter: IndexedParallelIterator,
{
    type Iter = R::Iter;
    fn __fprev_into_par_iter(
        self,
        site: &'static CallSite,
    ) -> Either<Self::Iter, rayon::vec::IntoIter<<Self::Iter as ParallelIterator>::Item>> {
        into_par_iter(site, self)
    }
}

/// Not public API. A parallel iterator whose `sum` is a reassociated reduction when
/// reductions are scrambled (an inherent method, so it wins over rayon's).
pub struct ParSum<P> {
    iter: P,
    site: &'static CallSite,
}

impl<P: ParallelIterator> ParSum<P> {
    /// `iter.sum()`: off, rayon's own sum; on, each item becomes the term
    /// `S::sum(once(item))` (exact), collected in the chain's order, and the terms are
    /// combined in the drawn shape.
    pub fn sum<S>(self) -> S
    where
        S: Send + std::iter::Sum<P::Item> + std::iter::Sum<S>,
    {
        let mut r = RunningReduction::<S>::begin(self.site);
        if !r.on() {
            return self.iter.sum();
        }
        let terms: Vec<S> = self
            .iter
            .map(|item| S::sum(std::iter::once(item)))
            .collect();
        if terms.is_empty() {
            return S::sum(std::iter::empty::<P::Item>());
        }
        for t in terms {
            r.push(t);
        }
        match r.finish() {
            Some(v) => v,
            None => unreachable!("fprev: a reduction that is on combines its terms"),
        }
    }
}

/// Not public API. Dispatch for a rayon `.sum()` receiver, as [`Wrap`]'s for iterators:
/// a parallel iterator becomes a [`ParSum`] (the inherent method, when its bound
/// holds), anything else is handed back untouched ([`ViaParValue`]).
impl<P: ParallelIterator> Wrap<P> {
    /// Not public API.
    #[inline(always)]
    pub fn __fprev_par_sum<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> ParSum<P> {
        ParSum {
            iter: self.0,
            site: &sites[index],
        }
    }
}

/// Not public API. ... anything else is handed back untouched.
pub trait ViaParValue {
    /// The receiver.
    type Out;
    /// Not public API.
    fn __fprev_par_sum<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> Self::Out;
}

impl<T> ViaParValue for Wrap<T> {
    type Out = T;
    #[inline(always)]
    fn __fprev_par_sum<const N: usize>(self, _: &'static [CallSite; N], _: usize) -> T {
        self.0
    }
}
