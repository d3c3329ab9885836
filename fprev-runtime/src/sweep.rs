//! Orders across shapes: reveal one target at many sizes (batch rows, threads, chunk
//! lengths) and say where its summation order changes.
//!
//! A kernel may sum a row of a matrix product in order for small batches and in blocks
//! from some batch size on, so a request's result changes bit-wise with the batch it rides
//! in (the "batch invariance" problem). A sweep reveals the sum of `n` values that a
//! target computes at each size, and reports the sizes where the tree differs from the
//! previous size's ([`Sweep::breakpoints`]) and the runs of sizes that share one tree
//! ([`Sweep::ranges`]).
//!
//! Most sizes sum like the size before, so each size first tries the previous size's
//! tree: the two replays that filter every guess, then the proof with probe sets that
//! proves known library orders (one probe per inner node, several probes per call: about
//! `n/8` calls for a blocked or lane-parallel order, `n - 1` for a chain). Only where that
//! proof fails does the search run. A tree is never carried over unproved: a proved tree is
//! the target's tree at that size by the same induction as a proved library order (see
//! [`Reveal::known_orders`]), and the verification replays run at every size.
//!
//! ```
//! use fprev::target::FnTarget;
//! // Sequential for up to 3 rows, two blocks of n/2 from 4 rows on.
//! let kernel = |rows: usize| {
//!     FnTarget(move |x: &[f32]| {
//!         if rows < 4 {
//!             x.iter().sum::<f32>()
//!         } else {
//!             let (a, b) = x.split_at(x.len() / 2);
//!             a.iter().sum::<f32>() + b.iter().sum::<f32>()
//!         }
//!     })
//! };
//! let sweep = fprev::sweep(1..=8, 256, kernel)?;
//! assert_eq!(sweep.breakpoints(), vec![4]);
//! assert_eq!(
//!     sweep.describe("M"),
//!     "M = 1..3: 256 in order; M = 4..8: 2 blocks of 128, combined in order; \
//!      each block 128 in order"
//! );
//! # Ok::<(), fprev::SweepError>(())
//! ```

use crate::black_box::{Target, TargetError};
use crate::float::sum_type::SumType;
use crate::float::ProbeFloat;
use crate::reveal::{Reveal, RevealError};
use crate::tree::SumTree;

/// What [`RevealReport::recognized`](crate::RevealReport::recognized) says at a size whose
/// tree was proved to be the previous size's.
pub const PREVIOUS_SIZE: &str = "previous size";

/// Reveal the sum of `n` values that `make(size)` computes, for every size of `sizes`
/// (strictly increasing), proving each size's tree against the previous size's before
/// searching. Defaults of [`Reveal`]; [`Reveal::sweep`] takes a configured one.
///
/// ```
/// use fprev::target::FnTarget;
/// // An invariant target: one tree, no breakpoint.
/// let sweep = fprev::sweep([1, 2, 4, 8], 64, |_| FnTarget(|x: &[f64]| x.iter().sum::<f64>()))?;
/// assert!(sweep.breakpoints().is_empty());
/// assert_eq!(sweep.describe("threads"), "threads = 1..8: 64 in order");
/// # Ok::<(), fprev::SweepError>(())
/// ```
pub fn sweep<T, X, F, I>(sizes: I, n: usize, make: F) -> Result<Sweep, SweepError>
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
    I: IntoIterator<Item = usize>,
{
    Reveal::new(n).sweep(sizes, make)
}

