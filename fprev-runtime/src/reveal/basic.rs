//! BasicFPRev: probe every pair, sort by `l`, merge with union-find.
//!
//! Pairs are merged in ascending `l`, so both subtrees are complete when their pair comes
//! up. A pair whose sizes add up to `l` is a binary node (or the first two children of an
//! exact fused node); a pair whose sizes add up to less than `l` opens a truncating fused
//! node of `l` leaves; a pair whose sizes add up to more is a further child of an exact
//! fused node, recognised through the child that holds the pair's leaf.

use std::collections::HashMap;

use super::arena::Arena;
use super::error::RevealError;
use super::prober::Prober;
use crate::black_box::Target;
use crate::float::ProbeFloat;

struct Components {
    parent: Vec<u32>,
    node: Vec<u32>,
}

impl Components {
    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = p;
        }
        x
    }
}

/// Build the tree: probe every pair, then merge the pairs' subtrees in ascending `l`.
pub(crate) fn build<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
) -> Result<u32, RevealError> {
    let n = prober.n;
    if prober.needs_windows() {
        return Err(RevealError::PrecisionTooLow {
            detail: format!(
                "Basic needs every count exact, and {n} summands exceed 2^{} in {}; use Algorithm::FPRev",
                T::FORMAT.precision,
                T::FORMAT.name
            ),
        });
    }
    let pairs = probe_every_pair(prober)?;
    let mut comps = Components {
        parent: (0..n as u32).collect(),
        node: (0..n as u32).collect(),
    };
    // truncating nodes still collecting children, with the `l` they will reach
    let mut open: HashMap<u32, u32> = HashMap::new();
    for &(l, i, j) in &pairs {
        let (ci, cj) = (comps.find(i), comps.find(j));
        if ci == cj {
            continue;
        }
        let (x, y) = (comps.node[ci as usize], comps.node[cj as usize]);
        let merged = merge(prober, arena, &mut open, (l, i, j), x, y)?;
        if open.get(&merged) == Some(&arena.size[merged as usize]) {
            open.remove(&merged);
        }
        comps.parent[cj as usize] = ci;
        comps.node[ci as usize] = merged;
    }
    if let Some((&v, &l)) = open.iter().next() {
        return Err(RevealError::Inconsistent {
            detail: format!(
                "a fused node of {l} leaves was left with only {} leaves",
                arena.size[v as usize]
            ),
        });
    }
    let root = comps.find(0);
    Ok(comps.node[root as usize])
}

/// `(l, i, j)` of every pair `i < j`, in ascending `l`.
fn probe_every_pair<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
) -> Result<Vec<(u32, u32, u32)>, RevealError> {
    let n = prober.n;
    let count = n
        .checked_mul(n - 1)
        .map(|c| c / 2)
        .ok_or(RevealError::OutOfMemory {
            n,
            what: "every pair's answer".into(),
            bytes: u64::MAX,
            budget: None,
        })?;
    let mut pairs: Vec<(u32, u32, u32)> =
        super::memory::with_capacity(count, n, "every pair's answer")?;
    let (all, mut row): (Vec<usize>, _) = ((0..n).collect(), Vec::with_capacity(n));
    for i in 0..n - 1 {
        let members = &all[i + 1..];
        prober.trusted_row(i, members, &[], &mut row)?;
        pairs.extend(
            members
                .iter()
                .zip(&row)
                .map(|(&j, &l)| (l, i as u32, j as u32)),
        );
    }
    // Counting sort by `l` (at most n): pairs were made in (i, j) order, which the stable
    // scatter keeps within each count, the same order as sorting the triples, in
    // linear time: a comparison sort of the n^2/2 triples would cost a cheap target more
    // than probing them.
    Ok(sort_by_count(pairs, n))
}

