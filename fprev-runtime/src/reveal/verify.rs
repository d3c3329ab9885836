//! Checks that run after a tree is built, so a wrong tree is never returned silently:
//! sampled probes are asked again (nondeterminism) and compared with what the tree
//! predicts (consistency), then the tree is replayed on seeded random inputs and must
//! reproduce the target's bits: a plain tree as it is, a tree with truncating fused nodes
//! under a block-FMA model of those nodes fitted to the same inputs (see [`super::fit`]).

use super::arena::Arena;
use super::error::RevealError;
use super::fit::{self, FittedFused};
use super::prober::Prober;
use crate::black_box::{Probe, Target};
use crate::float::ProbeFloat;
use crate::tree::SumTree;

/// Replays check at least this many summed values (and at least [`MIN_REPLAYS`] and at
/// most [`MAX_REPLAYS`] inputs): every value is a rounded addition that a target which is
/// not a plain summation in this tree (wider accumulator, compensation, fused multiply-add)
/// gets wrong with fair probability, so large `n` needs fewer inputs, and for a target
/// costing well under a microsecond a call, eight replays of a long tree cost more than
/// every probe together.
const REPLAYED_VALUES: usize = 4096;
const MIN_REPLAYS: usize = 2;
const MAX_REPLAYS: usize = 8;

/// How many random inputs the tree is replayed on for `n` leaves.
pub(crate) fn replays_for(n: usize) -> usize {
    REPLAYED_VALUES
        .div_ceil(n.max(1))
        .clamp(MIN_REPLAYS, MAX_REPLAYS)
}

/// A random input the target has already answered (the known-order filter's), which the
/// replays reuse instead of calling the target again.
#[derive(Clone)]
pub(crate) struct Answered<T> {
    pub seed: u64,
    pub input: Vec<T>,
    /// The operand exponent sums of a product target's input
    /// ([`Target::operand_exponents`]), for replays under a fitted fused model.
    pub exps: Option<Vec<i32>>,
    pub answer: T,
}

/// The target's answers to random inputs of `seeds` (drawn as
/// [`Prober::random_input`] draws them), asked together ([`Target::call_many`]) where
/// fprev drew them: a target that answers many inputs a call answers them in one. An
/// input the target drew itself is answered right after it is drawn (a product target
/// keeps the operands of the input it drew last).
pub(crate) fn answer_random<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    seeds: impl IntoIterator<Item = u64>,
) -> Result<Vec<Answered<T>>, RevealError> {
    let mut out: Vec<Answered<T>> = Vec::new();
    let mut drawn_here = Vec::new();
    for seed in seeds {
        let mut input = vec![T::ZERO; prober.n];
        let own = prober.random_input(seed, &mut input);
        let exps = prober.operand_exponents(&input);
        let answer = if own {
            prober.call(&input)?
        } else {
            drawn_here.push(out.len());
            T::ZERO
        };
        out.push(Answered {
            seed,
            input,
            exps,
            answer,
        });
    }
    let inputs: Vec<&[T]> = drawn_here.iter().map(|&i| &out[i].input[..]).collect();
    let answers = prober.call_many(&inputs)?;
    for (&i, answer) in drawn_here.iter().zip(answers) {
        out[i].answer = answer;
    }
    Ok(out)
}

/// What the replays sum a random input with: the tree, or for a recognized library
/// order its own code (the same additions in the same order, pinned by the tests, and
/// an order of magnitude faster than walking the tree).
pub(crate) struct Replay<'t, T> {
    pub tree: &'t SumTree,
    pub order: Option<fn(&[T]) -> T>,
    /// Whether the filter's answered inputs were compared with this very order already
    /// (a recognized guess): they then count as replays without being summed again.
    pub filtered: bool,
    /// Whether the tree's multi-way nodes are known to truncate (a block-FMA chain
    /// proved beyond one mask's reach): its arithmetic is fitted, not replayed plainly.
    pub fused: bool,
}

impl<T: ProbeFloat> Replay<'_, T> {
    fn sum(&self, x: &[T]) -> T {
        match self.order {
            Some(order) => order(x),
            None => self.tree.replay(x),
        }
    }
}

/// What was checked before a tree was returned, and how.
///
/// ```
/// let r = fprev::Reveal::new(64).run_target(fprev::target::FnTarget(|x: &[f32]| x.iter().sum::<f32>()))?;
/// let v = r.verification;
/// assert!(v.performed && v.replayed >= 2 && v.fused.is_none());
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verification {
    /// Whether verification ran (`Reveal::verify(false)` turns it off).
    pub performed: bool,
    /// Sampled probes asked again and compared with the tree's predictions.
    pub rechecked: usize,
    /// Random inputs the target answered and the tree reproduced bit for bit.
    pub replayed: usize,
    /// For a tree with truncating fused nodes: the block-FMA model it was replayed
    /// under (fitted to those same inputs).
    pub fused: Option<FittedFused>,
    /// Whether the masks were widened (to the format's range) after a truncating node
    /// was seen, so that partial sums are swamped as well as single units.
    pub wide_masks: bool,
    /// Exact unit counts were found to stop below the accumulator's `2^p`, at `2^bits`
    /// (a narrower internal accumulator): counting windows were sized to it.
    pub count_bits: Option<u32>,
    /// Fused adders that keep fewer fraction bits than this below their largest term
    /// are excluded: the masks swamp every partial sum of units for them, so they show
    /// as truncating nodes (verified by a fitted model) or are refused. A wider adder
    /// could answer the probes like a different tree; in formats with little range (FP8
    /// products) this bound is low, and the caller should know (the command line prints
    /// a note when it is below 53).
    pub excluded_width: u32,
}

