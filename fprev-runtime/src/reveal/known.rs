//! Guess, then prove: most targets sum in a handful of library orders, and a guessed
//! binary tree is proved with one probe per inner node (`n - 1`), about half of what
//! searching costs.
//!
//! A candidate is first filtered by replays on two seeded random inputs (two calls of the
//! target for all candidates); the survivor's inner nodes are then probed, a sample of
//! 32 first: for node `v` with children `L` and `R`, `l(min L, min R)` must be `|v|`. Where
//! `l` is the size of the meeting node (binary and truncating fused nodes) this is a proof
//! by induction from the leaves: `L` and `R` are nodes of the true tree, the meeting node
//! contains both and has exactly `|L| + |R|` leaves, so it is `v`. Below a fused node that
//! rounds once, `l` only shows that `L` and `R` are siblings; a binary split of such a
//! node is refuted by the check of the node above it, whose answer then falls short (the
//! property tests feed every fused target binary refinements of its own tree, with the
//! replay filter fooled, and the probes alone refute them all), and the replays that
//! follow every reveal check the bits again. A failed proof costs its probes and the
//! search runs as if nothing had been guessed.

use super::error::RevealError;
use super::prober::Prober;
use super::template::Proof;
use super::verify::{answer_random, Answered};
use crate::black_box::Target;
use crate::float::ProbeFloat;
use crate::orders;
use crate::tree::SumTree;

/// Below this many inputs a search costs about as little as a proof.
pub(crate) const MIN_N: usize = 16;

/// A known order: its name, the order as code (a fast filter) and its tree.
type Known<T> = (&'static str, fn(&[T]) -> T, fn(usize) -> SumTree);

/// Guesses worth trying for every target: the orders of plain loops and of the libraries
/// fprev users meet most, cheapest filter first (NumPy's vectorizes; a sequential sum is
/// one chain of dependent additions, several cheap targets' calls long). XLA's comes
/// after the sequential order, which it is up to 32 values.
fn catalogue<T: ProbeFloat>() -> [Known<T>; 5] {
    [
        (
            "numpy-pairwise",
            orders::numpy_pairwise::<T>,
            SumTree::numpy_pairwise,
        ),
        ("sequential", orders::sequential::<T>, SumTree::sequential),
        ("pairwise", orders::balanced::<T>, SumTree::pairwise),
        ("reverse", orders::reverse::<T>, SumTree::reverse),
        (
            "xla-tree-reduction",
            orders::xla_tree_reduction::<T>,
            SumTree::xla_tree_reduction,
        ),
    ]
}

/// A proved guess: its name, the tree itself, and for a catalogue order the order as
/// code (the replays' fast path: the tests pin each to its tree's replay, bit for bit).
pub(crate) struct Recognized<T> {
    pub name: String,
    pub tree: SumTree,
    pub order: Option<fn(&[T]) -> T>,
}

/// What the guesses found: the proved one, if any, and the filter's random inputs with
/// the target's answers (the verification replays reuse them).
pub(crate) struct Guesses<T> {
    pub recognized: Option<Recognized<T>>,
    pub answered: Vec<Answered<T>>,
}

/// The first guess (the hints, then the catalogue when `known`) whose replay matches the
/// target and whose proof holds.
pub(crate) fn recognize<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    hints: &[(String, SumTree)],
    known: bool,
    seed: u64,
) -> Result<Guesses<T>, RevealError> {
    let n = prober.n;
    let known = known && n >= MIN_N;
    let mut guesses = Guesses {
        recognized: None,
        answered: Vec::new(),
    };
    if prober.needs_windows() || (hints.is_empty() && !known) {
        return Ok(guesses);
    }
    // Two inputs, exponents spread wide (`seed % 3 == 0`) and narrow (`== 2`, more
    // cancellation): different orders rarely agree on both.
    let base = (seed ^ 0x6E55_0000) / 3 * 3;
    guesses.answered = answer_random(prober, [base, base + 2])?;
    let answered = &guesses.answered;
    let matches = |sum: &dyn Fn(&[T]) -> T| {
        answered
            .iter()
            .all(|a| sum(&a.input).to_bits_u64() == a.answer.to_bits_u64())
    };
    let mut found = None;
    for (name, tree) in hints {
        if matches(&|x| tree.replay(x)) && prove(prober, tree)? {
            found = Some(Recognized {
                name: name.clone(),
                tree: tree.clone(),
                order: None,
            });
            break;
        }
    }
    if known && found.is_none() {
        for (name, order, tree) in catalogue::<T>() {
            if matches(&order) {
                let tree = tree(n);
                if prove(prober, &tree)? {
                    found = Some(Recognized {
                        name: name.to_string(),
                        tree,
                        order: Some(order),
                    });
                    break;
                }
            }
        }
    }
    guesses.recognized = found;
    Ok(guesses)
}

