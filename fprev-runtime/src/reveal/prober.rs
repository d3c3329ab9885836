//! Asking the target: rows of probes from one pivot, with every answer checked.
//!
//! The prober owns the background input (a unit or a zero at every position). An answer
//! `f` is turned into `l = units - f`, the number of non-zero positions lost in the
//! masked subtree, after checking that it is finite, a whole number of units and within
//! `[0, units - 2]`. Counts at or above `2^p` cannot be trusted (the accumulator may have
//! rounded them); such entries come back as `None` and [`Prober::trusted_row`] re-asks
//! them inside a smaller window of units with zeros around it, which is the "zeroing"
//! half of the modified FPRev algorithm.

use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::error::RevealError;
use crate::black_box::{Probe, ProbeBatch, ProbeSets, Target};
use crate::float::{FloatFormat, ProbeFloat, ProbeScale};
use crate::random::splitmix64;

/// A recorded full-window answer, kept for the determinism and consistency checks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub probe: Probe,
    pub lost: u32,
}

const RESERVOIR: usize = 24;

/// The most probes one input of a proof holds (see [`Prober::set_width`]).
pub(crate) const MAX_SET_WIDTH: usize = 32;

/// A uniform sample of [`RESERVOIR`] answers from a stream of unknown length
/// (Algorithm R), drawing from a 64-bit LCG's high half: every answer passes through it, so
/// a ChaCha or SplitMix draw per answer, or Algorithm L's logarithms per kept one, would
/// cost a cheap target more than its sums.
struct Reservoir {
    samples: Vec<Sample>,
    seen: u64,
    state: u64,
}

impl Reservoir {
    fn new(seed: u64) -> Reservoir {
        Reservoir {
            samples: Vec::with_capacity(RESERVOIR),
            seen: 0,
            state: splitmix64(seed ^ 0x5A4D_0000),
        }
    }

    /// Uniform in `0..bound`: the LCG's state (its high bits are the good ones) scaled
    /// by a 64x64 product's high half, so no bound overflows.
    #[inline]
    fn below(&mut self, bound: u64) -> u64 {
        // Knuth's MMIX constants
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((u128::from(self.state) * u128::from(bound)) >> 64) as u64
    }

    #[inline]
    fn offer(&mut self, s: Sample) {
        self.seen += 1;
        if self.samples.len() < RESERVOIR {
            self.samples.push(s);
            return;
        }
        let k = self.below(self.seen);
        if k < RESERVOIR as u64 {
            self.samples[k as usize] = s;
        }
    }
}

pub(crate) struct Prober<T: ProbeFloat, X: Target<T>> {
    pub target: X,
    pub n: usize,
    pub scale: ProbeScale,
    mask: T,
    unit: T,
    /// `1 / scale.unit`, exact (a power of two).
    inv_unit: f64,
    background: Vec<T>,
    /// Positions that currently hold a unit.
    units: usize,
    /// Stack of windows (sets of unit positions); empty means every position.
    windows: Vec<Vec<usize>>,
    pub probes: u64,
    pub batches: u64,
    /// Plain calls on other inputs (replay checks), not probes.
    pub replays: u64,
    /// For a product target beyond one mask's reach: the most products a mask swamps
    /// in any tree (the windowed prefix's size; see [`super::reach`]).
    pub beyond_reach: Option<usize>,
    pub rng: ChaCha8Rng,
    reservoir: Reservoir,
    out: Vec<T>,
    batch: Vec<Probe>,
    /// Answers of the last batch.
    answers: Vec<Option<u32>>,
}

impl<T: ProbeFloat, X: Target<T>> Prober<T, X> {
    pub fn new(target: X, n: usize, seed: u64) -> Result<Self, RevealError> {
        let scale = scale_for::<T, X>(&target, n)?;
        Self::at_scale(target, n, seed, scale)
    }

