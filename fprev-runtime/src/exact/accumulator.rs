//! The superaccumulator: a fixed-point number wide enough to hold any sum of `f64` values
//! and of products of two `f64` values without rounding.
//!
//! The value is kept in carry-save form: digits of 32 bits, each stored in an `i64` limb,
//! so an addition touches two or three limbs and never propagates a carry. Carries are
//! resolved ("normalization") only every [`CARRY_BUDGET`] additions, when two accumulators
//! merge, and before rounding. Because the representation is exact, the order in which
//! values arrive cannot change the result: that is the whole point.

use super::format::RoundingFormat;
use super::pow2;

/// Bits per digit. Every limb holds one digit plus the carries not yet propagated.
const DIGIT_BITS: u32 = 32;
const DIGIT_MASK: i64 = (1 << DIGIT_BITS) - 1;
/// Number of limbs: 136 * 32 = 4352 bits, from 2^-2176 up to 2^2176.
pub(crate) const NLIMBS: usize = 136;
/// Weight of bit 0 of limb 0. Products of two subnormals reach down to 2^-2148; products
/// of two huge values reach 2^2048, so 2^2176 leaves room for 2^128 such terms.
pub(crate) const LOW_EXP: i32 = -2176;
/// Additions allowed between normalizations. After normalization every limb is below 2^32;
/// one addition adds less than 2^53 to a limb, so 1000 additions stay below 2^63.
const CARRY_BUDGET: u32 = 1000;
/// Words of an accumulator's fixed-size image: the limbs and one word of flags.
#[cfg(feature = "mpi")]
pub(crate) const WORDS: usize = NLIMBS + 1;
/// Bit pattern of `-0.0`.
pub(crate) const NEG_ZERO_BITS: u64 = 0x8000_0000_0000_0000;

/// An exact, order-independent accumulator of `f64` sums and dot products.
///
/// Every value added is kept exactly (a 4352-bit fixed-point number with deferred carries),
/// so the rounded result depends only on the multiset of values added: not on their order,
/// not on how the work was split across threads, not on how partial accumulators were
/// merged. Rounding happens once, at the end, to nearest with ties to even.
///
/// IEEE special cases behave as IEEE addition would: a NaN anywhere gives NaN, `+inf` and
/// `-inf` together give NaN, an exact sum beyond the largest finite value rounds to the
/// correctly signed infinity, and a sum of only `-0.0` values is `-0.0` (an empty sum is
/// `+0.0`).
///
/// ```
/// use fprev_runtime::exact::Accumulator;
///
/// // Plain f64 addition loses the 1.0 entirely; the accumulator keeps it.
/// let mut acc = Accumulator::new();
/// acc.add_slice(&[1e100, 1.0, -1e100]);
/// assert_eq!(acc.finish(), 1.0);
/// assert_eq!(1e100 + 1.0 - 1e100, 0.0);
/// ```
#[derive(Clone)]
pub struct Accumulator {
    pub(super) limbs: [i64; NLIMBS],
    /// Additions since the last normalization.
    pub(super) pending: u32,
    pub(super) nan: bool,
    pub(super) pos_inf: bool,
    pub(super) neg_inf: bool,
    /// At least one value was added.
    pub(super) nonempty: bool,
    /// Every value added so far was `-0.0` (or nothing was added).
    pub(super) neg_zero_only: bool,
}

impl Default for Accumulator {
    fn default() -> Self {
        Self::new()
    }
}

/// Adds every value of the iterator (through the vectorized path, in batches).
///
/// ```
/// let mut acc = fprev_runtime::exact::Accumulator::new();
/// acc.extend((1..=3000).map(|i| 1.0 / i as f64));
/// let values: Vec<f64> = (1..=3000).map(|i| 1.0 / i as f64).collect();
/// assert_eq!(acc.finish(), fprev_runtime::exact::sum(&values));
/// ```
impl Extend<f64> for Accumulator {
    fn extend<I: IntoIterator<Item = f64>>(&mut self, iter: I) {
        let mut buf = [0.0f64; 1024];
        let mut len = 0;
        for x in iter {
            buf[len] = x;
            len += 1;
            if len == buf.len() {
                self.add_slice(&buf);
                len = 0;
            }
        }
        self.add_slice(&buf[..len]);
    }
}

/// Collects values into an accumulator.
///
/// ```
/// use fprev_runtime::exact::Accumulator;
/// let acc: Accumulator = [1e308, 1e308, -1e308].into_iter().collect();
/// assert_eq!(acc.finish(), 1e308); // no overflow in between
/// ```
impl FromIterator<f64> for Accumulator {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Self {
        let mut acc = Accumulator::new();
        acc.extend(iter);
        acc
    }
}

