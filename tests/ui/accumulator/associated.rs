// Registration names its function by a path from the module: an associated function
// (one that names `Self`, in an `impl` or a provided `trait` method) gets told to
// name it with `path = "..."`; the item is still emitted.
trait Stats {
    #[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
    fn mean_of_vector(x: &[f64]) -> f64 {
        Self::total(x) / x.len() as f64
    }
    fn total(x: &[f64]) -> f64;
}

struct V;

impl V {
    #[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
    fn total(x: &[f64]) -> Self {
        let _ = x;
        V
    }
}

fn main() {}
