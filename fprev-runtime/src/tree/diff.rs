//! Where two trees differ: the smallest subtree both have over the same leaves but split
//! differently.

use std::collections::HashMap;
use std::fmt;

use super::SumTree;

/// Where two summation trees differ: the smallest subtree both have over the same leaves
/// but split differently. See [`SumTree::diff`].
///
/// ```
/// use fprev::SumTree;
/// let d = SumTree::sequential(4).diff(&SumTree::pairwise(4)).unwrap();
/// assert_eq!(d.leaves, vec![0, 1, 2, 3]);
/// println!("{d}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeDiff {
    /// Leaves of the smallest common subtree that differs (empty when the leaf counts differ).
    pub leaves: Vec<usize>,
    /// That subtree in the left tree.
    pub left: String,
    /// That subtree in the right tree.
    pub right: String,
    /// Inner nodes (leaf sets) found only in the left tree and only in the right tree.
    pub differing_nodes: (usize, usize),
}

impl fmt::Display for TreeDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clip = |s: &str| {
            if s.len() > 240 {
                format!("{}... ({} chars)", &s[..240], s.len())
            } else {
                s.to_string()
            }
        };
        if self.leaves.is_empty() {
            return write!(
                f,
                "the trees have different sizes: {} vs {}",
                self.left, self.right
            );
        }
        let span = match (self.leaves.first(), self.leaves.last()) {
            (Some(a), Some(b)) if self.leaves.len() == b - a + 1 => format!("{a}..={b}"),
            _ => format!("{} leaves from {}", self.leaves.len(), self.leaves[0]),
        };
        writeln!(f, "smallest differing subtree covers leaves {span}:")?;
        writeln!(f, "  left:  {}", clip(&self.left))?;
        writeln!(f, "  right: {}", clip(&self.right))?;
        write!(
            f,
            "  ({} node(s) only in left, {} only in right)",
            self.differing_nodes.0, self.differing_nodes.1
        )
    }
}

impl SumTree {
    /// The smallest place where two trees disagree, or `None` when they are equal.
    ///
    /// The answer names the smallest subtree that both trees have (the same set of
    /// leaves) but split differently, with both versions.
    ///
    /// ```
    /// use fprev::SumTree;
    /// let a: SumTree = "(((0+1)+2)+(3+4))".parse()?;
    /// let b: SumTree = "((0+(1+2))+(3+4))".parse()?;
    /// let d = a.diff(&b).unwrap();
    /// assert_eq!(d.leaves, vec![0, 1, 2]);
    /// assert_eq!((d.left.as_str(), d.right.as_str()), ("((0+1)+2)", "(0+(1+2))"));
    /// # Ok::<(), fprev::tree::TreeError>(())
    /// ```
    pub fn diff(&self, other: &SumTree) -> Option<TreeDiff> {
        if self == other {
            return None;
        }
        if self.leaf_count() != other.leaf_count() {
            return Some(TreeDiff {
                leaves: Vec::new(),
                left: format!("{} leaves", self.leaf_count()),
                right: format!("{} leaves", other.leaf_count()),
                differing_nodes: (self.inner_count(), other.inner_count()),
            });
        }
        let ha = self.cluster_hashes();
        let hb = other.cluster_hashes();
        let index_b: HashMap<(u64, u64), usize> =
            hb.iter().enumerate().map(|(i, &h)| (h, i)).collect();
        let set_a: std::collections::HashSet<(u64, u64)> = ha.iter().copied().collect();
        let only_a = ha.iter().filter(|h| !index_b.contains_key(h)).count();
        let only_b = hb.iter().filter(|h| !set_a.contains(h)).count();
        let sizes = self.subtree_sizes();
        let n = self.leaf_count();
        let mut best: Option<(u32, usize, usize)> = None;
        for k in 0..self.inner_count() {
            let v = n + k;
            let Some(&w) = index_b.get(&ha[v]) else {
                continue;
            };
            let mut ka: Vec<(u64, u64)> =
                self.children(v).iter().map(|&c| ha[c as usize]).collect();
            let mut kb: Vec<(u64, u64)> =
                other.children(w).iter().map(|&c| hb[c as usize]).collect();
            ka.sort_unstable();
            kb.sort_unstable();
            if ka != kb && best.is_none_or(|(s, _, _)| sizes[v] < s) {
                best = Some((sizes[v], v, w));
            }
        }
        let (_, v, w) = best?;
        Some(TreeDiff {
            leaves: self.leaves_under(v),
            left: self.subtree_string(v),
            right: other.subtree_string(w),
            differing_nodes: (only_a, only_b),
        })
    }

    /// A fingerprint of each node's leaf set (two independent 64-bit sums of leaf keys).
    fn cluster_hashes(&self) -> Vec<(u64, u64)> {
        let n = self.leaf_count();
        let key = |i: u64, salt: u64| {
            let mut z = i.wrapping_add(salt).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut h: Vec<(u64, u64)> = (0..n as u64)
            .map(|i| (key(i, 1), key(i, 0x5555_5555)))
            .collect();
        for k in 0..self.inner_count() {
            let mut acc = (0u64, 0u64);
            for &c in self.children(n + k) {
                acc.0 = acc.0.wrapping_add(h[c as usize].0);
                acc.1 = acc.1.wrapping_add(h[c as usize].1);
            }
            h.push(acc);
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use crate::SumTree;

    #[test]
    fn diff_finds_smallest() {
        let a: SumTree = "((0+1)+(2+(3+4)))".parse().unwrap();
        let b: SumTree = "((0+1)+((2+3)+4))".parse().unwrap();
        let d = a.diff(&b).unwrap();
        assert_eq!(d.leaves, vec![2, 3, 4]);
        assert!(a.diff(&a.clone()).is_none());
    }
}
