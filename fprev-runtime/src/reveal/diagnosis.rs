//! Why a revelation failed, when the first failure is not the best account: a wider
//! register, a truncating fused adder, a sort before the sum, a constant answer. Each
//! check costs a few calls and runs only after an attempt has failed, to name the cause
//! in the refusal.

use super::prober::Prober;
use super::{fit, verify, FittedFused, RevealError};
use crate::black_box::Target;
use crate::float::ProbeFloat;
use crate::tree::SumTree;

/// [`RevealError::WiderAccumulator`] when `tree`, summed in an f32 register and rounded
/// once to `T`, reproduces the target on seeded random inputs where summing in `T` did
/// not; `None` otherwise (the plain-summation failure stands).
pub(super) fn wider_register<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
) -> Option<RevealError> {
    const INPUTS: u64 = 8;
    let mut x = vec![T::ZERO; prober.n];
    for k in 0..INPUTS {
        prober.random_input(seed ^ (0x61DE_0000 + k), &mut x);
        let answer = prober.call(&x).ok()?;
        let register: Vec<f32> = x.iter().map(|v| v.to_f64() as f32).collect();
        let rounded = T::from_f64_round(f64::from(tree.replay(&register)));
        if rounded.to_bits_u64() != answer.to_bits_u64() {
            return None;
        }
    }
    let text = crate::reveal::error::clip(tree.to_string());
    Some(RevealError::WiderAccumulator {
        tree: text,
        operands: prober.target.input_format().unwrap_or(T::FORMAT).name,
        wider: "f32",
    })
}

/// Failures a truncating fused adder causes when its alignment width reaches the mask:
/// shapes no tree has, a tree whose replays miss because a binary-looking node truncates,
/// or units that survive the masks because the adder keeps them.
pub(super) fn explainable_by_fusion(e: &RevealError) -> bool {
    matches!(
        e,
        RevealError::OutOfRange { .. }
            | RevealError::Inconsistent { .. }
            | RevealError::NotInteger { .. }
            | RevealError::NotPlainSummation { .. }
            | RevealError::OrderIndependent { .. }
    )
}

/// Refuses a fused tree when some alignment width that reproduced the target's random
/// inputs reaches the partial sums of units at this mask scale: such a target could answer
/// two different trees' probes alike.
pub(super) fn separable<T: ProbeFloat, X: Target<T>>(
    prober: &Prober<T, X>,
    n: usize,
    fitted: FittedFused,
) -> Result<(), RevealError> {
    let log_n = usize::BITS - (n - 1).leading_zeros();
    let gap = prober.scale.gap();
    if gap >= fitted.frac_max as i32 + log_n as i32 {
        return Ok(());
    }
    Err(RevealError::Indistinguishable {
        detail: format!(
            "the target's fused adders may keep up to {} fraction bits below their largest term (its answers to random inputs fit every width from {} to {}), and the widest masks this format allows sit only 2^{gap} above the unit, which a partial sum of up to {n} units (2^{log_n}) can reach within that width",
            fitted.frac_max, fitted.frac, fitted.frac_max
        ),
    })
}

/// The fitted arithmetic of a flat `tree` over the products of a target that answers in
/// a format narrower than f32 (one fused block rounded to f16 or bf16), when a
/// block-FMA model reproduces the target's random inputs; `None` for other targets (a
/// plain sum that is order-independent stays an error) or when no model does.
pub(super) fn narrow_product_block<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
) -> Option<FittedFused> {
    if T::FORMAT.precision >= f32::FORMAT.precision || !prober.products() {
        return None;
    }
    fit::fit(prober, tree, seed).ok()
}

