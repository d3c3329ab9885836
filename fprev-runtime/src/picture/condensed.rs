//! Large trees drawn by their structure: one panel per level of repetition.
//!
//! A tree that [`SumTree::describe`] splits into parts is drawn as the small tree that
//! combines the parts, over one box per part (width proportional to its leaves for
//! blocks, one slot per lane for lanes). A part repeated with a shift is drawn once, in
//! the next panel, under a heading such as "x8, shifted by 128"; strided lanes get one
//! named row each showing which inputs they absorb. All text sits in boxes, headings or
//! margins that no line enters.

use std::collections::HashSet;
use std::fmt::Write;

use super::escape;
use crate::tree::describe::{combiner_phrase, Analysis, ChainStride, TreeShape};
use crate::tree::SumTree;

const WIDTH: f64 = 1200.0;
const MARGIN: f64 = 24.0;
/// Room left of the boxes and lanes for lane names.
const GUTTER: f64 = 64.0;
/// Room right of the lanes for "16 in order".
const RIGHT: f64 = 110.0;
const MAX_PANELS: usize = 4;

/// Approximate width of `text` at `size` px in a sans-serif font.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.56
}

/// `text` broken at "; " into lines of at most `chars` characters.
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for piece in text.split("; ") {
        match lines.last_mut() {
            Some(l) if l.len() + 2 + piece.len() <= chars => {
                l.push_str("; ");
                l.push_str(piece);
            }
            _ => lines.push(piece.to_string()),
        }
    }
    lines
}

struct PanelCanvas {
    body: String,
    y: f64,
    panels: usize,
}

impl PanelCanvas {
    fn text(&mut self, x: f64, y: f64, size: f64, color: &str, anchor: &str, text: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size:.1}" fill="{color}" text-anchor="{anchor}">{}</text>"#,
            escape(text)
        );
    }

    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), color: &str, width: f64) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{color}" stroke-width="{width:.1}"/>"#
        );
    }

    fn heading(&mut self, text: &str, size: f64, color: &str) {
        for line in wrap(text, ((WIDTH - 2.0 * MARGIN) / (size * 0.56)) as usize) {
            self.y += size * 1.35;
            self.text(MARGIN, self.y, size, color, "start", &line);
        }
    }
}

/// The condensed picture, or `None` when the tree is better drawn in full.
/// `small` trees (64 leaves or fewer) are drawn this way only when they have lanes,
/// whose crossing lines are what makes a full picture hard to read.
pub(super) fn render(tree: &SumTree, title: Option<&str>) -> Option<String> {
    if tree.leaf_count() == 0 {
        return None; // the empty tree: the full drawing handles it
    }
    let a = Analysis::new(tree);
    let small = tree.leaf_count() <= 64;
    let root = tree.root();
    let (top, tail) = match a.shape(root) {
        TreeShape::Parts { interleaved, .. } if interleaved || !small => (root, None),
        TreeShape::Tail { base, leaves } if matches!(a.shape(base), TreeShape::Parts { interleaved, .. } if interleaved || !small) => {
            (base, Some(leaves))
        }
        _ => return None,
    };
    let mut c = PanelCanvas {
        body: String::new(),
        y: 8.0,
        panels: 0,
    };
    if let Some(title) = title {
        c.heading(title, 20.0, "#222");
    }
    let stats = tree.stats();
    c.heading(
        &format!(
            "{} values, {} roundings, depth {}. In words: {}",
            tree.leaf_count(),
            stats.inner_nodes,
            stats.depth,
            tree.describe()
        ),
        13.0,
        "#555",
    );
    let heading = match tail {
        Some(_) => format!("values {}..={}", a.min_leaf[top], a.max_leaf[top]),
        None => format!("all {} values", a.size[top]),
    };
    panel(&mut c, &a, top, &heading);
    if let Some(leaves) = tail {
        let (x, y) = (leaves[0], leaves[leaves.len() - 1]);
        c.y += 8.0;
        c.heading(
            &format!(
                "then {} more values ({x}..={y}) added one at a time to that sum",
                leaves.len()
            ),
            14.0,
            "#2b6cb0",
        );
    }
    let height = c.y + 20.0;
    Some(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{}</svg>\n",
        c.body
    ))
}

