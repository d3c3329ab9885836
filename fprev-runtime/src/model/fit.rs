//! Fitting a model: reveal a target at chosen sizes, keep the simplest model of the
//! families whose tree is the revealed one at every size, and prove it at sizes the fit
//! did not see.

use super::{Combine, Evidence, ModelError, ModelShape, OrderModel, SumType};
use crate::black_box::Target;
use crate::float::ProbeFloat;
use crate::reveal::{Reveal, RevealError};
use crate::tree::SumTree;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Settings of [`fit_with`]; [`fit`] uses the defaults.
///
/// ```
/// let c = fprev::model::FitConfig::default().proofs(12).seed(7);
/// assert_eq!(c.proof_count(), 12);
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct FitConfig {
    proofs: usize,
    reach: usize,
    seed: u64,
    rounds: usize,
    /// Trees a sweep over lengths revealed, by length (sorted): used instead of revealing.
    known: Vec<(usize, SumTree)>,
    /// A sweep's breakpoints and the lengths before them: fitted besides the chosen sizes.
    breakpoints: Vec<usize>,
}

impl Default for FitConfig {
    /// 8 proofs, up to 10 times the largest fitted size, seed 49, 3 rounds, no sweep.
    fn default() -> FitConfig {
        FitConfig {
            proofs: 8,
            reach: 10,
            seed: 49,
            rounds: 3,
            known: Vec::new(),
            breakpoints: Vec::new(),
        }
    }
}

impl FitConfig {
    /// Sizes a model is proved at after it fits (default 8, at least 1): half of them
    /// above the largest fitted size, the rest among the sizes given that were not fitted
    /// (all above when there are none).
    pub fn proofs(mut self, count: usize) -> FitConfig {
        self.proofs = count.max(1);
        self
    }

    /// The number of proof sizes.
    pub fn proof_count(&self) -> usize {
        self.proofs
    }

    /// How far above the largest fitted size proofs reach, as a factor (default 10, at
    /// least 2).
    pub fn reach(mut self, factor: usize) -> FitConfig {
        self.reach = factor.max(2);
        self
    }

    /// The seed that draws the proof sizes (default 49): a fit is a pure function of
    /// the target, the sizes and this seed.
    pub fn seed(mut self, seed: u64) -> FitConfig {
        self.seed = seed;
        self
    }

