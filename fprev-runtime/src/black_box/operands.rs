//! The two operands of a product target: drawn at random for replay checks, or split
//! from the engine's values for probes.

use super::target_trait::TargetError;
use crate::float::ProbeFloat;

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
/// split by [`split_product`]. One copy for [`Products`](super::Products), [`crate::ops::Batched`] and the
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
    /// them ([`Target::random_input`](super::Target::random_input)).
    pub fn random_input<T: ProbeFloat>(&mut self, seed: u64, x: &mut [T]) -> bool {
        let (a, b) = random_operands::<I>(seed, x.len(), T::FORMAT);
        self.drawn.fill(x, a, b, |v| v.to_f64())
    }

    /// [`Target::operand_exponents`](super::Target::operand_exponents) of `x`: the drawn operands' exponent sums.
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
/// [`Target::operand_exponents`](super::Target::operand_exponents) returns: each exponent clamped below at the format's
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
