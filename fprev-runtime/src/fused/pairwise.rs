//! AMD CDNA1 and CDNA2 matrix cores: no fused adder, but products summed pairwise in
//! small groups, every addition rounded to nearest in f32.

use crate::float::ProbeFloat;
use crate::tree::SumTree;

/// A matrix core that sums each group of `group` products pairwise (`((p0+p1)+(p2+p3))`
/// for 4), every addition an f32 one rounded to nearest even, and adds each group's sum
/// to the running value in f32 (MMA-Sim, Xie et al., arXiv:2511.10909: `mfma` on "CDNA1"
/// and "CDNA2", `pairwise_dot` over groups of 4 for fp16 and the bf16 `_1k`
/// instructions, 2 for the older bf16 ones; CDNA2 flushes subnormal operands, group
/// sums and running values to zero).
///
/// These are ordinary binary trees, so fprev reveals them without a fused model;
/// [`tree`](Self::tree) is the tree it must find and [`dot`](Self::dot) the answers.
///
/// ```
/// use fprev::fused::PairwiseGroups;
/// use fprev::half::f16;
/// use fprev::target::Products;
/// let model = PairwiseGroups::CDNA1_F16;
/// assert_eq!(model.tree(8).to_string(), "(((0+1)+(2+3))+((4+5)+(6+7)))");
/// let dot = |a: &[f16], b: &[f16]| -> f32 { model.dot(a, b) };
/// let r = fprev::Reveal::new(16).run_target(Products::new(dot))?;
/// assert_eq!(r.tree, model.tree(16));
/// # Ok::<(), fprev::RevealError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairwiseGroups {
    /// Products per group (the last group of a dot product may be shorter).
    pub group: usize,
    /// Whether subnormal operands, group sums and running values are flushed to zero
    /// (CDNA2; a flushed sum keeps its sign, a flushed operand becomes +0).
    pub flush_subnormals: bool,
}

impl PairwiseGroups {
    /// AMD CDNA1 (MI100) fp16 instructions (`v_mfma_f32_32x32x8f16`): groups of 4
    /// (MMA-Sim: "CDNA1" fp16, `group_size = 4`).
    pub const CDNA1_F16: PairwiseGroups = PairwiseGroups {
        group: 4,
        flush_subnormals: false,
    };

    /// AMD CDNA1 bf16 instructions (`v_mfma_f32_32x32x4bf16`): groups of 2 (MMA-Sim:
    /// "CDNA1" bf16 without `_1k`, `group_size = 2`).
    pub const CDNA1_BF16: PairwiseGroups = PairwiseGroups {
        group: 2,
        flush_subnormals: false,
    };

    /// AMD CDNA2 (MI200) fp16 instructions: groups of 4, subnormals flushed to zero
    /// (MMA-Sim: "CDNA2" fp16, `group_size = 4`, `flush_denormal`).
    pub const CDNA2_F16: PairwiseGroups = PairwiseGroups {
        group: 4,
        flush_subnormals: true,
    };

    /// AMD CDNA2 bf16 `_1k` instructions (`v_mfma_f32_32x32x8bf16_1k`): as
    /// [`CDNA2_F16`](Self::CDNA2_F16) (MMA-Sim: `_1k` bf16, `group_size = 4`).
    pub const CDNA2_BF16_1K: PairwiseGroups = PairwiseGroups {
        group: 4,
        flush_subnormals: true,
    };

