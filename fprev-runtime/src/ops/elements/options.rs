//! The options of an element reveal, and the engine they configure for each tree.

use crate::ops::ReductionShape;
use crate::reveal::{Algorithm, Pivot, Reveal};

/// How the lanes of one call are used while revealing.
///
/// ```
/// use fprev::ops::{ElementCoverage, ElementReveal};
/// let r = ElementReveal::new().coverage(ElementCoverage::Exhaustive);
/// # let _ = r;
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ElementCoverage {
    /// One probe per lane per call, the tree verified as [`Reveal`] verifies it, then
    /// every element's answers and two seeded random inputs per lane are checked against
    /// the tree (the default: a gemm of size 512 in about 15 calls). Elements that
    /// disagree are revealed again exhaustively.
    #[default]
    Batched,
    /// Every lane answers the same probe, so every element answers the whole adaptive
    /// probe sequence: one call per probe, and elements are grouped by their answers.
    Exhaustive,
}

/// Reveal the order of every output element of a [`Reduction`](crate::ops::Reduction).
///
/// Defaults: [`ElementCoverage::Batched`], FPRev (pivots: see [`pivot`](Self::pivot)), seed 0,
/// trees verified as [`Reveal`] verifies them, two random check calls, at most 16
/// distinct orders.
///
/// ```
/// use fprev::ops::{self, ElementReveal};
/// let g = ops::gemm(16, 32, 16, |a: &[f32], b: &[f32], c: &mut [f32]| {
///     for i in 0..16 { for j in 0..16 {
///         c[i * 16 + j] = (0..32).fold(0.0, |s, l| s + a[i * 32 + l] * b[l * 16 + j]);
///     } }
/// });
/// let o = ElementReveal::new().seed(3).run(g)?;
/// assert!(o.is_uniform());
/// assert_eq!(o.groups[0].tree, fprev::SumTree::sequential(32));
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ElementReveal {
    pub(super) coverage: ElementCoverage,
    /// The settings an element's revelation shares with [`Reveal`] (algorithm, pivot,
    /// seed, flat results, verification, memory budget), held as the `Reveal` they
    /// configure, so each is set and defaulted in one place; its size is set per tree.
    pub(super) reveal: Reveal,
    /// Whether [`pivot`](Self::pivot) was called: if not, the pivot follows the lanes
    /// of a call (see there).
    pub(super) pivot_chosen: bool,
    pub(super) checks: usize,
    pub(super) max_groups: usize,
    pub(super) on_call: Option<OnCall>,
}

/// A progress callback, told the number of calls made so far.
#[derive(Clone)]
pub(super) struct OnCall(pub(super) std::sync::Arc<dyn Fn(u64) + Send + Sync>);

impl std::fmt::Debug for OnCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnCall(..)")
    }
}

impl Default for ElementReveal {
    fn default() -> Self {
        Self::new()
    }
}

impl ElementReveal {
    /// The defaults listed above.
    pub fn new() -> Self {
        ElementReveal {
            coverage: ElementCoverage::Batched,
            // FPRev, seed 0, verification on, flat results refused, the default budget
            reveal: Reveal::new(0),
            pivot_chosen: false,
            checks: 2,
            max_groups: 16,
            on_call: None,
        }
    }

    /// Call `f` after every call of the operation with the number of calls so far: for
    /// progress reports (default: none).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use fprev::ops::{self, ElementReveal};
    /// let seen = Arc::new(AtomicU64::new(0));
    /// let s = Arc::clone(&seen);
    /// let sum = ops::reduction(1, 16, 1, |x: &[f32], out: &mut [f32]| {
    ///     out[0] = x.iter().sum()
    /// });
    /// let o = ElementReveal::new()
    ///     .on_call(move |calls| s.store(calls, Ordering::Relaxed))
    ///     .run(sum)?;
    /// assert_eq!(seen.load(Ordering::Relaxed), o.calls);
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn on_call(mut self, f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.on_call = Some(OnCall(std::sync::Arc::new(f)));
        self
    }

