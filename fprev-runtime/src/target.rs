//! Black-box targets: whatever accumulation fprev probes.
//!
//! The revelation engine asks for *batches* of independent probes that share one
//! background input (a unit or a zero at every position) and differ only in where `+M`
//! and `-M` go. A plain `f(&[T]) -> T` answers them one call at a time from one reused
//! buffer; a thread-safe function answers them in parallel; a matrix product can answer
//! one probe per output row in a single call (see [`crate::ops`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

use rayon::prelude::*;

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

fn neg<T: ProbeFloat>(x: T) -> T {
    T::from_f64_round(-x.to_f64())
}

/// Inputs that each hold several probes: how a guessed tree is proved in a fraction of
/// the calls one probe per input takes (see [`Target::probe_sets`]).
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
    fn set(&self, c: usize, buf: &mut [T]) {
        for k in self.call(c) {
            let p = self.probes[k];
            buf[p.plus] = self.masks[k];
            buf[p.minus] = neg(self.masks[k]);
        }
    }

    /// Put the background back where input `c` had masks.
    fn restore(&self, c: usize, buf: &mut [T]) {
        for k in self.call(c) {
            let p = self.probes[k];
            buf[p.plus] = self.background[p.plus];
            buf[p.minus] = self.background[p.minus];
        }
    }
}

/// Answer probe sets with a plain function from one reused buffer (inputs `calls`,
/// answers into `out`, one per input).
fn sets_each<T: ProbeFloat>(
    f: &mut impl FnMut(&[T]) -> T,
    sets: &ProbeSets<'_, T>,
    calls: std::ops::Range<usize>,
    out: &mut [T],
) -> Result<(), TargetError> {
    let mut buf = sets.background.to_vec();
    let first = calls.start;
    let mut c = first;
    caught("the target", || {
        while c < calls.end {
            sets.set(c, &mut buf);
            out[c - first] = f(&buf);
            sets.restore(c, &mut buf);
            c += 1;
        }
    })
    .map_err(|mut e| {
        e.probe = sets.probes.get(sets.call(c).start).copied();
        e
    })
}

/// What a target reports when it cannot answer (a crashed program, a panic, a timeout).
///
/// ```
/// let e = fprev::target::TargetError::new("program exited");
/// assert_eq!(e.to_string(), "program exited");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetError {
    /// What went wrong, for the user.
    pub message: String,
    /// The probe being answered, when known.
    pub probe: Option<Probe>,
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TargetError {}

impl TargetError {
    /// An error with a message and no probe.
    pub fn new(message: impl Into<String>) -> TargetError {
        TargetError {
            message: message.into(),
            probe: None,
        }
    }
}