/// Why the search ended in one node over every input, from what the target answered:
/// probes that kept their `n - 2` units mean an order-independent sum; probes that lost
/// every unit mean either a target that ignores its input (it answers a random input the
/// same) or an order that depends on the data (sorting puts `-M` and `+M` together).
pub(super) fn flat_root<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    answered: &[verify::Answered<T>],
    seed: u64,
) -> RevealError {
    let n = prober.n;
    let all_lost =
        !prober.samples().is_empty() && prober.samples().iter().all(|s| s.lost as usize == n);
    if !all_lost {
        return RevealError::OrderIndependent {
            n,
            wider: wider_accumulator(T::FORMAT),
        };
    }
    let random = match answered.first() {
        Some(a) => a.answer,
        None => {
            let mut x = vec![T::ZERO; n];
            prober.random_input(seed ^ 0x0C0_5747, &mut x);
            match prober.call(&x) {
                Ok(v) => v,
                Err(e) => return e,
            }
        }
    };
    if random.to_f64() == 0.0 {
        RevealError::ConstantAnswers {
            n,
            value: random.to_f64(),
        }
    } else {
        RevealError::DataDependent {
            n,
            random: random.to_f64(),
        }
    }
}

/// Whether the target answers random inputs with the sequential sum of the input sorted
/// by value (ascending or descending, by value or magnitude), the commonest order that
/// depends on the data. Such a target also looks like one flat node that loses every
/// unit of the probes, as a truncating fused adder does; this tells the two refusals
/// apart (either way no tree is returned).
pub(super) fn sorts_then_sums<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    seed: u64,
) -> bool {
    let keys: [fn(f64) -> f64; 4] = [|v| v, |v| -v, f64::abs, |v| -v.abs()];
    let mut matched = [true; 4];
    // only inputs whose sorted sums differ from one another tell a sort apart: an
    // input every order sums alike (small products, an exact sum) matches any of them
    let mut telling = 0;
    let mut x = vec![T::ZERO; prober.n];
    for trial in 0..6u64 {
        prober.random_input(seed ^ (0x5027_0000 + trial), &mut x);
        let Ok(answer) = prober.call(&x) else {
            return false;
        };
        let sums: Vec<u64> = keys
            .iter()
            .map(|key| {
                let mut v = x.clone();
                v.sort_by(|a, b| key(a.to_f64()).total_cmp(&key(b.to_f64())));
                v.iter().fold(T::ZERO, |a, &b| a.add(b)).to_bits_u64()
            })
            .collect();
        if sums.iter().all(|&s| s == sums[0]) {
            continue;
        }
        telling += 1;
        for (sum, matched) in sums.iter().zip(matched.iter_mut()) {
            *matched &= *sum == answer.to_bits_u64();
        }
    }
    telling > 0 && matched.contains(&true)
}

/// The next wider accumulator a sum in `format` may really run in: f32 for the 16-bit
/// (and narrower) formats, f64 for f32, none past f64.
fn wider_accumulator(format: crate::float::FloatFormat) -> Option<&'static str> {
    match format.precision {
        0..=23 => Some("f32"),
        24..=52 => Some("f64"),
        _ => None,
    }
}

/// `e`, or [`RevealError::ConstantAnswers`] when every sampled probe answered the same
/// value and a random input gets that value too: a constant explains the failure better
/// than whatever shape its answers happened to break.
pub(super) fn constant<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    e: RevealError,
    seed: u64,
) -> RevealError {
    // only failures a constant's answers can cause: a failed or stalled target is not
    // called again
    let shape = matches!(
        e,
        RevealError::Inconsistent { .. }
            | RevealError::OutOfRange { .. }
            | RevealError::PrecisionTooLow { .. }
            | RevealError::Naive { .. }
    );
    if !shape {
        return e;
    }
    let n = prober.n;
    let lost = match prober.samples() {
        [first, rest @ ..] if !rest.is_empty() && rest.iter().all(|s| s.lost == first.lost) => {
            first.lost
        }
        _ => return e,
    };
    let value = (n as f64 - f64::from(lost)) * prober.scale.unit;
    let mut x = vec![T::ZERO; n];
    prober.random_input(seed ^ 0x0C0_5747, &mut x);
    match prober.call(&x) {
        Ok(v) if v.to_f64() == value => RevealError::ConstantAnswers {
            n,
            value: v.to_f64(),
        },
        _ => e,
    }
}
