//! The [`Target`] trait every accumulation is revealed through, and [`TargetError`], what
//! a target reports when it cannot answer.

use super::probe::{neg, MaskGuard, Probe, ProbeBatch, ProbeSets};
use crate::float::ProbeFloat;

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
    /// from [`input_format`](Target::input_format): a product target ([`Products`](super::Products)) is
    /// probed with masks up to the square of its operands' range but can only be given
    /// values that one operand holds. `None` (the default) means the input format.
    fn replay_format(&self) -> Option<crate::float::FloatFormat> {
        None
    }

    /// Fill `x` with a random input of seed `seed` that this target can answer, for the
    /// replay checks, and return `true`; `false` (the default) lets the engine draw
    /// values of the [`replay_format`](Target::replay_format). A product target draws
    /// both operands ([`random_operands`](super::random_operands)): products of two narrow values spread over
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

    /// Answer several inputs, one answer per input into `out` (same length as
    /// `inputs`): fprev's random inputs of the known-order filter and of the replay
    /// checks. The default calls [`call`](Target::call) on each in turn; a target that
    /// evaluates many inputs at once (the rows of a batched operation,
    /// [`crate::ops::Batched`]) answers them together.
    ///
    /// ```
    /// use fprev::target::{FnTarget, Target};
    /// let mut t = FnTarget(|x: &[f32]| x.iter().sum::<f32>());
    /// let mut out = [0.0; 2];
    /// t.call_many(&[&[1.0, 2.0], &[3.0, 4.0]], &mut out)?;
    /// assert_eq!(out, [3.0, 7.0]);
    /// # Ok::<(), fprev::target::TargetError>(())
    /// ```
    fn call_many(&mut self, inputs: &[&[T]], out: &mut [T]) -> Result<(), TargetError> {
        for (x, answer) in inputs.iter().zip(out.iter_mut()) {
            *answer = self.call(x)?;
        }
        Ok(())
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
    fn call_many(&mut self, inputs: &[&[T]], out: &mut [T]) -> Result<(), TargetError> {
        (**self).call_many(inputs, out)
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
