//! Accumulation sites: where the counts live while a function runs (frame-local
//! [`ChainStats`]) and after it returns (the site's atomic counters).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, Once};

use super::report::HISTOGRAM_BUCKETS;

/// What kind of expression a site is.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteKind {
    /// A local variable accumulated into (`s += e`, `s = s + e`, `#[acc] let s`): its
    /// chains follow Defour's rule through every assignment to it in the function.
    Variable,
    /// An indexed, field or dereferenced place (`c[i] += e`, `*out += e`): chains are
    /// kept per address (see [`PlaceChains`]).
    Place,
    /// `.sum()` or `.fold(init, |a, b| a + b)`: one chain of as many additions as items.
    Iterator,
}

impl std::fmt::Display for SiteKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SiteKind::Variable => "variable",
            SiteKind::Place => "place",
            SiteKind::Iterator => "iterator",
        })
    }
}

/// One accumulation site: a `static` the macro emits in the annotated function.
#[derive(Debug)]
pub struct Site {
    /// `module::path::function`.
    pub function: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Line of the site.
    pub line: u32,
    /// Column of the site.
    pub column: u32,
    /// The site's source text.
    pub expr: &'static str,
    /// What kind of site it is.
    pub kind: SiteKind,
    /// The accumulated value is read inside the loop that builds it (a prefix sum, a
    /// running value written out): its order is its meaning, not a rounding choice.
    pub running: bool,
    /// Some addition's terms were looked at (concrete float types, `+=`/`-=` forms).
    pub(super) checked: AtomicBool,
    /// Some term or partial sum was not a whole number below `2^p`.
    pub(super) inexact: AtomicBool,
    pub(super) max: AtomicU64,
    pub(super) adds: AtomicU64,
    pub(super) chains: AtomicU64,
    pub(super) invocations: AtomicU64,
    pub(super) hist: [AtomicU64; HISTOGRAM_BUCKETS],
    registered: AtomicBool,
}

impl Site {
    /// A site with no counts.
    pub const fn new(
        function: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
        expr: &'static str,
        kind: SiteKind,
    ) -> Site {
        Site {
            function,
            file,
            line,
            column,
            expr,
            kind,
            running: false,
            checked: AtomicBool::new(false),
            inexact: AtomicBool::new(false),
            max: AtomicU64::new(0),
            adds: AtomicU64::new(0),
            chains: AtomicU64::new(0),
            invocations: AtomicU64::new(0),
            hist: [const { AtomicU64::new(0) }; HISTOGRAM_BUCKETS],
            registered: AtomicBool::new(false),
        }
    }

    /// The same site, marked as a running value (see [`Site::running`]).
    pub const fn running_value(mut self) -> Site {
        self.running = true;
        self
    }

    /// Merge one invocation's counts (called once per function return).
    pub fn merge(&'static self, s: &ChainStats) {
        if s.adds == 0 {
            return;
        }
        self.register();
        self.max.fetch_max(s.max, Relaxed);
        self.adds.fetch_add(s.adds, Relaxed);
        self.chains.fetch_add(s.chains, Relaxed);
        self.invocations.fetch_add(1, Relaxed);
        if s.checked {
            self.checked.store(true, Relaxed);
        }
        if s.inexact {
            self.inexact.store(true, Relaxed);
        }
        for (a, &h) in self.hist.iter().zip(&s.hist) {
            if h != 0 {
                a.fetch_add(h, Relaxed);
            }
        }
    }

    pub(super) fn clear(&self) {
        for a in [&self.max, &self.adds, &self.chains, &self.invocations] {
            a.store(0, Relaxed);
        }
        self.checked.store(false, Relaxed);
        self.inexact.store(false, Relaxed);
        for a in &self.hist {
            a.store(0, Relaxed);
        }
    }

    fn register(&'static self) {
        if !self.registered.swap(true, Relaxed) {
            SITES.lock().unwrap_or_else(|e| e.into_inner()).push(self);
            install_exit_report();
        }
    }
}

static SITES: Mutex<Vec<&'static Site>> = Mutex::new(Vec::new());

pub(super) fn all_sites() -> Vec<&'static Site> {
    SITES.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn bucket(chain: u64) -> usize {
    ((63 - chain.leading_zeros()) as usize).min(HISTOGRAM_BUCKETS - 1)
}

/// One site's counts during one function call, held in a local of the annotated function.
#[derive(Clone, Debug, Default)]
pub struct ChainStats {
    /// Longest chain.
    pub max: u64,
    /// Additions.
    pub adds: u64,
    /// Chains ended.
    pub chains: u64,
    /// Chains by length: bucket `b` holds lengths in `[2^b, 2^(b+1))`.
    pub hist: [u64; HISTOGRAM_BUCKETS],
    /// Some addition's terms were looked at.
    pub checked: bool,
    /// Some term or partial sum was not a whole number below `2^p`, or an addition's
    /// terms could not be looked at.
    pub inexact: bool,
    /// Sum of the magnitudes of the terms looked at.
    pub magnitude: f64,
}

