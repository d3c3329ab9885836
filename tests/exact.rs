//! Correct rounding of `fprev::exact` against a big-integer reference, IEEE edge cases, and
//! bit-identical results across thread counts, chunkings and input orders.
//!
//! Sizes are small in debug builds; `FPREV_EXACT_N` raises the largest vector length.

use fprev::exact::{self, Accumulator, RoundingFormat};
use num_bigint::{BigInt, BigUint, Sign};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Largest random vector length (override with `FPREV_EXACT_N`).
fn max_n() -> usize {
    let default = if cfg!(debug_assertions) {
        3_000
    } else {
        100_000
    };
    match std::env::var("FPREV_EXACT_N") {
        Ok(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("FPREV_EXACT_N={v:?} is not a number; using {default}");
            default
        }),
        Err(_) => default,
    }
}

// ---------- the reference: exact values as big integers, rounded by hand ----------

/// `x * 2^1074` as an integer (exact for every finite double).
fn big(x: f64) -> BigInt {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7FF) as u32;
    let frac = bits & ((1 << 52) - 1);
    let (m, shift) = if biased == 0 {
        (frac, 0)
    } else {
        (frac | (1 << 52), biased - 1)
    };
    let v = BigInt::from(m) << shift;
    if x.is_sign_negative() {
        -v
    } else {
        v
    }
}

/// Rounds `v * 2^low_exp` to the format (nearest, ties to even); `None` for exact zero.
fn round_big(v: &BigInt, low_exp: i32, format: RoundingFormat) -> Option<f64> {
    let (p, emin, emax) = (
        format.precision_bits() as i32,
        format.min_exp(),
        format.max_exp(),
    );
    let (sign, mag) = (v.sign(), v.magnitude().clone());
    if sign == Sign::NoSign {
        return None;
    }
    let neg = sign == Sign::Minus;
    let signed = |x: f64| if neg { -x } else { x };
    let lead_exp = mag.bits() as i32 - 1 + low_exp;
    if lead_exp > emax {
        return Some(signed(f64::INFINITY));
    }
    let ulp_exp = lead_exp.max(emin) - (p - 1);
    let shift = ulp_exp - low_exp;
    let mut q: BigUint;
    if shift <= 0 {
        q = &mag << (-shift) as usize; // no bits below the ulp: exact
    } else {
        let shift = shift as usize;
        q = &mag >> shift;
        let rem = &mag - (&q << shift);
        let half = BigUint::from(1u32) << (shift - 1);
        if rem > half || (rem == half && q.bit(0)) {
            q += 1u32;
        }
    }
    if q.bits() == 0 {
        return Some(signed(0.0));
    }
    if ulp_exp + q.bits() as i32 - 1 > emax {
        return Some(signed(f64::INFINITY));
    }
    let q = q.to_u64_digits().first().copied().unwrap_or(0) as f64;
    let (mut value, mut e) = (q, ulp_exp);
    if e < -900 {
        value *= 2f64.powi(-900);
        e += 900;
    }
    Some(signed(value * 2f64.powi(e)))
}

/// The reference sum of finite values, rounded to `format`, with IEEE's zero sign rule.
fn reference_sum(xs: &[f64], format: RoundingFormat) -> f64 {
    let total: BigInt = xs.iter().map(|&x| big(x)).sum();
    round_big(&total, -1074, format).unwrap_or_else(|| {
        let neg_zero_only = !xs.is_empty() && xs.iter().all(|x| x.to_bits() == (-0.0f64).to_bits());
        if neg_zero_only {
            -0.0
        } else {
            0.0
        }
    })
}

/// The reference dot product of finite values.
fn reference_dot(x: &[f64], y: &[f64]) -> f64 {
    let total: BigInt = x.iter().zip(y).map(|(&a, &b)| big(a) * big(b)).sum();
    round_big(&total, -2148, RoundingFormat::F64).unwrap_or_else(|| {
        let neg = !x.is_empty()
            && x.iter()
                .zip(y)
                .all(|(a, b)| (a * b).to_bits() == (-0.0f64).to_bits());
        if neg {
            -0.0
        } else {
            0.0
        }
    })
}

// ---------- seeded generators ----------

/// The kinds of vectors the random tests draw.
#[derive(Clone, Copy, Debug)]
enum VectorKind {
    /// Uniform in [-1, 1].
    Unit,
    /// Random sign and mantissa, exponents in [-30, 30].
    Moderate,
    /// Any finite double (random bit patterns): dynamic range up to 1e616.
    AnyFinite,
    /// Values and their near-negatives: the sum cancels to a tiny remainder.
    Cancelling,
    /// Subnormals and the smallest normals.
    Subnormal,
    /// Near the overflow threshold, both signs.
    Huge,
    /// Exponents spread over [-1000, 1000] (the ~1e300 worst case).
    Wide,
}

