//! Which reductions a failure needs: delta debugging (Zeller's ddmin) over the scramble
//! sites the failing run reached, scrambling only a subset of them at a time
//! (`FPREV_SITES`), down to a set whose reordering alone still fails the test and from
//! which no site can be dropped.

use crate::findings::ScrambleSite;

/// Reads `FPREV_SITES_OUT`'s lines (`label<TAB>file<TAB>line`).
pub fn parse_sites(text: &str) -> Vec<ScrambleSite> {
    let mut out: Vec<ScrambleSite> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some(ScrambleSite {
                label: f.next()?.to_string(),
                file: f.next()?.to_string(),
                line: f.next()?.trim().parse().ok()?,
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The smallest failing subset ddmin finds: `fails(subset)` runs the test with only
/// those sites scrambled. `sites` itself must fail. Returns the subset and the number of
/// test runs it took.
pub fn ddmin<T: Clone>(
    sites: &[T],
    mut fails: impl FnMut(&[T]) -> Result<bool, crate::cli_output::CargoFprevError>,
) -> Result<(Vec<T>, usize), crate::cli_output::CargoFprevError> {
    let mut items = sites.to_vec();
    let mut runs = 0;
    let mut n = 2usize;
    while items.len() >= 2 {
        let len = items.len();
        let n_eff = n.min(len);
        let chunk = len.div_ceil(n_eff);
        let parts: Vec<Vec<T>> = items.chunks(chunk).map(<[T]>::to_vec).collect();
        let mut reduced = false;
        for (i, part) in parts.iter().enumerate() {
            runs += 1;
            if fails(part)? {
                items = part.clone();
                n = 2;
                reduced = true;
                break;
            }
            if parts.len() > 2 {
                let rest: Vec<T> = parts
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, p)| p.iter().cloned())
                    .collect();
                runs += 1;
                if fails(&rest)? {
                    items = rest;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n_eff >= len {
                break;
            }
            n = (2 * n).min(len);
        }
    }
    Ok((items, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_pair_a_failure_needs() {
        let sites: Vec<u32> = (0..23).collect();
        let (min, runs) = ddmin(&sites, |s| Ok(s.contains(&4) && s.contains(&17))).expect("ok");
        assert_eq!(min, vec![4, 17]);
        assert!(runs < 60, "{runs} runs");
        let (one, _) = ddmin(&sites, |s| Ok(s.contains(&22))).expect("ok");
        assert_eq!(one, vec![22]);
        let (all, _) = ddmin(&[7u32], |_| Ok(true)).expect("ok");
        assert_eq!(all, vec![7]);
    }

    #[test]
    fn sites_file_lines() {
        let s =
            parse_sites("a::f#reduction0\tsrc/lib.rs\t12\nbroken line\nb::g#iter1\tsrc/b.rs\t3\n");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label, "a::f#reduction0");
        assert_eq!(s[1].line, 3);
    }
}
