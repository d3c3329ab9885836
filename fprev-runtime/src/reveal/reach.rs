//! Product targets beyond one mask's reach: dot products of more FP8 E4M3 (or FNUZ
//! E4M3) products than a mask can swamp in the accumulator.
//!
//! A mask swamps a sum of `k` units in an f32 addition only when `k e` lies below half
//! an ulp of `M`: `M / e >= 2^(p + 2 + log2 k)`. E4M3 products span `2^16 / 2^-18`, so
//! with an f32 accumulator (p = 24) that is 256 units, whatever the tree. Inside a
//! truncating fused adder (13 fraction bits on Hopper and Ada FP8) every unit far below
//! `M` is cut on its own, and f32 additions only ever meet `M` with one child's units at
//! a time; a probe is sound when each lump of units that an f32 (rounding) node adds to a
//! masked partial sum is small enough. That depends on the tree, which is what is
//! unknown, so a random-pivot search at such an `n` can read garbage counts (a chunked
//! FP8 GEMM at k = 2048 does).
//!
//! What is done instead, in the FPRev paper's spirit of windows (inputs outside a window
//! zero):
//! 1. the first `reach` products (the most one mask swamps in any tree) are revealed
//!    with every other input zero, a search like any other;
//! 2. their tree must be a block-FMA chain ([`ChainStructure`]): products per block,
//!    where the running value enters, the promotion interval; the same chain over all
//!    `n` products is the candidate;
//! 3. the candidate is proved node by node at the widest masks the product allows: for
//!    each node `v` with children `C0, C1, ...`, the probe `(min C0, min Ca)` must lose
//!    `|v|` units, for every `a`. By induction from the leaves this proves every node's
//!    leaf set and that its first child joins it directly. Each of these probes is asked
//!    only after the candidate has shown it sound: along both masks' paths, every
//!    binary (rounding) node adds at most `2^(gap - p - 2)` units to a masked sum;
//! 4. the usual verification follows (sampled answers re-asked, random inputs
//!    replayed under a fitted block-FMA model), which also checks how a block's other
//!    children group.
//!
//! Anything else is refused with [`RevealError::TooLarge`], naming what was tried.

use super::error::{clip, RevealError};
use super::known::Recognized;
use super::prober::Prober;
use super::Reveal;
use crate::black_box::{Probe, ProbeBatch, Target, TargetError};
use crate::float::{FloatFormat, ProbeFloat};
use crate::fused::{AccumulatorJoin, BlockFma};
use crate::reveal::fit::ChainStructure;
use crate::tree::SumTree;

/// The name a tree found this way is recognized under.
pub(crate) const NAME: &str = "block-FMA chain read off a windowed prefix";

/// Proof probes asked per batch: a wrong candidate stops at the first batch that refutes
/// it, not after all `n` probes.
const PROOF_BATCH: usize = 512;

/// Reveal the target's tree as a block-FMA chain read off its first `reach` products and
/// proved over all of them (see the module's text), or say what was tried.
pub(crate) fn chain<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    reach: usize,
    seed: u64,
) -> Result<Recognized<T>, RevealError> {
    let n = prober.n;
    let dtype = prober_dtype::<T, X>(&prober.target);
    let refuse = |why: String| RevealError::TooLarge {
        n,
        dtype,
        max: reach,
        spread: true,
        tried: Some(why),
    };
    let prefix = {
        let mut window = Prefix {
            inner: &mut prober.target,
            n,
            buf: vec![T::ZERO; n],
            probes: 0,
            batches: 0,
            calls: 0,
        };
        let r = Reveal::new(reach)
            .verify(false)
            .known_orders(false)
            .structure_guided(false)
            .seed(seed ^ 0x0EAC_0000)
            .run_target(&mut window);
        prober.probes += window.probes;
        prober.batches += window.batches;
        prober.replays += window.calls;
        match r {
            Ok(report) => report.tree,
            Err(e) => {
                return Err(refuse(format!(
                    "the first {reach} products, revealed with the others zero, gave no tree: {e}"
                )))
            }
        }
    };
    let chain_of = |tree: &SumTree| -> Option<BlockFma> {
        let s = ChainStructure::of(tree)?;
        // a block size the prefix pins down (at least one whole block before its end)
        if s.nfma.max != Some(s.nfma.value) {
            return None;
        }
        let model = BlockFma {
            nfma: s.nfma.value,
            accumulator: s.accumulator.unwrap_or(AccumulatorJoin::Aligned),
            chunk: s.promotion.map(|p| p.value),
            ..BlockFma::V100
        };
        (model.tree(tree.leaf_count()) == *tree).then_some(model)
    };
    let Some(model) = chain_of(&prefix) else {
        return Err(refuse(format!(
            "the first {reach} products (revealed with the others zero) are summed as {}, not a chain of fused blocks that could be carried over to {n}",
            clip(prefix.to_string())
        )));
    };
    let candidate = model.tree(n);
    let limit = lump_limit(prober.scale.gap(), T::FORMAT.precision);
    let (probes, lost) = match proof(&candidate, limit) {
        Ok(p) => p,
        Err(lump) => {
            return Err(refuse(format!(
                "the first {reach} products are a chain of {}-product blocks; its proof over {n} would add {lump} units at once to a masked partial sum in a rounding addition, more than the {limit} the widest masks (2^{} apart) swamp",
                model.nfma,
                prober.scale.gap()
            )))
        }
    };
    for (probes, lost) in probes.chunks(PROOF_BATCH).zip(lost.chunks(PROOF_BATCH)) {
        let answers = prober.ask(probes)?;
        if let Some(k) = (0..probes.len()).find(|&k| answers[k] != Some(lost[k])) {
            let got = answers[k].map_or("a count too large to be exact".to_string(), |l| {
                format!("{l} units")
            });
            return Err(refuse(format!(
                "the first {reach} products are a chain of {}-product blocks{}; carried over to {n}, its proof failed: probe {} lost {got}, the chain predicts {}",
                model.nfma,
                model
                    .chunk
                    .map_or(String::new(), |c| format!(" promoted every {c}")),
                probes[k],
                lost[k]
            )));
        }
    }
    Ok(Recognized {
        name: NAME.to_string(),
        tree: candidate,
        order: None,
    })
}

