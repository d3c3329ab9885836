//! Call sites: the places in the source that draw scrambled orders, what each reorders,
//! and how often each ran scrambled.

use std::sync::atomic::{AtomicU64, Ordering};

use super::rng;
use super::state::epoch_unchanged;
use super::Shuffle;

/// What a scrambled site reorders.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteKind {
    /// A float reduction in a loop (`s += e`, `c[i] += e`): its terms are reassociated,
    /// the loop keeps its order.
    Reduction,
    /// An iterator reduction (`.sum()`, `.fold(init, |a, t| a + t)`).
    IterReduction,
    /// A whole loop the user declared order-free (`#[scramble(loop)]`, `#[scramble(loops)]`).
    Loop,
    /// A rayon chain ending in a position-independent consumer.
    Parallel,
}

impl SiteKind {
    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            SiteKind::Reduction => "reduction",
            SiteKind::IterReduction => "iterator reduction",
            SiteKind::Loop => "declared loop",
            SiteKind::Parallel => "rayon chain",
        }
    }
}

/// A place in the source that draws scrambled orders: a reduction, a declared loop, a
/// rayon chain or a launch. Its id keys the random stream.
///
/// Construction stores the fields only: the id (a hash of label, file, line and column)
/// is computed when the site first draws, on the cold path, so that a function with
/// hundreds of sites does not pay for hashing their strings in the compiler's const
/// evaluator, which is slow at it and runs for every site of every annotated function.
#[derive(Debug)]
pub struct CallSite {
    pub(crate) label: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    column: u32,
    pub(crate) shuffle: Option<Shuffle>,
    pub(crate) kind: SiteKind,
    reached: AtomicU64,
    /// [`id`](Self::id) once computed (0: not yet).
    id: AtomicU64,
    /// What the site drew in the current configuration, for reductions drawn once per
    /// site: `epoch << DRAWN_BITS | code`, code 0 for nothing yet.
    drawn: AtomicU64,
}

/// Bits of [`CallSite`]'s drawn code; the epoch takes the others.
const DRAWN_BITS: u32 = 24;

impl CallSite {
    /// A site named `label` (e.g. `module::function#loop-index`) at `file:line:column`;
    /// `shuffle` overrides the configured shuffle for this site.
    pub const fn new(
        label: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
        shuffle: Option<Shuffle>,
    ) -> Self {
        Self::with_kind(label, file, line, column, shuffle, SiteKind::Loop)
    }

    /// [`CallSite::new`] for a site of `kind`.
    pub const fn with_kind(
        label: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
        shuffle: Option<Shuffle>,
        kind: SiteKind,
    ) -> Self {
        CallSite {
            label,
            file,
            line,
            column,
            shuffle,
            kind,
            reached: AtomicU64::new(0),
            id: AtomicU64::new(0),
            drawn: AtomicU64::new(0),
        }
    }

    /// The key of this site's random streams: a hash of label, file, line and column
    /// (unchanged since the streams were first keyed by site, so tokens still replay),
    /// hashed once per process.
    pub(crate) fn id(&self) -> u64 {
        match self.id.load(Ordering::Relaxed) {
            0 => {
                let h = rng::str_hash(0xcbf2_9ce4_8422_2325, self.label);
                let h = rng::str_hash(h, self.file);
                let id =
                    crate::random::splitmix64(h ^ ((self.line as u64) << 32 | self.column as u64));
                self.id.store(id, Ordering::Relaxed);
                id
            }
            id => id,
        }
    }

    /// The code this site filed for `epoch` with [`file_drawn`](Self::file_drawn), if any.
    #[inline]
    pub(crate) fn drawn(&self, epoch: u64) -> Option<u32> {
        let v = self.drawn.load(Ordering::Relaxed);
        let code = (v & ((1 << DRAWN_BITS) - 1)) as u32;
        (code != 0 && v >> DRAWN_BITS == epoch & (u64::MAX >> DRAWN_BITS)).then_some(code)
    }

    /// Files `code` (non-zero, below 2^24) as what this site drew in `epoch`, unless the
    /// configuration changed since `epoch` was read ([`epoch_unchanged`]).
    pub(crate) fn file_drawn(&self, epoch: u64, code: u32) {
        debug_assert!(code != 0 && code >> DRAWN_BITS == 0);
        if epoch_unchanged(epoch) {
            self.drawn
                .store(epoch << DRAWN_BITS | u64::from(code), Ordering::Relaxed);
        }
    }

    /// Whether this site may scramble: every site, unless `FPREV_SITES` names some.
    pub(crate) fn enabled(&self) -> bool {
        static ONLY: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();
        let only = ONLY.get_or_init(|| {
            let v = std::env::var(super::config::vars::FPREV_SITES).ok()?;
            Some(
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            )
        });
        only.as_ref()
            .is_none_or(|o| o.iter().any(|l| l == self.label))
    }

    /// Counts one scrambled execution of this site. One atomic addition: the process's
    /// total is summed over the sites when asked ([`reached_total`]), each site listed
    /// there at its first execution. (A second addition per call, to a counter every
    /// thread shares, cost a short reduction called millions of times about 2% more.)
    #[inline]
    pub(crate) fn mark_reached(&'static self) {
        if self.reached.fetch_add(1, Ordering::Relaxed) == 0 {
            self.list_reached();
        }
        super::reached_by::note();
    }

    #[cold]
    #[inline(never)]
    fn list_reached(&'static self) {
        REACHED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(self);
    }

    /// Scrambled executions of this site so far in this process.
    pub fn reached(&self) -> u64 {
        self.reached.load(Ordering::Relaxed)
    }

    /// What the site reorders.
    pub fn kind(&self) -> SiteKind {
        self.kind
    }

    /// `module::function#kindN`.
    pub fn label(&self) -> &'static str {
        self.label
    }

    /// Source file and line.
    pub fn location(&self) -> (&'static str, u32) {
        (self.file, self.line)
    }

    /// `label@file:line`, as reports show it.
    pub fn describe(&self) -> String {
        format!("{}@{}:{}", self.label, self.file, self.line)
    }
}

/// The sites executed scrambled in this process, each listed once, at its first execution.
static REACHED: std::sync::Mutex<Vec<&'static CallSite>> = std::sync::Mutex::new(Vec::new());

/// Scrambled site executions in this process so far: the amplifier compares it before and
/// after a campaign to tell whether any site was reached. Never smaller than an earlier
/// answer: the list only grows and each count only rises.
pub(crate) fn reached_total() -> u64 {
    REACHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .map(|s| s.reached())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_counts_every_execution_of_every_site_once_listed() {
        let site = |label| {
            &*Box::leak(Box::new(CallSite::with_kind(
                label,
                file!(),
                line!(),
                1,
                None,
                SiteKind::Reduction,
            )))
        };
        let (a, b) = (site("call_site::total#0"), site("call_site::total#1"));
        let before = reached_total();
        for _ in 0..3 {
            a.mark_reached();
        }
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| (0..1000).for_each(|_| b.mark_reached()));
            }
        });
        assert_eq!((a.reached(), b.reached()), (3, 4000));
        // other tests may reach sites meanwhile: at least these, never fewer than before
        assert!(reached_total() >= before + 4003);
        let listed = REACHED
            .lock()
            .expect("list")
            .iter()
            .filter(|s| s.label.starts_with("call_site::total"))
            .count();
        assert_eq!(listed, 2, "each site is listed once");
    }
}