impl ChainStats {
    /// End the chain `cur` (if any) and start over at 0.
    #[inline]
    pub fn end(&mut self, cur: &mut u64) {
        let c = std::mem::take(cur);
        if c > 0 {
            self.max = self.max.max(c);
            self.adds += c;
            self.chains += 1;
            self.hist[bucket(c)] += 1;
        }
    }

    /// End the chain `cur` and set it to `new` (an assignment that does not extend it).
    #[inline]
    pub fn restart(&mut self, cur: &mut u64, new: u64) {
        self.end(cur);
        *cur = new;
    }

    /// End every chain of `places` and merge everything into `site` (at the frame's
    /// exit), leaving nothing to merge a second time.
    #[inline]
    pub fn finish_places(&mut self, places: &mut PlaceChains, site: &'static Site) {
        for c in places.run.iter_mut() {
            self.end(c);
        }
        site.merge(&std::mem::take(self));
    }

    /// Look at one addition before it runs: its term and the accumulated value it is added
    /// to, each as (value, `2^p` of its type), `None` when the type is not a concrete
    /// float; `start` when the addition starts a chain (the value is then the chain's
    /// initial value). The site stays an exact integer counter while every term and
    /// value is a whole number and the magnitudes of the terms and of each chain's
    /// initial value add up to less than `2^p`: then every partial sum, in every order,
    /// is a whole number below `2^p`, so every order gives the same sum. Looked at before
    /// the addition because the addition may move the term (a user type that is not
    /// `Copy`).
    #[inline(always)]
    pub fn term(&mut self, term: Option<(f64, f64)>, before: Option<(f64, f64)>, start: bool) {
        if self.inexact {
            return;
        }
        match (term, before) {
            (Some((t, limit)), Some((b, _))) => {
                self.checked = true;
                if start {
                    self.magnitude += b.abs();
                }
                self.magnitude += t.abs();
                let whole = |x: f64| x == (x as i64) as f64;
                if !(whole(t) && whole(b) && self.magnitude < limit) {
                    self.inexact = true;
                }
            }
            _ => self.inexact = true,
        }
    }

    /// End `cur` and merge everything into `site` (at the frame's exit), leaving nothing
    /// to merge a second time.
    #[inline]
    pub fn finish(&mut self, cur: &mut u64, site: &'static Site) {
        self.end(cur);
        site.merge(&std::mem::take(self));
    }
}

/// Chains of one place site, per address: a direct-mapped table of 16 addresses, so
/// up to 16 interleaved accumulators (lanes `acc[i % 8]`, the outputs of an `i-p-j`
/// matrix product) keep their own chains. A chain ends when its slot is taken by
/// another address, or when the function returns.
#[derive(Clone, Debug, Default)]
pub struct PlaceChains {
    addr: [usize; PLACE_SLOTS],
    run: [u64; PLACE_SLOTS],
}

const PLACE_SLOTS: usize = 16;

impl PlaceChains {
    /// One addition into the place `p`; whether it starts a chain there.
    #[inline(always)]
    pub fn add<T>(&mut self, stats: &mut ChainStats, p: *const T) -> bool {
        let a = p as usize;
        let slot = (a / std::mem::size_of::<T>().max(1)) % PLACE_SLOTS;
        if self.addr[slot] != a {
            stats.end(&mut self.run[slot]);
            self.addr[slot] = a;
        }
        self.run[slot] += 1;
        self.run[slot] == 1
    }
}

/// The chain counter of one accumulator variable in one call (or closure call): a field
/// of the function's frame, or, when a closure adds into the variable, a local of its own
/// beside it, so the closure captures the counter exactly as it captures the variable (an
/// edition-2018 closure captures a whole local). Merged into its site by
/// [`Finish::finish`].
#[derive(Debug)]
pub struct VarChain {
    /// The running chain.
    pub c: u64,
    /// No addition since the chain was last (re)started.
    fresh: bool,
    stats: ChainStats,
    site: &'static Site,
}

impl VarChain {
    /// A counter for site `index` of the function's table `sites` (a table and a
    /// constant, so the caller pays no bounds check per counter).
    #[inline(always)]
    pub fn new<const N: usize>(sites: &'static [Site; N], index: usize) -> Self {
        VarChain {
            c: 0,
            fresh: true,
            stats: ChainStats::default(),
            site: &sites[index],
        }
    }

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
    /// looked at (see [`ChainStats::term`]). One call per site.
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
}

impl Finish for VarChain {
    #[inline]
    fn finish(&mut self) {
        self.stats.finish(&mut self.c, self.site);
    }
}

/// The per-address chains of one place site in one call (see [`PlaceChains`]); merged
/// into its site by [`Finish::finish`].
#[derive(Debug)]
pub struct PlaceChain {
    places: PlaceChains,
    stats: ChainStats,
    site: &'static Site,
}

