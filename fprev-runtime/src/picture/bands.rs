//! A sweep drawn as bands: where along the swept values a target's tree changes.
//!
//! The swept values sit side by side in one strip, one equal cell each (sizes need not
//! be consecutive integers, so a cell is a swept value, not a unit of the axis), each
//! coloured and numbered by its tree; a tree that comes back after another keeps its
//! colour and number. Breakpoints are marked on the strip, the values that were searched
//! rather than proved carry a triangle, and under the strip each run of values gets a
//! band: its colour, its values and its tree in words.

use std::fmt::Write;

use super::escape;
use crate::tree::SumTree;

const WIDTH: f64 = 1200.0;
const MARGIN: f64 = 24.0;
const STRIP: f64 = 36.0;
/// Colour-blind-safe colours (Okabe and Ito), one per distinct tree, repeating after 8.
const PALETTE: [&str; 8] = [
    "#56b4e9", "#e69f00", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7", "#999999",
];
/// Lines of words shown per band; a longer description ends in "...".
const MAX_LINES: usize = 6;

/// Approximate width of `text` at `size` px in a sans-serif font.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.56
}

/// `text` broken into lines of at most `chars` characters: at "; " first, then at
/// spaces within a piece that is longer than a line.
fn wrap(text: &str, chars: usize) -> Vec<String> {
    let chars = chars.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, piece) in text.split("; ").enumerate() {
        let sep = if i == 0 { "" } else { "; " };
        if !cur.is_empty() && cur.len() + sep.len() + piece.len() <= chars {
            cur.push_str(sep);
            cur.push_str(piece);
            continue;
        }
        if !cur.is_empty() {
            cur.push(';');
            lines.push(std::mem::take(&mut cur));
        }
        for word in piece.split(' ') {
            if !cur.is_empty() && cur.len() + 1 + word.len() > chars {
                lines.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

struct Canvas {
    body: String,
}

impl Canvas {
    #[allow(clippy::too_many_arguments)]
    fn text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        color: &str,
        anchor: &str,
        bold: bool,
        text: &str,
    ) {
        let weight = if bold { r#" font-weight="bold""# } else { "" };
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size:.1}" fill="{color}" text-anchor="{anchor}"{weight}>{}</text>"#,
            escape(text)
        );
    }

    fn rect(&mut self, (x, y): (f64, f64), (w, h): (f64, f64), fill: &str, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}" stroke="{stroke}" stroke-width="1"/>"#
        );
    }
}

/// The distinct trees of the swept values and the runs of values that share one.
struct TreeRuns<'p> {
    /// The distinct trees, numbered in order of first appearance.
    trees: Vec<&'p SumTree>,
    /// Each value's tree number.
    id: Vec<usize>,
    /// The runs of values with one tree: (first index, last index).
    runs: Vec<(usize, usize)>,
}

