//! Revealing a summation tree from a black box, by the FPRev method.
//!
//! The target sees inputs with `+M` at one index `i`, `-M` at another `j` and units
//! elsewhere. Units added into a partial sum holding `±M` vanish; the masks cancel where
//! `i` and `j` meet; the answer counts the units that survived, so `l(i,j) = n - f(A)`
//! tells how many leaves the meeting node swallowed. Those counts determine the tree.
//!
//! ```
//! // NumPy-like 2-lane sum: even and odd positions in two accumulators, then combined.
//! let lanes = |x: &[f32]| {
//!     let (mut a, mut b) = (0.0f32, 0.0f32);
//!     for pair in x.chunks(2) {
//!         a += pair[0];
//!         b += pair.get(1).copied().unwrap_or(0.0);
//!     }
//!     a + b
//! };
//! let tree = fprev::reveal(6, lanes)?;
//! assert_eq!(tree.to_string(), "(((0+2)+4)+((1+3)+5))");
//! # Ok::<(), fprev::RevealError>(())
//! ```

mod arena;
mod basic;
mod diagnosis;
pub(crate) mod error;
pub(crate) mod fit;
mod guide;
mod known;
mod levels;
mod memory;
mod naive;
mod prober;
mod reach;
mod template;
mod verify;

pub use error::RevealError;
pub use fit::{BinaryNodes, ChainStructure, FittedFused, MeasuredCount};
pub use memory::{check_memory, DEFAULT_MAX_MEMORY};
pub use verify::Verification;

pub use naive::NAIVE_MAX_N;

use arena::Arena;
use diagnosis::{
    constant, explainable_by_fusion, flat_root, narrow_product_block, separable, sorts_then_sums,
    wider_register,
};
use prober::Prober;

use crate::black_box::{FnTarget, SyncFnTarget, Target};
use crate::float::{ProbeFloat, ProbeScale};
use crate::tree::SumTree;

/// Which tree-construction algorithm to run.
///
/// ```
/// use fprev::{Algorithm, Reveal};
/// let t = Reveal::new(5).algorithm(Algorithm::Basic).run(|x: &[f64]| x.iter().sum::<f64>())?;
/// assert_eq!(t, fprev::SumTree::sequential(5));
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// Enumerate every tree and keep the one whose replay matches (n <= 8; a baseline).
    Naive,
    /// Probe all `n(n-1)/2` pairs, then merge with union-find.
    Basic,
    /// Probe on demand from a pivot, level by level (the default).
    #[default]
    FPRev,
}

/// How FPRev picks the pivot of each subproblem.
///
/// ```
/// use fprev::reveal::Pivot;
/// let r = fprev::Reveal::new(64).pivot(Pivot::Smallest);
/// # let _ = r;
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pivot {
    /// A seeded random element: about `2n` probes even for reverse-order sums.
    #[default]
    Random,
    /// The smallest index, as in the papers: `n(n-1)/2` probes for a reverse-order sum.
    Smallest,
}

/// A configured revelation. Defaults: FPRev, random pivots from seed 0, verification on,
/// flat (order-independent) results reported as an error.
///
/// ```
/// use fprev::{Algorithm, Reveal};
/// let report = Reveal::new(8)
///     .algorithm(Algorithm::FPRev)
///     .seed(7)
///     .run_target(fprev::target::FnTarget(|x: &[f32]| x.iter().sum::<f32>()))?;
/// assert_eq!(report.tree, fprev::SumTree::sequential(8));
/// assert!(report.probes >= 7);
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Reveal {
    n: usize,
    algorithm: Algorithm,
    verify: bool,
    pivot: Pivot,
    seed: u64,
    accept_flat: bool,
    known_orders: bool,
    structure_guided: bool,
    hints: Vec<(String, SumTree)>,
    max_memory: u64,
}

