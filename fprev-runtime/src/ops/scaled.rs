//! A block-scaled dot product as a target: `D = sum_k a_k b_k sa_blk(k) sb_blk(k)`,
//! probed through its scales.
//!
//! One FP4 element cannot hold a mask (E2M1 reaches 6), but a block's scale can. So the
//! engine's leaves are the `K / block` blocks: a leaf's value `2^E` is made of one
//! element product per block (or `2^j` equal ones, for the largest masks) and the two
//! scales, the rest of the block zero. The products inside a block share its scales and
//! span at most `2^8` (FP4) to `2^18` (FP6) between them, less than the `2^26` a mask
//! needs above a unit in f32, so no input tells their order apart: each block is one leaf
//! of the tree, a multi-way group of its products, and the report says so. FP8 products
//! span `2^36` and more, which separates them: their order inside the blocks is revealed
//! apart, every scale 1, as a plain dot of the elements (`UnitScaled`). The arithmetic
//! inside (how many products are summed exactly, what the terms are aligned by, the bits
//! kept) is then fitted on random full blocks ([`reveal_scaled_dot`](super::reveal_scaled_dot)).

use crate::black_box::{OperandSplit, Target, TargetError};
use crate::float::{ElementType, FloatFormat, ProbeFloat, ScaleType};
use crate::fused::scaled_leaf_format;

/// The shape of a block-scaled dot: `k` elements per operand of `element`, one
/// `scale` per `block` consecutive elements.
///
/// ```
/// use fprev::float::{ElementType, ScaleType};
/// use fprev::ops::ScaledDotShape;
/// let s = ScaledDotShape { k: 64, block: 16, element: ElementType::E2M1, scale: ScaleType::Ue4m3 };
/// assert_eq!(s.blocks(), 4);
/// assert_eq!(s.line_len(), 2 * 64 + 2 * 4);
/// assert!(s.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScaledDotShape {
    /// Elements per operand.
    pub k: usize,
    /// Elements per scale.
    pub block: usize,
    /// The elements' type.
    pub element: ElementType,
    /// The scales' type.
    pub scale: ScaleType,
}

impl ScaledDotShape {
    /// Scales per operand, `k / block`.
    pub fn blocks(&self) -> usize {
        self.k / self.block.max(1)
    }

    /// Numbers per probe: `a`, `b`, the scales of `a`, the scales of `b`.
    pub fn line_len(&self) -> usize {
        2 * self.k + 2 * self.blocks()
    }

    /// Why the shape is not one: a block of zero, or `k` no positive multiple of it.
    ///
    /// ```
    /// use fprev::float::{ElementType, ScaleType};
    /// use fprev::ops::ScaledDotShape;
    /// let s = ScaledDotShape { k: 40, block: 32, element: ElementType::E2M1, scale: ScaleType::Ue8m0 };
    /// assert!(s.validate().unwrap_err().contains("multiple"));
    /// ```
    pub fn validate(&self) -> Result<(), String> {
        if self.block == 0 || self.k == 0 || self.k % self.block != 0 {
            return Err(format!(
                "k = {} must be a positive multiple of the block {}",
                self.k, self.block
            ));
        }
        Ok(())
    }

    /// The range of the engine's leaves: powers of two that one block can hold, up to
    /// `block` equal products at the largest.
    pub fn leaf_format(&self) -> FloatFormat {
        let f = scaled_leaf_format(self.element, self.scale);
        let many = (usize::BITS - 1 - self.block.max(1).leading_zeros()) as i32;
        FloatFormat {
            max_exp: f.max_exp + many,
            ..f
        }
    }
}

/// The operands of one call: `k` element values of each operand and `k / block` scale
/// values of each, all exact `f64`s of their types.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScaledOperands {
    /// `a[0..k)`.
    pub a: Vec<f64>,
    /// `b[0..k)`.
    pub b: Vec<f64>,
    /// The scales of `a`'s blocks.
    pub sa: Vec<f64>,
    /// The scales of `b`'s blocks.
    pub sb: Vec<f64>,
}

impl ScaledOperands {
    /// All zero, with the smallest scales: `k` elements and `k / block` scales each.
    pub fn zeros(shape: &ScaledDotShape) -> ScaledOperands {
        let s = crate::exact::pow2(shape.scale.powers().0);
        ScaledOperands {
            a: vec![0.0; shape.k],
            b: vec![0.0; shape.k],
            sa: vec![s; shape.blocks()],
            sb: vec![s; shape.blocks()],
        }
    }

