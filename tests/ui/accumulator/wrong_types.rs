// The right number of parameters, the wrong types: rustc's mismatch points at the name.
#[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
fn total(x: &[f32]) -> f64 {
    x.iter().map(|&v| v as f64).sum()
}

// An integer sum cannot be probed.
#[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
fn count(x: &[i32]) -> i32 {
    x.iter().sum()
}

// dtype contradicts the signature.
#[fprev::accumulator(reveal(op = "sum", sizes = [8], dtype = f64))]
fn single(x: &[f32]) -> f32 {
    x.iter().sum()
}

fn main() {
    let _ = total(&[1.0]) + count(&[1]) as f64 + single(&[1.0]) as f64;
}
