//! An accumulator's state as bytes: what lets a partial exact sum cross a process
//! boundary (a shuffle, a pickle, a file, a message) and be merged on the other side.
//!
//! The encoding is canonical: two accumulators that hold the same exact value and the
//! same special-value flags encode to the same bytes, however they were filled, so the
//! bytes can be hashed, compared and cached. It stores only the 32-bit digits between the
//! lowest and the highest one in use, as sign and magnitude: a sum of values of similar
//! size takes a few digits, not the 136 of the whole range. The layout is in
//! `docs/exact.md` ("Accumulator states as bytes") and on [`Accumulator::to_bytes`].

use super::accumulator::{Accumulator, NLIMBS};

/// The first four bytes of every state.
const MAGIC: [u8; 4] = *b"FPXA";
/// Bytes before the digits: magic, version, flags, first digit, digit count.
const HEADER: usize = 8;
const NAN: u8 = 1;
const POS_INF: u8 = 1 << 1;
const NEG_INF: u8 = 1 << 2;
const NONEMPTY: u8 = 1 << 3;
const NEG_ZERO_ONLY: u8 = 1 << 4;
const NEGATIVE: u8 = 1 << 5;
const KNOWN_FLAGS: u8 = NAN | POS_INF | NEG_INF | NONEMPTY | NEG_ZERO_ONLY | NEGATIVE;

/// Why bytes are not an accumulator state that this build reads.
///
/// [`Accumulator::from_bytes`] checks every field, so bytes that were cut short, padded,
/// written by a newer version of the format, or made up never become a state (and so
/// never a wrong sum).
///
/// ```
/// use fprev::exact::{Accumulator, StateError};
///
/// let mut acc = Accumulator::new();
/// acc.add(1.5);
/// let bytes = acc.to_bytes();
/// let cut = Accumulator::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
/// assert!(matches!(cut, StateError::Truncated { .. }));
/// assert_eq!(cut.to_string(), "accumulator state truncated: 15 bytes, the header says 16");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// Fewer bytes than the header, or than the digits the header announces.
    Truncated {
        /// Bytes the state needs.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// More bytes than the digits the header announces.
    TrailingBytes {
        /// Bytes the state takes.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// The bytes do not start with the state's magic `FPXA`.
    NotAState,
    /// A version of the format that this build does not read.
    UnsupportedVersion {
        /// The version in the bytes.
        found: u8,
    },
    /// Flag bits that no version this build reads sets.
    UnknownFlags {
        /// The flags byte.
        flags: u8,
    },
    /// Digits outside the accumulator's range (2^-2176 to 2^2176).
    DigitsOutOfRange {
        /// Index of the first digit.
        first: usize,
        /// Number of digits.
        count: usize,
    },
    /// Fields that no accumulator writes (a zero digit at either end, a sign on zero, an
    /// empty state with values, ...): the encoding is canonical, so these are refused.
    NotCanonical {
        /// What is wrong.
        reason: &'static str,
    },
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Truncated { needed, got } => write!(
                f,
                "accumulator state truncated: {got} bytes, the header says {needed}"
            ),
            StateError::TrailingBytes { expected, got } => write!(
                f,
                "accumulator state has trailing bytes: {got} bytes, the header says {expected}"
            ),
            StateError::NotAState => {
                write!(f, "not an accumulator state (no FPXA magic at the start)")
            }
            StateError::UnsupportedVersion { found } => write!(
                f,
                "accumulator state of format version {found}; this build reads version {}",
                Accumulator::STATE_VERSION
            ),
            StateError::UnknownFlags { flags } => {
                write!(f, "accumulator state with unknown flag bits {flags:#010b}")
            }
            StateError::DigitsOutOfRange { first, count } => write!(
                f,
                "accumulator state with digits {first}..{} beyond the accumulator's {NLIMBS}",
                first + count
            ),
            StateError::NotCanonical { reason } => {
                write!(f, "accumulator state not canonical: {reason}")
            }
        }
    }
}

impl std::error::Error for StateError {}

