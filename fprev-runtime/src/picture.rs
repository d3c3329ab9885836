//! Pictures of summation trees as SVG, drawn the way the FPRev papers draw them.
//!
//! Leaves sit in input order along the bottom; every rounding is a `+` node above its
//! children; a fused multi-term adder is a wide box joined by all its children, so k-ary
//! nodes are visibly k-ary. Long accumulation chains (`((a+b)+c)+d...`, one accumulator
//! absorbing leaf after leaf) are squeezed into one sloped, labelled edge that every
//! absorbed leaf joins where it is added, so a sequential sum of 1024 values is one line
//! rather than 1023 levels. No graphviz needed: the SVG is written directly.
//!
//! Large trees (over 64 leaves) that [`SumTree::describe`](crate::SumTree::describe)
//! splits into parts, and trees with strided lanes, are drawn by their structure instead:
//! the small tree that combines the parts over one box per part, a part repeated with a
//! shift drawn once under a heading such as "x8, shifted by 128", and each strided lane
//! as a named row marking the inputs it absorbs. [`Picture::full`] draws every rounding.
//!
//! ```
//! let tree: fprev::SumTree = "(((0+1)+2)+(3+4+5))".parse()?;
//! let svg = fprev::picture::svg(&tree);
//! assert!(svg.starts_with("<svg") && svg.contains("fused 3"));
//! # Ok::<(), fprev::tree::TreeError>(())
//! ```

use std::fmt::Write;

use crate::tree::SumTree;

mod condensed;

/// Drawing options.
///
/// ```
/// let t = fprev::SumTree::sequential(64);
/// let svg = fprev::picture::Picture::new().title("Iterator::sum, f32, n = 64").render(&t);
/// assert!(svg.contains("Iterator::sum") && svg.contains("63 adds in order"));
/// ```
#[derive(Clone, Debug)]
pub struct Picture {
    title: Option<String>,
    chain_min: usize,
    full: bool,
}

impl Default for Picture {
    fn default() -> Self {
        Self::new()
    }
}

/// Draw `tree` with the default options.
pub fn svg(tree: &SumTree) -> String {
    Picture::new().render(tree)
}

impl Picture {
    /// No title; chains of 4 or more additions are squeezed; trees over 64 leaves that
    /// [`SumTree::describe`] splits into parts, and trees with strided lanes, are drawn by
    /// their structure.
    pub fn new() -> Self {
        Picture {
            title: None,
            chain_min: 4,
            full: false,
        }
    }

    /// Draw every rounding even when the tree is large (default: a tree over 64 leaves
    /// made of named parts is drawn as the tree over its parts, each repeated part once).
    ///
    /// ```
    /// let t = fprev::SumTree::numpy_pairwise(1024);
    /// let condensed = fprev::picture::Picture::new().render(&t);
    /// assert!(condensed.contains("x8, shifted by 128"));
    /// let full = fprev::picture::Picture::new().full(true).render(&t);
    /// assert!(full.len() > condensed.len());
    /// ```
    pub fn full(mut self, full: bool) -> Self {
        self.full = full;
        self
    }

    /// A caption above the tree.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Squeeze accumulation chains of at least `adds` additions (default 4; 0 or 1
    /// never squeezes).
    pub fn chain_min(mut self, adds: usize) -> Self {
        self.chain_min = adds;
        self
    }

    /// The SVG document.
    pub fn render(&self, tree: &SumTree) -> String {
        if !self.full {
            if let Some(svg) = condensed::render(tree, self.title.as_deref()) {
                return svg;
            }
        }
        PictureLayout::new(tree, self.chain_min).svg(tree, self.title.as_deref())
    }
}

struct PictureLayout {
    x: Vec<f64>,
    level: Vec<f64>,
    /// For a squeezed chain's top node: the chain's bottom node and its length.
    chain: Vec<Option<(usize, usize)>>,
    /// Nodes drawn inside a squeezed chain (no circle of their own).
    hidden: Vec<bool>,
    max_level: f64,
}