    /// Every preset with its name, for tables and command lines.
    ///
    /// ```
    /// let names: Vec<&str> = fprev::fused::PairwiseGroups::PRESETS.iter().map(|p| p.0).collect();
    /// assert_eq!(names, ["cdna1-f16", "cdna1-bf16", "cdna2-f16", "cdna2-bf16-1k"]);
    /// ```
    pub const PRESETS: &'static [(&'static str, PairwiseGroups)] = &[
        ("cdna1-f16", PairwiseGroups::CDNA1_F16),
        ("cdna1-bf16", PairwiseGroups::CDNA1_BF16),
        ("cdna2-f16", PairwiseGroups::CDNA2_F16),
        ("cdna2-bf16-1k", PairwiseGroups::CDNA2_BF16_1K),
    ];

    /// The preset named `name` (see [`PRESETS`](Self::PRESETS)).
    ///
    /// ```
    /// use fprev::fused::PairwiseGroups;
    /// assert_eq!(PairwiseGroups::preset("cdna2-f16"), Some(PairwiseGroups::CDNA2_F16));
    /// assert_eq!(PairwiseGroups::preset("CDNA2-F16"), Some(PairwiseGroups::CDNA2_F16));
    /// ```
    pub fn preset(name: &str) -> Option<PairwiseGroups> {
        super::presets::by_name(Self::PRESETS, name)
    }

    /// The dot product of `a` and `b` (operands of any format whose products are exact in
    /// f32: f16, bf16, FP8) as the matrix core computes one output element with `c = 0`.
    /// Operands beyond the shorter of the two are ignored; a group of 0 is read as 1.
    ///
    /// ```
    /// use fprev::fused::PairwiseGroups;
    /// let (a, b) = ([1.0f32, 1e-8, -1.0, 1e-8], [1.0f32; 4]);
    /// // (1 + 1e-8) + (-1 + 1e-8): each pair rounds to +-1 in f32
    /// assert_eq!(PairwiseGroups::CDNA1_F16.dot(&a, &b), 0.0);
    /// ```
    pub fn dot<I: ProbeFloat>(&self, a: &[I], b: &[I]) -> f32 {
        let n = a.len().min(b.len());
        let emin = I::FORMAT.min_exp;
        let operand = |x: I| -> f64 {
            let v = x.to_f64();
            if self.flush_subnormals && v != 0.0 && v.abs() < 2f64.powi(emin) {
                0.0
            } else {
                v
            }
        };
        let products: Vec<f32> = (0..n)
            .map(|i| self.flush((operand(a[i]) * operand(b[i])) as f32))
            .collect();
        let mut sum = 0.0f32;
        for g in products.chunks(self.group.max(1)) {
            sum = self.flush(sum + self.pairwise(g));
        }
        sum
    }

    /// `x` flushed to a zero of its sign when it is an f32 subnormal and the model
    /// flushes.
    fn flush(&self, x: f32) -> f32 {
        if self.flush_subnormals && x.abs() < f32::MIN_POSITIVE {
            x * 0.0
        } else {
            x
        }
    }

    /// A group's products summed pairwise (the left half `n / 2` long), each addition
    /// rounded in f32 and flushed.
    fn pairwise(&self, p: &[f32]) -> f32 {
        match p.len() {
            0 => 0.0,
            1 => p[0],
            n => {
                let (l, r) = p.split_at(n / 2);
                self.flush(self.pairwise(l) + self.pairwise(r))
            }
        }
    }

    /// The tree of a dot product of `n` products: each group pairwise (the left half
    /// `len / 2` long), the groups added in order.
    ///
    /// ```
    /// use fprev::fused::PairwiseGroups;
    /// assert_eq!(PairwiseGroups::CDNA1_BF16.tree(5).to_string(), "(((0+1)+(2+3))+4)");
    /// ```
    pub fn tree(&self, n: usize) -> SumTree {
        let g = self.group.max(1);
        let mut nodes: Vec<Vec<usize>> = Vec::new();
        // `pairwise` over leaves lo..hi, returning the id of its root
        fn build(lo: usize, hi: usize, n: usize, nodes: &mut Vec<Vec<usize>>) -> usize {
            if hi - lo == 1 {
                return lo;
            }
            let mid = lo + (hi - lo) / 2;
            let l = build(lo, mid, n, nodes);
            let r = build(mid, hi, n, nodes);
            nodes.push(vec![l, r]);
            n + nodes.len() - 1
        }
        let mut acc: Option<usize> = None;
        let mut lo = 0;
        while lo < n {
            let hi = (lo + g).min(n);
            let group = build(lo, hi, n, &mut nodes);
            acc = Some(match acc {
                None => group,
                Some(a) => {
                    nodes.push(vec![a, group]);
                    n + nodes.len() - 1
                }
            });
            lo = hi;
        }
        SumTree::from_nodes(n, nodes).unwrap_or_else(|_| SumTree::sequential(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn groups_are_pairwise_and_chained_in_order() {
        let m = PairwiseGroups::CDNA1_F16;
        assert_eq!(m.tree(1).to_string(), SumTree::sequential(1).to_string());
        assert_eq!(m.tree(3).to_string(), "(0+(1+2))");
        assert_eq!(
            m.tree(10).to_string(),
            "((((0+1)+(2+3))+((4+5)+(6+7)))+(8+9))"
        );
        assert_eq!(
            PairwiseGroups::CDNA1_BF16.tree(4).to_string(),
            "((0+1)+(2+3))"
        );
    }

    #[test]
    fn cdna2_flushes_subnormal_operands_and_sums() {
        let tiny = f16::from_bits(1); // 2^-24, an f16 subnormal
        let one = f16::from_f32(1.0);
        assert_eq!(
            PairwiseGroups::CDNA1_F16.dot(&[tiny], &[one]),
            2f32.powi(-24)
        );
        assert_eq!(PairwiseGroups::CDNA2_F16.dot(&[tiny], &[one]), 0.0);
        // 2^-14 x 2^-14 = 2^-28 is normal in f32; 2^-126 - 2^-127 style sums are not
        let small = f16::from_f32(2f32.powi(-14));
        assert_eq!(
            PairwiseGroups::CDNA2_F16.dot(&[small, -small], &[small, small]),
            0.0
        );
    }
}
