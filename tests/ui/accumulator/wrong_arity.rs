// A dot product takes two slices.
#[fprev::accumulator(reveal(op = "dot", sizes = [8]))]
fn dot(x: &[f32]) -> f32 {
    x.iter().sum()
}

// A matrix product takes m, n, k and two matrices.
#[fprev::accumulator(reveal(op = "gemm", sizes = [8]))]
fn gemm() -> Vec<f32> {
    Vec::new()
}

fn main() {
    let _ = dot(&[1.0]);
    let _ = gemm();
}
