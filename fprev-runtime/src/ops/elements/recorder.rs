//! The reduction as a target that records what every element answered: probes spread
//! over the lanes (each lane, or each row-and-column pair, a probe of its own) or one
//! probe broadcast to every lane.

use super::options::OnCall;
use crate::black_box::{random_operands, DrawnOperands, Probe, ProbeBatch, Target, TargetError};
use crate::float::{FloatFormat, ProbeFloat};
use crate::ops::{adapters, convert, split_operands, OperandPair, Reduction, ReductionShape};
use crate::reveal::RevealError;

/// What one lane held in one call.
#[derive(Clone, Debug)]
pub(super) enum Source<T> {
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

/// One logged call: the source of each row (lane) and, with operands spread, of each
/// column of `B`; element `(i, j)` answered source `s` when row `i` held `s` and,
/// with operands spread, column `j` held it too. `out` holds the answers of the
/// elements that answered a source, in row-major order (every element without
/// spreading; with it, only the matched ones: a probe call of a large gemm answers a
/// few hundred of its elements).
#[derive(Clone, Debug)]
pub(super) struct Logged<T> {
    pub(super) rows: Vec<u32>,
    pub(super) cols: Option<Vec<u32>>,
    pub(super) out: Vec<T>,
}

impl<T: Copy> Logged<T> {
    /// `(element, source, answer)` of every element that answered a source.
    pub(super) fn answers(&self, outputs: usize) -> impl Iterator<Item = (usize, u32, T)> + '_ {
        (0..self.rows.len() * outputs)
            .filter_map(move |e| self.source(e / outputs, e % outputs).map(|s| (e, s)))
            .zip(self.out.iter().copied())
            .map(|((e, s), v)| (e, s, v))
    }

    pub(super) fn source(&self, lane: usize, output: usize) -> Option<u32> {
        let r = self.rows[lane];
        match &self.cols {
            None => Some(r),
            Some(c) => (c[output] == r).then_some(r),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum RecordMode {
    Spread,
    Broadcast { reference: usize },
}

/// The reduction as a target that records what every element answered.
pub(super) struct Recorder<'r, T: ProbeFloat, R: Reduction<T>> {
    pub(super) op: &'r mut R,
    pub(super) shape: ReductionShape,
    pub(super) mode: RecordMode,
    pub(super) input: Vec<R::Input>,
    pub(super) out: Vec<T>,
    pub(super) calls: u64,
    pub(super) probes: u64,
    /// Masks and units over both operands of the products: every probe needs a row of
    /// `A` and a column of `B` of its own.
    pub(super) spread: bool,
    /// With operands spread: the operation takes a second operand per output
    /// ([`Reduction::eval_columns`]), else one for all outputs.
    pub(super) per_column: bool,
    /// With operands spread: `B`, `k x outputs` (or `k` values shared by all outputs).
    pub(super) second: Vec<R::Input>,
    pub(super) drawn: DrawnOperands<R::Input>,
    // spread mode: per call, the source of each lane (and column) and all outputs
    pub(super) sources: Vec<Source<T>>,
    pub(super) backgrounds: Vec<Vec<T>>,
    pub(super) masks: Vec<T>,
    pub(super) log: Vec<Logged<T>>,
    /// Every answer of the first call logged with operands spread (the log keeps only
    /// the matched ones), for the determinism re-call.
    pub(super) first_out: Option<Vec<T>>,
    // broadcast mode: a running hash of every tracked element's answers
    pub(super) tracked: Vec<usize>,
    pub(super) hashes: Vec<u64>,
    pub(super) first_broadcast: Option<(Source<T>, Vec<T>)>,
    /// With operands spread: the answer each element gave to each input it was asked
    /// (by the input's hash), and the first input one element answered twice
    /// differently. A probe asked again is the one sure sign of a nondeterministic
    /// operation, which would otherwise show as a tree no shape explains.
    pub(super) answered: std::collections::HashMap<(u64, usize), u64>,
    pub(super) nondeterminism: Option<RevealError>,
    pub(super) on_call: Option<OnCall>,
}

impl<'r, T: ProbeFloat, R: Reduction<T>> Recorder<'r, T, R> {
    pub(super) fn new(op: &'r mut R, spread: bool) -> Self {
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
    pub(super) fn per_call(&self) -> usize {
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
    pub(super) fn eval_split(
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
    fn operands(&self, src: &Source<T>) -> Result<OperandPair<R::Input>, TargetError> {
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
    pub(super) fn eval_sources_split(
        &mut self,
        rows: Vec<u32>,
        cols: Vec<u32>,
    ) -> Result<(), TargetError> {
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
    pub(super) fn eval_sources(&mut self, lanes: Vec<u32>) -> Result<(), TargetError> {
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
    pub(super) fn broadcast(&mut self, x: &[T]) -> Result<T, TargetError> {
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
    pub(super) fn broadcast_split(&mut self, src: Source<T>) -> Result<T, TargetError> {
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
    pub(super) fn source_input(&self, src: &Source<T>) -> Vec<T> {
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
        adapters::input_format::<T, R::Input>(self.spread)
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        adapters::replay_format::<R::Input>(self.spread)
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
        Some(crate::black_box::exponent_sums(&a, &b, R::Input::FORMAT))
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

pub(super) fn nondeterministic<T: ProbeFloat>(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_call_logs_only_the_matched_elements() {
        // rows hold sources 7, 8; columns 8, 7, 9: element (0, 1) answered 7, (1, 0) 8
        let call = Logged {
            rows: vec![7, 8],
            cols: Some(vec![8, 7, 9]),
            out: vec![1.0f32, 2.0],
        };
        assert_eq!(call.source(0, 0), None);
        assert_eq!(call.source(0, 1), Some(7));
        assert_eq!(call.source(1, 0), Some(8));
        let answers: Vec<_> = call.answers(3).collect();
        assert_eq!(answers, [(1, 7, 1.0), (3, 8, 2.0)]);
    }

    #[test]
    fn an_unspread_call_logs_every_element() {
        let call = Logged {
            rows: vec![4, 5],
            cols: None,
            out: vec![1.0f64, 2.0, 3.0, 4.0],
        };
        let sources: Vec<u32> = call.answers(2).map(|(_, s, _)| s).collect();
        assert_eq!(sources, [4, 4, 5, 5]);
    }

    #[test]
    fn two_answers_to_one_probe_are_reported_as_units_lost() {
        let bg = [0.0f32, 1.0, 1.0, 1.0, 1.0];
        let probe = Probe { plus: 1, minus: 2 };
        let e = probe_nondeterministic(&bg, probe, 2.0f32, 1.0);
        assert!(
            matches!(
                e,
                RevealError::Nondeterministic {
                    first: 2,
                    second: 3,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn an_input_asked_again_hashes_alike_and_a_changed_one_does_not() {
        let x = [1.0f32, 2.0, 3.0];
        let again = [1.0f32, 2.0, 3.0];
        assert_eq!(input_hash(&x), input_hash(&again));
        assert_ne!(input_hash(&x), input_hash(&[1.0f32, 3.0, 2.0]));
    }
}