impl std::fmt::Debug for Accumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accumulator")
            .field("value", &self.finish())
            .field("nan", &self.nan)
            .field("pos_inf", &self.pos_inf)
            .field("neg_inf", &self.neg_inf)
            .finish()
    }
}

/// Splits a finite `f64` into (integer significand, position of its lowest bit in the
/// accumulator, sign as 0 or -1).
#[inline(always)]
fn decompose(x: f64) -> (u64, u32, i64) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as u32;
    let normal = (biased != 0) as u32;
    let mantissa = (bits & ((1 << 52) - 1)) | ((normal as u64) << 52);
    // Lowest bit weighs 2^(max(biased, 1) - 1075); shift that to the accumulator's origin.
    let pos = biased + (1 - normal) + (-1075 - LOW_EXP) as u32;
    (mantissa, pos, (bits as i64) >> 63)
}

impl Accumulator {
    /// An empty accumulator; [`finish`](Self::finish) on it gives `+0.0`.
    ///
    /// ```
    /// let acc = fprev_runtime::exact::Accumulator::new();
    /// assert_eq!(acc.finish().to_bits(), 0.0f64.to_bits());
    /// ```
    pub fn new() -> Self {
        Accumulator {
            limbs: [0; NLIMBS],
            pending: 0,
            nan: false,
            pos_inf: false,
            neg_inf: false,
            nonempty: false,
            neg_zero_only: true,
        }
    }

    /// Empties the accumulator so it can be reused without a new allocation of its digits.
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add(f64::NAN);
    /// acc.clear();
    /// acc.add(2.5);
    /// assert_eq!(acc.finish(), 2.5);
    /// ```
    pub fn clear(&mut self) {
        *self = Accumulator::new();
    }

    /// Adds one value exactly.
    ///
    /// This is the slow, general entry point (one value at a time); prefer
    /// [`add_slice`](Self::add_slice), which runs a vectorized filter in front.
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add(0.1);
    /// acc.add(0.2);
    /// acc.add(-0.3);
    /// // The exact sum of the three doubles is 2^-56 + 2^-55 ... not zero, and not 0.1+0.2-0.3.
    /// assert_eq!(acc.finish(), 2.7755575615628914e-17);
    /// ```
    #[inline]
    pub fn add(&mut self, x: f64) {
        self.note_value(x);
        if x.is_finite() {
            self.add_finite_unflagged(x);
        } else {
            self.add_special(x);
        }
    }

    /// Records `x` for the signed-zero and emptiness rules without adding it.
    #[inline(always)]
    pub(crate) fn note_value(&mut self, x: f64) {
        self.nonempty = true;
        self.neg_zero_only &= x.to_bits() == NEG_ZERO_BITS;
    }

    /// Records that values were added through a path that kept the `-0.0` rule itself;
    /// `all_neg_zero` says whether all of them were `-0.0`.
    pub(crate) fn note_many(&mut self, all_neg_zero: bool) {
        self.nonempty = true;
        self.neg_zero_only &= all_neg_zero;
    }

    #[cold]
    fn add_special(&mut self, x: f64) {
        if x.is_nan() {
            self.nan = true;
        } else if x > 0.0 {
            self.pos_inf = true;
        } else {
            self.neg_inf = true;
        }
    }

    /// Adds a finite value to the digits without touching the IEEE flags.
    #[inline(always)]
    pub(crate) fn add_finite_unflagged(&mut self, x: f64) {
        let (m, pos, neg) = decompose(x);
        let i = (pos / DIGIT_BITS) as usize & 127;
        let r = pos % DIGIT_BITS;
        let lo = ((m << r) as i64) & DIGIT_MASK;
        let hi = (m >> (DIGIT_BITS - r)) as i64;
        self.limbs[i] += (lo ^ neg) - neg;
        self.limbs[i + 1] += (hi ^ neg) - neg;
        self.bump();
    }

    #[inline(always)]
    fn bump(&mut self) {
        self.pending += 1;
        if self.pending >= CARRY_BUDGET {
            self.normalize();
        }
    }

