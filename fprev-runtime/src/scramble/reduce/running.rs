//! A reduction while it runs: the generic handle generated code holds ([`RunningReduction`]),
//! the type-erased engine behind it, and the iterator reductions built on them.
//!
//! Starting is what a short reduction called millions of times pays for, so in the
//! default mode ([`Vary::Site`](super::super::Vary::Site)) a site draws its shape once
//! per configuration and files it in its [`CallSite`]; the random stream behind a shape
//! is only created when the combining draws from it; and the state of a finished
//! reduction is kept for the next one on the same thread rather than freed.

use std::marker::PhantomData;
use std::ops::{Add, AddAssign, Sub, SubAssign};

use super::super::call_site::CallSite;
use super::super::state::{self, LOOPS};
use super::tuple::ReduceTuples;
use crate::wrap::Wrap;

mod engine;
use engine::{kind_of, Engine, On};

/// Whether the code that calls the runtime is most likely unoptimized, told by this
/// crate's debug assertions (which go with `opt-level = 0` in cargo's default profiles;
/// no `cfg` tells the opt-level itself): there the per-term work goes through one call
/// into this crate rather than through inlined standard-library calls that stay calls.
/// Optimized, the term is stored inline. A test profile that optimizes and keeps debug
/// assertions (`[profile.test] opt-level = 3`) should turn them off for this crate alone
/// (`[profile.test.package.fprev-runtime] debug-assertions = false`), as `cargo fprev`
/// does: with a call per term its scrambled tests took twice as long.
const UNOPTIMIZED: bool = cfg!(debug_assertions);

/// Not public API. One execution of a reduction site: off (the code runs as written)
/// unless reductions are scrambled and the accumulator is a float.
///
/// Terms are appended to a chunk (one store each, no dispatch) and handed to the shape's
/// combiner a chunk at a time.
///
/// The handle has no drop glue (the state is a `ManuallyDrop` box, given back by
/// [`write`](Self::write)): a reducer alive across a loop adds no unwind path to each
/// call in the loop body (a function with hundreds of reductions borrow-checks and
/// compiles several times faster than with a dropping handle). A panic between `begin`
/// and `write` while scrambling is on leaks that reduction's state (a few KiB).
pub struct RunningReduction<T> {
    on: std::mem::ManuallyDrop<Option<Box<On>>>,
    terms: PhantomData<T>,
}

impl<T> RunningReduction<T> {
    /// Starts a reduction. Its accumulator type `T` is inferred from the calls that
    /// follow (`init(&mut place)`): the place is not evaluated here.
    #[inline]
    pub fn begin(site: &'static CallSite) -> Self {
        if state::fast_state() & LOOPS == 0 {
            return Self::off();
        }
        RunningReduction {
            on: std::mem::ManuallyDrop::new(Self::start(site)),
            terms: PhantomData,
        }
    }

    #[inline(always)]
    fn off() -> Self {
        RunningReduction {
            on: std::mem::ManuallyDrop::new(None),
            terms: PhantomData,
        }
    }

    /// [`begin`](Self::begin) for site `index` of a function's site table. Generated code
    /// passes the table and a constant index rather than `&table[index]`: the caller then
    /// has no bounds check and no temporaries per site, which in a function with hundreds
    /// of reductions is a good part of its borrow-checking time. The table is indexed
    /// only when reductions are scrambled.
    #[inline]
    pub fn begin_in<const N: usize>(sites: &'static [CallSite; N], index: usize) -> Self {
        if state::fast_state() & LOOPS == 0 {
            return Self::off();
        }
        RunningReduction {
            on: std::mem::ManuallyDrop::new(Self::start(&sites[index])),
            terms: PhantomData,
        }
    }

    /// [`begin_in`](Self::begin_in) then [`init`](Self::init), as
    /// [`begin_at`](Self::begin_at).
    #[inline]
    pub fn begin_at_in<const N: usize>(
        sites: &'static [CallSite; N],
        index: usize,
        place: &mut T,
    ) -> Self {
        let mut r = Self::begin_in(sites, index);
        r.init(place);
        r
    }

    /// [`begin`](Self::begin) then [`init`](Self::init), for a place that can be
    /// borrowed without running code (a variable or a field of one): one call per loop
    /// entry, no branch in the caller.
    #[inline]
    pub fn begin_at(site: &'static CallSite, place: &mut T) -> Self {
        let mut r = Self::begin(site);
        r.init(place);
        r
    }

    fn start(site: &'static CallSite) -> Option<Box<On>> {
        Engine::start(site, kind_of::<T>()?, false)
    }

