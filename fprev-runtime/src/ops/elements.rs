//! The summation order of every output element of a k-reduction, grouped by tree.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::{convert, split_operands, spreads_operands, Operands, Reduction, Shape};
use crate::draw;
use crate::float::{FloatFormat, ProbeFloat, ProbeScale};
use crate::reveal::{fit, Algorithm, FittedFused, Pivot, Reveal, RevealError};
use crate::target::{random_operands, DrawnOperands, Probe, ProbeBatch, Target, TargetError};
use crate::tree::SumTree;

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

/// One output element: lane (row of `C`) and output (column of `C`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Element {
    /// The lane (row).
    pub lane: usize,
    /// The output within the lane (column).
    pub output: usize,
}

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}, {}]", self.lane, self.output)
    }
}

/// Elements that share one summation tree.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderGroup {
    /// The tree.
    pub tree: SumTree,
    /// The elements, in row-major order.
    pub elements: Vec<Element>,
}

/// The orders of all output elements of a reduction.
///
/// ```
/// let g = fprev::ops::gemv(8, 16, |a: &[f64], x: &[f64], y: &mut [f64]| {
///     for (row, yi) in a.chunks(16).zip(y.iter_mut()) {
///         *yi = row.iter().zip(x).map(|(a, b)| a * b).sum();
///     }
/// });
/// let o = fprev::ops::ElementReveal::new().run(g)?;
/// assert_eq!(o.to_string().lines().next(), Some("all 8 x 1 elements share one order (k = 16):"));
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ElementOrders {
    /// The operation's shape.
    pub shape: Shape,
    /// Groups of elements with one tree each, the largest first.
    pub groups: Vec<OrderGroup>,
    /// Elements left unrevealed after `max_groups` rounds (normally empty).
    pub unresolved: Vec<Element>,
    /// Calls of the operation.
    pub calls: u64,
    /// Probes answered (counting each probe once, however many lanes answered it).
    pub probes: u64,
    /// Whether masks and units were spread over both operands of the products (FP8
    /// operands, whose range alone cannot swamp a sum): each probe then needs its own
    /// row of `A` and its own column of `B`, so a call answers at most
    /// `min(lanes, outputs)` probes (one for a gemv or a dot product).
    pub operands_spread: bool,
}

impl ElementOrders {
    /// Whether every element sums in one order.
    pub fn is_uniform(&self) -> bool {
        self.groups.len() == 1 && self.unresolved.is_empty()
    }

    /// The tree of `element`, if revealed.
    pub fn tree_of(&self, element: Element) -> Option<&SumTree> {
        self.groups
            .iter()
            .find(|g| g.elements.binary_search(&element).is_ok())
            .map(|g| &g.tree)
    }
}

impl std::fmt::Display for ElementOrders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.shape;
        if self.is_uniform() {
            writeln!(
                f,
                "all {} x {} elements share one order (k = {}):",
                s.lanes, s.outputs, s.k
            )?;
            return writeln!(f, "{}", self.groups[0].tree);
        }
        writeln!(
            f,
            "{} orders among {} x {} elements (k = {}):",
            self.groups.len(),
            s.lanes,
            s.outputs,
            s.k
        )?;
        for (i, g) in self.groups.iter().enumerate() {
            let shown: Vec<String> = g.elements.iter().take(6).map(|e| e.to_string()).collect();
            let more = if g.elements.len() > 6 { " ..." } else { "" };
            writeln!(
                f,
                "group {i}: {} elements {}{more}",
                g.elements.len(),
                shown.join(" ")
            )?;
            writeln!(f, "{}", g.tree)?;
        }
        if !self.unresolved.is_empty() {
            writeln!(f, "{} elements unresolved", self.unresolved.len())?;
        }
        Ok(())
    }
}

/// Reveal the order of every output element of a [`Reduction`].
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
    coverage: ElementCoverage,
    algorithm: Algorithm,
    pivot: Option<Pivot>,
    seed: u64,
    accept_flat: bool,
    verify: bool,
    checks: usize,
    max_groups: usize,
    max_memory: u64,
    on_call: Option<OnCall>,
}