/// Reveal the sum that `make(n)` computes over `n` values, for every length `n` of
/// `lengths` (strictly increasing): where a kernel's order changes with the length it is
/// given (8 lanes below 4096 values, 16 from there on; blocks of a cache's size). A
/// length keeps the previous length's order when its tree, cut to the previous length
/// ([`SumTree::prefix`]), is that length's tree: the order only grew. Each length is
/// revealed on its own (a tree of one length cannot be proved at another), with the
/// structure-guided guess from 4096 values on ([`Reveal::structure_guided`]).
///
/// ```
/// use fprev::target::FnTarget;
/// // 4 lanes below 64 values, 8 lanes from 64 on, lanes added in order
/// let kernel = |n: usize| {
///     let lanes = if n < 64 { 4 } else { 8 };
///     FnTarget(move |x: &[f32]| {
///         let mut acc = vec![0f32; lanes];
///         for (i, v) in x.iter().enumerate() {
///             acc[i % lanes] += v;
///         }
///         acc.iter().fold(0f32, |s, a| s + a)
///     })
/// };
/// let sweep = fprev::sweep_lengths([16, 32, 48, 64, 96, 128], kernel)?;
/// assert_eq!(sweep.breakpoints(), vec![64]);
/// assert_eq!(sweep.ranges().len(), 2);
/// assert_eq!(sweep.ranges()[1].tree.leaf_count(), 128); // a range's longest tree
/// # Ok::<(), fprev::SweepError>(())
/// ```
pub fn sweep_lengths<T, X, F, I>(lengths: I, mut make: F) -> Result<Sweep, SweepError>
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
    I: IntoIterator<Item = usize>,
{
    Reveal::new(1).try_sweep_lengths(lengths, |n| Ok(make(n)))
}

/// Refuses a size that does not follow the last swept one: ranges and breakpoints follow
/// size order.
fn increasing(points: &[SweepPoint], size: usize) -> Result<(), SweepError> {
    match points.last() {
        Some(last) if size <= last.size => Err(SweepError::NotIncreasing {
            previous: last.size,
            size,
        }),
        _ => Ok(()),
    }
}

impl Reveal {
    /// This revelation (its `n`, seed, algorithm, hints, ...) at every size of `sizes`,
    /// with the target `make(size)`: see [`sweep`]. The previous size's tree is proved
    /// first with [`Algorithm::FPRev`](crate::Algorithm::FPRev) (the default); the other
    /// algorithms search every size.
    ///
    /// ```
    /// use fprev::target::FnTarget;
    /// let sweep = fprev::Reveal::new(32)
    ///     .seed(3)
    ///     .sweep(1..=4, |_| FnTarget(fprev::orders::balanced::<f32>))?;
    /// assert_eq!(sweep.tree(4), Some(&fprev::SumTree::pairwise(32)));
    /// # Ok::<(), fprev::SweepError>(())
    /// ```
    pub fn sweep<T, X, F, I>(&self, sizes: I, mut make: F) -> Result<Sweep, SweepError>
    where
        T: ProbeFloat,
        X: Target<T>,
        F: FnMut(usize) -> X,
        I: IntoIterator<Item = usize>,
    {
        self.try_sweep(sizes, |size| Ok(make(size)))
    }

    /// [`Reveal::sweep`] for targets whose construction can fail (a program that does not
    /// start, a callback that raises): the failure is reported at its size.
    ///
    /// ```
    /// use fprev::target::{FnTarget, TargetError};
    /// let e = fprev::Reveal::new(16)
    ///     .try_sweep(1..=3, |size| match size {
    ///         3 => Err(TargetError::new("no kernel for 3 rows")),
    ///         _ => Ok(FnTarget(|x: &[f32]| x.iter().sum::<f32>())),
    ///     })
    ///     .unwrap_err();
    /// assert_eq!(e.size(), Some(3));
    /// assert!(e.to_string().contains("at size 3"), "{e}");
    /// ```
    pub fn try_sweep<T, X, F, I>(&self, sizes: I, mut make: F) -> Result<Sweep, SweepError>
    where
        T: ProbeFloat,
        X: Target<T>,
        F: FnMut(usize) -> Result<X, TargetError>,
        I: IntoIterator<Item = usize>,
    {
        let n = self.size();
        Reveal::check_size(n).map_err(SweepError::Size)?;
        let mut points: Vec<SweepPoint> = Vec::new();
        for size in sizes {
            increasing(&points, size)?;
            let at = |error| SweepError::At { size, error };
            let target = make(size).map_err(|e| {
                at(RevealError::Target {
                    probe: e.probe,
                    message: e.message,
                })
            })?;
            let reveal = match points.last() {
                Some(last) => self.with_first_hint(PREVIOUS_SIZE, last.tree.clone()),
                None => self.clone(),
            };
            let report = reveal.run_target(target).map_err(at)?;
            points.push(SweepPoint {
                size,
                from_previous: report.recognized.as_deref() == Some(PREVIOUS_SIZE),
                tree: report.tree,
                probes: report.probes,
                replays: report.replays,
                recognized: report.recognized,
            });
        }
        if points.is_empty() {
            return Err(SweepError::NoSizes);
        }
        Ok(Sweep {
            n,
            points,
            over_lengths: false,
            sum_type: SumType::of::<T>(),
        })
    }
}