/// A revealed tree with what it cost.
///
/// ```
/// let r = fprev::Reveal::new(4).run_target(fprev::target::FnTarget(|x: &[f64]| x.iter().sum::<f64>()))?;
/// println!("{} in {} probes", r.tree, r.probes);
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Debug)]
pub struct RevealReport {
    /// The summation tree.
    pub tree: SumTree,
    /// Probes answered (for a plain function, calls made), verification included.
    pub probes: u64,
    /// Batches the probes were asked in.
    pub batches: u64,
    /// Mask and unit used.
    pub scale: ProbeScale,
    /// Whether counts needed windows of zeros (n beyond the accumulator's precision).
    pub windowed: bool,
    /// Plain calls on seeded random inputs (the replay checks), besides the probes.
    pub replays: u64,
    /// The guessed order that was proved (`"numpy-pairwise"`, `"hint"`, ...), or `None`
    /// when the tree was found by search.
    pub recognized: Option<String>,
    /// What was verified before the tree was returned, and how.
    pub verification: Verification,
}

impl RevealReport {
    /// The arithmetic measured at the tree's fused nodes: the block-FMA model that
    /// verification fitted (alignment rule, fraction bits kept in alignment with the
    /// range still consistent, result width, binary nodes); `None` for a tree of plain
    /// additions. See [`FittedFused`]'s `Display` for it in words.
    ///
    /// ```
    /// let plain = fprev::target::FnTarget(|x: &[f32]| x.iter().sum::<f32>());
    /// let r = fprev::Reveal::new(8).run_target(plain)?;
    /// assert!(r.arithmetic().is_none());
    /// let model = fprev::fused::BlockFma::V100;
    /// let fused = fprev::target::FnTarget(|x: &[f32]| model.sum(x));
    /// let r = fprev::Reveal::new(8).run_target(fused)?;
    /// assert_eq!(r.arithmetic().map(|a| a.frac_out), Some(Some(23)));
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn arithmetic(&self) -> Option<FittedFused> {
        self.verification.fused
    }
}

impl Reveal {
    /// A revelation of a sum of `n` values.
    pub fn new(n: usize) -> Reveal {
        Reveal {
            n,
            algorithm: Algorithm::FPRev,
            verify: true,
            pivot: Pivot::Random,
            seed: 0,
            accept_flat: false,
            known_orders: true,
            structure_guided: true,
            hints: Vec::new(),
            max_memory: DEFAULT_MAX_MEMORY,
        }
    }

    /// The most memory, in bytes, the revelation may use (default
    /// [`DEFAULT_MAX_MEMORY`], 8 GiB). A size that needs more is refused with
    /// [`RevealError::OutOfMemory`] before anything of that size is allocated; buffers
    /// within the budget are still reserved fallibly, so an allocator that refuses them
    /// is the same typed error, never an abort.
    ///
    /// ```
    /// let e = fprev::Reveal::new(1 << 20)
    ///     .max_memory(1 << 20)
    ///     .run(|x: &[f32]| x.iter().sum::<f32>())
    ///     .unwrap_err();
    /// assert!(matches!(e, fprev::RevealError::OutOfMemory { .. }));
    /// ```
    pub fn max_memory(mut self, bytes: u64) -> Reveal {
        self.max_memory = bytes;
        self
    }

    /// The tree-construction algorithm (default [`Algorithm::FPRev`]).
    pub fn algorithm(mut self, algorithm: Algorithm) -> Reveal {
        self.algorithm = algorithm;
        self
    }

    /// Re-ask sampled probes and replay the tree against the target (default on).
    ///
    /// The replays sum seeded random inputs in the tree's order and compare bits with the
    /// target: at least 4096 values in all, over 2 to 8 inputs (8 for `n <= 512`, 2 from
    /// `n = 2048`). The known-order filter's two inputs, already answered by the target,
    /// are replayed first, so a recognized order with `n >= 2048` needs no further call.
    pub fn verify(mut self, on: bool) -> Reveal {
        self.verify = on;
        self
    }

    /// Pivot choice for FPRev (default [`Pivot::Random`]).
    pub fn pivot(mut self, pivot: Pivot) -> Reveal {
        self.pivot = pivot;
        self
    }

