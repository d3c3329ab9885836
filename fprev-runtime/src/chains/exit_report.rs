//! The chain report printed when the process exits (`FPREV_CHAINS=1`), and its merge into
//! the record of the whole run.

use super::merged;
use super::report::ChainReport;

/// Prints `r` on standard error and merges it into the run's record (see `merged`).
pub(super) fn print(r: &ChainReport) {
    eprintln!("{r}");
    // The record of the whole run (see `merged`): each process adds its counts.
    if let Some(dir) = merged::directory() {
        match merged::merge_into(&dir, r) {
            Ok((path, n)) => eprintln!(
                "fprev chains: merged report of this run ({n} process(es) so far): {}",
                path.display()
            ),
            Err(e) => eprintln!(
                "fprev chains: cannot merge into {}: {e}",
                dir.join("chains.txt").display()
            ),
        }
    }
}
