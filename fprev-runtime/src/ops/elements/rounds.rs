//! The rounds of an element reveal: one tree from probes spread over the lanes, every
//! element checked against it, and the elements that disagree revealed again with every
//! lane answering the same probe.

use crate::reveal::error::clip;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::recorder::{nondeterministic, RecordMode, Recorder, Source};
use super::{Element, ElementCoverage, ElementOrders, ElementReveal, OrderGroup};
use crate::black_box::{random_operands, Target, TargetError};
use crate::float::{FloatFormat, ProbeFloat, ProbeScale};
use crate::ops::{convert, spreads_operands, Reduction};
use crate::random;
use crate::reveal::{fit, FittedFused, RevealError, RevealReport};
use crate::tree::SumTree;

impl ElementReveal {
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
        let mut groups: Vec<(SumTree, Option<FittedFused>, Vec<usize>)> = Vec::new();
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
                Ok((tree, fused, bad)) => {
                    let good: Vec<usize> = (0..shape.elements()).filter(|e| !bad[*e]).collect();
                    pending = (0..shape.elements()).filter(|e| bad[*e]).collect();
                    if !good.is_empty() {
                        groups.push((tree, fused, good));
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
            let (tree, fused, same) = round?;
            let mut group = Vec::new();
            let mut rest = Vec::new();
            for (i, &e) in pending.iter().enumerate() {
                if same[i] {
                    group.push(e);
                } else {
                    rest.push(e);
                }
            }
            groups.push((tree, fused, group));
            pending = rest;
        }
        groups.sort_by_key(|(_, _, g)| std::cmp::Reverse(g.len()));
        let el = |e: usize| Element {
            lane: e / shape.outputs,
            output: e % shape.outputs,
        };
        Ok(ElementOrders {
            shape,
            groups: groups
                .into_iter()
                .map(|(tree, arithmetic, g)| OrderGroup {
                    tree,
                    elements: g.into_iter().map(el).collect(),
                    arithmetic,
                })
                .collect(),
            unresolved: unresolved.into_iter().map(el).collect(),
            calls: rec.calls,
            probes: rec.probes,
            operands_spread: spread,
        })
    }