/// What a part is, in a few words for its box.
fn kind(a: &Analysis, p: usize) -> String {
    match a.pure(p) {
        Some(TreeShape::Leaf) => "1 value".into(),
        Some(TreeShape::Chain { len, step }) => crate::tree::describe::chain_phrase(len, step),
        Some(TreeShape::Pairwise { len }) => format!("pairwise, {len}"),
        Some(TreeShape::Fused { len }) => format!("fused, {len}"),
        Some(TreeShape::FusedChain { blocks, width, .. }) => {
            format!("{blocks} fused adds, {}-way", width + 1)
        }
        _ => match a.shape(p) {
            TreeShape::Parts {
                parts, interleaved, ..
            } if interleaved => format!("{} lanes of {}", parts.len(), a.size[parts[0]]),
            TreeShape::Tail { base, leaves } => match a.shape(base) {
                TreeShape::Parts {
                    parts, interleaved, ..
                } if interleaved => format!(
                    "{} lanes of {}, then {}",
                    parts.len(),
                    a.size[parts[0]],
                    leaves.len()
                ),
                _ => format!("{} values", a.size[p]),
            },
            _ => format!("{} values", a.size[p]),
        },
    }
}

/// How the parts of one panel are named and drawn.
#[derive(Clone, Copy)]
struct PartStyle {
    /// The parts are strided lanes (chains with a constant positive step).
    lanes: bool,
    /// The parts interleave: boxes one slot each, not by their share of the leaves.
    interleaved: bool,
    /// Every part is the first shifted by a multiple of this.
    shift: Option<usize>,
    /// "lane", "part" or "block".
    noun: &'static str,
}

/// One panel: a heading, the tree over the parts of `v`, a box per part; then the
/// repeated part's own panel, or named lanes.
fn panel(c: &mut PanelCanvas, a: &Analysis, v: usize, heading: &str) {
    let TreeShape::Parts {
        top,
        parts,
        shift,
        interleaved,
    } = a.shape(v)
    else {
        c.heading(&format!("{heading}: {}", a.phrase(v, 3)), 15.0, "#222");
        return;
    };
    let lanes = interleaved
        && parts
            .iter()
            .all(|&p| matches!(a.pure(p), Some(TreeShape::Chain { step: ChainStride::By(s), .. }) if s > 0));
    let noun = if lanes {
        "lane"
    } else if interleaved {
        "part"
    } else {
        "block"
    };
    let style = PartStyle {
        lanes,
        interleaved,
        shift,
        noun,
    };
    c.panels += 1;
    c.y += 14.0;
    let sizes: Vec<u32> = parts.iter().map(|&p| a.size[p]).collect();
    let of = if lanes || sizes.iter().any(|&s| s != sizes[0]) {
        String::new()
    } else {
        format!(" of {}", sizes[0])
    };
    c.heading(
        &format!(
            "{heading}: {} {noun}s{of} combined {}",
            parts.len(),
            combiner_phrase(&top)
        ),
        15.0,
        "#222",
    );
    let span = (MARGIN + GUTTER, WIDTH - MARGIN - RIGHT);
    if parts.len() > 64 {
        parts_band(c, a, &parts, noun, span);
    } else if !parts_tree(c, a, v, &parts, style, span) {
        return;
    }
    if lanes {
        lane_rows(c, a, v, &parts, span);
    }
    if shift.is_none() && !lanes {
        part_panels(c, a, &parts, noun);
    }
    if let Some(s) = shift {
        shifted_part(c, a, &parts, noun, s, lanes);
    }
}