    /// The sizes a model fitted at `fitted` (sorted) is proved at in round `round` (0
    /// first): half among `given` (sorted) that were not fitted, the rest above the
    /// largest fitted size up to [`reach`](Self::reach) times it, drawn log-uniformly
    /// from the seed and the round.
    ///
    /// ```
    /// let c = fprev::model::FitConfig::default();
    /// let p = c.proof_sizes(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], &[1, 2, 4, 8, 10], 0);
    /// assert_eq!(p.len(), 8);
    /// assert!(p.iter().all(|n| ![1, 2, 4, 8, 10].contains(n) && *n <= 100));
    /// ```
    pub fn proof_sizes(&self, given: &[usize], fitted: &[usize], round: usize) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (round as u64).rotate_left(32));
        let unseen: Vec<usize> = given
            .iter()
            .copied()
            .filter(|n| fitted.binary_search(n).is_err())
            .collect();
        let mut out: Vec<usize> = Vec::new();
        let inside = (self.proofs / 2).min(unseen.len());
        while out.len() < inside {
            let n = unseen[(rng.next_u64() % unseen.len() as u64) as usize];
            if !out.contains(&n) {
                out.push(n);
            }
        }
        let top = fitted.last().copied().unwrap_or(1).max(1);
        let (lo, hi) = ((top + 1) as f64, (top * self.reach) as f64);
        // a bounded number of draws: a narrow range may hold fewer new sizes than asked
        for _ in 0..10_000 {
            if out.len() >= self.proofs {
                break;
            }
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let n = (lo * (hi / lo).powf(u)).round() as usize;
            if !out.contains(&n) && fitted.binary_search(&n).is_err() {
                out.push(n);
            }
        }
        out
    }

    /// The trees a sweep over lengths ([`crate::sweep_lengths`]) revealed: the fit adds
    /// the sweep's breakpoints and the swept lengths just before them to the sizes it
    /// fits (where an order changes is where families part ways), and takes every tree
    /// the sweep holds instead of revealing that length again (fitted or proved). A sweep
    /// over another parameter than the length adds nothing.
    ///
    /// ```
    /// use fprev::model::{self, FitConfig};
    /// use fprev::target::FnTarget;
    /// // 4 lanes below 100 values, 8 from 100 on: 100 is no size a fit picks by itself
    /// let lanes = |n: usize| if n < 100 { 4 } else { 8 };
    /// let kernel = |n: usize| {
    ///     FnTarget(move |x: &[f32]| {
    ///         let mut acc = vec![0f32; lanes(n)];
    ///         for (i, v) in x.iter().enumerate() {
    ///             acc[i % lanes(n)] += v;
    ///         }
    ///         acc.iter().fold(0f32, |s, a| s + a)
    ///     })
    /// };
    /// let sweep = fprev::sweep_lengths(90..=110, kernel)?;
    /// assert_eq!(sweep.breakpoints(), vec![100]);
    /// let e = model::fit_with(&FitConfig::default().with_sweep(&sweep), kernel, 1..=200);
    /// // no one model: the error lists the lengths fitted, the breakpoint among them
    /// let Err(model::ModelError::NoFit { fitted, .. }) = e else { panic!("{e:?}") };
    /// assert!(fitted.contains(&99) && fitted.contains(&100));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_sweep(mut self, sweep: &crate::sweep::Sweep) -> FitConfig {
        if !sweep.over_lengths() {
            return self;
        }
        let points = sweep.points();
        self.known = points.iter().map(|p| (p.size, p.tree.clone())).collect();
        for b in sweep.breakpoints() {
            if let Ok(i) = points.binary_search_by_key(&b, |p| p.size) {
                self.breakpoints
                    .extend(points[i.saturating_sub(1)..=i].iter().map(|p| p.size));
            }
        }
        self
    }

    /// The tree a sweep revealed at `n`, if it did.
    fn known_tree(&self, n: usize) -> Option<SumTree> {
        self.known
            .binary_search_by_key(&n, |(m, _)| *m)
            .ok()
            .map(|i| self.known[i].1.clone())
    }

    /// How many times a model that fails its proof may be replaced by the next one that
    /// also fits the failed sizes (default 3).
    pub fn rounds(mut self, rounds: usize) -> FitConfig {
        self.rounds = rounds.max(1);
        self
    }
}

/// Fit an order model to the sums `make(n)` computes over `n` values, for lengths drawn
/// from `sizes` ([`FitConfig::default`]).
///
/// The sizes revealed are those of `sizes` up to 24, the powers of two, their
/// neighbours, three times the powers of two, the largest prime below each power of two,
/// and the largest size. The returned model's tree is the revealed one at every one of
/// them and at [`FitConfig::proofs`] sizes it was not fitted to (its
/// [`Evidence`] lists both); a model that fails a proof is replaced by the next one that
/// fits the failed size too, and when none does, the error lists the sizes that disagree.
///
/// ```
/// use fprev::model::{self, ModelShape};
/// use fprev::target::FnTarget;
/// let m = model::fit(|_n| FnTarget(|x: &[f64]| x.iter().sum::<f64>()), 1..=100)?;
/// assert_eq!(m.shape(), ModelShape::Sequential);
/// let e = m.evidence().unwrap();
/// assert!(e.proved.iter().any(|&n| n > 100) && e.proved.iter().all(|n| !e.fitted.contains(n)));
/// # Ok::<(), fprev::model::ModelError>(())
/// ```
pub fn fit<T, X, F, I>(make: F, sizes: I) -> Result<OrderModel, ModelError>
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
    I: IntoIterator<Item = usize>,
{
    fit_with(&FitConfig::default(), make, sizes)
}

