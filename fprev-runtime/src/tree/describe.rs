//! Large trees in words: the structure of a summation tree, found from its repetitions.
//!
//! A revealed tree of a few thousand leaves is unreadable as text and as a full picture,
//! but library orders are made of few ideas: one accumulator absorbing values in order
//! (possibly with a stride, which makes it a *lane*), balanced pairwise halving, fused
//! multi-term adds, and blocks that repeat the same shape shifted along the input. This
//! module finds those ideas bottom-up in linear time and names them; what it cannot name
//! it summarizes by counts. [`SumTree::describe`] writes the words; the picture module
//! draws the same decomposition.

use std::collections::HashMap;

use super::SumTree;

mod phrases;
pub(crate) use phrases::{chain_phrase, combiner_phrase};

/// How the leaves a chain absorbs step from one to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChainStride {
    /// A constant difference (1: in order, -1: in reverse order, `s`: a lane of stride `s`).
    By(i64),
    /// No constant difference.
    Irregular,
}

/// How a node's parts are combined above them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PartsOrder {
    /// `((p0+p1)+p2)+...`
    InOrder,
    /// `p0+(p1+(p2+...))`
    Reverse,
    /// Balanced: all binary, as shallow as possible.
    Pairwise,
    /// One fused node over all parts.
    Fused,
    /// Anything else: the tree over the parts (leaf `i` is part `i`).
    Other(SumTree),
}

/// What one node of a tree is, in the terms [`SumTree::describe`] uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TreeShape {
    /// An input.
    Leaf,
    /// One accumulator absorbing `len` leaves one at a time.
    Chain { len: usize, step: ChainStride },
    /// Balanced pairwise summation of `len` leaves.
    Pairwise { len: usize },
    /// One fused node over `len` leaves.
    Fused { len: usize },
    /// A chain of `blocks` fused nodes: the first over `first` leaves, each later one
    /// adding the running value and `width` new leaves (the last may take fewer): a
    /// block-FMA unit (Tensor Core) walking along `k`.
    FusedChain {
        len: usize,
        blocks: usize,
        first: usize,
        width: usize,
    },
    /// Parts (node ids, by smallest leaf) combined by `top`. `shift` is set when every part
    /// is the first one shifted by a multiple of it; `interleaved` when the parts' leaf
    /// ranges overlap (lanes) rather than follow one another (blocks).
    Parts {
        top: PartsOrder,
        parts: Vec<usize>,
        shift: Option<usize>,
        interleaved: bool,
    },
    /// The subtree `base`, then `leaves` added one at a time in this order.
    Tail { base: usize, leaves: Vec<usize> },
    /// None of the above.
    Irregular,
}

/// A node covered by `count` shifted copies of one subtree: copy `i` is `first` with
/// every leaf moved by `i * shift`, and `top` combines them (leaf `i` is copy `i`).
/// `interleaved` when a copy's leaves are not contiguous (lanes, not blocks).
#[derive(Clone, Debug)]
pub(crate) struct RegularTiling {
    pub(crate) first: usize,
    pub(crate) count: usize,
    pub(crate) shift: usize,
    pub(crate) interleaved: bool,
    pub(crate) top: SumTree,
}

/// Per-node facts computed once, bottom-up.
pub(crate) struct Analysis<'t> {
    pub(crate) tree: &'t SumTree,
    pub(crate) size: Vec<u32>,
    pub(crate) min_leaf: Vec<u32>,
    pub(crate) max_leaf: Vec<u32>,
    depth: Vec<u32>,
    /// Binary all the way down, every node splitting its contiguous leaves roughly in half.
    balanced: Vec<bool>,
    /// Shift-invariant shape hash: equal for subtrees that are shifted copies.
    sig: Vec<u64>,
    /// For chains: (length, first two leaves or the step, last leaf).
    chain: Vec<Option<ChainInfo>>,
}