    /// A prober at a given scale (a product target beyond one mask's reach probes at
    /// the widest scale its range allows).
    pub fn at_scale(
        target: X,
        n: usize,
        seed: u64,
        scale: ProbeScale,
    ) -> Result<Self, RevealError> {
        let unit = T::from_f64_round(scale.unit);
        let mut background = super::memory::with_capacity(n, n, "the probe input")?;
        background.resize(n, unit);
        Ok(Prober {
            target,
            n,
            scale,
            mask: T::from_f64_round(scale.mask),
            unit,
            inv_unit: 1.0 / scale.unit,
            background,
            units: n,
            windows: Vec::new(),
            probes: 0,
            batches: 0,
            replays: 0,
            beyond_reach: None,
            rng: ChaCha8Rng::seed_from_u64(seed),
            reservoir: Reservoir::new(seed),
            out: Vec::new(),
            batch: Vec::new(),
            answers: Vec::new(),
        })
    }

    /// The format replay checks draw random inputs from.
    pub fn replay_format(&self) -> crate::float::FloatFormat {
        self.target
            .replay_format()
            .or(self.target.input_format())
            .unwrap_or(T::FORMAT)
    }

    /// Whether the target adds values narrower than f32 one by one, which libraries
    /// often do in an f32 register (see [`RevealError::WiderAccumulator`]).
    pub fn narrow_plain(&self) -> bool {
        let input = self.target.input_format().unwrap_or(T::FORMAT);
        narrow_plain::<T, X>(&self.target, input)
    }

    /// Whether the target sums products of two operands (it names a format of its
    /// own for the random inputs: [`Target::replay_format`]).
    pub fn products(&self) -> bool {
        self.target.replay_format().is_some()
    }