/// [`fit`] with settings.
///
/// ```
/// use fprev::model::{self, FitConfig};
/// use fprev::target::FnTarget;
/// let m = model::fit_with(
///     &FitConfig::default().proofs(3),
///     |_n| FnTarget(fprev::orders::xla_tree_reduction::<f32>),
///     1..=2048,
/// )?;
/// assert_eq!(m.to_string(), "fprev-model/1 xla-windows window=32 type=f32");
/// assert_eq!(m.evidence().unwrap().proved.len(), 3);
/// # Ok::<(), fprev::model::ModelError>(())
/// ```
pub fn fit_with<T, X, F, I>(
    config: &FitConfig,
    mut make: F,
    sizes: I,
) -> Result<OrderModel, ModelError>
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
    I: IntoIterator<Item = usize>,
{
    let given = collect_sizes(sizes)?;
    let mut seen = first_trees(config, &mut make, &given)?;
    let mut last_failure = None;
    for round in 0..config.rounds {
        seen.sort_by_key(|(n, _)| *n);
        let shape = match fit_trees(&seen) {
            Ok(shape) => shape,
            Err(e) => return Err(unfitted(e, &mut make, config.seed)),
        };
        let fitted: Vec<usize> = seen.iter().map(|(n, _)| *n).collect();
        let mut proved = Vec::new();
        let mut failed = Vec::new();
        let mut changing: Vec<usize> = Vec::new();
        for n in config.proof_sizes(&given, &fitted, round) {
            let expected = shape.tree(n);
            let tree = match reveal_at(config, &mut make, n, Some(expected.clone())) {
                Err(e) if order_changes(&e, &mut make, n, config.seed) => {
                    changing.push(n);
                    continue;
                }
                other => other?,
            };
            if tree == expected {
                proved.push(n);
            } else if answers_change(&mut make(n), n, config.seed) {
                // a tree of one call, not the target's order
                changing.push(n);
            } else {
                failed.push((n, tree));
            }
        }
        if !changing.is_empty() {
            changing.sort_unstable();
            return Err(ModelError::Nondeterministic { sizes: changing });
        }
        if failed.is_empty() {
            proved.sort_unstable();
            let model = OrderModel::new(shape, SumType::of::<T>());
            return Ok(model.with_evidence(Evidence { fitted, proved }));
        }
        last_failure = Some((
            shape,
            failed.iter().map(|(n, _)| *n).collect::<Vec<usize>>(),
        ));
        seen.extend(failed);
    }
    let (shape, sizes) = last_failure.unwrap_or((ModelShape::Sequential, Vec::new()));
    Err(ModelError::Disproved {
        model: OrderModel::new(shape, SumType::of::<T>()).to_string(),
        sizes,
    })
}

/// The tree of `make(n)`: the configuration's known tree for `n`, else a revelation
/// (with `hint` tried first).
fn reveal_at<T, X, F>(
    config: &FitConfig,
    make: &mut F,
    n: usize,
    hint: Option<SumTree>,
) -> Result<SumTree, ModelError>
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
{
    if let Some(t) = config.known_tree(n) {
        return Ok(t);
    }
    let mut r = Reveal::new(n);
    if let Some(h) = hint {
        r = r.hint(h);
    }
    r.run_target(make(n))
        .map(|report| report.tree)
        .map_err(|error| ModelError::Reveal { n, error })
}

/// The trees a fit starts from: those at the chosen sizes of `given` and at the
/// configuration's breakpoints among them; [`ModelError::Nondeterministic`] when the
/// order changes from call to call at some of them (threads that race: no model holds).
fn first_trees<T, X, F>(
    config: &FitConfig,
    make: &mut F,
    given: &[usize],
) -> Result<Vec<(usize, SumTree)>, ModelError>
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
{
    let mut seen: Vec<(usize, SumTree)> = Vec::new();
    let mut fit_at = chosen_sizes(given);
    fit_at.extend(
        config
            .breakpoints
            .iter()
            .filter(|n| given.binary_search(n).is_ok()),
    );
    fit_at.sort_unstable();
    fit_at.dedup();
    let mut changing: Vec<usize> = Vec::new();
    for n in fit_at {
        match reveal_at(config, make, n, None) {
            Ok(tree) => seen.push((n, tree)),
            Err(e) => {
                if !order_changes(&e, make, n, config.seed) {
                    return Err(e);
                }
                changing.push(n);
                if changing.len() == MAX_CHANGING {
                    break;
                }
            }
        }
    }
    if !changing.is_empty() {
        return Err(ModelError::Nondeterministic { sizes: changing });
    }
    Ok(seen)
}

