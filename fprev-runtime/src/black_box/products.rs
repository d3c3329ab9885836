//! A dot product as a target, masks and units spread over both operands.

use super::functions::caught;
use super::operands::OperandSplit;
use super::target_trait::{Target, TargetError};
use crate::float::ProbeFloat;

/// A dot product `f(a, b)` as a target: each value the engine sends is split into a
/// factor of `a` and a factor of `b`, so masks and units spread across both operands
/// (`M = Ma x Mb`, `e = ea x eb`, FPRev paper §8.1.1). Formats with little range (FP8
/// E4M3 reaches only 448) cannot swamp a sum of units with a mask in one operand; as a
/// product they reach the square of their range. Past even that (more than 256 E4M3
/// products into f32), a block-FMA chain is revealed through a window: its first
/// products with the others zero, the chain they show proved over all of them (see
/// docs/tensor-cores.md, "FP8 beyond one mask's reach"). Random check inputs draw both
/// operands.
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