impl Accumulator {
    /// The version of the byte format that [`to_bytes`](Self::to_bytes) writes and
    /// [`from_bytes`](Self::from_bytes) reads.
    ///
    /// ```
    /// let bytes = fprev::exact::Accumulator::new().to_bytes();
    /// assert_eq!(bytes[4], fprev::exact::Accumulator::STATE_VERSION);
    /// ```
    pub const STATE_VERSION: u8 = 1;

    /// The state as bytes that [`from_bytes`](Self::from_bytes) reads back, in any build
    /// on any machine, to an accumulator that holds the same exact value.
    ///
    /// Send these to merge partial sums across processes: each process accumulates its
    /// part, the parts meet in any order, and the rounded result is the same bits. The
    /// encoding is canonical (the same exact value and flags give the same bytes) and
    /// compact: little-endian, an 8-byte header, then only the 32-bit digits in use.
    ///
    /// | bytes | field |
    /// |---|---|
    /// | 0..4 | magic `FPXA` |
    /// | 4 | format version ([`STATE_VERSION`](Self::STATE_VERSION), 1) |
    /// | 5 | flags: 1 NaN added, 2 `+inf` added, 4 `-inf` added, 8 a value was added, 16 every value added, and every product as rounded, was `-0.0` (or nothing was added), 32 the exact value is negative |
    /// | 6 | index `f` of the lowest digit stored (0 to 135) |
    /// | 7 | number `c` of digits stored (0 to 136, `f + c` at most 136) |
    /// | 8..8+4c | the magnitude's digits, `u32` each, lowest first: digit `i` weighs `2^(32 (f + i) - 2176)` |
    ///
    /// A magnitude of `2^2176` or more (beyond any sum of fewer than `2^128` finite values
    /// and products) is written as an infinity of its sign, which is what every rounding of
    /// it gives.
    ///
    /// ```
    /// use fprev::exact::Accumulator;
    ///
    /// let mut acc = Accumulator::new();
    /// acc.add_slice(&[0.5, 0.25]);
    /// // 0.75 = 3 * 2^-2: one digit, digit 68 (weighing 2^0) holds 0, digit 67 holds 3 * 2^30
    /// assert_eq!(acc.to_bytes(), [b'F', b'P', b'X', b'A', 1, 8, 67, 1, 0, 0, 0, 0xC0]);
    /// assert_eq!(Accumulator::from_bytes(&acc.to_bytes())?.finish(), 0.75);
    /// # Ok::<(), fprev::exact::StateError>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let (negative, digits) = self.magnitude();
        let (mut pos_inf, mut neg_inf) = (self.pos_inf, self.neg_inf);
        let mut neg_zero_only = self.neg_zero_only;
        let in_range = digits[NLIMBS - 1] <= i64::from(u32::MAX);
        if !in_range {
            neg_zero_only = false;
            if negative {
                neg_inf = true;
            } else {
                pos_inf = true;
            }
        }
        let used = match (
            digits.iter().position(|&d| d != 0),
            digits.iter().rposition(|&d| d != 0),
        ) {
            (Some(lo), Some(hi)) if in_range => lo..hi + 1,
            _ => 0..0,
        };
        let flags = [
            (self.nan, NAN),
            (pos_inf, POS_INF),
            (neg_inf, NEG_INF),
            (self.nonempty, NONEMPTY),
            (neg_zero_only, NEG_ZERO_ONLY),
            (negative && !used.is_empty(), NEGATIVE),
        ]
        .iter()
        .filter(|(set, _)| *set)
        .fold(0, |flags, (_, bit)| flags | bit);
        let mut out = Vec::with_capacity(HEADER + 4 * used.len());
        out.extend_from_slice(&MAGIC);
        // the range has at most NLIMBS = 136 digits, so both fit a byte
        out.extend_from_slice(&[
            Self::STATE_VERSION,
            flags,
            used.start as u8,
            used.len() as u8,
        ]);
        for &d in &digits[used] {
            out.extend_from_slice(&(d as u32).to_le_bytes());
        }
        out
    }

    /// The accumulator whose state [`to_bytes`](Self::to_bytes) wrote, or why `bytes`
    /// are not such a state.
    ///
    /// Every field is checked (the layout is on [`to_bytes`](Self::to_bytes)): bytes that
    /// are cut short or padded, of another format version, with flags or digits out of
    /// range, or not in the canonical form get a [`StateError`], never a panic or an
    /// accumulator that would give a wrong sum.
    ///
    /// ```
    /// use fprev::exact::{Accumulator, StateError};
    ///
    /// let mut acc = Accumulator::new();
    /// acc.add_slice(&[1e300, 1.0, -1e300]);
    /// let back = Accumulator::from_bytes(&acc.to_bytes())?;
    /// assert_eq!(back.finish(), 1.0);
    ///
    /// let mut newer = acc.to_bytes();
    /// newer[4] = 2;
    /// assert_eq!(
    ///     Accumulator::from_bytes(&newer).unwrap_err(),
    ///     StateError::UnsupportedVersion { found: 2 }
    /// );
    /// # Ok::<(), StateError>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Accumulator, StateError> {
        let truncated = |needed| StateError::Truncated {
            needed,
            got: bytes.len(),
        };
        if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
            return Err(if MAGIC.starts_with(bytes) {
                truncated(HEADER)
            } else {
                StateError::NotAState
            });
        }
        let Some(&[version, flags, first, count]) = bytes.get(MAGIC.len()..HEADER) else {
            return Err(truncated(HEADER));
        };
        if version != Self::STATE_VERSION {
            return Err(StateError::UnsupportedVersion { found: version });
        }
        if flags & !KNOWN_FLAGS != 0 {
            return Err(StateError::UnknownFlags { flags });
        }
        let (first, count) = (usize::from(first), usize::from(count));
        if first + count > NLIMBS {
            return Err(StateError::DigitsOutOfRange { first, count });
        }
        let expected = HEADER + 4 * count;
        if bytes.len() < expected {
            return Err(truncated(expected));
        }
        if bytes.len() > expected {
            return Err(StateError::TrailingBytes {
                expected,
                got: bytes.len(),
            });
        }
        let digit = |i: usize| {
            let at = HEADER + 4 * i;
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let has = |bit: u8| flags & bit != 0;
        let not_canonical = |reason| Err(StateError::NotCanonical { reason });
        if count == 0 {
            if first != 0 {
                return not_canonical("no digits, but a first digit other than 0");
            }
            if has(NEGATIVE) {
                return not_canonical("a negative sign on zero");
            }
        } else if digit(0) == 0 || digit(count - 1) == 0 {
            return not_canonical("a zero digit at an end of the digits");
        }
        let special = has(NAN) || has(POS_INF) || has(NEG_INF);
        // (products that round to -0.0 add their exact, nonzero value: digits may be set)
        if has(NEG_ZERO_ONLY) && special {
            return not_canonical("only -0.0 added, but a NaN or an infinity");
        }
        if !has(NONEMPTY) && (!has(NEG_ZERO_ONLY) || count != 0 || special) {
            return not_canonical("nothing added, but a value");
        }
        let mut acc = Accumulator::new();
        for i in 0..count {
            let d = i64::from(digit(i));
            acc.limbs[first + i] = if has(NEGATIVE) { -d } else { d };
        }
        acc.normalize();
        acc.nan = has(NAN);
        acc.pos_inf = has(POS_INF);
        acc.neg_inf = has(NEG_INF);
        acc.nonempty = has(NONEMPTY);
        acc.neg_zero_only = has(NEG_ZERO_ONLY);
        Ok(acc)
    }

    /// Merges the state that [`to_bytes`](Self::to_bytes) wrote into this one: what
    /// [`from_bytes`](Self::from_bytes) then [`merge`](Self::merge) do. On an error
    /// nothing is merged.
    ///
    /// ```
    /// use fprev::exact::Accumulator;
    ///
    /// // Partial sums from three workers, arriving in any order.
    /// let parts: Vec<Vec<u8>> = [[1e20, 3.0], [-1e20, 0.5], [0.25, 0.0]]
    ///     .iter()
    ///     .map(|part| part.iter().copied().collect::<Accumulator>().to_bytes())
    ///     .collect();
    /// let mut total = Accumulator::new();
    /// for bytes in parts.iter().rev() {
    ///     total.merge_bytes(bytes)?;
    /// }
    /// assert_eq!(total.finish(), 3.75);
    /// # Ok::<(), fprev::exact::StateError>(())
    /// ```
    pub fn merge_bytes(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let other = Accumulator::from_bytes(bytes)?;
        self.merge(&other);
        Ok(())
    }

    /// The exact merge of any number of accumulators: in any order and grouping, the
    /// same state (and so the same bytes and the same rounded result).
    ///
    /// ```
    /// use fprev::exact::Accumulator;
    ///
    /// let parts: Vec<Accumulator> = [[0.1, 0.2], [0.3, -0.6], [1e-300, 0.0]]
    ///     .iter()
    ///     .map(|part| part.iter().copied().collect())
    ///     .collect();
    /// let forward = Accumulator::merge_all(&parts);
    /// let backward = Accumulator::merge_all(parts.iter().rev());
    /// assert_eq!(forward.to_bytes(), backward.to_bytes());
    /// assert_eq!(forward.finish(), fprev::exact::sum(&[0.1, 0.2, 0.3, -0.6, 1e-300, 0.0]));
    /// ```
    pub fn merge_all<'a>(states: impl IntoIterator<Item = &'a Accumulator>) -> Accumulator {
        let mut total = Accumulator::new();
        for state in states {
            total.merge(state);
        }
        total
    }
}