/// An accumulation that fprev can probe.
///
/// Implement [`call`](Target::call); override [`probe_batch`](Target::probe_batch) when
/// one evaluation can answer several probes (batched gemm) or when probes can run in
/// parallel.
///
/// ```
/// use fprev::target::{Target, TargetError};
/// struct Seq;
/// impl Target<f32> for Seq {
///     fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
///         Ok(x.iter().fold(0.0, |a, &b| a + b))
///     }
/// }
/// let tree = fprev::Reveal::new(4).run_target(Seq)?.tree;
/// assert_eq!(tree.to_string(), "(((0+1)+2)+3)");
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub trait Target<T: ProbeFloat> {
    /// Evaluate the accumulation on one input.
    fn call(&mut self, x: &[T]) -> Result<T, TargetError>;

    /// The format the target's *inputs* are stored in, when narrower than `T` (f16 or
    /// bf16 operands accumulated in f32): masks and units are then chosen to be exact in
    /// both. `None` (the default) means the inputs are `T`.
    fn input_format(&self) -> Option<crate::float::FloatFormat> {
        None
    }

    /// The format the random inputs of the replay checks are drawn from, when it differs
    /// from [`input_format`](Target::input_format): a product target ([`Products`]) is
    /// probed with masks up to the square of its operands' range but can only be given
    /// values that one operand holds. `None` (the default) means the input format.
    fn replay_format(&self) -> Option<crate::float::FloatFormat> {
        None
    }

    /// Fill `x` with a random input of seed `seed` that this target can answer, for the
    /// replay checks, and return `true`; `false` (the default) lets the engine draw
    /// values of the [`replay_format`](Target::replay_format). A product target draws
    /// both operands ([`random_operands`]): products of two narrow values spread over
    /// twice their range, which is what makes two trees give different bits; one operand
    /// times one would sum exactly in any order.
    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        let _ = (seed, x);
        false
    }

    /// For each value of `x`, the sum `ea + eb` of the exponents of the two operands it
    /// is the product of (each clamped below at its format's smallest normal exponent),
    /// when `x` is the random input this target drew last and has not been called on
    /// yet; `None` (the default) otherwise. A product's value alone does not say this
    /// (`1.5 x 1.5` and `1.125 x 2` both give 2.25), and Tensor Cores align products by
    /// it ([`crate::fused::Alignment::OperandExponents`]): the verification of a fused
    /// tree fits that rule with these exponents.
    ///
    /// ```
    /// use fprev::float::F8E4M3;
    /// use fprev::target::{Products, Target};
    /// let mut t = Products::new(|a: &[F8E4M3], b: &[F8E4M3]| -> f32 { fprev::fused::BlockFma::ADA_FP8.dot(a, b) });
    /// let mut x = [0.0f32; 4];
    /// assert!(t.random_input(7, &mut x));
    /// let e = t.operand_exponents(&x).expect("drawn operands");
    /// // a product of two normal values lies in [2^(ea+eb), 2^(ea+eb+2))
    /// for (v, e) in x.iter().zip(e) {
    ///     assert!(v.abs() >= 2f32.powi(e) && v.abs() < 2f32.powi(e + 2));
    /// }
    /// ```
    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        let _ = x;
        None
    }

    /// Answer inputs that hold several probes each, one answer per input into `out`
    /// (length [`ProbeSets::calls`]), or `None` (the default) when the target answers
    /// one probe per input only.
    ///
    /// fprev proves a guessed tree with such inputs in several times fewer calls
    /// when the target answers them: implement it wherever a call on a slightly changed
    /// input costs no more than [`call`](Target::call) (an in-process function, a
    /// callback that reads a reused buffer). A target that must ship every input
    /// elsewhere, where one probe is two positions on the wire, keeps the default.
    ///
    /// ```
    /// use fprev::target::{FnTarget, Probe, ProbeSets, Target};
    /// let mut t = FnTarget(|x: &[f64]| x.iter().sum::<f64>());
    /// let bg = [1.0; 4];
    /// let probes = [Probe { plus: 0, minus: 1 }, Probe { plus: 2, minus: 3 }];
    /// let sets = ProbeSets { background: &bg, probes: &probes, masks: &[8.0, 16.0], ends: &[1, 2] };
    /// let mut out = [0.0; 2];
    /// t.probe_sets(&sets, &mut out).unwrap()?;
    /// assert_eq!(out, [2.0, 2.0]);
    /// # Ok::<(), fprev::target::TargetError>(())
    /// ```
    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        let _ = (sets, out);
        None
    }

    /// Answer every probe of `batch` into `out` (same length as `batch.probes`).
    ///
    /// The default reuses one buffer: set the two masks, call, restore them.
    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        let mut buf = batch.background.to_vec();
        let masks = (batch.mask, neg(batch.mask));
        for (k, p) in batch.probes.iter().enumerate() {
            let guard = MaskGuard::set(&mut buf, masks, *p);
            let r = self.call(guard.buf).map_err(|mut e| {
                e.probe.get_or_insert(*p);
                e
            })?;
            out[k] = r;
        }
        Ok(())
    }
}

/// Sets two masks in a reused buffer and puts the background back when dropped, even
/// when the target panics.
struct MaskGuard<'b, T: ProbeFloat> {
    buf: &'b mut [T],
    probe: Probe,
    background: (T, T),
}

impl<'b, T: ProbeFloat> MaskGuard<'b, T> {
    /// `masks` is `(M, -M)`.
    fn set(buf: &'b mut [T], masks: (T, T), probe: Probe) -> Self {
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

/// Runs `f`, turning a panic into a [`TargetError`] that carries its message.
pub(crate) fn caught<R>(what: &str, f: impl FnOnce() -> R) -> Result<R, TargetError> {
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|p| TargetError::new(format!("{what} panicked: {}", panic_message(p))))
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// A `FnMut(&[T]) -> T` as a sequential target; panics become [`TargetError`]s.
///
/// ```
/// use fprev::target::{FnTarget, Target};
/// let mut t = FnTarget(|x: &[f64]| x.iter().sum::<f64>());
/// assert_eq!(t.call(&[1.0, 2.0]).unwrap(), 3.0);
/// ```
pub struct FnTarget<F>(pub F);

impl<T: ProbeFloat, F: FnMut(&[T]) -> T> Target<T> for FnTarget<F> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let f = &mut self.0;
        caught("the target", || f(x))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        probe_each(&mut self.0, batch, out)
    }

    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        Some(sets_each(&mut self.0, sets, 0..sets.calls(), out))
    }
}

