//! Checks that run after a tree is built, so a wrong tree is never returned silently:
//! sampled probes are asked again (nondeterminism) and compared with what the tree
//! predicts (consistency), then the tree is replayed on seeded random inputs and must
//! reproduce the target's bits (unless it has truncating fused nodes, whose rounding is
//! hardware-specific and which the probe checks cover).

use super::arena::Arena;
use super::error::RevealError;
use super::naive::random_input_in;
use super::prober::Prober;
use crate::float::ProbeFloat;
use crate::target::Target;
use crate::tree::SumTree;

const REPLAYS: u64 = 8;

pub(crate) fn check<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &Arena,
    tree: &SumTree,
    seed: u64,
) -> Result<(), RevealError> {
    let samples = prober.samples.clone();
    for s in samples {
        if let Some(again) = prober.one(s.probe)? {
            if again != s.lost {
                return Err(RevealError::Nondeterministic {
                    probe: s.probe,
                    first: s.lost as u64,
                    second: again as u64,
                });
            }
        }
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
    if (0..arena.trunc.len()).any(|k| arena.trunc[k]) {
        return Ok(());
    }
    replay_matches(prober, tree, seed)
}

pub(crate) fn replay_matches<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    tree: &SumTree,
    seed: u64,
) -> Result<(), RevealError> {
    for k in 0..REPLAYS {
        let input_seed = seed ^ 0x5EED_0000_0000 ^ k;
        let input = prober.target.input_format().unwrap_or(T::FORMAT);
        let x = random_input_in::<T>(input, tree.leaf_count(), input_seed);
        let want = prober.call(&x)?;
        let got = tree.replay(&x);
        let same = want.to_bits_u64() == got.to_bits_u64()
            || (want.to_f64().is_nan() && got.to_f64().is_nan());
        if !same {
            let mut text = tree.to_string();
            if text.len() > 200 {
                text.truncate(200);
                text.push_str("...");
            }
            return Err(RevealError::NotPlainSummation {
                tree: text,
                input_seed,
                target_bits: want.to_bits_u64(),
                tree_bits: got.to_bits_u64(),
            });
        }
    }
    Ok(())
}
