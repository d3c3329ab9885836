//! Shared helpers for the integration tests: random trees whose truth is known, and
//! targets that sum exactly in a given tree's order.
#![allow(dead_code)]

use fprev::float::ProbeFloat;
use fprev::SumTree;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Shapes of random trees.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Binary,
    /// Every node has 2..=17 children.
    Multiway,
    /// Mostly binary, some fused nodes of 3..=17.
    Mixed,
}

/// A random tree over `n` leaves: repeatedly combine random items of the pool.
pub fn random_tree(n: usize, shape: Shape, rng: &mut ChaCha8Rng) -> SumTree {
    let mut pool: Vec<usize> = (0..n).collect();
    let mut nodes: Vec<Vec<usize>> = Vec::new();
    while pool.len() > 1 {
        let k = match shape {
            Shape::Binary => 2,
            Shape::Multiway => rng.random_range(2..=17usize),
            Shape::Mixed => {
                if rng.random_bool(0.75) {
                    2
                } else {
                    rng.random_range(3..=17usize)
                }
            }
        }
        .min(pool.len());
        let mut kids = Vec::with_capacity(k);
        for _ in 0..k {
            let idx = rng.random_range(0..pool.len());
            kids.push(pool.swap_remove(idx));
        }
        nodes.push(kids);
        pool.push(n + nodes.len() - 1);
    }
    SumTree::from_nodes(n, nodes).expect("generated trees are valid")
}

/// Sum `x` in `tree`'s order, fused nodes aligned to their largest child and truncated
/// below `bits` bits (the Tensor-Core model of the FPRev papers), then rounded to `T`.
pub fn truncating_replay<T: ProbeFloat>(tree: &SumTree, x: &[T], bits: i32) -> T {
    let n = tree.leaf_count();
    let mut vals: Vec<T> = Vec::with_capacity(tree.inner_count());
    for k in 0..tree.inner_count() {
        let kids: Vec<T> = tree
            .children(n + k)
            .iter()
            .map(|&c| {
                let c = c as usize;
                if c < n {
                    x[c]
                } else {
                    vals[c - n]
                }
            })
            .collect();
        let v = if kids.len() == 2 {
            kids[0].add(kids[1])
        } else {
            let emax = kids
                .iter()
                .map(|v| v.to_f64().abs())
                .filter(|v| *v > 0.0)
                .map(|v| v.log2().floor() as i32)
                .max()
                .unwrap_or(0);
            let q = 2f64.powi(emax - bits);
            let s: f64 = kids.iter().map(|v| (v.to_f64() / q).trunc() * q).sum();
            T::from_f64_round(s)
        };
        vals.push(v);
    }
    if vals.is_empty() {
        x[0]
    } else {
        vals[vals.len() - 1]
    }
}

/// Number of property cases: `FPREV_PROPTEST_CASES` or `default` (the runtime's reader).
pub fn cases(default: u32) -> u32 {
    u32::try_from(fprev::scramble::proptest_cases(u64::from(default))).unwrap_or(u32::MAX)
}

/// The first seed of seeded cases: `FPREV_SEED` (a number or a replay token) or
/// `default` (the runtime's reader).
pub fn first_seed(default: u64) -> u64 {
    fprev::scramble::property_seed(default)
}

/// Largest n for the property tests: `FPREV_MAX_N` or `default`.
pub fn max_n(default: usize) -> usize {
    std::env::var("FPREV_MAX_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `tree` with every fused node split into a random binary tree over its children: the
/// nastiest wrong guess for a fused target, since it keeps every sibling relation.
pub fn binary_refinement(tree: &SumTree, rng: &mut ChaCha8Rng) -> SumTree {
    let n = tree.leaf_count();
    let mut nodes: Vec<Vec<usize>> = Vec::new();
    let mut id = vec![0usize; n + tree.inner_count()];
    for (leaf, slot) in id.iter_mut().enumerate().take(n) {
        *slot = leaf;
    }
    for v in n..n + tree.inner_count() {
        let mut pool: Vec<usize> = tree.children(v).iter().map(|&c| id[c as usize]).collect();
        while pool.len() > 1 {
            let a = pool.swap_remove(rng.random_range(0..pool.len()));
            let b = pool.swap_remove(rng.random_range(0..pool.len()));
            nodes.push(vec![a, b]);
            pool.push(n + nodes.len() - 1);
        }
        id[v] = pool[0];
    }
    SumTree::from_nodes(n, nodes).expect("refinements are valid")
}

/// Reveal `model`'s dot product of `n` products of `I` operands, answered in f32,
/// through [`fprev::target::Products`] (masks and units spread over both operands).
pub fn reveal_dot<I: ProbeFloat>(
    model: fprev::fused::BlockFma,
    n: usize,
    seed: u64,
) -> Result<fprev::RevealReport, fprev::RevealError> {
    let dot = move |a: &[I], b: &[I]| -> f32 { model.dot(a, b) };
    fprev::Reveal::new(n)
        .seed(seed)
        .run_target(fprev::target::Products::new(dot))
}

/// Every scrambling mode (Fisher-Yates and Sattolo permutations, drawn shapes) at each
/// of `seeds`.
pub fn scramble_modes(seeds: &[u64]) -> Vec<fprev::scramble::ScrambleConfig> {
    use fprev::scramble::{ScrambleConfig, Shuffle};
    let mut out = Vec::new();
    for &seed in seeds {
        for (shuffle, shapes) in [
            (Shuffle::FisherYates, false),
            (Shuffle::Sattolo, false),
            (Shuffle::FisherYates, true),
        ] {
            out.push(
                ScrambleConfig::off()
                    .shuffle(Some(shuffle))
                    .shapes(shapes)
                    .seed(seed),
            );
        }
    }
    out
}