/// `tree` recognized under `name` when it replays the filter's `answered` inputs and its
/// proof holds (a structure-guided guess, made after the catalogue missed).
pub(crate) fn prove_guess<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    answered: &[Answered<T>],
    name: &str,
    tree: SumTree,
) -> Result<Option<Recognized<T>>, RevealError> {
    let replays = answered
        .iter()
        .all(|a| tree.replay(&a.input).to_bits_u64() == a.answer.to_bits_u64());
    Ok((replays && prove(prober, &tree)?).then(|| Recognized {
        name: name.to_string(),
        tree,
        order: None,
    }))
}

/// Probe every inner node of the binary `tree` (`false` for a k-ary one).
fn prove<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
) -> Result<bool, RevealError> {
    match Proof::of_tree(tree) {
        Some(proof) => proof.holds(prober),
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use crate::black_box::Target;
    use crate::{orders, Reveal, SumTree};

    /// A target that answers one probe per input (no [`Target::probe_sets`]).
    struct Single<F>(F);

    impl<F: FnMut(&[f32]) -> f32> Target<f32> for Single<F> {
        fn call(&mut self, x: &[f32]) -> Result<f32, crate::black_box::TargetError> {
            Ok((self.0)(x))
        }
    }

    #[test]
    fn known_orders_are_proved_in_n_minus_1_probes_or_fewer_inputs() {
        let f = |x: &[f32]| orders::numpy_pairwise(x);
        let single = Reveal::new(1000)
            .verify(false)
            .run_target(Single(f))
            .unwrap();
        assert_eq!(single.tree, SumTree::numpy_pairwise(1000));
        assert_eq!(single.recognized.as_deref(), Some("numpy-pairwise"));
        assert_eq!(single.probes, 999);
        // several probes per input where the tree has nodes side by side
        let sets = Reveal::new(1000)
            .verify(false)
            .run_target(crate::black_box::FnTarget(f))
            .unwrap();
        assert_eq!(sets.tree, single.tree);
        assert_eq!(sets.recognized.as_deref(), Some("numpy-pairwise"));
        assert!(sets.probes < 400, "{} inputs", sets.probes);
        // a chain has no two nodes side by side: one probe per node
        let chain = Reveal::new(1000)
            .verify(false)
            .run_target(crate::black_box::FnTarget(orders::sequential::<f32>))
            .unwrap();
        assert_eq!(chain.recognized.as_deref(), Some("sequential"));
        assert_eq!(chain.probes, 999);
    }

    #[test]
    fn xlas_cpu_order_is_recognized_and_proved_with_probe_sets() {
        // windows of 32 side by side: their nodes of one height share inputs
        for n in [33, 100, 1024, 3000, 40_000] {
            let r = Reveal::new(n)
                .verify(false)
                .run_target(crate::black_box::FnTarget(
                    orders::xla_tree_reduction::<f32>,
                ))
                .unwrap();
            assert_eq!(r.tree, SumTree::xla_tree_reduction(n), "n={n}");
            assert_eq!(r.recognized.as_deref(), Some("xla-tree-reduction"));
            // a node per input below 5 windows; from 1024 values (32 windows) on, a
            // complete graph of each height's nodes: 342 inputs at n = 1024
            let bound = if n < 1024 { n - 1 } else { n / 2 };
            eprintln!("n={n}: {} inputs", r.probes);
            assert!(r.probes as usize <= bound, "n={n}: {} inputs", r.probes);
        }
    }

    #[test]
    fn a_wrong_hint_falls_back_to_the_search() {
        // The hint is refuted by its replay or its proof; the search still finds the order.
        let r = Reveal::new(64)
            .hint(SumTree::pairwise(64))
            .known_orders(false)
            .run_target(crate::black_box::FnTarget(orders::sequential::<f64>))
            .unwrap();
        assert_eq!(r.tree, SumTree::sequential(64));
        assert_eq!(r.recognized, None);
    }

    /// A target whose first two calls (the filter's) answer as sequential summation
    /// would, and every later one as pairwise summation.
    fn deceptive(n: usize) -> impl FnMut(&[f64]) -> f64 {
        let truth = SumTree::pairwise(n);
        let mut calls = 0u32;
        move |x: &[f64]| {
            calls += 1;
            if calls <= 2 {
                SumTree::sequential(n).replay(x)
            } else {
                truth.replay(x)
            }
        }
    }

    #[test]
    fn a_hint_that_replays_right_but_is_wrong_is_refuted_by_its_proof() {
        let n = 32;
        let r = Reveal::new(n)
            .hint(SumTree::sequential(n))
            .known_orders(false)
            .verify(false)
            .run_target(crate::black_box::FnTarget(deceptive(n)))
            .unwrap();
        assert_eq!(r.tree, SumTree::pairwise(n));
        assert_eq!(r.recognized, None);
    }

    #[test]
    fn the_filters_answers_are_replayed_by_the_verification() {
        // The same target, verified: the tree it is found to sum in does not reproduce
        // its answers to the filter's inputs, so it is no plain summation.
        let n = 32;
        let e = Reveal::new(n)
            .hint(SumTree::sequential(n))
            .run_target(crate::black_box::FnTarget(deceptive(n)))
            .unwrap_err();
        assert!(
            matches!(e, crate::RevealError::NotPlainSummation { .. }),
            "{e}"
        );
    }
}
