//! The words of [`SumTree::describe`]: the phrase for each shape that the analysis in
//! [`describe`](super) finds, part numbers as ranges, and the names of the trees that
//! combine parts.

use super::{Analysis, ChainStride, PartsOrder, TreeShape};
use crate::tree::SumTree;

impl<'t> Analysis<'t> {
    /// A phrase for the subtree at `v`; `room` bounds the nesting.
    pub(crate) fn phrase(&self, v: usize, room: usize) -> String {
        let shape = self.shape(v);
        match shape {
            TreeShape::Leaf => "1 value".into(),
            TreeShape::Chain { len, step } => chain_phrase(len, step),
            TreeShape::Pairwise { len } => format!("pairwise over {len}"),
            TreeShape::Fused { len } => format!("one fused add of {len}"),
            TreeShape::FusedChain { .. } => fused_chain_phrase(&shape),
            TreeShape::Irregular => self.stats_phrase(v),
            _ if room == 0 => self.stats_phrase(v),
            TreeShape::Tail { base, leaves } => {
                let (a, b) = (leaves[0], leaves[leaves.len() - 1]);
                let order = if leaves.windows(2).all(|w| w[1] == w[0] + 1) {
                    format!("in order ({a}..={b})")
                } else {
                    "one at a time".into()
                };
                format!(
                    "{}; then {} more added {order}",
                    self.phrase(base, room - 1),
                    leaves.len()
                )
            }
            TreeShape::Parts {
                top,
                parts,
                shift,
                interleaved,
            } => self.parts_phrase(&top, &parts, shift, interleaved, room),
        }
    }

    fn parts_phrase(
        &self,
        top: &PartsOrder,
        parts: &[usize],
        shift: Option<usize>,
        interleaved: bool,
        room: usize,
    ) -> String {
        let c = parts.len();
        let how = combiner_phrase(top);
        if let (Some(s), true) = (shift, interleaved) {
            let first = parts[0];
            if let Some(TreeShape::Chain {
                len,
                step: ChainStride::By(stride),
            }) = self.pure(first)
            {
                if stride > 0 {
                    return format!(
                        "{c} lanes, stride {stride}, {len} in order; lanes combined {how}"
                    );
                }
            }
            return format!(
                "{c} interleaved parts of {}, each shifted by {s}, combined {how}; each part {}",
                self.size[first],
                self.phrase(first, room - 1)
            );
        }
        let noun = if interleaved { "parts" } else { "blocks" };
        let sizes: Vec<u32> = parts.iter().map(|&p| self.size[p]).collect();
        let of = if sizes.iter().all(|&s| s == sizes[0]) {
            format!("{c} {noun} of {}", sizes[0])
        } else if c <= 8 {
            let list: Vec<String> = sizes.iter().map(u32::to_string).collect();
            format!("{c} {noun} of {}", list.join(", "))
        } else {
            let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
            format!(
                "{c} {noun} of {}..={} values",
                lo.unwrap_or(&0),
                hi.unwrap_or(&0)
            )
        };
        let head = match top {
            PartsOrder::Pairwise if c > 2 => format!("pairwise over {of}"),
            PartsOrder::Fused => format!("one fused add over {of}"),
            _ => format!("{of}, combined {how}"),
        };
        if shift.is_some() {
            let part = noun.trim_end_matches('s');
            return format!("{head}; each {part} {}", self.phrase(parts[0], room - 1));
        }
        // different parts: name each kind once, by part numbers
        let mut kinds: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, &p) in parts.iter().enumerate() {
            let words = match self.pure(p) {
                Some(TreeShape::Chain { step, .. }) => chain_kind(step).to_string(),
                Some(TreeShape::Pairwise { .. }) => "pairwise".into(),
                Some(TreeShape::Fused { .. }) => "one fused add".into(),
                Some(s @ TreeShape::FusedChain { .. }) => fused_chain_phrase(&s),
                Some(TreeShape::Leaf) => "1 value".into(),
                _ if room == 1 => "a named shape".into(),
                _ => self.phrase(p, room - 1),
            };
            match kinds.iter_mut().find(|(w, _)| *w == words) {
                Some((_, ids)) => ids.push(i),
                None => kinds.push((words, vec![i])),
            }
        }
        if let [(words, _)] = &kinds[..] {
            return format!("{head}; each {} {words}", noun.trim_end_matches('s'));
        }
        let listed: Vec<String> = kinds
            .iter()
            .map(|(words, ids)| {
                let noun = if ids.len() == 1 {
                    noun.trim_end_matches('s')
                } else {
                    noun
                };
                format!("{noun} {} [{words}]", numbers(ids))
            })
            .collect();
        format!("{head}; {}", listed.join("; "))
    }

    fn stats_phrase(&self, v: usize) -> String {
        let t = self.tree;
        let nodes = self.subtree_nodes(v);
        let fan = nodes
            .iter()
            .map(|&w| t.children(w).len())
            .max()
            .unwrap_or(0);
        let split: Vec<String> = t
            .children(v)
            .iter()
            .map(|&c| self.size[c as usize].to_string())
            .collect();
        let mut s = format!(
            "irregular: {} values, {} roundings, depth {}",
            self.size[v],
            nodes.len(),
            self.depth[v]
        );
        if fan > 2 {
            s += &format!(", fan-in up to {fan}");
        }
        if !split.is_empty() {
            s += &format!(", the last rounding adds parts of {}", split.join(" + "));
        }
        s
    }
}

