//! Probe counts and time for a pairwise f32 order (profiling aid).
use fprev::target::FnTarget;
use fprev::{Reveal, SumTree};
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4096);
    let truth = SumTree::pairwise(n);
    let x = vec![1.0f32; n];
    let t0 = Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(truth.replay(std::hint::black_box(&x)));
    }
    println!("bare replay: {:?}", t0.elapsed() / 1000);
    let t0 = Instant::now();
    let s = Reveal::new(n)
        .run_target(FnTarget(|x: &[f32]| truth.replay(x)))
        .unwrap();
    println!("n={n} f32 {} probes {:?}", s.probes, t0.elapsed());
}
