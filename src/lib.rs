//! Reveal, amplify, locate and fix floating-point non-reproducibility.
//!
//! The same sum gives different bits on another machine, thread count or library version,
//! because floating-point addition is not associative and almost no library documents the
//! order it accumulates in. fprev makes that order visible, makes tests catch results that
//! depend on it, points at the loops where it matters, and removes the dependence:
//!
//! | lever | what it does | where |
//! |---|---|---|
//! | **reveal** | finds the exact summation tree of any accumulation (a sum, dot, gemv, gemm, your function) by probing it as a black box (the FPRev method) | [`reveal()`], [`Reveal`], [`SumTree`] ([`tree`], [`picture`], [`orders`]) |
//! | **amplify** | runs a computation under many scrambled loop, rayon and kernel orders, from a seed that replays every finding | [`macro@scramble`], [`assert_reproducible!`], [`amplify()`] ([`mod@scramble`], [`mod@amplify`]) |
//! | **locate** | counts accumulation chains per site, and pins revealed orders in `cargo test` | [`macro@accumulator`], [`chains`], [`check_registered`] ([`registry`]) |
//! | **fix** | correctly rounded, order-independent sums, dot products and matrix products | [`exact`] |
//!
//! # Adding it
//!
//! fprev is not on a registry: depend on a checkout of its repository. To check orders
//! in tests only:
//!
//! ```toml
//! [dev-dependencies]
//! fprev = { path = "../fprev" }
//! ```
//!
//! To annotate library code with `#[fprev::scramble]` or `#[fprev::accumulator]`, make it
//! a normal dependency; build releases with its `off` feature, which makes both attributes
//! emit your code unchanged (`cargo build --release --features fprev/off`):
//!
//! ```toml
//! [dependencies]
//! fprev = { path = "../fprev" }
//! ```
//!
//! Other features: `cuda` (a GPU backend for revealing and scrambling kernels; it builds
//! without a CUDA toolkit and reports "no CUDA device" at run time where there is none).
//!
//! # Reveal
//!
//! Give [`reveal()`] the number of inputs and a function of a slice; it returns the
//! [`SumTree`] the function adds in. [`SumTree::describe`] says large trees in words,
//! [`picture`] draws them as SVG, [`SumTree::diff`] finds where two orders disagree.
//!
//! ```
//! // `Iterator::sum` adds one value after another...
//! let seq = fprev::reveal(8, |x: &[f32]| x.iter().sum::<f32>())?;
//! assert_eq!(seq.to_string(), "(((((((0+1)+2)+3)+4)+5)+6)+7)");
//!
//! // ...NumPy's pairwise sum does not.
//! let numpy = fprev::reveal(1024, fprev::orders::numpy_pairwise::<f32>)?;
//! assert_eq!(
//!     numpy.describe(),
//!     "pairwise over 8 blocks of 128; each block 8 lanes, stride 8, 16 in order; \
//!      lanes combined pairwise"
//! );
//! let svg = fprev::picture::Picture::new().title("numpy.sum, n = 1024").render(&numpy);
//! assert!(svg.contains("x8, shifted by 128"));
//! # Ok::<(), fprev::RevealError>(())
//! ```
//!
//! A loop unrolled into four accumulators, revealed and drawn by
//! `fprev::picture::svg(&fprev::reveal(10, unrolled4)?)`:
//!
#![doc = include_str!("../docs/unrolled4_10.svg")]
//!
//! The repository's `docs/cli.md` describes the `fprev` command line, which reveals
//! built-in library targets and other programs (`fprev reveal --exec`).
//!
//! # Amplify
//!
//! Running a test again rarely changes a summation order, so an order-dependent result
//! passes until the machine changes. [`macro@scramble`] keeps every loop's order and
//! rewrites a function's float reductions (`s += e`, `.sum()`, ...) so that, when
//! scrambling is on, their terms are combined in a shape drawn from a seed (lanes,
//! blocks, pairwise, thread splits, random trees), as a compiler, SIMD library or thread
//! pool may; loops whose order is their meaning run as written. [`assert_reproducible!`]
//! runs a computation under many such draws and fails with a report, and a replay token
//! per differing run, when the bits move.
//!
//! ```
//! #[fprev::scramble]
//! fn total(v: &[f64]) -> f64 {
//!     let mut s = 0.0;
//!     for x in v.iter() {
//!         s += x;
//!     }
//!     s
//! }
//!
//! // Whole numbers below 2^53 add exactly in any order: reproducible under every draw.
//! let v: Vec<f64> = (0..1000).map(f64::from).collect();
//! let report = fprev::assert_reproducible!(|| total(&v));
//! assert!(report.is_reproducible());
//! ```
//!
//! With `(i as f32).sin() * 1e3` values instead, the same assertion fails:
//!
//! ```text
//! fprev amplify: mean_is_reproducible: NOT reproducible (1 floats, campaign v3-0c9d21b30282192c)
//!   stage                   runs  distinct  differing  elements max abs err max rel err norm2 rel err  max ulps
//!   1 same config             20         1          0       0/1           0           0             0         0
//!   ...
//!   4 vary reductions         20        14         20       1/1     5.66e-6     2.90e-5       2.90e-5       380
//!   ...
//!       replay: FPREV_SEED=v3-4c814543b07718e5 cargo test mean_is_reproducible
//! ```
//!
//! See the repository's `docs/scramble.md` for the classification rules (what is a
//! reduction, what is left alone and why), the shapes, replay and the environment
//! variables; [`scramble::sites()`] lists what a program compiled in.
//!
//! # Locate
//!
//! [`macro@accumulator`] counts, for every accumulation site of a function, how many
//! additions were chained into one value (Defour's accumulator identification): long
//! chains are where the order matters most. With `reveal(op = ..., sizes = [...])` it also
//! registers the function, so that one test ([`check_registered`]) reveals its order, pins
//! it in `fprev-orders/` and fails when a dependency, a CPU or a thread count changes it.
//!
//! ```
//! #[fprev::accumulator]
//! fn dot(a: &[f64], b: &[f64]) -> f64 {
//!     let mut s = 0.0;
//!     for i in 0..a.len() {
//!         s += a[i] * b[i];
//!     }
//!     s
//! }
//!
//! let x = vec![1.0; 1000];
//! assert_eq!(dot(&x, &x), 1000.0);
//! let report = fprev::chains::report();
//! assert_eq!(report.site("dot").map(|site| site.max_chain), Some(1000));
//! println!("{report}"); // sites, longest chain first, with a guess of their shape
//! ```
//!
//! See the repository's `docs/accumulator.md` for the sites it recognizes and pinning.
//!
//! # Fix
//!
//! [`exact`] sums, dot products and matrix products (gemm, gemv) round the exact result
//! once, so every order, thread count, blocking and chunking gives the same bits, and
//! they merge across threads.
//!
//! ```
//! use fprev::exact;
//! let x = [1e100, 1.0, -1e100, 1e-300];
//! assert_eq!(exact::sum(&x), 1.0 + 1e-300); // plain summation gives 1e-300
//! assert_eq!(exact::dot(&[1e16, 1.0, -1e16], &[1.0, 1.0, 1.0]), Ok(1.0)); // plain: 0.0
//! let v: Vec<f64> = (0..100_000).map(|i| (i as f64).sin()).collect();
//! assert_eq!(exact::par_sum(&v), exact::sum(&v));
//! // a 1 x 3 by 3 x 1 product: plain gemm gives 0.0 here too
//! assert_eq!(exact::gemm(1, 1, 3, &[1e16, 1.0, -1e16], &[1.0, 1.0, 1.0]), Ok(vec![1.0]));
//! ```
//!
//! The repository's `docs/exact.md` describes the algorithms (a Kulisch superaccumulator
//! behind an expansion filter, and the Ozaki scheme), the IEEE edge cases and how to run
//! the benchmarks.

extern crate self as fprev;

pub use fprev_macros::{accumulator, scramble};
pub use fprev_runtime::*;
pub use half;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// README's examples, compiled and run as doctests (they are not part of these docs).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The Rust examples of the guides in `docs/`, compiled and run as doctests too.
#[cfg(doctest)]
mod docs_doctests {
    #[doc = include_str!("../docs/reveal.md")]
    pub struct RevealGuide;
    #[doc = include_str!("../docs/scramble.md")]
    pub struct ScrambleGuide;
    #[doc = include_str!("../docs/exact.md")]
    pub struct ExactGuide;
    #[doc = include_str!("../docs/cuda.md")]
    pub struct CudaGuide;
    #[doc = include_str!("../docs/tensor-cores.md")]
    pub struct TensorCoresGuide;
    #[doc = include_str!("../docs/sweeps.md")]
    pub struct SweepsGuide;
    #[doc = include_str!("../docs/models.md")]
    pub struct ModelsGuide;
}