    /// How lanes are used (default [`ElementCoverage::Batched`]).
    pub fn coverage(mut self, c: ElementCoverage) -> Self {
        self.coverage = c;
        self
    }

    /// Tree-construction algorithm (default FPRev).
    pub fn algorithm(mut self, a: Algorithm) -> Self {
        self.reveal = self.reveal.algorithm(a);
        self
    }

    /// Pivot choice (default [`Pivot::Smallest`] when a call has several lanes, so
    /// forward-order libraries take one call per tree level; [`Pivot::Random`] for one
    /// lane, where probes are calls and random pivots need about `2n` even for
    /// reverse-order sums).
    pub fn pivot(mut self, p: Pivot) -> Self {
        self.reveal = self.reveal.pivot(p);
        self.pivot_chosen = true;
        self
    }

    /// Seed of pivots and check inputs (default 0).
    pub fn seed(mut self, s: u64) -> Self {
        self.reveal = self.reveal.seed(s);
        self
    }

    /// Accept order-independent (one fused node) results (default off).
    pub fn accept_flat(mut self, on: bool) -> Self {
        self.reveal = self.reveal.accept_flat(on);
        self
    }

    /// Verify every revealed tree as [`Reveal::verify`] does (default on): sampled probes
    /// asked again, then the tree replayed on the same seeded random inputs as `Reveal`
    /// replays, which every element of a call answers. The per-element checks
    /// ([`checks`](Self::checks)) run either way; alone they are fewer inputs than a
    /// `Reveal` checks, and an operation that is not a plain summation (one that rounds
    /// its results to whole numbers) can pass them.
    ///
    /// ```
    /// use fprev::ops::{self, ElementReveal};
    /// let truncated = ops::gemm(4, 8, 4, |a: &[f32], b: &[f32], c: &mut [f32]| {
    ///     for i in 0..4 {
    ///         for j in 0..4 {
    ///             c[i * 4 + j] = (0..8).fold(0.0f32, |s, l| s + a[i * 8 + l] * b[l * 4 + j]).trunc();
    ///         }
    ///     }
    /// });
    /// let e = ElementReveal::new().run(truncated).unwrap_err();
    /// assert!(matches!(e, fprev::RevealError::NotPlainSummation { .. }), "{e}");
    /// ```
    pub fn verify(mut self, on: bool) -> Self {
        self.reveal = self.reveal.verify(on);
        self
    }

    /// Calls with seeded random inputs that every element must reproduce (default 2).
    pub fn checks(mut self, calls: usize) -> Self {
        self.checks = calls;
        self
    }

    /// Stop after this many distinct orders (default 16); the rest is `unresolved`.
    pub fn max_groups(mut self, groups: usize) -> Self {
        self.max_groups = groups.max(1);
        self
    }

    /// The memory budget of each element's revelation (default
    /// [`DEFAULT_MAX_MEMORY`](crate::reveal::DEFAULT_MAX_MEMORY)); see
    /// [`Reveal::max_memory`].
    ///
    /// ```
    /// let r = fprev::ops::ElementReveal::new().max_memory(1 << 30);
    /// # let _ = r;
    /// ```
    pub fn max_memory(mut self, bytes: u64) -> Self {
        self.reveal = self.reveal.max_memory(bytes);
        self
    }

    /// The engine for one tree, `per_call` probes answered by one call. It verifies its
    /// tree as [`Reveal`] does unless [`verify`](Self::verify) is off: the checks of
    /// every element below draw fewer inputs, so they alone would accept what a
    /// `Reveal` of one element refuses. `verify` turns it on regardless: with operands
    /// spread, or a fused node that plain replays miss, a tree with truncating fused
    /// nodes needs the block-FMA model the engine fits while verifying.
    pub(super) fn engine(&self, shape: ReductionShape, per_call: usize, verify: bool) -> Reveal {
        let engine = self.reveal.with_size(shape.k);
        let engine = if self.pivot_chosen {
            engine
        } else if per_call > 1 {
            engine.pivot(Pivot::Smallest)
        } else {
            engine.pivot(Pivot::Random)
        };
        let verify = verify || engine.verifies();
        engine.verify(verify)
    }
}