    /// Seed of the pivot choices and the verification inputs (default 0).
    pub fn seed(mut self, seed: u64) -> Reveal {
        self.seed = seed;
        self
    }

    /// Return a single fused node over all inputs as a tree instead of
    /// [`RevealError::OrderIndependent`] (default off).
    pub fn accept_flat(mut self, on: bool) -> Reveal {
        self.accept_flat = on;
        self
    }

    /// Before searching, try the orders of plain loops and well-known libraries
    /// (sequential, NumPy's pairwise, balanced pairwise, reverse): one replay filters
    /// them, and the one that matches is proved with one probe per inner node, about half
    /// the probes of a search (default on; FPRev only).
    ///
    /// ```
    /// let r = fprev::Reveal::new(4096)
    ///     .run_target(fprev::target::FnTarget(fprev::orders::numpy_pairwise::<f32>))?;
    /// assert_eq!(r.recognized.as_deref(), Some("numpy-pairwise"));
    /// assert!(r.probes < 4200);
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn known_orders(mut self, on: bool) -> Reveal {
        self.known_orders = on;
        self
    }

    /// Whether an order no known table matches is first guessed from its structure
    /// (default on, for `n` from 4096): the first 512 inputs are revealed on their own
    /// (the target with zeros elsewhere sums exactly their subtree), the way that tree
    /// splits into lanes, blocks and chains is carried over to all `n` inputs, each part
    /// that grows with `n` guessed the same way, and the whole guess is proved node by
    /// node with probe sets, as a known order is. A library whose order repeats one
    /// structure (PyTorch's vectorized cascade sums) is then revealed in a fraction of a
    /// search's calls; a guess that fails its proof costs at most `n` calls (half a search)
    /// and changes no result. [`known_orders(false)`](Self::known_orders) turns this off
    /// too. FPRev only.
    ///
    /// ```
    /// use fprev::target::FnTarget;
    /// // 8 lanes, each an accumulator absorbing every 8th value; lanes added in order
    /// let lanes = |x: &[f32]| {
    ///     let mut acc = [0f32; 8];
    ///     for (i, v) in x.iter().enumerate() {
    ///         acc[i % 8] += v;
    ///     }
    ///     acc.iter().fold(0f32, |s, a| s + a)
    /// };
    /// let guided = fprev::Reveal::new(8192).run_target(FnTarget(lanes))?;
    /// let searched = fprev::Reveal::new(8192)
    ///     .structure_guided(false)
    ///     .run_target(FnTarget(lanes))?;
    /// assert_eq!(guided.tree, searched.tree);
    /// assert_eq!(guided.recognized.as_deref(), Some("structure-guided"));
    /// assert!(guided.probes < searched.probes / 2);
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn structure_guided(mut self, on: bool) -> Reveal {
        self.structure_guided = on;
        self
    }