#[derive(Clone, Copy)]
struct ChainInfo {
    len: usize,
    /// The bottom pair, ascending, until a third leaf fixes the step.
    pair: (u32, u32),
    step: Option<ChainStride>,
    last: u32,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl<'t> Analysis<'t> {
    pub(crate) fn new(tree: &'t SumTree) -> Analysis<'t> {
        let n = tree.leaf_count();
        let total = n + tree.inner_count();
        let mut a = Analysis {
            tree,
            size: vec![1; total],
            min_leaf: (0..total as u32).collect(),
            max_leaf: (0..total as u32).collect(),
            depth: vec![0; total],
            balanced: vec![true; total],
            sig: vec![mix(1); total],
            chain: vec![None; total],
        };
        for v in n..total {
            let kids = tree.children(v);
            let first = kids[0] as usize;
            let lo = a.min_leaf[first];
            let (mut size, mut hi, mut depth, mut binary) = (0, 0, 0, kids.len() == 2);
            let mut smallest = u32::MAX;
            let mut h = mix(kids.len() as u64);
            for &c in kids {
                let c = c as usize;
                size += a.size[c];
                hi = hi.max(a.max_leaf[c]);
                depth = depth.max(a.depth[c] + 1);
                binary &= a.balanced[c];
                smallest = smallest.min(a.size[c]);
                h = mix(h ^ a.sig[c]).wrapping_add(u64::from(a.min_leaf[c] - lo));
            }
            a.size[v] = size;
            a.min_leaf[v] = lo;
            a.max_leaf[v] = hi;
            a.depth[v] = depth;
            // halves within 40/60: NumPy's halves are rounded to multiples of 8
            // (over a contiguous range: interleaved halves are lanes, named as such)
            a.balanced[v] =
                binary && hi - lo + 1 == size && (size <= 3 || 5 * smallest >= 2 * size);
            a.sig[v] = mix(h);
            a.chain[v] = a.extend_chain(kids);
        }
        a
    }

    fn extend_chain(&self, kids: &[u32]) -> Option<ChainInfo> {
        let [x, y] = kids else { return None };
        let (x, y) = (*x as usize, *y as usize);
        let t = self.tree;
        match (t.is_leaf(x), t.is_leaf(y)) {
            (true, true) => Some(ChainInfo {
                len: 2,
                pair: (x as u32, y as u32),
                step: None,
                last: y as u32,
            }),
            (true, false) | (false, true) => {
                let (leaf, inner) = if t.is_leaf(x) { (x, y) } else { (y, x) };
                let c = self.chain[inner]?;
                let leaf = leaf as u32;
                let step = match c.step {
                    None => {
                        let (lo, hi) = c.pair;
                        let d = i64::from(hi) - i64::from(lo);
                        if i64::from(leaf) - i64::from(hi) == d {
                            ChainStride::By(d)
                        } else if i64::from(lo) - i64::from(leaf) == d {
                            ChainStride::By(-d)
                        } else {
                            ChainStride::Irregular
                        }
                    }
                    Some(ChainStride::By(s)) if i64::from(leaf) - i64::from(c.last) == s => {
                        ChainStride::By(s)
                    }
                    Some(_) => ChainStride::Irregular,
                };
                Some(ChainInfo {
                    len: c.len + 1,
                    pair: c.pair,
                    step: Some(step),
                    last: leaf,
                })
            }
            (false, false) => None,
        }
    }

    /// Whether `v` is one of the shapes named without parts.
    pub(crate) fn pure(&self, v: usize) -> Option<TreeShape> {
        let t = self.tree;
        if t.is_leaf(v) {
            return Some(TreeShape::Leaf);
        }
        let len = self.size[v] as usize;
        if let Some(c) = self.chain[v] {
            let step = c
                .step
                .unwrap_or(ChainStride::By(i64::from(c.pair.1) - i64::from(c.pair.0)));
            return Some(TreeShape::Chain { len, step });
        }
        if self.balanced[v] {
            return Some(TreeShape::Pairwise { len });
        }
        let kids = t.children(v);
        if kids.len() == len {
            return Some(TreeShape::Fused { len });
        }
        self.fused_chain(v)
    }

    /// `v` as a chain of fused nodes, each over the previous one and new leaves.
    fn fused_chain(&self, v: usize) -> Option<TreeShape> {
        let t = self.tree;
        let mut widths = Vec::new();
        let mut w = v;
        let first = loop {
            let kids = t.children(w);
            let inner: Vec<usize> = kids
                .iter()
                .map(|&c| c as usize)
                .filter(|&c| !t.is_leaf(c))
                .collect();
            match inner[..] {
                [] if kids.len() >= 2 => break kids.len(),
                [c] if kids.len() >= 3 => {
                    widths.push(kids.len() - 1);
                    w = c;
                }
                _ => return None,
            }
        };
        // outermost last: the last block may be short
        let width = *widths.last()?;
        let (last, rest) = widths.split_first()?;
        if rest.iter().any(|&k| k != width) || *last > width || width < 2 {
            return None;
        }
        let width = rest.first().copied().unwrap_or(*last);
        Some(TreeShape::FusedChain {
            len: self.size[v] as usize,
            blocks: widths.len() + 1,
            first,
            width,
        })
    }

    /// Inner nodes of the subtree at `v` (including `v`), in no particular order.
    fn subtree_nodes(&self, v: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![v];
        while let Some(w) = stack.pop() {
            if !self.tree.is_leaf(w) {
                out.push(w);
                stack.extend(self.tree.children(w).iter().map(|&c| c as usize));
            }
        }
        out
    }

    /// The parts under `v` that `is_part` accepts (descending no further), by smallest
    /// leaf, and the tree that combines them (leaf `i` is part `i`).
    pub(crate) fn contract(
        &self,
        v: usize,
        is_part: impl Fn(usize) -> bool,
    ) -> Option<(Vec<usize>, SumTree)> {
        let t = self.tree;
        let mut parts = Vec::new();
        let mut inner = Vec::new();
        let mut stack = vec![v];
        while let Some(w) = stack.pop() {
            if is_part(w) || t.is_leaf(w) {
                parts.push(w);
            } else {
                inner.push(w);
                stack.extend(t.children(w).iter().map(|&c| c as usize));
            }
        }
        if parts.len() < 2 {
            return None;
        }
        parts.sort_unstable_by_key(|&p| self.min_leaf[p]);
        let c = parts.len();
        let mut id: HashMap<usize, u32> = parts
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i as u32))
            .collect();
        // node ids grow with post-order, so ascending ids put children first
        inner.sort_unstable();
        let mut nodes = Vec::with_capacity(inner.len());
        for (k, &w) in inner.iter().enumerate() {
            id.insert(w, (c + k) as u32);
            nodes.push(t.children(w).iter().map(|&ch| id[&(ch as usize)]).collect());
        }
        Some((parts, SumTree::from_raw(c, nodes)))
    }