/// A progress callback, told the number of calls made so far.
#[derive(Clone)]
struct OnCall(std::sync::Arc<dyn Fn(u64) + Send + Sync>);

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
            algorithm: Algorithm::FPRev,
            pivot: None,
            seed: 0,
            accept_flat: false,
            verify: true,
            checks: 2,
            max_groups: 16,
            on_call: None,
            max_memory: crate::reveal::DEFAULT_MAX_MEMORY,
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
        self.algorithm = a;
        self
    }

    /// Pivot choice (default [`Pivot::Smallest`] when a call has several lanes, so
    /// forward-order libraries take one call per tree level; [`Pivot::Random`] for one
    /// lane, where probes are calls and random pivots need about `2n` even for
    /// reverse-order sums).
    pub fn pivot(mut self, p: Pivot) -> Self {
        self.pivot = Some(p);
        self
    }

    /// Seed of pivots and check inputs (default 0).
    pub fn seed(mut self, s: u64) -> Self {
        self.seed = s;
        self
    }

    /// Accept order-independent (one fused node) results (default off).
    pub fn accept_flat(mut self, on: bool) -> Self {
        self.accept_flat = on;
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
        self.verify = on;
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
        self.max_memory = bytes;
        self
    }

    /// The engine for one tree, `per_call` probes answered by one call. It verifies its
    /// tree as [`Reveal`] does unless [`verify`](Self::verify) is off: the checks of
    /// every element below draw fewer inputs, so they alone would accept what a
    /// `Reveal` of one element refuses. `verify` turns it on regardless: with operands
    /// spread, or a fused node that plain replays miss, a tree with truncating fused
    /// nodes needs the block-FMA model the engine fits while verifying.
    fn engine(&self, shape: Shape, per_call: usize, verify: bool) -> Reveal {
        let k = shape.k;
        let pivot = self.pivot.unwrap_or(if per_call > 1 {
            Pivot::Smallest
        } else {
            Pivot::Random
        });
        Reveal::new(k)
            .algorithm(self.algorithm)
            .pivot(pivot)
            .seed(self.seed)
            .accept_flat(self.accept_flat)
            .max_memory(self.max_memory)
            .verify(verify || self.verify)
    }

    /// Reveal every element's order.
    ///
    /// A product whose operand format alone cannot swamp a sum of `k` units (FP8
    /// operands) is probed with masks and units spread over both operands (`M = Ma x
    /// Mb`, `e = ea x eb`): each probe gets its own row of `A` and column of `B`, and
    /// every element is then checked on random operands of its own.
    ///
    /// ```
    /// use fprev::float::F8E4M3;
    /// use fprev::fused::BlockFma;
    /// use fprev::ops::{self, ElementReveal};
    /// // an FP8 gemm whose every output runs the H100 FP8 block-FMA chain
    /// let model = BlockFma::H100_FP8;
    /// let (m, k, n) = (2, 64, 2);
    /// let gemm = ops::gemm(m, k, n, |a: &[F8E4M3], b: &[F8E4M3], c: &mut [f32]| {
    ///     for i in 0..m {
    ///         for j in 0..n {
    ///             let col: Vec<F8E4M3> = (0..k).map(|l| b[l * n + j]).collect();
    ///             c[i * n + j] = model.dot(&a[i * k..(i + 1) * k], &col);
    ///         }
    ///     }
    /// });
    /// let o = ElementReveal::new().run(gemm)?;
    /// assert!(o.operands_spread && o.is_uniform());
    /// assert_eq!(o.groups[0].tree, model.tree(k));
    /// # Ok::<(), fprev::RevealError>(())
    /// ```
    pub fn run<T: ProbeFloat, R: Reduction<T>>(
        &self,
        mut op: R,
    ) -> Result<ElementOrders, RevealError> {
        let shape = op.shape();
        if shape.lanes == 0 || shape.outputs == 0 {
            return Err(RevealError::InvalidSize {
                n: shape.k,
                reason: format!("the operation has no outputs ({shape})"),
            });
        }
        let spread = spreads_operands::<T, R>(shape.k);
        let mut rec = Recorder::new(&mut op, spread);
        rec.on_call = self.on_call.clone();
        match self.orders(&mut rec) {
            // One operand's range held the masks, but not enough to tell a fused adder's
            // alignment widths apart: products (their range the square of one operand's)
            // do, when the operation has a second operand.
            Err(RevealError::Indistinguishable { .. })
                if !spread
                    && R::OPERANDS
                    && ProbeScale::for_formats(R::Input::FORMAT.product(), T::FORMAT, shape.k)
                        .is_some() =>
            {
                let (calls, probes) = (rec.calls, rec.probes);
                drop(rec);
                let mut rec = Recorder::new(&mut op, true);
                rec.on_call = self.on_call.clone();
                rec.calls = calls;
                rec.probes = probes;
                self.orders(&mut rec)
            }
            other => other,
        }
    }

    /// Every element's order through `rec`, in its mode.
    fn orders<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
    ) -> Result<ElementOrders, RevealError> {
        let shape = rec.shape;
        let spread = rec.spread;
        let all: Vec<usize> = (0..shape.elements()).collect();
        let mut groups: Vec<(SumTree, Vec<usize>)> = Vec::new();
        let mut pending = all;
        if self.coverage == ElementCoverage::Batched {
            let first = if spread {
                self.batched_spread(rec)
            } else {
                self.batched(rec)
            };
            if let Some(e) = rec.nondeterminism.take() {
                return Err(e);
            }
            match first {
                Ok((tree, bad)) => {
                    let good: Vec<usize> = (0..shape.elements()).filter(|e| !bad[*e]).collect();
                    pending = (0..shape.elements()).filter(|e| bad[*e]).collect();
                    if !good.is_empty() {
                        groups.push((tree, good));
                    }
                }
                Err(e) if shape.elements() == 1 || !recoverable(&e) => return Err(e),
                Err(_) => {}
            }
        }
        let mut unresolved = Vec::new();
        while !pending.is_empty() {
            if groups.len() >= self.max_groups {
                unresolved = std::mem::take(&mut pending);
                break;
            }
            let round = self.exhaustive(rec, &pending, spread);
            if let Some(e) = rec.nondeterminism.take() {
                return Err(e);
            }
            let (tree, same) = round?;
            let mut group = Vec::new();
            let mut rest = Vec::new();
            for (i, &e) in pending.iter().enumerate() {
                if same[i] {
                    group.push(e);
                } else {
                    rest.push(e);
                }
            }
            groups.push((tree, group));
            pending = rest;
        }
        groups.sort_by_key(|(_, g)| std::cmp::Reverse(g.len()));
        let el = |e: usize| Element {
            lane: e / shape.outputs,
            output: e % shape.outputs,
        };
        Ok(ElementOrders {
            shape,
            groups: groups
                .into_iter()
                .map(|(tree, g)| OrderGroup {
                    tree,
                    elements: g.into_iter().map(el).collect(),
                })
                .collect(),
            unresolved: unresolved.into_iter().map(el).collect(),
            calls: rec.calls,
            probes: rec.probes,
            operands_spread: spread,
        })
    }

    /// Probes spread over lanes; returns the tree and which elements contradict it.
    fn batched<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
    ) -> Result<(SumTree, Vec<bool>), RevealError> {
        let shape = rec.shape;
        rec.mode = RecordMode::Spread;
        rec.log.clear();
        rec.sources.clear();
        let tree = self
            .engine(shape, shape.lanes, false)
            .run_target(&mut *rec)?
            .tree;
        let first = rec.log.first().map(|l| l.rows.clone());
        // Seeded random inputs, different in every lane.
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0xC4EC_0000);
        for _ in 0..self.checks {
            let lanes: Vec<u32> = (0..shape.lanes)
                .map(|_| {
                    let x = random_input::<T, R::Input>(shape.k, &mut rng);
                    rec.sources.push(Source::Vector(x));
                    (rec.sources.len() - 1) as u32
                })
                .collect();
            rec.eval_sources(lanes).map_err(target_error)?;
        }
        let expected: Vec<u64> = rec
            .sources
            .iter()
            .map(|s| tree.replay(&rec.source_input(s)).to_bits_u64())
            .collect();
        let mut bad = vec![false; shape.elements()];
        for call in &rec.log {
            for (lane, &src) in call.rows.iter().enumerate() {
                let want = expected[src as usize];
                for o in 0..shape.outputs {
                    let e = lane * shape.outputs + o;
                    if call.out[e].to_bits_u64() != want {
                        bad[e] = true;
                    }
                }
            }
        }
        // Determinism: the first call again must give the same bits everywhere.
        if let Some(lanes) = first {
            let before = rec.log[0].out.clone();
            rec.eval_sources(lanes.clone()).map_err(target_error)?;
            let after = &rec.log.last().map(|l| l.out.clone()).unwrap_or_default();
            if let Some(e) =
                (0..before.len()).find(|&e| before[e].to_bits_u64() != after[e].to_bits_u64())
            {
                let src = &rec.sources[lanes[e / shape.outputs] as usize];
                return Err(nondeterministic(src, &rec.backgrounds, before[e], after[e]));
            }
        }
        Ok((tree, bad))
    }

    /// [`batched`](Self::batched) with operands spread: probes on a matching of rows and
    /// columns (probe `t` of a call in row `t` and column `t`, spare rows and columns
    /// repeating the call's probes), then every element checked on random operands of
    /// its own, then the first call again.
    fn batched_spread<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
    ) -> Result<(SumTree, Vec<bool>), RevealError> {
        let shape = rec.shape;
        rec.mode = RecordMode::Spread;
        rec.log.clear();
        rec.first_out = None;
        rec.sources.clear();
        let report = self
            .engine(shape, rec.per_call(), true)
            .run_target(&mut *rec)?;
        let tree = report.tree;
        let model = Model {
            tree: &tree,
            fused: report.verification.fused,
        };
        let mask = T::from_f64_round(report.scale.mask);
        let mut bad = vec![false; shape.elements()];
        // Every logged answer: the probes at the scale the tree was built with (a first
        // attempt at narrower masks was discarded by the engine) and every input the
        // engine called with (in all elements at once).
        let mut primary: Vec<Option<u64>> = vec![None; rec.sources.len()];
        for call in &rec.log {
            for (e, src, got) in call.answers(shape.outputs) {
                let source = &rec.sources[src as usize];
                if let Source::Probe { background, .. } = source {
                    if rec.masks[*background as usize] != mask {
                        continue;
                    }
                }
                let exps = source_exponents(source, R::Input::FORMAT);
                let exps = exps.as_deref();
                let want = *primary[src as usize].get_or_insert_with(|| {
                    model.primary(&rec.source_input(source), exps).to_bits_u64()
                });
                if got.to_bits_u64() != want
                    && !model.predicts(&rec.source_input(source), exps, got)
                {
                    bad[e] = true;
                }
            }
        }
        // Seeded random operands, a row of A per lane and a column of B per output:
        // every element sums products of its own.
        for c in 0..self.checks {
            let seed = self.seed ^ 0xC4EC_0000 ^ ((c as u64) << 40);
            let rows: Vec<Vec<R::Input>> = (0..shape.lanes)
                .map(|i| {
                    random_operands::<R::Input>(seed ^ ((i as u64) << 20), shape.k, T::FORMAT).0
                })
                .collect();
            let columns = if rec.per_column { shape.outputs } else { 1 };
            let cols: Vec<Vec<R::Input>> = (0..columns)
                .map(|j| {
                    random_operands::<R::Input>(seed ^ ((j as u64) << 20), shape.k, T::FORMAT).1
                })
                .collect();
            let col_of: Vec<usize> = (0..shape.outputs).map(|j| j.min(columns - 1)).collect();
            let row_of: Vec<usize> = (0..shape.lanes).collect();
            rec.eval_split(&rows, &row_of, &cols, &col_of)
                .map_err(target_error)?;
            for (i, a) in rows.iter().enumerate() {
                for (o, &j) in col_of.iter().enumerate() {
                    let src = Source::Drawn {
                        a: a.iter().map(|v| v.to_f64()).collect(),
                        b: cols[j].iter().map(|v| v.to_f64()).collect(),
                    };
                    let x = exact_products(&src)?;
                    let exps = source_exponents(&src, R::Input::FORMAT);
                    let e = i * shape.outputs + o;
                    if !model.predicts(&x, exps.as_deref(), rec.out[e]) {
                        bad[e] = true;
                    }
                }
            }
        }
        // Determinism: the first logged call again must give the same bits everywhere.
        if let (Some(first), Some(before)) = (rec.log.first().cloned(), rec.first_out.take()) {
            let cols = first.cols.clone().unwrap_or_default();
            rec.eval_sources_split(first.rows.clone(), cols)
                .map_err(target_error)?;
            let after = rec.out.clone();
            if let Some(e) =
                (0..after.len()).find(|&e| before[e].to_bits_u64() != after[e].to_bits_u64())
            {
                let (lane, o) = (e / shape.outputs, e % shape.outputs);
                let src = match first.source(lane, o) {
                    Some(s) => rec.sources[s as usize].clone(),
                    None => Source::Vector(Vec::new()),
                };
                return Err(nondeterministic(
                    &src,
                    &rec.backgrounds,
                    before[e],
                    after[e],
                ));
            }
        }
        Ok((tree, bad))
    }

    /// Every lane answers the same probe; returns the tree of `pending[0]` and which of
    /// `pending` answered every question exactly as it did.
    ///
    /// With `verify`, the engine verifies its tree, fitting a block-FMA model to a tree
    /// with truncating fused nodes; without it, a tree with a fused node that plain
    /// replays miss is revealed again with `verify` (Tensor Core adders over operands
    /// that need no spreading: f16, FP8 at small `k`).
    fn exhaustive<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
        pending: &[usize],
        verify: bool,
    ) -> Result<(SumTree, Vec<bool>), RevealError> {
        let shape = rec.shape;
        let verify = verify || self.verify;
        rec.mode = RecordMode::Broadcast {
            reference: pending[0],
        };
        rec.tracked = pending.to_vec();
        rec.hashes = vec![0; pending.len()];
        rec.log.clear();
        rec.sources.clear();
        rec.first_broadcast = None;
        // with operands spread, every probe is one call (all rows one probe's first
        // operand, all columns its second)
        let per_call = if rec.spread { 1 } else { shape.lanes };
        let report = self.engine(shape, per_call, verify).run_target(&mut *rec)?;
        let tree = report.tree;
        let model = Model {
            tree: &tree,
            fused: report.verification.fused,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0xB40A_DCA5);
        for c in 0..self.checks.max(1) {
            let (got, x, exps) = if rec.spread {
                let seed = self.seed ^ 0xB40A_DCA5 ^ ((c as u64) << 40);
                let (a, b) = random_operands::<R::Input>(seed, shape.k, T::FORMAT);
                let src = Source::Drawn {
                    a: a.iter().map(|v| v.to_f64()).collect(),
                    b: b.iter().map(|v| v.to_f64()).collect(),
                };
                let x = exact_products(&src)?;
                let exps = source_exponents(&src, R::Input::FORMAT);
                (rec.broadcast_split(src).map_err(target_error)?, x, exps)
            } else {
                let x: Vec<T> = random_input::<T, R::Input>(shape.k, &mut rng);
                (rec.call(&x).map_err(target_error)?, x, None)
            };
            if !model.predicts(&x, exps.as_deref(), got) {
                let n = tree.leaf_count();
                let fused = (n..n + tree.inner_count()).any(|v| tree.children(v).len() > 2);
                if !verify && fused {
                    return self.exhaustive(rec, pending, true);
                }
                let want = model.primary(&x, exps.as_deref());
                return Err(RevealError::NotPlainSummation {
                    tree: clip(tree.to_string()),
                    input_seed: self.seed,
                    target_bits: got.to_bits_u64(),
                    tree_bits: want.to_bits_u64(),
                });
            }
        }
        if let Some((src, before)) = rec.first_broadcast.take() {
            match &src {
                Source::Vector(x) if !rec.spread => rec.broadcast(x).map(|_| ()),
                _ => rec.broadcast_split(src.clone()).map(|_| ()),
            }
            .map_err(target_error)?;
            if let Some(e) =
                (0..before.len()).find(|&e| before[e].to_bits_u64() != rec.out[e].to_bits_u64())
            {
                let after = rec.out[e];
                return Err(nondeterministic(&src, &rec.backgrounds, before[e], after));
            }
        }
        let reference = rec.hashes[0];
        Ok((tree, rec.hashes.iter().map(|&h| h == reference).collect()))
    }
}