    /// Try `tree` first (an order pinned earlier, or one a library documents): if the
    /// target replays it and the proof (one probe per inner node) holds, no search runs.
    /// A wrong hint costs its probes and changes no result. Only binary hints can be
    /// proved this way; others are ignored. FPRev only.
    ///
    /// ```
    /// use fprev::SumTree;
    /// let pinned: SumTree = "(((0+1)+(2+3))+((4+5)+(6+7)))".parse()?;
    /// let r = fprev::Reveal::new(8)
    ///     .hint(pinned.clone())
    ///     .run_target(fprev::target::FnTarget(fprev::orders::balanced::<f64>))?;
    /// assert_eq!(r.tree, pinned);
    /// assert_eq!(r.recognized.as_deref(), Some("hint"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hint(mut self, tree: SumTree) -> Reveal {
        self.hints.push(("hint".to_string(), tree));
        self
    }

    /// The same revelation with `tree` tried before every other guess, under `name` (what
    /// [`RevealReport::recognized`] says when its proof holds): a sweep proves the
    /// previous size's tree this way before it searches.
    pub(crate) fn with_first_hint(&self, name: &str, tree: SumTree) -> Reveal {
        let mut r = self.clone();
        r.hints.insert(0, (name.to_string(), tree));
        r
    }

    /// These settings for `n` values; hints are dropped (a tree of one length is no
    /// hint at another).
    pub(crate) fn with_size(&self, n: usize) -> Reveal {
        let mut r = self.clone();
        r.n = n;
        r.hints.clear();
        r
    }

    /// Whether the revelation verifies its tree ([`verify`](Self::verify)).
    pub(crate) fn verifies(&self) -> bool {
        self.verify
    }

    /// The seed of the pivot choices and verification inputs ([`seed`](Self::seed)).
    pub(crate) fn seed_value(&self) -> u64 {
        self.seed
    }

    /// The number of values this revelation sums.
    pub(crate) fn size(&self) -> usize {
        self.n
    }

    /// Refuses `n` no revelation can handle, before any target exists: `0`, or more
    /// summands than fprev indexes.
    pub(crate) fn check_size(n: usize) -> Result<(), RevealError> {
        if n == 0 {
            return Err(RevealError::InvalidSize {
                n,
                reason: "there is nothing to sum".into(),
            });
        }
        if n >= u32::MAX as usize / 4 {
            return Err(RevealError::InvalidSize {
                n,
                reason: "more summands than fprev indexes".into(),
            });
        }
        Ok(())
    }

    /// Reveal a sequential `FnMut` target.
    pub fn run<T: ProbeFloat, F: FnMut(&[T]) -> T>(&self, f: F) -> Result<SumTree, RevealError> {
        Ok(self.run_target(FnTarget(f))?.tree)
    }

    /// Reveal a thread-safe target, answering each batch of probes in parallel on rayon.
    ///
    /// ```
    /// let t = fprev::Reveal::new(16).run_sync(|x: &[f32]| x.iter().sum::<f32>())?;
    /// assert_eq!(t, fprev::SumTree::sequential(16));
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn run_sync<T: ProbeFloat, F: Fn(&[T]) -> T + Sync>(
        &self,
        f: F,
    ) -> Result<SumTree, RevealError> {
        Ok(self.run_target(SyncFnTarget(f))?.tree)
    }

    /// Reveal any [`Target`], with the cost report.
    ///
    /// `n = 0` is refused; `n = 1` calls the target once on a random value and checks
    /// that it returns that value ([`RevealError::SingleInput`] otherwise).
    pub fn run_target<T: ProbeFloat, X: Target<T>>(
        &self,
        target: X,
    ) -> Result<RevealReport, RevealError> {
        let n = self.n;
        Reveal::check_size(n)?;
        if let Some((_, hint)) = self.hints.iter().find(|(_, t)| t.leaf_count() != n) {
            let leaves = hint.leaf_count();
            let plural = if leaves == 1 { "leaf" } else { "leaves" };
            return Err(RevealError::InvalidSize {
                n,
                reason: format!("a hint has {leaves} {plural}"),
            });
        }
        // the type's limit first (it says more than a memory budget), then the budget,
        // then the first allocation sized by n
        // a product target beyond one mask's reach is revealed through windows instead
        // (see `reach`), by the FPRev search only
        let beyond = match prober::scale_for(&target, n) {
            Ok(_) => None,
            Err(e) => match prober::beyond_reach(&target, n) {
                Some(r) if self.algorithm == Algorithm::FPRev => Some(r),
                _ => return Err(e),
            },
        };
        check_memory(n, self.algorithm, std::mem::size_of::<T>(), self.max_memory)?;
        let mut prober = match beyond {
            Some((reach, scale)) => {
                let mut p = Prober::at_scale(target, n, self.seed, scale)?;
                p.beyond_reach = Some(reach);
                p
            }
            None => Prober::new(target, n, self.seed)?,
        };
        if n == 1 {
            return single(prober, self.seed);
        }
        let count_bits = count_precision(&mut prober)?;
        // A truncating fused node was seen, or answers (or replays) no tree explains: a
        // fused adder may keep terms within its alignment width of M, so partial sums or
        // units survived next to a narrow mask. Widen the masks to the format's range and
        // start again; the second answer stands.
        let wide = prober::wide_scale_for::<T, X>(&prober.target, n);
        let mut wide_masks = false;
        let mut first_error = None;
        // random inputs the target answered in an earlier attempt: the final tree must
        // reproduce them too (a target cannot change its answers between attempts)
        let mut earlier = Vec::new();
        let attempt = loop {
            let may_widen = !wide_masks && wide.is_some();
            let r = self.attempt(&mut prober, may_widen, &mut earlier);
            let retry = may_widen
                && match &r {
                    Ok(a) => a.unverified_truncation,
                    Err(e) => explainable_by_fusion(e),
                };
            if !retry {
                // a failure with wide masks too: the narrow masks' reason is the plainer one
                break match (r, first_error) {
                    (Err(_), Some(first)) => return Err(first),
                    (r, _) => r?,
                };
            }
            if let Err(e) = r {
                first_error = Some(e);
            }
            if let Some(w) = wide {
                prober.rescale(w);
            }
            if let Some(bits) = count_bits {
                prober.cap_counts(bits);
            }
            wide_masks = true;
        };
        let Attempt {
            tree,
            recognized,
            mut verification,
            ..
        } = attempt;
        verification.wide_masks = wide_masks;
        verification.count_bits = count_bits;
        let log_n = (usize::BITS - (n - 1).leading_zeros()) as i32;
        verification.excluded_width = (prober.scale.gap() - log_n).max(0) as u32;
        Ok(RevealReport {
            tree,
            probes: prober.probes,
            batches: prober.batches,
            scale: prober.scale,
            windowed: prober.needs_windows(),
            replays: prober.replays,
            recognized,
            verification,
        })
    }

    /// Build and verify at the prober's current scale. With `stop_at_truncation`, a tree
    /// with truncating nodes is returned unverified (the caller widens the masks first).
    fn attempt<T: ProbeFloat, X: Target<T>>(
        &self,
        prober: &mut Prober<T, X>,
        stop_at_truncation: bool,
        earlier: &mut Vec<verify::Answered<T>>,
    ) -> Result<Attempt, RevealError> {
        let n = self.n;
        let Built {
            arena,
            recognized,
            answered,
            tree,
            order,
        } = self.build(prober)?;
        let before = earlier.len();
        earlier.extend(answered.iter().cloned());
        let earlier = &earlier[..before];
        let truncating = recognized.is_none() && arena.trunc.iter().any(|&t| t);
        if truncating && stop_at_truncation {
            return Ok(Attempt {
                tree,
                recognized,
                verification: Verification::default(),
                unverified_truncation: true,
            });
        }
        // One node over every input: an order-independent (exact) sum is an error unless
        // accepted; one truncating node (a single Tensor Core block) is a tree like any
        // other once the replays below confirm it.
        let flat = n >= 3 && tree.children(tree.root()).len() == n;
        if flat && !truncating && !self.accept_flat {
            // one block of a matrix unit whose result is rounded to a narrow accumulator
            // (an f16 one) keeps every unit next to the masks, as an exact sum would: it
            // is the one node the probes found, with the arithmetic the fit measures
            if let Some(fitted) = narrow_product_block(prober, &tree, self.seed) {
                return Ok(Attempt {
                    tree,
                    recognized,
                    verification: Verification {
                        performed: true,
                        replayed: fitted.inputs,
                        fused: Some(fitted),
                        ..Verification::default()
                    },
                    unverified_truncation: false,
                });
            }
            return Err(flat_root(prober, &answered, self.seed));
        }
        let mut verification = Verification::default();
        if self.verify && n > 1 && self.algorithm != Algorithm::Naive {
            // A proved guess's sampled answers are its proof's, equal to its predictions
            // already; a built tree predicts its samples from the arena.
            let built = recognized.is_none().then_some(&arena);
            let replay = verify::Replay {
                tree: &tree,
                order,
                filtered: recognized.is_some(),
                fused: recognized.as_deref() == Some(reach::NAME),
            };
            verification = match verify::check(prober, built, &replay, self.seed, &answered) {
                // a flat node no model follows: a target that ignores its input is the
                // plainer explanation; otherwise say what was found (one truncating
                // node, as a single Tensor Core block gives) and that no modelled
                // arithmetic reproduces it
                Err(e @ RevealError::FusedUnverified { .. }) if flat && !stop_at_truncation => {
                    return Err(match flat_root(prober, &answered, self.seed) {
                        c @ RevealError::ConstantAnswers { .. } => c,
                        d @ RevealError::DataDependent { .. }
                            if sorts_then_sums(prober, self.seed) =>
                        {
                            d
                        }
                        _ => e,
                    });
                }
                Err(e @ RevealError::NotPlainSummation { .. }) if prober.narrow_plain() => {
                    return Err(wider_register(prober, &tree, self.seed).unwrap_or(e));
                }
                other => other?,
            };
            if let Some(fitted) = verification.fused {
                separable(prober, n, fitted)?;
            }
            verify::earlier_answers(&tree, &replay, verification.fused, earlier)?;
        }
        Ok(Attempt {
            tree,
            recognized,
            verification,
            unverified_truncation: false,
        })
    }

    /// One construction at the prober's current scale.
    fn build<T: ProbeFloat, X: Target<T>>(
        &self,
        prober: &mut Prober<T, X>,
    ) -> Result<Built<T>, RevealError> {
        let n = self.n;
        let mut arena = Arena::try_new(n)?;
        let mut recognized = None;
        let mut answered = Vec::new();
        let built = match self.algorithm {
            Algorithm::Naive => naive::build(&mut prober.target, &mut arena, self.seed),
            Algorithm::Basic => basic::build(prober, &mut arena),
            Algorithm::FPRev if prober.beyond_reach.is_some() => {
                let reach = prober.beyond_reach.unwrap_or(n);
                recognized = Some(reach::chain(prober, reach, self.seed)?);
                Ok(0)
            }
            Algorithm::FPRev => {
                match known::recognize(prober, &self.hints, self.known_orders, self.seed) {
                    Err(e) => Err(e),
                    Ok(mut guesses) => {
                        if guesses.recognized.is_none() && self.guides(prober) {
                            if let Some(tree) = guide::guess(prober, self.seed) {
                                guesses.recognized = known::prove_guess(
                                    prober,
                                    &guesses.answered,
                                    "structure-guided",
                                    tree,
                                )?;
                            }
                        }
                        answered = guesses.answered;
                        recognized = guesses.recognized;
                        match recognized {
                            Some(_) => Ok(0),
                            None => levels::build(prober, &mut arena, self.pivot),
                        }
                    }
                }
            }
        };
        let root = built.map_err(|e| constant(prober, e, self.seed))?;
        // A proved guess covers every input by construction; a built tree must be checked.
        if recognized.is_none() && arena.size[root as usize] as usize != n {
            return Err(RevealError::Inconsistent {
                detail: format!(
                    "the tree covers {} of {n} inputs",
                    arena.size[root as usize]
                ),
            });
        }
        let (tree, order, recognized) = match recognized {
            Some(known) => (known.tree, known.order, Some(known.name)),
            None => (arena.to_tree(root), None, None),
        };
        Ok(Built {
            arena,
            recognized,
            answered,
            tree,
            order,
        })
    }
}

