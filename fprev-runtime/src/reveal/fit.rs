//! Verifying trees whose fused nodes truncate: the probes say where the nodes are, and
//! random inputs must then be reproduced bit for bit by the tree under *some* block-FMA
//! model of those nodes (see [`crate::fused`]). The model is fitted: every candidate
//! alignment rule (a product's own exponent or its operands' exponent sum), alignment
//! width, result width and binary-node rounding is replayed on each random input the
//! target answered, and the candidates that miss are dropped. A tree that no candidate
//! follows on every input is refused, so a target that sorts its blocks, truncates its
//! results to integers or ignores its input never passes as fused hardware.

use super::error::RevealError;
use super::prober::Prober;
use crate::black_box::Target;
use crate::float::ProbeFloat;
use crate::fused::{AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, Rounding, MAX_FRAC};
use crate::tree::SumTree;
use std::cell::RefCell;

mod fitted;
pub use fitted::{BinaryNodes, ChainStructure, FittedFused, MeasuredCount};

#[derive(Clone, Copy)]
struct Candidate {
    model: BlockFma,
    binary: BinaryNodes,
}

impl Candidate {
    fn new<T: ProbeFloat>(
        frac: u32,
        frac_out: Option<u32>,
        alignment: Alignment,
        binary: BinaryNodes,
        accumulator_cut: AccumulatorCut,
        align_rounding: Rounding,
    ) -> Candidate {
        // the hardware rule clamps exponents at the accumulator format's normal range
        // (MMA-Sim's and Khattak and Mikaitis's models of NVIDIA's units); the textbook
        // rule has no clamp, and neither has AMD's, whose blocks align their products
        // alone
        let nvidia = alignment == Alignment::OperandExponents
            && accumulator_cut == AccumulatorCut::WithProducts;
        let min_exp = nvidia.then_some(T::FORMAT.min_exp);
        Candidate {
            model: BlockFma {
                nfma: 1,
                frac,
                frac_out,
                accumulator: AccumulatorJoin::Aligned,
                chunk: None,
                alignment,
                min_exp,
                align_rounding,
                accumulator_cut,
            },
            binary,
        }
    }

    /// `tree` over `x`, the leaves' operand exponent sums `exps` when known.
    fn replay<T: ProbeFloat>(&self, tree: &SumTree, x: &[T], exps: Option<&[i32]>) -> T {
        let n = tree.leaf_count() as u32;
        let multiway = |c: u32| c >= n && tree.children(c as usize).len() > 2;
        let fused_pair = |kids: [u32; 2]| match self.binary {
            BinaryNodes::Rounded => false,
            BinaryNodes::Fused => true,
            BinaryNodes::LeafPairs => kids[0] < n && kids[1] < n,
            BinaryNodes::AfterFused => {
                (multiway(kids[0]) && kids[1] < n) || (multiway(kids[1]) && kids[0] < n)
            }
        };
        let m = self.model;
        // a leaf aligns by its operands' exponent sum under the hardware rule when the
        // target said what it is; anything else by the value's own exponent
        let term = |c: u32, v: f64| -> (f64, i32) {
            match (m.alignment, exps) {
                (Alignment::OperandExponents, Some(e)) if c < n => (v, e[c as usize]),
                _ => (v, m.exponent::<T>(v)),
            }
        };
        let buf = RefCell::new(Vec::new());
        if m.accumulator_cut != AccumulatorCut::WithProducts {
            return self.replay_two_stage(tree, x, &term);
        }
        tree.replay_with(
            x,
            |kids, vals| {
                let mut terms = buf.borrow_mut();
                terms.clear();
                terms.extend(kids.iter().zip(vals).map(|(&c, &v)| term(c, v)));
                m.node(&terms)
            },
            |kids, a: T, b: T| {
                if fused_pair(kids) {
                    m.node(&[term(kids[0], a.to_f64()), term(kids[1], b.to_f64())])
                } else {
                    a.add(b)
                }
            },
        )
    }

    /// [`replay`](Self::replay) under a two-stage cut of the running value: a
    /// multi-way node with one inner child is a block whose leaves are its products and
    /// whose inner child is the running value; a binary node over an inner node and a
    /// leaf is a block of one product; any other binary node is one round-to-nearest
    /// addition.
    fn replay_two_stage<T: ProbeFloat>(
        &self,
        tree: &SumTree,
        x: &[T],
        term: &dyn Fn(u32, f64) -> (f64, i32),
    ) -> T {
        let n = tree.leaf_count() as u32;
        let m = self.model;
        let buf = RefCell::new(Vec::new());
        tree.replay_with(
            x,
            |kids, vals| {
                let mut terms = buf.borrow_mut();
                terms.clear();
                let mut acc = None;
                for (&c, &v) in kids.iter().zip(vals) {
                    if c >= n && acc.is_none() {
                        acc = Some(T::from_f64_round(v));
                    } else {
                        terms.push(term(c, v));
                    }
                }
                m.join(acc, m.node_exact(&terms))
            },
            |kids, a: T, b: T| {
                if kids[0] >= n && kids[1] < n {
                    m.join(Some(a), term(kids[1], b.to_f64()))
                } else {
                    a.add(b)
                }
            },
        )
    }
}

