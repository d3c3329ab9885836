//! The Graphviz DOT form of a tree.

use super::SumTree;

impl SumTree {
    /// Graphviz DOT: leaves as boxes in input order, `+` nodes (labelled `+k` when fused).
    ///
    /// ```
    /// let dot = fprev::SumTree::sequential(3).to_dot();
    /// assert!(dot.starts_with("digraph") && dot.contains("n3 -> 0"));
    /// ```
    pub fn to_dot(&self) -> String {
        use std::fmt::Write;
        let n = self.leaf_count();
        let mut s = String::from("digraph sumtree {\n  node [fontname=\"monospace\"];\n");
        s.push_str("  { rank=same; ");
        for i in 0..n {
            let _ = write!(s, "{i} [shape=box]; ");
        }
        s.push_str("}\n");
        for i in 0..n.saturating_sub(1) {
            let _ = writeln!(s, "  {i} -> {} [style=invis];", i + 1);
        }
        for k in 0..self.inner_count() {
            let kids = self.children(n + k);
            let label = if kids.len() == 2 {
                "+".to_string()
            } else {
                format!("+{}", kids.len())
            };
            let _ = writeln!(s, "  n{} [shape=circle,label=\"{label}\"];", n + k);
            for &c in kids {
                let c = c as usize;
                if c < n {
                    let _ = writeln!(s, "  n{} -> {c};", n + k);
                } else {
                    let _ = writeln!(s, "  n{} -> n{c};", n + k);
                }
            }
        }
        s.push_str("}\n");
        s
    }
}