/// Too many parts to draw a box each: one band, named by its first and last part.
fn parts_band(
    c: &mut PanelCanvas,
    a: &Analysis,
    parts: &[usize],
    noun: &str,
    (x0, x1): (f64, f64),
) {
    let top = c.y + 10.0;
    let _ = writeln!(
        c.body,
        r##"<rect x="{x0:.1}" y="{top:.1}" width="{:.1}" height="30" rx="3" fill="#edf2f7" stroke="#4a5568"/>"##,
        x1 - x0
    );
    let first = parts[0];
    let text = format!(
        "{} {noun}s; {noun} 1 is values {}..{}, the last {}..{}",
        parts.len(),
        a.min_leaf[first],
        a.max_leaf[first],
        a.min_leaf[parts[parts.len() - 1]],
        a.max_leaf[parts[parts.len() - 1]]
    );
    c.text(
        (x0 + x1) / 2.0,
        top + 19.0,
        12.0,
        "#2d3748",
        "middle",
        &text,
    );
    c.y = top + 30.0;
}

/// The tree that combines the parts of `v`, over a box per part; `false` when the parts
/// do not contract to a tree (nothing drawn).
fn parts_tree(
    c: &mut PanelCanvas,
    a: &Analysis,
    v: usize,
    parts: &[usize],
    style: PartStyle,
    (x0, x1): (f64, f64),
) -> bool {
    let set: HashSet<usize> = parts.iter().copied().collect();
    let Some((_, tree)) = a.contract(v, |w| set.contains(&w)) else {
        return false;
    };
    // part boxes: blocks by their share of the leaves, lanes one slot each
    let (lo, range) = (
        a.min_leaf[v] as f64,
        (a.max_leaf[v] - a.min_leaf[v] + 1) as f64,
    );
    let spans: Vec<(f64, f64)> = parts
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            if style.interleaved {
                let w = (x1 - x0) / parts.len() as f64;
                (x0 + i as f64 * w, x0 + (i + 1) as f64 * w)
            } else {
                let s = x0 + (a.min_leaf[p] as f64 - lo) / range * (x1 - x0);
                let e = x0 + (a.max_leaf[p] as f64 + 1.0 - lo) / range * (x1 - x0);
                (s, e)
            }
        })
        .collect();
    let box_top = combining_tree(c, &tree, &spans);
    let box_h = 48.0;
    for (i, (&p, &span)) in parts.iter().zip(&spans).enumerate() {
        part_box(c, a, (i, p), parts[0], span, (box_top, box_h), style);
    }
    c.y = box_top + box_h;
    true
}

/// The tree over the parts (leaf `i` is the part drawn over `spans[i]`), its levels
/// spread over at most 220 px above the boxes; where the boxes' top edge is.
fn combining_tree(c: &mut PanelCanvas, tree: &SumTree, spans: &[(f64, f64)]) -> f64 {
    let n = spans.len();
    let inner = tree.inner_count();
    let levels = {
        let mut level = vec![0usize; n + inner];
        for k in 0..inner {
            let node = n + k;
            level[node] = 1 + tree
                .children(node)
                .iter()
                .map(|&ch| level[ch as usize])
                .max()
                .unwrap_or(0);
        }
        level
    };
    let max_level = levels.iter().copied().max().unwrap_or(1).max(1);
    let dy = (220.0 / max_level as f64).clamp(6.0, 40.0);
    let box_top = c.y + 16.0 + max_level as f64 * dy;
    let mut x: Vec<f64> = spans.iter().map(|&(s, e)| (s + e) / 2.0).collect();
    let y_of = |node: usize| box_top - levels[node] as f64 * dy;
    for k in 0..inner {
        let node = n + k;
        let kids = tree.children(node);
        let mx = kids.iter().map(|&ch| x[ch as usize]).sum::<f64>() / kids.len() as f64;
        x.push(mx);
    }
    let r = if dy >= 20.0 { 7.0 } else { 3.5 };
    for k in 0..inner {
        let node = n + k;
        let kids = tree.children(node);
        let (nx, ny) = (x[node], y_of(node));
        for &ch in kids {
            let ch = ch as usize;
            c.line((x[ch], y_of(ch)), (nx, ny), "#555", 1.4);
        }
    }
    for k in 0..inner {
        let node = n + k;
        let kids = tree.children(node);
        let (nx, ny) = (x[node], y_of(node));
        if kids.len() > 2 {
            let lo = kids
                .iter()
                .map(|&ch| x[ch as usize])
                .fold(f64::MAX, f64::min);
            let hi = kids
                .iter()
                .map(|&ch| x[ch as usize])
                .fold(f64::MIN, f64::max);
            let _ = writeln!(
                c.body,
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="16" rx="4" fill="#feebc8" stroke="#c05621"/>"##,
                lo - 8.0,
                ny - 8.0,
                hi - lo + 16.0
            );
            let label = format!("+ fused {}", kids.len());
            c.text((lo + hi) / 2.0, ny + 4.0, 11.0, "#c05621", "middle", &label);
        } else {
            let _ = writeln!(
                c.body,
                r##"<circle cx="{nx:.1}" cy="{ny:.1}" r="{r:.1}" fill="#ebf4ff" stroke="#2b6cb0"/>"##
            );
            if r > 5.0 {
                c.text(nx, ny + 4.5, 13.0, "#2b6cb0", "middle", "+");
            }
        }
    }
    box_top
}