/// `tree` over `x` under a fitted model, the leaves' operand exponent sums `exps` when
/// the target gave them ([`crate::target::Target::operand_exponents`]).
pub(crate) fn replay<T: ProbeFloat>(
    f: FittedFused,
    tree: &SumTree,
    x: &[T],
    exps: Option<&[i32]>,
) -> T {
    Candidate::new::<T>(
        f.frac,
        f.frac_out,
        f.alignment,
        f.binary,
        f.accumulator_cut,
        f.align_rounding,
    )
    .replay(tree, x, exps)
}

/// Whether `tree` has a running value: a node of three or more children one of which is
/// an inner node, where a two-stage cut of it could act.
fn has_running_values(tree: &SumTree) -> bool {
    let n = tree.leaf_count();
    (n..n + tree.inner_count()).any(|v| {
        let kids = tree.children(v);
        kids.len() > 2 && kids.iter().any(|&c| c as usize >= n)
    })
}

/// The two-stage cuts fitted where a tree has running values: each rounding of the cut,
/// block widths and running-value widths around those of the published units.
fn two_stage_candidates(halves: bool) -> impl Iterator<Item = AccumulatorCut> {
    // CDNA3's FP8 instructions drop a running value 25 binades below; fitted beside
    // never dropping it, where the products come in halves
    let reaches: &'static [Option<u32>] = if halves { &[None, Some(25)] } else { &[None] };
    [Rounding::TowardNegative, Rounding::TowardZero]
        .into_iter()
        .flat_map(move |rounding| {
            (JOIN_BLOCK_FRAC.0..=JOIN_BLOCK_FRAC.1).flat_map(move |block_frac| {
                (JOIN_ACC_FRAC.0..=JOIN_ACC_FRAC.1).flat_map(move |acc_frac| {
                    reaches
                        .iter()
                        .map(move |&acc_reach| AccumulatorCut::TwoStage {
                            block_frac,
                            acc_frac,
                            rounding,
                            halves,
                            acc_reach,
                        })
                })
            })
        })
}

/// Whether `tree` has blocks of at least [`HALVES_MIN`] products, where interleaved
/// halves of them could be fused apart.
fn has_wide_blocks(tree: &SumTree) -> bool {
    let n = tree.leaf_count();
    (n..n + tree.inner_count()).any(|v| {
        tree.children(v)
            .iter()
            .filter(|&&c| (c as usize) < n)
            .count()
            >= HALVES_MIN
    })
}

/// The fewest products per block for which interleaved halves are fitted: CDNA3's FP8
/// groups hold 16; a half of 2 or more products is where the halves cut differently.
const HALVES_MIN: usize = 4;

/// The block widths a two-stage cut is fitted over.
const JOIN_BLOCK_FRAC: (u32, u32) = (22, 40);
/// The running-value widths a two-stage cut is fitted over.
const JOIN_ACC_FRAC: (u32, u32) = (20, 30);
/// The alignment widths fitted with a two-stage cut: blocks of products whose sum the
/// second stage cuts again.
const JOIN_FRAC: (u32, u32) = (10, 30);

/// Random inputs a truncating tree is replayed on: more than a plain tree's, because a
/// family of models is fitted to them and a wrong tree must miss with every one.
pub(crate) fn inputs_for(n: usize) -> usize {
    (16384 / n.max(1)).clamp(16, 64)
}

/// The most random inputs a fit that must decide the result width draws.
const MAX_DECIDING_INPUTS: usize = 64;

/// Fit a block-FMA model of `tree`'s fused nodes to the target on random inputs: the
/// published family first (terms cut toward zero in alignment), then, where no member
/// of it reproduces the answers, the same family with the terms rounded to nearest even
/// or toward minus infinity instead. A tree no member reproduces is refused with the
/// first family's error.
pub(crate) fn fit<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
) -> Result<FittedFused, RevealError> {
    fit_inputs(prober, tree, seed, false)
}

