//! dot, gemv, gemm and user k-reductions as [`Reduction`]s, and [`Batched`], which makes
//! any reduction a [`Target`] answering one probe per lane per call.

use super::{convert, Reduction, ReductionShape};
use crate::black_box::{OperandSplit, ProbeBatch, ProbeSets, Target, TargetError};
use crate::float::{FloatFormat, ProbeFloat, ProbeScale};
use std::marker::PhantomData;

fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, TargetError> {
    crate::black_box::caught("the operation", f)
}

/// A row-major `m x k` by `k x n` product; see [`gemm`].
pub struct GemmReduction<I, T, F> {
    shape: ReductionShape,
    ones: Vec<I>,
    f: F,
    _t: PhantomData<fn() -> T>,
}

/// A gemm `C = A B` as a reduction: `A` is `m x k`, `B` is `k x n`, `C` is `m x n`, all
/// row-major slices. The closure computes `C` (overwriting it) from `A` and `B`; fprev
/// puts probes in the rows of `A` and ones in `B`, so `C[i, j]` sums row `i` of `A` in
/// element `(i, j)`'s order.
///
/// ```
/// let g = fprev::ops::gemm(2, 3, 2, |a: &[f64], b: &[f64], c: &mut [f64]| {
///     for i in 0..2 { for j in 0..2 {
///         c[i * 2 + j] = (0..3).map(|l| a[i * 3 + l] * b[l * 2 + j]).sum();
///     } }
/// });
/// let t = fprev::ops::ElementReveal::new().run(g)?.groups[0].tree.clone();
/// assert_eq!(t.to_string(), "((0+1)+2)");
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn gemm<I, T, F>(m: usize, k: usize, n: usize, f: F) -> GemmReduction<I, T, F>
where
    I: ProbeFloat,
    T: ProbeFloat,
    F: FnMut(&[I], &[I], &mut [T]),
{
    GemmReduction {
        shape: ReductionShape {
            lanes: m,
            k,
            outputs: n,
        },
        ones: vec![convert::<f64, I>(1.0); k * n],
        f,
        _t: PhantomData,
    }
}

impl<I: ProbeFloat, T: ProbeFloat, F: FnMut(&[I], &[I], &mut [T])> Reduction<T>
    for GemmReduction<I, T, F>
{
    type Input = I;
    fn shape(&self) -> ReductionShape {
        self.shape
    }
    fn eval(&mut self, a: &[I], c: &mut [T]) -> Result<(), TargetError> {
        let (ones, f) = (&self.ones, &mut self.f);
        guarded(|| f(a, ones, c))
    }
    const OPERANDS: bool = true;
    fn eval_operands(&mut self, a: &[I], b: &[I], c: &mut [T]) -> Option<Result<(), TargetError>> {
        let cols = self.shape.outputs;
        // every column of B is `b`; `ones` is restored after the call
        for (l, &v) in b.iter().enumerate() {
            self.ones[l * cols..(l + 1) * cols].fill(v);
        }
        let (bm, f) = (&self.ones, &mut self.f);
        let r = guarded(|| f(a, bm, c));
        self.ones.fill(convert::<f64, I>(1.0));
        Some(r)
    }
    const COLUMNS: bool = true;
    fn eval_columns(&mut self, a: &[I], b: &[I], c: &mut [T]) -> Option<Result<(), TargetError>> {
        let f = &mut self.f;
        Some(guarded(|| f(a, b, c)))
    }
}

/// A matrix-vector product `y = A x`; see [`gemv`].
pub struct GemvReduction<I, T, F> {
    shape: ReductionShape,
    ones: Vec<I>,
    f: F,
    _t: PhantomData<fn() -> T>,
}

/// A gemv `y = A x` as a reduction: `A` is `m x k` row-major, `x` has `k` values, `y` has
/// `m`. Probes go in the rows of `A`, ones in `x`.
///
/// ```
/// let g = fprev::ops::gemv(3, 4, |a: &[f32], x: &[f32], y: &mut [f32]| {
///     for (row, yi) in a.chunks(4).zip(y.iter_mut()) {
///         *yi = row.iter().zip(x).fold(0.0, |s, (a, b)| s + a * b);
///     }
/// });
/// let o = fprev::ops::ElementReveal::new().run(g)?;
/// assert_eq!(o.groups[0].tree, fprev::SumTree::sequential(4));
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn gemv<I, T, F>(m: usize, k: usize, f: F) -> GemvReduction<I, T, F>
where
    I: ProbeFloat,
    T: ProbeFloat,
    F: FnMut(&[I], &[I], &mut [T]),
{
    GemvReduction {
        shape: ReductionShape {
            lanes: m,
            k,
            outputs: 1,
        },
        ones: vec![convert::<f64, I>(1.0); k],
        f,
        _t: PhantomData,
    }
}

