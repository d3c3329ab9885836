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
    //! The bins' addition with AVX2: four values at a time are decoded into exponents and
    //! signed halves, and each pair of halves goes to its bin with one 128-bit addition
    //! straight from the register that decoded it. (Decoding a pass into buffers and adding
    //! them in a second loop is the same work, but measured slower: docs/exact.md.)

    use super::{EXPONENTS, LOW_BITS};
    use std::arch::x86_64::*;

    /// How far ahead to prefetch, in values: the hardware prefetcher alone lets the
    /// additions wait on memory.
    const PREFETCH: usize = 1024;

    /// Adds `xs` to the bins; returns whether one was NaN or infinite.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[allow(unused_unsafe)]
    pub(super) unsafe fn add(sums: &mut [[i64; 2]; EXPONENTS], xs: &[f64]) -> bool {
        let mut groups = xs.chunks_exact(4);
        // SAFETY: the caller checked AVX2; every index is an exponent field, below
        // EXPONENTS, so each bin pointer is inside `sums`.
        let special = unsafe {
            let exp_mask = _mm256_set1_epi64x(0x7FF);
            let frac_mask = _mm256_set1_epi64x((1 << 52) - 1);
            let hidden = _mm256_set1_epi64x(1 << 52);
            let low_mask = _mm256_set1_epi64x((1 << LOW_BITS) - 1);
            let zero = _mm256_setzero_si256();
            let mut special = zero;
            let mut index = [0u64; 4];
            let bins = sums.as_mut_ptr().cast::<__m128i>();
            for group in groups.by_ref() {
                _mm_prefetch::<_MM_HINT_T0>(group.as_ptr().wrapping_add(PREFETCH).cast());
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
                _mm256_storeu_si256(index.as_mut_ptr().cast(), exp);
                // [hi, lo] pairs in value order.
                let even = _mm256_unpacklo_epi64(hi, lo);
                let odd = _mm256_unpackhi_epi64(hi, lo);
                let first = _mm256_permute2x128_si256::<0x20>(even, odd);
                let second = _mm256_permute2x128_si256::<0x31>(even, odd);
                let pairs = [
                    _mm256_castsi256_si128(first),
                    _mm256_extracti128_si256::<1>(first),
                    _mm256_castsi256_si128(second),
                    _mm256_extracti128_si256::<1>(second),
                ];
                for (&i, pair) in index.iter().zip(pairs) {
                    let bin = bins.add(i as usize);
                    _mm_storeu_si128(bin, _mm_add_epi64(_mm_loadu_si128(bin), pair));
                }
            }
            _mm256_testz_si256(special, special) == 0
        };
        special | super::add_portable(sums, groups.remainder())
    }
}

#[cfg(test)]
mod tests {
    //! The dispatched (AVX2) addition must fill the bins exactly as the portable one does,
    //! and the bins must hold the exact sum, for every length (the groups of four and the
    //! remainder), sign, subnormal, repeated exponent and special value.
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Values of one of several kinds: a huge exponent range, subnormals and tiny normals,
    /// a single binade (every value in the same bin), or a mix with zeros and specials.
    fn draw(rng: &mut ChaCha8Rng, kind: u64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let sign = if rng.random::<bool>() { -1.0 } else { 1.0 };
                let bits = rng.random::<u64>() & ((1 << 52) - 1);
                let exp: u64 = match kind {
                    0 => rng.random_range(1..2047),
                    1 => rng.random_range(0..3),
                    2 => 1023,
                    _ => match rng.random_range(0..40) {
                        0 => return sign * 0.0,
                        1 => return sign * f64::INFINITY,
                        2 => return f64::NAN,
                        _ => rng.random_range(0..2047),
                    },
                };
                sign * f64::from_bits((exp << 52) | bits)
            })
            .collect()
    }

    #[test]
    fn dispatched_and_portable_bins_agree_and_are_exact() {
        for seed in 0..40u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let kind = seed % 4;
            let n = rng.random_range(0..3000);
            let xs = draw(&mut rng, kind, n);
            let ctx = format!("seed {seed}, kind {kind}, n = {n}");

            let mut portable = Box::new([[0i64; 2]; EXPONENTS]);
            let portable_special = add_portable(&mut portable, &xs);
            #[cfg(target_arch = "x86_64")]
            if super::super::has_avx2_fma() {
                let mut vector = Box::new([[0i64; 2]; EXPONENTS]);
                // SAFETY: the CPU has AVX2.
                let vector_special = unsafe { avx2::add(&mut vector, &xs) };
                assert_eq!(vector_special, portable_special, "{ctx}");
                assert!(vector == portable, "{ctx}: the bins differ");
            }

            let mut bins = Bins::new();
            let mut acc = Accumulator::new();
            bins.add(&mut acc, &xs);
            bins.empty_into(&mut acc);
            assert!(bins.sums.iter().all(|b| *b == [0, 0]), "{ctx}: not emptied");
            let mut one_by_one = Accumulator::new();
            xs.iter().for_each(|&x| one_by_one.add(x));
            let (got, want) = (acc.finish(), one_by_one.finish());
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{ctx}: {got:e} vs {want:e}"
            );
        }
    }
}
