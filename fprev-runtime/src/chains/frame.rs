//! The counters of one call of an annotated function (or of a closure in it): a
//! [`Frame`] the generated code builds at the top of the body, updates at each site by
//! slot, and merges into the sites' atomic counters when the call ends.
//!
//! One value with two arrays, built by one call, rather than a struct with a field per
//! counter: a field per counter costs a constructor call and a merge call per counter,
//! compiled into every annotated function, which long functions with many counters pay
//! for in build time.

use std::ops::{AddAssign, SubAssign};

use super::site::{ChainStats, Site};

/// Chains of one place site, per address: a direct-mapped table of 16 addresses, so
/// up to 16 interleaved accumulators (lanes `acc[i % 8]`, the outputs of an `i-p-j`
/// matrix product) keep their own chains. A chain ends when its slot is taken by
/// another address, when the place no longer holds the value the last counted addition
/// left there (something else set it: a vector declared again in an outer loop, a
/// scaling), or when the function returns.
#[derive(Clone, Debug, Default)]
pub struct PlaceChains {
    addr: [usize; PLACE_SLOTS],
    run: [u64; PLACE_SLOTS],
    /// The bits (as `f64`) of the value the last counted addition left at `addr`.
    last: [u64; PLACE_SLOTS],
}

const PLACE_SLOTS: usize = 16;

fn slot_of<T>(a: usize) -> usize {
    (a / std::mem::size_of::<T>().max(1)) % PLACE_SLOTS
}

impl PlaceChains {
    /// No chains yet.
    pub const NEW: PlaceChains = PlaceChains {
        addr: [0; PLACE_SLOTS],
        run: [0; PLACE_SLOTS],
        last: [0; PLACE_SLOTS],
    };

    /// One addition into the place `p`, which `continues` its chain unless something
    /// else set it since the last counted addition; whether it starts a chain there.
    #[inline(always)]
    pub fn add<T>(&mut self, stats: &mut ChainStats, p: *const T, continues: bool) -> bool {
        let a = p as usize;
        let slot = slot_of::<T>(a);
        if self.addr[slot] != a || !continues {
            if self.addr[slot] != a && self.run[slot] > 0 {
                // Another place's chain loses its slot: it is cut, not ended.
                stats.evicted += 1;
            }
            stats.end(&mut self.run[slot]);
            self.addr[slot] = a;
        }
        self.run[slot] += 1;
        self.run[slot] == 1
    }

    /// A counted addition left the value with these bits at `p`.
    #[inline(always)]
    fn wrote<T>(&mut self, p: *const T, bits: u64) {
        let a = p as usize;
        let slot = slot_of::<T>(a);
        if self.addr[slot] == a {
            self.last[slot] = bits;
        }
    }

    /// Whether a counted addition of this site was the last to set `p`, to `bits`.
    #[inline(always)]
    fn left<T>(&self, p: *const T, bits: u64) -> bool {
        let a = p as usize;
        let slot = slot_of::<T>(a);
        self.addr[slot] == a && self.run[slot] > 0 && self.last[slot] == bits
    }
}

/// The chain counter of one accumulator variable in one call (or closure call).
#[derive(Debug)]
pub struct VarChain {
    /// The running chain.
    pub c: u64,
    /// No addition since the chain was last (re)started.
    fresh: bool,
    stats: ChainStats,
}

impl VarChain {
    /// No chain yet.
    pub const NEW: VarChain = VarChain {
        c: 0,
        fresh: true,
        stats: ChainStats::NEW,
    };

    /// An assignment that does not extend the chain: end it, start over at `new`.
    #[inline]
    pub fn restart(&mut self, new: u64) {
        self.stats.restart(&mut self.c, new);
        self.fresh = true;
    }

    /// An addition whose term is not looked at (`s = s + e`): the site is not called
    /// an exact integer counter.
    #[inline(always)]
    pub fn unchecked(&mut self) {
        self.stats.inexact = true;
    }

    /// `s += e` (or `-=`) is about to run, with `term` the value of `e` and `before` the
    /// accumulator: when it is a counted float type, the chain grows by one plus `extra`
    /// (the chains of accumulators the term adds in), and the term and the value are
    /// looked at (see [`ChainStats::term`]).
    #[inline]
    pub fn add<A: ?Sized, B: ?Sized>(&mut self, term: &A, before: &B, extra: u64) {
        if super::private::is_float(before as *const B) {
            self.c += 1 + extra;
            // Nothing more once a term showed the site is no exact counter: the hot path
            // of a real reduction is the chain count alone.
            if !self.stats.inexact {
                let start = std::mem::replace(&mut self.fresh, false);
                self.stats.term(
                    super::private::exact_value(term),
                    super::private::exact_value(before),
                    start,
                );
            }
        }
    }