impl PlaceChain {
    /// The chains of site `index` of the function's table `sites`.
    #[inline(always)]
    pub fn new<const N: usize>(sites: &'static [Site; N], index: usize) -> Self {
        PlaceChain {
            places: PlaceChains::default(),
            stats: ChainStats::default(),
            site: &sites[index],
        }
    }

    /// `*place += term` (or `-=`) is about to run: when the place is a counted float
    /// type, its chain grows by one and the term and the place's value are looked at
    /// (see [`ChainStats::term`]).
    #[inline]
    pub fn add_term<T, A: ?Sized>(&mut self, place: &T, term: &A) {
        if super::private::is_float(place as *const T) {
            let start = self.places.add(&mut self.stats, place as *const T);
            self.stats.term(
                super::private::exact_value(term),
                super::private::exact_value(place),
                start,
            );
        }
    }

    /// `*place = *place + e` just ran: the term is not apart from the sum.
    #[inline]
    pub fn add_unchecked<T>(&mut self, place: &T) {
        if super::private::is_float(place as *const T) {
            self.places.add(&mut self.stats, place as *const T);
            self.stats.inexact = true;
        }
    }
}

impl Finish for PlaceChain {
    #[inline]
    fn finish(&mut self) {
        self.stats.finish_places(&mut self.places, self.site);
    }
}

/// A counter merged into its site: by the generated frame at each of the function's
/// exits, or on drop (see [`OnDrop`]). Merging twice merges nothing the second time.
pub trait Finish {
    /// End the running chains and merge the counts into the site.
    fn finish(&mut self);
}

/// A counter merged into its site when dropped (returns, `?` and unwinding alike): the
/// counter of a variable a closure adds into, a local of its own beside the variable.
/// Generated code reaches the counter as `.0`, a place, so a call on it that reads
/// another counter's chain in its arguments borrows no more than the counter.
pub struct OnDrop<C: Finish>(pub C);

impl<C: Finish> Drop for OnDrop<C> {
    #[inline]
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// An iterator that counts the items a `.sum()` or `.fold(..)` consumes (one chain).
///
/// The chain is recorded when the iterator is exhausted: at the end of
/// [`fold`](Iterator::fold) (which every float `Sum` and the `.fold(..)` site use) or
/// when [`next`](Iterator::next) returns `None`. It has no `Drop`: a temporary with drop
/// glue in a long function makes the borrow checker trace it through the whole function
/// (about 40 M compiler instructions per site on a 2,000-line function).
/// Built by the generated code's dispatch (`Wrap`), which knows whether the receiver is
/// an iterator.
pub struct CountingIter<I> {
    pub(super) inner: I,
    pub(super) count: u64,
    pub(super) site: &'static Site,
    pub(super) float: bool,
}

impl<I: Iterator> Iterator for CountingIter<I> {
    type Item = I::Item;

    #[inline(always)]
    fn next(&mut self) -> Option<I::Item> {
        let x = self.inner.next();
        match x {
            Some(_) => self.count += 1,
            None => record_iter(self.site, std::mem::take(&mut self.count), self.float),
        }
        x
    }

    #[inline(always)]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }

    #[inline(always)]
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> B {
        // A `next` loop, not the inner iterator's own `fold` with a counting closure: per
        // site (each with its own iterator type) that is one function fewer for the
        // compiler, 0.26 G of 7.0 G instructions on a 2,000-line function with 64 sites.
        // An adaptor whose `fold` beats its `next` (`chain`, `flatten`) runs at its `next`
        // speed while counted.
        let mut acc = init;
        #[allow(clippy::while_let_on_iterator)] // `by_ref` costs an instantiation per site
        while let Some(x) = self.inner.next() {
            self.count += 1;
            acc = f(acc, x);
        }
        record_iter(self.site, self.count, self.float);
        acc
    }
}

fn record_iter(site: &'static Site, count: u64, float: bool) {
    if count > 0 && float {
        let mut s = ChainStats::default();
        let mut c = count;
        s.end(&mut c);
        site.merge(&s);
    }
}

static EXIT_HOOK: Once = Once::new();

fn install_exit_report() {
    EXIT_HOOK.call_once(|| match std::env::var(super::FPREV_CHAINS) {
        Ok(v) if v == "1" => crate::at_exit::register(print_report_at_exit),
        Ok(v) if v.is_empty() || v == "0" => {}
        Ok(v) => eprintln!(
            "fprev: {}={v:?} is not 0 or 1; using the default (no report at exit)",
            super::FPREV_CHAINS
        ),
        Err(_) => {}
    });
}

extern "C" fn print_report_at_exit() {
    let r = super::report();
    eprintln!("{r}");
    // The record of the whole run (see `merged`): each process adds its counts.
    if let Some(dir) = super::merged::directory() {
        match super::merged::merge_into(&dir, &r) {
            Ok((path, n)) => eprintln!(
                "fprev chains: merged report of this run ({n} process(es) so far): {}",
                path.display()
            ),
            Err(e) => eprintln!(
                "fprev chains: cannot merge into {}: {e}",
                dir.join("chains.txt").display()
            ),
        }
    }
}
