#[fprev::scramble]
struct Accumulator {
    sum: f32,
}

fn main() {
    // The struct is still emitted beside the error.
    let _ = Accumulator { sum: 0.0 };
}