fn clip(mut s: String) -> String {
    if s.len() > 200 {
        s.truncate(200);
        s.push_str("...");
    }
    s
}

fn target_error(e: TargetError) -> RevealError {
    RevealError::Target {
        probe: e.probe,
        message: e.message,
    }
}

/// Errors that mixed lanes can cause, so an exhaustive retry may succeed.
fn recoverable(e: &RevealError) -> bool {
    matches!(
        e,
        RevealError::Inconsistent { .. }
            | RevealError::OutOfRange { .. }
            | RevealError::NotPlainSummation { .. }
            | RevealError::Nondeterministic { .. }
            | RevealError::PrecisionTooLow { .. }
            | RevealError::FusedUnverified { .. }
            | RevealError::Indistinguishable { .. }
    )
}

fn nondeterministic<T: ProbeFloat>(
    src: &Source<T>,
    backgrounds: &[Vec<T>],
    a: T,
    b: T,
) -> RevealError {
    match src {
        Source::Probe { background, probe } => {
            probe_nondeterministic(&backgrounds[*background as usize], *probe, a, b)
        }
        Source::Vector(_) | Source::Drawn { .. } => RevealError::Nondeterministic {
            probe: Probe { plus: 0, minus: 0 },
            first: a.to_bits_u64(),
            second: b.to_bits_u64(),
        },
    }
}