/// Answer a batch with a plain function from one reused buffer, the whole loop under one
/// panic guard (per call it was a visible share of a cheap target's reveal); a panic
/// names the probe being answered, and the masks are restored as it unwinds.
fn probe_each<T: ProbeFloat>(
    f: &mut impl FnMut(&[T]) -> T,
    batch: &ProbeBatch<'_, T>,
    out: &mut [T],
) -> Result<(), TargetError> {
    let mut buf = batch.background.to_vec();
    let masks = (batch.mask, neg(batch.mask));
    let mut k = 0;
    caught("the target", || {
        while k < batch.probes.len() {
            let guard = MaskGuard::set(&mut buf, masks, batch.probes[k]);
            out[k] = f(guard.buf);
            drop(guard);
            k += 1;
        }
    })
    .map_err(|mut e| {
        e.probe = batch.probes.get(k).copied();
        e
    })
}

/// A thread-safe `Fn(&[T]) -> T + Sync` whose probes run in parallel on rayon, one
/// reused buffer per worker. A batch whose work, estimated from its first probe's time,
/// is under [`PARALLEL_MIN_WORK`] runs on the calling thread: waking the pool costs more
/// than such a batch (at n = 1024 on a 0.3 us target, two cores took 1.9 times as long
/// as one).
///
/// ```
/// use fprev::target::{SyncFnTarget, Target};
/// let mut t = SyncFnTarget(|x: &[f32]| x.iter().sum::<f32>());
/// assert_eq!(t.call(&[1.0, 2.0]).unwrap(), 3.0);
/// ```
pub struct SyncFnTarget<F>(pub F);

impl<T: ProbeFloat, F: Fn(&[T]) -> T + Sync> Target<T> for SyncFnTarget<F> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let f = &self.0;
        caught("the target", || f(x))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        let f = &self.0;
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || batch.probes.len() < 4 {
            return FnTargetRef(f).probe_batch(batch, out);
        }
        // the first probe alone, timed, decides how the rest run
        let (first, rest) = batch.probes.split_at(1);
        let (out_first, out) = out.split_at_mut(1);
        let started = std::time::Instant::now();
        FnTargetRef(f).probe_batch(
            &ProbeBatch {
                probes: first,
                ..*batch
            },
            out_first,
        )?;
        let rest_batch = ProbeBatch {
            probes: rest,
            ..*batch
        };
        let work = u32::try_from(rest.len())
            .ok()
            .and_then(|k| started.elapsed().checked_mul(k));
        if work.is_some_and(|w| w < PARALLEL_MIN_WORK) {
            return FnTargetRef(f).probe_batch(&rest_batch, out);
        }
        let batch = &rest_batch;
        let chunk = batch.probes.len().div_ceil(threads * 4).max(2);
        out.par_chunks_mut(chunk)
            .zip(batch.probes.par_chunks(chunk))
            .try_for_each(|(out, probes)| {
                let sub = ProbeBatch {
                    background: batch.background,
                    probes,
                    mask: batch.mask,
                };
                FnTargetRef(f).probe_batch(&sub, out)
            })
    }

    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        let f = &self.0;
        let calls = sets.calls();
        let threads = rayon::current_num_threads().max(1);
        if threads == 1 || calls < 4 {
            return Some(sets_each(&mut &f, sets, 0..calls, out));
        }
        // the first input alone, timed, decides how the rest run (as for probe batches)
        let started = std::time::Instant::now();
        if let Err(e) = sets_each(&mut &f, sets, 0..1, &mut out[..1]) {
            return Some(Err(e));
        }
        let work = u32::try_from(calls - 1)
            .ok()
            .and_then(|k| started.elapsed().checked_mul(k));
        if work.is_some_and(|w| w < PARALLEL_MIN_WORK) {
            return Some(sets_each(&mut &f, sets, 1..calls, &mut out[1..]));
        }
        let chunk = (calls - 1).div_ceil(threads * 4).max(2);
        Some(
            out[1..]
                .par_chunks_mut(chunk)
                .enumerate()
                .try_for_each(|(i, out)| {
                    let start = 1 + i * chunk;
                    sets_each(&mut &f, sets, start..start + out.len(), out)
                }),
        )
    }
}