/// The most units a binary (rounding) node may add at once to a partial sum holding a
/// mask `2^gap` units large, in a format of `precision` bits, and still lose them all
/// (on either side of `M`: below it the ulp is half as large).
fn lump_limit(gap: i32, precision: u32) -> u64 {
    let bits = gap - precision as i32 - 2;
    if bits < 0 {
        0
    } else {
        1u64 << bits.min(62)
    }
}

/// The proof's probes of `tree` and the counts each must lose, or the largest lump of
/// units a probe's masked partial sum would meet in a rounding (binary) node when that
/// exceeds `limit`.
fn proof(tree: &SumTree, limit: u64) -> Result<(Vec<Probe>, Vec<u32>), u64> {
    let n = tree.leaf_count();
    let total = n + tree.inner_count();
    let parents = tree.parents();
    let mut size = vec![1u32; total];
    let mut min_leaf: Vec<u32> = (0..total as u32).collect();
    // inner nodes come after their children
    for v in n..total {
        let kids = tree.children(v);
        size[v] = kids.iter().map(|&c| size[c as usize]).sum();
        min_leaf[v] = kids
            .iter()
            .map(|&c| min_leaf[c as usize])
            .min()
            .unwrap_or(0);
    }
    // the lump a masked partial sum meets at each node coming from below: a binary
    // node adds its other child at once (rounded); a fused node cuts each term on its own
    let lump = |child: usize| -> u64 {
        let p = parents[child] as usize;
        if tree.children(p).len() == 2 {
            u64::from(size[p] - size[child])
        } else {
            0
        }
    };
    let mut worst = 0u64;
    let mut climb = |leaf: usize, top: usize| {
        let mut at = leaf;
        while parents[at] as usize != top {
            worst = worst.max(lump(at));
            at = parents[at] as usize;
        }
    };
    let mut probes = Vec::with_capacity(n);
    let mut lost = Vec::with_capacity(n);
    for (v, &whole) in size.iter().enumerate().skip(n) {
        let kids = tree.children(v);
        let first = min_leaf[kids[0] as usize] as usize;
        for &c in &kids[1..] {
            let other = min_leaf[c as usize] as usize;
            climb(first, v);
            climb(other, v);
            probes.push(Probe {
                plus: first,
                minus: other,
            });
            lost.push(whole);
        }
    }
    if worst > limit {
        return Err(worst);
    }
    Ok((probes, lost))
}

/// The operand format's name for the refusal.
fn prober_dtype<T: ProbeFloat, X: Target<T>>(target: &X) -> &'static str {
    target
        .replay_format()
        .or(target.input_format())
        .map_or(T::FORMAT.name, |f: FloatFormat| f.name)
}

/// The target with its first `m` inputs (the reveal's size) and zeros after them, up to
/// `n`. Behind `dyn`: its reveal would otherwise instantiate the engine for ever deeper
/// wrappers.
struct Prefix<'p, T> {
    inner: &'p mut dyn Target<T>,
    n: usize,
    /// `n` values: the prefix, then zeros.
    buf: Vec<T>,
    probes: u64,
    batches: u64,
    calls: u64,
}

impl<T: ProbeFloat> Prefix<'_, T> {
    fn fill(&mut self, x: &[T]) {
        self.buf[..x.len()].copy_from_slice(x);
        self.buf[x.len()..self.n].fill(T::ZERO);
    }
}

impl<T: ProbeFloat> Target<T> for Prefix<'_, T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.calls += 1;
        self.fill(x);
        self.inner.call(&self.buf)
    }

    fn input_format(&self) -> Option<FloatFormat> {
        self.inner.input_format()
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        self.inner.replay_format()
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        self.probes += batch.probes.len() as u64;
        self.batches += 1;
        self.fill(batch.background);
        let padded = ProbeBatch {
            background: &self.buf,
            probes: batch.probes,
            mask: batch.mask,
        };
        self.inner.probe_batch(&padded, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_chains_need_only_one_chunk_of_swamping() {
        // H100 FP8 promoted every 128: the proof meets one 128-product chunk at a time
        let tree = BlockFma::H100_FP8_SLOW.tree(4096);
        let (probes, lost) = proof(&tree, 256).expect("sound at 2^34");
        assert_eq!(probes.len(), lost.len());
        // one probe per child but each node's first: n - 1 in all
        assert_eq!(probes.len(), 4095);
        assert!(lost.iter().all(|&l| l >= 2));
        // a pairwise f32 tree of 2048 meets 512 units at once below its root
        assert_eq!(proof(&SumTree::pairwise(2048), 256).err(), Some(512));
        // of 1024, at most 256 at a time: sound, whatever the search would have met
        assert!(proof(&SumTree::pairwise(1024), 256).is_ok());
    }

    #[test]
    fn lump_limits_follow_the_gap() {
        assert_eq!(lump_limit(34, 24), 256);
        assert_eq!(lump_limit(25, 24), 0);
    }
}
