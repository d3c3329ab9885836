//! Asking the target: rows of probes from one pivot, with every answer checked.
//!
//! The prober owns the background input (a unit or a zero at every position). An answer
//! `f` is turned into `l = units - f`, the number of non-zero positions lost in the
//! masked subtree, after checking that it is finite, a whole number of units and within
//! `[0, units - 2]`. Counts at or above `2^p` cannot be trusted (the accumulator may have
//! rounded them); such entries come back as `None` and [`Prober::trusted_row`] re-asks
//! them inside a smaller window of units with zeros around it, which is the "zeroing"
//! half of the modified FPRev algorithm.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::error::RevealError;
use crate::float::{ProbeFloat, ProbeScale};
use crate::scramble::rng::splitmix64;
use crate::target::{Probe, ProbeBatch, Target};

/// A recorded full-window answer, kept for the determinism and consistency checks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub probe: Probe,
    pub lost: u32,
}

const RESERVOIR: usize = 24;

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
    pub rng: ChaCha8Rng,
    pub samples: Vec<Sample>,
    seen_full: u64,
    sample_key: u64,
    out: Vec<T>,
    batch: Vec<Probe>,
}

impl<T: ProbeFloat, X: Target<T>> Prober<T, X> {
    pub fn new(target: X, n: usize, seed: u64) -> Result<Self, RevealError> {
        let input = target.input_format().unwrap_or(T::FORMAT);
        let scale =
            ProbeScale::for_formats(input, T::FORMAT, n).ok_or_else(|| RevealError::TooLarge {
                n,
                dtype: T::FORMAT.name,
                max: max_n::<T>(),
            })?;
        let unit = T::from_f64_round(scale.unit);
        Ok(Prober {
            target,
            n,
            scale,
            mask: T::from_f64_round(scale.mask),
            unit,
            inv_unit: 1.0 / scale.unit,
            background: vec![unit; n],
            units: n,
            windows: Vec::new(),
            probes: 0,
            batches: 0,
            replays: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            samples: Vec::new(),
            seen_full: 0,
            sample_key: splitmix64(seed ^ 0x5A4D_0000),
            out: Vec::new(),
            batch: Vec::new(),
        })
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
        self.ask_batch()
    }

    /// Lost counts for arbitrary probes, asked as one batch.
    pub fn ask(&mut self, probes: &[Probe]) -> Result<Vec<Option<u32>>, RevealError> {
        self.batch.clear();
        self.batch.extend_from_slice(probes);
        self.ask_batch()
    }

    /// Answer the probes in `self.batch`.
    fn ask_batch(&mut self) -> Result<Vec<Option<u32>>, RevealError> {
        let count = self.batch.len();
        self.out.clear();
        self.out.resize(count, T::ZERO);
        if count == 0 {
            return Ok(Vec::new());
        }
        let batch = ProbeBatch {
            background: &self.background,
            probes: &self.batch,
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
        let mut row = Vec::with_capacity(count);
        for k in 0..count {
            let probe = self.batch[k];
            let l = self.check(probe, self.out[k])?;
            if let Some(lost) = l {
                self.record(probe, lost);
            }
            row.push(l);
        }
        Ok(row)
    }

    /// One plain call of the target on `x` (a replay check), counted in `replays`.
    pub fn call(&mut self, x: &[T]) -> Result<T, RevealError> {
        self.replays += 1;
        self.target.call(x).map_err(|e| RevealError::Target {
            probe: None,
            message: e.message,
        })
    }

    /// One probe against the current background.
    pub fn one(&mut self, probe: Probe) -> Result<Option<u32>, RevealError> {
        Ok(self.row(probe.plus, &[probe.minus])?[0])
    }

    fn check(&self, probe: Probe, v: T) -> Result<Option<u32>, RevealError> {
        let v = v.to_f64();
        if !v.is_finite() {
            return Err(RevealError::NonFinite { probe, value: v });
        }
        // `unit` is a power of two: the product is exact. Beyond 2^53 every float is a
        // whole number (and out of range below); under it the integer cast is exact,
        // which is cheaper than `fract` (a libm call on baseline x86-64).
        let f = v * self.inv_unit;
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

    /// Reservoir-sample full-window answers for the later re-check.
    fn record(&mut self, probe: Probe, lost: u32) {
        if !self.full_window() {
            return;
        }
        self.seen_full += 1;
        let s = Sample { probe, lost };
        if self.samples.len() < RESERVOIR {
            self.samples.push(s);
        } else {
            // uniform in 0..seen_full by multiply-high of a SplitMix64 word: a ChaCha draw
            // per answer was a visible cost for cheap targets
            let w = splitmix64(self.sample_key ^ self.seen_full);
            let k = ((u128::from(w) * u128::from(self.seen_full)) >> 64) as usize;
            if k < RESERVOIR {
                self.samples[k] = s;
            }
        }
    }

    /// Like [`row`](Self::row), re-asking untrusted entries in shrinking windows until
    /// every count is exact.
    pub fn trusted_row(
        &mut self,
        pivot: usize,
        members: &[usize],
    ) -> Result<Vec<u32>, RevealError> {
        let mut row = self.row(pivot, members)?;
        let mut pending: Vec<usize> = (0..members.len()).filter(|&k| row[k].is_none()).collect();
        let mut pushed = 0;
        let result = loop {
            if pending.is_empty() {
                break Ok(());
            }
            let window: Vec<usize> = pending
                .iter()
                .map(|&k| members[k])
                .chain(std::iter::once(pivot))
                .collect();
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
                    Some(l) => row[k] = Some(l),
                    None => still.push(k),
                }
            }
            pending = still;
        };
        for _ in 0..pushed {
            self.pop_window();
        }
        result?;
        Ok(row.into_iter().map(|l| l.unwrap_or(0)).collect())
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

    /// A uniformly random element of `set` (non-empty).
    pub fn pick(&mut self, set: &[usize]) -> usize {
        set[self.rng.random_range(0..set.len())]
    }
}

/// The largest n this type can be probed with at all.
pub(crate) fn max_n<T: ProbeFloat>() -> usize {
    let mut lo = 2usize;
    let mut hi = 1usize << 40;
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ProbeScale::for_type::<T>(mid).is_some() {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}
