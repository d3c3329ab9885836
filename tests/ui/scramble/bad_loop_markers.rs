#[fprev::scramble]
fn sums(v: &[f32]) -> f32 {
    let mut s = 0.0;
    #[scramble(sometimes)]
    for x in v.iter() {
        s += x;
    }
    #[scramble(loop)]
    for x in v.iter().zip(v.iter()) {
        s += x.0 * x.1;
    }
    s
}

fn main() {
    let _ = sums(&[1.0]);
}