/// [`fit`], and with `decide`, more inputs (up to [`MAX_DECIDING_INPUTS`]) while the
/// result width is still open: in a long chain with fast accumulation the running value
/// dominates every block, and a width only shows where a block's sum carries, which
/// few random inputs make happen.
pub(crate) fn fit_inputs<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
    decide: bool,
) -> Result<FittedFused, RevealError> {
    match fit_with(prober, tree, seed, &[Rounding::TowardZero], decide) {
        Err(e @ RevealError::FusedUnverified { .. }) => fit_with(
            prober,
            tree,
            seed,
            &[Rounding::NearestEven, Rounding::TowardNegative],
            decide,
        )
        .map_err(|other| match other {
            RevealError::FusedUnverified { .. } => e,
            other => other,
        }),
        other => other,
    }
}

/// Whether some model of `tried` reproduces every answer of `seen` once the inputs are
/// cut to TF32 (their low 13 bits dropped, as a Tensor Core reading f32 operands for a
/// TF32 instruction does): f32 values only, every other format `false`.
fn reads_tf32<T: ProbeFloat>(tree: &SumTree, tried: &[Candidate], seen: &[(Vec<T>, T)]) -> bool {
    use crate::float::{Tf32, Tf32Rounding};
    if T::FORMAT != f32::FORMAT || seen.is_empty() {
        return false;
    }
    let cut: Vec<(Vec<T>, T)> = seen
        .iter()
        .map(|(x, want)| {
            let x = x
                .iter()
                .map(|v| {
                    let t = Tf32::from_f32(v.to_f64() as f32, Tf32Rounding::TowardZero);
                    T::from_f64_round(f64::from(t.to_f32()))
                })
                .collect();
            (x, *want)
        })
        .collect();
    // inputs a TF32 cut leaves unchanged tell nothing about it
    if cut.iter().zip(seen).all(|(c, s)| c.0 == s.0) {
        return false;
    }
    tried.iter().any(|c| {
        cut.iter()
            .all(|(x, want)| c.replay(tree, x, None).to_bits_u64() == want.to_bits_u64())
    })
}

/// [`fit_inputs`] over models whose alignment cuts terms as one of `roundings` says.
fn fit_with<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
    roundings: &[Rounding],
    decide: bool,
) -> Result<FittedFused, RevealError> {
    let n = tree.leaf_count();
    let mut x = vec![T::ZERO; n];
    let planned = inputs_for(n);
    let most = if decide {
        planned.max(MAX_DECIDING_INPUTS)
    } else {
        planned
    };
    let mut inputs = 0;
    let mut candidates: Vec<Candidate> = Vec::new();
    // every model tried and every input answered, for the TF32 hint of a refusal
    let mut tried: Vec<Candidate> = Vec::new();
    let mut seen: Vec<(Vec<T>, T)> = Vec::new();
    for k in 0..most {
        let open = candidates
            .iter()
            .any(|c| c.model.frac_out != candidates[0].model.frac_out);
        if k >= planned && !open {
            break;
        }
        inputs = k + 1;
        let input_seed = seed ^ 0xF17_0000_0000 ^ k as u64;
        prober.random_input(input_seed, &mut x);
        // asked before the call, which consumes the drawn operands
        let exps = prober.operand_exponents(&x);
        if k == 0 {
            candidates = candidate_models::<T>(tree, roundings, exps.is_some());
            tried.clone_from(&candidates);
        }
        let want = prober.call(&x)?;
        if exps.is_none() {
            seen.push((x.clone(), want));
        }
        let same = |got: T| {
            got.to_bits_u64() == want.to_bits_u64()
                || (got.to_f64().is_nan() && want.to_f64().is_nan())
        };
        candidates.retain(|c| same(c.replay(tree, &x, exps.as_deref())));
        if candidates.is_empty() {
            let text = crate::reveal::error::clip(tree.to_string());
            let reads_tf32 = exps.is_none() && reads_tf32(tree, &tried, &seen);
            return Err(RevealError::FusedUnverified {
                tree: text,
                input_seed,
                target: want.to_f64(),
                reads_tf32,
            });
        }
    }
    Ok(fitted(tree, &candidates, inputs))
}

