//! The amplifier takes ndarray results (the `ndarray` feature, which fprev-cli turns on).
#![cfg(feature = "ndarray")]

use fprev::{AmplifyConfig, Stage};
use ndarray::{Array1, Array2};

#[test]
fn ndarray_results_are_compared_element_by_element() {
    let m = Array2::from_shape_fn((8, 64), |(i, j)| ((i * 64 + j) as f32 * 0.37).sin() * 1e3);
    let config = AmplifyConfig::default()
        .runs(6)
        .seed(11)
        .stages(&[Stage::Repeat]);
    // Row sums in a fixed order: reproducible, and every element is compared.
    let report = fprev::amplify::amplify_named(&config, "ndarray_rows", || -> Array1<f32> {
        m.rows()
            .into_iter()
            .map(|r| r.iter().sum::<f32>())
            .collect()
    });
    assert!(report.is_reproducible(), "{report}");
    assert_eq!(report.len, 8);
    let report = fprev::amplify::amplify_named(&config, "ndarray_matrix", || m.clone());
    assert_eq!(report.len, 8 * 64);
}
