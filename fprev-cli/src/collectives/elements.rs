//! `fprev reveal mpi-allreduce --element all`: every element of the message at once, the
//! elements grouped by the order they are summed in (as matrix targets group theirs).
//!
//! Rank 0 runs with `mpi-rank --all-elements`: each probe line holds `count x ranks`
//! values, element after element, and is answered by `count` lines. On this side the
//! launched ranks are a [`Reduction`] with one lane per element (`k` = ranks), which
//! [`fprev::ops::ElementReveal`] reveals.

use std::io::Write;

use fprev::ops::{ElementOrders, Reduction, ReductionShape};
use fprev::target::TargetError;
use fprev::{ProbeFloat, SumTree};

use crate::exec::Exec;

/// The launched ranks, every element answered by one collective call.
pub struct RankElements<T> {
    /// Rank 0's standard input and output.
    pub exec: Exec<T>,
    /// Elements per rank.
    pub count: usize,
    /// Ranks.
    pub ranks: usize,
}

impl<T: ProbeFloat> Reduction<T> for RankElements<T> {
    type Input = T;

    fn shape(&self) -> ReductionShape {
        ReductionShape {
            lanes: self.count,
            k: self.ranks,
            outputs: 1,
        }
    }

    fn eval(&mut self, input: &[T], out: &mut [T]) -> Result<(), TargetError> {
        let last = input.len().saturating_sub(1);
        self.exec
            .pump(
                input.len(),
                out.len(),
                |_, u, p| {
                    if u > 0 {
                        p.push(b' ');
                    }
                    // Rust's shortest round-trip decimal of the (exact) f64 value
                    let _ = write!(p, "{}", input[u].to_f64());
                    if u == last {
                        p.push(b'\n');
                    }
                },
                Some("a probe of every element"),
                out,
            )
            .map_err(|(_, message)| TargetError::new(message))
    }
}

/// `elements` (sorted) as ranges: `0..7, 16..23, 40`.
pub fn ranges(elements: impl IntoIterator<Item = usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    let show = |(a, b): (usize, usize)| {
        if a == b {
            a.to_string()
        } else {
            format!("{a}..{b}")
        }
    };
    for e in elements {
        run = match run {
            Some((a, b)) if e == b + 1 => Some((a, e)),
            Some(r) => {
                parts.push(show(r));
                Some((e, e))
            }
            None => Some((e, e)),
        };
    }
    parts.extend(run.map(show));
    parts.join(", ")
}

/// A chain in words, the ranks in the order they are added: `(1+2), then 3, 4, 5, 6,
/// 7, 0` (a ring's segment starts at another rank than 0); `None` when some addition
/// adds two partial sums.
pub fn chain_words(tree: &SumTree) -> Option<String> {
    let mut later = Vec::new();
    let mut node = tree.root();
    loop {
        if tree.is_leaf(node) {
            return None;
        }
        let c = tree.children(node);
        let [a, b] = c else { return None };
        let (a, b) = (*a as usize, *b as usize);
        match (tree.is_leaf(a), tree.is_leaf(b)) {
            (true, true) => {
                later.reverse();
                let rest: Vec<String> = later.iter().map(|l: &usize| l.to_string()).collect();
                let first = format!("({a}+{b})");
                return Some(if rest.is_empty() {
                    first
                } else {
                    format!("{first}, then {}", rest.join(", "))
                });
            }
            (true, false) => {
                later.push(a);
                node = b;
            }
            (false, true) => {
                later.push(b);
                node = a;
            }
            (false, false) => return None,
        }
    }
}

/// The groups as text: a headline, then per group its element ranges (both ends
/// included), the tree in words and, up to 16 ranks, the tree itself.
pub fn groups_text(orders: &ElementOrders, ranks: usize) -> String {
    let count = orders.shape.lanes;
    let mut out = if orders.is_uniform() {
        format!("all {count} elements share one order ({ranks} ranks):\n")
    } else {
        format!(
            "{} orders among {count} elements ({ranks} ranks):\n",
            orders.groups.len()
        )
    };
    for g in &orders.groups {
        let tree = &g.tree;
        let text = if tree.leaf_count() <= 16 {
            format!(": {tree}")
        } else {
            String::new()
        };
        let words = chain_words(tree).map_or_else(|| tree.describe(), |c| format!("chain {c}"));
        out += &format!(
            "elements {} ({}): {words}{text}\n",
            ranges(g.elements.iter().map(|e| e.lane)),
            g.elements.len(),
        );
    }
    if !orders.unresolved.is_empty() {
        out += &format!(
            "elements {} unresolved\n",
            ranges(orders.unresolved.iter().map(|e| e.lane))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_shown_as_ranges() {
        assert_eq!(ranges([0, 1, 2, 5, 7, 8]), "0..2, 5, 7..8");
        assert_eq!(ranges([3]), "3");
        assert_eq!(ranges([]), "");
    }

    #[test]
    fn chains_are_told_by_the_order_ranks_are_added() {
        // a ring segment's chain: it starts at rank 5
        let ring: SumTree = "(((((0+((5+6)+7))+1)+2)+3)+4)".parse().unwrap();
        assert_eq!(chain_words(&ring).unwrap(), "(5+6), then 7, 0, 1, 2, 3, 4");
        assert_eq!(chain_words(&SumTree::sequential(2)).unwrap(), "(0+1)");
        assert_eq!(chain_words(&SumTree::pairwise(4)), None);
    }
}
