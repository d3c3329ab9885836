#[fprev::accumulator]
struct Sum(f64);

fn main() {}