/// The error of trees no family fits: [`ModelError::Nondeterministic`] when they may be
/// one call's trees of an order that changes (the sizes the closest model disagrees at,
/// largest first, answer one input differently), else `e` itself.
fn unfitted<T, X, F>(e: ModelError, make: &mut F, seed: u64) -> ModelError
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
{
    let bad = match &e {
        ModelError::NoFit { closest, .. } => closest
            .first()
            .map(|(_, bad)| bad.clone())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let mut changing: Vec<usize> = bad
        .iter()
        .rev()
        .take(MAX_CHANGING)
        .copied()
        .filter(|&n| answers_change(&mut make(n), n, seed))
        .collect();
    if changing.is_empty() {
        return e;
    }
    changing.sort_unstable();
    ModelError::Nondeterministic { sizes: changing }
}

/// The most sizes a fit looks at once it has seen a target's order change between calls.
const MAX_CHANGING: usize = 3;

/// Values [`answers_change`] sums at most, over all its calls of one input: a race that
/// shows once in thousands of calls (a rayon worker that wakes in time to steal) needs
/// many calls, and short sums are cheap.
const SAME_INPUT_VALUES: usize = 1 << 26;

/// Whether a failed revelation shows that the target's order changes between calls: the
/// same probe answered twice differently, or probe answers no tree explains, or a tree
/// that misses a random input (both of which a compensated sum also gives), and one
/// input summed again to other bits.
fn order_changes<T, X, F>(e: &ModelError, make: &mut F, n: usize, seed: u64) -> bool
where
    T: ProbeFloat,
    X: Target<T>,
    F: FnMut(usize) -> X,
{
    match e {
        ModelError::Reveal {
            error: RevealError::Nondeterministic { .. },
            ..
        } => true,
        ModelError::Reveal {
            error: RevealError::Inconsistent { .. } | RevealError::NotPlainSummation { .. },
            ..
        } => answers_change(&mut make(n), n, seed),
        _ => false,
    }
}

/// How long [`answers_change`] calls one input at most (after 16 calls).
const SAME_INPUT_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether `target` sums one seeded input of `n` values to different bits on different
/// calls (256 to 65,536 calls, [`SAME_INPUT_VALUES`] values in all, for at most
/// [`SAME_INPUT_TIME`]): proof that its order is not one tree.
fn answers_change<T: ProbeFloat, X: Target<T>>(target: &mut X, n: usize, seed: u64) -> bool {
    let mut x = vec![T::ZERO; n];
    if !target.random_input(seed, &mut x) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ n as u64);
        for v in x.iter_mut() {
            // mixed magnitudes and signs: two orders give two sums
            let m = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let e = (rng.next_u64() % 24) as i32 - 12;
            *v = T::from_f64_round(m * 2f64.powi(e));
        }
    }
    let Ok(first) = target.call(&x) else {
        return false;
    };
    let calls = (SAME_INPUT_VALUES / n.max(1)).clamp(256, 1 << 16);
    // a slow target (a program behind a pipe) gets a second of calls, not 65,536
    let start = std::time::Instant::now();
    (1..calls).any(|k| {
        if k >= 16 && start.elapsed() > SAME_INPUT_TIME {
            return false;
        }
        // every 8th call after a pause of 0 to 1.5 ms: whether a pool's idle workers
        // are asleep or spinning decides who steals, so back-to-back calls alone can
        // repeat one schedule (nothing is asserted about time)
        if k % 8 == 0 {
            std::thread::sleep(std::time::Duration::from_micros((k as u64 * 37) % 1500));
        }
        target
            .call(&x)
            .is_ok_and(|v| v.to_bits_u64() != first.to_bits_u64())
    })
}

/// The simplest model whose tree is the given one at every size (trees revealed by any
/// means: another process, a file, the `--exec` protocol); [`ModelError::NoFit`], with
/// each family's closest model and the sizes it disagrees at, when none is.
///
/// ```
/// use fprev::{model::{self, ModelShape}, SumTree};
/// let trees: Vec<_> = [3, 8, 100].map(|n| (n, SumTree::numpy_pairwise(n))).to_vec();
/// // below 129 values NumPy's sum is an 8-lane loop combined pairwise
/// assert_eq!(
///     model::fit_trees(&trees)?.to_string(),
///     "unrolled lanes=8 combine=pairwise"
/// );
/// # Ok::<(), fprev::model::ModelError>(())
/// ```
pub fn fit_trees(trees: &[(usize, SumTree)]) -> Result<ModelShape, ModelError> {
    let mut sorted: Vec<&(usize, SumTree)> = trees.iter().collect();
    sorted.sort_by_key(|(n, _)| *n);
    let candidates = candidates();
    match candidates
        .iter()
        .find(|s| sorted.iter().all(|(n, t)| s.tree(*n) == *t))
    {
        Some(s) => Ok(*s),
        None => Err(no_fit(&candidates, &sorted)),
    }
}

