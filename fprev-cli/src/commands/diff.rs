//! `fprev diff A B`: two tree files compared; exit 1 when they differ, with the smallest
//! subtree that differs.

use std::path::Path;
use std::process::ExitCode;

use crate::console::CommandFailure;
use crate::tree_file::read_tree;

/// Compares the trees in `a` and `b`.
pub fn run(a: &Path, b: &Path) -> Result<ExitCode, CommandFailure> {
    let (ta, tb) = (read_tree(a)?, read_tree(b)?);
    match ta.diff(&tb) {
        None => {
            outln!("same tree ({} leaves)", ta.leaf_count());
            Ok(ExitCode::SUCCESS)
        }
        Some(d) => {
            if d.leaves.is_empty() {
                outln!("different sizes: {} vs {}", d.left, d.right);
            } else {
                let shown: Vec<String> = d.leaves.iter().take(16).map(|l| l.to_string()).collect();
                let more = if d.leaves.len() > 16 { ",..." } else { "" };
                outln!(
                    "trees differ; smallest differing subtree covers leaves {{{}{more}}} ({} leaves)",
                    shown.join(","),
                    d.leaves.len()
                );
                outln!("{}: {}", a.display(), d.left);
                outln!("{}: {}", b.display(), d.right);
            }
            Ok(ExitCode::from(1))
        }
    }
}
