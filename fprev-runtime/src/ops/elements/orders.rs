//! What an element reveal finds: the output elements grouped by summation tree.

use crate::ops::ReductionShape;
use crate::reveal::FittedFused;
use crate::tree::SumTree;

/// One output element: lane (row of `C`) and output (column of `C`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Element {
    /// The lane (row).
    pub lane: usize,
    /// The output within the lane (column).
    pub output: usize,
}

impl std::fmt::Display for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}, {}]", self.lane, self.output)
    }
}

/// Elements that share one summation tree.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderGroup {
    /// The tree.
    pub tree: SumTree,
    /// The elements, in row-major order.
    pub elements: Vec<Element>,
    /// The arithmetic measured at the tree's fused nodes, as
    /// [`RevealReport::arithmetic`](crate::reveal::RevealReport::arithmetic) gives it for
    /// one reveal: the block-FMA model the verification fitted to this group's random
    /// inputs. `None` for a tree of plain additions, and for a fused tree that was found
    /// without the fit (verification off).
    pub arithmetic: Option<FittedFused>,
}

/// The orders of all output elements of a reduction.
///
/// ```
/// let g = fprev::ops::gemv(8, 16, |a: &[f64], x: &[f64], y: &mut [f64]| {
///     for (row, yi) in a.chunks(16).zip(y.iter_mut()) {
///         *yi = row.iter().zip(x).map(|(a, b)| a * b).sum();
///     }
/// });
/// let o = fprev::ops::ElementReveal::new().run(g)?;
/// assert_eq!(o.to_string().lines().next(), Some("all 8 x 1 elements share one order (k = 16):"));
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ElementOrders {
    /// The operation's shape.
    pub shape: ReductionShape,
    /// Groups of elements with one tree each, the largest first.
    pub groups: Vec<OrderGroup>,
    /// Elements left unrevealed after `max_groups` rounds (normally empty).
    pub unresolved: Vec<Element>,
    /// Calls of the operation.
    pub calls: u64,
    /// Probes answered (counting each probe once, however many lanes answered it).
    pub probes: u64,
    /// Whether masks and units were spread over both operands of the products (FP8
    /// operands, whose range alone cannot swamp a sum): each probe then needs its own
    /// row of `A` and its own column of `B`, so a call answers at most
    /// `min(lanes, outputs)` probes (one for a gemv or a dot product).
    pub operands_spread: bool,
}

impl ElementOrders {
    /// Whether every element sums in one order.
    pub fn is_uniform(&self) -> bool {
        self.groups.len() == 1 && self.unresolved.is_empty()
    }

    /// The tree of `element`, if revealed.
    pub fn tree_of(&self, element: Element) -> Option<&SumTree> {
        self.groups
            .iter()
            .find(|g| g.elements.binary_search(&element).is_ok())
            .map(|g| &g.tree)
    }
}

impl std::fmt::Display for ElementOrders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.shape;
        if self.is_uniform() {
            writeln!(
                f,
                "all {} x {} elements share one order (k = {}):",
                s.lanes, s.outputs, s.k
            )?;
            return writeln!(f, "{}", self.groups[0].tree);
        }
        writeln!(
            f,
            "{} orders among {} x {} elements (k = {}):",
            self.groups.len(),
            s.lanes,
            s.outputs,
            s.k
        )?;
        for (i, g) in self.groups.iter().enumerate() {
            let shown: Vec<String> = g.elements.iter().take(6).map(|e| e.to_string()).collect();
            let more = if g.elements.len() > 6 { " ..." } else { "" };
            writeln!(
                f,
                "group {i}: {} elements {}{more}",
                g.elements.len(),
                shown.join(" ")
            )?;
            writeln!(f, "{}", g.tree)?;
        }
        if !self.unresolved.is_empty() {
            writeln!(f, "{} elements unresolved", self.unresolved.len())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orders(groups: Vec<OrderGroup>, unresolved: Vec<Element>) -> ElementOrders {
        ElementOrders {
            shape: ReductionShape {
                lanes: 2,
                k: 3,
                outputs: 1,
            },
            groups,
            unresolved,
            calls: 0,
            probes: 0,
            operands_spread: false,
        }
    }

    #[test]
    fn elements_are_shown_as_lane_and_output() {
        assert_eq!(Element { lane: 2, output: 5 }.to_string(), "[2, 5]");
    }

    #[test]
    fn each_element_finds_its_group_tree() {
        let (a, b) = (
            Element { lane: 0, output: 0 },
            Element { lane: 1, output: 0 },
        );
        let o = orders(
            vec![
                OrderGroup {
                    tree: SumTree::sequential(3),
                    elements: vec![a],
                    arithmetic: None,
                },
                OrderGroup {
                    tree: SumTree::reverse(3),
                    elements: vec![b],
                    arithmetic: None,
                },
            ],
            Vec::new(),
        );
        assert!(!o.is_uniform());
        assert_eq!(o.tree_of(b), Some(&SumTree::reverse(3)));
        let shown = o.to_string();
        assert!(
            shown.starts_with("2 orders among 2 x 1 elements (k = 3):"),
            "{shown}"
        );
        assert!(shown.contains("group 1: 1 elements [1, 0]"), "{shown}");
    }

    #[test]
    fn unresolved_elements_keep_the_orders_from_being_uniform() {
        let a = Element { lane: 0, output: 0 };
        let group = OrderGroup {
            tree: SumTree::sequential(3),
            elements: vec![a],
            arithmetic: None,
        };
        let o = orders(vec![group], vec![Element { lane: 1, output: 0 }]);
        assert!(!o.is_uniform());
        assert_eq!(o.tree_of(Element { lane: 1, output: 0 }), None);
        assert!(o.to_string().ends_with("1 elements unresolved\n"));
    }
}