    /// `s = s + e` just ran (the accumulator at `var`): the chain grows by `grow`, the
    /// term is not looked at.
    #[inline]
    pub fn grow<B: ?Sized>(&mut self, var: *const B, grow: u64) {
        if super::private::is_float(var) {
            self.c += grow;
            self.unchecked();
        }
    }

    /// An assignment to the accumulator at `var` that does not extend its chain: end it,
    /// start over at `new`.
    #[inline]
    pub fn restart_at<B: ?Sized>(&mut self, var: *const B, new: u64) {
        if super::private::is_float(var) {
            self.restart(new);
        }
    }

    /// End the running chain and merge everything into `site`, leaving nothing to merge
    /// a second time.
    pub fn finish(&mut self, site: &'static Site) {
        self.stats.finish(&mut self.c, site);
    }
}

/// The per-address chains of one place site in one call (see [`PlaceChains`]).
#[derive(Debug)]
pub struct PlaceChain {
    places: PlaceChains,
    stats: ChainStats,
}

impl PlaceChain {
    /// No chains yet.
    pub const NEW: PlaceChain = PlaceChain {
        places: PlaceChains::NEW,
        stats: ChainStats::NEW,
    };

    /// `*place += term` (or `-=`) is about to run, the place's chain going on when
    /// `continues`: when the place is a counted float type, its chain grows by one and
    /// the term and the place's value are looked at (see [`ChainStats::term`]).
    #[inline]
    pub fn add_term<T, A: ?Sized>(&mut self, place: &T, term: &A, continues: bool) {
        if super::private::is_float(place as *const T) {
            let start = self
                .places
                .add(&mut self.stats, place as *const T, continues);
            self.stats.term(
                super::private::exact_value(term),
                super::private::exact_value(place),
                start,
            );
        }
    }

    /// A vector held at `vector` was rebuilt from itself, each element adding one term
    /// (`self.mean = x.iter().zip(self.mean.iter()).map(..).collect()`): the chain of the
    /// place grows by one when its element type `element` is a counted float type. The
    /// vector's own address keys the chain; its buffer moves at every rebuild.
    #[inline]
    pub fn rebuilt<T, C>(&mut self, element: *const T, vector: *const C) {
        if super::private::is_float(element) {
            self.places.add(&mut self.stats, vector.cast::<T>(), true);
            self.stats.inexact = true;
        }
    }

    /// `*place = *place + e` is about to set the place, its chain going on when
    /// `continues`: the term is not apart from the sum.
    #[inline]
    pub fn add_unchecked<T>(&mut self, place: &T, continues: bool) {
        if super::private::is_float(place as *const T) {
            self.places
                .add(&mut self.stats, place as *const T, continues);
            self.stats.inexact = true;
        }
    }

    /// End every chain and merge everything into `site`, leaving nothing to merge a
    /// second time.
    pub fn finish(&mut self, site: &'static Site) {
        for c in self.places.run.iter_mut() {
            self.stats.end(c);
        }
        site.merge(&std::mem::take(&mut self.stats));
    }
}

/// The bits of a counted float value (as `f64`, exact for every counted type).
#[inline(always)]
fn value_bits<T>(x: &T) -> Option<u64> {
    super::private::exact_value(x).map(|(v, _)| v.to_bits())
}

/// The counters of one call: `V` variable counters and `P` place counters, each in a
/// slot that the generated code names by a constant, and the sites they merge into.
///
/// Every update is one method call on the frame with the slot first
/// (`s += frame.add(2, term, &s, 0)`), so a site costs its function one call and no bounds
/// check of its own.
pub struct Frame<const V: usize, const P: usize> {
    vars: [VarChain; V],
    places: [PlaceChain; P],
    sites: &'static [Site],
    var_sites: &'static [usize; V],
    place_sites: &'static [usize; P],
}

impl<const V: usize, const P: usize> Frame<V, P> {
    /// Counters for the variable sites `var_sites` and the place sites `place_sites`
    /// (indexes into the function's table `sites`), in that slot order.
    #[inline]
    pub fn new(
        sites: &'static [Site],
        var_sites: &'static [usize; V],
        place_sites: &'static [usize; P],
    ) -> Self {
        Frame {
            vars: [VarChain::NEW; V],
            places: [PlaceChain::NEW; P],
            sites,
            var_sites,
            place_sites,
        }
    }

    /// The running chain of variable slot `slot`.
    #[inline]
    pub fn c(&self, slot: usize) -> u64 {
        self.vars[slot].c
    }

    /// `extra` plus the running chains of the variable slots `chains`: what a value
    /// that adds those accumulators in brings to a chain.
    #[inline]
    fn extra(&self, extra: u64, chains: &[usize]) -> u64 {
        chains
            .iter()
            .fold(extra, |e, &k| e.saturating_add(self.vars[k].c))
    }

