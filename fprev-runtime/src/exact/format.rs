//! Binary floating-point formats that fit inside `f64`, as targets of a single rounding.

/// A binary floating-point format no wider than `f64`: its precision and exponent range.
///
/// The exact accumulator rounds to any such format in one step; the result is returned as
/// the `f64` holding that value exactly (every value of the format is an `f64`).
///
/// ```
/// use fprev_runtime::exact::RoundingFormat;
/// assert_eq!(RoundingFormat::F16, RoundingFormat::new(11, -14, 15).unwrap());
/// assert!(RoundingFormat::new(64, -16382, 16383).is_err()); // x87 extended does not fit in f64
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RoundingFormat {
    precision_bits: u32,
    min_exp: i32,
    max_exp: i32,
}

/// Why [`RoundingFormat::new`] refused its parameters.
///
/// ```
/// let err = fprev_runtime::exact::RoundingFormat::new(113, -16382, 16383).unwrap_err();
/// assert_eq!(err.precision_bits, 113); // binary128 is wider than f64
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// The precision asked for.
    pub precision_bits: u32,
    /// The smallest normal exponent asked for.
    pub min_exp: i32,
    /// The largest exponent asked for.
    pub max_exp: i32,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let FormatError {
            precision_bits,
            min_exp,
            max_exp,
        } = self;
        write!(
            f,
            "format with {precision_bits} bits of precision and exponents {min_exp}..={max_exp} \
             does not fit inside f64 (precision 1..=53, exponents within -1022..=1023)"
        )
    }
}

impl std::error::Error for FormatError {}

impl RoundingFormat {
    /// IEEE binary64.
    pub const F64: RoundingFormat = RoundingFormat::raw(53, -1022, 1023);
    /// IEEE binary32.
    pub const F32: RoundingFormat = RoundingFormat::raw(24, -126, 127);
    /// IEEE binary16.
    pub const F16: RoundingFormat = RoundingFormat::raw(11, -14, 15);
    /// bfloat16: the exponent range of `f32` with 8 bits of precision.
    pub const BF16: RoundingFormat = RoundingFormat::raw(8, -126, 127);

    const fn raw(precision_bits: u32, min_exp: i32, max_exp: i32) -> RoundingFormat {
        RoundingFormat {
            precision_bits,
            min_exp,
            max_exp,
        }
    }

    /// A format with `precision_bits` of significand (implicit bit included), normal
    /// exponents `min_exp..=max_exp`, gradual underflow below `min_exp`, and infinities.
    ///
    /// It must fit inside `f64`: precision `1..=53`, `-1022 <= min_exp <= max_exp <= 1023`.
    ///
    /// ```
    /// // An 8-bit float with 4 bits of precision (E4M3-like range, but with infinities).
    /// let fp8 = fprev_runtime::exact::RoundingFormat::new(4, -6, 8).unwrap();
    /// let mut acc = fprev_runtime::exact::Accumulator::new();
    /// acc.add_slice(&[1.0, 0.0625]);
    /// assert_eq!(acc.round_to(fp8), 1.0); // 1 + 2^-4 is a tie between 1 and 1.125
    /// ```
    pub fn new(
        precision_bits: u32,
        min_exp: i32,
        max_exp: i32,
    ) -> Result<RoundingFormat, FormatError> {
        let fits = (1..=53).contains(&precision_bits)
            && -1022 <= min_exp
            && min_exp <= max_exp
            && max_exp <= 1023;
        if fits {
            Ok(RoundingFormat::raw(precision_bits, min_exp, max_exp))
        } else {
            Err(FormatError {
                precision_bits,
                min_exp,
                max_exp,
            })
        }
    }

    /// Significand bits, the implicit leading bit included.
    ///
    /// ```
    /// assert_eq!(fprev_runtime::exact::RoundingFormat::BF16.precision_bits(), 8);
    /// ```
    pub fn precision_bits(self) -> u32 {
        self.precision_bits
    }

    /// Exponent of the smallest normal number.
    ///
    /// ```
    /// assert_eq!(fprev_runtime::exact::RoundingFormat::F16.min_exp(), -14);
    /// ```
    pub fn min_exp(self) -> i32 {
        self.min_exp
    }

    /// Exponent of the largest finite numbers.
    ///
    /// ```
    /// assert_eq!(fprev_runtime::exact::RoundingFormat::F32.max_exp(), 127);
    /// ```
    pub fn max_exp(self) -> i32 {
        self.max_exp
    }
}