impl PictureLayout {
    fn new(t: &SumTree, chain_min: usize) -> PictureLayout {
        let n = t.leaf_count();
        let total = n + t.inner_count();
        let is_link = |v: usize| -> Option<usize> {
            // v continues a chain from its one inner, binary child when the other is a leaf
            let kids = t.children(v);
            if kids.len() != 2 {
                return None;
            }
            let (a, b) = (kids[0] as usize, kids[1] as usize);
            match (t.is_leaf(a), t.is_leaf(b)) {
                (true, false) if t.children(b).len() == 2 => Some(b),
                (false, true) if t.children(a).len() == 2 => Some(a),
                _ => None,
            }
        };
        let parents = t.parents();
        // chain length ending at each node (1 = just this addition)
        let mut run = vec![0usize; total];
        let mut x = vec![0.0; total];
        let mut level = vec![0.0; total];
        for (i, xi) in x.iter_mut().enumerate().take(n) {
            *xi = i as f64;
        }
        let mut chain = vec![None; total];
        let mut hidden = vec![false; total];
        // top of each maximal chain: a node that links down and whose parent does not
        // continue from it
        for v in n..total {
            run[v] = match is_link(v) {
                Some(c) => run[c] + 1,
                None => 1,
            };
        }
        let squeeze = chain_min >= 2;
        let continues =
            |v: usize| parents[v] != u32::MAX && is_link(parents[v] as usize) == Some(v);
        // top of the chain each node belongs to; parents come after children in post-order
        let mut top_of: Vec<usize> = (0..total).collect();
        for v in (n..total).rev() {
            if continues(v) {
                top_of[v] = top_of[parents[v] as usize];
            }
        }
        let mut bottom_of_chain = n;
        for v in n..total {
            let kids = t.children(v);
            let parent_continues = continues(v);
            let in_long_chain = squeeze && run[top_of[v]] >= chain_min;
            if in_long_chain {
                // bottom of the chain: placed normally; later links rise by a fraction
                let leaf_kid = kids.iter().map(|&c| c as usize).find(|&c| t.is_leaf(c));
                match is_link(v) {
                    Some(c) if run[v] > 1 => {
                        x[v] = leaf_kid.map_or(x[c], |l| x[l]);
                        level[v] = level[c];
                        hidden[v] = parent_continues;
                    }
                    _ => {
                        x[v] = kids.iter().map(|&c| x[c as usize]).sum::<f64>() / kids.len() as f64;
                        level[v] =
                            1.0 + kids.iter().map(|&c| level[c as usize]).fold(0.0, f64::max);
                        hidden[v] = parent_continues;
                    }
                }
                if is_link(v).is_none() {
                    bottom_of_chain = v;
                }
                if !parent_continues {
                    chain[v] = Some((bottom_of_chain, run[v]));
                    level[v] = level[bottom_of_chain] + 1.0;
                }
            } else {
                x[v] = kids.iter().map(|&c| x[c as usize]).sum::<f64>() / kids.len() as f64;
                level[v] = 1.0 + kids.iter().map(|&c| level[c as usize]).fold(0.0, f64::max);
            }
        }
        let max_level = level.iter().copied().fold(0.0, f64::max);
        PictureLayout {
            x,
            level,
            chain,
            hidden,
            max_level,
        }
    }