impl<I: ProbeFloat, T: ProbeFloat, F: FnMut(&[I], &[I], &mut [T])> Reduction<T>
    for GemvReduction<I, T, F>
{
    type Input = I;
    fn shape(&self) -> ReductionShape {
        self.shape
    }
    fn eval(&mut self, a: &[I], y: &mut [T]) -> Result<(), TargetError> {
        let (ones, f) = (&self.ones, &mut self.f);
        guarded(|| f(a, ones, y))
    }
    const OPERANDS: bool = true;
    fn eval_operands(&mut self, a: &[I], x: &[I], y: &mut [T]) -> Option<Result<(), TargetError>> {
        let f = &mut self.f;
        Some(guarded(|| f(a, x, y)))
    }
}

/// A dot product; see [`dot`].
pub struct DotReduction<I, T, F> {
    shape: ReductionShape,
    ones: Vec<I>,
    f: F,
    _t: PhantomData<fn() -> T>,
}

/// A dot product `x . y` of `k` values as a reduction (one lane, one output): probes in
/// `x`, ones in `y`.
///
/// ```
/// let d = fprev::ops::dot(5, |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>());
/// let o = fprev::ops::ElementReveal::new().run(d)?;
/// assert_eq!(o.groups[0].tree, fprev::SumTree::sequential(5));
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn dot<I, T, F>(k: usize, f: F) -> DotReduction<I, T, F>
where
    I: ProbeFloat,
    T: ProbeFloat,
    F: FnMut(&[I], &[I]) -> T,
{
    DotReduction {
        shape: ReductionShape {
            lanes: 1,
            k,
            outputs: 1,
        },
        ones: vec![convert::<f64, I>(1.0); k],
        f,
        _t: PhantomData,
    }
}

impl<I: ProbeFloat, T: ProbeFloat, F: FnMut(&[I], &[I]) -> T> Reduction<T>
    for DotReduction<I, T, F>
{
    type Input = I;
    fn shape(&self) -> ReductionShape {
        self.shape
    }
    fn eval(&mut self, x: &[I], out: &mut [T]) -> Result<(), TargetError> {
        let (ones, f) = (&self.ones, &mut self.f);
        out[0] = guarded(|| f(x, ones))?;
        Ok(())
    }
    const OPERANDS: bool = true;
    fn eval_operands(
        &mut self,
        x: &[I],
        y: &[I],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        let f = &mut self.f;
        Some(guarded(|| f(x, y)).map(|v| out[0] = v))
    }
}

/// A user k-reduction; see [`reduction`].
pub struct KReduction<I, T, F> {
    shape: ReductionShape,
    f: F,
    _t: PhantomData<fn(I) -> T>,
}

/// Any operation that reduces `lanes` rows of `k` values into `outputs` results per row,
/// in one call: `f(input, out)` with `input` `lanes x k` and `out` `lanes x outputs`,
/// both row-major.
///
/// ```
/// // Every row summed twice: forward and backward.
/// let r = fprev::ops::reduction(2, 6, 2, |x: &[f64], out: &mut [f64]| {
///     for (row, o) in x.chunks(6).zip(out.chunks_mut(2)) {
///         o[0] = row.iter().fold(0.0, |s, v| s + v);
///         o[1] = row.iter().rev().fold(0.0, |s, v| s + v);
///     }
/// });
/// let orders = fprev::ops::ElementReveal::new().run(r)?;
/// assert_eq!(orders.groups.len(), 2);
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub fn reduction<I, T, F>(lanes: usize, k: usize, outputs: usize, f: F) -> KReduction<I, T, F>
where
    I: ProbeFloat,
    T: ProbeFloat,
    F: FnMut(&[I], &mut [T]),
{
    KReduction {
        shape: ReductionShape { lanes, k, outputs },
        f,
        _t: PhantomData,
    }
}

