//! What fprev's own deterministic kernel computes, as a summation tree: the order the GPU
//! must reveal for `fprev_tree_partial` + `fprev_tree_final`, whatever the scrambling.

use super::ReductionConfig;
use crate::tree::SumTree;

/// Inner nodes under construction; `None` stands for a partial sum that is still 0.0
/// (adding it is exact, so it is no rounding and no node).
struct Builder {
    n: usize,
    nodes: Vec<Vec<usize>>,
}

impl Builder {
    fn add(&mut self, a: Option<usize>, b: Option<usize>) -> Option<usize> {
        match (a, b) {
            (Some(x), Some(y)) => {
                self.nodes.push(vec![x, y]);
                Some(self.n + self.nodes.len() - 1)
            }
            (x, None) => x,
            (None, y) => y,
        }
    }

    /// Logical thread `t` folds `lists[t]` in order, then the block halves its shared
    /// array (`lists.len()` is a power of two): the kernels' common pattern.
    fn block(&mut self, lists: Vec<Vec<Option<usize>>>) -> Option<usize> {
        let mut s: Vec<Option<usize>> = lists
            .into_iter()
            .map(|list| list.into_iter().fold(None, |acc, x| self.add(acc, x)))
            .collect();
        let mut h = s.len() / 2;
        while h > 0 {
            for t in 0..h {
                s[t] = self.add(s[t], s[t + h]);
            }
            h /= 2;
        }
        s.first().copied().flatten()
    }
}

/// The elements `start, start + step, ...` below `end`.
fn strided(start: usize, step: usize, end: usize) -> impl Iterator<Item = usize> {
    (start..end).step_by(step.max(1))
}

/// The tree of the shared-memory reduction for `cfg` (its `kind` is not looked at).
pub(super) fn shared_tree(cfg: &ReductionConfig) -> Option<SumTree> {
    let (n, threads, blocks) = (cfg.n, cfg.threads, cfg.blocks);
    let mut b = Builder {
        n,
        nodes: Vec::new(),
    };
    // Pass 1: logical thread t of block blk folds blk*threads + t, then strides the grid.
    let partials: Vec<Option<usize>> = (0..blocks)
        .map(|blk| {
            let lists = (0..threads)
                .map(|t| {
                    strided(blk * threads + t, threads * blocks, n)
                        .map(Some)
                        .collect()
                })
                .collect();
            b.block(lists)
        })
        .collect();
    // Pass 2: one block, thread t folds partials t, t + threads, ...
    let lists = (0..threads)
        .map(|t| strided(t, threads, blocks).map(|i| partials[i]).collect())
        .collect();
    b.block(lists)?;
    SumTree::from_nodes(n, b.nodes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::ReductionKernel;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The two kernels, transcribed line by line in f32.
    fn emulate(cfg: &ReductionConfig, x: &[f32]) -> f32 {
        let (n, threads, blocks) = (cfg.n, cfg.threads, cfg.blocks);
        let halve = |s: &mut Vec<f32>| {
            let mut h = threads / 2;
            while h > 0 {
                for t in 0..h {
                    s[t] += s[t + h];
                }
                h /= 2;
            }
            s[0]
        };
        let partial: Vec<f32> = (0..blocks)
            .map(|b| {
                let mut s: Vec<f32> = (0..threads)
                    .map(|t| {
                        let mut acc = 0.0f32;
                        let mut i = b * threads + t;
                        while i < n {
                            acc += x[i];
                            i += threads * blocks;
                        }
                        acc
                    })
                    .collect();
                halve(&mut s)
            })
            .collect();
        let mut s: Vec<f32> = (0..threads)
            .map(|t| {
                let mut acc = 0.0f32;
                let mut i = t;
                while i < blocks {
                    acc += partial[i];
                    i += threads;
                }
                acc
            })
            .collect();
        halve(&mut s)
    }

    #[test]
    fn model_replays_the_kernels_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for (n, threads, blocks) in [
            (1, 4, 1),
            (5, 4, 1),
            (100, 8, 3),
            (1000, 32, 4),
            (4096, 64, 16),
            (37, 16, 8),
        ] {
            let cfg = ReductionConfig::new(n, ReductionKernel::SharedTree)
                .threads(threads)
                .blocks(blocks);
            let tree = shared_tree(&cfg).unwrap();
            assert_eq!(tree.leaf_count(), n);
            for _ in 0..20 {
                let x: Vec<f32> = (0..n)
                    .map(|_| rng.random::<f32>() * 2f32.powi(rng.random_range(-20..20)))
                    .collect();
                assert_eq!(
                    tree.replay(&x).to_bits(),
                    emulate(&cfg, &x).to_bits(),
                    "n={n} threads={threads} blocks={blocks}"
                );
            }
        }
    }

    #[test]
    fn fprev_reveals_the_model_from_the_emulated_kernels() {
        for (n, threads, blocks) in [(300, 8, 5), (2048, 64, 8)] {
            let cfg = ReductionConfig::new(n, ReductionKernel::SharedTree)
                .threads(threads)
                .blocks(blocks);
            let revealed = crate::reveal::Reveal::new(n)
                .run(|x: &[f32]| emulate(&cfg, x))
                .unwrap();
            assert_eq!(Some(revealed), shared_tree(&cfg));
        }
    }
}