/// The box of part `p` (the `i`-th; `first` is the first part's node) over `(s, e)`:
/// its name, its values and what it is, as many lines as fit.
fn part_box(
    c: &mut PanelCanvas,
    a: &Analysis,
    (i, p): (usize, usize),
    first: usize,
    (s, e): (f64, f64),
    (box_top, box_h): (f64, f64),
    style: PartStyle,
) {
    let PartStyle {
        lanes,
        interleaved,
        shift,
        noun,
    } = style;
    let w = (e - s - 3.0).max(1.0);
    let _ = writeln!(
        c.body,
        r##"<rect x="{:.1}" y="{box_top:.1}" width="{w:.1}" height="{box_h}" rx="3" fill="#edf2f7" stroke="#4a5568"/>"##,
        s + 1.5
    );
    let cx = s + 1.5 + w / 2.0;
    let name = if lanes {
        format!("{noun} {i}")
    } else {
        format!("{noun} {}", i + 1)
    };
    let range = if interleaved {
        format!(
            "x{}, x{}, …",
            a.min_leaf[p],
            a.min_leaf[p] as usize + step_of(a, p)
        )
    } else {
        format!("{}..{}", a.min_leaf[p], a.max_leaf[p])
    };
    let what = match (shift, a.pure(p)) {
        (Some(_), None) if i == 0 => "drawn below".to_string(),
        (Some(_), None) => format!("{noun} 1 + {}", a.min_leaf[p] - a.min_leaf[first]),
        _ => kind(a, p),
    };
    let lines = [name, range, what];
    // as many lines as fit, each at the largest size up to 12 px that fits
    for (j, l) in lines.iter().enumerate() {
        let size = (12.0f64).min(12.0 * (w - 4.0) / text_width(l, 12.0));
        if size >= 8.0 {
            c.text(
                cx,
                box_top + 14.0 + j as f64 * 14.0,
                size,
                "#2d3748",
                "middle",
                l,
            );
        } else if j == 0 {
            let short = (i + usize::from(!lanes)).to_string();
            let size = (11.0f64).min((w - 2.0) / (short.len() as f64 * 0.56));
            if size >= 6.0 {
                c.text(cx, box_top + 14.0, size, "#2d3748", "middle", &short);
            }
        }
    }
}

/// One panel per distinct kind of part that is not a pure shape, its first part drawn.
fn part_panels(c: &mut PanelCanvas, a: &Analysis, parts: &[usize], noun: &str) {
    let mut seen: Vec<String> = Vec::new();
    for (i, &p) in parts.iter().enumerate() {
        if a.pure(p).is_some() || c.panels >= MAX_PANELS {
            continue;
        }
        let words = a.phrase(p, 2);
        if seen.contains(&words) {
            continue;
        }
        let same: Vec<String> = parts
            .iter()
            .enumerate()
            .filter(|&(_, &q)| a.pure(q).is_none() && a.phrase(q, 2) == words)
            .map(|(j, _)| (j + 1).to_string())
            .collect();
        seen.push(words);
        let heading = format!(
            "{noun} {} (values {}..{}){}",
            i + 1,
            a.min_leaf[p],
            a.max_leaf[p],
            if same.len() > 1 {
                format!(", the shape of {noun}s {}", same.join(", "))
            } else {
                String::new()
            }
        );
        panel(c, a, p, &heading);
    }
}

