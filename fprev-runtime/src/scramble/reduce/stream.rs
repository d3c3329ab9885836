//! The random stream a reduction draws from while it combines its terms.
//!
//! In the default mode a site draws from the same stream at every call, so everything it
//! draws is a function of that stream's recipe ([`SiteStream`]) and the number of terms.
//! A running reduction creates its stream only at its first draw: most shapes draw
//! nothing after the shape itself, and short reductions in the others often draw nothing
//! either (a random tree over at most 16 terms, a permutation of one term). Where it does
//! draw, each thread keeps the last streams it created, as they stand after the shape's
//! draws, and the orders of permuted reductions and the splits of random trees: a
//! reduction called millions of times with the same number of terms pays for its draws
//! once.

use std::cell::RefCell;

use super::super::rng::{self, ScrambleRng};
use super::super::Shuffle;
use super::CombineShape;

/// The per-site stream `rng::stream(seed, key, 0)`, taken up past the draws of
/// `CombineShape::draw(mix, shuffle, ..)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::scramble) struct SiteStream {
    pub(in crate::scramble) seed: u64,
    pub(in crate::scramble) key: u64,
    pub(in crate::scramble) mix: bool,
    pub(in crate::scramble) shuffle: Shuffle,
}

/// Streams kept per thread, and permutations: a few sites' worth, each a few hundred bytes.
const KEPT: usize = 8;

/// Permuted reductions of at most this many terms keep their order.
pub(super) const KEPT_ORDER: usize = 256;

/// Longer orders kept per thread, each at most 128 KiB, apart from the short ones so that
/// they never push out a short order that a series evaluated millions of times uses.
const KEPT_LONG: usize = 2;

/// Permuted reductions of more than [`KEPT_ORDER`] terms keep their order up to this many
/// (every reduction a permuted combiner takes whole: fewer terms than
/// [`PERMUTE_CAP`](super::PERMUTE_CAP), so the indices fit in `u16`) once the same site
/// and length come twice in a row. That is the elements of a keyed reduction, which share
/// their site's stream, hence its order for their length: `g[j] -= d[i] * x[i][j]` over
/// 52,181 rows and 95 columns shuffles once per call instead of 95 times. A site whose
/// lengths vary shuffles its terms in place, as before, never paying for an order it
/// would not use again.
const LONG_ORDER: usize = super::PERMUTE_CAP - 1;

/// What a thread keeps, each list in order of last use.
struct KeptStreams {
    streams: Vec<(SiteStream, ScrambleRng)>,
    /// Orders of permuted reductions (`p[k]`: the term combined `k`-th).
    orders: Plans<u16>,
    /// Random trees, as [`tree_program`](super::tree::tree_program) writes them.
    trees: Plans<u8>,
}

/// A plan and the number of terms it is for.
type Plan<T> = (usize, Box<[T]>);

/// What a site drew for reductions of one length: short ones kept at once, long ones
/// once the same site and length come twice in a row.
struct Plans<T> {
    short: Vec<(SiteStream, Plan<T>)>,
    long: Vec<(SiteStream, Plan<T>)>,
    /// The site and length of the last long reduction whose plan was not kept.
    long_missed: Option<(SiteStream, usize)>,
}

impl<T> Plans<T> {
    const fn new() -> Self {
        Plans {
            short: Vec::new(),
            long: Vec::new(),
            long_missed: None,
        }
    }
}

thread_local! {
    static KEPT_HERE: RefCell<KeptStreams> = const {
        RefCell::new(KeptStreams {
            streams: Vec::new(),
            orders: Plans::new(),
            trees: Plans::new(),
        })
    };
}

/// Moves the entry of `list` that matches `is` to the front, or puts `make()` there
/// (dropping the least recently used past [`KEPT`]); `None` when the thread's lists are
/// gone or busy.
fn kept<T, R>(
    list: impl FnOnce(&mut KeptStreams) -> &mut Vec<(SiteStream, T)>,
    is: impl Fn(&(SiteStream, T)) -> bool,
    make: impl FnOnce() -> (SiteStream, T),
    read: impl FnOnce(&T) -> R,
) -> Option<R> {
    kept_up_to(KEPT, list, is, make, read)
}

/// [`kept`] with room for `room` entries.
fn kept_up_to<T, R>(
    room: usize,
    list: impl FnOnce(&mut KeptStreams) -> &mut Vec<(SiteStream, T)>,
    is: impl Fn(&(SiteStream, T)) -> bool,
    make: impl FnOnce() -> (SiteStream, T),
    read: impl FnOnce(&T) -> R,
) -> Option<R> {
    KEPT_HERE
        .try_with(|k| {
            let mut k = k.try_borrow_mut().ok()?;
            let list = list(&mut k);
            match list.iter().position(is) {
                Some(0) => {}
                Some(i) => list[..=i].rotate_right(1),
                None => {
                    list.truncate(room - 1);
                    list.insert(0, make());
                }
            }
            Some(read(&list[0].1))
        })
        .ok()
        .flatten()
}