/// Estimated work below which [`SyncFnTarget`] answers a batch on the calling thread.
pub const PARALLEL_MIN_WORK: std::time::Duration = std::time::Duration::from_micros(500);

/// Sequential adapter over a shared `Fn`, used by each parallel worker.
struct FnTargetRef<'f, F>(&'f F);

impl<T: ProbeFloat, F: Fn(&[T]) -> T> Target<T> for FnTargetRef<'_, F> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let f = self.0;
        caught("the target", || f(x))
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        probe_each(&mut self.0, batch, out)
    }
}

impl<T: ProbeFloat, X: Target<T> + ?Sized> Target<T> for &mut X {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        (**self).call(x)
    }
    fn input_format(&self) -> Option<crate::float::FloatFormat> {
        (**self).input_format()
    }
    fn replay_format(&self) -> Option<crate::float::FloatFormat> {
        (**self).replay_format()
    }
    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        (**self).random_input(seed, x)
    }
    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        (**self).operand_exponents(x)
    }
    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        (**self).probe_batch(batch, out)
    }
    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        (**self).probe_sets(sets, out)
    }
}

/// The operands of a product target's last random input: a product's value alone does
/// not say how it splits, so the target that drew the operands for a replay check keeps
/// them until the engine asks for that input. Operands are any type that converts to
/// `f64` exactly (`f64` itself where the operand type is only known at run time).
///
/// ```
/// use fprev::target::DrawnOperands;
/// let mut d = DrawnOperands::default();
/// let mut x = [0.0f32; 2];
/// assert!(d.fill(&mut x, vec![2.0f64, 3.0], vec![0.5, 4.0], |v| *v));
/// assert_eq!(x, [1.0, 12.0]);
/// assert_eq!(d.take(&x), Some((vec![2.0, 3.0], vec![0.5, 4.0])));
/// assert_eq!(d.take(&x), None); // given back once
/// ```
pub struct DrawnOperands<E> {
    drawn: Option<(Vec<u64>, Vec<E>, Vec<E>)>,
}

impl<E> Default for DrawnOperands<E> {
    fn default() -> Self {
        DrawnOperands { drawn: None }
    }
}

impl<E> DrawnOperands<E> {
    /// Write the products of `a` and `b` into `x` and keep the operands; `false` (and
    /// nothing kept) when a product is not exact in `T`.
    pub fn fill<T: ProbeFloat>(
        &mut self,
        x: &mut [T],
        a: Vec<E>,
        b: Vec<E>,
        value: impl Fn(&E) -> f64,
    ) -> bool {
        self.drawn = None;
        for ((v, p), q) in x.iter_mut().zip(&a).zip(&b) {
            let exact = value(p) * value(q);
            *v = T::from_f64_round(exact);
            if v.to_f64() != exact {
                return false;
            }
        }
        self.drawn = Some((x.iter().map(|v| v.to_bits_u64()).collect(), a, b));
        true
    }

    /// The operands of `x` if it is the input drawn last (bit for bit), kept.
    ///
    /// ```
    /// use fprev::target::DrawnOperands;
    /// let mut d = DrawnOperands::default();
    /// let mut x = [0.0f32; 1];
    /// assert!(d.fill(&mut x, vec![2.0f64], vec![3.0], |v| *v));
    /// assert_eq!(d.peek(&x), Some((&[2.0][..], &[3.0][..])));
    /// assert!(d.take(&x).is_some()); // still there after a peek
    /// ```
    pub fn peek<T: ProbeFloat>(&self, x: &[T]) -> Option<(&[E], &[E])> {
        let (bits, a, b) = self.drawn.as_ref()?;
        let same = bits.len() == x.len() && bits.iter().zip(x).all(|(&w, v)| w == v.to_bits_u64());
        same.then_some((a.as_slice(), b.as_slice()))
    }

    /// The operands of `x` if it is the input drawn last (bit for bit), given back once.
    pub fn take<T: ProbeFloat>(&mut self, x: &[T]) -> Option<(Vec<E>, Vec<E>)> {
        let same = self.drawn.as_ref().is_some_and(|(bits, _, _)| {
            bits.len() == x.len() && bits.iter().zip(x).all(|(&w, v)| w == v.to_bits_u64())
        });
        if !same {
            return None;
        }
        self.drawn.take().map(|(_, a, b)| (a, b))
    }
}