    fn svg(&self, t: &SumTree, title: Option<&str>) -> String {
        let n = t.leaf_count();
        let total = n + t.inner_count();
        let dx = if n <= 16 {
            36.0
        } else if n <= 64 {
            22.0
        } else {
            // about 1200 px wide, as a page shows it, until leaves would be under 1 px
            (1140.0 / n as f64).max(1.0)
        };
        let levels = self.max_level.max(1.0);
        let span = dx * (n.max(2) - 1) as f64;
        // tall enough to read slopes in wide pictures, short levels when there are many
        let tree_h = (levels * 48.0)
            .max(span * 0.3)
            .min((levels * 6.0).max(1200.0));
        let dy = tree_h / levels;
        let big = dx >= 18.0;
        let r = if big { 8.0 } else { (dx * 0.4).clamp(1.5, 4.0) };
        let (left, top) = (30.0, if title.is_some() { 56.0 } else { 24.0 });
        let width = left * 2.0 + span;
        let base = top + levels * dy;
        let height = base + 44.0;
        let px = |v: usize| left + self.x[v] * dx;
        let py = |v: usize| base - self.level[v] * dy;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
        );
        let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
        if let Some(title) = title {
            let _ = writeln!(
                s,
                r##"<text x="{left}" y="28" font-size="18" fill="#222">{}</text>"##,
                escape(title)
            );
        }
        let stats = t.stats();
        let _ = writeln!(
            s,
            r##"<text x="{left}" y="{:.0}" font-size="12" fill="#666">{} leaves, {} roundings, depth {}</text>"##,
            height - 8.0,
            n,
            stats.inner_nodes,
            stats.depth
        );
        let edge = |s: &mut String, x1: f64, y1: f64, x2: f64, y2: f64, color: &str| {
            let _ = writeln!(
                s,
                r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{color}" stroke-width="{:.1}"/>"#,
                if big { 1.4 } else { 0.8 }
            );
        };
        // chain labels, drawn last on a white backing so that no line crosses them
        let mut labels: Vec<(f64, f64, f64, usize)> = Vec::new();
        // edges
        for v in n..total {
            let kids = t.children(v);
            if let Some((bottom, len)) = self.chain[v] {
                // one sloped edge from the chain's first addition to its top; absorbed
                // leaves rise to where they meet it
                let (x0, y0, x1, y1) = (px(bottom), py(bottom), px(v), py(v));
                let _ = writeln!(
                    s,
                    r##"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="#2b6cb0" stroke-width="{:.1}"/>"##,
                    if big { 3.0 } else { 2.0 }
                );
                let mut w = v;
                while w != bottom {
                    let kids = t.children(w);
                    let (leaf, inner) = if t.is_leaf(kids[0] as usize) {
                        (kids[0] as usize, kids[1] as usize)
                    } else {
                        (kids[1] as usize, kids[0] as usize)
                    };
                    let frac = if (x1 - x0).abs() > 1e-9 {
                        ((px(leaf) - x0) / (x1 - x0)).clamp(0.0, 1.0)
                    } else {
                        0.5
                    };
                    edge(
                        &mut s,
                        px(leaf),
                        py(leaf),
                        px(leaf),
                        y0 + (y1 - y0) * frac,
                        "#9ab",
                    );
                    w = inner;
                }
                let (mx, my) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
                // overlapping chains (interleaved lanes) share one label
                let crowded = labels
                    .iter()
                    .any(|&(lx, ly, _, _)| (lx - mx).abs() < 90.0 && (ly - my).abs() < 14.0);
                if !crowded {
                    let angle = (y1 - y0).atan2(x1 - x0).to_degrees();
                    labels.push((mx, my, angle, len));
                }
            }
            if self.hidden[v] {
                continue;
            }
            if let Some((bottom, _)) = self.chain[v] {
                // the chain's bottom joins its own children normally
                for &c in t.children(bottom) {
                    edge(
                        &mut s,
                        px(c as usize),
                        py(c as usize),
                        px(bottom),
                        py(bottom),
                        "#555",
                    );
                }
                continue;
            }
            if kids.len() > 2 {
                let lo = kids
                    .iter()
                    .map(|&c| px(c as usize))
                    .fold(f64::MAX, f64::min);
                let hi = kids
                    .iter()
                    .map(|&c| px(c as usize))
                    .fold(f64::MIN, f64::max);
                for &c in kids {
                    edge(
                        &mut s,
                        px(c as usize),
                        py(c as usize),
                        px(c as usize),
                        py(v) + r,
                        "#c05621",
                    );
                }
                let _ = writeln!(
                    s,
                    r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="4" fill="#feebc8" stroke="#c05621"/>"##,
                    lo - r,
                    py(v) - r,
                    hi - lo + 2.0 * r,
                    2.0 * r
                );
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#c05621" text-anchor="middle">+ fused {}</text>"##,
                    (lo + hi) / 2.0,
                    py(v) + 4.0,
                    kids.len()
                );
            } else {
                for &c in kids {
                    edge(&mut s, px(c as usize), py(c as usize), px(v), py(v), "#555");
                }
            }
        }
        // nodes
        for v in n..total {
            if self.hidden[v] || t.children(v).len() > 2 {
                continue;
            }
            let (cx, cy) = (px(v), py(v));
            let _ = writeln!(
                s,
                r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="#ebf4ff" stroke="#2b6cb0"/>"##
            );
            if big {
                let _ = writeln!(
                    s,
                    r##"<text x="{cx:.1}" y="{:.1}" font-size="13" fill="#2b6cb0" text-anchor="middle">+</text>"##,
                    cy + 4.5
                );
            }
        }
        for i in 0..n {
            let every = if dx >= 14.0 {
                1
            } else {
                (28.0 / dx).ceil() as usize
            };
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#2d3748"/>"##,
                px(i) - r * 0.7,
                base - r * 0.7,
                r * 1.4,
                r * 1.4
            );
            if i % every == 0 {
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{:.1}" font-size="{}" fill="#2d3748" text-anchor="middle">{i}</text>"##,
                    px(i),
                    base + 18.0,
                    if big { 12 } else { 10 }
                );
            }
        }
        let size = if big { 12.0 } else { 11.0 };
        for (mx, my, angle, len) in labels {
            // along the chain's edge, on its upper side, where no other line runs (the
            // absorbed leaves join the edge from below)
            let text = format!("{len} adds in order");
            let w = text.len() as f64 * size * 0.56 + 6.0;
            let _ = writeln!(
                s,
                r##"<g transform="rotate({angle:.2} {mx:.1} {my:.1})"><rect x="{:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="#ffffff" fill-opacity="0.9"/><text x="{mx:.1}" y="{:.1}" font-size="{size}" fill="#2b6cb0" text-anchor="middle">{text}</text></g>"##,
                mx - w / 2.0,
                my - 5.0 - size,
                size + 3.0,
                my - 5.0
            );
        }
        s.push_str("</svg>\n");
        s
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_are_squeezed() {
        let t = SumTree::sequential(1024);
        let svg = svg(&t);
        assert!(svg.contains("1023 adds in order"));
        // one circle for the top of the chain, not 1023
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(svg.len() < 400_000);
    }

    #[test]
    fn repeated_blocks_are_drawn_once() {
        let svg = svg(&SumTree::numpy_pairwise(1024));
        assert!(svg.contains("x8, shifted by 128"), "{svg}");
        // the top tree over 8 blocks and the lane tree over 8 lanes: 7 + 7 additions
        assert_eq!(svg.matches("<circle").count(), 14);
        for j in 0..8 {
            assert!(svg.contains(&format!(">lane {j}</text>")));
        }
        assert_eq!(svg.matches(">16 in order</text>").count(), 8);
        assert!(svg.contains(r#"width="1200""#));
        // hundreds of blocks: one band instead of a box each, and a small file
        let svg = super::svg(&SumTree::numpy_pairwise(1 << 16));
        assert!(
            svg.contains("512 blocks; block 1 is values 0..127"),
            "{svg}"
        );
        assert!(svg.contains("x512, shifted by 128") && svg.len() < 40_000);
    }

    #[test]
    fn unequal_blocks_are_drawn_once_per_kind() {
        let svg = svg(&SumTree::numpy_pairwise(300));
        assert!(svg.contains("the shape of blocks 1, 2, 3"), "{svg}");
        assert!(svg.contains(">8 lanes of 10, then 4</text>"), "{svg}");
        // small trees without lanes keep the full drawing
        let blocked: SumTree = "((((0+1)+2)+3)+(((4+5)+6)+7))".parse().unwrap();
        let svg = Picture::new().render(&blocked);
        assert!(
            !svg.contains("combined") && svg.contains("<circle"),
            "{svg}"
        );
    }

    #[test]
    fn chain_labels_sit_on_a_backing() {
        let svg = svg(&SumTree::sequential(40));
        let label = svg.find(">39 adds in order<").unwrap();
        let backing = svg[..label].rfind("<rect").unwrap();
        assert!(svg[backing..label].contains(r##"fill="#ffffff""##));
        // nothing is drawn after the labels but other labels
        assert!(!svg[label..].contains("<line"));
    }

    #[test]
    fn fused_nodes_are_boxes() {
        let t: SumTree = "((0+1+2+3)+(4+5))".parse().unwrap();
        let svg = Picture::new().title("a <b>").render(&t);
        assert!(svg.contains("+ fused 4") && svg.contains("a &lt;b&gt;"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
