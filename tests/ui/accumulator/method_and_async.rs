struct Data(Vec<f32>);

impl Data {
    #[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
    fn total(&self) -> f32 {
        self.0.iter().sum()
    }
}

#[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
async fn later(x: &[f32]) -> f32 {
    x.iter().sum()
}

fn main() {
    let _ = Data(vec![]).total();
    let _ = later(&[]);
}