/// Two answers to one probe over background `bg`, as units lost.
fn probe_nondeterministic<T: ProbeFloat>(bg: &[T], probe: Probe, a: T, b: T) -> RevealError {
    let unit = bg
        .iter()
        .map(|v| v.to_f64())
        .find(|&v| v != 0.0)
        .unwrap_or(1.0);
    let units = bg.iter().filter(|v| v.to_f64() != 0.0).count() as f64;
    let lost = |v: T| (units - v.to_f64() / unit).max(0.0) as u64;
    RevealError::Nondeterministic {
        probe,
        first: lost(a),
        second: lost(b),
    }
}

/// A hash of an input's bits, to recognise an input asked again.
fn input_hash<T: ProbeFloat>(x: &[T]) -> u64 {
    x.iter().fold(0x243F_6A88_85A3_08D3, |h, v| {
        (h ^ v.to_bits_u64())
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(31)
    })
}

/// Random values exact in the operand format whose sums stay finite in `T`.
fn random_input<T: ProbeFloat, I: ProbeFloat>(k: usize, rng: &mut ChaCha8Rng) -> Vec<T> {
    let (i, t): (FloatFormat, FloatFormat) = (I::FORMAT, T::FORMAT);
    let headroom = (usize::BITS - k.leading_zeros()) as i32 + 2;
    let top = (i.max_exp.min(t.max_exp) - headroom).min(t.precision as i32);
    let spread = (t.precision as i32 + 2).min(top - i.min_exp).max(1);
    (0..k)
        .map(|_| {
            let e = top - draw::range_i32(rng, 0, spread);
            let m: f64 = 1.0 + draw::unit_f64(rng);
            let sign = if draw::coin(rng) { -1.0 } else { 1.0 };
            let x: I = I::from_f64_round(sign * m * 2f64.powi(e));
            convert(x)
        })
        .collect()
}

