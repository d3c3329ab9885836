#[fprev::scramble(inner)]
fn a(v: &[f32]) -> f32 {
    v.iter().sum()
}

#[fprev::scramble(shuffle = "random")]
fn b(v: &[f32]) -> f32 {
    v.iter().sum()
}

#[fprev::scramble(outer, all)]
fn c(v: &[f32]) -> f32 {
    v.iter().sum()
}

fn main() {
    let _ = (a(&[]), b(&[]), c(&[]));
}