impl Reveal {
    /// Whether a structure-guided guess is worth its calls here: large enough, not
    /// windowed (counts beyond the accumulator's precision), and not a product target
    /// (whose operands do not restrict to positions one by one).
    fn guides<T: ProbeFloat, X: Target<T>>(&self, prober: &Prober<T, X>) -> bool {
        self.structure_guided
            && self.known_orders
            && self.n >= guide::MIN_N
            && !prober.needs_windows()
            && prober.target.replay_format().is_none()
    }
}

/// A verified tree, or one with truncating nodes left for wider masks.
struct Attempt {
    tree: SumTree,
    recognized: Option<String>,
    verification: Verification,
    unverified_truncation: bool,
}

/// A tree as one construction left it.
struct Built<T> {
    arena: Arena,
    recognized: Option<String>,
    answered: Vec<verify::Answered<T>>,
    tree: SumTree,
    order: Option<fn(&[T]) -> T>,
}

/// Counts from this many units on are tested for exactness before the search.
const COUNT_CHECK_FROM: usize = 4096;

/// Whether sums of units stay exact up to the largest count the search will read:
/// `2^q + 1` units need `q + 1` significant bits, so the largest `q` whose count comes
/// back exact says where exact counting stops (a Tensor Core FP8 path keeps 13 fraction
/// bits: exact below `2^14`, not f32's `2^24`). One call for a target that passes, and
/// only for `n` past [`COUNT_CHECK_FROM`]; `Some(bits)` when counts stop at `2^bits`.
fn count_precision<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
) -> Result<Option<u32>, RevealError> {
    let n = prober.n;
    let cap = prober.scale.exact_counts_below;
    let largest = (n - 2).min(cap.saturating_sub(1).min(usize::MAX as u64) as usize);
    // values narrower than the answers' type often come back rounded to their own
    // format (a float16 sum accumulated in f32 answers in float16): their counts are
    // checked from where that format stops counting
    let check_from = match prober.target.input_format() {
        Some(input) if input.precision < T::FORMAT.precision => {
            COUNT_CHECK_FROM.min(input.exact_count_limit() as usize)
        }
        _ => COUNT_CHECK_FROM,
    };
    if largest < check_from {
        return Ok(None);
    }
    let first = usize::BITS - 1 - (largest - 1).leading_zeros();
    let mut q = first;
    loop {
        let count = (1usize << q) + 1;
        match prober.units_sum(count)? {
            Some(c) if c == count as u64 => break,
            // a count cut short (truncated or rounded down to fewer bits): look lower
            Some(c) if c < count as u64 && c + (count as u64 >> 3) >= count as u64 => {}
            // anything else is not a sum of units (a mean, a norm, a constant): the
            // probes' own checks say what it is
            _ => return Ok(None),
        }
        if q <= 2 {
            return Err(RevealError::PrecisionTooLow {
                detail: format!(
                    "a sum of {count} units (and of every 2^q + 1 units above it) does not come back exact"
                ),
            });
        }
        q -= 1;
    }
    if q == first {
        return Ok(None);
    }
    let bits = q + 1;
    prober.cap_counts(bits);
    Ok(Some(bits))
}

