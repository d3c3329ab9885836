//! The full drawing of a tree: every rounding a node, leaves in input order along the
//! bottom, long accumulation chains squeezed into one sloped, labelled edge.

use std::fmt::Write;

use super::escape;
use crate::tree::SumTree;

/// Where every node sits: its position along the leaves, its level, and the chains
/// squeezed into one edge.
pub(super) struct PictureLayout {
    x: Vec<f64>,
    level: Vec<f64>,
    /// For a squeezed chain's top node: the chain's bottom node and its length.
    chain: Vec<Option<(usize, usize)>>,
    /// Nodes drawn inside a squeezed chain (no circle of their own).
    hidden: Vec<bool>,
    max_level: f64,
}

impl PictureLayout {
    pub(super) fn new(t: &SumTree, chain_min: usize) -> PictureLayout {
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
}

/// The sizes of one picture, from its leaf count and levels, and where each node is
/// drawn.
struct TreeCanvas<'l> {
    layout: &'l PictureLayout,
    /// Distance between neighbouring leaves.
    dx: f64,
    /// Height of one level.
    dy: f64,
    /// Radius of a node.
    r: f64,
    /// Whether nodes are large enough to hold a `+` and leaves a label each.
    big: bool,
    left: f64,
    /// Where the leaves sit.
    base: f64,
    width: f64,
    height: f64,
}

/// A chain's label: its midpoint, its angle and its length.
type ChainLabel = (f64, f64, f64, usize);

impl<'l> TreeCanvas<'l> {
    fn new(layout: &'l PictureLayout, n: usize, title: Option<&str>) -> TreeCanvas<'l> {
        let dx = if n <= 16 {
            36.0
        } else if n <= 64 {
            22.0
        } else {
            // about 1200 px wide, as a page shows it, until leaves would be under 1 px
            (1140.0 / n as f64).max(1.0)
        };
        let levels = layout.max_level.max(1.0);
        let span = dx * (n.max(2) - 1) as f64;
        // tall enough to read slopes in wide pictures, short levels when there are many
        let tree_h = (levels * 48.0)
            .max(span * 0.3)
            .min((levels * 6.0).max(1200.0));
        let dy = tree_h / levels;
        let big = dx >= 18.0;
        let r = if big { 8.0 } else { (dx * 0.4).clamp(1.5, 4.0) };
        let (left, top) = (30.0, if title.is_some() { 56.0 } else { 24.0 });
        // wide enough for the title too (18 px sans-serif: about 10 px a character), so
        // that a small tree's title is not cut off at the picture's edge
        let title_w = title.map_or(0.0, |t| t.chars().count() as f64 * 10.0);
        let width = left * 2.0 + span.max(title_w);
        let base = top + levels * dy;
        let height = base + 44.0;
        TreeCanvas {
            layout,
            dx,
            dy,
            r,
            big,
            left,
            base,
            width,
            height,
        }
    }

    fn px(&self, v: usize) -> f64 {
        self.left + self.layout.x[v] * self.dx
    }

    fn py(&self, v: usize) -> f64 {
        self.base - self.layout.level[v] * self.dy
    }

    fn edge(&self, s: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), color: &str) {
        let _ = writeln!(
            s,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{color}" stroke-width="{:.1}"/>"#,
            if self.big { 1.4 } else { 0.8 }
        );
    }

    /// The node's position.
    fn at(&self, v: usize) -> (f64, f64) {
        (self.px(v), self.py(v))
    }

