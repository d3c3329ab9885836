//! The tree under construction: inner nodes appended as they are found, with parents,
//! sizes and a flag for fused nodes that truncate (hardware Tensor-Core style) rather than
//! round an exact sum once.

use super::error::RevealError;
use super::memory;
use crate::tree::SumTree;

pub(crate) struct Arena {
    pub n: usize,
    kids: Vec<Kids>,
    /// Fused node whose probes lose every unit under it (aligned-and-truncated adders).
    pub trunc: Vec<bool>,
    pub parent: Vec<u32>,
    pub size: Vec<u32>,
    /// Smallest leaf under every node, which orders children canonically.
    pub least: Vec<u32>,
    /// Largest leaf under every node.
    pub most: Vec<u32>,
    /// Whether every node under (and at) a node is binary.
    pub binary: Vec<bool>,
    /// With [`hash_leaf_sets`](Self::hash_leaf_sets): every node's [`LeafHash`].
    pub hash: Vec<u64>,
    /// `r^-i` for every leaf `i`, with the hashes.
    pub unshift: Vec<u64>,
}

/// A hash of leaf sets that moves with a shift: leaf `i` hashes to `r^i` modulo the
/// Mersenne prime `2^61 - 1`, a set to the sum of its leaves', so a node's is the sum of
/// its children's (kept by [`Arena::node`], no leaf walk) and multiplying by `r^-lo`
/// gives the set's hash shifted to start at 0. Two different sets of at most `n` leaves
/// agree with probability at most `n / 2^61` over `r`; the template keys built on it only
/// ever cost a failed proof when they collide.
pub(crate) struct LeafHash;

impl LeafHash {
    const P: u64 = (1 << 61) - 1;
    /// A fixed base (any residue away from 0 and 1 works; keys are fprev's own offsets).
    const R: u64 = 0x0A5C_93E1_7B24_D6F1 % Self::P;

    pub fn add(a: u64, b: u64) -> u64 {
        let s = a + b;
        if s >= Self::P {
            s - Self::P
        } else {
            s
        }
    }

    pub fn mul(a: u64, b: u64) -> u64 {
        let x = u128::from(a) * u128::from(b);
        Self::add((x as u64) & Self::P, (x >> 61) as u64)
    }

    /// `(r^i, r^-i)` for `i` in `0..n`.
    fn powers(n: usize) -> (Vec<u64>, Vec<u64>) {
        // r^-1 = r^(P - 2) (Fermat)
        let (mut inv, mut base, mut e) = (1u64, Self::R, Self::P - 2);
        while e > 0 {
            if e & 1 == 1 {
                inv = Self::mul(inv, base);
            }
            base = Self::mul(base, base);
            e >>= 1;
        }
        let (mut up, mut down) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut u, mut d) = (1u64, 1u64);
        for _ in 0..n {
            up.push(u);
            down.push(d);
            u = Self::mul(u, Self::R);
            d = Self::mul(d, inv);
        }
        (up, down)
    }
}

pub(crate) const NONE: u32 = u32::MAX;

/// Children of one inner node: most nodes are binary, and keeping those inline spares an
/// allocation per node (a visible share of a cheap target's reveal).
enum Kids {
    Pair([u32; 2]),
    Many(Vec<u32>),
}

impl Kids {
    fn as_slice(&self) -> &[u32] {
        match self {
            Kids::Pair(p) => p,
            Kids::Many(v) => v,
        }
    }
}

impl Arena {
    /// An arena for `n` leaves (small sizes the engine picks itself; user sizes go
    /// through [`try_new`](Self::try_new)).
    pub fn new(n: usize) -> Arena {
        Self::try_new(n).unwrap_or_else(|e| panic!("{e}"))
    }