    /// Adds the exact product `x * y` (no rounding of the product).
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// let x = 1.0 + f64::EPSILON;
    /// acc.add_product(x, x); // 1 + 2 eps + eps^2
    /// acc.add(-1.0);
    /// acc.add(-2.0 * f64::EPSILON);
    /// assert_eq!(acc.finish(), f64::EPSILON * f64::EPSILON);
    /// ```
    pub fn add_product(&mut self, x: f64, y: f64) {
        let p = x * y;
        self.note_value(p);
        if !(x.is_finite() && y.is_finite()) {
            // NaN, or an infinity times something: IEEE decides (inf * 0 is NaN).
            self.add_special(p);
            return;
        }
        if x == 0.0 || y == 0.0 {
            return;
        }
        let (mx, px, sx) = decompose(x);
        let (my, py, sy) = decompose(y);
        // Lowest bit of the product sits at (px + LOW) + (py + LOW) - LOW.
        let pos = (px + py) as i64 + LOW_EXP as i64;
        debug_assert!(pos >= 0);
        self.add_wide((mx as u128) * (my as u128), pos as u32, sx ^ sy);
    }

    /// Adds `m * 2^(pos + LOW_EXP)` with the sign `neg` (0 or -1); `m << (pos % 32)` must
    /// fit in the five 32-bit pieces this touches (`m` below 2^128 does).
    pub(crate) fn add_wide(&mut self, m: u128, pos: u32, neg: i64) {
        let first = (pos / DIGIT_BITS) as usize;
        let r = pos % DIGIT_BITS;
        // Shift by r in two pieces so nothing falls off the top of the u128.
        let lo_part = (m << r) & ((1u128 << 64) - 1);
        let hi_part = m >> (64 - r);
        let mut pieces = [0i64; 5];
        pieces[0] = (lo_part as i64) & DIGIT_MASK;
        pieces[1] = ((lo_part >> 32) as i64) & DIGIT_MASK;
        pieces[2] = (hi_part as i64) & DIGIT_MASK;
        pieces[3] = ((hi_part >> 32) as i64) & DIGIT_MASK;
        pieces[4] = ((hi_part >> 64) as i64) & DIGIT_MASK;
        for (limb, piece) in self.limbs.iter_mut().skip(first).zip(pieces) {
            *limb += (piece ^ neg) - neg;
        }
        self.bump();
    }

    /// Adds everything `other` holds, exactly: merging accumulators in any grouping gives
    /// the same result, which is what makes parallel reductions reproducible.
    ///
    /// ```
    /// use fprev_runtime::exact::Accumulator;
    /// let mut left = Accumulator::new();
    /// left.add_slice(&[1e300, 1.0]);
    /// let mut right = Accumulator::new();
    /// right.add_slice(&[-1e300, 2.0]);
    /// left.merge(&right);
    /// assert_eq!(left.finish(), 3.0);
    /// ```
    pub fn merge(&mut self, other: &Accumulator) {
        self.normalize();
        let mut other = other.clone();
        other.normalize();
        for (a, b) in self.limbs.iter_mut().zip(other.limbs.iter()) {
            *a += *b;
        }
        self.pending = 1;
        self.nan |= other.nan;
        self.pos_inf |= other.pos_inf;
        self.neg_inf |= other.neg_inf;
        self.nonempty |= other.nonempty;
        self.neg_zero_only &= other.neg_zero_only;
    }

    /// [`merge`](Self::merge) by value, for `rayon`'s `reduce`.
    ///
    /// ```
    /// use fprev_runtime::exact::Accumulator;
    /// use rayon::prelude::*;
    /// let xs = vec![0.1; 1000];
    /// let acc = xs
    ///     .par_chunks(100)
    ///     .fold(Accumulator::new, |mut acc, chunk| {
    ///         acc.add_slice(chunk);
    ///         acc
    ///     })
    ///     .reduce(Accumulator::new, Accumulator::merged);
    /// assert_eq!(acc.finish(), fprev_runtime::exact::sum(&xs));
    /// ```
    pub fn merged(mut self, other: Accumulator) -> Accumulator {
        self.merge(&other);
        self
    }

    /// The accumulator as [`WORDS`] words that [`from_words`](Self::from_words) reads
    /// back to the same exact value: the normalized limbs, then the special-value flags.
    /// A fixed-size image, so that accumulators can travel as an MPI datatype and be
    /// merged by a user-defined reduction on another process.
    #[cfg(feature = "mpi")]
    pub(crate) fn to_words(&self, out: &mut [i64; WORDS]) {
        let mut copy = self.clone();
        copy.normalize();
        out[..NLIMBS].copy_from_slice(&copy.limbs);
        out[NLIMBS] = i64::from(self.nan)
            | i64::from(self.pos_inf) << 1
            | i64::from(self.neg_inf) << 2
            | i64::from(self.nonempty) << 3
            | i64::from(self.neg_zero_only) << 4;
    }