const KINDS: [VectorKind; 7] = [
    VectorKind::Unit,
    VectorKind::Moderate,
    VectorKind::AnyFinite,
    VectorKind::Cancelling,
    VectorKind::Subnormal,
    VectorKind::Huge,
    VectorKind::Wide,
];

fn with_exponent(rng: &mut ChaCha8Rng, lo: i32, hi: i32) -> f64 {
    let mantissa = 1.0 + rng.random::<f64>();
    let sign = if rng.random::<bool>() { -1.0 } else { 1.0 };
    let e = rng.random_range(lo..=hi);
    let half = e / 2;
    sign * mantissa * 2f64.powi(half) * 2f64.powi(e - half)
}

fn draw(kind: VectorKind, n: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    match kind {
        VectorKind::Unit => (0..n).map(|_| rng.random_range(-1.0..=1.0)).collect(),
        VectorKind::Moderate => (0..n).map(|_| with_exponent(rng, -30, 30)).collect(),
        VectorKind::AnyFinite => (0..n)
            .map(|_| loop {
                let v = f64::from_bits(rng.random());
                if v.is_finite() {
                    break v;
                }
            })
            .collect(),
        VectorKind::Cancelling => {
            let half: Vec<f64> = (0..n / 2).map(|_| with_exponent(rng, -60, 60)).collect();
            let mut v: Vec<f64> = half.iter().flat_map(|&x| [x, -x]).collect();
            for _ in 0..(n % 2 + 3) {
                v.push(with_exponent(rng, -1070, -1000));
            }
            v.push(f64::EPSILON * rng.random::<f64>());
            shuffle(&mut v, rng);
            v
        }
        VectorKind::Subnormal => (0..n)
            .map(|_| {
                let v = f64::from_bits(rng.random_range(0..(1u64 << 53)));
                if rng.random::<bool>() {
                    -v
                } else {
                    v
                }
            })
            .collect(),
        VectorKind::Huge => (0..n).map(|_| with_exponent(rng, 1015, 1023)).collect(),
        VectorKind::Wide => (0..n).map(|_| with_exponent(rng, -1000, 1000)).collect(),
    }
}

/// Fisher-Yates on the seeded generator (our own, so the draws never change).
fn shuffle<T>(v: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.random_range(0..=i);
        v.swap(i, j);
    }
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn lengths() -> Vec<usize> {
    let big = max_n();
    vec![0, 1, 2, 7, 8, 9, 17, 100, 1023, 1025, big.min(2500), big]
}

// ---------- correct rounding ----------

#[test]
fn sum_is_correctly_rounded_on_random_vectors() {
    for seed in 0..6u64 {
        for kind in KINDS {
            for n in lengths() {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let xs = draw(kind, n, &mut rng);
                let want = reference_sum(&xs, RoundingFormat::F64);
                let ctx = format!("seed {seed}, {kind:?}, n = {n}");
                assert!(same(exact::sum(&xs), want), "sum: {ctx}");
                assert!(same(exact::par_sum(&xs), want), "par_sum: {ctx}");
                if n <= 1025 {
                    let mut one_by_one = Accumulator::new();
                    xs.iter().for_each(|&x| one_by_one.add(x));
                    assert!(same(one_by_one.finish(), want), "add: {ctx}");
                }
            }
        }
    }
}

#[test]
fn narrower_formats_round_once() {
    for seed in 0..4u64 {
        for kind in KINDS {
            for n in [1, 3, 9, 64, 1000] {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let xs = draw(kind, n, &mut rng);
                let mut acc = Accumulator::new();
                acc.add_slice(&xs);
                for format in [
                    RoundingFormat::F32,
                    RoundingFormat::F16,
                    RoundingFormat::BF16,
                ] {
                    let want = reference_sum(&xs, format);
                    let got = acc.round_to(format);
                    assert!(
                        same(got, want),
                        "seed {seed}, {kind:?}, n = {n}, {format:?}: {got:e} vs {want:e}"
                    );
                }
            }
        }
    }
}

#[test]
fn single_values_round_like_the_standard_conversions() {
    use fprev::half::{bf16, f16};
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut values: Vec<f64> = (0..2000)
        .map(|i| with_exponent(&mut rng, -150 + (i % 300), -150 + (i % 300)))
        .collect();
    values.extend([
        65504.0,
        65519.99,
        65520.0,
        2f64.powi(-24),
        2f64.powi(-25),
        3.0 * 2f64.powi(-26),
    ]);
    values.extend([
        f32::MAX as f64 * (1.0 + 2f64.powi(-25)),
        f32::MAX as f64 * (1.0 + 2f64.powi(-24)),
    ]);
    for x in values {
        let mut acc = Accumulator::new();
        acc.add(x);
        assert_eq!(
            acc.round_to(RoundingFormat::F32),
            (x as f32) as f64,
            "f32 {x:e}"
        );
        assert_eq!(
            acc.round_to(RoundingFormat::F16),
            f16::from_f64(x).to_f64(),
            "f16 {x:e}"
        );
        assert_eq!(
            acc.round_to(RoundingFormat::BF16),
            bf16::from_f64(x).to_f64(),
            "bf16 {x:e}"
        );
    }
}