    /// Whether the subtrees at `a` and `b` are the same shape, `b` shifted by `shift`.
    fn shifted_copy(&self, a: usize, b: usize, shift: i64) -> bool {
        let t = self.tree;
        let mut stack = vec![(a, b)];
        while let Some((x, y)) = stack.pop() {
            match (t.is_leaf(x), t.is_leaf(y)) {
                (true, true) if y as i64 - x as i64 == shift => {}
                (false, false) => {
                    let (kx, ky) = (t.children(x), t.children(y));
                    if kx.len() != ky.len() {
                        return false;
                    }
                    stack.extend(kx.iter().zip(ky).map(|(&p, &q)| (p as usize, q as usize)));
                }
                _ => return false,
            }
        }
        true
    }

    /// What `v` is.
    pub(crate) fn shape(&self, v: usize) -> TreeShape {
        if let Some(s) = self.pure(v) {
            return s;
        }
        if let Some(s) = self.tiling(v) {
            return s;
        }
        if let Some(s) = self.tail(v) {
            return s;
        }
        if let Some(s) = self.mixed(v) {
            return s;
        }
        TreeShape::Irregular
    }

    /// Shifted copies of one subtree that cover `v` exactly, combined in a named way.
    fn tiling(&self, v: usize) -> Option<TreeShape> {
        let total = self.size[v];
        let mut groups: HashMap<u64, (u32, usize, u32)> = HashMap::new();
        for w in self.subtree_nodes(v) {
            if w == v {
                continue;
            }
            let e = groups.entry(self.sig[w]).or_insert((0, w, self.size[w]));
            e.0 += 1;
            if self.min_leaf[w] < self.min_leaf[e.1] {
                e.1 = w;
            }
        }
        let mut found: Vec<(bool, u32, u64)> = groups
            .iter()
            .filter(|(_, &(count, _, size))| count >= 2 && count * size == total)
            .map(|(&sig, &(_, first, size))| {
                let contiguous = self.max_leaf[first] - self.min_leaf[first] + 1 == size;
                (!contiguous, size, sig)
            })
            .collect();
        // blocks before lanes, then the smallest
        found.sort_unstable();
        for (interleaved, _, sig) in found {
            let Some((parts, top)) = self.contract(v, |w| self.sig[w] == sig) else {
                continue;
            };
            let top = classify(&top);
            if matches!(top, PartsOrder::Other(_)) {
                continue;
            }
            let shift = (self.min_leaf[parts[1]] - self.min_leaf[parts[0]]) as usize;
            let regular = parts.iter().enumerate().all(|(i, &p)| {
                self.min_leaf[p] as usize == self.min_leaf[parts[0]] as usize + i * shift
                    && self.shifted_copy(parts[0], p, (i * shift) as i64)
            });
            return Some(TreeShape::Parts {
                top,
                parts,
                shift: regular.then_some(shift),
                interleaved,
            });
        }
        None
    }