/// Bytes ([`Accumulator::to_bytes`]) in binary formats, their lowercase hex in
/// human-readable ones (JSON, TOML, ...); read back through
/// [`Accumulator::from_bytes`], so a bad state is a deserialization error.
///
/// ```
/// use fprev::exact::Accumulator;
///
/// let acc: Accumulator = [1e16, 1.0, -1e16].into_iter().collect();
/// let json = serde_json::to_string(&acc).unwrap();
/// assert_eq!(json, r#""465058410108440101000000""#);
/// let back: Accumulator = serde_json::from_str(&json).unwrap();
/// assert_eq!(back.finish(), 1.0);
/// assert!(serde_json::from_str::<Accumulator>(r#""4650584102""#).is_err());
/// ```
#[cfg(feature = "serde")]
impl serde::Serialize for Accumulator {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = self.to_bytes();
        if serializer.is_human_readable() {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            serializer.serialize_str(&hex)
        } else {
            serializer.serialize_bytes(&bytes)
        }
    }
}

/// See the [`Serialize`](serde::Serialize) impl: hex text or bytes, checked by
/// [`Accumulator::from_bytes`].
///
/// ```
/// // a value was added, and it was -0.0
/// let back: fprev::exact::Accumulator = serde_json::from_str(r#""4650584101180000""#).unwrap();
/// assert_eq!(back.finish().to_bits(), (-0.0f64).to_bits());
/// ```
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Accumulator {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Accumulator;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an exact accumulator's state (bytes, or their hex)")
            }
            fn visit_str<E: serde::de::Error>(self, hex: &str) -> Result<Accumulator, E> {
                let digits = hex.as_bytes();
                if digits.len() % 2 != 0 || !digits.iter().all(u8::is_ascii_hexdigit) {
                    return Err(E::custom(
                        "an accumulator state's hex: not pairs of hex digits",
                    ));
                }
                let bytes: Vec<u8> = digits
                    .chunks_exact(2)
                    .map(|pair| {
                        let nibble = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                        nibble(pair[0]) << 4 | nibble(pair[1])
                    })
                    .collect();
                self.visit_bytes(&bytes)
            }
            fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Accumulator, E> {
                Accumulator::from_bytes(bytes).map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Accumulator, A::Error> {
                // what the largest state takes: no sequence can make this allocate more
                const LARGEST: usize = HEADER + 4 * NLIMBS;
                let mut bytes = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    if bytes.len() == LARGEST {
                        return Err(serde::de::Error::custom(
                            "an accumulator state longer than any state",
                        ));
                    }
                    bytes.push(b);
                }
                self.visit_bytes(&bytes)
            }
        }
        if deserializer.is_human_readable() {
            deserializer.deserialize_str(Visitor)
        } else {
            deserializer.deserialize_bytes(Visitor)
        }
    }
}