#[test]
fn sum_f32_rounds_the_exact_value_once() {
    for seed in 0..8u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for n in [1, 5, 40, 2000] {
            let xs: Vec<f32> = (0..n)
                .map(|_| with_exponent(&mut rng, -140, 127) as f32)
                .collect();
            let wide: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
            let want = reference_sum(&wide, RoundingFormat::F32) as f32;
            let got = exact::sum_f32(&xs);
            assert_eq!(got.to_bits(), want.to_bits(), "seed {seed}, n = {n}");
        }
    }
    // The f32 tie case that summing in f64 then narrowing gets wrong.
    let xs = [1.0f32, 2f32.powi(-24), 2f32.powi(-60)];
    assert_eq!(exact::sum_f32(&xs), 1.0 + f32::EPSILON);
    assert_eq!(exact::sum_f32(&[f32::MAX, f32::MAX]), f32::INFINITY);
    assert_eq!(exact::sum_f32(&[-f32::MAX, -f32::MAX]), f32::NEG_INFINITY);
}

#[test]
fn ties_round_to_even() {
    let ulp = f64::EPSILON;
    for (xs, want) in [
        (vec![1.0, ulp / 2.0], 1.0),
        (vec![1.0 + ulp, ulp / 2.0], 1.0 + 2.0 * ulp),
        (vec![1.0, ulp / 2.0, 1e-300], 1.0 + ulp),
        (vec![1.0, ulp / 2.0, -1e-300], 1.0),
        (vec![f64::MIN_POSITIVE, 5e-324, -5e-324], f64::MIN_POSITIVE),
    ] {
        assert_eq!(exact::sum(&xs), want, "{xs:?}");
        assert_eq!(
            exact::sum(&vec![xs.clone(); 8].concat()),
            want * 8.0,
            "{xs:?} x8"
        );
    }
}

#[test]
fn dot_is_correctly_rounded() {
    for seed in 0..5u64 {
        for kind in KINDS {
            for n in [0, 1, 8, 9, 100, 1000] {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let x = draw(kind, n, &mut rng);
                let mut y = draw(KINDS[(seed as usize) % KINDS.len()], x.len(), &mut rng);
                y.truncate(x.len());
                let want = reference_dot(&x, &y);
                let ctx = format!("seed {seed}, {kind:?}, n = {n}");
                assert!(
                    same(exact::dot(&x, &y).unwrap_or(f64::NAN), want),
                    "dot: {ctx}"
                );
                assert!(
                    same(exact::par_dot(&x, &y).unwrap_or(f64::NAN), want),
                    "par_dot: {ctx}"
                );
                let ozaki = exact::ozaki_dot(&x, &y).unwrap_or(f64::NAN);
                assert!(same(ozaki, want), "ozaki_dot: {ctx}: {ozaki:e} vs {want:e}");
            }
        }
    }
}

#[test]
fn ozaki_dot_ignores_the_inner_order() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    for kind in KINDS {
        let n = max_n().min(2000);
        let x = draw(kind, n, &mut rng);
        let y = draw(VectorKind::Moderate, x.len(), &mut rng);
        let want = exact::dot(&x, &y).unwrap_or(f64::NAN);
        let forward =
            exact::ozaki_dot_with(&x, &y, |a, b| a.iter().zip(b).map(|(p, q)| p * q).sum());
        let reversed = exact::ozaki_dot_with(&x, &y, |a, b| {
            a.iter().zip(b).rev().map(|(p, q)| p * q).sum()
        });
        let fused = exact::ozaki_dot_with(&x, &y, |a, b| {
            a.iter().zip(b).fold(0.0, |s, (p, q)| p.mul_add(*q, s))
        });
        let mut order_rng = ChaCha8Rng::seed_from_u64(7);
        let scrambled = exact::ozaki_dot_with(&x, &y, |a, b| {
            let mut idx: Vec<usize> = (0..a.len()).collect();
            shuffle(&mut idx, &mut order_rng);
            idx.iter().map(|&i| a[i] * b[i]).sum()
        });
        let parallel = exact::ozaki_dot_with(&x, &y, |a, b| {
            use rayon::prelude::*;
            a.par_iter().zip(b).map(|(p, q)| p * q).sum()
        });
        for got in [forward, reversed, fused, scrambled, parallel] {
            assert!(same(got.unwrap_or(f64::NAN), want), "{kind:?}");
        }
    }
}

