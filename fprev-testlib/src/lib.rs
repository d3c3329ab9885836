//! A library whose functions register their summation orders: its integration test
//! (`tests/orders.rs`) checks them with `fprev::check_registered()`, as a user's crate
//! would. The pins live in `fprev-orders/`.

/// Sequential sum.
#[fprev::accumulator(reveal(op = "sum", sizes = [8, 33]))]
pub fn sequential(x: &[f32]) -> f32 {
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    s
}

/// Four lanes, combined pairwise: NumPy-like blocked sum.
#[fprev::accumulator(reveal(op = "dot", sizes = [16]))]
pub fn four_lane_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    for i in 0..a.len() {
        lanes[i % 4] += a[i] * b[i];
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}