    /// The opening tag, the background, the title and the caption with the tree's counts.
    fn header(&self, s: &mut String, t: &SumTree, title: Option<&str>) {
        let (width, height, left) = (self.width, self.height, self.left);
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
            t.leaf_count(),
            stats.inner_nodes,
            stats.depth
        );
    }

    /// A squeezed chain from `bottom` to its top `v`: one sloped edge, each absorbed leaf
    /// rising to where it meets it; its label, unless another chain's is close by
    /// (interleaved lanes share one).
    fn chain(
        &self,
        s: &mut String,
        t: &SumTree,
        (v, bottom, len): (usize, usize, usize),
        labels: &mut Vec<ChainLabel>,
    ) {
        let ((x0, y0), (x1, y1)) = (self.at(bottom), self.at(v));
        let _ = writeln!(
            s,
            r##"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}" stroke="#2b6cb0" stroke-width="{:.1}"/>"##,
            if self.big { 3.0 } else { 2.0 }
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
                ((self.px(leaf) - x0) / (x1 - x0)).clamp(0.0, 1.0)
            } else {
                0.5
            };
            let meets = (self.px(leaf), y0 + (y1 - y0) * frac);
            self.edge(s, self.at(leaf), meets, "#9ab");
            w = inner;
        }
        let (mx, my) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
        let crowded = labels
            .iter()
            .any(|&(lx, ly, _, _)| (lx - mx).abs() < 90.0 && (ly - my).abs() < 14.0);
        if !crowded {
            let angle = (y1 - y0).atan2(x1 - x0).to_degrees();
            labels.push((mx, my, angle, len));
        }
    }

    /// A fused node: a wide box over all its children, each joining it from below.
    fn fused(&self, s: &mut String, v: usize, kids: &[u32]) {
        let r = self.r;
        let lo = kids
            .iter()
            .map(|&c| self.px(c as usize))
            .fold(f64::MAX, f64::min);
        let hi = kids
            .iter()
            .map(|&c| self.px(c as usize))
            .fold(f64::MIN, f64::max);
        for &c in kids {
            let c = c as usize;
            self.edge(s, self.at(c), (self.px(c), self.py(v) + r), "#c05621");
        }
        let _ = writeln!(
            s,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="4" fill="#feebc8" stroke="#c05621"/>"##,
            lo - r,
            self.py(v) - r,
            hi - lo + 2.0 * r,
            2.0 * r
        );
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#c05621" text-anchor="middle">+ fused {}</text>"##,
            (lo + hi) / 2.0,
            self.py(v) + 4.0,
            kids.len()
        );
    }

    /// Every edge: squeezed chains, a chain's bottom joining its children, fused boxes,
    /// and plain edges; the chains' labels, to draw last.
    fn edges(&self, s: &mut String, t: &SumTree) -> Vec<ChainLabel> {
        let n = t.leaf_count();
        let mut labels = Vec::new();
        for v in n..n + t.inner_count() {
            let kids = t.children(v);
            let chain = self.layout.chain[v];
            if let Some((bottom, len)) = chain {
                self.chain(s, t, (v, bottom, len), &mut labels);
            }
            if self.layout.hidden[v] {
                continue;
            }
            if let Some((bottom, _)) = chain {
                // the chain's bottom joins its own children normally
                for &c in t.children(bottom) {
                    self.edge(s, self.at(c as usize), self.at(bottom), "#555");
                }
            } else if kids.len() > 2 {
                self.fused(s, v, kids);
            } else {
                for &c in kids {
                    self.edge(s, self.at(c as usize), self.at(v), "#555");
                }
            }
        }
        labels
    }

    /// A circle for every binary node not squeezed into a chain.
    fn nodes(&self, s: &mut String, t: &SumTree) {
        let n = t.leaf_count();
        let r = self.r;
        for v in n..n + t.inner_count() {
            if self.layout.hidden[v] || t.children(v).len() > 2 {
                continue;
            }
            let (cx, cy) = self.at(v);
            let _ = writeln!(
                s,
                r##"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="#ebf4ff" stroke="#2b6cb0"/>"##
            );
            if self.big {
                let _ = writeln!(
                    s,
                    r##"<text x="{cx:.1}" y="{:.1}" font-size="13" fill="#2b6cb0" text-anchor="middle">+</text>"##,
                    cy + 4.5
                );
            }
        }
    }

    /// A square for every leaf, labelled with its index where there is room.
    fn leaves(&self, s: &mut String, n: usize) {
        let (r, dx, base) = (self.r, self.dx, self.base);
        for i in 0..n {
            let every = if dx >= 14.0 {
                1
            } else {
                (28.0 / dx).ceil() as usize
            };
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#2d3748"/>"##,
                self.px(i) - r * 0.7,
                base - r * 0.7,
                r * 1.4,
                r * 1.4
            );
            if i % every == 0 {
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{:.1}" font-size="{}" fill="#2d3748" text-anchor="middle">{i}</text>"##,
                    self.px(i),
                    base + 18.0,
                    if self.big { 12 } else { 10 }
                );
            }
        }
    }

    /// The chains' labels, each on a white backing so that no line crosses it.
    fn labels(&self, s: &mut String, labels: Vec<ChainLabel>) {
        let size = if self.big { 12.0 } else { 11.0 };
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
    }
}

impl PictureLayout {
    /// The SVG document: edges, then nodes, then leaves, then the chains' labels on top.
    pub(super) fn svg(&self, t: &SumTree, title: Option<&str>) -> String {
        let canvas = TreeCanvas::new(self, t.leaf_count(), title);
        let mut s = String::new();
        canvas.header(&mut s, t, title);
        let labels = canvas.edges(&mut s, t);
        canvas.nodes(&mut s, t);
        canvas.leaves(&mut s, t.leaf_count());
        canvas.labels(&mut s, labels);
        s.push_str("</svg>\n");
        s
    }
}