    /// The accumulator whose image [`to_words`](Self::to_words) wrote.
    #[cfg(feature = "mpi")]
    pub(crate) fn from_words(words: &[i64; WORDS]) -> Accumulator {
        let mut limbs = [0; NLIMBS];
        limbs.copy_from_slice(&words[..NLIMBS]);
        let flags = words[NLIMBS];
        Accumulator {
            limbs,
            // limbs from `to_words` are normalized, those of a merge have one pending
            // addition at most: one is the safe count for both
            pending: 1,
            nan: flags & 1 != 0,
            pos_inf: flags & 2 != 0,
            neg_inf: flags & 4 != 0,
            nonempty: flags & 8 != 0,
            neg_zero_only: flags & 16 != 0,
        }
    }

    /// Merges the image `other` into the image `into` (both written by
    /// [`to_words`](Self::to_words)), leaving a normalized image: what
    /// [`merge`](Self::merge) does, without building the two accumulators. The body of
    /// the MPI reduction, which runs once per element per message.
    #[cfg(feature = "mpi")]
    pub(crate) fn merge_words(into: &mut [i64; WORDS], other: &[i64; WORDS]) {
        // both normalized: every limb below 2^32, so the sums cannot overflow
        let mut carry = 0i64;
        for (a, b) in into[..NLIMBS - 1].iter_mut().zip(&other[..NLIMBS - 1]) {
            let v = *a + *b + carry;
            carry = v >> DIGIT_BITS;
            *a = v & DIGIT_MASK;
        }
        into[NLIMBS - 1] += other[NLIMBS - 1] + carry;
        let (a, b) = (into[NLIMBS], other[NLIMBS]);
        // nan, +inf, -inf and nonempty are "any"; neg_zero_only is "all"
        into[NLIMBS] = ((a | b) & 0b1111) | (a & b & 0b1_0000);
    }

    /// Propagates all pending carries: afterwards every limb but the top one lies in
    /// `[0, 2^32)` and the top one carries the sign.
    pub(super) fn normalize(&mut self) {
        let mut carry = 0i64;
        for limb in self.limbs[..NLIMBS - 1].iter_mut() {
            let v = *limb + carry;
            carry = v >> DIGIT_BITS;
            *limb = v & DIGIT_MASK;
        }
        self.limbs[NLIMBS - 1] += carry;
        self.pending = 0;
    }

    /// The sign and the magnitude's digits (all in `[0, 2^32)` but the top one, which
    /// only a magnitude of 2^2176 or more, out of reach of 2^128 additions, leaves above).
    pub(super) fn magnitude(&self) -> (bool, [i64; NLIMBS]) {
        let mut copy = self.clone();
        copy.normalize();
        let negative = copy.limbs[NLIMBS - 1] < 0;
        if negative {
            for limb in copy.limbs.iter_mut() {
                *limb = -*limb;
            }
            copy.normalize();
        }
        (negative, copy.limbs)
    }

    /// The exact sum rounded to the nearest `f64` (ties to even).
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add_slice(&[1.0, 2f64.powi(-53)]); // a tie: rounds to even
    /// assert_eq!(acc.finish(), 1.0);
    /// acc.add(2f64.powi(-110)); // just above the tie
    /// assert_eq!(acc.finish(), 1.0 + f64::EPSILON);
    /// ```
    pub fn finish(&self) -> f64 {
        self.round_to(RoundingFormat::F64)
    }

    /// The exact sum rounded once to the nearest `f32` (ties to even): never through
    /// `f64`, which could round twice.
    ///
    /// ```
    /// let mut acc = fprev::exact::Accumulator::new();
    /// // 1 + 2^-24 + 2^-60: just above the midpoint between 1 and the next f32
    /// acc.add_slice_f32(&[1.0, 2f32.powi(-24), 2f32.powi(-60)]);
    /// assert_eq!(acc.finish_f32(), 1.0 + f32::EPSILON);
    /// assert_eq!(acc.finish() as f32, 1.0); // rounded twice
    /// ```
    pub fn finish_f32(&self) -> f32 {
        self.round_to(RoundingFormat::F32) as f32
    }

