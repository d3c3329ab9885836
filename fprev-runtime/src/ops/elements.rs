//! The summation order of every output element of a k-reduction, grouped by tree.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::{convert, Reduction, Shape};
use crate::draw;
use crate::float::{FloatFormat, ProbeFloat};
use crate::reveal::{Algorithm, Pivot, Reveal, RevealError};
use crate::target::{Probe, ProbeBatch, Target, TargetError};
use crate::tree::SumTree;

/// How the lanes of one call are used while revealing.
///
/// ```
/// use fprev::ops::{Coverage, ElementReveal};
/// let r = ElementReveal::new().coverage(Coverage::Exhaustive);
/// # let _ = r;
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Coverage {
    /// One probe per lane per call, then every element's answers and two seeded
    /// random inputs per lane are checked against the tree (the default: a gemm of size
    /// 512 in about 5 calls). Elements that disagree are revealed again exhaustively.
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
/// Defaults: [`Coverage::Batched`], FPRev (pivots: see [`pivot`](Self::pivot)), seed 0,
/// two random check calls, at most 16 distinct orders.
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
    coverage: Coverage,
    algorithm: Algorithm,
    pivot: Option<Pivot>,
    seed: u64,
    accept_flat: bool,
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
            coverage: Coverage::Batched,
            algorithm: Algorithm::FPRev,
            pivot: None,
            seed: 0,
            accept_flat: false,
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

    /// How lanes are used (default [`Coverage::Batched`]).
    pub fn coverage(mut self, c: Coverage) -> Self {
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

    fn engine(&self, shape: Shape) -> Reveal {
        let k = shape.k;
        let pivot = self.pivot.unwrap_or(if shape.lanes > 1 {
            Pivot::Smallest
        } else {
            Pivot::Random
        });
        // Every element is checked below against its tree on random operand-format
        // inputs, which covers what the engine's replay of one element would.
        Reveal::new(k)
            .algorithm(self.algorithm)
            .pivot(pivot)
            .seed(self.seed)
            .accept_flat(self.accept_flat)
            .max_memory(self.max_memory)
            .verify(false)
    }

    /// Reveal every element's order.
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
        let mut rec = Recorder::new(&mut op);
        rec.on_call = self.on_call.clone();
        let all: Vec<usize> = (0..shape.elements()).collect();
        let mut groups: Vec<(SumTree, Vec<usize>)> = Vec::new();
        let mut pending = all;
        if self.coverage == Coverage::Batched {
            match self.batched(&mut rec) {
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
            let (tree, same) = self.exhaustive(&mut rec, &pending)?;
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
        })
    }

    /// Probes spread over lanes; returns the tree and which elements contradict it.
    fn batched<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
    ) -> Result<(SumTree, Vec<bool>), RevealError> {
        let shape = rec.shape;
        rec.mode = Mode::Spread;
        rec.log.clear();
        rec.sources.clear();
        let tree = self.engine(shape).run_target(&mut *rec)?.tree;
        let first = rec.log.first().cloned();
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
        for (lanes, out) in &rec.log {
            for (lane, &src) in lanes.iter().enumerate() {
                let want = expected[src as usize];
                for o in 0..shape.outputs {
                    let e = lane * shape.outputs + o;
                    if out[e].to_bits_u64() != want {
                        bad[e] = true;
                    }
                }
            }
        }
        // Determinism: the first call again must give the same bits everywhere.
        if let Some((lanes, before)) = first {
            rec.eval_sources(lanes.clone()).map_err(target_error)?;
            let after = &rec.log.last().map(|l| l.1.clone()).unwrap_or_default();
            if let Some(e) =
                (0..before.len()).find(|&e| before[e].to_bits_u64() != after[e].to_bits_u64())
            {
                let src = &rec.sources[lanes[e / shape.outputs] as usize];
                return Err(nondeterministic(src, &rec.backgrounds, before[e], after[e]));
            }
        }
        Ok((tree, bad))
    }

    /// Every lane answers the same probe; returns the tree of `pending[0]` and which of
    /// `pending` answered every question exactly as it did.
    fn exhaustive<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
        pending: &[usize],
    ) -> Result<(SumTree, Vec<bool>), RevealError> {
        let shape = rec.shape;
        rec.mode = Mode::Broadcast {
            reference: pending[0],
        };
        rec.tracked = pending.to_vec();
        rec.hashes = vec![0; pending.len()];
        rec.log.clear();
        rec.sources.clear();
        rec.first_broadcast = None;
        let tree = self.engine(shape).run_target(&mut *rec)?.tree;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0xB40A_DCA5);
        for _ in 0..self.checks.max(1) {
            let x: Vec<T> = random_input::<T, R::Input>(shape.k, &mut rng);
            let got = rec.call(&x).map_err(target_error)?;
            let want = tree.replay(&x);
            if got.to_bits_u64() != want.to_bits_u64() {
                return Err(RevealError::NotPlainSummation {
                    tree: clip(tree.to_string()),
                    input_seed: self.seed,
                    target_bits: got.to_bits_u64(),
                    tree_bits: want.to_bits_u64(),
                });
            }
        }
        if let Some((x, before)) = rec.first_broadcast.take() {
            rec.broadcast(&x).map_err(target_error)?;
            if let Some(e) =
                (0..before.len()).find(|&e| before[e].to_bits_u64() != rec.out[e].to_bits_u64())
            {
                let after = rec.out[e];
                return Err(nondeterministic(
                    &Source::Vector(x),
                    &rec.backgrounds,
                    before[e],
                    after,
                ));
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
            let bg = &backgrounds[*background as usize];
            let unit = bg
                .iter()
                .map(|v| v.to_f64())
                .find(|&v| v != 0.0)
                .unwrap_or(1.0);
            let units = bg.iter().filter(|v| v.to_f64() != 0.0).count() as f64;
            let lost = |v: T| (units - v.to_f64() / unit).max(0.0) as u64;
            RevealError::Nondeterministic {
                probe: *probe,
                first: lost(a),
                second: lost(b),
            }
        }
        Source::Vector(_) => RevealError::Nondeterministic {
            probe: Probe { plus: 0, minus: 0 },
            first: a.to_bits_u64(),
            second: b.to_bits_u64(),
        },
    }
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
    Probe { background: u32, probe: Probe },
    Vector(Vec<T>),
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Spread,
    Broadcast { reference: usize },
}

