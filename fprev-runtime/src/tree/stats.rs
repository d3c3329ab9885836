//! Counts that describe a tree's shape: depth, roundings, arities.

use super::SumTree;

/// Shape counts of a [`SumTree`].
///
/// ```
/// let s = fprev::SumTree::fused(5).stats();
/// assert_eq!(s.arity_histogram, vec![(5, 1)]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeStats {
    /// Inputs.
    pub leaves: usize,
    /// Roundings.
    pub inner_nodes: usize,
    /// Longest root-to-leaf path, in inner nodes.
    pub depth: usize,
    /// Largest number of children of one node (2 for ordinary additions).
    pub max_arity: usize,
    /// `(arity, how many nodes)` ascending.
    pub arity_histogram: Vec<(usize, usize)>,
}

impl SumTree {
    /// Counts that describe the tree's shape.
    ///
    /// ```
    /// let s = fprev::SumTree::pairwise(8).stats();
    /// assert_eq!((s.leaves, s.inner_nodes, s.depth, s.max_arity), (8, 7, 3, 2));
    /// ```
    pub fn stats(&self) -> TreeStats {
        let n = self.leaf_count();
        let mut depth = vec![0u32; n + self.inner_count()];
        let mut arity = std::collections::BTreeMap::new();
        for k in 0..self.inner_count() {
            let kids = self.children(n + k);
            depth[n + k] = 1 + kids.iter().map(|&c| depth[c as usize]).max().unwrap_or(0);
            *arity.entry(kids.len()).or_insert(0) += 1;
        }
        TreeStats {
            leaves: n,
            inner_nodes: self.inner_count(),
            depth: depth.get(self.root()).copied().unwrap_or(0) as usize,
            max_arity: arity.keys().next_back().copied().unwrap_or(0),
            arity_histogram: arity.into_iter().collect(),
        }
    }
}
