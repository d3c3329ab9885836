//! The README's amplify example: `assert_reproducible!` catches an order-dependent sum and
//! prints its replay tokens (docs/scramble.md shows the report). It fails on purpose, so it
//! is ignored: `cargo test --workspace --test scramble_readme -- --ignored`.

#![cfg(not(feature = "off"))]

#[fprev::scramble]
fn mean(v: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for x in v.iter() {
        s += x;
    }
    s / v.len() as f32
}

#[test]
#[ignore = "fails on purpose (README demonstration)"]
fn mean_is_reproducible() {
    let v: Vec<f32> = (0..10_000).map(|i| (i as f32).sin() * 1e3 + 1e-3).collect();
    fprev::assert_reproducible!(|| mean(&v));
}
