//! Probes: masked all-one inputs, one at a time, in batches over one background, or
//! several to an input.

use crate::float::ProbeFloat;

/// One masked all-one input: `+M` at `plus`, `-M` at `minus`, the background elsewhere.
///
/// ```
/// let p = fprev::target::Probe { plus: 3, minus: 7 };
/// assert_eq!(p.to_string(), "(+M at 3, -M at 7)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Probe {
    /// Index holding `+M`.
    pub plus: usize,
    /// Index holding `-M`.
    pub minus: usize,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(+M at {}, -M at {})", self.plus, self.minus)
    }
}

/// A batch of probes over one background.
///
/// ```
/// use fprev::target::{Probe, ProbeBatch};
/// let bg = [1.0f32; 4];
/// let probes = [Probe { plus: 0, minus: 2 }];
/// let batch = ProbeBatch { background: &bg, probes: &probes, mask: 1024.0 };
/// let mut input = Vec::new();
/// batch.fill(0, &mut input);
/// assert_eq!(input, vec![1024.0, 1.0, -1024.0, 1.0]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ProbeBatch<'a, T> {
    /// The value of every position that is not masked (a unit or zero).
    pub background: &'a [T],
    /// The probes to answer, in order.
    pub probes: &'a [Probe],
    /// `M`.
    pub mask: T,
}

impl<T: ProbeFloat> ProbeBatch<'_, T> {
    /// Write probe `k`'s full input into `out` (resized to the background's length).
    pub fn fill(&self, k: usize, out: &mut Vec<T>) {
        out.clear();
        out.extend_from_slice(self.background);
        let p = self.probes[k];
        out[p.plus] = self.mask;
        out[p.minus] = neg(self.mask);
    }
}

pub(super) fn neg<T: ProbeFloat>(x: T) -> T {
    T::from_f64_round(-x.to_f64())
}

/// Inputs that each hold several probes: how a guessed tree is proved in a fraction of
/// the calls one probe per input takes (see [`Target::probe_sets`](super::Target::probe_sets)).
///
/// Input `c` is the background with `+masks[k]` at `probes[k].plus` and `-masks[k]` at
/// `probes[k].minus` for every `k` in [`call`](Self::call)`(c)`. The masks of one input
/// are distinct powers of two times `M`, so two probes' masks never cancel each other.
///
/// ```
/// use fprev::target::{Probe, ProbeSets};
/// let bg = [1.0f32; 6];
/// let probes = [Probe { plus: 0, minus: 1 }, Probe { plus: 4, minus: 3 }];
/// let sets = ProbeSets { background: &bg, probes: &probes, masks: &[1024.0, 2048.0], ends: &[2] };
/// let mut input = Vec::new();
/// sets.fill(0, &mut input);
/// assert_eq!(input, vec![1024.0, -1024.0, 1.0, -2048.0, 2048.0, 1.0]);
/// assert_eq!(sets.calls(), 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ProbeSets<'a, T> {
    /// The value of every position that is not masked (a unit or zero).
    pub background: &'a [T],
    /// Every input's probes, one input after another.
    pub probes: &'a [Probe],
    /// Each probe's mask magnitude (same length as `probes`).
    pub masks: &'a [T],
    /// Where each input's probes end in `probes` (increasing; the last is its length).
    pub ends: &'a [usize],
}

impl<T: ProbeFloat> ProbeSets<'_, T> {
    /// How many inputs (calls) the sets hold.
    pub fn calls(&self) -> usize {
        self.ends.len()
    }

    /// The indices in `probes` (and `masks`) of input `c`'s probes (`c` below
    /// [`calls`](Self::calls); the engine's sets always are).
    pub fn call(&self, c: usize) -> std::ops::Range<usize> {
        let start = if c == 0 { 0 } else { self.ends[c - 1] };
        start..self.ends[c]
    }

    /// Write input `c` into `out` (resized to the background's length).
    pub fn fill(&self, c: usize, out: &mut Vec<T>) {
        out.clear();
        out.extend_from_slice(self.background);
        self.set(c, out);
    }

    /// Put input `c`'s masks into `buf`, which holds the background.
    pub(super) fn set(&self, c: usize, buf: &mut [T]) {
        for k in self.call(c) {
            let p = self.probes[k];
            buf[p.plus] = self.masks[k];
            buf[p.minus] = neg(self.masks[k]);
        }
    }

    /// Put the background back where input `c` had masks.
    pub(super) fn restore(&self, c: usize, buf: &mut [T]) {
        for k in self.call(c) {
            let p = self.probes[k];
            buf[p.plus] = self.background[p.plus];
            buf[p.minus] = self.background[p.minus];
        }
    }
}

/// Sets two masks in a reused buffer and puts the background back when dropped, even
/// when the target panics.
pub(super) struct MaskGuard<'b, T: ProbeFloat> {
    pub(super) buf: &'b mut [T],
    probe: Probe,
    background: (T, T),
}

impl<'b, T: ProbeFloat> MaskGuard<'b, T> {
    /// `masks` is `(M, -M)`.
    pub(super) fn set(buf: &'b mut [T], masks: (T, T), probe: Probe) -> Self {
        let background = (buf[probe.plus], buf[probe.minus]);
        buf[probe.plus] = masks.0;
        buf[probe.minus] = masks.1;
        MaskGuard {
            buf,
            probe,
            background,
        }
    }
}

impl<T: ProbeFloat> Drop for MaskGuard<'_, T> {
    fn drop(&mut self) {
        self.buf[self.probe.plus] = self.background.0;
        self.buf[self.probe.minus] = self.background.1;
    }
}