    /// A reduction at `site` that is one of many alive at once (an element of a
    /// [`KeyedReduction`](super::KeyedReduction)), with `init` its first term; off when
    /// reductions are not scrambled or `T` is not a float.
    pub(in crate::scramble) fn begin_element(site: &'static CallSite, init: &T) -> Self {
        let on = match kind_of::<T>() {
            Some(kind) if state::fast_state() & LOOPS != 0 => Engine::start(site, kind, true),
            _ => None,
        };
        let mut r = RunningReduction {
            on: std::mem::ManuallyDrop::new(on),
            terms: PhantomData,
        };
        r.init_from(init);
        r
    }

    /// Whether a reduction of `T` would be on now: reductions are scrambled and `T` is a
    /// float.
    pub(in crate::scramble) fn would_be_on() -> bool {
        state::fast_state() & LOOPS != 0 && kind_of::<T>().is_some()
    }

    /// Combines the terms and gives the state back; `None` when off or no term came.
    pub(in crate::scramble) fn take_value(&mut self) -> Option<T> {
        self.finish_in_place()
    }

    // The methods called per term are written for unoptimized builds too (plain
    // matches and casts, no `Option` methods): each such method would be a call there.

    /// Whether terms go to the reduction (true) or the code runs as written (false).
    #[inline(always)]
    #[allow(clippy::redundant_pattern_matching)] // `is_some` would be a call unoptimized
    pub fn on(&self) -> bool {
        matches!(*self.on, Some(_))
    }

    #[inline(always)]
    pub(in crate::scramble) fn push(&mut self, t: T) {
        if let Some(on) = &mut *self.on {
            // On, so `T` is the engine's float type (`start` chose the kind from it).
            if UNOPTIMIZED {
                // The term is only read: a float has nothing to drop.
                on.push_raw(&t as *const T as *const u8);
            } else {
                // `len` read once: the term's store could alias it for all the
                // optimizer knows, so a second read would wait for that store. The
                // count is below `room`, so `+ 1` never wraps, and a wrapping add has no
                // overflow check (the caller's profile may check overflow).
                let len = on.len;
                // SAFETY: `len < room`, so the term fits in the words, which are
                // aligned for any float type.
                unsafe { on.words.as_mut_ptr().cast::<T>().add(len).write(t) };
                let len = len.wrapping_add(1);
                on.len = len;
                if len == on.room {
                    on.full();
                }
            }
        }
    }

    /// `-0.0` in `T` (the additive identity that keeps every term's sign); only called
    /// while on.
    #[inline(always)]
    pub(in crate::scramble) fn neg_zero(&self) -> T {
        match &*self.on {
            // SAFETY: on, so `T` is the float type whose `-0.0` `start` stored there.
            Some(on) if !UNOPTIMIZED => unsafe {
                std::ptr::read(std::ptr::addr_of!(on.zero) as *const T)
            },
            Some(on) => {
                let mut zero = std::mem::MaybeUninit::<T>::uninit();
                on.write_zero(zero.as_mut_ptr() as *mut u8);
                // SAFETY: on, so `T` is the engine's float type, whose `-0.0` was written.
                unsafe { zero.assume_init() }
            }
            None => unreachable!("fprev: a reduction's term is only formed while it is on"),
        }
    }

    /// The accumulator's value before the loop: the first term. The place is taken as
    /// `&mut`, through the same `IndexMut` the update itself would call.
    ///
    /// Stored through the runtime's out-of-line call even when optimized: it is one term
    /// per loop, and the inlined store would make every annotated loop larger, which
    /// kept optimizers from inlining small annotated functions into their callers.
    #[inline]
    pub fn init(&mut self, place: &mut T) {
        self.init_from(place);
    }

    /// [`init`](Self::init) from a shared reference.
    #[inline]
    fn init_from(&mut self, value: &T) {
        if let Some(on) = &mut *self.on {
            // On, so `T` is the engine's float type; the value is only read.
            on.push_raw(value as *const T as *const u8);
        }
    }

    /// `place += e`: the term is `-0.0 + e` through the same `AddAssign` (exact).
    #[inline]
    pub fn add_assign<R>(&mut self, e: R)
    where
        T: AddAssign<R>,
    {
        let mut t = self.neg_zero();
        t += e;
        self.push(t);
    }

    /// `place -= e`: the term is `-0.0 - e` (exact).
    #[inline]
    pub fn sub_assign<R>(&mut self, e: R)
    where
        T: SubAssign<R>,
    {
        let mut t = self.neg_zero();
        t -= e;
        self.push(t);
    }

    /// `place += e` for a place borrowed without running code: the term goes to the
    /// reduction when on, to `place` through the same `AddAssign` otherwise.
    #[inline]
    pub fn add_assign_at<R>(&mut self, place: &mut T, e: R)
    where
        T: AddAssign<R>,
    {
        if self.on() {
            self.add_assign(e);
        } else {
            *place += e;
        }
    }