    /// Every covering of `v` by shifted copies of one subtree (at least two copies, each
    /// of two leaves or more), smallest copies first: what a structure-guided guess
    /// instantiates at another size. Unlike [`tiling`](Self::tiling), which names one,
    /// this keeps every regular one, whatever tree combines the copies.
    pub(crate) fn regular_tilings(&self, v: usize) -> Vec<RegularTiling> {
        let total = self.size[v];
        let mut groups: HashMap<u64, (u32, usize)> = HashMap::new();
        for w in self.subtree_nodes(v) {
            if w == v {
                continue;
            }
            let e = groups.entry(self.sig[w]).or_insert((0, w));
            e.0 += 1;
            if self.min_leaf[w] < self.min_leaf[e.1] {
                e.1 = w;
            }
        }
        let mut found: Vec<(u32, u64)> = groups
            .iter()
            .filter(|(_, &(count, first))| count >= 2 && count * self.size[first] == total)
            .map(|(&sig, &(_, first))| (self.size[first], sig))
            .collect();
        found.sort_unstable();
        let mut out = Vec::new();
        for (size, sig) in found {
            let Some((parts, top)) = self.contract(v, |w| self.sig[w] == sig) else {
                continue;
            };
            let shift = (self.min_leaf[parts[1]] - self.min_leaf[parts[0]]) as usize;
            let regular = parts.iter().enumerate().all(|(i, &p)| {
                self.min_leaf[p] as usize == self.min_leaf[parts[0]] as usize + i * shift
                    && self.shifted_copy(parts[0], p, (i * shift) as i64)
            });
            if !regular {
                continue;
            }
            let first = parts[0];
            out.push(RegularTiling {
                first,
                count: parts.len(),
                shift,
                interleaved: self.max_leaf[first] - self.min_leaf[first] + 1 != size,
                top,
            });
        }
        out
    }

    /// A subtree, then leaves absorbed one at a time.
    fn tail(&self, v: usize) -> Option<TreeShape> {
        let t = self.tree;
        let mut leaves = Vec::new();
        let mut w = v;
        loop {
            let kids = t.children(w);
            let [a, b] = kids else { break };
            let (a, b) = (*a as usize, *b as usize);
            match (t.is_leaf(a), t.is_leaf(b)) {
                (true, false) => {
                    leaves.push(a);
                    w = b;
                }
                (false, true) => {
                    leaves.push(b);
                    w = a;
                }
                _ => break,
            }
            if self.chain[w].is_some() {
                return None;
            }
        }
        if leaves.is_empty() || t.is_leaf(w) {
            return None;
        }
        leaves.reverse();
        Some(TreeShape::Tail { base: w, leaves })
    }

