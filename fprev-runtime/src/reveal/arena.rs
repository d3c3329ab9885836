//! The tree under construction: inner nodes appended as they are found, with parents,
//! sizes and a flag for fused nodes that truncate (hardware Tensor-Core style) rather than
//! round an exact sum once.

use crate::tree::SumTree;

pub(crate) struct Arena {
    pub n: usize,
    kids: Vec<Kids>,
    /// Fused node whose probes lose every unit under it (aligned-and-truncated adders).
    pub trunc: Vec<bool>,
    pub parent: Vec<u32>,
    pub size: Vec<u32>,
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
    pub fn new(n: usize) -> Arena {
        Arena {
            n,
            kids: Vec::new(),
            trunc: Vec::new(),
            parent: vec![NONE; n],
            size: vec![1; n],
        }
    }

    pub fn node(&mut self, kids: &[u32], trunc: bool) -> u32 {
        let id = (self.n + self.kids.len()) as u32;
        let size = kids.iter().map(|&c| self.size[c as usize]).sum();
        for &c in kids {
            self.parent[c as usize] = id;
        }
        self.kids.push(match *kids {
            [a, b] => Kids::Pair([a, b]),
            _ => Kids::Many(kids.to_vec()),
        });
        self.trunc.push(trunc);
        self.parent.push(NONE);
        self.size.push(size);
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

    /// The canonical tree hanging from `root` (only reachable nodes).
    pub fn to_tree(&self, root: u32) -> SumTree {
        // post-order over reachable inner nodes, renumbered densely
        let mut order: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, usize)> = vec![(root, 0)];
        while let Some(&mut (v, ref mut idx)) = stack.last_mut() {
            if (v as usize) < self.n {
                stack.pop();
                continue;
            }
            let kids = self.kids(v);
            if *idx < kids.len() {
                let c = kids[*idx];
                *idx += 1;
                stack.push((c, 0));
            } else {
                order.push(v);
                stack.pop();
            }
        }
        let mut new_id = vec![0u32; self.kids.len()];
        for (k, &v) in order.iter().enumerate() {
            new_id[v as usize - self.n] = (self.n + k) as u32;
        }
        let mut starts = Vec::with_capacity(order.len() + 1);
        starts.push(0u32);
        let mut kids = Vec::with_capacity(2 * order.len());
        for &v in &order {
            for &c in self.kids(v) {
                kids.push(if (c as usize) < self.n {
                    c
                } else {
                    new_id[c as usize - self.n]
                });
            }
            starts.push(kids.len() as u32);
        }
        SumTree::from_flat(self.n, starts, kids)
    }
}
