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