    /// An arena for `n` leaves with room for a binary tree's `n - 1` inner nodes up
    /// front (no copies while growing), every buffer reserved fallibly.
    pub fn try_new(n: usize) -> Result<Arena, RevealError> {
        let nodes = n.checked_mul(2).ok_or(RevealError::OutOfMemory {
            n,
            what: "the tree's nodes".into(),
            bytes: u64::MAX,
            budget: None,
        })?;
        let per_node = |leaf: &dyn Fn(usize) -> u32| -> Result<Vec<u32>, RevealError> {
            let mut v = memory::with_capacity(nodes, n, "the tree's nodes")?;
            v.extend((0..n).map(leaf));
            Ok(v)
        };
        let mut binary = memory::with_capacity(nodes, n, "the tree's nodes")?;
        binary.resize(n, true);
        Ok(Arena {
            n,
            kids: memory::with_capacity(n, n, "the tree's children")?,
            trunc: memory::with_capacity(n, n, "the tree's nodes")?,
            parent: per_node(&|_| NONE)?,
            size: per_node(&|_| 1)?,
            least: per_node(&|i| i as u32)?,
            most: per_node(&|i| i as u32)?,
            binary,
            hash: Vec::new(),
            unshift: Vec::new(),
        })
    }

    /// Keep a [`LeafHash`] of every node's leaf set from now on (the search's templates
    /// key on it).
    pub fn hash_leaf_sets(&mut self) {
        let (mut up, down) = LeafHash::powers(self.n);
        up.reserve(self.n);
        for k in 0..self.kids.len() {
            let h = self.kids[k]
                .as_slice()
                .iter()
                .fold(0, |h, &c| LeafHash::add(h, up[c as usize]));
            up.push(h);
        }
        self.hash = up;
        self.unshift = down;
    }

    pub fn node(&mut self, kids: &[u32], trunc: bool) -> u32 {
        if let [a, b] = *kids {
            return self.pair(a, b, trunc);
        }
        let id = (self.n + self.kids.len()) as u32;
        let size = kids.iter().map(|&c| self.size[c as usize]).sum();
        let least = kids.iter().map(|&c| self.least[c as usize]).min();
        let most = kids.iter().map(|&c| self.most[c as usize]).max();
        if !self.hash.is_empty() {
            let h = kids
                .iter()
                .fold(0, |h, &c| LeafHash::add(h, self.hash[c as usize]));
            self.hash.push(h);
        }
        for &c in kids {
            self.parent[c as usize] = id;
        }
        self.kids.push(Kids::Many(kids.to_vec()));
        self.trunc.push(trunc);
        self.parent.push(NONE);
        self.size.push(size);
        self.least.push(least.unwrap_or(NONE));
        self.most.push(most.unwrap_or(0));
        self.binary.push(false);
        id
    }

    /// [`node`](Self::node) for two children, the common case, without the loops.
    fn pair(&mut self, a: u32, b: u32, trunc: bool) -> u32 {
        let id = (self.n + self.kids.len()) as u32;
        let (x, y) = (a as usize, b as usize);
        if !self.hash.is_empty() {
            self.hash.push(LeafHash::add(self.hash[x], self.hash[y]));
        }
        self.parent[x] = id;
        self.parent[y] = id;
        self.kids.push(Kids::Pair([a, b]));
        self.trunc.push(trunc);
        self.parent.push(NONE);
        self.size.push(self.size[x] + self.size[y]);
        self.least.push(self.least[x].min(self.least[y]));
        self.most.push(self.most[x].max(self.most[y]));
        self.binary.push(self.binary[x] && self.binary[y]);
        id
    }

    /// Children of an inner node.
    pub fn kids(&self, node: u32) -> &[u32] {
        self.kids[node as usize - self.n].as_slice()
    }

    /// Add `child` under `node` (growing a fused node).
    pub fn adopt(&mut self, node: u32, child: u32) {
        self.parent[child as usize] = node;
        self.size[node as usize] += self.size[child as usize];
        let (v, c) = (node as usize, child as usize);
        self.least[v] = self.least[v].min(self.least[c]);
        self.most[v] = self.most[v].max(self.most[c]);
        self.binary[v] = false;
        if !self.hash.is_empty() {
            self.hash[v] = LeafHash::add(self.hash[v], self.hash[c]);
        }
        let kids = &mut self.kids[node as usize - self.n];
        match kids {
            Kids::Pair([a, b]) => *kids = Kids::Many(vec![*a, *b, child]),
            Kids::Many(v) => v.push(child),
        }
    }

    /// Move every child of `from` under `into`; `from` is left empty and unreachable.
    pub fn absorb(&mut self, into: u32, from: u32) {
        let moved = std::mem::replace(
            &mut self.kids[from as usize - self.n],
            Kids::Many(Vec::new()),
        );
        for &c in moved.as_slice() {
            self.adopt(into, c);
        }
        self.size[from as usize] = 0;
    }

