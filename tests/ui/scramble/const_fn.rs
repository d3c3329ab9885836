#[fprev::scramble]
const fn triangle(n: u32) -> u32 {
    n * (n + 1) / 2
}

fn main() {
    let _ = triangle(3);
}
