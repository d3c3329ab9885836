trait Stats {
    #[fprev::accumulator]
    fn mean(&self) -> f64;
}

fn main() {}
