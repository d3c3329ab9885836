//! Summation trees: the order in which an accumulation combines its inputs.
//!
//! A [`SumTree`] over `n` inputs has the leaves `0..n` and inner nodes that each stand for
//! one rounding: a binary node is one IEEE addition, a k-ary node is a fused multi-term
//! adder that sums its children exactly and rounds once. Trees are stored in canonical
//! form (children ordered by their smallest leaf, inner nodes in post-order), so equality
//! ignores the order of children, and every walk is a loop rather than recursion: a
//! sequential sum of a million values is a tree a million levels deep.

use std::fmt;

use crate::float::{exact_sum_rounded_f64, ProbeFloat};

pub(crate) mod describe;
mod diff;
mod dot;
#[cfg(feature = "serde")]
mod json;
mod parse;
mod shapes;
mod stats;

pub use diff::TreeDiff;
pub use stats::TreeStats;

/// A summation tree in canonical form.
///
/// Node ids: leaves are `0..n`; inner nodes are `n..n + inner_count()` in post-order, the
/// root last. The canonical text form has no spaces, a leaf is its index, an inner node is
/// its children joined by `+` in parentheses, children ordered by their smallest leaf:
///
/// ```
/// use fprev::SumTree;
/// let t: SumTree = "((2+3)+(1+0))".parse()?;
/// assert_eq!(t.to_string(), "((0+1)+(2+3))");
/// assert_eq!(SumTree::sequential(4).to_string(), "(((0+1)+2)+3)");
/// assert_eq!(t.replay(&[1.0f32, 2.0, 3.0, 4.0]), 10.0);
/// # Ok::<(), fprev::tree::TreeError>(())
/// ```
///
/// # The empty tree
/// Every constructor is total: `n = 0` gives the empty tree (no leaves, no inner nodes),
/// the sum of no values, and every method handles it: its text is `()`, its JSON has
/// `"leaves":0`, it replays an empty slice to `+0`, it has depth 0 and it draws as an
/// empty picture; [`FromStr`](std::str::FromStr), [`from_nodes`](Self::from_nodes) and `from_json` (with
/// the `serde` feature) read it back. (A shape function that refused `n = 0`
/// would make every caller handle a failure for a case that has a well-defined answer.)
/// Revealing a sum of zero values is still refused, since there is nothing to probe.
///
/// ```
/// use fprev::SumTree;
/// let e = SumTree::sequential(0);
/// assert_eq!((e.leaf_count(), e.inner_count()), (0, 0));
/// assert_eq!(e.to_string(), "()");
/// assert_eq!(e.replay::<f32>(&[]), 0.0);
/// assert_eq!("()".parse::<SumTree>()?, SumTree::fused(0));
/// # Ok::<(), fprev::tree::TreeError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SumTree {
    leaves: u32,
    /// `child_start[k]..child_start[k+1]` indexes `children` for inner node `n + k`.
    child_start: Vec<u32>,
    children: Vec<u32>,
}

/// Why a tree description was rejected.
///
/// ```
/// use fprev::SumTree;
/// assert!("(0+0)".parse::<SumTree>().is_err());
/// assert!("(0+2)".parse::<SumTree>().is_err());
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeError {
    /// The text does not follow the canonical grammar.
    Syntax {
        /// Byte offset of the problem.
        at: usize,
        /// What was expected.
        what: &'static str,
    },
    /// A leaf index appears twice, or the indices are not exactly `0..n`.
    Leaves(String),
    /// An inner node has fewer than two children, or nodes do not form one tree.
    Shape(String),
    /// A JSON description could not be read.
    Json(String),
}

impl std::fmt::Display for TreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TreeError::Syntax { at, what } => write!(f, "tree syntax error at byte {at}: {what}"),
            TreeError::Leaves(s) => write!(f, "tree leaves must be 0..n, each once: {s}"),
            TreeError::Shape(s) => write!(f, "not a summation tree: {s}"),
            TreeError::Json(s) => write!(f, "tree JSON: {s}"),
        }
    }
}

impl std::error::Error for TreeError {}

impl SumTree {
    /// Number of inputs (leaves).
    pub fn leaf_count(&self) -> usize {
        self.leaves as usize
    }

