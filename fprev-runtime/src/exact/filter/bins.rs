//! Direct mode: one integer bin per binary exponent, for values whose dynamic range is too
//! wide for the expansions.
//!
//! A double is an integer significand times a power of two fixed by its exponent field, so
//! values with the same exponent add exactly as integers. Each bin keeps the upper and the
//! lower half of the significands it received (27 and 26 bits, signed), so an addition is
//! two integer adds at an address given by the exponent bits: no variable shifts, no
//! carries, and 2^36 additions before a half could overflow. The bins go to the wide
//! digits once, when the caller is done.

use super::super::accumulator::{Accumulator, LOW_EXP};

/// Bits of the significand kept in a bin's lower half.
const LOW_BITS: u32 = 26;
const LOW_MASK: u64 = (1 << LOW_BITS) - 1;
/// Exponent field values: subnormals (0) through the largest finite (2046), and 2047 for
/// NaN and infinities.
const EXPONENTS: usize = 2048;
/// Additions after which the bins are emptied into the digits: each half grows by less
/// than 2^27 per addition, so this keeps them far below 2^63.
const CAPACITY: u64 = 1 << 34;

/// Per-exponent integer sums, `[upper half, lower half]` side by side so one addition
/// touches one cache line.
pub(super) struct Bins {
    sums: Box<[[i64; 2]; EXPONENTS]>,
    added: u64,
}

impl Bins {
    pub(super) fn new() -> Self {
        Bins {
            sums: Box::new([[0; 2]; EXPONENTS]),
            added: 0,
        }
    }

    /// Adds every value of `xs`; NaN and infinities go to `acc` through the general path.
    #[inline(always)]
    pub(super) fn add(&mut self, acc: &mut Accumulator, xs: &[f64]) {
        #[cfg(target_arch = "x86_64")]
        let special = if super::has_avx2_fma() {
            // SAFETY: the CPU has AVX2.
            unsafe { avx2::add(&mut self.sums, xs) }
        } else {
            add_portable(&mut self.sums, xs)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let special = add_portable(&mut self.sums, xs);
        if special {
            // Only NaN and infinities reach the last bin; their bits mean nothing there.
            self.sums[EXPONENTS - 1] = [0, 0];
            for &x in xs.iter().filter(|x| !x.is_finite()) {
                acc.add(x);
            }
        }
        self.added += xs.len() as u64;
        if self.added >= CAPACITY {
            self.empty_into(acc);
        }
    }

    /// Moves every bin into the digits and empties them.
    pub(super) fn empty_into(&mut self, acc: &mut Accumulator) {
        // Bins of 32 consecutive exponents shift by at most 31 bits against each other:
        // their sum fits in an i128 (each bin is below 2^88) and goes to the digits in one
        // addition.
        for (group, bins) in self.sums.chunks_exact_mut(32).enumerate() {
            let mut window = 0i128;
            for (k, bin) in bins.iter_mut().enumerate() {
                if *bin == [0, 0] {
                    continue;
                }
                let v = ((bin[0] as i128) << LOW_BITS) + bin[1] as i128;
                *bin = [0, 0];
                // The lowest significand bit of exponent field e weighs
                // 2^(max(e, 1) - 1075).
                let shift = (group * 32 + k).max(1) - group * 32;
                window += v << shift;
            }
            if window != 0 {
                let pos = (group as i32 * 32 - 1075 - LOW_EXP) as u32;
                acc.add_wide(window.unsigned_abs(), pos, -((window < 0) as i64));
            }
        }
        self.added = 0;
    }
}

/// Adds `xs` to the bins one value at a time; returns whether one was NaN or infinite.
#[inline(always)]
fn add_portable(sums: &mut [[i64; 2]; EXPONENTS], xs: &[f64]) -> bool {
    let mut special = false;
    for &x in xs {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7FF) as usize;
        special |= exp == 0x7FF;
        let m = (bits & ((1 << 52) - 1)) | (((exp != 0) as u64) << 52);
        let neg = (bits as i64) >> 63;
        let bin = &mut sums[exp];
        bin[0] += (((m >> LOW_BITS) as i64) ^ neg) - neg;
        bin[1] += (((m & LOW_MASK) as i64) ^ neg) - neg;
    }
    special
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The bins' addition in two passes per few hundred values: AVX2 decodes four values
    //! at a time into exponents and signed halves, then a scalar loop adds each pair of
    //! halves to its bin with one 128-bit addition.