    /// A random input of seed `seed` for the replay checks: the target's own draw when it
    /// has one ([`Target::random_input`]), else values of the replay format. Whether the
    /// target drew it (it may then keep state about it until it is called on it).
    pub fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        let own = self.target.random_input(seed, x);
        if !own {
            super::naive::fill_random_input(self.replay_format(), seed, x);
        }
        own
    }

    /// The target's [`Target::operand_exponents`] of `x` (ask before calling on `x`).
    pub fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        self.target.operand_exponents(x)
    }

    /// Probe with `scale` from now on (everything asked so far is forgotten but the
    /// counters): masks widened after a truncating node was seen.
    pub fn rescale(&mut self, scale: ProbeScale) {
        self.scale = scale;
        self.mask = T::from_f64_round(scale.mask);
        self.unit = T::from_f64_round(scale.unit);
        self.inv_unit = 1.0 / scale.unit;
        self.windows.clear();
        self.apply_window();
        self.reservoir = Reservoir::new(self.reservoir.state);
    }

    /// Counts exact below `2^bits` only (a narrower internal accumulator than the
    /// answer's type): lower the trusted cap, so larger counts are windowed.
    pub fn cap_counts(&mut self, bits: u32) {
        self.scale.exact_counts_below = self.scale.exact_counts_below.min(1u64 << bits);
    }

    /// The target's answer for units on the first `count` positions and zeros elsewhere
    /// (no masks), in units; `None` if not a whole number of units.
    pub fn units_sum(&mut self, count: usize) -> Result<Option<u64>, RevealError> {
        let set: Vec<usize> = (0..count).collect();
        self.push_window(&set);
        let x = self.background.clone();
        self.pop_window();
        let v = self.call(&x)?.to_f64() * self.inv_unit;
        Ok((v >= 0.0 && v.fract() == 0.0 && v.is_finite()).then_some(v as u64))
    }

    /// Whether counts can exceed what the accumulator holds exactly.
    pub fn needs_windows(&self) -> bool {
        (self.n as u64).saturating_sub(2) >= self.scale.exact_counts_below
    }

    fn full_window(&self) -> bool {
        self.units == self.n
    }

    /// Lost counts `l(pivot, j)` for every `j` in `members`; `None` where the answer was
    /// too large a count to be exact.
    pub fn row(
        &mut self,
        pivot: usize,
        members: &[usize],
    ) -> Result<Vec<Option<u32>>, RevealError> {
        self.batch.clear();
        self.batch.extend(members.iter().map(|&j| Probe {
            plus: pivot,
            minus: j,
        }));
        self.ask_batch()?;
        Ok(self.answers.clone())
    }

    /// Lost counts for arbitrary probes, asked as one batch.
    pub fn ask(&mut self, probes: &[Probe]) -> Result<Vec<Option<u32>>, RevealError> {
        self.batch.clear();
        self.batch.extend_from_slice(probes);
        self.ask_batch()?;
        Ok(self.answers.clone())
    }

    /// Ask `probes` as one batch; whether every one lost exactly its count in `lost`.
    ///
    /// A proof's answers are compared as they come, without classifying each: an answer
    /// equal to the expected whole count (and below the trusted cap) is valid by
    /// construction, and the first other one is checked (a bad answer is still an error)
    /// and ends the proof. Nothing is sampled: see [`sample_from`](Self::sample_from).
    pub fn expect(&mut self, probes: &[Probe], lost: &[u32]) -> Result<bool, RevealError> {
        self.answer(probes)?;
        let units = self.units as f64;
        let cap = self.scale.exact_counts_below as f64;
        for ((&probe, &lost), &v) in probes.iter().zip(lost).zip(&self.out) {
            let want = units - f64::from(lost);
            if v.to_f64() * self.inv_unit != want || !(0.0..cap).contains(&want) {
                self.check(probe, v)?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// How many probes one input may hold in a proof ([`ProbeSets`]): masks `2^j M` for
    /// `j` below it must sum exactly (`j + 2` significant bits, in the formats and in the
    /// counts the accumulator keeps exact) and stay finite. 0 when fewer than 3 fit, when
    /// windows are in use, or at the wide scale (its masks are at the top of the range).
    pub fn set_width(&self) -> usize {
        if !self.full_window() || !self.scale.mask.is_finite() || self.scale.mask <= 0.0 {
            return 0;
        }
        let input = self.target.input_format().unwrap_or(T::FORMAT);
        let counted = 63 - self.scale.exact_counts_below.max(1).leading_zeros();
        let bits = input
            .precision
            .min(T::FORMAT.precision)
            .min(counted)
            .saturating_sub(2) as i32;
        let mask_exp = self.scale.mask.log2() as i32;
        let room = input.max_exp.min(T::FORMAT.max_exp) - mask_exp;
        let width = bits.min(room).clamp(0, MAX_SET_WIDTH as i32) as usize;
        if width < 3 {
            0
        } else {
            width
        }
    }

    /// Ask inputs that hold several probes each (call `c` the probes of `ends[c-1]..ends[c]`,
    /// probe `k` with mask `2^shift[k] M`); whether input `c` lost exactly `lost[c]`
    /// positions. `None` when the target answers one probe per input only.
    ///
    /// An answer that differs ends the proof without being classified: the search that
    /// follows asks single probes, whose bad answers are errors with their probe named.
    pub fn expect_sets(
        &mut self,
        probes: &[Probe],
        shift: &[u8],
        ends: &[usize],
        lost: &[u32],
    ) -> Result<Option<bool>, RevealError> {
        if ends.is_empty() {
            return Ok(Some(true));
        }
        let masks: Vec<T> = shift
            .iter()
            .map(|&j| T::from_f64_round(self.scale.mask * f64::from(1u32 << j)))
            .collect();
        let sets = ProbeSets {
            background: &self.background,
            probes,
            masks: &masks,
            ends,
        };
        self.out.clear();
        self.out.resize(ends.len(), T::ZERO);
        let Some(answered) = self.target.probe_sets(&sets, &mut self.out) else {
            return Ok(None);
        };
        answered.map_err(|e| RevealError::Target {
            probe: e.probe,
            message: e.message,
        })?;
        self.probes += ends.len() as u64;
        self.batches += 1;
        let units = self.units as f64;
        let cap = self.scale.exact_counts_below as f64;
        let holds = lost.iter().zip(&self.out).all(|(&lost, &v)| {
            let want = units - f64::from(lost);
            v.to_f64() * self.inv_unit == want && (0.0..cap).contains(&want)
        });
        Ok(Some(holds))
    }

    /// Offer a uniform sample of answered probes (with the counts they lost) to the
    /// re-check, instead of every one of them.
    pub fn sample_from(&mut self, probes: &[Probe], lost: &[u32]) {
        if !self.full_window() || probes.is_empty() {
            return;
        }
        for _ in 0..RESERVOIR.min(probes.len()) {
            let k = self.reservoir.below(probes.len() as u64) as usize;
            self.reservoir.offer(Sample {
                probe: probes[k],
                lost: lost[k],
            });
        }
    }

    /// Full-window answers sampled uniformly (at most 24), for the later re-check.
    pub fn samples(&self) -> &[Sample] {
        &self.reservoir.samples
    }

    /// Ask the target `probes` over the current background; raw answers in `self.out`.
    fn answer(&mut self, probes: &[Probe]) -> Result<(), RevealError> {
        let count = probes.len();
        self.out.clear();
        self.out.resize(count, T::ZERO);
        if count == 0 {
            return Ok(());
        }
        let batch = ProbeBatch {
            background: &self.background,
            probes,
            mask: self.mask,
        };
        self.target
            .probe_batch(&batch, &mut self.out)
            .map_err(|e| RevealError::Target {
                probe: e.probe,
                message: e.message,
            })?;
        self.probes += count as u64;
        self.batches += 1;
        Ok(())
    }

    /// Answer the probes in `self.batch` into `self.answers`, each checked.
    fn ask_batch(&mut self) -> Result<(), RevealError> {
        let batch = std::mem::take(&mut self.batch);
        let answered = self.answer(&batch);
        self.batch = batch;
        answered?;
        self.answers.clear();
        let full = self.full_window();
        for (&probe, &v) in self.batch.iter().zip(&self.out) {
            let l = self.check(probe, v)?;
            if let (Some(lost), true) = (l, full) {
                self.reservoir.offer(Sample { probe, lost });
            }
            self.answers.push(l);
        }
        Ok(())
    }

    /// One plain call of the target on `x` (a replay check), counted in `replays`.
    pub fn call(&mut self, x: &[T]) -> Result<T, RevealError> {
        self.replays += 1;
        self.target.call(x).map_err(|e| RevealError::Target {
            probe: None,
            message: e.message,
        })
    }

    /// `inputs` answered together ([`Target::call_many`]); counted as replays, as
    /// [`call`](Prober::call) counts one.
    pub fn call_many(&mut self, inputs: &[&[T]]) -> Result<Vec<T>, RevealError> {
        self.replays += inputs.len() as u64;
        let mut out = vec![T::ZERO; inputs.len()];
        self.target
            .call_many(inputs, &mut out)
            .map_err(|e| RevealError::Target {
                probe: None,
                message: e.message,
            })?;
        Ok(out)
    }

    /// One probe against the current background.
    pub fn one(&mut self, probe: Probe) -> Result<Option<u32>, RevealError> {
        Ok(self.row(probe.plus, &[probe.minus])?[0])
    }

    #[inline]
    fn check(&self, probe: Probe, v: T) -> Result<Option<u32>, RevealError> {
        let v = v.to_f64();
        // `unit` is a power of two: the product is exact.
        let f = v * self.inv_unit;
        // The common case in one range test and one integer round trip (NaN fails the
        // range test): a whole count below both the trusted cap and `units - 2`.
        let fast_max = (self.units.saturating_sub(2) as u64)
            .min(self.scale.exact_counts_below.saturating_sub(1)) as f64;
        if (0.0..=fast_max).contains(&f) {
            let c = f as u64;
            if c as f64 == f {
                return Ok(Some((self.units as u64 - c) as u32));
            }
        }
        self.check_slow(probe, v, f)
    }

    /// Classify an answer outside the fast path: an error, or an untrusted count.
    #[cold]
    fn check_slow(&self, probe: Probe, v: f64, f: f64) -> Result<Option<u32>, RevealError> {
        if !v.is_finite() {
            return Err(RevealError::NonFinite { probe, value: v });
        }
        // Beyond 2^53 every float is a whole number (and out of range below); under it
        // the integer cast is exact, which is cheaper than `fract` (a libm call on
        // baseline x86-64).
        if f.abs() < 9_007_199_254_740_992.0 && (f as i64) as f64 != f {
            return Err(RevealError::NotInteger {
                probe,
                value: v,
                unit: self.scale.unit,
            });
        }
        let max = self.units.saturating_sub(2);
        let cap = self.scale.exact_counts_below as f64;
        // A count at or above 2^p may have been rounded, past `max` too: untrusted, not
        // wrong, unless it is beyond what rounding can explain.
        if f >= cap && f <= 2.0 * max as f64 {
            return Ok(None);
        }
        if f < 0.0 || f > max as f64 {
            return Err(RevealError::OutOfRange {
                probe,
                value: f,
                max,
            });
        }
        Ok(Some((self.units - f as usize) as u32))
    }

    /// Like [`row`](Self::row), re-asking untrusted entries in shrinking windows until
    /// every count is exact; the counts go into `row` (a buffer the caller reuses, so that a
    /// target with many small parts does not allocate a row per part).
    ///
    /// `context` holds leaves outside `members` that may share a truncating node with
    /// them (the subtree the pivot's frame has built so far): a truncating node loses
    /// every unit under it, so a window without them would count its node smaller than
    /// it is. The first window keeps them; later, smaller ones cannot afford them.
    pub fn trusted_row(
        &mut self,
        pivot: usize,
        members: &[usize],
        context: &[usize],
        row: &mut Vec<u32>,
    ) -> Result<(), RevealError> {
        self.batch.clear();
        let len = members.len();
        super::memory::reserve(&mut self.batch, len, self.n, "a row of probes")?;
        super::memory::reserve(&mut self.answers, len, self.n, "a row of answers")?;
        super::memory::reserve(&mut self.out, len, self.n, "a row of answers")?;
        row.clear();
        super::memory::reserve(row, len, self.n, "a row of counts")?;
        self.batch.extend(members.iter().map(|&j| Probe {
            plus: pivot,
            minus: j,
        }));
        self.ask_batch()?;
        row.clear();
        row.extend(self.answers.iter().map(|l| l.unwrap_or(u32::MAX)));
        if !self.answers.iter().any(Option::is_none) {
            return Ok(());
        }
        let mut pending: Vec<usize> = (0..members.len()).filter(|&k| row[k] == u32::MAX).collect();
        let mut pushed = 0;
        let result = loop {
            if pending.is_empty() {
                break Ok(());
            }
            let mut window: Vec<usize> = pending
                .iter()
                .map(|&k| members[k])
                .chain(std::iter::once(pivot))
                .collect();
            if pushed == 0 && !context.is_empty() {
                window.extend_from_slice(context);
                window.sort_unstable();
                window.dedup();
                if window.len() >= self.units {
                    window.clear();
                    window.extend(pending.iter().map(|&k| members[k]));
                    window.push(pivot);
                }
            }
            if window.len() >= self.units {
                break Err(RevealError::PrecisionTooLow {
                    detail: format!(
                        "{} answers from pivot {pivot} stay at or above 2^{} units even in a window of {} positions",
                        pending.len(),
                        T::FORMAT.precision,
                        window.len()
                    ),
                });
            }
            self.push_window(&window);
            pushed += 1;
            let sub_members: Vec<usize> = pending.iter().map(|&k| members[k]).collect();
            let sub = match self.row(pivot, &sub_members) {
                Ok(s) => s,
                Err(e) => break Err(e),
            };
            let mut still = Vec::new();
            for (idx, &k) in pending.iter().enumerate() {
                match sub[idx] {
                    Some(l) => row[k] = l,
                    None => still.push(k),
                }
            }
            pending = still;
        };
        for _ in 0..pushed {
            self.pop_window();
        }
        result
    }

    /// Units only on `set`, zeros elsewhere.
    pub fn push_window(&mut self, set: &[usize]) {
        self.windows.push(set.to_vec());
        self.apply_window();
    }

    pub fn pop_window(&mut self) {
        self.windows.pop();
        self.apply_window();
    }

    fn apply_window(&mut self) {
        match self.windows.last() {
            None => {
                self.background.fill(self.unit);
                self.units = self.n;
            }
            Some(set) => {
                self.background.fill(T::ZERO);
                for &i in set {
                    self.background[i] = self.unit;
                }
                self.units = set.len();
            }
        }
    }

    /// Zero `leaves` for one probe and answer it; the units come back afterwards.
    pub fn probe_with_zeros(
        &mut self,
        probe: Probe,
        leaves: &[usize],
    ) -> Result<Option<u32>, RevealError> {
        let zeroed: Vec<usize> = leaves
            .iter()
            .copied()
            .filter(|&i| self.background[i] != T::ZERO)
            .collect();
        for &i in &zeroed {
            self.background[i] = T::ZERO;
        }
        self.units -= zeroed.len();
        let r = self.one(probe);
        for &i in &zeroed {
            self.background[i] = self.unit;
        }
        self.units += zeroed.len();
        r
    }

    /// A uniformly random position in `0..len` (`len > 0`).
    pub fn pick_index(&mut self, len: usize) -> usize {
        crate::random::below(&mut self.rng, len)
    }
}

/// The mask and unit for `n` inputs of `target`, or why none exists.
/// `None` for plain sums of 16-bit values (see [`register_clean`]): their wide masks
/// would sit within an f32 register's precision of the units.
pub(crate) fn wide_scale_for<T: ProbeFloat, X: Target<T>>(
    target: &X,
    n: usize,
) -> Option<ProbeScale> {
    let input = target.input_format().unwrap_or(T::FORMAT);
    if narrow_plain::<T, X>(target, input) {
        return None;
    }
    ProbeScale::wide_for_formats(input, T::FORMAT, n)
}

/// Whether `target` adds values narrower than f32 one by one (no products): the
/// values a library commonly adds in an f32 register and rounds once at the end.
fn narrow_plain<T: ProbeFloat, X: Target<T>>(target: &X, input: FloatFormat) -> bool {
    let register = f32::FORMAT.precision;
    target.replay_format().is_none() && input.precision < register && T::FORMAT.precision < register
}

/// The scale for a plain sum of 16-bit values whose narrow masks would sit at or above
/// f32's precision above the unit (float16 from 1025 values on): an f32 register there
/// rounds `M + units` to even instead of either keeping or dropping the units, and its
/// answers look like a broken tree or a truncating adder. The masks move to where an f32
/// register drops units as cleanly as a 16-bit one does, which the format's range
/// allows for every `n` that fits at all (float16 up to 8192), so either accumulator
/// answers whole counts of the true tree; the replays then say which arithmetic it was.
/// Below that (the narrow masks within f32's precision) an f32 register keeps every
/// unit, which the search reports as an order-independent sum naming the wider
/// accumulator.
fn register_clean(input: FloatFormat, acc: FloatFormat, n: usize) -> Option<ProbeScale> {
    let narrow = ProbeScale::for_formats(input, acc, n)?;
    let register = f32::FORMAT.precision;
    if narrow.gap() < register as i32 {
        return Some(narrow);
    }
    let wider = FloatFormat {
        precision: register,
        ..acc
    };
    let clean = ProbeScale::for_formats(input, wider, n)?;
    Some(ProbeScale {
        exact_counts_below: narrow.exact_counts_below,
        ..clean
    })
}

pub(crate) fn scale_for<T: ProbeFloat, X: Target<T>>(
    target: &X,
    n: usize,
) -> Result<ProbeScale, RevealError> {
    let input = target.input_format().unwrap_or(T::FORMAT);
    let scale = if narrow_plain::<T, X>(target, input) {
        register_clean(input, T::FORMAT, n).or_else(|| ProbeScale::for_formats(input, T::FORMAT, n))
    } else {
        ProbeScale::for_formats(input, T::FORMAT, n)
    };
    scale.ok_or_else(|| RevealError::TooLarge {
        n,
        dtype: if input == T::FORMAT {
            T::FORMAT.name
        } else {
            input.name
        },
        max: max_n_formats(input, T::FORMAT),
        // a product target draws its replay inputs from one operand's format
        spread: target.replay_format().is_some(),
        tried: None,
    })
}

/// For a product target whose `n` products no mask swamps in every tree: the most
/// products one mask does swamp (the size of the windowed prefix) and the widest scale
/// the product's range allows (see [`super::reach`]); `None` for other targets.
pub(crate) fn beyond_reach<T: ProbeFloat, X: Target<T>>(
    target: &X,
    n: usize,
) -> Option<(usize, ProbeScale)> {
    target.replay_format()?;
    let input = target.input_format().unwrap_or(T::FORMAT);
    if ProbeScale::for_formats(input, T::FORMAT, n).is_some() {
        return None;
    }
    let reach = max_n_formats(input, T::FORMAT);
    // a prefix of one or two products says nothing about blocks
    if reach < 16 {
        return None;
    }
    Some((reach, ProbeScale::for_formats(input, T::FORMAT, reach)?))
}

/// The largest n values of `input` accumulated in `acc` can be probed with (1 when none).
fn max_n_formats(input: crate::float::FloatFormat, acc: crate::float::FloatFormat) -> usize {
    let fits = |n: usize| ProbeScale::for_formats(input, acc, n).is_some();
    if !fits(2) {
        return 1;
    }
    let mut lo = 2usize;
    let mut hi = 1usize << 40;
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}
