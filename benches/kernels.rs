//! Loops measured by `benches/scramble.rs` and `examples/scramble_overhead.rs`: each
//! written plainly and under `#[fprev::scramble]`.

#![allow(dead_code)]

/// Compute-bound: trigonometry on data that stays in cache.
pub fn compute_plain(v: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for x in v.iter() {
        s += x.sin() * x.cos();
    }
    s
}

/// [`compute_plain`] under `#[scramble]`.
#[fprev::scramble]
pub fn compute_scrambled(v: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for x in v.iter() {
        s += x.sin() * x.cos();
    }
    s
}

/// Memory-bound: a streaming update of a large array.
pub fn memory_plain(v: &mut [f32]) {
    for x in v.iter_mut() {
        *x = *x * 0.5 + 1.0;
    }
}

/// [`memory_plain`] under `#[scramble]`.
#[fprev::scramble]
pub fn memory_scrambled(v: &mut [f32]) {
    for x in v.iter_mut() {
        *x = *x * 0.5 + 1.0;
    }
}

/// Memory-bound reduction: a sum of a large `f64` array (1e6 terms, 8 MB).
pub fn reduction_plain(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

/// [`reduction_plain`] under `#[scramble]`: a reassociated reduction when on.
#[fprev::scramble]
pub fn reduction_scrambled(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

/// Coefficients of a short series (Lanczos-like): 15 terms.
pub const SERIES: [f64; 15] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
    -2.1e-9,
    3.3e-10,
    -4.4e-11,
    5.5e-12,
    -6.6e-13,
    7.7e-14,
];

/// A short iterator reduction called many times: a 15-term series at `x`.
pub fn series_plain(x: f64) -> f64 {
    SERIES
        .iter()
        .enumerate()
        .map(|(i, &c)| c / (x + i as f64))
        .fold(0.0, |a, b| a + b)
}

/// [`series_plain`] under `#[scramble]`.
#[fprev::scramble]
pub fn series_scrambled(x: f64) -> f64 {
    SERIES
        .iter()
        .enumerate()
        .map(|(i, &c)| c / (x + i as f64))
        .fold(0.0, |a, b| a + b)
}

/// A short loop reduction called many times: an 8-term dot product.
pub fn dot8_plain(a: &[f64; 8], b: &[f64; 8]) -> f64 {
    let mut s = 0.0;
    for i in 0..8 {
        s += a[i] * b[i];
    }
    s
}

/// [`dot8_plain`] under `#[scramble]`.
#[fprev::scramble]
pub fn dot8_scrambled(a: &[f64; 8], b: &[f64; 8]) -> f64 {
    let mut s = 0.0;
    for i in 0..8 {
        s += a[i] * b[i];
    }
    s
}

/// Column sums of a matrix given by rows: one sum per column over the rows, a keyed
/// reduction when annotated (`acc[j]` is its element).
pub fn column_sums_plain(x: &[Vec<f64>], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    for row in x {
        for j in 0..p {
            acc[j] += row[j];
        }
    }
    acc
}

/// [`column_sums_plain`] under `#[scramble]`.
#[fprev::scramble]
pub fn column_sums_scrambled(x: &[Vec<f64>], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    for row in x {
        for j in 0..p {
            acc[j] += row[j];
        }
    }
    acc
}
