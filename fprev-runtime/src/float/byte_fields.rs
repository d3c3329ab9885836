//! The exponent and fraction fields of the formats stored in a byte (FP8 and the MX FP6
//! and FP4 types): a value from its fields, and the fields of a value. Each format's
//! special codes (NaN, infinities, saturation) stay with its layout.

/// The magnitude of exponent field `e` and fraction field `m` in a format with
/// `man_bits` fraction bits and exponent bias `bias` (`e = 0`: a subnormal).
pub(super) fn field_magnitude(e: u32, m: u32, man_bits: u32, bias: i32) -> f64 {
    let scale = f64::from(1u32 << man_bits);
    if e == 0 {
        f64::from(m) / scale * 2f64.powi(1 - bias)
    } else {
        (1.0 + f64::from(m) / scale) * 2f64.powi(e as i32 - bias)
    }
}

/// The exponent and fraction fields, as the low bits of a code, of `r`: a positive value
/// of the format with `man_bits` fraction bits and bias `bias` (already rounded to it and
/// within its range).
pub(super) fn magnitude_fields(r: f64, man_bits: u32, bias: i32) -> u8 {
    let min_exp = 1 - bias;
    let sub = 2f64.powi(min_exp - man_bits as i32);
    if r < 2f64.powi(min_exp) {
        return (r / sub) as u8;
    }
    let e = binade(r);
    let m = ((r / 2f64.powi(e) - 1.0) * f64::from(1u32 << man_bits)) as u8;
    (((e + bias) as u8) << man_bits) | m
}

/// `floor(log2 x)` for a positive finite `x`, from its bits (f64 subnormals count as
/// one binade below every format here).
pub(super) fn binade(x: f64) -> i32 {
    ((x.to_bits() >> 52) as i32) - 1023
}
