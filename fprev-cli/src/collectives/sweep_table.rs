//! `fprev reveal mpi-allreduce --ranks 2..16 --count 1,1024 --algorithm all`: one
//! revelation per configuration, printed as a table, then which configurations share
//! one tree (the order a user can rely on across rank counts and message sizes).

use std::collections::BTreeMap;

use fprev::SumTree;

/// A list of sizes from `--ranks` or `--count`: `8`, `2..16` (both ends included),
/// or a comma-separated list of those.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sizes(pub Vec<usize>);

/// The most configurations one sweep is allowed: each launches its ranks.
pub const MAX_SIZES: usize = 4096;

/// Parse `--ranks` / `--count`.
pub fn parse_sizes(text: &str) -> Result<Sizes, String> {
    let mut sizes = Vec::new();
    for part in text.split(',') {
        let number = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("{t:?} is not a whole number (write 8, 2..16 or 1,1024)"))
        };
        match part.split_once("..") {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("{a}..{b} is empty: write the smaller end first"));
                }
                if b - a >= MAX_SIZES || sizes.len() + (b - a) >= MAX_SIZES {
                    return Err(format!("more than {MAX_SIZES} sizes"));
                }
                sizes.extend(a..=b);
            }
            None => sizes.push(number(part)?),
        }
    }
    Ok(Sizes(sizes))
}

/// One revealed configuration.
pub struct RevealedConfiguration {
    /// The algorithm's name.
    pub algorithm: &'static str,
    /// Ranks.
    pub ranks: usize,
    /// Elements per rank.
    pub count: usize,
    /// The revealed tree.
    pub tree: SumTree,
}

/// The table, then the configurations grouped by tree (trees of up to 16 leaves also
/// as canonical text).
pub fn table(rows: &[RevealedConfiguration]) -> String {
    let mut out = format!("{:<20} {:>6} {:>9}  tree\n", "algorithm", "ranks", "count");
    for r in rows {
        out += &format!(
            "{:<20} {:>6} {:>9}  {}\n",
            r.algorithm,
            r.ranks,
            r.count,
            r.tree.describe()
        );
    }
    let mut groups: BTreeMap<String, Vec<&RevealedConfiguration>> = BTreeMap::new();
    for r in rows {
        groups.entry(r.tree.to_string()).or_default().push(r);
    }
    let shared: Vec<_> = groups.values().filter(|g| g.len() > 1).collect();
    out += &format!(
        "\n{} configurations, {} distinct trees; shared by several:\n",
        rows.len(),
        groups.len()
    );
    for g in shared {
        let tree = &g[0].tree;
        let text = if tree.leaf_count() <= 16 {
            format!(" {tree}")
        } else {
            String::new()
        };
        let who: Vec<String> = g
            .iter()
            .map(|r| format!("{} P={} C={}", r.algorithm, r.ranks, r.count))
            .collect();
        out += &format!("  {}{text}: {}\n", tree.describe(), who.join("; "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_numbers_ranges_and_lists() {
        assert_eq!(parse_sizes("8"), Ok(Sizes(vec![8])));
        assert_eq!(parse_sizes("2..4,16"), Ok(Sizes(vec![2, 3, 4, 16])));
        assert!(parse_sizes("4..2").unwrap_err().contains("smaller end"));
        assert!(parse_sizes("x").unwrap_err().contains("whole number"));
        assert!(parse_sizes("0..99999999")
            .unwrap_err()
            .contains("more than"));
    }

    #[test]
    fn configurations_with_one_tree_are_grouped() {
        let row = |algorithm, ranks, tree| RevealedConfiguration {
            algorithm,
            ranks,
            count: 1,
            tree,
        };
        let rows = [
            row("default", 4, SumTree::pairwise(4)),
            row("recursive-doubling", 4, SumTree::pairwise(4)),
            row("ring", 4, SumTree::sequential(4)),
        ];
        let t = table(&rows);
        assert!(t.contains("3 configurations, 2 distinct trees"), "{t}");
        assert!(
            t.contains("((0+1)+(2+3)): default P=4 C=1; recursive-doubling P=4 C=1"),
            "{t}"
        );
        assert!(!t.contains(": ring"), "{t}");
    }
}