    /// Number of inner nodes (roundings).
    pub fn inner_count(&self) -> usize {
        self.child_start.len().saturating_sub(1)
    }

    /// Id of the root: the last inner node, or leaf 0 for a one-input tree (and 0, which
    /// has no children, for the empty tree).
    pub fn root(&self) -> usize {
        if self.inner_count() == 0 {
            0
        } else {
            self.leaf_count() + self.inner_count() - 1
        }
    }

    /// Whether `node` is a leaf.
    pub fn is_leaf(&self, node: usize) -> bool {
        node < self.leaf_count()
    }

    /// Children of `node` (empty for a leaf), ordered by smallest leaf.
    #[inline]
    pub fn children(&self, node: usize) -> &[u32] {
        if node < self.leaf_count() {
            return &[];
        }
        let k = node - self.leaf_count();
        match self.child_start.get(k..k + 2) {
            Some(&[a, b]) => &self.children[a as usize..b as usize],
            // not a node of this tree (the empty tree's root)
            _ => &[],
        }
    }

    /// For an all-binary tree, the children of inner node `n + k` at `2k` and `2k + 1`.
    pub(crate) fn binary_pairs(&self) -> Option<&[u32]> {
        (self.children.len() == 2 * self.inner_count()).then_some(&self.children[..])
    }

    /// The tree that adds `x[0]`, `x[1]`, ... one after the other into one accumulator.
    ///
    /// ```
    /// assert_eq!(fprev::SumTree::sequential(3).to_string(), "((0+1)+2)");
    /// ```
    pub fn sequential(n: usize) -> SumTree {
        let mut kids = Vec::with_capacity(2 * n);
        for k in 1..n {
            let left = if k == 1 { 0 } else { n + k - 2 };
            kids.extend([left as u32, k as u32]);
        }
        Self::from_canonical_pairs(n, kids)
    }

    /// Balanced pairwise summation: split at `n/2`, sum both halves, add them.
    ///
    /// ```
    /// assert_eq!(fprev::SumTree::pairwise(4).to_string(), "((0+1)+(2+3))");
    /// ```
    pub fn pairwise(n: usize) -> SumTree {
        let mut kids: Vec<u32> = Vec::with_capacity(2 * n);
        // iterative: (lo, hi, parent slot) work list resolved bottom-up by post-order
        let mut stack = vec![(0usize, n, false)];
        let mut results: Vec<u32> = Vec::new();
        while let Some((lo, hi, expanded)) = stack.pop() {
            if hi - lo <= 1 {
                results.push(lo as u32);
            } else if !expanded {
                let mid = lo + (hi - lo) / 2;
                stack.push((lo, hi, true));
                stack.push((mid, hi, false));
                stack.push((lo, mid, false));
            } else {
                let b = results.pop().unwrap_or(0);
                let a = results.pop().unwrap_or(0);
                kids.extend([a, b]);
                results.push((n + kids.len() / 2 - 1) as u32);
            }
        }
        Self::from_canonical_pairs(n, kids)
    }

    /// One fused node over all `n` inputs: an exact, order-independent sum.
    ///
    /// ```
    /// assert_eq!(fprev::SumTree::fused(5).to_string(), "(0+1+2+3+4)");
    /// ```
    pub fn fused(n: usize) -> SumTree {
        if n <= 1 {
            return Self::from_raw(n, vec![]);
        }
        Self::from_raw(n, vec![(0..n as u32).collect()])
    }