/// Parts that are one part shifted by `s`: the first drawn once in a panel of its own
/// when there is room, else said in words.
fn shifted_part(
    c: &mut PanelCanvas,
    a: &Analysis,
    parts: &[usize],
    noun: &str,
    s: usize,
    lanes: bool,
) {
    if c.panels < MAX_PANELS && !lanes && a.pure(parts[0]).is_none() {
        let first = parts[0];
        let heading = format!(
            "{} 1 (values {}..{}), drawn once: x{}, shifted by {s}",
            noun,
            a.min_leaf[first],
            a.max_leaf[first],
            parts.len()
        );
        panel(c, a, first, &heading);
    } else if !lanes {
        c.y += 6.0;
        c.heading(
            &format!(
                "every {noun}: {} (x{}, shifted by {s})",
                a.phrase(parts[0], 3),
                parts.len()
            ),
            13.0,
            "#2b6cb0",
        );
    }
}

/// The step of a lane (a chain with a constant positive step).
fn step_of(a: &Analysis, p: usize) -> usize {
    match a.pure(p) {
        Some(TreeShape::Chain {
            step: ChainStride::By(s),
            ..
        }) => s.unsigned_abs() as usize,
        _ => 1,
    }
}

/// One row per lane: its name, a mark at each input it absorbs joined in order, and
/// how many.
fn lane_rows(c: &mut PanelCanvas, a: &Analysis, v: usize, parts: &[usize], (x0, x1): (f64, f64)) {
    let lo = a.min_leaf[v] as f64;
    let range = (a.max_leaf[v] - a.min_leaf[v] + 1) as f64;
    let px = |i: usize| x0 + (i as f64 - lo + 0.5) / range * (x1 - x0);
    let row = 18.0;
    c.y += 12.0;
    c.heading(
        "each lane absorbs every input marked on its row, left to right:",
        12.0,
        "#555",
    );
    c.y += 6.0;
    for (j, &p) in parts.iter().enumerate() {
        let y = c.y + row * (j as f64 + 0.5);
        let leaves = a.tree.leaves_under(p);
        let (first, last) = (leaves[0], leaves[leaves.len() - 1]);
        c.text(
            MARGIN,
            y + 4.0,
            11.0,
            "#2d3748",
            "start",
            &format!("lane {j}"),
        );
        c.line((px(first), y), (px(last), y), "#9ab", 1.0);
        let mark = ((x1 - x0) / range * 0.7).clamp(1.5, 6.0);
        for &l in &leaves {
            let _ = writeln!(
                c.body,
                r##"<rect x="{:.1}" y="{:.1}" width="{mark:.1}" height="{mark:.1}" fill="#2b6cb0"/>"##,
                px(l) - mark / 2.0,
                y - mark / 2.0
            );
        }
        c.text(
            x1 + 10.0,
            y + 4.0,
            11.0,
            "#2b6cb0",
            "start",
            &format!("{} in order", leaves.len()),
        );
    }
    c.y += row * parts.len() as f64 + 4.0;
    // input positions under the rows, thinned so they never touch
    let count = range as usize;
    let every = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        .into_iter()
        .find(|&e| (x1 - x0) / range * e as f64 >= 36.0)
        .unwrap_or(count.max(1));
    let mut i = 0;
    while i < count {
        let l = a.min_leaf[v] as usize + i;
        c.text(px(l), c.y + 10.0, 10.0, "#718096", "middle", &l.to_string());
        i += every;
    }
    c.y += 14.0;
}