/// The sizes [`fit`] reveals out of `sizes`: those up to 24, the powers of two, their
/// neighbours, three times the powers of two, the largest prime below each power of two,
/// and the largest size.
///
/// ```
/// let s = fprev::model::fit_sizes(1..=300)?;
/// assert_eq!(&s[s.len() - 4..], &[255, 256, 257, 300]);
/// # Ok::<(), fprev::model::ModelError>(())
/// ```
pub fn fit_sizes(sizes: impl IntoIterator<Item = usize>) -> Result<Vec<usize>, ModelError> {
    Ok(chosen_sizes(&collect_sizes(sizes)?))
}

/// The most sizes a fit accepts: `1..=10^7` is fine, a longer list is a mistake.
const MAX_GIVEN: usize = 10_000_000;

fn collect_sizes(sizes: impl IntoIterator<Item = usize>) -> Result<Vec<usize>, ModelError> {
    let mut given = Vec::new();
    for n in sizes {
        if n == 0 {
            return Err(ModelError::Sizes("0 has no order to fit".into()));
        }
        if given.len() == MAX_GIVEN {
            return Err(ModelError::Sizes(format!(
                "more than {MAX_GIVEN} sizes; give a range or a list"
            )));
        }
        given.push(n);
    }
    given.sort_unstable();
    given.dedup();
    if given.is_empty() {
        return Err(ModelError::Sizes("no sizes given".into()));
    }
    Ok(given)
}

fn is_prime(n: usize) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| n % d != 0)
}

/// The sizes revealed for the fit: small sizes, where families part ways; powers of two,
/// their neighbours and three times them, where blocks and lanes fill up or spill; the
/// largest prime below each power of two, where no block divides; the largest size.
pub(crate) fn chosen_sizes(given: &[usize]) -> Vec<usize> {
    let max = given.last().copied().unwrap_or(0);
    let mut want: Vec<usize> = (1..=24).collect();
    let mut p = 1usize;
    while p <= max {
        want.extend([p - 1, p, p + 1, 3 * p]);
        if let Some(q) = (p / 2..p).rev().find(|&q| is_prime(q)) {
            want.push(q);
        }
        p *= 2;
    }
    want.push(max);
    want.sort_unstable();
    want.dedup();
    want.retain(|n| given.binary_search(n).is_ok());
    want
}

/// Every model tried, simplest first: a fit returns the first whose trees match.
pub(crate) fn candidates() -> Vec<ModelShape> {
    let mut c = vec![ModelShape::Sequential, ModelShape::Reverse];
    for lanes in [2, 3, 4, 5, 6, 8, 12, 16, 32, 64] {
        for combine in [Combine::InOrder, Combine::Pairwise, Combine::Folded] {
            if combine != Combine::Folded || lanes % 2 == 0 {
                c.push(ModelShape::Unrolled { lanes, combine });
            }
        }
    }
    for lanes in [8, 4, 16] {
        for block in [128, 64, 256, 32, 512, 1024] {
            if block >= lanes {
                c.push(ModelShape::NumpyPairwise { lanes, block });
            }
        }
    }
    for window in [32, 16, 64, 128, 8, 256] {
        c.push(ModelShape::XlaWindows { window });
    }
    for width in [8, 16, 4] {
        for load in [1, 2] {
            c.push(ModelShape::TorchCascade {
                width,
                load,
                ilp: 4,
                levels: 4,
            });
        }
    }
    // one per halving depth: threads t and 2t - 1 split alike
    for threads in [1, 2, 4, 8, 16, 32, 64, 128, 256] {
        c.push(ModelShape::RayonHalving { threads });
    }
    c
}

/// The error when no candidate fits: per family, the candidate that disagrees at the
/// fewest sizes, closest first.
pub(crate) fn no_fit(candidates: &[ModelShape], seen: &[&(usize, SumTree)]) -> ModelError {
    let family = |s: &ModelShape| std::mem::discriminant(s);
    let mut best: Vec<(ModelShape, Vec<usize>)> = Vec::new();
    for s in candidates {
        let bad: Vec<usize> = seen
            .iter()
            .filter(|(n, t)| s.tree(*n) != *t)
            .map(|(n, _)| *n)
            .collect();
        match best.iter_mut().find(|(b, _)| family(b) == family(s)) {
            Some(entry) if bad.len() < entry.1.len() => *entry = (*s, bad),
            Some(_) => {}
            None => best.push((*s, bad)),
        }
    }
    best.sort_by_key(|(_, bad)| bad.len());
    ModelError::NoFit {
        fitted: seen.iter().map(|(n, _)| *n).collect(),
        closest: best
            .into_iter()
            .map(|(s, bad)| (s.to_string(), bad))
            .collect(),
    }
}