    /// Build a tree from inner nodes given as child lists.
    ///
    /// Ids `0..n` are leaves; `nodes[k]` becomes node `n + k` and may only name leaves and
    /// earlier nodes. The node nobody names is the root. This is the JSON form.
    ///
    /// ```
    /// let t = fprev::SumTree::from_nodes(3, vec![vec![2, 1], vec![0, 3]])?;
    /// assert_eq!(t.to_string(), "(0+(1+2))");
    /// # Ok::<(), fprev::tree::TreeError>(())
    /// ```
    pub fn from_nodes(n: usize, nodes: Vec<Vec<usize>>) -> Result<SumTree, TreeError> {
        if n == 0 && nodes.is_empty() {
            return Ok(SumTree::fused(0));
        }
        if n == 0 {
            return Err(TreeError::Leaves("inner nodes over no leaves".into()));
        }
        if n > u32::MAX as usize / 4 {
            return Err(TreeError::Leaves(format!("{n} leaves is too many")));
        }
        // Every node but the root is named once: the child lists must hold exactly
        // n + nodes - 1 entries. Checked before anything is sized by the claimed `n`, so
        // a short description claiming billions of leaves is an error, not an allocation.
        let named: usize = nodes.iter().map(Vec::len).sum();
        if named != n + nodes.len() - 1 {
            return Err(TreeError::Shape(format!(
                "{} node(s) over {n} leaves must name {} children in all, found {named}",
                nodes.len(),
                n + nodes.len() - 1
            )));
        }
        let mut used = vec![false; n + nodes.len()];
        for (k, kids) in nodes.iter().enumerate() {
            if kids.len() < 2 {
                return Err(TreeError::Shape(format!(
                    "node {} has {} child(ren); every rounding combines at least two",
                    n + k,
                    kids.len()
                )));
            }
            for &c in kids {
                if c >= n + k {
                    return Err(TreeError::Shape(format!(
                        "node {} names node {c}, which is not a leaf or an earlier node",
                        n + k
                    )));
                }
                if std::mem::replace(&mut used[c], true) {
                    return Err(TreeError::Shape(format!("node {c} has two parents")));
                }
            }
        }
        let roots: Vec<usize> = (0..used.len()).filter(|&i| !used[i]).collect();
        if roots.len() != 1 {
            return Err(TreeError::Shape(format!(
                "expected one root, found {} ({:?}...)",
                roots.len(),
                &roots[..roots.len().min(5)]
            )));
        }
        let raw = nodes
            .into_iter()
            .map(|k| k.into_iter().map(|c| c as u32).collect())
            .collect();
        Ok(Self::from_raw(n, raw))
    }

    /// Canonicalize a validated raw arena (root = the unnamed node).
    pub(crate) fn from_raw(n: usize, nodes: Vec<Vec<u32>>) -> SumTree {
        let mut starts = Vec::with_capacity(nodes.len() + 1);
        starts.push(0u32);
        let mut kids = Vec::with_capacity(nodes.len() * 2);
        for k in nodes {
            kids.extend_from_slice(&k);
            starts.push(kids.len() as u32);
        }
        Self::from_flat(n, starts, kids)
    }

    /// Binary nodes already canonical (ids in post-order, children ordered by smallest
    /// leaf), as the shape builders emit them: no renumbering, which costs more than a
    /// cheap target's call per node. Debug builds check the claim.
    pub(crate) fn from_canonical_pairs(n: usize, kids: Vec<u32>) -> SumTree {
        let starts = (0..=kids.len() as u32 / 2).map(|k| 2 * k).collect();
        Self::from_canonical(n, starts, kids)
    }

    /// Nodes of any arity already canonical, child lists flat as in
    /// [`from_flat`](Self::from_flat). Debug builds check the claim.
    pub(crate) fn from_canonical(n: usize, child_start: Vec<u32>, children: Vec<u32>) -> SumTree {
        let tree = SumTree {
            leaves: n as u32,
            child_start,
            children,
        };
        debug_assert!({
            let canonical = Self::from_flat(n, tree.child_start.clone(), tree.children.clone());
            canonical.children == tree.children && canonical.child_start == tree.child_start
        });
        tree
    }