/// Join the subtrees `x` (holding `i`) and `y` (holding `j`) whose leaves `i` and `j`
/// meet at `l`; the node that holds both.
fn merge<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    open: &mut HashMap<u32, u32>,
    (l, i, j): (u32, u32, u32),
    x: u32,
    y: u32,
) -> Result<u32, RevealError> {
    let (sx, sy) = (arena.size[x as usize], arena.size[y as usize]);
    let (ox, oy) = (open.get(&x).copied(), open.get(&y).copied());
    if ox == Some(l) || oy == Some(l) {
        // a truncating node of l leaves still collecting children
        if sx + sy > l {
            return Err(inconsistent(i, j, l, sx, sy));
        }
        let (keep, other) = if ox == Some(l) { (x, y) } else { (y, x) };
        if open.get(&other) == Some(&l) {
            arena.absorb(keep, other);
            open.remove(&other);
        } else {
            arena.adopt(keep, other);
        }
        Ok(keep)
    } else if ox.is_some() || oy.is_some() {
        Err(inconsistent(i, j, l, sx, sy))
    } else if sx + sy == l {
        Ok(arena.node(&[x, y], false))
    } else if sx + sy < l {
        let v = arena.node(&[x, y], true);
        open.insert(v, l);
        Ok(v)
    } else {
        merge_exact_fused(prober, arena, (l, i, j), x, y)
    }
}

/// `x` and `y` hold more than `l` leaves together: they meet in an exact fused node,
/// where one of them is a further child of the other's node, or both are two children.
fn merge_exact_fused<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    (l, i, j): (u32, u32, u32),
    x: u32,
    y: u32,
) -> Result<u32, RevealError> {
    let (sx, sy) = (arena.size[x as usize], arena.size[y as usize]);
    let cxi = arena.child_towards(x, i as usize);
    let cyj = arena.child_towards(y, j as usize);
    let xi = cxi.map(|c| arena.size[c as usize]);
    let yj = cyj.map(|c| arena.size[c as usize]);
    let x_groups = xi.is_some_and(|s| s + sy == l);
    let y_groups = yj.is_some_and(|s| sx + s == l);
    // Both readings fit the all-unit answers (an exact fused node over `(a+b), c, d`
    // probes like one over `a, b, (c+d)`): zero x's other children and ask again.
    let x_groups = if x_groups && y_groups {
        let child = cxi.unwrap_or(x);
        let keep: std::collections::HashSet<usize> =
            arena.leaves_under(child).into_iter().collect();
        let zeros: Vec<usize> = arena
            .leaves_under(x)
            .into_iter()
            .filter(|v| !keep.contains(v))
            .collect();
        let probe = crate::black_box::Probe {
            plus: i as usize,
            minus: j as usize,
        };
        let lz = prober.probe_with_zeros(probe, &zeros)?;
        if lz == Some(l) {
            true
        } else if lz == Some(l - (sx - xi.unwrap_or(sx))) {
            false
        } else {
            return Err(inconsistent(i, j, l, sx, sy));
        }
    } else {
        x_groups
    };
    if x_groups {
        arena.adopt(x, y);
        Ok(x)
    } else if y_groups {
        arena.adopt(y, x);
        Ok(y)
    } else if matches!((xi, yj), (Some(a), Some(b)) if a + b == l) {
        arena.absorb(x, y);
        Ok(x)
    } else {
        Err(inconsistent(i, j, l, sx, sy))
    }
}

/// `pairs` ordered by their first field (each at most `max`), ties kept in order.
fn sort_by_count(pairs: Vec<(u32, u32, u32)>, max: usize) -> Vec<(u32, u32, u32)> {
    let mut start = vec![0usize; max + 2];
    for &(l, _, _) in &pairs {
        start[(l as usize).min(max) + 1] += 1;
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut sorted = vec![(0, 0, 0); pairs.len()];
    for &p in &pairs {
        let slot = &mut start[(p.0 as usize).min(max)];
        sorted[*slot] = p;
        *slot += 1;
    }
    sorted
}

fn inconsistent(i: u32, j: u32, l: u32, sx: u32, sy: u32) -> RevealError {
    RevealError::Inconsistent {
        detail: format!("l({i},{j}) = {l} cannot join subtrees of {sx} and {sy} leaves"),
    }
}

#[cfg(test)]
mod tests {
    use super::sort_by_count;
    use rand::{Rng, SeedableRng};

    #[test]
    fn counting_sort_orders_pairs_like_sorting_the_triples() {
        for seed in 0..20u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let n = rng.random_range(2..200usize);
            // made in (i, j) order, as `build` makes them
            let pairs: Vec<(u32, u32, u32)> = (0..n as u32)
                .flat_map(|i| (i + 1..n as u32).map(move |j| (i, j)))
                .map(|(i, j)| (rng.random_range(2..=n as u32), i, j))
                .collect();
            let mut want = pairs.clone();
            want.sort_unstable();
            assert_eq!(sort_by_count(pairs, n), want, "seed {seed}");
        }
    }
}
