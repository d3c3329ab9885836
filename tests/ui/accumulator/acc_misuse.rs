#[fprev::accumulator]
fn total(x: &[f64]) -> f64 {
    #[acc]
    let (mut a, mut b) = (0.0, 0.0);
    #[acc(long)]
    let mut c = 0.0;
    for (i, v) in x.iter().enumerate() {
        if i % 2 == 0 {
            a += v;
        } else {
            b += v;
        }
        #[acc]
        c += v;
    }
    a + b + c
}

fn main() {
    let _ = total(&[1.0]);
}