    /// The exact sum rounded once to `format` (nearest, ties to even), returned as the
    /// `f64` that holds that value exactly.
    ///
    /// Rounding the `f64` result again to a narrower type could round twice and miss the
    /// correctly rounded value; this never does. Subnormals of the format are produced
    /// where they belong, and values beyond its range round to infinity.
    ///
    /// ```
    /// use fprev_runtime::exact::{Accumulator, RoundingFormat};
    /// let mut acc = Accumulator::new();
    /// // 1 + 2^-24 + 2^-60: rounded to f64 first it becomes 1 + 2^-24, an f32 tie that
    /// // then rounds down to 1.0. Rounded once it is just above the tie and goes up.
    /// acc.add_slice(&[1.0, 2f64.powi(-24), 2f64.powi(-60)]);
    /// assert_eq!(acc.round_to(RoundingFormat::F32), 1.0 + 2f64.powi(-23));
    /// assert_eq!(acc.finish() as f32, 1.0);
    /// ```
    pub fn round_to(&self, format: RoundingFormat) -> f64 {
        if self.nan || (self.pos_inf && self.neg_inf) {
            return f64::NAN;
        }
        if self.pos_inf {
            return f64::INFINITY;
        }
        if self.neg_inf {
            return f64::NEG_INFINITY;
        }
        let (negative, digits) = self.magnitude();
        let signed = |v: f64| if negative { -v } else { v };
        let Some(top) = digits.iter().rposition(|&d| d != 0) else {
            return if self.nonempty && self.neg_zero_only {
                -0.0
            } else {
                0.0
            };
        };
        let p = format.precision_bits() as i32;
        // Absolute index (from limb 0 bit 0) of the leading one, and its exponent.
        let lead = top as i32 * DIGIT_BITS as i32 + 63 - digits[top].leading_zeros() as i32;
        let lead_exp = lead + LOW_EXP;
        if lead_exp > format.max_exp() {
            return signed(f64::INFINITY);
        }
        let ulp_exp = lead_exp.max(format.min_exp()) - (p - 1);
        let ulp = ulp_exp - LOW_EXP; // index of the ulp bit, at least 1
        let len = (lead - ulp + 1).max(0) as u32;
        let mut q = bit_range(&digits, ulp as u32, len);
        let round = bit_range(&digits, (ulp - 1) as u32, 1) == 1;
        let sticky = any_below(&digits, (ulp - 1) as u32);
        if round && (sticky || q & 1 == 1) {
            q += 1;
        }
        if q == 0 {
            return signed(0.0);
        }
        let rounded_lead = ulp_exp + 63 - q.leading_zeros() as i32;
        if rounded_lead > format.max_exp() {
            return signed(f64::INFINITY);
        }
        signed(q as f64 * pow2(ulp_exp))
    }

    /// [`round_to`](Self::round_to) with the format given by its parameters: precision
    /// in bits (counting the implicit bit), and the smallest and largest exponents of
    /// normal numbers (`f32`: 24, -126, 127; `f16`: 11, -14, 15; `bf16`: 8, -126, 127).
    ///
    /// # Panics
    /// If the format does not fit inside `f64` (see [`RoundingFormat::new`]).
    ///
    /// ```
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add_slice(&[2049.0, 0.5]);
    /// assert_eq!(acc.round_to_format(11, -14, 15), 2050.0); // f16 spacing is 2 here
    /// ```
    pub fn round_to_format(&self, precision_bits: u32, min_exp: i32, max_exp: i32) -> f64 {
        match RoundingFormat::new(precision_bits, min_exp, max_exp) {
            Ok(format) => self.round_to(format),
            Err(err) => panic!("{err}"),
        }
    }
}

/// `len` (at most 64) bits of the digits starting at absolute bit `lo`.
fn bit_range(digits: &[i64; NLIMBS], lo: u32, len: u32) -> u64 {
    if len == 0 {
        return 0;
    }
    let k = (lo / DIGIT_BITS) as usize;
    let mut window = 0u128;
    for j in 0..3 {
        if let Some(&d) = digits.get(k + j) {
            window |= (d as u128) << (DIGIT_BITS as usize * j);
        }
    }
    let bits = (window >> (lo % DIGIT_BITS)) as u64;
    if len >= 64 {
        bits
    } else {
        bits & ((1u64 << len) - 1)
    }
}

/// Whether any bit below absolute bit `pos` is set.
fn any_below(digits: &[i64; NLIMBS], pos: u32) -> bool {
    let k = (pos / DIGIT_BITS) as usize;
    let partial = digits[k] & ((1i64 << (pos % DIGIT_BITS)) - 1);
    partial != 0 || digits[..k].iter().any(|&d| d != 0)
}