    /// Whether `w` adds two contiguous halves (within 40/60) of contiguous leaves.
    fn halves(&self, w: usize) -> bool {
        let kids = self.tree.children(w);
        let contiguous = |x: usize| self.max_leaf[x] - self.min_leaf[x] + 1 == self.size[x];
        match kids {
            [a, b] => {
                let (a, b) = (*a as usize, *b as usize);
                let small = self.size[a].min(self.size[b]);
                contiguous(a) && contiguous(b) && 5 * small >= 2 * self.size[w]
            }
            _ => false,
        }
    }

    /// Pairwise halving down to blocks of unequal sizes (NumPy's halves are rounded to
    /// multiples of 8): the blocks are the first nodes that do not halve.
    fn halving(&self, v: usize) -> Option<TreeShape> {
        if !self.halves(v) {
            return None;
        }
        let t = self.tree;
        let mut blocks = std::collections::HashSet::new();
        let mut stack = vec![v];
        while let Some(w) = stack.pop() {
            if w != v && (t.is_leaf(w) || !self.halves(w)) {
                blocks.insert(w);
                if blocks.len() > 64 {
                    return None;
                }
            } else {
                stack.extend(t.children(w).iter().map(|&c| c as usize));
            }
        }
        if blocks.len() < 3 || blocks.iter().any(|&b| self.size[b] < 4) {
            return None;
        }
        let (parts, top) = self.contract(v, |w| blocks.contains(&w))?;
        Some(TreeShape::Parts {
            top: classify(&top),
            parts,
            shift: None,
            interleaved: false,
        })
    }

    /// Named pieces (chains, pairwise, fused) combined in a named way or by a small tree.
    fn mixed(&self, v: usize) -> Option<TreeShape> {
        if let Some(shape) = self.halving(v) {
            return Some(shape);
        }
        // pieces that are pure shapes first (a blocked sum's blocks), then any named ones
        self.pieces(v, |w| self.pure(w).is_some()).or_else(|| {
            self.pieces(v, |w| {
                self.pure(w).is_some() || self.tiling(w).is_some() || self.tail(w).is_some()
            })
        })
    }

    /// The highest nodes below `v` that `named` accepts, combined by a named or small
    /// tree. The walk gives up past 128 unnamed nodes or 64 pieces, which bounds its cost
    /// at 128 checks of `named` over the subtree.
    fn pieces(&self, v: usize, named: impl Fn(usize) -> bool) -> Option<TreeShape> {
        let t = self.tree;
        let mut frontier = std::collections::HashSet::new();
        let mut stack: Vec<usize> = t.children(v).iter().map(|&c| c as usize).collect();
        let mut unnamed = 0;
        while let Some(w) = stack.pop() {
            if named(w) {
                frontier.insert(w);
                continue;
            }
            unnamed += 1;
            if unnamed > 128 || frontier.len() > 64 {
                return None;
            }
            stack.extend(t.children(w).iter().map(|&c| c as usize));
        }
        let (parts, top) = self.contract(v, |w| frontier.contains(&w))?;
        if parts.len() > 64 || parts.iter().all(|&p| self.tree.is_leaf(p)) {
            return None;
        }
        let top = classify(&top);
        if matches!(top, PartsOrder::Other(_)) && parts.len() > 8 {
            return None;
        }
        let interleaved = parts
            .windows(2)
            .any(|w| self.max_leaf[w[0]] > self.min_leaf[w[1]]);
        Some(TreeShape::Parts {
            top,
            parts,
            shift: None,
            interleaved,
        })
    }
}

/// Name the tree that combines parts.
pub(crate) fn classify(top: &SumTree) -> PartsOrder {
    let c = top.leaf_count();
    if *top == SumTree::sequential(c) {
        return PartsOrder::InOrder;
    }
    if *top == SumTree::reverse(c) {
        return PartsOrder::Reverse;
    }
    if Analysis::new(top).balanced[top.root()] {
        return PartsOrder::Pairwise;
    }
    if top.inner_count() == 1 {
        return PartsOrder::Fused;
    }
    PartsOrder::Other(top.clone())
}

#[cfg(test)]
mod tests;