    /// [`from_raw`](Self::from_raw) with the child lists flat: node `n + k` has children
    /// `kids[starts[k]..starts[k + 1]]`.
    pub(crate) fn from_flat(n: usize, starts: Vec<u32>, mut kids: Vec<u32>) -> SumTree {
        let inner = starts.len() - 1;
        let total = n + inner;
        // Arrays indexed by raw id, leaves included, so the passes below run without
        // branching on leaf or node: for a cheap target this pass is a large part of a reveal.
        // Bottom-up (raw ids put children before parents, the root last): the smallest
        // leaf orders the children; inner nodes and child slots per subtree come along.
        let mut min_leaf: Vec<u32> = (0..total as u32).collect();
        let mut sub_inner = vec![0u32; total];
        let mut sub_slots = vec![0u32; total];
        for k in 0..inner {
            let r = starts[k] as usize..starts[k + 1] as usize;
            let node = &mut kids[r];
            if let [a, b] = node {
                if min_leaf[*b as usize] < min_leaf[*a as usize] {
                    std::mem::swap(a, b);
                }
            } else {
                node.sort_unstable_by_key(|&c| min_leaf[c as usize]);
            }
            let (mut nodes, mut slots) = (1, node.len() as u32);
            for &c in node.iter() {
                nodes += sub_inner[c as usize];
                slots += sub_slots[c as usize];
            }
            min_leaf[n + k] = min_leaf[node[0] as usize];
            sub_inner[n + k] = nodes;
            sub_slots[n + k] = slots;
        }
        // Top-down: in post-order a subtree's inner nodes and child slots are contiguous,
        // its children's first and its own last, so offsets place every node.
        let mut first = vec![(0u32, 0u32); total];
        for k in (0..inner).rev() {
            let (mut node, mut slot) = first[n + k];
            for &c in &kids[starts[k] as usize..starts[k + 1] as usize] {
                first[c as usize] = (node, slot);
                node += sub_inner[c as usize];
                slot += sub_slots[c as usize];
            }
            // now the node's own post-order index and the start of its own child list
            first[n + k] = (node, slot);
        }
        let new_id: Vec<u32> = (0..total)
            .map(|v| {
                if v < n {
                    v as u32
                } else {
                    n as u32 + first[v].0
                }
            })
            .collect();
        let mut child_start = vec![0u32; inner + 1];
        let mut children = vec![0u32; kids.len()];
        child_start[inner] = kids.len() as u32;
        for k in 0..inner {
            let (q, slot) = first[n + k];
            child_start[q as usize] = slot;
            let own = &kids[starts[k] as usize..starts[k + 1] as usize];
            for (d, &c) in own.iter().enumerate() {
                children[slot as usize + d] = new_id[c as usize];
            }
        }
        SumTree {
            leaves: n as u32,
            child_start,
            children,
        }
    }

    /// Sum `x` in this tree's order: binary nodes add once in `T`, k-ary nodes add their
    /// children exactly and round once.
    ///
    /// # Panics
    /// If `x.len()` is not [`leaf_count`](Self::leaf_count).
    ///
    /// ```
    /// use fprev::SumTree;
    /// let x = [1e8f32, 1.0, -1e8, 1.0];
    /// assert_eq!(SumTree::sequential(4).replay(&x), 1.0);
    /// assert_eq!(SumTree::fused(4).replay(&x), 2.0);
    /// ```
    pub fn replay<T: ProbeFloat>(&self, x: &[T]) -> T {
        assert_eq!(
            x.len(),
            self.leaf_count(),
            "replay needs one value per leaf"
        );
        let n = self.leaf_count();
        if self.inner_count() == 0 {
            // one leaf, or the empty sum
            return x.first().copied().unwrap_or(T::ZERO);
        }
        if let Some(pairs) = self.binary_pairs() {
            // all binary: node n + k adds slots 2k and 2k + 1 of one buffer for leaves
            // and inner nodes (node ids index it directly)
            let mut vals: Vec<T> = Vec::with_capacity(n + self.inner_count());
            vals.extend_from_slice(x);
            for pair in pairs.chunks_exact(2) {
                let v = vals[pair[0] as usize].add(vals[pair[1] as usize]);
                vals.push(v);
            }
            return vals[n + self.inner_count() - 1];
        }
        self.replay_with(
            x,
            |_, terms| exact_sum_rounded_f64(terms.iter().copied()),
            |_, a, b| a.add(b),
        )
    }