impl SiteStream {
    fn create(self) -> ScrambleRng {
        let mut rng = rng::stream(self.seed, self.key, 0);
        CombineShape::draw(self.mix, self.shuffle, &mut rng);
        rng
    }
}

/// Where a combiner's draws come from.
pub(in crate::scramble) struct Stream {
    rng: Option<ScrambleRng>,
    /// How to create `rng` when it is `None`.
    site: Option<SiteStream>,
}

impl Stream {
    /// Draws from `rng`.
    pub(in crate::scramble) fn of(rng: ScrambleRng) -> Stream {
        Stream {
            rng: Some(rng),
            site: None,
        }
    }

    /// Draws nothing (the state of a finished reduction).
    pub(in crate::scramble) const fn none() -> Stream {
        Stream {
            rng: None,
            site: None,
        }
    }

    /// From now on, draws from the stream of `site` (created when first needed).
    /// Assigns in place: a whole `Stream` is a few hundred bytes to copy.
    pub(in crate::scramble) fn restart(&mut self, site: Option<SiteStream>) {
        self.rng = None;
        self.site = site;
    }

    /// Draws from `rng` from now on.
    pub(in crate::scramble) fn set(&mut self, rng: ScrambleRng) {
        self.rng = Some(rng);
        self.site = None;
    }

    /// The generator, after the draws made so far.
    pub(in crate::scramble) fn into_rng(self) -> Option<ScrambleRng> {
        self.rng
    }

    pub(super) fn rng(&mut self) -> &mut ScrambleRng {
        let site = self.site;
        self.rng.get_or_insert_with(|| {
            let Some(site) = site else {
                unreachable!("fprev: a reduction that draws has a stream")
            };
            kept(
                |k| &mut k.streams,
                |(s, _)| *s == site,
                || (site, site.create()),
                ScrambleRng::clone,
            )
            .unwrap_or_else(|| site.create())
        })
    }

    /// `shuffle`'s order of the first `n` terms of a site's reduction (`p[k]`: the index
    /// of the term combined `k`-th), passed to `f`; `None` unless this stream is a site's
    /// and has not drawn yet, `n` is at most [`KEPT_ORDER`] (or at most [`LONG_ORDER`],
    /// met twice in a row), and this thread still keeps its lists.
    pub(super) fn kept_order<R>(
        &mut self,
        shuffle: Shuffle,
        n: usize,
        f: impl FnOnce(&[u16]) -> R,
    ) -> Option<R> {
        let site = self
            .site
            .filter(|_| self.rng.is_none() && n <= LONG_ORDER)?;
        let make = || {
            let mut p: Vec<u16> = (0..n as u16).collect();
            rng::shuffle(shuffle, &mut p, &mut site.create());
            p
        };
        kept_plan(|k| &mut k.orders, site, n, make, f)
    }

    /// The random tree over the first `n` terms of a site's reduction, as `program(n,
    /// ..)` writes it from the site's draws, passed to `f`; `None` when
    /// [`kept_order`](Self::kept_order) would be, with [`LONG_TREE`] for the longest
    /// reduction kept.
    pub(super) fn kept_tree<R>(
        &mut self,
        n: usize,
        program: impl FnOnce(usize, &mut ScrambleRng) -> Vec<u8>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let site = self.site.filter(|_| self.rng.is_none() && n <= LONG_TREE)?;
        kept_plan(
            |k| &mut k.trees,
            site,
            n,
            || program(n, &mut site.create()),
            f,
        )
    }
}

/// Reductions of at most this many terms keep their random tree (a byte per leaf and per
/// addition of leaves, about one per 5 terms, so at most 200 KiB): every reduction a
/// random-tree combiner takes whole.
const LONG_TREE: usize = super::BUFFER_CAP - 1;

/// The plan `make()` gives for `site` and `n` terms, kept in the `list` of this thread:
/// at once when `n` is at most [`KEPT_ORDER`], else once the same site and length come
/// twice in a row (a site whose lengths vary draws afresh, never paying for a plan it
/// would not use again). `None` when not kept, or when this thread's lists are gone.
fn kept_plan<T, R>(
    list: fn(&mut KeptStreams) -> &mut Plans<T>,
    site: SiteStream,
    n: usize,
    make: impl FnOnce() -> Vec<T>,
    f: impl FnOnce(&[T]) -> R,
) -> Option<R> {
    let is = |(s, (len, _)): &(SiteStream, Plan<T>)| *s == site && *len == n;
    let make = || (site, (n, make().into_boxed_slice()));
    if n <= KEPT_ORDER {
        return kept(|k| &mut list(k).short, is, make, |(_, p)| f(p));
    }
    let again = KEPT_HERE
        .try_with(|k| {
            let mut k = k.try_borrow_mut().ok()?;
            let plans = list(&mut k);
            if plans.long.iter().any(is) || plans.long_missed == Some((site, n)) {
                return Some(true);
            }
            plans.long_missed = Some((site, n));
            Some(false)
        })
        .ok()
        .flatten()?;
    if !again {
        return None;
    }
    kept_up_to(KEPT_LONG, |k| &mut list(k).long, is, make, |(_, p)| f(p))
}