    /// `place -= e`, as [`add_assign_at`](Self::add_assign_at).
    #[inline]
    pub fn sub_assign_at<R>(&mut self, place: &mut T, e: R)
    where
        T: SubAssign<R>,
    {
        if self.on() {
            self.sub_assign(e);
        } else {
            *place -= e;
        }
    }

    /// `place = place + e` as `place = r.add_right_to(place, e)`: `acc + e` when off
    /// (the same `Add`), `acc` unchanged with the term pushed when on.
    #[inline]
    pub fn add_right_to<R>(&mut self, acc: T, e: R) -> T
    where
        T: Add<R, Output = T>,
    {
        if self.on() {
            self.add_right(e);
            acc
        } else {
            acc + e
        }
    }

    /// `place = e + place`, as [`add_right_to`](Self::add_right_to).
    #[inline]
    pub fn add_left_to<R>(&mut self, e: R, acc: T) -> T
    where
        R: Add<T, Output = T>,
    {
        if self.on() {
            self.add_left(e);
            acc
        } else {
            e + acc
        }
    }

    /// `place = place - e`, as [`add_right_to`](Self::add_right_to).
    #[inline]
    pub fn sub_right_to<R>(&mut self, acc: T, e: R) -> T
    where
        T: Sub<R, Output = T>,
    {
        if self.on() {
            self.sub_right(e);
            acc
        } else {
            acc - e
        }
    }

    /// `place = place + e`.
    #[inline]
    pub fn add_right<R>(&mut self, e: R)
    where
        T: Add<R, Output = T>,
    {
        self.push(self.neg_zero() + e);
    }

    /// `place = e + place`.
    #[inline]
    pub fn add_left<R>(&mut self, e: R)
    where
        R: Add<T, Output = T>,
    {
        self.push(e + self.neg_zero());
    }

    /// `place = place - e`.
    #[inline]
    pub fn sub_right<R>(&mut self, e: R)
    where
        T: Sub<R, Output = T>,
    {
        self.push(self.neg_zero() - e);
    }

    /// Writes the combined value into the accumulator (after the loop) and gives the
    /// state back.
    #[inline]
    pub fn write(&mut self, place: &mut T) {
        if let Some(v) = self.finish_in_place() {
            *place = v;
        }
    }

    /// Combines the terms and gives the state back; `None` when off or no term came.
    fn finish_in_place(&mut self) -> Option<T> {
        let on = self.on.take()?;
        let mut v = std::mem::MaybeUninit::<T>::uninit();
        if on.finish(v.as_mut_ptr() as *mut u8) {
            // SAFETY: the engine's kind was chosen from `T`'s type, and it wrote a value.
            Some(unsafe { v.assume_init() })
        } else {
            None
        }
    }

    /// Combines the terms without an accumulator to write to (iterator reductions).
    pub(in crate::scramble) fn finish(mut self) -> Option<T> {
        self.finish_in_place()
    }
}

/// Not public API. An iterator whose `sum` / `fold` are reassociated reductions when
/// reductions are scrambled (inherent methods, so they win over `Iterator`'s).
pub struct ReduceIter<I> {
    iter: I,
    site: &'static CallSite,
}

impl<I: Iterator> ReduceIter<I> {
    /// `iter.sum()`: each item becomes the term `S::sum(once(item))` (exact), the terms are
    /// combined in the drawn shape.
    pub fn sum<S: std::iter::Sum<I::Item>>(mut self) -> S {
        let r = RunningReduction::<S>::begin(self.site);
        if !r.on() {
            return self.iter.sum();
        }
        if UNOPTIMIZED {
            return sum_driven(r, self.iter);
        }
        sum_terms(r, &mut self.iter)
    }

    /// `iter.fold(init, f)` where the macro checked that `f` is `|a, t| a + e`,
    /// `|a, t| e + a`, `|a, t| a - e` (with `e` free of `a`) or `Add::add`: the term of
    /// an item is `f(-0.0, item)`, exactly `e` (or `-e`).
    pub fn fold<B, F: FnMut(B, I::Item) -> B>(mut self, init: B, mut f: F) -> B {
        let r = RunningReduction::<B>::begin(self.site);
        if !r.on() {
            return self.iter.fold(init, f);
        }
        if UNOPTIMIZED {
            return fold_driven(r, init, self.iter, f);
        }
        fold_terms(r, init, &mut self.iter, &mut f)
    }
}

