//! The float types probes are made of, and the mask/unit scale each one needs.
//!
//! FPRev feeds a target arrays of units with one `+M` and one `-M`. For the count of
//! surviving units to be exact, `M` must swamp every partial sum of units (`M + k*e`
//! rounds back to `M`) and the unit `e` must be a power of two whose multiples are exact.
//! Low-range types (f16) cannot use `e = 1`, so the unit is moved down the exponent range
//! (the "modified" algorithm's first half); counts beyond `2^p` are handled by the
//! revelation engine with windows of zeros (its second half).

use std::fmt::{Debug, Display};

use crate::exact::pow2;

/// A binary floating-point format described as data: what probe scaling and exact
/// rounding need to know about a type.
///
/// ```
/// use fprev::float::{FloatFormat, ProbeFloat};
/// assert_eq!(f32::FORMAT.precision, 24);
/// assert_eq!(fprev::half::f16::FORMAT.max_exp, 15);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloatFormat {
    /// Name used in messages and on the command line (`f32`, `bf16`, ...).
    pub name: &'static str,
    /// Significand bits including the hidden bit (53 for f64).
    pub precision: u32,
    /// Exponent of the smallest normal number (`2^min_exp`).
    pub min_exp: i32,
    /// Exponent of the largest finite binade (`2^max_exp <= MAX < 2^(max_exp+1)`).
    pub max_exp: i32,
}

impl FloatFormat {
    /// Largest count `c` such that every integer `0..=c` is exact in this format: `2^p`.
    ///
    /// ```
    /// use fprev::float::ProbeFloat;
    /// assert_eq!(f32::FORMAT.exact_count_limit(), 1 << 24);
    /// ```
    pub fn exact_count_limit(&self) -> u64 {
        1u64 << self.precision.min(63)
    }

    /// Exponent of the smallest subnormal number.
    pub fn min_subnormal_exp(&self) -> i32 {
        self.min_exp - (self.precision as i32 - 1)
    }

    /// The exponent bias of the format's encoding (`1 - min_exp`: 127 for f32, 7 for
    /// E4M3, whose top binade holds numbers, not infinities).
    ///
    /// ```
    /// use fprev::float::{ProbeFloat, F8E4M3};
    /// assert_eq!(f32::FORMAT.bias(), 127);
    /// assert_eq!(F8E4M3::FORMAT.bias(), 7);
    /// ```
    pub fn bias(&self) -> i32 {
        1 - self.min_exp
    }

    /// The exponent range of products of two values of this format, as a format of its
    /// own: what masks and units spread across both operands of a product may reach
    /// (`M = Ma x Mb`, `e = ea x eb`). Its smallest subnormal is the square of this
    /// format's; its precision (`2p - 1`) only places that bottom, since a product of two
    /// p-bit significands is exact in any accumulator of `2p` bits or more.
    ///
    /// ```
    /// use fprev::float::{ProbeFloat, F8E4M3};
    /// let p = F8E4M3::FORMAT.product();
    /// assert_eq!(p.max_exp, 16);
    /// assert_eq!(p.min_subnormal_exp(), -18); // 2^-9 x 2^-9
    /// ```
    pub fn product(&self) -> FloatFormat {
        FloatFormat {
            name: self.name,
            precision: 2 * self.precision - 1,
            min_exp: 2 * self.min_exp,
            max_exp: 2 * self.max_exp,
        }
    }
}

/// A float type that can be revealed: `f64`, `f32`, [`half::f16`], [`half::bf16`], and the
/// operand types [`F8E4M3`], [`F8E5M2`], their FNUZ variants, [`Tf32`] and the
/// block-scaled element types [`F6E3M2`], [`F6E2M3`], [`F4E2M1`] (usually with a wider
/// accumulator).
///
/// The trait is sealed; its constants describe the format, its methods convert exactly
/// through `f64` (every supported type embeds in `f64`).
///
/// ```
/// use fprev::ProbeFloat;
/// let x = fprev::half::bf16::from_f64_round(1.0 / 3.0);
/// assert_eq!(x.to_f64(), 0.333984375);
/// ```
pub trait ProbeFloat:
    Copy + PartialEq + PartialOrd + Debug + Display + Send + Sync + 'static + private::Sealed
{
    /// The format as data.
    const FORMAT: FloatFormat;
    /// Positive zero.
    const ZERO: Self;
    /// Exact conversion to `f64`.
    fn to_f64(self) -> f64;
    /// Conversion from `f64`, rounding to nearest-even (exact when representable).
    fn from_f64_round(x: f64) -> Self;
    /// One IEEE addition in this type.
    fn add(self, other: Self) -> Self;
    /// The raw bits, widened, so results can be compared bit for bit.
    fn to_bits_u64(self) -> u64;
    /// The value with these raw bits (the low ones; the inverse of
    /// [`to_bits_u64`](Self::to_bits_u64)).
    ///
    /// ```
    /// use fprev::ProbeFloat;
    /// assert_eq!(f32::from_bits_u64(1.5f32.to_bits_u64()), 1.5);
    /// ```
    fn from_bits_u64(bits: u64) -> Self;
}

