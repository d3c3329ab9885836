struct Sums;

#[fprev::scramble]
impl Sums {
    fn total(v: &[f32]) -> f32 {
        let mut s = 0.0;
        for x in v {
            s += x;
        }
        s
    }
}

fn main() {
    let _ = Sums::total(&[1.0]);
}