// ---------- IEEE edge cases ----------

#[test]
fn ieee_special_values() {
    let inf = f64::INFINITY;
    let cases: Vec<(Vec<f64>, f64)> = vec![
        (vec![], 0.0),
        (vec![-0.0], -0.0),
        (vec![-0.0; 20], -0.0),
        (vec![-0.0, 0.0], 0.0),
        ([vec![-0.0; 19], vec![0.0]].concat(), 0.0),
        (vec![1.0, -1.0], 0.0),
        ([vec![1.5; 10], vec![-1.5; 10]].concat(), 0.0),
        (vec![1.0, f64::NAN, 2.0], f64::NAN),
        ([vec![1.0; 30], vec![f64::NAN]].concat(), f64::NAN),
        (vec![inf, 1.0], inf),
        (vec![-inf, 1e308, 1e308], -inf),
        (vec![inf, -inf], f64::NAN),
        ([vec![inf], vec![2.0; 20], vec![-inf]].concat(), f64::NAN),
        (vec![f64::MAX, f64::MAX], inf),
        (vec![f64::MAX; 20], inf),
        (vec![-f64::MAX; 20], -inf),
        ([vec![f64::MAX; 20], vec![-f64::MAX; 19]].concat(), f64::MAX),
        (vec![f64::MAX, f64::MAX, -f64::MAX], f64::MAX),
        (vec![5e-324; 16], 16.0 * 5e-324),
        (vec![-5e-324; 3], -1.5e-323),
    ];
    for (xs, want) in cases {
        assert!(same(exact::sum(&xs), want), "sum {xs:?}");
        assert!(same(exact::par_sum(&xs), want), "par_sum {xs:?}");
        let mut acc = Accumulator::new();
        xs.iter().for_each(|&x| acc.add(x));
        assert!(same(acc.finish(), want), "add {xs:?}");
    }
    // Overflow boundary: MAX + half an ulp of MAX rounds to infinity, a hair less does not.
    let half_ulp = 2f64.powi(970);
    assert_eq!(exact::sum(&[f64::MAX, half_ulp]), inf);
    assert_eq!(exact::sum(&[f64::MAX, half_ulp, -5e-324]), f64::MAX);
    // Underflow in a narrow format keeps the sign.
    let mut acc = Accumulator::new();
    acc.add(-1e-30);
    assert_eq!(
        acc.round_to(RoundingFormat::F16).to_bits(),
        (-0.0f64).to_bits()
    );
    assert_eq!(
        acc.round_to_format(11, -14, 15).to_bits(),
        (-0.0f64).to_bits()
    );
}

#[test]
fn special_values_inside_long_vectors() {
    // Long wide-range vectors run in direct mode, long moderate ones through the filter:
    // specials must be honoured on both paths and at block boundaries.
    for kind in [VectorKind::Wide, VectorKind::Moderate] {
        for pos in [0, 7, 8, 1023, 1024, 2047, 2500, 4999] {
            let mut rng = ChaCha8Rng::seed_from_u64(pos as u64);
            let base = draw(kind, 5000, &mut rng);
            let with = |vals: &[(usize, f64)]| {
                let mut v = base.clone();
                for &(i, x) in vals {
                    v[i] = x;
                }
                v
            };
            let inf = f64::INFINITY;
            let ctx = format!("{kind:?}, position {pos}");
            assert!(exact::sum(&with(&[(pos, f64::NAN)])).is_nan(), "NaN: {ctx}");
            assert_eq!(exact::sum(&with(&[(pos, inf)])), inf, "inf: {ctx}");
            assert_eq!(exact::sum(&with(&[(pos, -inf)])), -inf, "-inf: {ctx}");
            let both = with(&[(pos, inf), ((pos + 1500) % 5000, -inf)]);
            assert!(exact::sum(&both).is_nan(), "inf - inf: {ctx}");
            // Values near the overflow threshold make lanes overflow: still exact.
            let huge = with(&[(pos, f64::MAX), ((pos + 1) % 5000, f64::MAX)]);
            let mut reference = huge.clone();
            reference.retain(|x| x.abs() != f64::MAX);
            let mut acc = Accumulator::new();
            acc.add_slice(&reference);
            acc.add(f64::MAX);
            acc.add(f64::MAX);
            assert_eq!(exact::sum(&huge), acc.finish(), "MAX: {ctx}");
            let x: Vec<f64> = huge.iter().map(|v| v * 0.5).collect();
            assert_eq!(
                exact::sum(&x),
                reference_sum(&x, RoundingFormat::F64),
                "MAX/2: {ctx}"
            );
        }
    }
    // A wide-range stretch (direct mode) followed by a moderate one (back to the filter).
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut xs = draw(VectorKind::Wide, 20_000, &mut rng);
    xs.extend(draw(VectorKind::Moderate, 20_000, &mut rng));
    xs.extend(draw(VectorKind::Subnormal, 3_000, &mut rng));
    assert!(same(
        exact::sum(&xs),
        reference_sum(&xs, RoundingFormat::F64)
    ));
    let ys = draw(VectorKind::AnyFinite, xs.len(), &mut rng);
    assert!(same(
        exact::dot(&xs, &ys).unwrap_or(f64::NAN),
        reference_dot(&xs, &ys)
    ));
    // Only -0.0, long enough to go through the lanes.
    assert_eq!(exact::sum(&vec![-0.0; 5000]).to_bits(), (-0.0f64).to_bits());
    assert_eq!(
        exact::par_sum(&vec![-0.0; 100_000]).to_bits(),
        (-0.0f64).to_bits()
    );
    let zeros = exact::par_dot(&vec![-0.0; 100_000], &vec![3.0; 100_000]);
    assert_eq!(zeros.map(f64::to_bits), Ok((-0.0f64).to_bits()));
}