/// Comparison and printing by value for a float stored in one byte (`.0`) that has
/// `to_f64`: shared by the FP8 and the microscaling element types.
macro_rules! byte_float_by_value {
    ($name:ident) => {
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.to_f64() == other.to_f64()
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                self.to_f64().partial_cmp(&other.to_f64())
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "{}({:#04x} = {})",
                    stringify!($name),
                    self.0,
                    self.to_f64()
                )
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.to_f64(), f)
            }
        }
    };
}

/// A float type whose value is its code in one byte: the struct, `from_bits` and
/// `to_bits`, its [`ProbeFloat`] implementation and the by-value traits, shared by the
/// FP8 and the MX FP6/FP4 types. `$layout` decodes and encodes the codes; `$mask` keeps
/// the format's bits of a code (all 8 for FP8). Two such values add exactly in `f64`, so
/// a sum of two rounds once.
macro_rules! byte_coded_float {
    ($name:ident, $layout:ident, $mask:expr, $from_bits_doc:literal, $fmt:literal, $precision:literal, $min_exp:literal, $max_exp:literal, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Default)]
        pub struct $name(u8);

        impl $name {
            #[doc = $from_bits_doc]
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits & $mask)
            }

            /// The code.
            pub const fn to_bits(self) -> u8 {
                self.0
            }
        }

        impl ProbeFloat for $name {
            const FORMAT: FloatFormat = FloatFormat {
                name: $fmt,
                precision: $precision,
                min_exp: $min_exp,
                max_exp: $max_exp,
            };
            const ZERO: Self = $name(0);
            fn to_f64(self) -> f64 {
                $layout.decode(self.0)
            }
            fn from_f64_round(x: f64) -> Self {
                $name($layout.encode(x))
            }
            fn add(self, other: Self) -> Self {
                // two byte-coded values add exactly in f64: one rounding
                Self::from_f64_round(self.to_f64() + other.to_f64())
            }
            fn to_bits_u64(self) -> u64 {
                u64::from(self.0)
            }
            fn from_bits_u64(bits: u64) -> Self {
                $name::from_bits(bits as u8)
            }
        }

        byte_float_by_value!($name);
    };
}

mod byte_fields;
mod fp8;
mod microscaling;
mod scale;
pub(crate) mod sum_type;
mod tf32;
pub use fp8::{F8E4M3Fnuz, F8E5M2Fnuz, F8E4M3, F8E5M2};
pub use microscaling::{ElementType, F4E2M1, F6E2M3, F6E3M2};
pub use scale::{ScaleType, Ue4m3, Ue8m0};
pub use tf32::{Tf32, Tf32Rounding};

