#[fprev::accumulator]
const fn three() -> f64 {
    let mut s = 0.0;
    s += 1.0;
    s += 2.0;
    s
}

fn main() {
    let _ = three();
}