/// Long dot products whose blocks change scale, hold zeros, a product near underflow or
/// overflow, or a NaN: the exact dot's kernel handles a few hundred products at a time and
/// sets itself up from the previous ones, so each of these crosses its seams.
#[test]
fn dot_blocks_of_changing_scale() {
    let n = 3000;
    let seed = 17;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let base = draw(VectorKind::Moderate, n, &mut rng);
    let other = draw(VectorKind::Unit, n, &mut rng);
    let scaled = |f: &dyn Fn(usize) -> f64| -> Vec<f64> {
        base.iter().enumerate().map(|(i, v)| v * f(i)).collect()
    };
    let mut cases: Vec<(&str, Vec<f64>, Vec<f64>)> = vec![
        (
            "growing",
            scaled(&|i| 2f64.powi((i / 100) as i32 * 20)),
            other.clone(),
        ),
        (
            "shrinking",
            scaled(&|i| 2f64.powi(-((i / 100) as i32) * 20)),
            other.clone(),
        ),
        (
            "alternating",
            scaled(&|i| if (i / 256) % 2 == 0 { 1e200 } else { 1e-200 }),
            other.clone(),
        ),
        (
            "one huge",
            scaled(&|i| if i == 1500 { 2f64.powi(900) } else { 1.0 }),
            other.clone(),
        ),
        (
            "near overflow",
            scaled(&|_| 2f64.powi(960)),
            scaled(&|_| 2f64.powi(20)),
        ),
        (
            "near underflow",
            scaled(&|_| 2f64.powi(-500)),
            scaled(&|_| 2f64.powi(-440)),
        ),
        (
            "one tiny",
            scaled(&|i| if i == 700 { 2f64.powi(-1000) } else { 1.0 }),
            other.clone(),
        ),
        (
            "zero blocks",
            scaled(&|i| if (i / 256) % 3 == 1 { 0.0 } else { 1.0 }),
            other.clone(),
        ),
        (
            "wide then narrow",
            scaled(&|i| {
                if i < 1000 {
                    2f64.powi((i % 61) as i32 * 30 - 900)
                } else {
                    1.0
                }
            }),
            other.clone(),
        ),
    ];
    let neg_zeros = vec![-0.0; n];
    cases.push(("all -0.0 products", neg_zeros.clone(), vec![1.0; n]));
    let mut one_pos = neg_zeros.clone();
    one_pos[2999] = 0.0;
    cases.push(("-0.0 and one +0.0", one_pos, vec![1.0; n]));
    for (name, x, y) in &cases {
        let want = reference_dot(x, y);
        for len in [n, n - 1, 257, 255, 260] {
            let got = exact::dot(&x[..len], &y[..len]).unwrap_or(f64::NAN);
            let want = if len == n {
                want
            } else {
                reference_dot(&x[..len], &y[..len])
            };
            assert!(
                same(got, want),
                "seed {seed}, {name}, n = {len}: {got:e} vs {want:e}"
            );
        }
    }
    for at in [0, 255, 256, 1000, 2999] {
        let mut x = base.clone();
        x[at] = f64::NAN;
        assert!(
            exact::dot(&x, &other).unwrap_or(0.0).is_nan(),
            "NaN at {at}"
        );
        x[at] = f64::INFINITY;
        let got = exact::dot(&x, &other).unwrap_or(0.0);
        assert_eq!(got, f64::INFINITY * other[at].signum(), "inf at {at}");
    }
}