/// Every model a fit starts from: each alignment rule (the hardware rule first where
/// products have operands, so that a tie names it), binary-node rule, result width,
/// alignment width and cut rounding of `roundings`; then AMD's two-stage joins where
/// `tree` has running values or wide blocks.
fn candidate_models<T: ProbeFloat>(
    tree: &SumTree,
    roundings: &[Rounding],
    operands: bool,
) -> Vec<Candidate> {
    let out_bits = T::FORMAT.precision - 1;
    let mut candidates = Vec::new();
    // the hardware rule first where products have operands, so that a tie names
    // it; for plain summands the two agree and the textbook rule is named
    let alignments = if operands {
        [Alignment::OperandExponents, Alignment::ProductExponent]
    } else {
        [Alignment::ProductExponent, Alignment::OperandExponents]
    };
    for alignment in alignments {
        for binary in [
            BinaryNodes::Rounded,
            BinaryNodes::AfterFused,
            BinaryNodes::LeafPairs,
            BinaryNodes::Fused,
        ] {
            for frac_out in std::iter::once(None).chain((2..=out_bits).map(Some)) {
                for frac in 2..=MAX_FRAC {
                    for &rounding in roundings {
                        candidates.push(Candidate::new::<T>(
                            frac,
                            frac_out,
                            alignment,
                            binary,
                            AccumulatorCut::WithProducts,
                            rounding,
                        ));
                    }
                }
            }
        }
    }
    // AMD's second stage rounds to nearest once, after the cut: no result width
    // also over one wide block with no running value: the first block meets a
    // zero one, and its products' sum is still cut before it is rounded
    if has_running_values(tree) || has_wide_blocks(tree) {
        let halves = [false, true]
            .into_iter()
            .take(1 + has_wide_blocks(tree) as usize);
        for join in halves.flat_map(two_stage_candidates) {
            for frac in JOIN_FRAC.0..=JOIN_FRAC.1 {
                for &rounding in roundings {
                    candidates.push(Candidate::new::<T>(
                        frac,
                        None,
                        alignments[0],
                        BinaryNodes::Rounded,
                        join,
                        rounding,
                    ));
                }
            }
        }
    }
    candidates
}

/// The fit's result from the `candidates` that reproduced all `inputs`: the first one's
/// parameters, with the ranges the others still allow (`candidates` is not empty).
fn fitted(tree: &SumTree, candidates: &[Candidate], inputs: usize) -> FittedFused {
    let best = candidates[0];
    // both rules still in: the inputs never told them apart
    let decided = candidates
        .iter()
        .all(|c| c.model.alignment == best.model.alignment);
    let align_rounding_decided = candidates
        .iter()
        .all(|c| c.model.align_rounding == best.model.align_rounding);
    let same_rule = || {
        candidates.iter().filter(|c| {
            c.model.alignment == best.model.alignment
                && c.model.align_rounding == best.model.align_rounding
        })
    };
    let frac_max = same_rule()
        .map(|c| c.model.frac)
        .max()
        .unwrap_or(best.model.frac);
    let widths = || same_rule().filter_map(|c| c.model.frac_out);
    let frac_out_range = widths().min().zip(widths().max());
    let frac_out_rounded = same_rule().any(|c| c.model.frac_out.is_none());
    let accumulator_cut_ranges = match best.model.accumulator_cut {
        AccumulatorCut::WithProducts => None,
        AccumulatorCut::TwoStage { rounding, .. } => {
            let joins: Vec<(u32, u32)> = same_rule()
                .filter_map(|c| match c.model.accumulator_cut {
                    AccumulatorCut::TwoStage {
                        block_frac,
                        acc_frac,
                        rounding: r,
                        ..
                    } if r == rounding => Some((block_frac, acc_frac)),
                    _ => None,
                })
                .collect();
            let range = |f: fn(&(u32, u32)) -> u32| {
                let lo = joins.iter().map(f).min().unwrap_or(0);
                (lo, joins.iter().map(f).max().unwrap_or(lo))
            };
            Some([range(|j| j.0), range(|j| j.1)])
        }
    };
    let roundings = || {
        same_rule().filter_map(|c| match c.model.accumulator_cut {
            AccumulatorCut::TwoStage { rounding, .. } => Some(rounding),
            AccumulatorCut::WithProducts => None,
        })
    };
    let first_rounding = roundings().next();
    let accumulator_cut_rounding_decided = roundings().all(|r| Some(r) == first_rounding);
    let reach = |c: &Candidate| match c.model.accumulator_cut {
        AccumulatorCut::TwoStage { acc_reach, .. } => acc_reach,
        AccumulatorCut::WithProducts => None,
    };
    let acc_reach_decided = same_rule().all(|c| reach(c) == reach(&best));
    FittedFused {
        align_rounding: best.model.align_rounding,
        align_rounding_decided,
        acc_reach_decided,
        accumulator_cut_rounding_decided,
        accumulator_cut: best.model.accumulator_cut,
        accumulator_cut_ranges,
        frac_out_range,
        frac_out_rounded,
        frac: best.model.frac,
        frac_max,
        frac_out: best.model.frac_out,
        alignment: best.model.alignment,
        alignment_decided: decided,
        binary: best.binary,
        inputs,
        candidates: candidates.len(),
        structure: ChainStructure::of(tree),
    }
}