    /// The exact value of the dot product (no rounding), for checks.
    ///
    /// ```
    /// use fprev::ops::ScaledOperands;
    /// let o = ScaledOperands { a: vec![1.5, 2.0], b: vec![2.0, 0.5], sa: vec![4.0], sb: vec![0.5] };
    /// assert_eq!(o.exact(2), 8.0);
    /// ```
    pub fn exact(&self, block: usize) -> f64 {
        let mut acc = crate::exact::Accumulator::new();
        for (i, (x, y)) in self.a.iter().zip(&self.b).enumerate() {
            let blk = i / block.max(1);
            // exact in f64: two elements of at most 4 significant bits, two scales of 4
            acc.add(x * y * self.sa[blk] * self.sb[blk]);
        }
        acc.round_to_format(53, -1022, 1023)
    }

    /// The bytes the `--exec` binary protocol sends for these operands: one byte per
    /// value, its code in `shape`'s types (an FP4 or FP6 element in the low bits), in
    /// the text line's order (`a`, `b`, `a`'s scales, `b`'s scales): `2k + 2k/block`
    /// bytes. `None` when a value is not exact in its type.
    ///
    /// ```
    /// use fprev::float::{ElementType, ScaleType};
    /// use fprev::ops::{ScaledDotShape, ScaledOperands};
    /// let shape = ScaledDotShape { k: 2, block: 2, element: ElementType::E2M1, scale: ScaleType::Ue8m0 };
    /// let o = ScaledOperands { a: vec![1.5, 0.0], b: vec![-2.0, 6.0], sa: vec![0.25], sb: vec![1024.0] };
    /// assert_eq!(o.bytes(&shape), Some(vec![0b0011, 0, 0b1100, 0b0111, 125, 137]));
    /// ```
    pub fn bytes(&self, shape: &ScaledDotShape) -> Option<Vec<u8>> {
        let elements = self.a.iter().chain(&self.b).map(|&x| shape.element.code(x));
        let scales = self.sa.iter().chain(&self.sb).map(|&s| shape.scale.code(s));
        elements.chain(scales).collect()
    }

    /// The line of numbers the `--exec` text protocol sends for these operands.
    ///
    /// ```
    /// use fprev::ops::ScaledOperands;
    /// let o = ScaledOperands { a: vec![1.5, 0.0], b: vec![-2.0, 6.0], sa: vec![0.25], sb: vec![1024.0] };
    /// assert_eq!(o.line(), "1.5 0 -2 6 0.25 1024");
    /// ```
    pub fn line(&self) -> String {
        let mut s = String::new();
        for v in self.a.iter().chain(&self.b).chain(&self.sa).chain(&self.sb) {
            if !s.is_empty() {
                s.push(' ');
            }
            // Rust's Display of f64 is the shortest decimal that reads back exactly
            s += &if *v == 0.0 {
                "0".to_string()
            } else {
                format!("{v}")
            };
        }
        s
    }
}

/// A block-scaled dot product as a [`Target`] over its blocks (see the module docs):
/// `f` answers [`ScaledOperands`] with the dot product in f32.
///
/// ```
/// use fprev::float::{ElementType, ScaleType};
/// use fprev::fused::BlockScaledFma;
/// use fprev::ops::{ScaledDot, ScaledDotShape};
/// let model = BlockScaledFma::B200_MXF4;
/// let shape = ScaledDotShape { k: 128, block: 32, element: ElementType::E2M1, scale: ScaleType::Ue8m0 };
/// let target = ScaledDot::new(shape, |o: &fprev::ops::ScaledOperands| {
///     model.dot_add(&o.a, &o.b, &o.sa, &o.sb, 0.0).map_err(|e| fprev::target::TargetError::new(e.to_string()))
/// });
/// let r = fprev::Reveal::new(shape.blocks()).run_target(target)?;
/// assert_eq!(r.tree, model.tree(4));
/// # Ok::<(), fprev::RevealError>(())
/// ```
pub struct ScaledDot<F> {
    shape: ScaledDotShape,
    f: F,
    /// The operands of the last random input, with the bits of the leaves they make.
    drawn: Option<(Vec<u64>, ScaledOperands)>,
    buf: ScaledOperands,
}

impl<F: FnMut(&ScaledOperands) -> Result<f32, TargetError>> ScaledDot<F> {
    /// Wrap `f`, a block-scaled dot of this shape.
    pub fn new(shape: ScaledDotShape, f: F) -> ScaledDot<F> {
        ScaledDot {
            shape,
            f,
            drawn: None,
            buf: ScaledOperands::zeros(&shape),
        }
    }

    /// The shape.
    pub fn shape(&self) -> ScaledDotShape {
        self.shape
    }

    /// Call the dot product on operands of the caller's (the arithmetic fit's random
    /// full blocks).
    pub fn call_operands(&mut self, o: &ScaledOperands) -> Result<f32, TargetError> {
        (self.f)(o)
    }