mod private {
    pub trait Sealed {}
    impl Sealed for super::F8E4M3 {}
    impl Sealed for super::F8E5M2 {}
    impl Sealed for super::F8E4M3Fnuz {}
    impl Sealed for super::F8E5M2Fnuz {}
    impl Sealed for super::Tf32 {}
    impl Sealed for super::F4E2M1 {}
    impl Sealed for super::F6E3M2 {}
    impl Sealed for super::F6E2M3 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

impl ProbeFloat for f64 {
    const FORMAT: FloatFormat = FloatFormat {
        name: "f64",
        precision: 53,
        min_exp: -1022,
        max_exp: 1023,
    };
    const ZERO: Self = 0.0;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64_round(x: f64) -> Self {
        x
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    fn from_bits_u64(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

impl ProbeFloat for f32 {
    const FORMAT: FloatFormat = FloatFormat {
        name: "f32",
        precision: 24,
        min_exp: -126,
        max_exp: 127,
    };
    const ZERO: Self = 0.0;
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64_round(x: f64) -> Self {
        x as f32
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn to_bits_u64(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_bits_u64(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl ProbeFloat for half::f16 {
    const FORMAT: FloatFormat = FloatFormat {
        name: "f16",
        precision: 11,
        min_exp: -14,
        max_exp: 15,
    };
    const ZERO: Self = half::f16::ZERO;
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
    fn from_f64_round(x: f64) -> Self {
        // not `half::f16::from_f64`: with F16C it converts through f32 and rounds twice
        half::f16::from_f32(round_to_precision(x, Self::FORMAT) as f32)
    }
    fn add(self, other: Self) -> Self {
        // f32 holds 2p+2 bits of f16, so rounding the f32 sum once more is exact rounding.
        self + other
    }
    fn to_bits_u64(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_bits_u64(bits: u64) -> Self {
        half::f16::from_bits(bits as u16)
    }
}

impl ProbeFloat for half::bf16 {
    const FORMAT: FloatFormat = FloatFormat {
        name: "bf16",
        precision: 8,
        min_exp: -126,
        max_exp: 127,
    };
    const ZERO: Self = half::bf16::ZERO;
    fn to_f64(self) -> f64 {
        half::bf16::to_f64(self)
    }
    fn from_f64_round(x: f64) -> Self {
        // not `half::bf16::from_f64`: it drops the low 32 bits of the significand before
        // rounding, so a value just above a tie is rounded as the tie
        half::bf16::from_f32(round_to_precision(x, Self::FORMAT) as f32)
    }
    fn add(self, other: Self) -> Self {
        self + other
    }
    fn to_bits_u64(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_bits_u64(bits: u64) -> Self {
        half::bf16::from_bits(bits as u16)
    }
}

/// `x` rounded to nearest (ties to even) at the quantum of `fmt` (its precision, its
/// subnormals below `2^fmt.min_exp`), ignoring `fmt`'s largest exponent: the result has at
/// most `fmt.precision` significant bits, so a wider binary format holds it exactly (and
/// overflows to infinity where `fmt` does). Infinities, NaNs and zeros pass unchanged.
fn round_to_precision(x: f64, fmt: FloatFormat) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let bits = x.abs().to_bits();
    let field = (bits >> 52) as i32;
    let binade = if field == 0 {
        -1074 + (63 - bits.leading_zeros() as i32)
    } else {
        field - 1023
    };
    // both scalings are exact: the quantum is far inside f64's normal range for every
    // format here, and the rounded multiple has at most `precision` bits
    let q = crate::exact::pow2(binade.max(fmt.min_exp) - (fmt.precision as i32 - 1));
    (x / q).round_ties_even() * q
}

/// The mask `M` and unit `e` used to probe `n` summands, both powers of two.
///
/// Chosen so that `M + k*e` rounds to `M` and `-M + k*e` to `-M` for every `k <= n`
/// (strictly below half an ulp on both sides of `M`), with `e = 1` when the format allows
/// it and the unit moved down the exponent range otherwise (normal numbers first, then
/// subnormals). Both must be representable in the input format *and* in the accumulator
/// format, which [`ProbeScale::for_formats`] takes separately for mixed-precision
/// operations (f16 inputs, f32 accumulation).
///
/// ```
/// use fprev::float::{ProbeScale, ProbeFloat};
/// let s = ProbeScale::for_type::<f32>(1000).unwrap();
/// assert_eq!(s.unit, 1.0);
/// let h = ProbeScale::for_type::<fprev::half::f16>(4096).unwrap();
/// assert!(h.unit < 1.0 && h.mask <= 65504.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeScale {
    /// The mask `M`.
    pub mask: f64,
    /// The unit `e`.
    pub unit: f64,
    /// Counts below this are exact in the accumulator (`2^p`).
    pub exact_counts_below: u64,
}

impl ProbeScale {
    /// The scale for a target whose inputs and accumulation are both `T`.
    ///
    /// Returns `None` when no power-of-two pair fits (n far too large for the format).
    pub fn for_type<T: ProbeFloat>(n: usize) -> Option<ProbeScale> {
        Self::for_formats(T::FORMAT, T::FORMAT, n)
    }

    /// The scale for inputs in `input` accumulated in `acc` (and returned in `acc`).
    ///
    /// ```
    /// use fprev::float::{ProbeScale, ProbeFloat};
    /// let s = ProbeScale::for_formats(fprev::half::f16::FORMAT, f32::FORMAT, 512).unwrap();
    /// assert!(s.mask <= 65504.0);
    /// assert_eq!(s.exact_counts_below, 1 << 24);
    /// ```
    pub fn for_formats(input: FloatFormat, acc: FloatFormat, n: usize) -> Option<ProbeScale> {
        let n = n.max(2) as u64;
        let log_n = 64 - (n - 1).leading_zeros() as i32; // ceil(log2 n)
                                                         // M = 2^E needs k*e < 2^(E-p-1) for k <= n: E - E_e >= p + 1 + log_n + 1.
        let gap = acc.precision as i32 + 2 + log_n;
        let max_e_m = input.max_exp.min(acc.max_exp);
        let lowest_unit = input.min_subnormal_exp().max(acc.min_subnormal_exp());
        // Prefer e = 1; otherwise put M at the top of the range and the unit `gap` binades
        // below it (a normal unit when it fits, a subnormal one otherwise).
        let unit_exp = if gap <= max_e_m {
            0
        } else if max_e_m - gap >= lowest_unit {
            max_e_m - gap
        } else {
            return None;
        };
        let mask_exp = unit_exp + gap;
        if mask_exp > max_e_m {
            return None;
        }
        Some(ProbeScale {
            mask: pow2(mask_exp),
            unit: pow2(unit_exp),
            exact_counts_below: acc.exact_count_limit(),
        })
    }

    /// The widest scale both formats allow with a normal unit: `M` one binade below
    /// the top of the range, `e` at the smallest normal number, so that not only single
    /// units but every partial sum of units sits far below `M`. Fused adders that align
    /// their terms to the largest one and truncate the rest drop a partial sum only when
    /// it lies more than their alignment width below `M`; with the narrowest scale
    /// ([`for_formats`](Self::for_formats)) a running accumulator can survive next to
    /// `M` and the tree comes out wrong. `None` when the range gives no more room than
    /// [`for_formats`](Self::for_formats) already takes.
    ///
    /// ```
    /// use fprev::float::{ProbeScale, ProbeFloat};
    /// let w = ProbeScale::wide_for_formats(f32::FORMAT, f32::FORMAT, 64).unwrap();
    /// assert_eq!((w.mask / w.unit).log2(), 252.0);
    /// assert!(ProbeScale::wide_for_formats(fprev::half::f16::FORMAT, f32::FORMAT, 64).is_none());
    /// ```
    pub fn wide_for_formats(input: FloatFormat, acc: FloatFormat, n: usize) -> Option<ProbeScale> {
        let narrow = Self::for_formats(input, acc, n)?;
        let mask_exp = input.max_exp.min(acc.max_exp) - 1;
        let unit_exp = input.min_exp.max(acc.min_exp);
        let gap = mask_exp - unit_exp;
        if f64::from(gap) <= (narrow.mask / narrow.unit).log2() {
            return None;
        }
        Some(ProbeScale {
            mask: pow2(mask_exp),
            unit: pow2(unit_exp),
            exact_counts_below: acc.exact_count_limit(),
        })
    }

    /// `log2(M / e)`: how many binades separate the mask from the unit.
    ///
    /// ```
    /// let s = fprev::float::ProbeScale::for_type::<f32>(1000).unwrap();
    /// assert_eq!(s.gap(), 36);
    /// ```
    pub fn gap(&self) -> i32 {
        (self.mask / self.unit).log2().round() as i32
    }
}

/// The exact sum of `values`, rounded once to `T` (nearest, ties to even).
///
/// This is the semantics of a fused multi-term adder in a [`SumTree`](crate::SumTree)
/// replay. IEEE rules at the edges: any NaN, or `+inf` with `-inf`, gives NaN; one kind of
/// infinity gives that infinity; an exact result beyond the format overflows to infinity;
/// an exact zero is `-0.0` only when every input is `-0.0`.
///
/// ```
/// use fprev::float::exact_sum_rounded;
/// // 2^24 + 1 + 1 is exact (2^24 + 2) when rounded once, 2^24 when added pairwise in f32.
/// let v = [16777216.0f32, 1.0, 1.0];
/// assert_eq!(exact_sum_rounded(&v), 16777218.0);
/// ```
pub fn exact_sum_rounded<T: ProbeFloat>(values: &[T]) -> T {
    exact_sum_rounded_f64(values.iter().map(|v| v.to_f64()))
}

/// [`exact_sum_rounded`] of values given exactly as `f64`.
pub(crate) fn exact_sum_rounded_f64<T: ProbeFloat>(values: impl Iterator<Item = f64>) -> T {
    let fmt = T::FORMAT;
    let mut acc = crate::exact::Accumulator::new();
    for v in values {
        acc.add(v);
    }
    // Every supported format fits inside f64, which is all `round_to_format` needs.
    T::from_f64_round(acc.round_to_format(fmt.precision, fmt.min_exp, fmt.max_exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_and_bf16_round_f64_values_once() {
        // 0.49997 units above 3.701171875: down, not through f32's 3.7021484375 (a tie,
        // then up to even)
        let x = 3.7021483778953552;
        assert_eq!(half::f16::from_f64_round(x).to_bits(), 0x4367);
        // 1 + 2^-8 is a bf16 tie; 2^-40 above it rounds up
        let y = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(half::bf16::from_f64_round(y).to_bits(), 0x3F81);
        assert_eq!(
            half::bf16::from_f64_round(1.0 + 2f64.powi(-8)).to_bits(),
            0x3F80
        );
        // subnormals, overflow, signs, specials
        assert_eq!(half::f16::from_f64_round(2f64.powi(-25)).to_bits(), 0);
        assert_eq!(half::f16::from_f64_round(2f64.powi(-25) * 1.5).to_bits(), 1);
        assert_eq!(half::f16::from_f64_round(-65519.9).to_bits(), 0xFBFF);
        assert_eq!(half::f16::from_f64_round(65520.0), half::f16::INFINITY);
        assert_eq!(half::bf16::from_f64_round(-1e39), half::bf16::NEG_INFINITY);
        assert_eq!(half::bf16::from_f64_round(2f64.powi(-134)).to_bits(), 0);
        assert_eq!(
            half::bf16::from_f64_round(2f64.powi(-134) * 1.5).to_bits(),
            1
        );
        assert_eq!(half::f16::from_f64_round(-0.0).to_bits(), 0x8000);
        assert!(half::f16::from_f64_round(f64::NAN).is_nan());
        assert!(half::bf16::from_f64_round(f64::NAN).is_nan());
    }
    use half::{bf16, f16};

    #[test]
    fn scales_swamp_and_fit() {
        for n in [2usize, 3, 100, 4096, 1 << 20] {
            let s = ProbeScale::for_type::<f32>(n).unwrap();
            let m = s.mask as f32;
            let k = (n as f64 * s.unit) as f32;
            assert_eq!(m + k, m);
            assert_eq!(-m + k, -m);
        }
        let h = ProbeScale::for_type::<f16>(4096).unwrap();
        let m = f16::from_f64(h.mask);
        assert!(m.is_finite());
        assert_eq!(m + f16::from_f64(4096.0 * h.unit), m);
        assert!(ProbeScale::for_type::<bf16>(1 << 20).is_some());
    }

    #[test]
    fn exact_rounding_once() {
        assert_eq!(exact_sum_rounded(&[1e16f64, 1.0, 1.0]), 1e16 + 2.0);
        assert_eq!(exact_sum_rounded(&[1.0f64, 1e-30, -1.0]), 1e-30);
        assert_eq!(exact_sum_rounded(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(
            exact_sum_rounded(&[-f64::MAX, -f64::MAX]),
            f64::NEG_INFINITY
        );
        assert!(exact_sum_rounded(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert!(exact_sum_rounded(&[-0.0f64, -0.0]).is_sign_negative());
        assert!(exact_sum_rounded(&[-0.0f64, 0.0]).is_sign_positive());
        let tiny = f64::from_bits(1);
        assert_eq!(exact_sum_rounded(&[tiny, tiny, -tiny]), tiny);
        // ties to even in f32: 1 + 2^-24 rounds to 1, 1 + 3*2^-24 rounds up
        assert_eq!(exact_sum_rounded(&[1.0f32, 2f32.powi(-24)]), 1.0);
        assert_eq!(
            exact_sum_rounded(&[1.0f32, 2f32.powi(-24), 2f32.powi(-23)]),
            1.0 + 2f32.powi(-22)
        );
        // f16 subnormal results
        let t = f16::from_bits(1);
        assert_eq!(exact_sum_rounded(&[t, t, t]), f16::from_bits(3));
        assert_eq!(
            exact_sum_rounded(&[f16::MAX, f16::from_f64(16.0)]),
            f16::INFINITY
        );
    }
}