/// `n = 1`: one call on a random value, which a sum of one value returns unchanged.
fn single<T: ProbeFloat, X: Target<T>>(
    mut prober: Prober<T, X>,
    seed: u64,
) -> Result<RevealReport, RevealError> {
    let mut x = [T::ZERO];
    prober.random_input(seed ^ 0x0A1E, &mut x);
    let answer = prober.call(&x)?;
    if answer.to_bits_u64() != x[0].to_bits_u64() {
        return Err(RevealError::SingleInput {
            input: x[0].to_f64(),
            answer: answer.to_f64(),
        });
    }
    Ok(RevealReport {
        tree: SumTree::sequential(1),
        probes: 0,
        batches: 0,
        scale: prober.scale,
        windowed: false,
        replays: prober.replays,
        recognized: None,
        verification: Verification::default(),
    })
}

/// Reveal the summation tree of `f` over `n` inputs of type `T`, with FPRev and
/// verification (see [`Reveal`] for the options).
///
/// `T` is any of `f32`, `f64`, [`half::f16`], [`half::bf16`]; masks and units are chosen
/// for `T` and `n`, and windows of zeros keep counts exact when `n` exceeds the type's
/// precision.
///
/// ```
/// let t = fprev::reveal(4, |x: &[f32]| x.iter().sum::<f32>())?;
/// assert_eq!(t.to_string(), "(((0+1)+2)+3)");
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn reveal<T: ProbeFloat, F: FnMut(&[T]) -> T>(n: usize, f: F) -> Result<SumTree, RevealError> {
    Reveal::new(n).run(f)
}
