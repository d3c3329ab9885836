//! With the `off` feature the attribute emits the user's function unchanged: switching
//! scrambling on at run time changes nothing. Run with
//! `cargo test --features off --test scramble_off` (CI does); without the feature the
//! test is listed as ignored, saying so.
#![cfg_attr(not(feature = "off"), allow(dead_code, unused_imports))]

use fprev::scramble::{with_config, ScrambleConfig, Shuffle};
use rayon::prelude::*;

#[fprev::scramble(all, force)]
fn sums(v: &[f32]) -> (f32, f32) {
    let mut s = 0.0f32;
    #[scramble(force)]
    for x in v.iter() {
        s += *x;
    }
    (s, v.par_iter().sum())
}

#[test]
#[cfg_attr(not(feature = "off"), ignore = "needs --features off")]
fn compiled_out_scrambling_never_reorders() {
    let v: Vec<f32> = (0..5000)
        .map(|i| ((i * 7919 % 1013) as f32 - 506.0) * 10f32.powi(i % 7 - 3))
        .collect();
    let mut plain = 0.0f32;
    for x in &v {
        plain += *x;
    }
    let on = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .seed(1);
    let (s, _) = with_config(&on, || sums(&v));
    assert_eq!(s.to_bits(), plain.to_bits());
}