    pub fn is_trunc(&self, node: u32) -> bool {
        (node as usize) >= self.n && self.trunc[node as usize - self.n]
    }

    /// The child of `ancestor` on the path up from `leaf`.
    pub fn child_towards(&self, ancestor: u32, leaf: usize) -> Option<u32> {
        let mut v = leaf as u32;
        loop {
            let p = self.parent[v as usize];
            if p == NONE {
                return None;
            }
            if p == ancestor {
                return Some(v);
            }
            v = p;
        }
    }

    pub fn leaves_under(&self, node: u32) -> Vec<usize> {
        let mut out = Vec::new();
        let mut stack = vec![node];
        while let Some(v) = stack.pop() {
            if (v as usize) < self.n {
                out.push(v as usize);
            } else {
                stack.extend_from_slice(self.kids(v));
            }
        }
        out
    }

    /// Lost count predicted for a probe: `|C_i| + |C_j|` below an exactly rounding LCA,
    /// the whole LCA below a truncating one (and for binary nodes both agree).
    pub fn predicted_lost(&self, i: usize, j: usize) -> Option<u32> {
        let depth = |mut v: u32| {
            let mut d = 0;
            while self.parent[v as usize] != NONE {
                v = self.parent[v as usize];
                d += 1;
            }
            d
        };
        let (mut a, mut b) = (i as u32, j as u32);
        let (mut da, mut db) = (depth(a), depth(b));
        let (mut ca, mut cb) = (a, b);
        while da > db {
            ca = a;
            a = self.parent[a as usize];
            da -= 1;
        }
        while db > da {
            cb = b;
            b = self.parent[b as usize];
            db -= 1;
        }
        while a != b {
            ca = a;
            cb = b;
            a = self.parent[a as usize];
            b = self.parent[b as usize];
            if a == NONE || b == NONE {
                return None;
            }
        }
        if self.is_trunc(a) {
            Some(self.size[a as usize])
        } else {
            Some(self.size[ca as usize] + self.size[cb as usize])
        }
    }

    /// The canonical tree hanging from `root` (only reachable nodes), emitted directly in
    /// canonical order: a post-order walk visiting children by smallest leaf numbers nodes
    /// as [`SumTree`] does, so nothing is renumbered or re-sorted afterwards (that took
    /// as long as 150 calls of a cheap target at n = 1024).
    pub fn to_tree(&self, root: u32) -> SumTree {
        let n = self.n;
        let mut child_start = Vec::with_capacity(self.kids.len() + 1);
        child_start.push(0u32);
        let mut children: Vec<u32> = Vec::with_capacity(2 * self.kids.len());
        // canonical ids of finished subtrees, a node's children on top when it finishes
        let mut done: Vec<u32> = Vec::new();
        // children of the nodes on the path, in canonical order; a stack entry is
        // (node, where its children start in `order`, how many were visited)
        let mut order: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, usize, usize)> = Vec::new();
        let enter = |v: u32, order: &mut Vec<u32>, stack: &mut Vec<(u32, usize, usize)>| {
            let start = order.len();
            order.extend_from_slice(self.kids(v));
            let kids = &mut order[start..];
            if let [a, b] = kids {
                if self.least[*b as usize] < self.least[*a as usize] {
                    std::mem::swap(a, b);
                }
            } else {
                kids.sort_unstable_by_key(|&c| self.least[c as usize]);
            }
            stack.push((v, start, 0));
        };
        if (root as usize) >= n {
            enter(root, &mut order, &mut stack);
        }
        while let Some(&mut (_, start, ref mut seen)) = stack.last_mut() {
            if start + *seen < order.len() {
                let c = order[start + *seen];
                *seen += 1;
                if (c as usize) < n {
                    done.push(c);
                } else {
                    enter(c, &mut order, &mut stack);
                }
                continue;
            }
            let k = order.len() - start;
            children.extend(done.drain(done.len() - k..));
            child_start.push(children.len() as u32);
            done.push((n + child_start.len() - 2) as u32);
            order.truncate(start);
            stack.pop();
        }
        SumTree::from_canonical(n, child_start, children)
    }
}