impl<I: ProbeFloat, T: ProbeFloat, F: FnMut(&[I], &mut [T])> Reduction<T> for KReduction<I, T, F> {
    type Input = I;
    fn shape(&self) -> ReductionShape {
        self.shape
    }
    fn eval(&mut self, x: &[I], out: &mut [T]) -> Result<(), TargetError> {
        let f = &mut self.f;
        guarded(|| f(x, out))
    }
}

/// The two operand vectors of a product's probe or replay input.
pub(super) type OperandPair<I> = (Vec<I>, Vec<I>);

/// Whether probes of a `k`-reduction `R` into `T` must spread masks and units over both
/// operands: a product whose operand format alone cannot swamp a sum of `k` units but
/// whose products reach further (FP8 operands; beyond the products' own reach too, where
/// the reveal goes on through a windowed prefix of them).
pub(super) fn spreads_operands<T: ProbeFloat, R: Reduction<T>>(k: usize) -> bool {
    let (operand, acc) = (R::Input::FORMAT, T::FORMAT);
    let reach = |fmt, k| ProbeScale::for_formats(fmt, acc, k).is_some();
    R::OPERANDS
        && !reach(operand, k)
        && (reach(operand.product(), k) || reach(operand.product(), 16))
}

/// `x` split into the two operands of its products (an error names the first value
/// that is no product of two operand values).
pub(super) fn split_operands<T: ProbeFloat, I: ProbeFloat>(
    x: &[T],
) -> Result<OperandPair<I>, TargetError> {
    let (mut a, mut b) = (Vec::with_capacity(x.len()), Vec::with_capacity(x.len()));
    crate::black_box::split_values(x, &mut a, &mut b)?;
    Ok((a, b))
}

/// A reduction as a [`Target`] for one output element: probe `k` of a batch goes into
/// lane `k`, so one call answers up to `lanes` probes; spare lanes repeat the batch. The
/// answer is read from output `output` of the probe's lane, so this assumes every lane
/// sums in the same order ([`ElementReveal`](super::ElementReveal) checks that).
///
/// Operands narrower than `T` (f16 into f32) are declared through
/// [`Target::input_format`]: masks, units and the engine's verification inputs are then
/// all exact in the operand format.
///
/// ```
/// use fprev::ops::{self, Batched};
/// let g = ops::gemv(64, 64, |a: &[f32], x: &[f32], y: &mut [f32]| {
///     for (row, yi) in a.chunks(64).zip(y.iter_mut()) {
///         *yi = row.iter().zip(x).fold(0.0, |s, (a, b)| s + a * b);
///     }
/// });
/// let mut t = Batched::new(g, 0);
/// let r = fprev::Reveal::new(64).pivot(fprev::reveal::Pivot::Smallest).run_target(&mut t)?;
/// assert_eq!(r.tree, fprev::SumTree::sequential(64));
/// assert!(t.calls() < r.probes);
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub struct Batched<T: ProbeFloat, R: Reduction<T>> {
    op: R,
    output: usize,
    input: Vec<R::Input>,
    out: Vec<T>,
    calls: u64,
    /// Masks and units spread over both operands, one probe per call: one operand's
    /// range cannot swamp a sum of `k` units, the product's can.
    spread: bool,
    split: OperandSplit<R::Input>,
    /// The operands of the last spread call.
    a: Vec<R::Input>,
    b: Vec<R::Input>,
}

impl<T: ProbeFloat, R: Reduction<T>> Batched<T, R> {
    /// Read output `output` (a column of `C`) of each lane; clamped to the last output.
    pub fn new(op: R, output: usize) -> Self {
        let s = op.shape();
        let spread = spreads_operands::<T, R>(s.k);
        Batched {
            op,
            output: output.min(s.outputs.saturating_sub(1)),
            input: Vec::new(),
            out: Vec::new(),
            calls: 0,
            spread,
            split: OperandSplit::default(),
            a: Vec::new(),
            b: Vec::new(),
        }
    }