/// [`ReduceIter::sum`] scrambled in an unoptimized build ([`UNOPTIMIZED`]): the iterator
/// drives the loop through its own `fold`, as the unscrambled `.sum()` does, so the
/// adapters' specialised internal iteration is kept, and each term costs one direct,
/// non-generic call into this crate ([`On::push_raw`]).
fn sum_driven<S: std::iter::Sum<I::Item>, I: Iterator>(mut r: RunningReduction<S>, items: I) -> S {
    let mut any = false;
    if let Some(on) = &mut *r.on {
        items.for_each(|item| {
            any = true;
            let t = S::sum(std::iter::once(item));
            // On, so `S` is the engine's float type; the term is only read (a float
            // has nothing to drop).
            on.push_raw(&t as *const S as *const u8);
        });
    }
    match (any, r.finish()) {
        (true, Some(v)) => v,
        _ => S::sum(std::iter::empty::<I::Item>()),
    }
}

/// [`ReduceIter::fold`] scrambled in an unoptimized build, driven by the iterator as in
/// [`sum_driven`]: the term of an item is `f(-0.0, item)`.
fn fold_driven<B, I: Iterator, F: FnMut(B, I::Item) -> B>(
    mut r: RunningReduction<B>,
    init: B,
    items: I,
    mut f: F,
) -> B {
    r.push(init);
    let zero = std::mem::ManuallyDrop::new(r.neg_zero());
    if let Some(on) = &mut *r.on {
        items.for_each(|item| {
            // SAFETY: on, so `B` is the engine's float type, copied bit for bit.
            let t = f(unsafe { std::ptr::read(&*zero) }, item);
            on.push_raw(&t as *const B as *const u8);
        });
    }
    match r.finish() {
        Some(v) => v,
        None => unreachable!("fprev: a fold reduction has its initial value"),
    }
}

/// The one method of an iterator that a scrambled iterator reduction calls, object-safe:
/// the loop that forms and combines the terms ([`sum_terms`], [`fold_terms`]) is then
/// compiled once per item type, not once per iterator type (every `map` closure is a type
/// of its own), which kept `#[scramble]` on a function dense in `.sum()`s slow to build.
trait Pull<A> {
    fn pull(&mut self) -> Option<A>;
}

impl<I: Iterator> Pull<I::Item> for I {
    fn pull(&mut self) -> Option<I::Item> {
        self.next()
    }
}

/// The scrambled half of [`ReduceIter::sum`], `r` on, in an optimized build (where the
/// inline stores beat a call per term).
fn sum_terms<S: std::iter::Sum<A>, A>(mut r: RunningReduction<S>, items: &mut dyn Pull<A>) -> S {
    let mut any = false;
    while let Some(item) = items.pull() {
        any = true;
        r.push(S::sum(std::iter::once(item)));
    }
    match (any, r.finish()) {
        (true, Some(v)) => v,
        _ => S::sum(std::iter::empty::<A>()),
    }
}

/// The scrambled half of [`ReduceIter::fold`], `r` on, in an optimized build.
fn fold_terms<B, A>(
    mut r: RunningReduction<B>,
    init: B,
    items: &mut dyn Pull<A>,
    f: &mut dyn FnMut(B, A) -> B,
) -> B {
    r.push(init);
    while let Some(item) = items.pull() {
        let t = f(r.neg_zero(), item);
        r.push(t);
    }
    match r.finish() {
        Some(v) => v,
        None => unreachable!("fprev: a fold reduction has its initial value"),
    }
}

impl<I: Iterator> Iterator for ReduceIter<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        self.iter.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}

/// `.sum()` / `.fold(..)` receivers: an iterator becomes a [`ReduceIter`], anything else
/// is handed back untouched ([`ViaValue`]); see [`Wrap`].
impl<I: Iterator> Wrap<I> {
    /// Not public API.
    /// Site `index` of the function's table `sites` (a table and a constant, so the
    /// caller pays no bounds check per site).
    #[inline(always)]
    pub fn __fprev_reduce<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> ReduceIter<I> {
        ReduceIter {
            iter: self.0,
            site: &sites[index],
        }
    }

    /// Not public API. The receiver of a tuple fold ([`ReduceTuples`]).
    #[inline(always)]
    pub fn __fprev_reduce_tuple<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> ReduceTuples<I> {
        ReduceTuples::new(self.0, &sites[index])
    }
}

/// Not public API. The fallback case of [`Wrap`]: not an iterator, returned as is.
pub trait ViaValue {
    /// The receiver.
    type Out;
    /// Not public API.
    fn __fprev_reduce<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> Self::Out;
    /// Not public API.
    fn __fprev_reduce_tuple<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> Self::Out;
}

impl<T> ViaValue for Wrap<T> {
    type Out = T;
    #[inline(always)]
    fn __fprev_reduce<const N: usize>(self, _: &'static [CallSite; N], _: usize) -> T {
        self.0
    }
    #[inline(always)]
    fn __fprev_reduce_tuple<const N: usize>(self, _: &'static [CallSite; N], _: usize) -> T {
        self.0
    }
}

#[cfg(test)]
mod tests;