/// Re-ask the sampled probes, compare them with what the built tree in `arena` predicts
/// (`None` for a proved guess, whose sampled answers are its proof's, each compared with
/// its prediction already), then replay.
pub(crate) fn check<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: Option<&Arena>,
    replay: &Replay<'_, T>,
    seed: u64,
    answered: &[Answered<T>],
) -> Result<Verification, RevealError> {
    let mut done = Verification {
        performed: true,
        ..Verification::default()
    };
    // One batch for all re-asks: the target's background is copied once, not per probe.
    let samples = prober.samples().to_vec();
    let probes: Vec<Probe> = samples.iter().map(|s| s.probe).collect();
    let again = prober.ask(&probes)?;
    done.rechecked = probes.len();
    for (s, again) in samples.iter().zip(again) {
        if let Some(again) = again {
            if again != s.lost {
                return Err(RevealError::Nondeterministic {
                    probe: s.probe,
                    first: s.lost as u64,
                    second: again as u64,
                });
            }
        }
        let Some(arena) = arena else {
            continue;
        };
        let predicted = arena.predicted_lost(s.probe.plus, s.probe.minus);
        if predicted != Some(s.lost) {
            return Err(RevealError::Inconsistent {
                detail: format!(
                    "probe {} lost {} units but the assembled tree predicts {:?}",
                    s.probe, s.lost, predicted
                ),
            });
        }
    }
    // truncating fused nodes round in hardware-specific ways: fit a model of them
    if replay.fused || arena.is_some_and(|a| a.trunc.iter().any(|&t| t)) {
        let fitted = fit::fit_inputs(prober, replay.tree, seed, replay.fused)?;
        done.replayed = fitted.inputs;
        done.fused = Some(fitted);
        return Ok(done);
    }
    match replay_matches(prober, replay, seed, answered) {
        Ok(replayed) => done.replayed = replayed,
        // every node binary, but some of them may be two-term fused nodes that truncate
        // (blocks of two products): a fitted model may reproduce what plain additions miss
        Err(e @ RevealError::NotPlainSummation { .. }) if replay.order.is_none() => {
            let Ok(fitted) = fit::fit(prober, replay.tree, seed) else {
                return Err(e);
            };
            if fitted.binary == fit::BinaryNodes::Rounded && fitted.frac_out.is_none() {
                // plain additions already failed; a model that is plain in effect is not
                // an explanation
                return Err(e);
            }
            done.replayed = fitted.inputs;
            done.fused = Some(fitted);
        }
        Err(e) => return Err(e),
    }
    Ok(done)
}

/// The tree (under its fitted model, if any) against random inputs the target answered
/// in an earlier attempt at another mask scale.
pub(crate) fn earlier_answers<T: ProbeFloat>(
    tree: &SumTree,
    replay: &Replay<'_, T>,
    fused: Option<FittedFused>,
    earlier: &[Answered<T>],
) -> Result<(), RevealError> {
    for a in earlier {
        let got = match fused {
            Some(f) => fit::replay(f, tree, &a.input, a.exps.as_deref()),
            None => replay.sum(&a.input),
        };
        let same = got.to_bits_u64() == a.answer.to_bits_u64()
            || (got.to_f64().is_nan() && a.answer.to_f64().is_nan());
        if !same {
            let text = crate::reveal::error::clip(tree.to_string());
            return Err(RevealError::NotPlainSummation {
                tree: text,
                input_seed: a.seed,
                target_bits: a.answer.to_bits_u64(),
                tree_bits: got.to_bits_u64(),
            });
        }
    }
    Ok(())
}

pub(crate) fn replay_matches<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    replay: &Replay<'_, T>,
    seed: u64,
    answered: &[Answered<T>],
) -> Result<usize, RevealError> {
    let tree = replay.tree;
    let n = tree.leaf_count();
    let compare = |input_seed: u64, want: T, got: T| {
        let same = want.to_bits_u64() == got.to_bits_u64()
            || (want.to_f64().is_nan() && got.to_f64().is_nan());
        if same {
            return Ok(());
        }
        let text = crate::reveal::error::clip(tree.to_string());
        Err(RevealError::NotPlainSummation {
            tree: text,
            input_seed,
            target_bits: want.to_bits_u64(),
            tree_bits: got.to_bits_u64(),
        })
    };
    let reused = &answered[..answered.len().min(replays_for(n))];
    if !replay.filtered {
        for a in reused {
            compare(a.seed, a.answer, replay.sum(&a.input))?;
        }
    }
    let seeds = (reused.len()..replays_for(n)).map(|k| seed ^ 0x5EED_0000_0000 ^ k as u64);
    for a in answer_random(prober, seeds)? {
        compare(a.seed, a.answer, replay.sum(&a.input))?;
    }
    Ok(replays_for(n).max(reused.len()))
}