impl Reveal {
    /// This revelation's settings (seed, algorithm, known orders, memory budget) at every
    /// length of `lengths`, with the target `make(n)` summing `n` values, whose
    /// construction can fail (a program that does not start): see [`sweep_lengths`].
    /// This revelation's own `n` and hints are not used.
    ///
    /// ```
    /// use fprev::target::{FnTarget, TargetError};
    /// let sweep = fprev::Reveal::new(1)
    ///     .seed(7)
    ///     .try_sweep_lengths([8, 16, 32], |_| Ok::<_, TargetError>(FnTarget(fprev::orders::sequential::<f32>)))?;
    /// assert!(sweep.breakpoints().is_empty());
    /// let e = fprev::Reveal::new(1)
    ///     .try_sweep_lengths([8, 16], |n| match n {
    ///         16 => Err(TargetError::new("no kernel for 16 values")),
    ///         _ => Ok(FnTarget(fprev::orders::sequential::<f32>)),
    ///     })
    ///     .unwrap_err();
    /// assert_eq!(e.size(), Some(16));
    /// # Ok::<(), fprev::SweepError>(())
    /// ```
    pub fn try_sweep_lengths<T, X, F, I>(
        &self,
        lengths: I,
        mut make: F,
    ) -> Result<Sweep, SweepError>
    where
        T: ProbeFloat,
        X: Target<T>,
        F: FnMut(usize) -> Result<X, TargetError>,
        I: IntoIterator<Item = usize>,
    {
        let mut points: Vec<SweepPoint> = Vec::new();
        for n in lengths {
            increasing(&points, n)?;
            let at = |error| SweepError::At { size: n, error };
            Reveal::check_size(n).map_err(at)?;
            let target = make(n).map_err(|e| {
                at(RevealError::Target {
                    probe: e.probe,
                    message: e.message,
                })
            })?;
            let report = self.with_size(n).run_target(target).map_err(at)?;
            points.push(SweepPoint {
                size: n,
                from_previous: false,
                tree: report.tree,
                probes: report.probes,
                replays: report.replays,
                recognized: report.recognized,
            });
        }
        let n = points.last().ok_or(SweepError::NoSizes)?.size;
        Ok(Sweep {
            n,
            points,
            over_lengths: true,
            sum_type: SumType::of::<T>(),
        })
    }
}

/// The trees a target sums in across sizes, with what each cost.
///
/// ```
/// use fprev::target::FnTarget;
/// let sweep = fprev::sweep(1..=3, 16, |_| FnTarget(|x: &[f32]| x.iter().sum::<f32>()))?;
/// for point in sweep.points() {
///     println!("{}: {} ({} probes)", point.size, point.tree.describe(), point.probes);
/// }
/// assert_eq!(sweep.ranges().len(), 1);
/// # Ok::<(), fprev::SweepError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Sweep {
    n: usize,
    points: Vec<SweepPoint>,
    /// Each size is the number of values summed ([`sweep_lengths`]).
    over_lengths: bool,
    /// The type the target's sums were revealed in: an order model's type.
    sum_type: SumType,
}

/// One size of a [`Sweep`]: its tree and how it was found.
///
/// ```
/// use fprev::target::FnTarget;
/// let sweep = fprev::sweep([2, 3], 64, |_| FnTarget(fprev::orders::sequential::<f32>))?;
/// let second = &sweep.points()[1];
/// assert!(second.from_previous); // proved, not searched
/// assert_eq!(second.recognized.as_deref(), Some(fprev::sweep::PREVIOUS_SIZE));
/// # Ok::<(), fprev::SweepError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct SweepPoint {
    /// The size (`make`'s argument).
    pub size: usize,
    /// The tree the target sums its `n` values in at this size.
    pub tree: SumTree,
    /// Whether the previous size's tree was proved here (no search ran).
    pub from_previous: bool,
    /// The guess that was proved ([`PREVIOUS_SIZE`], a library order's name, a hint's),
    /// or `None` when the tree was searched.
    pub recognized: Option<String>,
    /// Probes answered at this size (for a plain function, calls made), verification
    /// included.
    pub probes: u64,
    /// Plain calls on seeded random inputs at this size (the replay checks).
    pub replays: u64,
}