impl<'p> TreeRuns<'p> {
    fn of(points: &[(usize, &'p SumTree, bool)]) -> TreeRuns<'p> {
        let mut trees: Vec<&SumTree> = Vec::new();
        let mut id = Vec::with_capacity(points.len());
        for &(_, t, _) in points {
            let k = match trees.iter().position(|u| *u == t) {
                Some(k) => k,
                None => {
                    trees.push(t);
                    trees.len() - 1
                }
            };
            id.push(k);
        }
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for i in 0..points.len() {
            match runs.last_mut() {
                Some(r) if id[r.1] == id[i] => r.1 = i,
                _ => runs.push((i, i)),
            }
        }
        TreeRuns { trees, id, runs }
    }
}

/// The SVG document: `points` are `(value, tree, searched)` in value order.
pub(super) fn render(
    label: &str,
    points: &[(usize, &SumTree, bool)],
    title: Option<&str>,
) -> String {
    let mut c = Canvas {
        body: String::new(),
    };
    let r = TreeRuns::of(points);
    let mut y = 8.0;
    if let Some(title) = title {
        for line in wrap(title, ((WIDTH - 2.0 * MARGIN) / (20.0 * 0.56)) as usize) {
            y += 27.0;
            c.text(MARGIN, y, 20.0, "#222", "start", false, &line);
        }
    }
    y = summary(&mut c, y, label, points, &r);
    let (strip_top, searched) = strip(&mut c, y, points, &r);
    y = value_labels(&mut c, strip_top, label, points, &r, searched);
    y = bands(&mut c, y, label, points, &r);
    let height = y + 20.0;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{}</svg>\n",
        c.body
    )
}

/// The line under the title: how many values, trees and breakpoints; the next `y`.
fn summary(
    c: &mut Canvas,
    mut y: f64,
    label: &str,
    points: &[(usize, &SumTree, bool)],
    r: &TreeRuns,
) -> f64 {
    let breakpoints: Vec<usize> = r.runs.iter().skip(1).map(|r| points[r.0].0).collect();
    let summary = format!(
        "{} values of {label}, {} to {}; n = {} values summed at each; {} distinct tree{}, {}",
        points.len(),
        points.first().map_or(0, |p| p.0),
        points.last().map_or(0, |p| p.0),
        points.first().map_or(0, |p| p.1.leaf_count()),
        r.trees.len(),
        if r.trees.len() == 1 { "" } else { "s" },
        match breakpoints.len() {
            0 => "no breakpoint".to_string(),
            _ => format!(
                "breakpoint{} at {label} = {}",
                if breakpoints.len() == 1 { "" } else { "s" },
                breakpoints
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    );
    for line in wrap(&summary, ((WIDTH - 2.0 * MARGIN) / (13.0 * 0.56)) as usize) {
        y += 18.0;
        c.text(MARGIN, y, 13.0, "#555", "start", false, &line);
    }
    y
}

/// The strip: one cell per swept value coloured by its tree, breakpoints as heavy lines,
/// the searched values marked above it; its top and the number of searched values.
fn strip(
    c: &mut Canvas,
    mut y: f64,
    points: &[(usize, &SumTree, bool)],
    r: &TreeRuns,
) -> (f64, usize) {
    let cell = (WIDTH - 2.0 * MARGIN) / points.len().max(1) as f64;
    let x_of = |i: usize| MARGIN + i as f64 * cell;
    y += 22.0;
    let marks = y;
    y += 10.0;
    let strip = y;
    for (k, &(a, b)) in r.runs.iter().enumerate() {
        let color = PALETTE[r.id[a] % PALETTE.len()];
        c.rect(
            (x_of(a), strip),
            (cell * (b - a + 1) as f64, STRIP),
            color,
            "#333",
        );
        if cell >= 6.0 {
            for i in a + 1..=b {
                let _ = writeln!(
                    c.body,
                    r##"<line x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y2:.1}" stroke="#ffffff" stroke-opacity="0.6" stroke-width="1"/>"##,
                    x = x_of(i),
                    y1 = strip + 1.0,
                    y2 = strip + STRIP - 1.0
                );
            }
        }
        let span = cell * (b - a + 1) as f64;
        let number = (r.id[a] + 1).to_string();
        if span >= text_width(&number, 14.0) + 4.0 {
            let mid = x_of(a) + span / 2.0;
            c.text(
                mid,
                strip + STRIP / 2.0 + 5.0,
                14.0,
                "#000",
                "middle",
                true,
                &number,
            );
        }
        if k > 0 {
            // the breakpoint: a heavy line where the tree changes
            let x = x_of(a);
            let _ = writeln!(
                c.body,
                r##"<line x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y2:.1}" stroke="#c53030" stroke-width="3"/>"##,
                y1 = strip - 4.0,
                y2 = strip + STRIP + 4.0
            );
        }
    }
    let mut searched = 0;
    for (i, &(_, _, s)) in points.iter().enumerate() {
        if s {
            searched += 1;
            let (cx, half) = (x_of(i) + cell / 2.0, (cell / 2.0).clamp(2.0, 5.0));
            let _ = writeln!(
                c.body,
                r##"<path d="M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="#222"/>"##,
                cx - half,
                marks,
                cx + half,
                marks,
                cx,
                marks + 7.0
            );
        }
    }
    (strip, searched)
}

/// The values under the strip at `strip` and the legend line; the next `y`.
fn value_labels(
    c: &mut Canvas,
    strip: f64,
    label: &str,
    points: &[(usize, &SumTree, bool)],
    r: &TreeRuns,
    searched: usize,
) -> f64 {
    let cell = (WIDTH - 2.0 * MARGIN) / points.len().max(1) as f64;
    let x_of = |i: usize| MARGIN + i as f64 * cell;
    // value labels under the strip: every run's first value, then its last and the
    // values between, wherever they fit beside the labels already placed
    let mut y = strip + STRIP + 16.0;
    let mut placed: Vec<(f64, f64)> = Vec::new();
    let mut order: Vec<usize> = r.runs.iter().map(|r| r.0).collect();
    order.extend(r.runs.iter().map(|r| r.1));
    order.extend(0..points.len());
    for i in order {
        let text = points[i].0.to_string();
        let w = text_width(&text, 12.0);
        let cx = x_of(i) + cell / 2.0;
        let (lo, hi) = (cx - w / 2.0 - 3.0, cx + w / 2.0 + 3.0);
        if placed.iter().any(|&(a, b)| lo < b && a < hi) {
            continue;
        }
        placed.push((lo, hi));
        c.text(cx, y, 12.0, "#333", "middle", false, &text);
    }
    y += 18.0;
    c.text(
        MARGIN,
        y,
        12.0,
        "#555",
        "start",
        false,
        &format!(
            "cell: one swept value of {label}; red line: a breakpoint; triangle: searched ({searched} of {}), the others proved to keep the previous value's tree",
            points.len()
        ),
    );
    y
}

/// One band per run of values: its colour and number, its values, its tree in words;
/// the next `y`.
fn bands(
    c: &mut Canvas,
    mut y: f64,
    label: &str,
    points: &[(usize, &SumTree, bool)],
    r: &TreeRuns,
) -> f64 {
    y += 14.0;
    let indent = MARGIN + 34.0;
    let chars = ((WIDTH - indent - MARGIN) / (13.0 * 0.56)) as usize;
    for &(a, b) in &r.runs {
        y += 12.0;
        let top = y;
        let color = PALETTE[r.id[a] % PALETTE.len()];
        let values = if a == b {
            format!("{label} = {}", points[a].0)
        } else {
            format!(
                "{label} = {}..{} ({} values)",
                points[a].0,
                points[b].0,
                b - a + 1
            )
        };
        y += 16.0;
        c.text(indent, y, 14.0, "#222", "start", true, &values);
        let mut lines = wrap(&r.trees[r.id[a]].describe(), chars);
        if lines.len() > MAX_LINES {
            lines.truncate(MAX_LINES);
            lines[MAX_LINES - 1].push_str(" ...");
        }
        for line in &lines {
            y += 17.0;
            c.text(indent, y, 13.0, "#333", "start", false, line);
        }
        let height = y - top + 6.0;
        c.rect((MARGIN, top), (26.0, height), color, "#333");
        c.text(
            MARGIN + 13.0,
            top + height / 2.0 + 5.0,
            14.0,
            "#000",
            "middle",
            true,
            &(r.id[a] + 1).to_string(),
        );
        y += 6.0;
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_wrap_at_semicolons_then_spaces() {
        let lines = wrap("aaa bbb; ccc ddd eee fff ggg; h", 12);
        assert_eq!(lines, ["aaa bbb;", "ccc ddd eee", "fff ggg; h"]);
        assert!(wrap("", 10).is_empty());
    }

    #[test]
    fn a_tree_that_comes_back_keeps_its_colour_and_number() {
        let (seq, pair) = (SumTree::sequential(32), SumTree::pairwise(32));
        // 1..=64: in order, pairwise from 10, in order again from 40
        let points: Vec<(usize, &SumTree, bool)> = (1..=64)
            .map(|v| {
                let t = if (10..40).contains(&v) { &pair } else { &seq };
                (v, t, v == 1 || v == 10 || v == 40)
            })
            .collect();
        let svg = render("M", &points, Some("title"));
        assert!(
            svg.contains("2 distinct trees, breakpoints at M = 10, 40"),
            "{svg}"
        );
        assert!(svg.contains("searched (3 of 64)"), "{svg}");
        for band in [
            ">M = 1..9 (9 values)</text>",
            ">M = 10..39 (30 values)</text>",
            ">M = 40..64 (25 values)</text>",
        ] {
            assert!(svg.contains(band), "{band} missing from {svg}");
        }
        // three bands, two colours: the first and the last band share theirs
        let first = PALETTE[0];
        assert_eq!(svg.matches(r#"width="26.0""#).count(), 3);
        assert_eq!(
            svg.matches(&format!(r#"fill="{first}""#)).count(),
            4,
            "two strip runs and two bands in {first}: {svg}"
        );
        // two breakpoint lines, three searched triangles
        assert_eq!(svg.matches(r##"stroke="#c53030""##).count(), 2);
        assert_eq!(svg.matches("<path").count(), 3);
        // every run's first value is labelled under the strip, and the last values
        // where they fit (39 would touch 40's label)
        assert!(!svg.contains(r#"text-anchor="middle">39</text>"#));
        for v in [1, 9, 10, 40, 64] {
            assert!(
                svg.contains(&format!(r#"text-anchor="middle">{v}</text>"#)),
                "{v}"
            );
        }
    }

    #[test]
    fn one_value_draws_one_band() {
        let t = SumTree::sequential(4);
        let svg = render("threads", &[(3, &t, true)], None);
        assert!(
            svg.contains("no breakpoint") && svg.contains(">threads = 3</text>"),
            "{svg}"
        );
        assert!(!svg.contains("#c53030"));
    }
}