/// Part numbers as ranges: `1-2, 5`.
fn numbers(ids: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            format!("{}", ids[i] + 1)
        } else {
            format!("{}-{}", ids[i] + 1, ids[j] + 1)
        });
        i = j + 1;
    }
    out.join(", ")
}

pub(crate) fn combiner_phrase(top: &PartsOrder) -> String {
    match top {
        PartsOrder::InOrder => "in order".into(),
        PartsOrder::Reverse => "in reverse order".into(),
        PartsOrder::Pairwise => "pairwise".into(),
        PartsOrder::Fused => "by one fused add".into(),
        PartsOrder::Other(t) if t.leaf_count() <= 8 => format!("as {t}"),
        PartsOrder::Other(t) => format!("irregularly (depth {})", t.stats().depth),
    }
}

fn chain_kind(step: ChainStride) -> String {
    match step {
        ChainStride::By(1) => "in order".into(),
        ChainStride::By(-1) => "in reverse order".into(),
        ChainStride::By(s) if s > 0 => format!("in order, stride {s}"),
        ChainStride::By(s) => format!("in reverse order, stride {}", -s),
        ChainStride::Irregular => "one at a time in an irregular order".into(),
    }
}

/// Words for a [`TreeShape::FusedChain`].
pub(crate) fn fused_chain_phrase(shape: &TreeShape) -> String {
    let TreeShape::FusedChain {
        len,
        blocks,
        first,
        width,
    } = *shape
    else {
        return String::new();
    };
    format!(
        "a chain of {blocks} fused adds over {len} values: the first over {first}, each later one adding the running value and up to {width} more (a block-FMA unit, {}-way nodes)",
        width + 1
    )
}

pub(crate) fn chain_phrase(len: usize, step: ChainStride) -> String {
    match step {
        ChainStride::Irregular => format!("{len} added one at a time in an irregular order"),
        _ => format!("{len} {}", chain_kind(step)),
    }
}

impl SumTree {
    /// The tree's structure in words, found from its repetitions: sequential and reverse
    /// chains, strided lanes, balanced pairwise halving, fused multi-term adds, and blocks
    /// that repeat one shape shifted along the input. What matches none of these is
    /// summarized by its counts (values, roundings, depth, fan-in).
    ///
    /// Linear in the tree's size for the shapes it names; meant for trees too large to
    /// read as text or as a full picture.
    ///
    /// ```
    /// use fprev::SumTree;
    /// assert_eq!(SumTree::sequential(1000).describe(), "1000 in order");
    /// assert_eq!(
    ///     SumTree::numpy_pairwise(1024).describe(),
    ///     "pairwise over 8 blocks of 128; each block 8 lanes, stride 8, 16 in order; \
    ///      lanes combined pairwise"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        if self.leaf_count() == 0 {
            return "no values (the empty sum)".to_string();
        }
        Analysis::new(self).phrase(self.root(), 4)
    }
}