    /// `x` summed in this tree's order with `fused` computing the nodes of three or more
    /// children (given their ids, then their values exactly as `f64`) and `pair` the binary ones (given
    /// the two child ids, then their values): the plain replay, and hardware models
    /// (`crate::fused`) whose multi-way nodes truncate.
    pub(crate) fn replay_with<T: ProbeFloat>(
        &self,
        x: &[T],
        fused: impl Fn(&[u32], &[f64]) -> T,
        pair: impl Fn([u32; 2], T, T) -> T,
    ) -> T {
        let n = self.leaf_count();
        assert_eq!(x.len(), n, "one value per leaf");
        if self.inner_count() == 0 {
            return x.first().copied().unwrap_or(T::ZERO);
        }
        let mut vals: Vec<T> = Vec::with_capacity(n + self.inner_count());
        vals.extend_from_slice(x);
        let mut terms: Vec<f64> = Vec::new();
        for w in self.child_start.windows(2) {
            let kids = &self.children[w[0] as usize..w[1] as usize];
            let v = if let [a, b] = kids {
                pair([*a, *b], vals[*a as usize], vals[*b as usize])
            } else {
                terms.clear();
                terms.extend(kids.iter().map(|&c| vals[c as usize].to_f64()));
                fused(kids, &terms)
            };
            vals.push(v);
        }
        vals[n + self.inner_count() - 1]
    }

    /// Parent of every node (`u32::MAX` for the root).
    pub fn parents(&self) -> Vec<u32> {
        let n = self.leaf_count();
        let mut parent = vec![u32::MAX; n + self.inner_count()];
        for k in 0..self.inner_count() {
            for &c in self.children(n + k) {
                parent[c as usize] = (n + k) as u32;
            }
        }
        parent
    }

    /// Number of leaves under every node.
    pub fn subtree_sizes(&self) -> Vec<u32> {
        let n = self.leaf_count();
        let mut size = vec![1u32; n + self.inner_count()];
        for k in 0..self.inner_count() {
            size[n + k] = self.children(n + k).iter().map(|&c| size[c as usize]).sum();
        }
        size
    }

    /// The tree the first `k` leaves induce: the order this tree adds them in when
    /// every later input is zero (adding a zero is exact), each node left with one
    /// non-zero child dropped. A sweep over lengths compares a length's tree, cut to the
    /// previous length, with that length's tree: an order that only grows keeps its
    /// prefix.
    ///
    /// ```
    /// use fprev::SumTree;
    /// assert_eq!(SumTree::sequential(8).prefix(5), SumTree::sequential(5));
    /// assert_eq!(SumTree::pairwise(8).prefix(4), SumTree::pairwise(4));
    /// assert_eq!(SumTree::pairwise(8).prefix(6).to_string(), "(((0+1)+(2+3))+(4+5))");
    /// ```
    pub fn prefix(&self, k: usize) -> SumTree {
        let k = k.min(self.leaf_count());
        self.induced(&(0..k).collect::<Vec<_>>())
    }

    /// The tree `leaves` (ascending, each a leaf of this tree) induce, leaf `leaves[j]`
    /// renumbered `j`: the order this tree adds them in when every other input is zero.
    pub(crate) fn induced(&self, leaves: &[usize]) -> SumTree {
        let n = self.leaf_count();
        let k = leaves.len();
        // new id of every old node with a kept leaf below it, children before parents
        let mut id: Vec<Option<u32>> = vec![None; n];
        for (j, &leaf) in leaves.iter().enumerate() {
            id[leaf] = Some(j as u32);
        }
        let mut nodes: Vec<Vec<u32>> = Vec::new();
        for v in n..n + self.inner_count() {
            let kids: Vec<u32> = self
                .children(v)
                .iter()
                .filter_map(|&c| id[c as usize])
                .collect();
            id.push(match kids.len() {
                0 => None,
                1 => Some(kids[0]),
                _ => {
                    nodes.push(kids);
                    Some((k + nodes.len() - 1) as u32)
                }
            });
        }
        Self::from_raw(k, nodes)
    }

    /// Leaves under `node`, ascending.
    pub fn leaves_under(&self, node: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(v) = stack.pop() {
            if self.is_leaf(v) {
                out.push(v);
            } else {
                stack.extend(self.children(v).iter().map(|&c| c as usize));
            }
        }
        out.sort_unstable();
        out
    }

    /// Canonical text of the subtree at `node`.
    pub fn subtree_string(&self, node: usize) -> String {
        let mut out = String::new();
        let mut stack: Vec<(usize, usize)> = vec![(node, 0)];
        while let Some(&mut (v, ref mut idx)) = stack.last_mut() {
            if self.is_leaf(v) {
                out.push_str(&v.to_string());
                stack.pop();
                continue;
            }
            let kids = self.children(v);
            if *idx == 0 {
                out.push('(');
            } else if *idx < kids.len() {
                out.push('+');
            }
            if *idx < kids.len() {
                let c = kids[*idx] as usize;
                *idx += 1;
                stack.push((c, 0));
            } else {
                out.push(')');
                stack.pop();
            }
        }
        out
    }
}