/// A run of consecutive swept sizes that share one tree.
///
/// ```
/// use fprev::target::FnTarget;
/// let sweep = fprev::sweep(1..=4, 8, |_| FnTarget(|x: &[f32]| x.iter().sum::<f32>()))?;
/// let range = &sweep.ranges()[0];
/// assert_eq!((range.first, range.last, range.sizes), (1, 4, 4));
/// assert_eq!(range.to_string(), "1..4: 8 in order");
/// # Ok::<(), fprev::SweepError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepRange {
    /// The first size of the run.
    pub first: usize,
    /// The last size of the run.
    pub last: usize,
    /// How many swept sizes the run holds (sizes need not be consecutive integers).
    pub sizes: usize,
    /// The tree every size of the run sums in.
    pub tree: SumTree,
}

impl std::fmt::Display for SweepRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.first == self.last {
            write!(f, "{}: {}", self.first, self.tree.describe())
        } else {
            write!(f, "{}..{}: {}", self.first, self.last, self.tree.describe())
        }
    }
}

impl Sweep {
    /// The number of values summed at every size (for a sweep over lengths, the
    /// longest).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether `next` sums in `previous`'s order: the same tree, or over lengths, a tree
    /// whose prefix of `previous`'s length is `previous`'s tree.
    fn keeps_order(&self, previous: &SumTree, next: &SumTree) -> bool {
        if self.over_lengths {
            next.prefix(previous.leaf_count()) == *previous
        } else {
            previous == next
        }
    }

    /// Whether each size is the number of values summed ([`sweep_lengths`]), not a
    /// parameter at a fixed `n` ([`sweep`]).
    pub fn over_lengths(&self) -> bool {
        self.over_lengths
    }

    /// The type an order model of this sweep adds in ([`SumType::of`] the revealed type).
    pub fn sum_type(&self) -> SumType {
        self.sum_type
    }

    /// Every swept size, in order, with its tree and cost.
    pub fn points(&self) -> &[SweepPoint] {
        &self.points
    }

    /// The tree at `size`, or `None` when `size` was not swept.
    pub fn tree(&self, size: usize) -> Option<&SumTree> {
        self.points
            .binary_search_by_key(&size, |p| p.size)
            .ok()
            .map(|i| &self.points[i].tree)
    }

    /// The sizes whose tree differs from the previous swept size's: where a result
    /// changes bit-wise when only the size changes. Empty for an invariant target.
    pub fn breakpoints(&self) -> Vec<usize> {
        self.points
            .windows(2)
            .filter(|w| !self.keeps_order(&w[0].tree, &w[1].tree))
            .map(|w| w[1].size)
            .collect()
    }

    /// The runs of consecutive sizes that share one tree, in size order (over lengths:
    /// one order that only grows, its tree the run's longest).
    pub fn ranges(&self) -> Vec<SweepRange> {
        let mut ranges: Vec<SweepRange> = Vec::new();
        let mut previous: Option<&SumTree> = None;
        for p in &self.points {
            let keeps = previous.is_some_and(|t| self.keeps_order(t, &p.tree));
            previous = Some(&p.tree);
            match ranges.last_mut() {
                Some(r) if keeps => {
                    r.last = p.size;
                    r.sizes += 1;
                    if self.over_lengths {
                        r.tree = p.tree.clone();
                    }
                }
                _ => ranges.push(SweepRange {
                    first: p.size,
                    last: p.size,
                    sizes: 1,
                    tree: p.tree.clone(),
                }),
            }
        }
        ranges
    }

