//! Reveal three summation orders and print their trees: `Iterator::sum`, a loop
//! unrolled into four accumulators, and NumPy's f32 pairwise shape.
//!
//! ```text
//! cargo run --example reveal_basics
//! ```

fn unrolled4(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 4];
    let mut chunks = x.chunks_exact(4);
    for c in &mut chunks {
        for k in 0..4 {
            acc[k] += c[k];
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for &v in chunks.remainder() {
        s += v;
    }
    s
}

fn main() -> Result<(), fprev::RevealError> {
    let sum = fprev::reveal(8, |x: &[f32]| x.iter().sum::<f32>())?;
    println!("Iterator::sum, n = 8:   {sum}");

    let unrolled = fprev::reveal(10, unrolled4)?;
    println!("4 accumulators, n = 10: {unrolled}");

    // The same ten values in both orders: different results.
    let x = [1e8f32, 1.0, 1.0, 1.0, -1e8, 1.0, 1.0, 1.0, 1.0, 1.0];
    let sequential = fprev::SumTree::sequential(10);
    println!(
        "replayed on {x:?}: sequential {} vs unrolled {}",
        sequential.replay(&x),
        unrolled.replay(&x)
    );
    if let Some(diff) = sequential.diff(&unrolled) {
        println!("{diff}");
    }
    Ok(())
}
