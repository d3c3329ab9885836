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

use crate::tree::SumTree;

mod bands;
mod condensed;
mod full;

use full::PictureLayout;

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

impl Picture {
    /// A sweep's trees across its swept values, as bands: one cell per value in a strip,
    /// coloured and numbered by its tree (a tree that comes back keeps its colour), a red
    /// line at each breakpoint, a triangle over each value that was searched rather than
    /// proved, and one band per run of values sharing a tree with that tree in words
    /// ([`SumTree::describe`]). `points` are `(value, tree, searched)` in value order;
    /// `label` names the value ("M", "threads"). `Sweep::svg` (in `fprev::sweep`) draws
    /// a sweep this way. Options other than the title do not apply.
    ///
    /// ```
    /// let seq = fprev::SumTree::sequential(64);
    /// let pairwise = fprev::SumTree::pairwise(64);
    /// let points = [(1, &seq, true), (2, &seq, false), (4, &pairwise, true)];
    /// let svg = fprev::picture::Picture::new().title("a kernel").bands("M", &points);
    /// assert!(svg.starts_with("<svg") && svg.contains("breakpoint at M = 4"));
    /// assert!(svg.contains(">M = 1..2 (2 values)</text>") && svg.contains(">64 in order</text>"));
    /// ```
    pub fn bands(&self, label: &str, points: &[(usize, &SumTree, bool)]) -> String {
        bands::render(label, points, self.title.as_deref())
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

    /// A small tree with a long title: the picture is as wide as the title, so the title
    /// is not cut off at its edge.
    #[test]
    fn a_long_title_widens_a_small_picture() {
        let t: SumTree = "(((0+1)+2)+3)".parse().unwrap();
        let title = "mxf8-b200, k = 256, blocks of 32, and more words";
        let svg = Picture::new().title(title).render(&t);
        let width: f64 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|w| w.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap();
        assert!(width >= 60.0 + 10.0 * title.len() as f64, "{width}");
        let plain = Picture::new().render(&t);
        assert!(plain.contains("width=\"168\""), "{}", &plain[..200]);
    }
}
