//! The thread split ([`CombineShape::Threads`](super::CombineShape::Threads)): rayon's
//! halving join over contiguous pieces, each piece summed in order, the piece sums
//! combined as the joins nest.
//!
//! The pieces are summed side by side, four at a time: each piece is still one chain of
//! additions in its order, but four chains keep the adder busy where one waits for each
//! addition's result (the plain loop overlaps its additions with the work that makes the
//! terms; here the terms are all there already). Where the pieces are and how the joins
//! nest depend only on the length and the number of parts, so a [`SplitPlan`] works them
//! out once and keeps them while the reductions that follow have the same length (a dot
//! product of 94 terms called for each of 52,181 rows).

use super::sequential;
use crate::float::ProbeFloat;

/// The pieces and joins of the last split, and room for the piece sums.
pub(super) struct SplitPlan<F> {
    /// The split planned: `(terms, parts)`; `(0, 0)` before the first.
    of: (usize, usize),
    /// The pieces, left to right, as `from..to` of the terms.
    pieces: Vec<(usize, usize)>,
    /// The join tree in post-order: `true` takes the next piece's sum, `false` adds the
    /// last two values (the left one first).
    joins: Vec<bool>,
    sums: Vec<F>,
}

impl<F> Default for SplitPlan<F> {
    fn default() -> Self {
        SplitPlan {
            of: (0, 0),
            pieces: Vec::new(),
            joins: Vec::new(),
            sums: Vec::new(),
        }
    }
}

/// Joins nest at most this deep: a split into up to 255 parts halves the parts at each
/// level (8 levels), plus the leaf.
const DEPTH: usize = 10;

impl<F: ProbeFloat> SplitPlan<F> {
    /// The split of `x` into `parts`, as [`split_nested`] sums it.
    pub(super) fn sum(&mut self, x: &[F], parts: usize) -> F {
        if parts <= 1 || x.len() <= 1 {
            return sequential(x);
        }
        if parts > 255 {
            // deeper than the value stack below; no drawn split comes near
            return split_nested(x, parts);
        }
        if self.of != (x.len(), parts) {
            self.pieces.clear();
            self.joins.clear();
            self.plan(0, x.len(), parts);
            self.of = (x.len(), parts);
        }
        self.sums.clear();
        let mut groups = self.pieces.chunks_exact(4);
        for g in &mut groups {
            let [a, b, c, d] = [g[0], g[1], g[2], g[3]];
            self.sums.extend(sequential_four([
                &x[a.0..a.1],
                &x[b.0..b.1],
                &x[c.0..c.1],
                &x[d.0..d.1],
            ]));
        }
        for &(from, to) in groups.remainder() {
            self.sums.push(sequential(&x[from..to]));
        }
        let mut values = [F::ZERO; DEPTH];
        let (mut depth, mut next) = (0, 0);
        for &take in &self.joins {
            if take {
                values[depth] = self.sums[next];
                next += 1;
                depth += 1;
            } else {
                depth -= 1;
                values[depth - 1] = values[depth - 1].add(values[depth]);
            }
        }
        values[0]
    }

    /// Lists the pieces and joins of `from..to` split into `parts`.
    fn plan(&mut self, from: usize, to: usize, parts: usize) {
        if parts <= 1 || to - from <= 1 {
            self.pieces.push((from, to));
            self.joins.push(true);
            return;
        }
        let mid = from + (to - from) / 2;
        let lp = parts / 2;
        self.plan(from, mid, lp.max(1));
        self.plan(mid, to, parts - lp);
        self.joins.push(false);
    }
}

/// The split as the joins nest, one piece after another: what [`SplitPlan::sum`] gives,
/// for the few terms of a pairwise lane combine.
pub(super) fn split_nested<F: ProbeFloat>(x: &[F], parts: usize) -> F {
    if parts <= 1 || x.len() <= 1 {
        return sequential(x);
    }
    let mid = x.len() / 2;
    let (l, r) = x.split_at(mid);
    let lp = parts / 2;
    split_nested(l, lp.max(1)).add(split_nested(r, parts - lp))
}

/// [`sequential`] of four non-empty slices, side by side.
pub(super) fn sequential_four<F: ProbeFloat>([a, b, c, d]: [&[F]; 4]) -> [F; 4] {
    let n = a.len().min(b.len()).min(c.len()).min(d.len());
    let (mut sa, mut sb, mut sc, mut sd) = (a[0], b[0], c[0], d[0]);
    for i in 1..n {
        sa = sa.add(a[i]);
        sb = sb.add(b[i]);
        sc = sc.add(c[i]);
        sd = sd.add(d[i]);
    }
    let rest = |s: F, x: &[F]| x[n..].iter().fold(s, |acc, &t| acc.add(t));
    [rest(sa, a), rest(sb, b), rest(sc, c), rest(sd, d)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scramble::rng::{below, stream};

    #[test]
    fn planned_splits_give_the_nested_splits_sum() {
        // One plan through splits of changing and repeated lengths and parts, so that
        // both a kept plan and a new one are held to the nested sum.
        let x = super::super::spread(20_000);
        let seed = crate::scramble::property_seed(2);
        let mut rng = stream(seed, 11, 0);
        let mut plan = SplitPlan::default();
        let (mut n, mut parts) = (1, 1);
        for round in 0..600 {
            if below(&mut rng, 3) > 0 {
                n = 1 + below(&mut rng, if round % 2 == 0 { 300 } else { x.len() });
                parts = 1 + below(&mut rng, if round % 5 == 0 { 255 } else { 20 });
            }
            assert_eq!(
                plan.sum(&x[..n], parts).to_bits(),
                split_nested(&x[..n], parts).to_bits(),
                "seed {seed} (FPREV_SEED), round {round}, n = {n}, parts = {parts}"
            );
        }
    }

    #[test]
    fn four_side_by_side_are_four_sequential_sums() {
        let x: Vec<f32> = (0..100).map(|i| 1.0 / (1.0 + i as f32)).collect();
        let pieces = [&x[0..7], &x[7..40], &x[40..41], &x[41..100]];
        let want = pieces.map(sequential);
        assert_eq!(
            sequential_four(pieces).map(f32::to_bits),
            want.map(f32::to_bits)
        );
    }
}
