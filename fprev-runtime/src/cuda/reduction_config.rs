//! The reduction kernels and their launch configuration.

use super::model;
use super::CudaError;
use crate::tree::SumTree;

/// Which reduction kernel a [`ReductionTarget`](super::ReductionTarget) runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReductionKernel {
    /// Grid-stride partial sums, a shared-memory halving tree per block, then one block
    /// folding the partials the same way: deterministic, even under scrambling.
    SharedTree,
    /// Defour's `GlobalSum`: every element `atomicAdd`-ed into one result, in whatever
    /// order the hardware serves the atomics: nondeterministic, and fprev says so.
    AtomicAdd,
}

/// A reduction kernel launch. Defaults: 256 threads per block, enough blocks for four
/// elements per thread (at most 1024), 64 probes per launch, no scrambling.
///
/// ```
/// use fprev::cuda::{ReductionKernel, ReductionConfig};
/// let c = ReductionConfig::new(4096, ReductionKernel::SharedTree).threads(128).scramble(Some(7));
/// assert_eq!((c.blocks, c.threads, c.scramble), (8, 128, Some(7)));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReductionConfig {
    /// Elements per sum.
    pub n: usize,
    /// The kernel.
    pub kind: ReductionKernel,
    /// Threads per block: a power of two, at most 1024.
    pub threads: usize,
    /// Blocks per probe (grid x dimension).
    pub blocks: usize,
    /// Probes answered per launch (grid y dimension).
    pub rows: usize,
    /// Scramble block and thread ids from this seed, a new permutation every launch.
    pub scramble: Option<u64>,
}

impl ReductionConfig {
    /// Defaults for `n` elements.
    pub fn new(n: usize, kind: ReductionKernel) -> ReductionConfig {
        ReductionConfig {
            n,
            kind,
            threads: 256,
            blocks: default_blocks(n, 256),
            rows: 64,
            scramble: None,
        }
    }
    /// Threads per block (recomputes the default block count).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self.blocks = default_blocks(self.n, threads);
        self
    }
    /// Blocks per probe.
    pub fn blocks(mut self, blocks: usize) -> Self {
        self.blocks = blocks;
        self
    }
    /// Probes per launch.
    pub fn rows(mut self, rows: usize) -> Self {
        self.rows = rows;
        self
    }
    /// Scrambled launches from `seed` (`None`: hardware ids).
    pub fn scramble(mut self, seed: Option<u64>) -> Self {
        self.scramble = seed;
        self
    }

    /// The summation tree the [`ReductionKernel::SharedTree`] kernels compute for this
    /// configuration, scrambled or not (a GPU must reveal exactly this); `None` for
    /// [`ReductionKernel::AtomicAdd`], which has no single order, or an invalid configuration.
    ///
    /// ```
    /// use fprev::cuda::{ReductionKernel, ReductionConfig};
    /// let cfg = ReductionConfig::new(8, ReductionKernel::SharedTree).threads(2).blocks(2);
    /// // Thread t of block b sums b*2 + t and b*2 + t + 4; each block halves; the two
    /// // partials are added last.
    /// let tree = cfg.expected_tree().unwrap();
    /// assert_eq!(tree.to_string(), "(((0+4)+(1+5))+((2+6)+(3+7)))");
    /// ```
    pub fn expected_tree(&self) -> Option<SumTree> {
        if self.kind != ReductionKernel::SharedTree || self.validate().is_err() {
            return None;
        }
        model::shared_tree(self)
    }

    /// Why this configuration cannot launch, if it cannot.
    pub(crate) fn validate(&self) -> Result<(), CudaError> {
        let bad = |what: String| Err(CudaError::InvalidConfig(what));
        if self.n == 0 || self.n > u32::MAX as usize {
            return bad(format!("n = {} must be in 1..=2^32-1", self.n));
        }
        if !self.threads.is_power_of_two() || self.threads > 1024 {
            return bad(format!(
                "threads = {} must be a power of two at most 1024",
                self.threads
            ));
        }
        if self.blocks == 0 || self.blocks > i32::MAX as usize {
            return bad(format!("blocks = {} must be in 1..=2^31-1", self.blocks));
        }
        if self.rows == 0 || self.rows > 65535 {
            return bad(format!("rows = {} must be in 1..=65535", self.rows));
        }
        Ok(())
    }
}

fn default_blocks(n: usize, threads: usize) -> usize {
    n.div_ceil(threads.max(1) * 4).clamp(1, 1024)
}
