//! Accumulation sites: where the counts live while a function runs (frame-local
//! [`ChainStats`]) and after it returns (the site's atomic counters).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, Once};

use super::exit_report;
use super::report::{classify, sort, ChainReport, Order, SiteChains, HISTOGRAM_BUCKETS};
use super::source::{AccumulationKind, SiteSource};

/// One accumulation site: a `static` the macro emits in the annotated function.
#[derive(Debug)]
pub struct Site {
    /// Where the site is and what it accumulates.
    pub source: SiteSource,
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
    pub(super) evicted: AtomicU64,
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
        kind: AccumulationKind,
    ) -> Site {
        Site {
            source: SiteSource {
                function,
                file,
                line,
                column,
                expr,
                kind,
            },
            running: false,
            checked: AtomicBool::new(false),
            inexact: AtomicBool::new(false),
            max: AtomicU64::new(0),
            adds: AtomicU64::new(0),
            chains: AtomicU64::new(0),
            invocations: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            hist: [const { AtomicU64::new(0) }; HISTOGRAM_BUCKETS],
            registered: AtomicBool::new(false),
        }
    }

    /// A site of `kind` whose file, line and column are those of this call: the macro
    /// spans the call at the user's expression, so one short call stands for
    /// `file!()`, `line!()` and `column!()` (a table entry costs compile time in every
    /// annotated function).
    ///
    /// ```
    /// use fprev_runtime::chains::{Site, AccumulationKind};
    /// static S: Site = Site::here("m::f", "s += x", AccumulationKind::Variable);
    /// assert_eq!((S.source.file, S.source.line), (file!(), line!() - 1));
    /// ```
    #[track_caller]
    pub const fn here(function: &'static str, expr: &'static str, kind: AccumulationKind) -> Site {
        let at = std::panic::Location::caller();
        Site::new(function, at.file(), at.line(), at.column(), expr, kind)
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
        if s.evicted != 0 {
            self.evicted.fetch_add(s.evicted, Relaxed);
        }
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
        for a in [
            &self.max,
            &self.adds,
            &self.chains,
            &self.invocations,
            &self.evicted,
        ] {
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

/// Snapshot the counts of every site recorded so far.
pub fn report() -> ChainReport {
    let mut sites: Vec<SiteChains> = all_sites()
        .into_iter()
        .map(|s| {
            let (max, adds, chains, executions) = (
                s.max.load(Relaxed),
                s.adds.load(Relaxed),
                s.chains.load(Relaxed),
                s.invocations.load(Relaxed),
            );
            SiteChains {
                source: s.source,
                max_chain: max,
                adds,
                chains,
                executions,
                histogram: std::array::from_fn(|b| s.hist[b].load(Relaxed)),
                evicted: s.evicted.load(Relaxed),
                shape: classify(adds, chains, executions, max),
                order: if s.running {
                    Order::RunningValue
                } else if s.checked.load(Relaxed) && !s.inexact.load(Relaxed) {
                    Order::ExactInteger
                } else {
                    Order::Reorderable
                },
            }
        })
        .filter(|s| s.adds > 0)
        .collect();
    sort(&mut sites);
    ChainReport { sites }
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
    /// Chains cut because another place took their slot: more interleaved places than
    /// a place site tracks at once (the longest chain is then a lower bound).
    pub evicted: u64,
}

impl ChainStats {
    /// No counts yet (the `Default`, usable in a constant).
    pub const NEW: ChainStats = ChainStats {
        max: 0,
        adds: 0,
        chains: 0,
        hist: [0; HISTOGRAM_BUCKETS],
        checked: false,
        inexact: false,
        magnitude: 0.0,
        evicted: 0,
    };

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

/// An iterator that counts the items a `.sum()` or `.fold(..)` consumes (one chain).
///
/// The chain is recorded when the iterator is exhausted: at the end of
/// [`fold`](Iterator::fold) (which every float `Sum` and the `.fold(..)` site use) or
/// when [`next`](Iterator::next) returns `None`. It has no `Drop`: a temporary with drop
/// glue in a long function makes the borrow checker trace it through the whole function,
/// once per site.
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

    #[inline]
    fn next(&mut self) -> Option<I::Item> {
        let x = self.inner.next();
        match x {
            Some(_) => self.count += 1,
            None => record_iter(self.site, std::mem::take(&mut self.count), self.float),
        }
        x
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }

    #[inline]
    fn fold<B, F: FnMut(B, Self::Item) -> B>(mut self, init: B, mut f: F) -> B {
        // A `next` loop, not the inner iterator's own `fold` with a counting closure: per
        // site (each with its own iterator type) that is one function fewer for the
        // compiler to build, which adds up in functions with many iterator sites.
        // An adaptor whose `fold` beats its `next` (`chain`, `flatten`) runs at its `next`
        // speed while counted.
        // The accumulator's type tells too: `fold(0.0, |a, p| a + p.x)` over points, or a
        // tuple fold `fold((0.0, 0.0), ..)` carrying sums side by side.
        let float = self.float || super::private::sums_floats::<B>();
        let mut acc = init;
        #[allow(clippy::while_let_on_iterator)] // `by_ref` costs an instantiation per site
        while let Some(x) = self.inner.next() {
            self.count += 1;
            acc = f(acc, x);
        }
        record_iter(self.site, self.count, float);
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
    EXIT_HOOK.call_once(|| {
        if super::private::counting() {
            crate::at_exit::register(print_report_at_exit);
        }
    });
}

extern "C" fn print_report_at_exit() {
    exit_report::print(&report());
}