    /// Whether masks and units go over both operands (one probe per call): true for a
    /// product whose operand format alone cannot swamp a sum of `k` units (FP8), false
    /// otherwise.
    ///
    /// ```
    /// use fprev::float::F8E4M3;
    /// let d = fprev::ops::dot(64, |x: &[F8E4M3], y: &[F8E4M3]| -> f32 {
    ///     x.iter().zip(y).fold(0.0, |s, (a, b)| s + (fprev::ProbeFloat::to_f64(*a) * fprev::ProbeFloat::to_f64(*b)) as f32)
    /// });
    /// let t = fprev::ops::Batched::new(d, 0);
    /// assert!(t.spreads_operands());
    /// ```
    pub fn spreads_operands(&self) -> bool {
        self.spread
    }

    /// One call with `self.a` in every lane and `self.b` as the second operand.
    fn eval_spread(&mut self) -> Result<(), TargetError> {
        let s = self.op.shape();
        self.input.clear();
        for _ in 0..s.lanes.max(1) {
            self.input.extend_from_slice(&self.a);
        }
        self.out.clear();
        self.out.resize(s.elements(), T::ZERO);
        self.calls += 1;
        match self.op.eval_operands(&self.input, &self.b, &mut self.out) {
            Some(r) => r,
            None => Err(TargetError::new("the operation has no second operand")),
        }
    }

    /// Calls of the underlying operation so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The wrapped operation.
    pub fn into_inner(self) -> R {
        self.op
    }

    fn eval(&mut self) -> Result<(), TargetError> {
        let s = self.op.shape();
        if s.elements() == 0 {
            return Err(TargetError::new(format!(
                "the operation has no outputs ({s})"
            )));
        }
        self.out.clear();
        self.out.resize(s.elements(), T::ZERO);
        self.calls += 1;
        self.op.eval(&self.input, &mut self.out)
    }

    /// `count` inputs a lane each, in as many calls as that takes: `fill(i, input)`
    /// appends input `i` (lanes past a call's last input repeat its inputs), and input
    /// `i`'s answer goes to `out[i]`. An error comes with the first input of its call.
    fn in_lanes(
        &mut self,
        count: usize,
        out: &mut [T],
        mut fill: impl FnMut(usize, &mut Vec<R::Input>),
    ) -> Result<(), (TargetError, usize)> {
        let s = self.op.shape();
        let lanes = s.lanes.max(1);
        for first in (0..count).step_by(lanes) {
            let len = lanes.min(count - first);
            self.input.clear();
            for lane in 0..s.lanes {
                fill(first + lane % len, &mut self.input);
            }
            self.eval().map_err(|e| (e, first))?;
            for k in 0..len {
                out[first + k] = self.out[k * s.outputs + self.output];
            }
        }
        Ok(())
    }
}

impl<T: ProbeFloat, R: Reduction<T>> Target<T> for Batched<T, R> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        if self.spread {
            self.split.operands(x, &mut self.a, &mut self.b)?;
            self.eval_spread()?;
            return Ok(self.out[self.output]);
        }
        let s = self.op.shape();
        self.input.clear();
        for _ in 0..s.lanes {
            self.input
                .extend(x.iter().map(|&v| convert::<T, R::Input>(v)));
        }
        self.eval()?;
        Ok(self.out[self.output])
    }

    fn input_format(&self) -> Option<FloatFormat> {
        input_format::<T, R::Input>(self.spread)
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        replay_format::<R::Input>(self.spread)
    }

    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        if !self.spread {
            return false;
        }
        self.split.random_input(seed, x)
    }

    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        self.split.operand_exponents(x)
    }

    /// Up to one input per lane and call (one input per call with masks spread over
    /// both operands, as [`call`](Target::call) does).
    fn call_many(&mut self, inputs: &[&[T]], out: &mut [T]) -> Result<(), TargetError> {
        if self.spread {
            for (x, answer) in inputs.iter().zip(out.iter_mut()) {
                *answer = self.call(x)?;
            }
            return Ok(());
        }
        self.in_lanes(inputs.len(), out, |i, input| {
            input.extend(inputs[i].iter().map(|&v| convert::<T, R::Input>(v)));
        })
        .map_err(|(e, _)| e)
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        if self.spread {
            // one probe per call: every lane would need its own second operand
            let mut x = Vec::new();
            for (k, &p) in batch.probes.iter().enumerate() {
                batch.fill(k, &mut x);
                self.split
                    .operands(&x, &mut self.a, &mut self.b)
                    .map_err(|mut e| {
                        e.probe = Some(p);
                        e
                    })?;
                self.eval_spread().map_err(|mut e| {
                    e.probe.get_or_insert(p);
                    e
                })?;
                out[k] = self.out[self.output];
            }
            return Ok(());
        }
        let background: Vec<R::Input> = batch.background.iter().map(|&v| convert(v)).collect();
        let mask: R::Input = convert(batch.mask);
        let neg: R::Input = convert::<f64, R::Input>(-batch.mask.to_f64());
        let probes = batch.probes;
        self.in_lanes(probes.len(), out, |i, input| {
            let start = input.len();
            input.extend_from_slice(&background);
            input[start + probes[i].plus] = mask;
            input[start + probes[i].minus] = neg;
        })
        .map_err(|(mut e, first)| {
            e.probe.get_or_insert(probes[first]);
            e
        })
    }

    /// Inputs holding several probes each (a guessed tree's proof), one input per lane.
    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        if self.spread {
            return None;
        }
        let mut one = Vec::with_capacity(sets.background.len());
        let answered = self.in_lanes(sets.calls(), out, |c, input| {
            sets.fill(c, &mut one);
            input.extend(one.iter().map(|&v| convert::<T, R::Input>(v)));
        });
        Some(answered.map_err(|(mut e, first)| {
            e.probe = e
                .probe
                .or_else(|| sets.probes.get(sets.call(first).start).copied());
            e
        }))
    }
}

