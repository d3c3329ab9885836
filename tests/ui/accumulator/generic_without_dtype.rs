#[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
fn total<T: Copy + std::iter::Sum<T>>(x: &[T]) -> T {
    x.iter().copied().sum()
}

#[fprev::accumulator(reveal(op = "sum", sizes = [8], dtype = f32))]
fn two<T: Copy + std::iter::Sum<T>, U>(x: &[T]) -> T {
    x.iter().copied().sum()
}

fn main() {
    let _ = total(&[1.0f32]);
    let _ = two::<f32, ()>(&[1.0f32]);
}