impl fmt::Display for SumTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.subtree_string(self.root()))
    }
}

impl fmt::Debug for SumTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SumTree({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn induced_trees_drop_the_zero_inputs() {
        // ((0+1)+(2+3))+((4+5)+(6+7)) with inputs 1, 2, 3 and 6 only
        let tree = SumTree::pairwise(8).induced(&[1, 2, 3, 6]);
        assert_eq!(tree.to_string(), "((0+(1+2))+3)");
        // the same tree summing the four values at those positions among zeros
        let x = [0.0, 1e16, 1.0, -1e16, 0.0, 0.0, 3.0, 0.0];
        let y = [1e16, 1.0, -1e16, 3.0];
        assert_eq!(SumTree::pairwise(8).replay(&x), tree.replay(&y));
        assert_eq!(SumTree::sequential(5).induced(&[4]), SumTree::sequential(1));
    }

    #[test]
    fn every_constructor_gives_an_empty_tree_that_every_method_handles() {
        let empty = [
            SumTree::sequential(0),
            SumTree::pairwise(0),
            SumTree::fused(0),
            SumTree::reverse(0),
            SumTree::numpy_pairwise(0),
            SumTree::from_nodes(0, vec![]).unwrap(),
            "()".parse().unwrap(),
            " ( )\n".parse().unwrap(),
        ];
        for t in &empty {
            assert_eq!(t, &empty[0]);
            assert_eq!((t.leaf_count(), t.inner_count()), (0, 0));
            assert_eq!(t.to_string(), "()");
            #[cfg(feature = "serde")]
            assert_eq!(SumTree::from_json(&t.to_json()).unwrap(), *t);
            assert_eq!(t.replay::<f64>(&[]).to_bits(), 0);
            let s = t.stats();
            assert_eq!((s.leaves, s.depth, s.max_arity), (0, 0, 0));
            assert!(t.children(t.root()).is_empty());
            assert!(t.leaves_under(t.root()).is_empty());
            assert!(t.parents().is_empty() && t.subtree_sizes().is_empty());
            assert!(t.to_dot().starts_with("digraph"));
            assert!(crate::picture::Picture::new().render(t).starts_with("<svg"));
            assert_eq!(t.diff(&empty[0]), None);
            assert!(t.diff(&SumTree::sequential(2)).is_some());
        }
        assert!(SumTree::from_nodes(0, vec![vec![0, 1]]).is_err());
    }

    #[test]
    fn a_claimed_leaf_count_is_not_allocated_before_the_content_backs_it() {
        for leaves in [2_147_483_647usize, 1 << 29, usize::MAX] {
            #[cfg(feature = "serde")]
            {
                let json =
                    format!(r#"{{"format":"fprev-sum-tree/1","leaves":{leaves},"nodes":[]}}"#);
                let e = SumTree::from_json(&json).unwrap_err();
                assert!(matches!(e, TreeError::Json(_)), "{e}");
            }
            let e = SumTree::from_nodes(leaves, vec![vec![0, 1]]).unwrap_err();
            assert!(
                matches!(e, TreeError::Shape(_) | TreeError::Leaves(_)),
                "{e}"
            );
        }
    }

    #[test]
    fn deep_trees_do_not_recurse() {
        let n = 200_000;
        let t = SumTree::sequential(n);
        let s = t.to_string();
        let back: SumTree = s.parse().unwrap();
        assert_eq!(back, t);
        assert_eq!(t.stats().depth, n - 1);
        #[cfg(feature = "serde")]
        assert_eq!(SumTree::from_json(&t.to_json()).unwrap(), t);
        let x = vec![1.0f32; n];
        assert_eq!(t.replay(&x), n as f32);
    }

    #[test]
    fn pairwise_shape() {
        assert_eq!(SumTree::pairwise(5).to_string(), "((0+1)+(2+(3+4)))");
        assert_eq!(SumTree::pairwise(1).to_string(), "0");
    }
}