/// A dot product `f(a, b)` as a target: each value the engine sends is split into a
/// factor of `a` and a factor of `b`, so masks and units spread across both operands
/// (`M = Ma x Mb`, `e = ea x eb`, FPRev paper §8.1.1). Formats with little range (FP8
/// E4M3 reaches only 448) cannot swamp a sum of units with a mask in one operand; as a
/// product they reach the square of their range. Random check inputs are values of `I`
/// times one.
///
/// ```
/// use fprev::float::F8E4M3;
/// use fprev::fused::BlockFma;
/// use fprev::target::Products;
/// let model = BlockFma::H100_FP8;
/// let dot = |a: &[F8E4M3], b: &[F8E4M3]| -> f32 { model.dot(a, b) };
/// let r = fprev::Reveal::new(64).run_target(Products::new(dot))?;
/// assert_eq!(r.tree, model.tree(64));
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub struct Products<I, F> {
    f: F,
    a: Vec<I>,
    b: Vec<I>,
    split: OperandSplit<I>,
}

impl<I: ProbeFloat, F> Products<I, F> {
    /// Wrap `f(a, b) -> T`, a dot product of two vectors of `I`.
    pub fn new(f: F) -> Products<I, F> {
        Products {
            f,
            a: Vec::new(),
            b: Vec::new(),
            split: OperandSplit::default(),
        }
    }
}

/// Two random vectors of `I` (seeded) whose products are exact in `acc` and spread
/// over many binades: signs, significands and exponents drawn uniformly, exponents
/// within `I`'s normal range and small enough that `n` products cannot overflow `acc`.
///
/// ```
/// use fprev::float::{ProbeFloat, F8E4M3};
/// let (a, b) = fprev::target::random_operands::<F8E4M3>(7, 64, f32::FORMAT);
/// assert_eq!(a.len(), 64);
/// let p: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x.to_f64() * y.to_f64()).collect();
/// assert!(p.iter().all(|v| (*v as f32) as f64 == *v)); // exact in f32
/// ```
pub fn random_operands<I: ProbeFloat>(
    seed: u64,
    n: usize,
    acc: crate::float::FloatFormat,
) -> (Vec<I>, Vec<I>) {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xD07_0000);
    let fmt = I::FORMAT;
    let headroom = (usize::BITS - n.leading_zeros()) as i32 + 2;
    let hi = (fmt.max_exp - 1).min((acc.max_exp - headroom) / 2).min(24);
    let lo = fmt.min_exp.max(-hi).max(-24);
    let frac_bits = fmt.precision - 1;
    let mut draw = || {
        let r = rng.next_u64();
        let span = (hi - lo + 1).max(1) as u64;
        let e = lo + ((r >> 8) % span) as i32;
        let m = (r >> 40) & ((1 << frac_bits) - 1);
        let v = (1.0 + m as f64 / (1u64 << frac_bits) as f64) * 2f64.powi(e);
        I::from_f64_round(if r & 1 == 1 { -v } else { v })
    };
    let a: Vec<I> = (0..n).map(|_| draw()).collect();
    let b: Vec<I> = (0..n).map(|_| draw()).collect();
    (a, b)
}

/// `x` as `a * b` with both factors values of `I`: `(x, 1)` when `I` holds `x`, else a
/// power of two split between the operands; `None` when neither works.
pub fn split_product<I: ProbeFloat>(x: f64) -> Option<(I, I)> {
    let one = I::from_f64_round(1.0);
    let xi = I::from_f64_round(x);
    if xi.to_f64() == x {
        return Some((xi, one));
    }
    if x == 0.0 || !x.is_finite() {
        return None;
    }
    let e = x.abs().log2();
    if e.fract() != 0.0 {
        return None;
    }
    let e = e as i32;
    let fmt = I::FORMAT;
    let (lo, hi) = (fmt.min_subnormal_exp(), fmt.max_exp);
    // a's exponent as high as it goes, b's what remains, both in range
    let ea = e.saturating_sub(lo).min(hi).max(lo);
    let eb = e - ea;
    if !(lo..=hi).contains(&eb) {
        return None;
    }
    let a = I::from_f64_round(x.signum() * 2f64.powi(ea));
    let b = I::from_f64_round(2f64.powi(eb));
    (a.to_f64() * b.to_f64() == x).then_some((a, b))
}

