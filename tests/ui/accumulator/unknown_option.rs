#[fprev::accumulator(count_everything)]
fn total(x: &[f64]) -> f64 {
    x.iter().sum()
}

fn main() {
    let _ = total(&[1.0]);
}
