//! Draw the pictures in `docs/`: NumPy's pairwise sum at n = 32 and n = 1024,
//! matrixmultiply's sgemm order at k = 600, and the unrolled loop the crate docs show, each revealed from a reference function in
//! that library's order (the orders `fprev reveal` finds in the real libraries; see
//! README's "Orders found in real targets" and tests/ops.rs).
//!
//! ```text
//! cargo run --example pictures            # writes docs/*.svg
//! cargo run --example pictures -- out/    # or into another folder
//! ```
//!
//! Large trees are drawn by their structure (a repeated block once, lanes as named rows);
//! the text printed with each file is [`fprev::SumTree::describe`].

use fprev::picture::Picture;
use fprev::{orders, SumTree};

/// A loop unrolled into four accumulators (README's first example).
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

/// matrixmultiply 0.3's order for one element of C: k cut in blocks of 256 (`kc`), each
/// block summed in one accumulator, every later block added to C.
fn sgemm_k_order(x: &[f32]) -> f32 {
    let mut c: Option<f32> = None;
    for block in x.chunks(256) {
        let s = block.iter().fold(0.0f32, |acc, &v| acc + v);
        c = Some(c.map_or(s, |c| c + s));
    }
    c.unwrap_or(0.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "docs".into()));
    std::fs::create_dir_all(&dir)?;
    let numpy = |n: usize| fprev::reveal(n, orders::numpy_pairwise::<f32>);
    let pictures: [(&str, String, SumTree); 3] = [
        (
            "numpy_sum_32.svg",
            "numpy.sum, float32, n = 32".into(),
            numpy(32)?,
        ),
        (
            "numpy_sum_1024.svg",
            "numpy.sum, float32, n = 1024".into(),
            numpy(1024)?,
        ),
        (
            "sgemm_k600.svg",
            "matrixmultiply sgemm, f32, k = 600 (kc = 256 blocks)".into(),
            fprev::reveal(600, sgemm_k_order)?,
        ),
    ];
    for (file, title, tree) in pictures {
        let path = dir.join(file);
        std::fs::write(&path, Picture::new().title(title).render(&tree))?;
        println!("{}: {}", path.display(), tree.describe());
    }
    // Small enough to draw in full; embedded in the crate docs (src/lib.rs), so no title.
    let path = dir.join("unrolled4_10.svg");
    std::fs::write(
        &path,
        Picture::new()
            .full(true)
            .render(&fprev::reveal(10, unrolled4)?),
    )?;
    println!("{}", path.display());
    Ok(())
}
