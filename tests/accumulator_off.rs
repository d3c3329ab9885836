//! With the `off` feature, `#[fprev::accumulator]` emits the function as written:
//! `cargo test --no-default-features --features off --test accumulator_off`.
#![cfg(feature = "off")]

#[fprev::accumulator(reveal(op = "dot", sizes = [8]))]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    #[acc]
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[test]
fn nothing_is_counted_or_registered() {
    assert_eq!(dot(&[1.0; 8], &[2.0; 8]), 16.0);
    assert!(fprev::chains::report().sites.is_empty());
    assert!(fprev::registered().is_empty());
}