    /// [`VarChain::add`] on variable slot `slot`, with the term, which comes back (the
    /// generated `s += frame.add(0, t, &s, 0)` moves it through, where a borrow would
    /// be one more loan for the borrow checker to follow through the function).
    #[inline]
    pub fn add<A, B: ?Sized>(&mut self, slot: usize, term: A, before: &B, extra: u64) -> A {
        self.vars[slot].add(&term, before, extra);
        term
    }

    /// [`Frame::add`] for a term that adds in the running chains of the variable slots
    /// `chains` (`s += t + u`): the frame reads them, where a read in the arguments
    /// would be a call, a temporary and an overflow check each.
    #[inline]
    pub fn add_chains<A, B: ?Sized>(
        &mut self,
        slot: usize,
        term: A,
        before: &B,
        extra: u64,
        chains: &[usize],
    ) -> A {
        let extra = self.extra(extra, chains);
        self.add(slot, term, before, extra)
    }

    /// [`VarChain::grow`] on variable slot `slot`.
    #[inline]
    pub fn grow<B: ?Sized>(&mut self, slot: usize, var: *const B, grow: u64) {
        self.vars[slot].grow(var, grow);
    }

    /// [`Frame::grow`] by `grow` and the running chains of the variable slots `chains`
    /// (`s = s + t`).
    #[inline]
    pub fn grow_chains<B: ?Sized>(
        &mut self,
        slot: usize,
        var: *const B,
        grow: u64,
        chains: &[usize],
    ) {
        let grow = self.extra(grow, chains);
        self.grow(slot, var, grow);
    }

    /// [`VarChain::restart_at`] on variable slot `slot`.
    #[inline]
    pub fn restart_at<B: ?Sized>(&mut self, slot: usize, var: *const B, new: u64) {
        self.vars[slot].restart_at(var, new);
    }

    /// [`Frame::restart_at`] with a new value that adds in the running chains of the
    /// variable slots `chains` (`t = s`).
    #[inline]
    pub fn restart_chains<B: ?Sized>(
        &mut self,
        slot: usize,
        var: *const B,
        new: u64,
        chains: &[usize],
    ) {
        let new = self.extra(new, chains);
        self.restart_at(slot, var, new);
    }

    /// Whether an addition into `place`, holding `bits` now, goes on with a chain: a
    /// counted addition (of this site or of another place site of the frame: `g[j] += a`
    /// and `g[j] += b` in one loop build one value) left it so. Otherwise something else
    /// set it since: a new vector where the old one was, a non-additive update.
    #[inline]
    fn continues<T>(&self, slot: usize, place: *const T, bits: u64) -> bool {
        self.places[slot].places.left(place, bits)
            || self.places.iter().any(|p| p.places.left(place, bits))
    }

    /// `*place += term` on place slot `slot`, the term and the place's value looked at
    /// first ([`PlaceChain::add_term`]). The generated `frame.add_to(1, t, &mut c[i])`
    /// evaluates the place once, after the term, as `c[i] += t` does, through the
    /// same `IndexMut` and `AddAssign` the plain statement calls, and holds no
    /// reference to it beyond the call.
    #[inline]
    pub fn add_to<T: AddAssign<A>, A>(&mut self, slot: usize, term: A, place: &mut T) {
        match value_bits(&*place) {
            Some(bits) => {
                let continues = self.continues(slot, &*place, bits);
                self.places[slot].add_term(&*place, &term, continues);
                *place += term;
                self.wrote(slot, place);
            }
            None => *place += term,
        }
    }

    /// `*place -= term`, as [`Frame::add_to`].
    #[inline]
    pub fn sub_from<T: SubAssign<A>, A>(&mut self, slot: usize, term: A, place: &mut T) {
        match value_bits(&*place) {
            Some(bits) => {
                let continues = self.continues(slot, &*place, bits);
                self.places[slot].add_term(&*place, &term, continues);
                *place -= term;
                self.wrote(slot, place);
            }
            None => *place -= term,
        }
    }

    /// [`PlaceChain::rebuilt`] on place slot `slot`: `place = x.iter().zip(place.iter())
    /// .map(..).collect()`, with `element` the old vector's element pointer (null when
    /// it is no `Vec`), then the new vector `v` written.
    #[inline]
    pub fn rebuild<T, C>(&mut self, slot: usize, element: *const T, v: C, place: &mut C) {
        self.places[slot].rebuilt(element, place as *const C);
        *place = v;
    }