    /// Write leaf `j`'s value `v` (zero, or a signed power of two) into block `j` of
    /// `self.buf`; `false` when no element products and scales make it.
    fn set_leaf(&mut self, j: usize, v: f64) -> bool {
        let (shape, o) = (self.shape, &mut self.buf);
        let base = j * shape.block;
        o.a[base..base + shape.block].fill(0.0);
        o.b[base..base + shape.block].fill(0.0);
        let (slo, shi) = shape.scale.powers();
        if v == 0.0 {
            o.sa[j] = crate::exact::pow2(slo);
            o.sb[j] = crate::exact::pow2(slo);
            return true;
        }
        let e = v.abs().log2();
        if !v.is_finite() || e.fract() != 0.0 {
            return false;
        }
        let e = e as i32;
        let ef = shape.element.format();
        let (elo, ehi) = (ef.min_subnormal_exp(), ef.max_exp);
        // several equal products only where one cannot reach
        let single_max = 2 * (ehi + shi);
        let mut count_log = 0;
        while e - count_log > single_max && (1usize << (count_log + 1)) <= shape.block {
            count_log += 1;
        }
        let mut rest = e - count_log;
        let mut take = |lo: i32, hi: i32| {
            let t = rest.clamp(lo, hi);
            rest -= t;
            t
        };
        let ea = take(slo, shi);
        let eb = take(slo, shi);
        let xa = take(elo, ehi);
        let xb = take(elo, ehi);
        if rest != 0 {
            return false;
        }
        o.sa[j] = crate::exact::pow2(ea);
        o.sb[j] = crate::exact::pow2(eb);
        let sign = v.signum();
        for i in 0..(1usize << count_log) {
            o.a[base + i] = sign * crate::exact::pow2(xa);
            o.b[base + i] = crate::exact::pow2(xb);
        }
        true
    }
}

impl<F: FnMut(&ScaledOperands) -> Result<f32, TargetError>> Target<f32> for ScaledDot<F> {
    fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
        if let Some((bits, o)) = &self.drawn {
            if bits.len() == x.len() && bits.iter().zip(x).all(|(b, v)| *b == v.to_bits_u64()) {
                let o = o.clone();
                self.drawn = None;
                return (self.f)(&o);
            }
        }
        if x.len() != self.shape.blocks() {
            return Err(TargetError::new(format!(
                "{} values for {} blocks",
                x.len(),
                self.shape.blocks()
            )));
        }
        for (j, v) in x.iter().enumerate() {
            if !self.set_leaf(j, f64::from(*v)) {
                return Err(TargetError::new(format!(
                    "value {v} of block {j} is no product of {} elements and {} scales",
                    self.shape.element.name(),
                    self.shape.scale.name()
                )));
            }
        }
        (self.f)(&self.buf)
    }

    fn input_format(&self) -> Option<FloatFormat> {
        Some(self.shape.leaf_format())
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        Some(self.shape.leaf_format())
    }

    /// One element product of `±1` per block and random scales: the leaves then carry
    /// the scales' significands, and every alignment rule sees the same exponents
    /// (the elements' are zero), so the tree's check does not depend on the rule; the
    /// rule is fitted on full blocks afterwards.
    fn random_input(&mut self, seed: u64, x: &mut [f32]) -> bool {
        use rand_core::{RngCore, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5CA1_ED00);
        let shape = self.shape;
        let mut o = ScaledOperands::zeros(&shape);
        let headroom = (usize::BITS - x.len().leading_zeros()) as i32 + 2;
        let span = ((127 - headroom) / 2).min(30);
        let scale = |rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
            let r = rng.next_u64();
            match shape.scale {
                ScaleType::Ue4m3 => {
                    // normal UE4M3 codes (exponent field 1..=15), not the NaN code
                    let code = 0x08 + (r % (0x7F - 0x08)) as u8;
                    shape.scale.value(code).unwrap_or(1.0)
                }
                _ => crate::exact::pow2((r % (2 * span as u64 + 1)) as i32 - span),
            }
        };
        for (j, xj) in x.iter_mut().enumerate().take(shape.blocks()) {
            let s = if rng.next_u64() & 1 == 1 { -1.0 } else { 1.0 };
            o.a[j * shape.block] = s;
            o.b[j * shape.block] = 1.0;
            o.sa[j] = scale(&mut rng);
            o.sb[j] = scale(&mut rng);
            let v = s * o.sa[j] * o.sb[j];
            *xj = v as f32;
            if f64::from(*xj) != v {
                return false;
            }
        }
        self.drawn = Some((x.iter().map(|v| v.to_bits_u64()).collect(), o));
        true
    }

    fn operand_exponents(&self, x: &[f32]) -> Option<Vec<i32>> {
        let (bits, o) = self.drawn.as_ref()?;
        if bits.len() != x.len() || bits.iter().zip(x).any(|(b, v)| *b != v.to_bits_u64()) {
            return None;
        }
        let t = self.shape.scale;
        Some(
            o.sa.iter()
                .zip(&o.sb)
                .map(|(s, u)| t.exponent(*s) + t.exponent(*u))
                .collect(),
        )
    }
}