#[test]
fn dot_special_values() {
    let inf = f64::INFINITY;
    assert!(exact::dot(&[inf, 1.0], &[0.0, 1.0]).unwrap_or(0.0).is_nan());
    assert_eq!(exact::dot(&[inf, 1.0], &[1.0, 1.0]), Ok(inf));
    assert!(exact::dot(&[inf, -inf], &[1.0, 1.0])
        .unwrap_or(0.0)
        .is_nan());
    assert_eq!(exact::dot(&[1e300, 1e300], &[1e300, -1e300]), Ok(0.0));
    assert_eq!(exact::dot(&[1e300], &[1e300]), Ok(inf));
    assert_eq!(exact::dot(&[1e-200, 1.0], &[1e-200, 0.0]), Ok(0.0)); // 1e-400 rounds to +0
    let neg = exact::dot(&[-1e-200], &[1e-200]).unwrap_or(f64::NAN);
    assert_eq!(neg.to_bits(), (-0.0f64).to_bits());
    let zeros = exact::dot(&[-0.0; 12], &[1.0; 12]).unwrap_or(f64::NAN);
    assert_eq!(zeros.to_bits(), (-0.0f64).to_bits());
    let mixed = exact::ozaki_dot(&[-0.0, 0.0], &[1.0, 1.0]).unwrap_or(f64::NAN);
    assert_eq!(mixed.to_bits(), 0.0f64.to_bits());
    let err = exact::dot(&[1.0], &[]).err();
    assert_eq!(err.map(|e| (e.left, e.right)), Some((1, 0)));
    assert!(exact::ozaki_dot(&[f64::NAN], &[1.0])
        .unwrap_or(0.0)
        .is_nan());
}

#[test]
fn format_validation() {
    assert!(RoundingFormat::new(54, -1022, 1023).is_err());
    assert!(RoundingFormat::new(24, -1023, 127).is_err());
    assert!(RoundingFormat::new(24, 10, 5).is_err());
    assert_eq!(RoundingFormat::new(24, -126, 127), Ok(RoundingFormat::F32));
}

// ---------- reproducibility ----------

#[test]
fn bit_identical_across_threads_chunks_and_orders() {
    let n = (max_n() * 10).max(20_000);
    for kind in [
        VectorKind::Moderate,
        VectorKind::Wide,
        VectorKind::Cancelling,
    ] {
        let seed = 99;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let xs = draw(kind, n, &mut rng);
        let ys = draw(VectorKind::Unit, xs.len(), &mut rng);
        let want = exact::sum(&xs);
        let want_dot = exact::dot(&xs, &ys).unwrap_or(f64::NAN);
        let reversed_inner = exact::ozaki_dot_with(&xs, &ys, |a, b| {
            a.iter().zip(b).rev().map(|(p, q)| p * q).sum()
        });
        assert!(
            same(reversed_inner.unwrap_or(f64::NAN), want_dot),
            "{kind:?} ozaki"
        );
        same_on_every_pool(
            &xs,
            &ys,
            (want, want_dot),
            16,
            &format!("{kind:?}, seed {seed}"),
        );
        for chunk in [1, 3, 8, 100, 1000, 4099] {
            // Merge the chunks' accumulators in a scrambled order.
            let mut accs: Vec<Accumulator> = xs
                .chunks(chunk)
                .map(|c| {
                    let mut a = Accumulator::new();
                    a.add_slice(c);
                    a
                })
                .collect();
            shuffle(&mut accs, &mut rng);
            let merged = accs
                .into_iter()
                .fold(Accumulator::new(), Accumulator::merged);
            assert!(same(merged.finish(), want), "{kind:?}, chunk {chunk}");
        }
        let mut perm: Vec<usize> = (0..xs.len()).collect();
        for round in 0..4 {
            shuffle(&mut perm, &mut rng);
            let permuted: Vec<f64> = perm.iter().map(|&i| xs[i]).collect();
            let permuted_y: Vec<f64> = perm.iter().map(|&i| ys[i]).collect();
            assert!(
                same(exact::sum(&permuted), want),
                "{kind:?}, permutation {round}"
            );
            assert!(
                same(exact::par_sum(&permuted), want),
                "{kind:?}, permutation {round}"
            );
            let d = exact::dot(&permuted, &permuted_y).unwrap_or(f64::NAN);
            assert!(same(d, want_dot), "{kind:?} dot, permutation {round}");
        }
    }
}