/// What one lane held in one call.
#[derive(Clone, Debug)]
enum Source<T> {
    Probe {
        background: u32,
        probe: Probe,
    },
    Vector(Vec<T>),
    /// Random operands (exact in `f64`) whose products are the input.
    Drawn {
        a: Vec<f64>,
        b: Vec<f64>,
    },
}

/// The operand exponent sums of a [`Source::Drawn`]'s products (operands of `fmt`),
/// which a fused model aligns them by; `None` for any other source.
fn source_exponents<T>(src: &Source<T>, fmt: FloatFormat) -> Option<Vec<i32>> {
    match src {
        Source::Drawn { a, b } => Some(crate::target::exponent_sums(a, b, fmt)),
        _ => None,
    }
}

/// The products of a [`Source::Drawn`] (the values of any other source), or an error
/// if one is not exact in `T`.
fn exact_products<T: ProbeFloat>(src: &Source<T>) -> Result<Vec<T>, RevealError> {
    let Source::Drawn { a, b } = src else {
        return Err(RevealError::Target {
            probe: None,
            message: "internal: products of a source without operands".into(),
        });
    };
    a.iter()
        .zip(b)
        .map(|(p, q)| {
            let v = T::from_f64_round(p * q);
            if v.to_f64() == p * q {
                Ok(v)
            } else {
                Err(RevealError::Target {
                    probe: None,
                    message: format!(
                        "random operands {p} x {q} have no exact product in {}",
                        T::FORMAT.name
                    ),
                })
            }
        })
        .collect()
}

/// What a revealed tree predicts for an input: its plain replay, or for a tree with
/// truncating fused nodes its replay under the block-FMA models the engine fitted to
/// its random inputs (every alignment width from the narrowest fit to the widest, which
/// agreed on all of them).
struct Model<'t> {
    tree: &'t SumTree,
    fused: Option<FittedFused>,
}

impl Model<'_> {
    /// The prediction: the plain replay, or under the narrowest fitted model (`exps`:
    /// the products' operand exponent sums, when the input was drawn as operands).
    fn primary<T: ProbeFloat>(&self, x: &[T], exps: Option<&[i32]>) -> T {
        match self.fused {
            None => self.tree.replay(x),
            Some(f) => fit::replay(f, self.tree, x, exps),
        }
    }

    /// Whether `got` is what the tree gives for `x` (under some fitted width).
    fn predicts<T: ProbeFloat>(&self, x: &[T], exps: Option<&[i32]>, got: T) -> bool {
        let same = |v: T| v.to_bits_u64() == got.to_bits_u64();
        match self.fused {
            None => same(self.tree.replay(x)),
            Some(f) => (f.frac..=f.frac_max.max(f.frac))
                .any(|frac| same(fit::replay(FittedFused { frac, ..f }, self.tree, x, exps))),
        }
    }
}

/// One logged call: the source of each row (lane) and, with operands spread, of each
/// column of `B`; element `(i, j)` answered source `s` when row `i` held `s` and,
/// with operands spread, column `j` held it too. `out` holds the answers of the
/// elements that answered a source, in row-major order (every element without
/// spreading; with it, only the matched ones: a probe call of a large gemm answers a
/// few hundred of its elements).
#[derive(Clone, Debug)]
struct Logged<T> {
    rows: Vec<u32>,
    cols: Option<Vec<u32>>,
    out: Vec<T>,
}

