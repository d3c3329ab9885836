//! The random-tree shape: a random binary tree over the terms in order, each range split
//! at a uniform point of its middle half (depth O(log n)), ranges of up to [`TREE_LEAF`]
//! terms summed in order, so that a draw is paid per 8 terms or so, not per term.
//!
//! The draws are written down as a program ([`tree_program`]) and the terms summed by it
//! ([`planned_tree`]), so that a site called again with as many terms reads the program
//! it kept ([`Stream::kept_tree`]) instead of drawing again.

use super::super::rng::{below, ScrambleRng};
use super::sequential;
use super::stream::Stream;
use crate::float::ProbeFloat;

/// Ranges a random tree sums in order: at most this many terms.
const TREE_LEAF: usize = 16;

/// The sum of `x` (at most [`BUFFER_CAP`](super::BUFFER_CAP) terms) in a random tree
/// drawn from `stream`, or, for a `whole` reduction, in the tree its site keeps for this
/// many terms. A range of at most [`TREE_LEAF`] terms draws nothing.
pub(super) fn random_tree<F: ProbeFloat>(x: &[F], stream: &mut Stream, whole: bool) -> F {
    let n = x.len();
    if n <= TREE_LEAF {
        return sequential(x);
    }
    if whole {
        if let Some(sum) = stream.kept_tree(n, tree_program, |p| planned_tree(x, p)) {
            return sum;
        }
    }
    planned_tree(x, &tree_program(n, stream.rng()))
}

/// The random tree over `n` terms as a program in postorder: a leaf's length (1 to
/// [`TREE_LEAF`] terms, summed in order), or 0 to add the last two values. A range
/// draws its split before its parts draw theirs, the left part first. Each part is at
/// most three quarters of its range, so over at most [`BUFFER_CAP`](super::BUFFER_CAP)
/// terms the tree is less than 40 levels deep.
pub(super) fn tree_program(n: usize, rng: &mut ScrambleRng) -> Vec<u8> {
    fn walk(n: usize, rng: &mut ScrambleRng, out: &mut Vec<u8>) {
        if n <= TREE_LEAF {
            // at most 16
            out.push(n as u8);
        } else {
            let m = (n / 4 + below(rng, n / 2 + 1)).clamp(1, n - 1);
            walk(m, rng, out);
            walk(n - m, rng, out);
            out.push(0);
        }
    }
    let mut out = Vec::with_capacity(n / 5 + 1);
    walk(n, rng, &mut out);
    out
}

/// Values a [`planned_tree`] holds at once: more than the depth of any tree over at most
/// [`BUFFER_CAP`](super::BUFFER_CAP) terms.
const TREE_STACK: usize = 64;

/// The sum of `x` in the tree `tree_program(x.len())` describes, in one pass: each leaf
/// is summed in order and pushed, each 0 adds the last two values. The leaves' sums do
/// not wait for one another, so they overlap in the processor, where a recursion would
/// run them one after another.
fn planned_tree<F: ProbeFloat>(x: &[F], program: &[u8]) -> F {
    let mut stack = [F::ZERO; TREE_STACK];
    let (mut depth, mut at) = (0usize, 0usize);
    for &op in program {
        if op == 0 {
            // a program of `tree_program`'s has two values here
            let (a, b) = (stack[depth - 2], stack[depth - 1]);
            depth -= 1;
            stack[depth - 1] = a.add(b);
        } else {
            let len = usize::from(op);
            stack[depth] = sequential(&x[at..at + len]);
            depth += 1;
            at += len;
        }
    }
    debug_assert!(depth == 1 && at == x.len(), "a program over all of x");
    stack[0]
}

#[cfg(test)]
mod tests {
    use super::super::super::rng::stream;
    use super::super::{spread, BUFFER_CAP};
    use super::*;

    /// The shape's definition, term by term: a range splits at a uniform point of its
    /// middle half, drawn before its parts draw theirs, the left part first.
    fn definition(x: &[f64], rng: &mut ScrambleRng) -> f64 {
        match x.len() {
            n if n <= TREE_LEAF => sequential(x),
            n => {
                let m = (n / 4 + below(rng, n / 2 + 1)).clamp(1, n - 1);
                let (l, r) = x.split_at(m);
                let left = definition(l, rng);
                left + definition(r, rng)
            }
        }
    }

    #[test]
    fn drawn_and_planned_trees_are_the_definition() {
        let x = spread(70_000);
        let seed = crate::scramble::property_seed(2);
        let mut lengths = stream(seed, 8, 0);
        for round in 0..300 {
            let n = match round {
                0 => 1,
                1 => 16,
                2 => 17,
                3 => x.len(),
                _ => 1 + below(&mut lengths, 5000),
            };
            let rng = stream(seed, 9, round);
            let want = definition(&x[..n], &mut rng.clone());
            let drawn = random_tree(&x[..n], &mut Stream::of(rng.clone()), false);
            let planned = planned_tree(&x[..n], &tree_program(n, &mut rng.clone()));
            assert_eq!(
                (drawn.to_bits(), planned.to_bits()),
                (want.to_bits(), want.to_bits()),
                "seed {seed} (FPREV_SEED), round {round}, n = {n}"
            );
        }
    }

    #[test]
    fn the_deepest_tree_fits_the_planned_stack() {
        // Every split leaves at most three quarters of its range, so the deepest tree
        // over BUFFER_CAP terms is the one that always splits off a quarter.
        let mut depth = 1;
        let mut n = BUFFER_CAP;
        while n > TREE_LEAF {
            n -= n / 4;
            depth += 1;
        }
        // a postorder stack holds one value per level, plus the one being pushed
        assert!(depth + 1 < TREE_STACK, "depth {depth}");
    }
}