/// Long enough that `par_sum` and `par_dot` split into several tasks (each at least
/// 2^17 values), with the full exponent range so the tasks' exponent bins are merged.
#[test]
fn parallel_tasks_merge_to_the_same_bits() {
    let seed = 1_234;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = (1 << 19) + 12_345;
    for kind in [VectorKind::Wide, VectorKind::Moderate] {
        let mut xs = draw(kind, n, &mut rng);
        // Specials in a late task, and a block of narrow values between wide ones.
        let ys = draw(VectorKind::Unit, n, &mut rng);
        xs[200_000..210_000]
            .iter_mut()
            .for_each(|v| *v = 1.0 + *v * 1e-300);
        let want = reference_sum(&xs, RoundingFormat::F64);
        assert!(same(exact::sum(&xs), want), "{kind:?} sum, seed {seed}");
        let want_dot = exact::dot(&xs, &ys).unwrap_or(f64::NAN);
        same_on_every_pool(
            &xs,
            &ys,
            (want, want_dot),
            8,
            &format!("{kind:?}, seed {seed}"),
        );
        xs[n - 5] = f64::INFINITY;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("thread pool");
        assert_eq!(
            pool.install(|| exact::par_sum(&xs)),
            f64::INFINITY,
            "{kind:?}"
        );
        xs[3] = f64::NEG_INFINITY;
        assert!(pool.install(|| exact::par_sum(&xs)).is_nan(), "{kind:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 64 } else { 512 }))]

    #[test]
    fn any_finite_vector_sums_correctly(
        xs in proptest::collection::vec(
            any::<f64>().prop_filter("finite", |x| x.is_finite()), 0..200)
    ) {
        let want = reference_sum(&xs, RoundingFormat::F64);
        prop_assert!(same(exact::sum(&xs), want));
        prop_assert!(same(Accumulator::new().round_to(RoundingFormat::F64), 0.0));
    }

    #[test]
    fn reversal_and_rotation_do_not_matter(
        xs in proptest::collection::vec(-1e10f64..1e10, 0..300),
        k in 0usize..300,
    ) {
        let want = exact::sum(&xs);
        let mut v = xs.clone();
        v.reverse();
        prop_assert!(same(exact::sum(&v), want));
        if !v.is_empty() {
            let k = k % v.len();
            v.rotate_left(k);
        }
        prop_assert!(same(exact::sum(&v), want));
    }
}

/// `par_sum(xs)` and `par_dot(xs, ys)` give `want` (sum, dot) bit for bit on pools of 1 to
/// `max_threads` threads.
fn same_on_every_pool(xs: &[f64], ys: &[f64], want: (f64, f64), max_threads: usize, what: &str) {
    for threads in 1..=max_threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        let (s, d) = pool.install(|| (exact::par_sum(xs), exact::par_dot(xs, ys)));
        assert!(same(s, want.0), "{what}: sum, {threads} threads");
        assert!(
            same(d.unwrap_or(f64::NAN), want.1),
            "{what}: dot, {threads} threads"
        );
    }
}

// ---------- states that travel: bytes, partitions, merge orders ----------

/// Merges `parts` pairwise in a random tree, each intermediate state sent through its
/// bytes, as partial sums that meet across processes in whatever order they arrive.
fn merge_in_random_tree(mut parts: Vec<Vec<u8>>, rng: &mut ChaCha8Rng) -> Accumulator {
    if parts.is_empty() {
        return Accumulator::new();
    }
    while parts.len() > 1 {
        let i = rng.random_range(0..parts.len());
        let a = parts.swap_remove(i);
        let j = rng.random_range(0..parts.len());
        let mut acc = Accumulator::from_bytes(&parts[j]).expect("a state we wrote");
        acc.merge_bytes(&a).expect("a state we wrote");
        parts[j] = acc.to_bytes();
    }
    Accumulator::from_bytes(&parts[0]).expect("a state we wrote")
}

/// Cuts `xs` at random points into at most `max_parts` pieces (some of them empty).
fn random_partition<'a>(xs: &'a [f64], max_parts: usize, rng: &mut ChaCha8Rng) -> Vec<&'a [f64]> {
    let k = rng.random_range(1..=max_parts);
    let mut cuts: Vec<usize> = (0..k - 1).map(|_| rng.random_range(0..=xs.len())).collect();
    cuts.push(0);
    cuts.push(xs.len());
    cuts.sort_unstable();
    cuts.windows(2).map(|w| &xs[w[0]..w[1]]).collect()
}

#[test]
fn states_sent_as_bytes_merge_to_the_sum_of_the_whole() {
    for seed in 0..40u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(0x57A7E + seed);
        for kind in KINDS {
            let n = rng.random_range(0..max_n().min(4000));
            let mut xs = draw(kind, n, &mut rng);
            match rng.random_range(0..8) {
                0 if n > 0 => xs[rng.random_range(0..n)] = f64::INFINITY,
                1 if n > 0 => xs[rng.random_range(0..n)] = f64::NAN,
                2 => xs.push(-0.0),
                _ => {}
            }
            let whole: Accumulator = xs.iter().copied().collect();
            let parts: Vec<Vec<u8>> = random_partition(&xs, 9, &mut rng)
                .into_iter()
                .map(|part| {
                    let mut acc = Accumulator::new();
                    if rng.random_bool(0.5) {
                        acc.add_slice(part);
                    } else {
                        part.iter().for_each(|&x| acc.add(x));
                    }
                    acc.to_bytes()
                })
                .collect();
            let merged = merge_in_random_tree(parts, &mut rng);
            let what = format!("seed {seed}, {kind:?}, n = {n}");
            assert!(same(merged.finish(), exact::sum(&xs)), "{what}");
            if xs.iter().all(|x| x.is_finite()) {
                let want = reference_sum(&xs, RoundingFormat::F64);
                assert!(same(merged.finish(), want), "{what}");
            }
            assert!(
                same(
                    merged.round_to(RoundingFormat::F32),
                    whole.round_to(RoundingFormat::F32)
                ),
                "{what}"
            );
            // canonical: the same exact value and flags, the same bytes
            assert_eq!(merged.to_bytes(), whole.to_bytes(), "{what}");
        }
    }
}