/// A [`ScaledDot`] with FP8 elements (`I`: [`F8E4M3`](crate::float::F8E4M3) or
/// [`F8E5M2`](crate::float::F8E5M2)) seen as a plain dot product of its `k` element
/// pairs, every scale 1: the engine's masks and units spread over both operands as
/// [`Products`](crate::target::Products) spreads them, so the order of the products
/// inside the blocks (and across them) is revealed, not only the blocks'.
pub(crate) struct UnitScaled<'a, I, F> {
    dot: &'a mut ScaledDot<F>,
    split: OperandSplit<I>,
    a: Vec<I>,
    b: Vec<I>,
}

impl<'a, I: ProbeFloat, F> UnitScaled<'a, I, F> {
    pub(crate) fn new(dot: &'a mut ScaledDot<F>) -> Self {
        UnitScaled {
            dot,
            split: OperandSplit::default(),
            a: Vec::new(),
            b: Vec::new(),
        }
    }
}

impl<I: ProbeFloat, F: FnMut(&ScaledOperands) -> Result<f32, TargetError>> Target<f32>
    for UnitScaled<'_, I, F>
{
    fn call(&mut self, x: &[f32]) -> Result<f32, TargetError> {
        self.split.operands(x, &mut self.a, &mut self.b)?;
        let o = &mut self.dot.buf;
        if self.a.len() != o.a.len() {
            return Err(TargetError::new(format!(
                "{} values for {} products",
                self.a.len(),
                o.a.len()
            )));
        }
        for (slot, v) in o.a.iter_mut().zip(&self.a) {
            *slot = v.to_f64();
        }
        for (slot, v) in o.b.iter_mut().zip(&self.b) {
            *slot = v.to_f64();
        }
        o.sa.fill(1.0);
        o.sb.fill(1.0);
        (self.dot.f)(&self.dot.buf)
    }

    fn input_format(&self) -> Option<FloatFormat> {
        Some(I::FORMAT.product())
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        Some(I::FORMAT)
    }

    fn random_input(&mut self, seed: u64, x: &mut [f32]) -> bool {
        self.split.random_input(seed, x)
    }

    fn operand_exponents(&self, x: &[f32]) -> Option<Vec<i32>> {
        self.split.operand_exponents(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(element: ElementType, scale: ScaleType, block: usize) -> ScaledDotShape {
        ScaledDotShape {
            k: 4 * block,
            block,
            element,
            scale,
        }
    }

    #[test]
    fn every_power_in_the_leaf_range_is_made_exactly() {
        for element in ElementType::ALL {
            for scale in ScaleType::ALL {
                for block in [16, 32] {
                    let s = shape(element, scale, block);
                    let f = s.leaf_format();
                    let mut t = ScaledDot::new(s, |o: &ScaledOperands| Ok(o.exact(block) as f32));
                    for e in f.min_exp..=f.max_exp {
                        for sign in [1.0, -1.0] {
                            let v = sign * 2f64.powi(e);
                            assert!(t.set_leaf(1, v), "{s:?} 2^{e}");
                            let mut o = t.buf.clone();
                            // only block 1 holds anything
                            for j in [0, 2, 3] {
                                o.a[j * block..(j + 1) * block].fill(0.0);
                            }
                            assert_eq!(o.exact(block), v, "{s:?} 2^{e}");
                            for (i, x) in o.a.iter().chain(&o.b).enumerate() {
                                assert_eq!(element.value(*x), Some(*x), "{s:?} 2^{e} at {i}");
                            }
                            for x in o.sa.iter().chain(&o.sb) {
                                assert!(scale.code(*x).is_some(), "{s:?} 2^{e} scale {x}");
                            }
                        }
                    }
                    assert!(!t.set_leaf(0, 2f64.powi(f.max_exp + 1)));
                    assert!(!t.set_leaf(0, 3.0));
                }
            }
        }
    }

    #[test]
    fn random_inputs_are_answered_with_their_drawn_operands() {
        let s = shape(ElementType::E2M1, ScaleType::Ue4m3, 16);
        let mut t = ScaledDot::new(s, |o: &ScaledOperands| Ok(o.exact(16) as f32));
        let mut x = [0.0f32; 4];
        assert!(t.random_input(3, &mut x));
        assert!(t.operand_exponents(&x).is_some());
        let want: f32 = x.iter().map(|v| f64::from(*v)).sum::<f64>() as f32;
        assert_eq!(t.call(&x).unwrap(), want);
    }
}