    use super::{EXPONENTS, LOW_BITS};
    use std::arch::x86_64::*;

    /// Values decoded per pass.
    const PASS: usize = 256;

    /// Adds `xs` to the bins; returns whether one was NaN or infinite.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[allow(unused_unsafe)]
    pub(super) unsafe fn add(sums: &mut [[i64; 2]; EXPONENTS], xs: &[f64]) -> bool {
        let mut index = [0u64; PASS];
        let mut halves = [[0i64; 2]; PASS];
        let mut special = false;
        let mut passes = xs.chunks_exact(PASS);
        for pass in passes.by_ref() {
            // SAFETY: the caller checked AVX2.
            special |= unsafe { decode(pass, &mut index, &mut halves) };
            for (&i, h) in index.iter().zip(&halves) {
                let bin = &mut sums[i as usize & (EXPONENTS - 1)];
                bin[0] += h[0];
                bin[1] += h[1];
            }
        }
        special | super::add_portable(sums, passes.remainder())
    }

    /// Decodes a pass; returns whether a value was NaN or infinite.
    #[target_feature(enable = "avx2")]
    #[allow(unused_unsafe)]
    unsafe fn decode(pass: &[f64], index: &mut [u64; PASS], halves: &mut [[i64; 2]; PASS]) -> bool {
        unsafe {
            let exp_mask = _mm256_set1_epi64x(0x7FF);
            let frac_mask = _mm256_set1_epi64x((1 << 52) - 1);
            let hidden = _mm256_set1_epi64x(1 << 52);
            let low_mask = _mm256_set1_epi64x((1 << LOW_BITS) - 1);
            let zero = _mm256_setzero_si256();
            let mut special = zero;
            for (k, group) in pass.chunks_exact(4).enumerate() {
                // A few passes ahead: the hardware prefetcher alone lets the scatter wait.
                _mm_prefetch::<_MM_HINT_T0>(group.as_ptr().wrapping_add(4 * PASS).cast());
                let bits = _mm256_loadu_si256(group.as_ptr().cast());
                let exp = _mm256_and_si256(_mm256_srli_epi64::<52>(bits), exp_mask);
                special = _mm256_or_si256(special, _mm256_cmpeq_epi64(exp, exp_mask));
                let subnormal = _mm256_cmpeq_epi64(exp, zero);
                let m = _mm256_or_si256(
                    _mm256_and_si256(bits, frac_mask),
                    _mm256_andnot_si256(subnormal, hidden),
                );
                let neg = _mm256_cmpgt_epi64(zero, bits);
                let signed = |v: __m256i| _mm256_sub_epi64(_mm256_xor_si256(v, neg), neg);
                let hi = signed(_mm256_srli_epi64::<{ LOW_BITS as i32 }>(m));
                let lo = signed(_mm256_and_si256(m, low_mask));
                _mm256_storeu_si256(index.as_mut_ptr().add(4 * k).cast(), exp);
                // [hi, lo] pairs in value order.
                let even = _mm256_unpacklo_epi64(hi, lo);
                let odd = _mm256_unpackhi_epi64(hi, lo);
                let first = _mm256_permute2x128_si256::<0x20>(even, odd);
                let second = _mm256_permute2x128_si256::<0x31>(even, odd);
                _mm256_storeu_si256(halves.as_mut_ptr().add(4 * k).cast(), first);
                _mm256_storeu_si256(halves.as_mut_ptr().add(4 * k + 2).cast(), second);
            }
            _mm256_testz_si256(special, special) == 0
        }
    }
}