    /// The ranges in words, each size named `label`:
    /// `"M = 1..3: 256 in order; M = 4..8: 2 blocks of 128, combined in order; each
    /// block 128 in order"`.
    pub fn describe(&self, label: &str) -> String {
        self.ranges()
            .iter()
            .map(|r| format!("{label} = {r}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// A picture of the ranges, to see at a glance where the order changes: the swept
    /// sizes as one strip of cells coloured by their tree, breakpoints in red, the sizes
    /// that were searched (not proved) marked, and one band per range with its tree in
    /// words ([`Picture::bands`](crate::picture::Picture::bands)), each size named
    /// `label`. [`Sweep::picture`] takes a title.
    ///
    /// ```
    /// use fprev::target::FnTarget;
    /// let sweep = fprev::sweep(1..=6, 64, |m| {
    ///     FnTarget(move |x: &[f32]| match m {
    ///         1..=3 => x.iter().sum::<f32>(),
    ///         _ => x[..32].iter().sum::<f32>() + x[32..].iter().sum::<f32>(),
    ///     })
    /// })?;
    /// let svg = sweep.svg("M");
    /// assert!(svg.contains("breakpoint at M = 4") && svg.contains(">M = 4..6 (3 values)</text>"));
    /// # Ok::<(), fprev::SweepError>(())
    /// ```
    pub fn svg(&self, label: &str) -> String {
        self.picture(label, &crate::picture::Picture::new())
    }

    /// [`Sweep::svg`] drawn with `picture`'s options (its title).
    ///
    /// ```
    /// use fprev::target::FnTarget;
    /// let sweep = fprev::sweep([1, 2], 16, |_| FnTarget(|x: &[f64]| x.iter().sum::<f64>()))?;
    /// let svg = sweep.picture("threads", &fprev::picture::Picture::new().title("my kernel"));
    /// assert!(svg.contains(">my kernel</text>") && svg.contains("no breakpoint"));
    /// # Ok::<(), fprev::SweepError>(())
    /// ```
    pub fn picture(&self, label: &str, picture: &crate::picture::Picture) -> String {
        let points: Vec<(usize, &SumTree, bool)> = self
            .points
            .iter()
            .map(|p| (p.size, &p.tree, !p.from_previous))
            .collect();
        picture.bands(label, &points)
    }

    /// Probes answered over the whole sweep (for plain functions, calls made).
    pub fn probes(&self) -> u64 {
        self.points.iter().map(|p| p.probes).sum()
    }

    /// Plain calls on seeded random inputs over the whole sweep (the replay checks).
    pub fn replays(&self) -> u64 {
        self.points.iter().map(|p| p.replays).sum()
    }
}

/// Why a sweep could not be completed.
///
/// ```
/// use fprev::target::FnTarget;
/// let e = fprev::sweep(Vec::new(), 8, |_| FnTarget(|x: &[f32]| x.iter().sum::<f32>()));
/// assert!(matches!(e, Err(fprev::SweepError::NoSizes)));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum SweepError {
    /// No size was given.
    NoSizes,
    /// The sizes are not strictly increasing (ranges and breakpoints follow size order).
    NotIncreasing {
        /// The size before.
        previous: usize,
        /// The size that is not above it.
        size: usize,
    },
    /// `n` itself cannot be revealed, whatever the size.
    Size(RevealError),
    /// The revelation failed at one size (the sizes before it were revealed).
    At {
        /// The size that failed.
        size: usize,
        /// Why.
        error: RevealError,
    },
}

impl SweepError {
    /// The size the sweep failed at, when the failure belongs to one.
    pub fn size(&self) -> Option<usize> {
        match self {
            SweepError::At { size, .. } => Some(*size),
            _ => None,
        }
    }

    /// The revelation's error, when one caused this.
    pub fn reveal_error(&self) -> Option<&RevealError> {
        match self {
            SweepError::Size(e) | SweepError::At { error: e, .. } => Some(e),
            _ => None,
        }
    }
}

impl std::fmt::Display for SweepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepError::NoSizes => f.write_str("a sweep needs at least one size"),
            SweepError::NotIncreasing { previous, size } => write!(
                f,
                "sweep sizes must be strictly increasing, but {size} follows {previous}"
            ),
            SweepError::Size(e) => write!(f, "{e}"),
            SweepError::At { size, error } => write!(f, "at size {size}: {error}"),
        }
    }
}

impl std::error::Error for SweepError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.reveal_error()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests;