    /// `*place = sum` for `place = place + e` (or `e + place`, `place - e`) on place
    /// slot `slot`, with `sum` the right side, already computed: the term is not apart
    /// from the sum.
    #[inline]
    pub fn assign_sum<T>(&mut self, slot: usize, sum: T, place: &mut T) {
        match value_bits(&*place) {
            Some(bits) => {
                let continues = self.continues(slot, &*place, bits);
                self.places[slot].add_unchecked(&*place, continues);
                *place = sum;
                self.wrote(slot, place);
            }
            None => *place = sum,
        }
    }

    #[inline(always)]
    fn wrote<T>(&mut self, slot: usize, place: &T) {
        if let Some(bits) = value_bits(place) {
            self.places[slot].places.wrote(place as *const T, bits);
        }
    }
}

impl<const V: usize, const P: usize> Finish for Frame<V, P> {
    #[inline]
    fn finish(&mut self) {
        finish_all(
            &mut self.vars,
            &mut self.places,
            self.sites,
            self.var_sites,
            self.place_sites,
        );
    }
}

/// The body of [`Frame::finish`], compiled once here rather than per frame size.
fn finish_all(
    vars: &mut [VarChain],
    places: &mut [PlaceChain],
    sites: &'static [Site],
    var_sites: &[usize],
    place_sites: &[usize],
) {
    for (c, &k) in vars.iter_mut().zip(var_sites) {
        c.finish(&sites[k]);
    }
    for (c, &k) in places.iter_mut().zip(place_sites) {
        c.finish(&sites[k]);
    }
}

/// Counters merged into their sites: by the generated code at each of the function's
/// exits, or on drop (see [`OnDrop`]). Merging twice merges nothing the second time.
pub trait Finish {
    /// End the running chains and merge the counts into the sites.
    fn finish(&mut self);
}

/// Counters merged into their sites when dropped (returns, `?` and unwinding alike): a
/// closure's frame, the counter of a variable a closure adds into (a local of its own
/// beside the variable), and a function's frame when not every exit is visible.
/// Generated code reaches the counters as `.0`, a place, so a call on it that reads
/// another counter's chain in its arguments borrows no more than the counters.
pub struct OnDrop<C: Finish>(pub C);

impl<C: Finish> Drop for OnDrop<C> {
    #[inline]
    fn drop(&mut self) {
        self.0.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chains::AccumulationKind;

    static SITES: [Site; 2] = [
        Site::new(
            "frame::f",
            "f.rs",
            1,
            1,
            "s += x",
            AccumulationKind::Variable,
        ),
        Site::new(
            "frame::f",
            "f.rs",
            2,
            1,
            "c[i] += x",
            AccumulationKind::Place,
        ),
    ];

    #[test]
    fn a_frame_merges_each_slot_into_its_site_once() {
        let mut frame = Frame::new(&SITES, &[0], &[1]);
        let (mut s, mut c) = (0.0f64, [0.0f64; 2]);
        for i in 0..6 {
            let x = 0.5 * i as f64;
            s += frame.add(0, x, &s, 0);
            frame.add_to(0, x, &mut c[i % 2]);
        }
        assert_eq!(frame.c(0), 6);
        frame.finish();
        frame.finish();
        assert_eq!(SITES[0].adds.load(std::sync::atomic::Ordering::Relaxed), 6);
        assert_eq!(SITES[0].max.load(std::sync::atomic::Ordering::Relaxed), 6);
        assert_eq!(SITES[1].adds.load(std::sync::atomic::Ordering::Relaxed), 6);
        // Two addresses, each a chain of 3.
        assert_eq!(SITES[1].max.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert_eq!(
            SITES[1].chains.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
    }

    #[test]
    fn a_term_brings_the_chains_it_adds_in() {
        static SITES: [Site; 2] = [
            Site::new(
                "frame::g",
                "g.rs",
                1,
                1,
                "s += t + u",
                AccumulationKind::Variable,
            ),
            Site::new(
                "frame::g",
                "g.rs",
                2,
                1,
                "t += x",
                AccumulationKind::Variable,
            ),
        ];
        let mut frame = Frame::new(&SITES, &[0, 1], &[]);
        let (mut s, mut t) = (0.0f64, 0.0f64);
        frame.restart_at(0, &raw const s, 0);
        frame.restart_at(1, &raw const t, 0);
        for x in [1.0, 2.0, 3.0] {
            t += frame.add(1, x, &t, 0);
        }
        // `s += t + u`: one addition written, one more for `s`, and `t`'s chain of 3.
        let u = 4.0;
        s += frame.add_chains(0, t + u, &s, 1, &[1]);
        assert_eq!((s, frame.c(0), frame.c(1)), (10.0, 5, 3));
        // `t = s`: `t` restarts with `s`'s chain.
        t = s;
        frame.restart_chains(1, &raw const t, 0, &[0]);
        assert_eq!((t, frame.c(1)), (10.0, 5));
        frame.finish();
    }
}