impl<T: Copy> Logged<T> {
    /// `(element, source, answer)` of every element that answered a source.
    fn answers(&self, outputs: usize) -> impl Iterator<Item = (usize, u32, T)> + '_ {
        (0..self.rows.len() * outputs)
            .filter_map(move |e| self.source(e / outputs, e % outputs).map(|s| (e, s)))
            .zip(self.out.iter().copied())
            .map(|((e, s), v)| (e, s, v))
    }

    fn source(&self, lane: usize, output: usize) -> Option<u32> {
        let r = self.rows[lane];
        match &self.cols {
            None => Some(r),
            Some(c) => (c[output] == r).then_some(r),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum RecordMode {
    Spread,
    Broadcast { reference: usize },
}

/// The reduction as a target that records what every element answered.
struct Recorder<'r, T: ProbeFloat, R: Reduction<T>> {
    op: &'r mut R,
    shape: Shape,
    mode: RecordMode,
    input: Vec<R::Input>,
    out: Vec<T>,
    calls: u64,
    probes: u64,
    /// Masks and units over both operands of the products: every probe needs a row of
    /// `A` and a column of `B` of its own.
    spread: bool,
    /// With operands spread: the operation takes a second operand per output
    /// ([`Reduction::eval_columns`]), else one for all outputs.
    per_column: bool,
    /// With operands spread: `B`, `k x outputs` (or `k` values shared by all outputs).
    second: Vec<R::Input>,
    drawn: DrawnOperands<R::Input>,
    // spread mode: per call, the source of each lane (and column) and all outputs
    sources: Vec<Source<T>>,
    backgrounds: Vec<Vec<T>>,
    masks: Vec<T>,
    log: Vec<Logged<T>>,
    /// Every answer of the first call logged with operands spread (the log keeps only
    /// the matched ones), for the determinism re-call.
    first_out: Option<Vec<T>>,
    // broadcast mode: a running hash of every tracked element's answers
    tracked: Vec<usize>,
    hashes: Vec<u64>,
    first_broadcast: Option<(Source<T>, Vec<T>)>,
    /// With operands spread: the answer each element gave to each input it was asked
    /// (by the input's hash), and the first input one element answered twice
    /// differently. A probe asked again is the one sure sign of a nondeterministic
    /// operation, which would otherwise show as a tree no shape explains.
    answered: std::collections::HashMap<(u64, usize), u64>,
    nondeterminism: Option<RevealError>,
    on_call: Option<OnCall>,
}

impl<'r, T: ProbeFloat, R: Reduction<T>> Recorder<'r, T, R> {
    fn new(op: &'r mut R, spread: bool) -> Self {
        let shape = op.shape();
        Recorder {
            op,
            shape,
            mode: RecordMode::Spread,
            input: Vec::new(),
            out: Vec::new(),
            calls: 0,
            probes: 0,
            spread,
            per_column: shape.outputs == 1 || R::COLUMNS,
            second: Vec::new(),
            drawn: DrawnOperands::default(),
            sources: Vec::new(),
            backgrounds: Vec::new(),
            masks: Vec::new(),
            log: Vec::new(),
            first_out: None,
            tracked: Vec::new(),
            hashes: Vec::new(),
            first_broadcast: None,
            answered: std::collections::HashMap::new(),
            nondeterminism: None,
            on_call: None,
        }
    }

    /// Operands spread: note that `element` answered `got` to input `x`; a different
    /// answer to the same input earlier is kept as the nondeterminism to report.
    fn note(&mut self, x: &[T], element: usize, got: T, probe: Option<(&[T], Probe)>) {
        if !self.spread || self.nondeterminism.is_some() {
            return;
        }
        let key = (input_hash(x), element);
        let bits = got.to_bits_u64();
        match self.answered.get(&key) {
            None => {
                self.answered.insert(key, bits);
            }
            Some(&before) if before == bits => {}
            Some(&before) => {
                let first = T::from_bits_u64(before);
                self.nondeterminism = Some(match probe {
                    Some((bg, p)) => probe_nondeterministic(bg, p, first, got),
                    None => RevealError::Nondeterministic {
                        probe: Probe { plus: 0, minus: 0 },
                        first: before,
                        second: bits,
                    },
                });
            }
        }
    }

    /// Probes one call answers in spread mode: one per lane, or with operands spread one
    /// per row-and-column pair of a matching.
    fn per_call(&self) -> usize {
        let s = self.shape;
        match (self.spread, self.per_column) {
            (false, _) => s.lanes.max(1),
            (true, true) => s.lanes.min(s.outputs).max(1),
            (true, false) => 1,
        }
    }

    fn eval(&mut self) -> Result<(), TargetError> {
        self.out.clear();
        self.out.resize(self.shape.elements(), T::ZERO);
        self.calls += 1;
        let r = self.op.eval(&self.input, &mut self.out);
        if let Some(OnCall(f)) = &self.on_call {
            f(self.calls);
        }
        r
    }

    /// Operands spread: one call with row `i` of `A` set to `a[rows[i]]` and column `j`
    /// of `B` to `b[cols[j]]` (without per-column operands every `cols[j]` is the same).
    fn eval_split(
        &mut self,
        a: &[Vec<R::Input>],
        rows: &[usize],
        b: &[Vec<R::Input>],
        cols: &[usize],
    ) -> Result<(), TargetError> {
        let s = self.shape;
        self.input.clear();
        for &r in rows {
            self.input.extend_from_slice(&a[r]);
        }
        self.second.clear();
        if self.per_column {
            self.second.resize(s.k * s.outputs, R::Input::ZERO);
            for (j, &c) in cols.iter().enumerate() {
                for (l, &v) in b[c].iter().enumerate() {
                    self.second[l * s.outputs + j] = v;
                }
            }
        } else if let Some(&c) = cols.first() {
            self.second.extend_from_slice(&b[c]);
        }
        self.out.clear();
        self.out.resize(s.elements(), T::ZERO);
        self.calls += 1;
        let r = if self.per_column {
            self.op
                .eval_columns(&self.input, &self.second, &mut self.out)
        } else {
            self.op
                .eval_operands(&self.input, &self.second, &mut self.out)
        };
        if let Some(OnCall(f)) = &self.on_call {
            f(self.calls);
        }
        r.unwrap_or_else(|| Err(TargetError::new("the operation has no second operand")))
    }

    /// The two operands of a source's values.
    fn operands(&self, src: &Source<T>) -> Result<Operands<R::Input>, TargetError> {
        match src {
            Source::Drawn { a, b } => Ok((
                a.iter().map(|&v| R::Input::from_f64_round(v)).collect(),
                b.iter().map(|&v| R::Input::from_f64_round(v)).collect(),
            )),
            _ => split_operands(&self.source_input(src)),
        }
    }

    /// Operands spread: one call with row `i` holding source `rows[i]`'s first operand
    /// and column `j` source `cols[j]`'s second, logged.
    fn eval_sources_split(&mut self, rows: Vec<u32>, cols: Vec<u32>) -> Result<(), TargetError> {
        let mut ids: Vec<u32> = rows.iter().chain(&cols).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let (mut a, mut b) = (Vec::with_capacity(ids.len()), Vec::with_capacity(ids.len()));
        for &id in &ids {
            let (p, q) = self.operands(&self.sources[id as usize])?;
            a.push(p);
            b.push(q);
        }
        let at = |id: &u32| ids.partition_point(|&x| x < *id);
        let row_of: Vec<usize> = rows.iter().map(at).collect();
        let col_of: Vec<usize> = cols.iter().map(at).collect();
        self.eval_split(&a, &row_of, &b, &col_of)?;
        let outputs = self.shape.outputs;
        let mut call = Logged {
            rows,
            cols: Some(cols),
            out: Vec::new(),
        };
        call.out = (0..self.out.len())
            .filter(|&e| call.source(e / outputs, e % outputs).is_some())
            .map(|e| self.out[e])
            .collect();
        if self.log.is_empty() {
            self.first_out = Some(self.out.clone());
        }
        self.log.push(call);
        Ok(())
    }

    /// The source of an input the engine calls with: its drawn operands when it drew
    /// it, else its values (split into operands when the call is made).
    fn source_of_call(&mut self, x: &[T]) -> Source<T> {
        match self.drawn.take(x) {
            Some((a, b)) => Source::Drawn {
                a: a.iter().map(|v| v.to_f64()).collect(),
                b: b.iter().map(|v| v.to_f64()).collect(),
            },
            None => Source::Vector(x.to_vec()),
        }
    }

    fn background_id(&mut self, bg: &[T], mask: T) -> u32 {
        if self.backgrounds.last().map(|b| b.as_slice()) != Some(bg)
            || self.masks.last() != Some(&mask)
        {
            self.backgrounds.push(bg.to_vec());
            self.masks.push(mask);
        }
        (self.backgrounds.len() - 1) as u32
    }

    fn push_source(&mut self, src: Source<T>) {
        match &src {
            Source::Probe { background, probe } => {
                let bg = &self.backgrounds[*background as usize];
                let mask: R::Input = convert(self.masks[*background as usize]);
                let neg: R::Input =
                    convert::<f64, R::Input>(-self.masks[*background as usize].to_f64());
                let start = self.input.len();
                self.input
                    .extend(bg.iter().map(|&v| convert::<T, R::Input>(v)));
                self.input[start + probe.plus] = mask;
                self.input[start + probe.minus] = neg;
            }
            Source::Vector(x) => self
                .input
                .extend(x.iter().map(|&v| convert::<T, R::Input>(v))),
            Source::Drawn { a, .. } => self
                .input
                .extend(a.iter().map(|&v| convert::<f64, R::Input>(v))),
        }
    }

    /// Spread mode: one call with the given source in each lane, logged.
    fn eval_sources(&mut self, lanes: Vec<u32>) -> Result<(), TargetError> {
        self.input.clear();
        for &s in &lanes {
            let src = self.sources[s as usize].clone();
            self.push_source(src);
        }
        self.eval()?;
        self.log.push(Logged {
            rows: lanes,
            cols: None,
            out: self.out.clone(),
        });
        Ok(())
    }

    /// Broadcast mode: `x` in every lane, every tracked element's answer hashed.
    fn broadcast(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.input.clear();
        for _ in 0..self.shape.lanes {
            self.input
                .extend(x.iter().map(|&v| convert::<T, R::Input>(v)));
        }
        self.eval()?;
        if self.first_broadcast.is_none() {
            self.first_broadcast = Some((Source::Vector(x.to_vec()), self.out.clone()));
        }
        Ok(self.hash_answers())
    }

    /// Broadcast mode with operands spread: the source's first operand in every row, its
    /// second in every column, every tracked element's answer hashed.
    fn broadcast_split(&mut self, src: Source<T>) -> Result<T, TargetError> {
        let (a, b) = self.operands(&src)?;
        let rows = vec![0; self.shape.lanes];
        let cols = vec![0; self.shape.outputs];
        self.eval_split(&[a], &rows, &[b], &cols)?;
        if self.first_broadcast.is_none() {
            self.first_broadcast = Some((src, self.out.clone()));
        }
        Ok(self.hash_answers())
    }

    /// Fold the last call's answers into the tracked elements' hashes; the reference
    /// element's answer.
    fn hash_answers(&mut self) -> T {
        for (h, &e) in self.hashes.iter_mut().zip(&self.tracked) {
            *h = (*h ^ self.out[e].to_bits_u64())
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(29);
        }
        let RecordMode::Broadcast { reference } = self.mode else {
            return self.out[0];
        };
        self.out[reference]
    }

    /// What a lane held, masks included (for the replay check).
    fn source_input(&self, src: &Source<T>) -> Vec<T> {
        match src {
            Source::Probe { background, probe } => {
                let mut x = self.backgrounds[*background as usize].clone();
                let m = self.masks[*background as usize];
                x[probe.plus] = m;
                x[probe.minus] = T::from_f64_round(-m.to_f64());
                x
            }
            Source::Vector(x) => x.clone(),
            Source::Drawn { a, b } => a
                .iter()
                .zip(b)
                .map(|(p, q)| T::from_f64_round(p * q))
                .collect(),
        }
    }
}

impl<T: ProbeFloat, R: Reduction<T>> Target<T> for Recorder<'_, T, R> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        match self.mode {
            RecordMode::Broadcast { .. } if self.spread => {
                let src = self.source_of_call(x);
                let got = self.broadcast_split(src)?;
                let RecordMode::Broadcast { reference } = self.mode else {
                    return Ok(got);
                };
                self.note(x, reference, got, None);
                Ok(got)
            }
            RecordMode::Broadcast { .. } => self.broadcast(x),
            RecordMode::Spread => {
                let src = if self.spread {
                    self.source_of_call(x)
                } else {
                    Source::Vector(x.to_vec())
                };
                self.sources.push(src);
                let id = (self.sources.len() - 1) as u32;
                if self.spread {
                    let outputs = self.shape.outputs;
                    self.eval_sources_split(vec![id; self.shape.lanes], vec![id; outputs])?;
                    let got = self.out[0];
                    self.note(x, 0, got, None);
                } else {
                    self.eval_sources(vec![id; self.shape.lanes])?;
                }
                Ok(self.out[0])
            }
        }
    }

    fn input_format(&self) -> Option<FloatFormat> {
        if self.spread {
            return Some(R::Input::FORMAT.product());
        }
        (R::Input::FORMAT != T::FORMAT).then_some(R::Input::FORMAT)
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        self.spread.then_some(R::Input::FORMAT)
    }

    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        if !self.spread {
            return false;
        }
        let (a, b) = random_operands::<R::Input>(seed, x.len(), T::FORMAT);
        self.drawn.fill(x, a, b, |v| v.to_f64())
    }

    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        let (a, b) = self.drawn.peek(x)?;
        let a: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let b: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        Some(crate::target::exponent_sums(&a, &b, R::Input::FORMAT))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        self.probes += batch.probes.len() as u64;
        match self.mode {
            RecordMode::Broadcast { .. } => {
                let mut x = Vec::new();
                for (k, &p) in batch.probes.iter().enumerate() {
                    batch.fill(k, &mut x);
                    let answer = if self.spread {
                        self.broadcast_split(Source::Vector(x.clone()))
                    } else {
                        self.broadcast(&x)
                    };
                    out[k] = answer.map_err(|mut e| {
                        e.probe.get_or_insert(p);
                        e
                    })?;
                    if let (true, RecordMode::Broadcast { reference }) = (self.spread, self.mode) {
                        self.note(&x, reference, out[k], Some((batch.background, p)));
                    }
                }
                Ok(())
            }
            RecordMode::Spread => {
                let bg = self.background_id(batch.background, batch.mask);
                let per_call = self.per_call();
                let (lanes, outputs) = (self.shape.lanes, self.shape.outputs);
                for (chunk_no, chunk) in batch.probes.chunks(per_call).enumerate() {
                    let first = self.sources.len() as u32;
                    for &probe in chunk {
                        self.sources.push(Source::Probe {
                            background: bg,
                            probe,
                        });
                    }
                    let len = chunk.len();
                    let rows: Vec<u32> = (0..lanes).map(|l| first + (l % len) as u32).collect();
                    let done = if self.spread {
                        // probe t in row t and column t; spare rows and columns repeat
                        let cols = (0..outputs).map(|j| first + (j % len) as u32).collect();
                        self.eval_sources_split(rows, cols)
                    } else {
                        self.eval_sources(rows)
                    };
                    done.map_err(|mut e| {
                        e.probe.get_or_insert(chunk[0]);
                        e
                    })?;
                    for k in 0..len {
                        // element (k, k) with operands spread, (k, 0) otherwise
                        let o = if self.spread { k } else { 0 };
                        let got = self.out[k * outputs + o];
                        out[chunk_no * per_call + k] = got;
                        if self.spread {
                            let x = self.source_input(&self.sources[first as usize + k]);
                            self.note(&x, k * outputs + o, got, Some((batch.background, chunk[k])));
                        }
                    }
                }
                Ok(())
            }
        }
    }
}
