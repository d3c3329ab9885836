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

/// Whether this is most likely an unoptimized build (debug assertions go with it in
/// cargo's profiles): there the per-term work goes through one call into this crate,
/// which its profile optimizes, rather than through inlined standard-library calls that
/// stay calls. Optimized, the term is stored inline.
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
        if r.on() {
            // SAFETY: a float `T` (on), copied bit for bit.
            r.push(unsafe { std::ptr::read(init) });
        }
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
                // SAFETY: `len < room`, so the term fits in the words, which are
                // aligned for any float type.
                unsafe { on.words.as_mut_ptr().cast::<T>().add(on.len).write(t) };
                on.len += 1;
                if on.len == on.room {
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
    #[inline]
    pub fn init(&mut self, place: &mut T) {
        if self.on() {
            // SAFETY: a float `T` (on), copied bit for bit.
            self.push(unsafe { std::ptr::read(&*place) });
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
mod tests {
    use super::super::super::call_site::SiteKind;
    use super::super::super::config::{ScrambleConfig, Vary};
    use super::super::super::rng::{below, stream, ScrambleRng};
    use super::super::super::session::with_config;
    use super::super::super::{context, entropy, Shuffle};
    use super::super::{combine, CombineShape, PER_SITE};
    use super::engine::FloatKind;
    use super::*;
    use crate::float::ProbeFloat;
    use half::{bf16, f16};
    use rand_core::RngCore;

    #[test]
    fn kinds_by_type() {
        assert_eq!(kind_of::<f32>(), Some(FloatKind::F32));
        assert_eq!(kind_of::<bf16>(), Some(FloatKind::BF16));
        assert_eq!(kind_of::<i32>(), None);
        assert_eq!(kind_of::<&f32>(), None);
    }

    /// A site of its own for each test, so that no other test's draws are filed in it.
    fn site(label: &'static str) -> &'static CallSite {
        Box::leak(Box::new(CallSite::with_kind(
            label,
            file!(),
            line!(),
            1,
            None,
            SiteKind::Reduction,
        )))
    }

    /// What a reduction at `site` gave before shapes were filed per site: the shape
    /// drawn from the site's stream, the terms combined on the rest of that stream.
    fn per_site_reference<F: ProbeFloat>(site: &CallSite, cfg: &ScrambleConfig, terms: &[F]) -> F {
        let mut rng = stream(cfg.seed, site.id() ^ PER_SITE, 0);
        let shuffle = site.shuffle.or(cfg.shuffle).unwrap_or(Shuffle::Identity);
        let shape = CombineShape::draw(cfg.shapes, shuffle, &mut rng);
        combine(shape, terms, &mut rng)
    }

    fn reference_shape(site: &CallSite, cfg: &ScrambleConfig) -> CombineShape {
        let shuffle = site.shuffle.or(cfg.shuffle).unwrap_or(Shuffle::Identity);
        CombineShape::draw(
            cfg.shapes,
            shuffle,
            &mut stream(cfg.seed, site.id() ^ PER_SITE, 0),
        )
    }

    fn reduce<F: ProbeFloat>(site: &'static CallSite, terms: &[F]) -> Option<F> {
        let mut r = RunningReduction::<F>::begin(site);
        assert!(r.on());
        for &t in terms {
            r.push(t);
        }
        r.finish()
    }

    fn terms<F: ProbeFloat>(rng: &mut ScrambleRng, n: usize) -> Vec<F> {
        (0..n)
            .map(|_| {
                let m = below(rng, 1 << 20) as f64 / (1 << 19) as f64 - 1.0;
                F::from_f64_round(m * 2f64.powi(below(rng, 21) as i32 - 10))
            })
            .collect()
    }

    /// Runs one case in one float type: the streaming reduction against the reference,
    /// with a second reduction at another site running inside it from `nest_at` terms on
    /// (states in use at once must not be mixed up).
    fn check_case<F: ProbeFloat>(
        case: u64,
        sites: [&'static CallSite; 2],
        cfg: &ScrambleConfig,
        n: usize,
        nest_at: usize,
    ) {
        let mut rng = stream(case, u64::from(F::FORMAT.precision), 7);
        let (outer, inner) = (terms::<F>(&mut rng, n), terms::<F>(&mut rng, n / 3));
        let name = F::FORMAT.name;
        let shape = reference_shape(sites[0], cfg);
        let want_outer = (n > 0).then(|| per_site_reference(sites[0], cfg, &outer));
        let want_inner = (!inner.is_empty()).then(|| per_site_reference(sites[1], cfg, &inner));
        // Twice: the second run finds what the first one kept.
        for run in 0..2 {
            let (got_outer, got_inner) = with_config(cfg, || {
                let mut r = RunningReduction::<F>::begin(sites[0]);
                let mut got_inner = None;
                for (i, &t) in outer.iter().enumerate() {
                    if i == nest_at {
                        got_inner = Some(reduce(sites[1], &inner));
                    }
                    r.push(t);
                }
                (r.finish(), got_inner)
            });
            assert_eq!(
                got_outer.map(F::to_bits_u64),
                want_outer.map(F::to_bits_u64),
                "case {case}, run {run}: {name}, {n} terms, {shape} (cfg {cfg:?})"
            );
            if let Some(got) = got_inner {
                assert_eq!(
                    got.map(F::to_bits_u64),
                    want_inner.map(F::to_bits_u64),
                    "case {case}, run {run}: nested {name}, {} terms (cfg {cfg:?})",
                    inner.len()
                );
            }
        }
    }

    #[test]
    fn streaming_gives_the_bits_of_the_reference_for_every_shape_and_type() {
        // Each case is replayed alone by its number, which the failure message prints.
        const SPECIAL: [usize; 13] = [
            0, 1, 2, 15, 16, 17, 1023, 1024, 1025, 2047, 2048, 2049, 2999,
        ];
        let sites = [site("running::property#0"), site("running::property#1")];
        let modes = [
            ScrambleConfig::off()
                .shuffle(Some(Shuffle::FisherYates))
                .shapes(true),
            ScrambleConfig::off().shuffle(Some(Shuffle::FisherYates)),
            ScrambleConfig::off().shuffle(Some(Shuffle::Sattolo)),
            ScrambleConfig::off().shuffle(Some(Shuffle::Identity)),
        ];
        let mut kinds = std::collections::HashSet::new();
        for case in 0..240u64 {
            let mut rng = stream(0x7072_6f70, case, 0);
            let mut cfg = modes[case as usize % modes.len()]
                .clone()
                .seed(rng.next_u64());
            if case % 16 == 7 {
                cfg = cfg.seed(case / 16); // small seeds too
            }
            let n = if below(&mut rng, 3) == 0 {
                SPECIAL[below(&mut rng, SPECIAL.len())]
            } else {
                below(&mut rng, 3000)
            };
            let nest_at = below(&mut rng, n + 2);
            kinds.insert(std::mem::discriminant(&reference_shape(sites[0], &cfg)));
            check_case::<f64>(case, sites, &cfg, n, nest_at);
            check_case::<f32>(case, sites, &cfg, n, nest_at);
            check_case::<f16>(case, sites, &cfg, n, nest_at);
            check_case::<bf16>(case, sites, &cfg, n, nest_at);
        }
        assert_eq!(kinds.len(), 7, "every kind of shape was drawn");
    }

    #[test]
    fn generated_code_calls_give_the_bits_of_the_reference() {
        let site = site("running::generated#0");
        let x: Vec<f64> = (0..100).map(|i| (i as f64 * 0.7).sin() * 1e3).collect();
        for seed in 0..24 {
            let cfg = ScrambleConfig::off()
                .shuffle(Some(Shuffle::FisherYates))
                .shapes(true)
                .seed(seed);
            let got = with_config(&cfg, || {
                let mut s = 0.5f64;
                let mut r = RunningReduction::begin_at(site, &mut s);
                for &v in &x {
                    r.add_assign(v);
                }
                r.write(&mut s);
                s
            });
            let mut terms = vec![0.5];
            terms.extend(&x);
            let want = per_site_reference(site, &cfg, &terms);
            assert_eq!(got.to_bits(), want.to_bits(), "seed {seed}");
        }
    }

    #[test]
    fn a_new_seed_or_mode_draws_afresh() {
        let site = site("running::fresh#0");
        let x: Vec<f64> = (0..600)
            .map(|i| (i as f64 * 1.3).cos() * 10f64.powi(i % 9 - 4))
            .collect();
        let shapes = ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true);
        // Seeds whose shapes differ, so a stale shape would show.
        let seeds: Vec<u64> = {
            let mut seen = std::collections::HashSet::new();
            (0..200)
                .filter(|&s| {
                    seen.insert(reference_shape(site, &shapes.clone().seed(s)).to_string())
                })
                .collect()
        };
        assert!(seeds.len() > 8, "{seeds:?}");
        let configs = seeds.iter().map(|&s| shapes.clone().seed(s)).chain([
            shapes.clone().shapes(false).seed(5),
            shapes
                .clone()
                .shuffle(Some(Shuffle::Sattolo))
                .shapes(false)
                .seed(5),
            shapes.clone().shuffle(Some(Shuffle::Identity)).seed(5),
            shapes.clone().seed(5),
        ]);
        for (k, cfg) in configs.enumerate() {
            let want = per_site_reference(site, &cfg, &x);
            // Twice: the first call files the shape, the second uses it.
            for call in 0..2 {
                // Every other configuration runs on a thread of its own, which must see
                // what the previous thread filed as stale.
                let got = if k % 2 == 0 {
                    with_config(&cfg, || reduce(site, &x))
                } else {
                    let cfg = cfg.clone();
                    let x = x.clone();
                    std::thread::spawn(move || with_config(&cfg, || reduce(site, &x)))
                        .join()
                        .expect("thread")
                };
                assert_eq!(
                    got.map(f64::to_bits),
                    Some(want.to_bits()),
                    "config {k} ({cfg:?}), call {call}"
                );
            }
        }
    }

    #[test]
    fn per_call_draws_are_unchanged() {
        let site = site("running::per-call#0");
        let x: Vec<f32> = (0..300).map(|i| (i as f32 * 0.9).sin() * 1e2).collect();
        let cfg = ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true)
            .vary(Vary::Call)
            .seed(11);
        let got: Vec<Option<f32>> =
            with_config(&cfg, || (0..12).map(|_| reduce(site, &x)).collect());
        // The same configuration again restarts the invocation counters.
        let want: Vec<f32> = with_config(&cfg, || {
            (0..12)
                .map(|_| {
                    let (key, invocation) = context::next_key(site.id());
                    let mut rng = stream(cfg.seed, key, invocation);
                    let shape = CombineShape::draw(true, Shuffle::FisherYates, &mut rng);
                    combine(shape, &x, &mut rng)
                })
                .collect()
        });
        let got: Vec<Option<u32>> = got.into_iter().map(|v| v.map(f32::to_bits)).collect();
        let want: Vec<Option<u32>> = want.into_iter().map(|v| Some(v.to_bits())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn every_call_is_recorded() {
        let site = site("running::recorded#0");
        let cfg = ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true)
            .seed(3);
        let (_, log) = entropy::record_orders(|| {
            with_config(&cfg, || {
                for _ in 0..5 {
                    reduce(site, &[1.0f64, 2.0, 3.0]);
                }
            })
        });
        let calls = &log.sites[&site.describe()];
        assert_eq!(calls.len(), 5);
        assert!(calls.iter().all(|&h| h == calls[0]));
    }
}