    /// The opening of both batched rounds: a fresh log in spread mode, and one tree
    /// revealed with `per_call` probes answered by each call.
    fn spread_round<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
        per_call: usize,
        verify: bool,
    ) -> Result<RevealReport, RevealError> {
        rec.mode = RecordMode::Spread;
        rec.log.clear();
        rec.first_out = None;
        rec.sources.clear();
        self.engine(rec.shape, per_call, verify)
            .run_target(&mut *rec)
    }

    /// Probes spread over lanes; returns the tree (its replay is checked here, so no
    /// arithmetic is fitted: a fused tree fails these checks and is revealed again,
    /// verified, by [`exhaustive`](Self::exhaustive)) and which elements contradict it.
    fn batched<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
    ) -> Result<Round, RevealError> {
        let shape = rec.shape;
        let tree = self.spread_round(rec, shape.lanes, false)?.tree;
        let first = rec.log.first().map(|l| l.rows.clone());
        // Seeded random inputs, different in every lane.
        let mut rng = ChaCha8Rng::seed_from_u64(self.reveal.seed_value() ^ 0xC4EC_0000);
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
        Ok((tree, None, bad))
    }

    /// [`batched`](Self::batched) with operands spread: probes on a matching of rows and
    /// columns (probe `t` of a call in row `t` and column `t`, spare rows and columns
    /// repeating the call's probes), then every element checked on random operands of
    /// its own, then the first call again.
    fn batched_spread<T: ProbeFloat, R: Reduction<T>>(
        &self,
        rec: &mut Recorder<'_, T, R>,
    ) -> Result<Round, RevealError> {
        let shape = rec.shape;
        let per_call = rec.per_call();
        let report = self.spread_round(rec, per_call, true)?;
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
            let seed = self.reveal.seed_value() ^ 0xC4EC_0000 ^ ((c as u64) << 40);
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
        let fused = model.fused;
        Ok((tree, fused, bad))
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
    ) -> Result<Round, RevealError> {
        let shape = rec.shape;
        let verify = verify || self.reveal.verifies();
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
        let mut rng = ChaCha8Rng::seed_from_u64(self.reveal.seed_value() ^ 0xB40A_DCA5);
        for c in 0..self.checks.max(1) {
            let (got, x, exps) = if rec.spread {
                let seed = self.reveal.seed_value() ^ 0xB40A_DCA5 ^ ((c as u64) << 40);
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
                    input_seed: self.reveal.seed_value(),
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
        let same = rec.hashes.iter().map(|&h| h == reference).collect();
        let fused = model.fused;
        Ok((tree, fused, same))
    }
}

/// What one round finds: a tree, the arithmetic fitted at its fused nodes (if any was),
/// and for each element whether it contradicts (`batched`) or shares (`exhaustive`) it.
type Round = (SumTree, Option<FittedFused>, Vec<bool>);

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

/// Random values exact in the operand format whose sums stay finite in `T`.
fn random_input<T: ProbeFloat, I: ProbeFloat>(k: usize, rng: &mut ChaCha8Rng) -> Vec<T> {
    let (i, t): (FloatFormat, FloatFormat) = (I::FORMAT, T::FORMAT);
    let headroom = (usize::BITS - k.leading_zeros()) as i32 + 2;
    let top = (i.max_exp.min(t.max_exp) - headroom).min(t.precision as i32);
    let spread = (t.precision as i32 + 2).min(top - i.min_exp).max(1);
    (0..k)
        .map(|_| {
            let e = top - random::range_i32(rng, 0, spread);
            let m: f64 = 1.0 + random::unit_f64(rng);
            let sign = if random::coin(rng) { -1.0 } else { 1.0 };
            let x: I = I::from_f64_round(sign * m * 2f64.powi(e));
            convert(x)
        })
        .collect()
}

/// The operand exponent sums of a [`Source::Drawn`]'s products (operands of `fmt`),
/// which a fused model aligns them by; `None` for any other source.
fn source_exponents<T>(src: &Source<T>, fmt: FloatFormat) -> Option<Vec<i32>> {
    match src {
        Source::Drawn { a, b } => Some(crate::black_box::exponent_sums(a, b, fmt)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_trees_are_clipped_in_errors() {
        assert_eq!(clip("(0+1)".into()), "(0+1)");
        let long = clip("x".repeat(300));
        assert_eq!(long.len(), 203);
        assert!(long.ends_with("..."));
    }

    #[test]
    fn only_errors_that_mixed_lanes_can_cause_are_retried() {
        let mixed = RevealError::Inconsistent {
            detail: String::new(),
        };
        assert!(recoverable(&mixed));
        let memory = RevealError::OutOfMemory {
            n: 4,
            what: String::new(),
            bytes: 0,
            budget: None,
        };
        assert!(!recoverable(&memory));
    }

    #[test]
    fn drawn_operands_give_their_exact_products() {
        let src: Source<f32> = Source::Drawn {
            a: vec![1.5, -2.0],
            b: vec![4.0, 0.25],
        };
        assert_eq!(exact_products(&src).unwrap(), [6.0, -0.5]);
        let inexact: Source<f32> = Source::Drawn {
            a: vec![1.0 + f64::EPSILON],
            b: vec![1.0],
        };
        assert!(exact_products(&inexact).is_err());
        assert!(exact_products(&Source::Vector(vec![1.0f32])).is_err());
    }

    #[test]
    fn random_inputs_are_exact_in_the_operand_format() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let x: Vec<f32> = random_input::<f32, half::f16>(64, &mut rng);
        assert_eq!(x.len(), 64);
        for v in x {
            assert_eq!(half::f16::from_f32(v).to_f32(), v);
        }
    }
}
