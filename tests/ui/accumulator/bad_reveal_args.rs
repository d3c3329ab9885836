// Every problem is reported at once, and the function still exists (no E0425 below).
#[fprev::accumulator(reveal(op = "mean", sizes = [0, n], dtype = f128))]
fn total(x: &[f64]) -> f64 {
    x.iter().sum()
}

#[fprev::accumulator(reveal())]
fn total2(x: &[f64]) -> f64 {
    x.iter().sum()
}

#[fprev::accumulator(reveal(op = "sum", sizes = []))]
fn total3(x: &[f64]) -> f64 {
    x.iter().sum()
}

#[fprev::accumulator(reveal(op = "sum", sizes = [4], order = "pairwise"))]
fn total4(x: &[f64]) -> f64 {
    x.iter().sum()
}

fn main() {
    let _ = total(&[1.0]) + total2(&[1.0]) + total3(&[1.0]) + total4(&[1.0]);
}