/// [`Target::input_format`] of a reduction with operands of `I` summed in `T`: with masks
/// spread over both operands every value is a product of two operands; otherwise the
/// operands' own format, when it is narrower than `T`.
pub(super) fn input_format<T: ProbeFloat, I: ProbeFloat>(spread: bool) -> Option<FloatFormat> {
    if spread {
        return Some(I::FORMAT.product());
    }
    (I::FORMAT != T::FORMAT).then_some(I::FORMAT)
}

/// [`Target::replay_format`] of a reduction with operands of `I`: random replay inputs
/// are drawn as operands only when the masks spread over both of them.
pub(super) fn replay_format<I: ProbeFloat>(spread: bool) -> Option<FloatFormat> {
    spread.then_some(I::FORMAT)
}

#[cfg(test)]
mod tests {
    use super::{reduction, Batched};
    use crate::black_box::Target;
    use crate::orders;
    use crate::reveal::Reveal;
    use crate::tree::SumTree;

    #[test]
    fn batched_rows_answer_the_checks_random_inputs_a_row_each() {
        // 8 rows of 256 values summed in XLA's order: 11 inputs take two calls, each
        // answered from its own row
        let n = 256;
        let rows = reduction(8, n, 1, move |x: &[f32], out: &mut [f32]| {
            for (row, o) in x.chunks(n).zip(out.iter_mut()) {
                *o = orders::xla_tree_reduction(row);
            }
        });
        let mut t = Batched::new(rows, 0);
        let inputs: Vec<Vec<f32>> = (0..11)
            .map(|k| {
                (0..n)
                    .map(|i| ((i * 7 + k) % 13) as f32 * 0.37 - 2.0)
                    .collect()
            })
            .collect();
        let refs: Vec<&[f32]> = inputs.iter().map(|v| &v[..]).collect();
        let mut out = [0.0f32; 11];
        t.call_many(&refs, &mut out).unwrap();
        assert_eq!(t.calls(), 2);
        for (x, answer) in inputs.iter().zip(out) {
            assert_eq!(answer.to_bits(), orders::xla_tree_reduction(x).to_bits());
        }
        // a reveal asks the known-order filter's two inputs in one call, and the six
        // replays beyond them in another
        let r = Reveal::new(n).run_target(&mut t).unwrap();
        assert_eq!(r.tree, SumTree::xla_tree_reduction(n));
        assert_eq!(r.recognized.as_deref(), Some("xla-tree-reduction"));
        assert_eq!(r.replays, 8);
        let calls = t.calls() - 2;
        // the filter, the proof's sample, its probe sets (8 a call), the re-check and
        // the replays
        assert!(
            calls <= 2 + r.probes.div_ceil(8) + 2,
            "{calls} calls, {} probes",
            r.probes
        );
    }
}