#[test]
fn f32_states_merge_to_the_f32_sum_of_the_whole() {
    for seed in 0..20u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(0xF32 + seed);
        let n = rng.random_range(0..3000);
        let xs: Vec<f32> = (0..n)
            .map(|_| with_exponent(&mut rng, -40, 40) as f32)
            .collect();
        let wide: Vec<f64> = xs.iter().map(|&x| f64::from(x)).collect();
        let parts: Vec<Vec<u8>> = random_partition(&wide, 6, &mut rng)
            .into_iter()
            .map(|part| {
                let narrow: Vec<f32> = part.iter().map(|&x| x as f32).collect();
                let mut acc = Accumulator::new();
                acc.add_slice_f32(&narrow);
                acc.to_bytes()
            })
            .collect();
        let merged = merge_in_random_tree(parts, &mut rng);
        assert_eq!(
            merged.finish_f32().to_bits(),
            exact::sum_f32(&xs).to_bits(),
            "seed {seed}"
        );
        assert_eq!(
            f64::from(merged.finish_f32()),
            reference_sum(&wide, RoundingFormat::F32),
            "seed {seed}"
        );
    }
}

#[test]
fn merge_all_is_the_same_in_any_order() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x3E76E);
    for kind in KINDS {
        let xs = draw(kind, 2000, &mut rng);
        let mut parts: Vec<Accumulator> = random_partition(&xs, 12, &mut rng)
            .into_iter()
            .map(|part| part.iter().copied().collect())
            .collect();
        let first = Accumulator::merge_all(&parts).to_bytes();
        shuffle(&mut parts, &mut rng);
        assert_eq!(Accumulator::merge_all(&parts).to_bytes(), first, "{kind:?}");
        assert!(
            same(
                Accumulator::from_bytes(&first).unwrap().finish(),
                exact::sum(&xs)
            ),
            "{kind:?}"
        );
    }
}

#[test]
fn state_bytes_are_compact_and_pinned() {
    // the layout documented on `Accumulator::to_bytes` and in docs/exact.md
    let empty = Accumulator::new().to_bytes();
    assert_eq!(empty, b"FPXA\x01\x10\x00\x00");
    let mut neg = Accumulator::new();
    neg.add(-1.0);
    assert_eq!(neg.to_bytes(), b"FPXA\x01\x28\x44\x01\x01\x00\x00\x00");
    let mut special = Accumulator::new();
    special.add_slice(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
    assert_eq!(special.to_bytes(), b"FPXA\x01\x0f\x00\x00");
    // values of similar size take a few digits, not the whole range
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let xs: Vec<f64> = (0..100_000).map(|_| rng.random_range(0.0..1.0)).collect();
    let acc: Accumulator = xs.iter().copied().collect();
    assert!(
        acc.to_bytes().len() <= 8 + 4 * 4,
        "{}",
        acc.to_bytes().len()
    );
    // the widest state: the smallest subnormal product and the largest double
    let mut wide = Accumulator::new();
    wide.add_product(f64::from_bits(1), f64::from_bits(1));
    wide.add(f64::MAX);
    assert_eq!(wide.to_bytes().len(), 8 + 4 * 100); // digits 0 (2^-2148) to 99 (2^1023)
    assert!(same(
        Accumulator::from_bytes(&wide.to_bytes()).unwrap().finish(),
        f64::MAX
    ));
}

#[test]
fn states_beyond_the_range_travel_as_infinities() {
    // 2^2175 is out of reach of sums of fewer than 2^127 values; a made-up state can
    // hold it, and two of them merged pass 2^2176
    let mut top = b"FPXA\x01\x08\x87\x01".to_vec();
    top.extend_from_slice(&(1u32 << 31).to_le_bytes());
    let mut acc = Accumulator::from_bytes(&top).unwrap();
    assert_eq!(acc.finish(), f64::INFINITY);
    acc.merge_bytes(&top).unwrap();
    assert_eq!(acc.finish(), f64::INFINITY);
    assert_eq!(acc.to_bytes(), b"FPXA\x01\x0a\x00\x00");
}