/// The reduction as a target that records what every element answered.
struct Recorder<'r, T: ProbeFloat, R: Reduction<T>> {
    op: &'r mut R,
    shape: Shape,
    mode: Mode,
    input: Vec<R::Input>,
    out: Vec<T>,
    calls: u64,
    probes: u64,
    // spread mode: per call, the source of each lane and all outputs
    sources: Vec<Source<T>>,
    backgrounds: Vec<Vec<T>>,
    masks: Vec<T>,
    log: Vec<(Vec<u32>, Vec<T>)>,
    // broadcast mode: a running hash of every tracked element's answers
    tracked: Vec<usize>,
    hashes: Vec<u64>,
    first_broadcast: Option<(Vec<T>, Vec<T>)>,
    on_call: Option<OnCall>,
}

impl<'r, T: ProbeFloat, R: Reduction<T>> Recorder<'r, T, R> {
    fn new(op: &'r mut R) -> Self {
        let shape = op.shape();
        Recorder {
            op,
            shape,
            mode: Mode::Spread,
            input: Vec::new(),
            out: Vec::new(),
            calls: 0,
            probes: 0,
            sources: Vec::new(),
            backgrounds: Vec::new(),
            masks: Vec::new(),
            log: Vec::new(),
            tracked: Vec::new(),
            hashes: Vec::new(),
            first_broadcast: None,
            on_call: None,
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
        self.log.push((lanes, self.out.clone()));
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
        for (h, &e) in self.hashes.iter_mut().zip(&self.tracked) {
            *h = (*h ^ self.out[e].to_bits_u64())
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .rotate_left(29);
        }
        if self.first_broadcast.is_none() {
            self.first_broadcast = Some((x.to_vec(), self.out.clone()));
        }
        let Mode::Broadcast { reference } = self.mode else {
            return Ok(self.out[0]);
        };
        Ok(self.out[reference])
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
        }
    }
}

impl<T: ProbeFloat, R: Reduction<T>> Target<T> for Recorder<'_, T, R> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        match self.mode {
            Mode::Broadcast { .. } => self.broadcast(x),
            Mode::Spread => {
                self.sources.push(Source::Vector(x.to_vec()));
                let id = (self.sources.len() - 1) as u32;
                self.eval_sources(vec![id; self.shape.lanes])?;
                Ok(self.out[0])
            }
        }
    }

    fn input_format(&self) -> Option<FloatFormat> {
        (R::Input::FORMAT != T::FORMAT).then_some(R::Input::FORMAT)
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        self.probes += batch.probes.len() as u64;
        match self.mode {
            Mode::Broadcast { .. } => {
                let mut x = Vec::new();
                for (k, &p) in batch.probes.iter().enumerate() {
                    batch.fill(k, &mut x);
                    out[k] = self.broadcast(&x).map_err(|mut e| {
                        e.probe.get_or_insert(p);
                        e
                    })?;
                }
                Ok(())
            }
            Mode::Spread => {
                let bg = self.background_id(batch.background, batch.mask);
                let lanes = self.shape.lanes.max(1);
                for (chunk_no, chunk) in batch.probes.chunks(lanes).enumerate() {
                    let first = self.sources.len() as u32;
                    for &probe in chunk {
                        self.sources.push(Source::Probe {
                            background: bg,
                            probe,
                        });
                    }
                    let ids: Vec<u32> = (0..self.shape.lanes)
                        .map(|l| first + (l % chunk.len()) as u32)
                        .collect();
                    self.eval_sources(ids).map_err(|mut e| {
                        e.probe.get_or_insert(chunk[0]);
                        e
                    })?;
                    for k in 0..chunk.len() {
                        out[chunk_no * lanes + k] = self.out[k * self.shape.outputs];
                    }
                }
                Ok(())
            }
        }
    }
}