/// How a product target turns the engine's values into its two operands: the operands
/// it drew for a replay check (kept by [`DrawnOperands`]) or, for probes, each value
/// split by [`split_product`]. One copy for [`Products`], [`crate::ops::Batched`] and the
/// cuda gemm.
pub(crate) struct OperandSplit<I> {
    drawn: DrawnOperands<I>,
}

impl<I> Default for OperandSplit<I> {
    fn default() -> Self {
        OperandSplit {
            drawn: DrawnOperands::default(),
        }
    }
}

impl<I: ProbeFloat> OperandSplit<I> {
    /// Draw random operands for a replay check, write their products into `x` and keep
    /// them ([`Target::random_input`]).
    pub fn random_input<T: ProbeFloat>(&mut self, seed: u64, x: &mut [T]) -> bool {
        let (a, b) = random_operands::<I>(seed, x.len(), T::FORMAT);
        self.drawn.fill(x, a, b, |v| v.to_f64())
    }

    /// [`Target::operand_exponents`] of `x`: the drawn operands' exponent sums.
    pub fn operand_exponents<T: ProbeFloat>(&self, x: &[T]) -> Option<Vec<i32>> {
        let (a, b) = self.drawn.peek(x)?;
        let a: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let b: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
        Some(exponent_sums(&a, &b, I::FORMAT))
    }

    /// `x` as operands `a` and `b` (cleared first): the drawn ones if `x` is the input
    /// drawn last, else every value split; an error names a value that is no product of
    /// two `I` values.
    pub fn operands<T: ProbeFloat>(
        &mut self,
        x: &[T],
        a: &mut Vec<I>,
        b: &mut Vec<I>,
    ) -> Result<(), TargetError> {
        if let Some((da, db)) = self.drawn.take(x) {
            *a = da;
            *b = db;
            return Ok(());
        }
        split_values(x, a, b)
    }
}

/// `ea + eb` for each pair of operands `a[i]`, `b[i]` of format `fmt`, what
/// [`Target::operand_exponents`] returns: each exponent clamped below at the format's
/// smallest normal exponent (a zero operand counts as that exponent).
///
/// ```
/// use fprev::float::{ProbeFloat, F8E4M3};
/// let e = fprev::target::exponent_sums(&[1.5, 0.25, 2f64.powi(-9)], &[1.5, 8.0, 1.0], F8E4M3::FORMAT);
/// assert_eq!(e, [0, 1, -6]); // 2^-9 is subnormal in E4M3: its exponent is taken as -6
/// ```
pub fn exponent_sums(a: &[f64], b: &[f64], fmt: crate::float::FloatFormat) -> Vec<i32> {
    let e = |v: f64| {
        if v == 0.0 || !v.is_finite() {
            fmt.min_exp
        } else {
            // exact: the exponent field of an f64 (every operand format fits in one)
            let field = ((v.to_bits() >> 52) & 0x7FF) as i32;
            (field - 1023).max(fmt.min_exp)
        }
    };
    a.iter().zip(b).map(|(&p, &q)| e(p) + e(q)).collect()
}

/// Every value of `x` split by [`split_product`] into `a` and `b` (cleared first); an
/// error names the first value that is no product of two `I` values.
pub(crate) fn split_values<T: ProbeFloat, I: ProbeFloat>(
    x: &[T],
    a: &mut Vec<I>,
    b: &mut Vec<I>,
) -> Result<(), TargetError> {
    a.clear();
    b.clear();
    for (i, v) in x.iter().enumerate() {
        let (p, q) = split_product::<I>(v.to_f64()).ok_or_else(|| {
            TargetError::new(format!(
                "value {v} at {i} is not a product of two {} values",
                I::FORMAT.name
            ))
        })?;
        a.push(p);
        b.push(q);
    }
    Ok(())
}

impl<I: ProbeFloat, T: ProbeFloat, F: FnMut(&[I], &[I]) -> T> Target<T> for Products<I, F> {
    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        self.split.random_input(seed, x)
    }

    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        self.split.operand_exponents(x)
    }

    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.split.operands(x, &mut self.a, &mut self.b)?;
        let f = &mut self.f;
        let (a, b) = (&self.a, &self.b);
        caught("the dot product", || f(a, b))
    }

    fn input_format(&self) -> Option<crate::float::FloatFormat> {
        Some(I::FORMAT.product())
    }

    fn replay_format(&self) -> Option<crate::float::FloatFormat> {
        Some(I::FORMAT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_restored_after_panic() {
        let bg = vec![1.0f32; 6];
        let probes = [Probe { plus: 1, minus: 4 }, Probe { plus: 2, minus: 3 }];
        let batch = ProbeBatch {
            background: &bg,
            probes: &probes,
            mask: 64.0,
        };
        let mut calls = 0;
        let mut t = FnTarget(|x: &[f32]| {
            calls += 1;
            if calls == 2 {
                panic!("boom");
            }
            x.iter().sum::<f32>()
        });
        let mut out = [0.0f32; 2];
        let e = t.probe_batch(&batch, &mut out).unwrap_err();
        assert!(e.message.contains("boom"));
        assert_eq!(e.probe, Some(probes[1]));
    }

    /// A left-to-right sum that takes at least 20 us and notes when it ran on the pool.
    fn slow_sum(x: &[f32], on_pool: &std::sync::atomic::AtomicBool) -> f32 {
        std::thread::sleep(std::time::Duration::from_micros(20));
        if rayon::current_thread_index().is_some() {
            on_pool.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        x.iter().fold(0.0f32, |a, &b| a + b)
    }

    #[test]
    fn parallel_matches_sequential() {
        let bg = vec![1.0f32; 64];
        let probes: Vec<Probe> = (1..64).map(|j| Probe { plus: 0, minus: j }).collect();
        let batch = ProbeBatch {
            background: &bg,
            probes: &probes,
            mask: (1u64 << 40) as f32,
        };
        let on_pool = std::sync::atomic::AtomicBool::new(false);
        let sum = |x: &[f32]| x.iter().fold(0.0f32, |a, &b| a + b);
        // 63 probes of at least 20 us: over PARALLEL_MIN_WORK, so the pool answers them
        let slow = |x: &[f32]| slow_sum(x, &on_pool);
        let mut want = vec![0.0f32; probes.len()];
        FnTarget(sum).probe_batch(&batch, &mut want).unwrap();
        for f in [&sum as &(dyn Fn(&[f32]) -> f32 + Sync), &slow] {
            let mut got = vec![0.0f32; probes.len()];
            SyncFnTarget(f).probe_batch(&batch, &mut got).unwrap();
            assert_eq!(got, want);
        }
        if rayon::current_num_threads() > 1 {
            assert!(
                on_pool.into_inner(),
                "a slow batch ran on the calling thread only"
            );
        }
    }

    #[test]
    fn probe_sets_answer_alike_in_parallel_and_in_sequence() {
        // 40 inputs of two probes each over 160 positions, masks 2^40 and 2^41
        let bg = vec![1.0f32; 160];
        let probes: Vec<Probe> = (0..80)
            .map(|k| Probe {
                plus: 2 * k,
                minus: 2 * k + 1,
            })
            .collect();
        let masks: Vec<f32> = (0..80).map(|k| (1u64 << (40 + k % 2)) as f32).collect();
        let ends: Vec<usize> = (1..=40).map(|c| 2 * c).collect();
        let sets = ProbeSets {
            background: &bg,
            probes: &probes,
            masks: &masks,
            ends: &ends,
        };
        let on_pool = std::sync::atomic::AtomicBool::new(false);
        let sum = |x: &[f32]| x.iter().fold(0.0f32, |a, &b| a + b);
        let slow = |x: &[f32]| slow_sum(x, &on_pool);
        let mut want = vec![0.0f32; 40];
        FnTarget(sum).probe_sets(&sets, &mut want).unwrap().unwrap();
        // a left-to-right sum loses the units before its first mask, so the answers
        // differ between inputs
        assert!(want.iter().any(|&v| v != want[0]));
        for f in [&sum as &(dyn Fn(&[f32]) -> f32 + Sync), &slow] {
            let mut got = vec![0.0f32; 40];
            SyncFnTarget(f)
                .probe_sets(&sets, &mut got)
                .unwrap()
                .unwrap();
            assert_eq!(got, want);
        }
        if rayon::current_num_threads() > 1 {
            assert!(
                on_pool.into_inner(),
                "slow probe sets ran on one thread only"
            );
        }
        // the buffer is restored between inputs: each input alone gives the same answer
        let mut x = Vec::new();
        for (c, &w) in want.iter().enumerate() {
            sets.fill(c, &mut x);
            assert_eq!(sum(&x), w, "input {c}");
        }
    }
}
