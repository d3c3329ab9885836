//! Block-scaled dot products: the arithmetic of `tcgen05.mma kind::mxf8f6f4` and
//! `kind::mxf4nvf4` as data.
//!
//! Operands in FP8, FP6 or FP4 carry one scale per block of `block` consecutive `k`
//! elements of each operand (32 with UE8M0 scales in the MX formats, 16 with UE4M3 in
//! NVFP4), and `D = sum_k a_k b_k sa_blk(k) sb_blk(k) + C` (OCP Microscaling v1.0 §6;
//! PTX ISA, `tcgen05.mma` block scaling). [`BlockScaledFma`] models how a unit may
//! compute it: products summed exactly in groups of `group`, each group times its
//! block's two scales one term of a fused multi-term adder that also takes the running
//! value `C` (or adds it afterwards), the terms aligned to the largest one's exponent as
//! [`ScaledAlignment`] says and cut toward zero `frac` fraction bits below it, the
//! instruction's result truncated to `frac_out` bits (or rounded to nearest) in f32, and
//! instructions of `k` products chained along the dot product.
//!
//! ```
//! use fprev::fused::BlockScaledFma;
//! let m = BlockScaledFma::B200_NVFP4;
//! let (a, b) = (vec![1.0; 64], vec![0.5; 64]);
//! let (sa, sb) = (vec![1.0; 4], vec![2.0; 4]);
//! assert_eq!(m.dot_add(&a, &b, &sa, &sb, 0.0)?, 64.0);
//! # Ok::<(), fprev::fused::InvalidModel>(())
//! ```

use super::{AccumulatorJoin, BlockFma, InvalidModel, Rounding};
use crate::float::{ElementType, FloatFormat, ScaleType};
use crate::tree::SumTree;

/// The exponent each term of a block-scaled fused adder is aligned by.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaledAlignment {
    /// The term's own exponent: `floor(log2 |g sa sb|)` for a group sum `g`.
    TermExponent,
    /// The sum of the two scales' exponents, whatever the group's products: the group
    /// sums are fixed-point numbers placed by their scales.
    ScaleExponents,
    /// The four exponents of a product (two elements', two scales'), the significand left
    /// unnormalised (groups of one product only): NVIDIA's rule for unscaled operands.
    OperandExponents,
}

impl ScaledAlignment {
    /// Every rule.
    pub const ALL: [ScaledAlignment; 3] = [
        ScaledAlignment::TermExponent,
        ScaledAlignment::ScaleExponents,
        ScaledAlignment::OperandExponents,
    ];

    /// The rule in words, for reports.
    ///
    /// ```
    /// use fprev::fused::ScaledAlignment;
    /// assert_eq!(ScaledAlignment::ScaleExponents.words(), "the scales' exponent sum");
    /// ```
    pub fn words(self) -> &'static str {
        match self {
            ScaledAlignment::TermExponent => "each term's own exponent",
            ScaledAlignment::ScaleExponents => "the scales' exponent sum",
            ScaledAlignment::OperandExponents => "the operands' and scales' exponent sum",
        }
    }
}

/// A block-scaled fused adder and the chain of instructions a dot product runs through.
///
/// ```
/// use fprev::fused::BlockScaledFma;
/// // one NVFP4 instruction: 64 products in 4 blocks of 16, one 5-way node with C
/// assert_eq!(BlockScaledFma::B200_NVFP4.tree(8).to_string(), "((0+1+2+3)+4+5+6+7)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockScaledFma {
    /// The element type.
    pub element: ElementType,
    /// The scale type.
    pub scale: ScaleType,
    /// Elements per scale (16 or 32).
    pub block: usize,
    /// Products summed exactly before alignment (divides `block`).
    pub group: usize,
    /// Products per instruction (a multiple of `block`).
    pub k: usize,
    /// What the terms are aligned by.
    pub alignment: ScaledAlignment,
    /// Fraction bits kept below the largest exponent (cut toward zero).
    pub frac: u32,
    /// Fraction bits of each instruction's result (cut toward zero); `None`: rounded
    /// to nearest in f32.
    pub frac_out: Option<u32>,
    /// Where the running value enters each instruction.
    pub accumulator: AccumulatorJoin,
}

impl BlockScaledFma {
    /// B200 `tcgen05.mma kind::mxf8f6f4` over MXFP8 E4M3 (k = 32, one UE8M0 block): an
    /// assumption stated from what is published, not a measurement. The FP8 products
    /// are aligned one by one by their operands' (and scales') exponents as B200's
    /// unscaled `kind::f8f6f4` does (`BlockFma::B200_FP8`: 25 bits, the running value
    /// added after each instruction, rounded to nearest).
    pub const B200_MXF8: BlockScaledFma = BlockScaledFma {
        element: ElementType::E4M3,
        scale: ScaleType::Ue8m0,
        block: 32,
        group: 1,
        k: 32,
        alignment: ScaledAlignment::OperandExponents,
        frac: 25,
        frac_out: Some(23),
        accumulator: AccumulatorJoin::Late,
    };

    /// B200 `tcgen05.mma kind::mxf4nvf4` over MXFP4 (k = 64, two UE8M0 blocks of 32):
    /// the issue's description of the unit (FP4 products summed exactly per block, the
    /// block sums aligned by their scales' exponents, the running value aligned with
    /// them), with 35 bits, inside the "34-37" users measure; an assumption.
    pub const B200_MXF4: BlockScaledFma = BlockScaledFma {
        element: ElementType::E2M1,
        scale: ScaleType::Ue8m0,
        block: 32,
        group: 32,
        k: 64,
        alignment: ScaledAlignment::ScaleExponents,
        frac: 35,
        frac_out: Some(23),
        accumulator: AccumulatorJoin::Aligned,
    };

    /// B200 `tcgen05.mma kind::mxf4nvf4` over NVFP4 (k = 64, four UE4M3 blocks of 16),
    /// the same adder as [`B200_MXF4`](Self::B200_MXF4); an assumption.
    pub const B200_NVFP4: BlockScaledFma = BlockScaledFma {
        element: ElementType::E2M1,
        scale: ScaleType::Ue4m3,
        block: 16,
        group: 16,
        k: 64,
        alignment: ScaledAlignment::ScaleExponents,
        frac: 35,
        frac_out: Some(23),
        accumulator: AccumulatorJoin::Aligned,
    };

    /// The presets by name.
    pub const PRESETS: &'static [(&'static str, BlockScaledFma)] = &[
        ("b200-mxf8", BlockScaledFma::B200_MXF8),
        ("b200-mxf4", BlockScaledFma::B200_MXF4),
        ("b200-nvfp4", BlockScaledFma::B200_NVFP4),
    ];

    /// The preset called `name` (case ignored).
    ///
    /// ```
    /// use fprev::fused::BlockScaledFma;
    /// assert_eq!(BlockScaledFma::preset("B200-NVFP4"), Some(BlockScaledFma::B200_NVFP4));
    /// ```
    pub fn preset(name: &str) -> Option<BlockScaledFma> {
        super::presets::by_name(Self::PRESETS, name)
    }

    /// Bits a group's exact sum may reach above its scales' exponent sum: the largest
    /// product's binade plus the group's carry.
    fn headroom(&self) -> u32 {
        let p = self.element.format().max_exp * 2 + 2;
        let carry = usize::BITS - self.group.leading_zeros();
        p.max(0) as u32 + carry
    }

    /// Why the model cannot run, if it cannot.
    ///
    /// ```
    /// use fprev::fused::BlockScaledFma;
    /// let bad = BlockScaledFma { group: 3, ..BlockScaledFma::B200_NVFP4 };
    /// assert!(bad.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), InvalidModel> {
        let bad = |m: String| Err(InvalidModel(m));
        if self.block == 0 || self.group == 0 || self.block % self.group != 0 {
            return bad(format!(
                "group {} must divide the block {}",
                self.group, self.block
            ));
        }
        if self.k == 0 || self.k % self.block != 0 {
            return bad(format!(
                "k {} must be a multiple of the block {}",
                self.k, self.block
            ));
        }
        if self.alignment == ScaledAlignment::OperandExponents && self.group != 1 {
            return bad("alignment by the operands' exponents needs groups of one".into());
        }
        // a group's exact sum, and the aligned sum of k/group + 1 terms, stay exact in f64
        let terms = (self.k / self.group + 1) as u32;
        let room = 53 - (u32::BITS - terms.leading_zeros());
        let e = self.element.format();
        let span = self.headroom() as i32 - 2 * e.min_subnormal_exp();
        let scaled = self.alignment == ScaledAlignment::ScaleExponents;
        let need = self.frac + if scaled { self.headroom() } else { 2 };
        if (self.group > 1 && span > 53) || need > room {
            return bad(format!(
                "{} fraction bits over groups of {} {} products are not exact in f64",
                self.frac,
                self.group,
                self.element.name()
            ));
        }
        if self.frac_out.is_some_and(|f| f > 23) {
            return bad("frac_out above f32's 23 fraction bits".into());
        }
        self.chain().validate()
    }

    /// The block-FMA chain the terms run through: one node per instruction.
    fn chain(&self) -> BlockFma {
        BlockFma {
            nfma: self.k / self.group,
            frac: self.frac,
            frac_out: self.frac_out,
            accumulator: self.accumulator,
            chunk: None,
            alignment: super::Alignment::OperandExponents,
            min_exp: None,
            align_rounding: Rounding::TowardZero,
            accumulator_cut: super::AccumulatorCut::WithProducts,
        }
    }

    /// `D = sum_k a_k b_k sa_blk(k) sb_blk(k) + c` in f32: `a` and `b` hold `K` element
    /// values (exact `f64`s of [`element`](Self::element)), `sa` and `sb` the `K / block`
    /// scale values of their blocks. `K` is padded with zero products to whole
    /// instructions, as the hardware pads `k`. A group whose products are all zero is
    /// no term (its scales set no exponent).
    ///
    /// ```
    /// use fprev::fused::BlockScaledFma;
    /// let m = BlockScaledFma::B200_MXF4;
    /// // 2^20 from block 0 and 32 products of 0.25 x 2^-20 from block 1: aligned at 2^20
    /// // with 35 bits they survive (2^-15 >= 2^(20-35))
    /// let mut a = vec![0.0; 64];
    /// a[0] = 1.0;
    /// a[32..].fill(0.5);
    /// let b = vec![0.5; 64];
    /// let d = m.dot_add(&a, &b, &[2f64.powi(21), 2f64.powi(-20)], &[1.0, 1.0], 0.0)?;
    /// assert_eq!(d, 2f32.powi(20) + 8.0 * 2f32.powi(-20));
    /// # Ok::<(), fprev::fused::InvalidModel>(())
    /// ```
    pub fn dot_add(
        &self,
        a: &[f64],
        b: &[f64],
        sa: &[f64],
        sb: &[f64],
        c: f32,
    ) -> Result<f32, InvalidModel> {
        self.validate()?;
        let blocks = a.len().div_ceil(self.block);
        if b.len() != a.len() || sa.len() != blocks || sb.len() != blocks {
            return Err(InvalidModel(format!(
                "{} and {} elements need {blocks} scales each, not {} and {}",
                a.len(),
                b.len(),
                sa.len(),
                sb.len()
            )));
        }
        let terms = self.terms(a, b, sa, sb);
        Ok(self.chain().chain::<f32>(&terms, Some(c)))
    }

    /// The adder's terms, `(value, alignment exponent)`, in `k` order: one per group, a
    /// group of zero products a zero term, padded to whole instructions.
    fn terms(&self, a: &[f64], b: &[f64], sa: &[f64], sb: &[f64]) -> Vec<(f64, i32)> {
        let efmt = self.element.format();
        let ee = |v: f64| -> i32 {
            if v == 0.0 {
                efmt.min_exp
            } else {
                ((((v.to_bits() >> 52) & 0x7FF) as i32) - 1023).max(efmt.min_exp)
            }
        };
        let padded = a.len().div_ceil(self.k).max(1) * self.k;
        let mut terms = Vec::with_capacity(padded / self.group);
        for g in (0..padded).step_by(self.group) {
            let blk = g / self.block;
            let range = g.min(a.len())..(g + self.group).min(a.len());
            // exact: validate() bounds the group's span within f64's 53 bits
            let sum: f64 = range.clone().map(|i| a[i] * b[i]).sum();
            if sum == 0.0 {
                terms.push((0.0, i32::MIN / 4));
                continue;
            }
            let (s, t) = (sa[blk], sb[blk]);
            let value = sum * s * t;
            let scales = self.scale.exponent(s) + self.scale.exponent(t);
            let e = match self.alignment {
                ScaledAlignment::TermExponent => binade(value),
                ScaledAlignment::ScaleExponents => scales,
                ScaledAlignment::OperandExponents => {
                    let i = range.start;
                    scales + ee(a[i]) + ee(b[i])
                }
            };
            terms.push((value, e));
        }
        terms
    }

    /// The tree fprev reveals over the `K / block` blocks of a dot product of `K`
    /// products: the products of one block share its scales, so a block is a leaf
    /// (see [`crate::ops::ScaledDot`]); one node per instruction.
    pub fn tree(&self, blocks: usize) -> SumTree {
        let per = (self.k / self.block).max(1);
        BlockFma {
            nfma: per,
            ..self.chain()
        }
        .tree(blocks)
    }

    /// The tree over `k` products (a multiple of [`group`](Self::group)): each group's
    /// products one node (summed exactly), the groups in the instructions' fused nodes,
    /// the instructions chained; what a reveal with every scale 1 sees.
    ///
    /// ```
    /// use fprev::fused::BlockScaledFma;
    /// let m = BlockScaledFma { k: 8, block: 4, group: 2, ..BlockScaledFma::B200_MXF4 };
    /// assert_eq!(m.product_tree(8).to_string(), "((0+1)+(2+3)+(4+5)+(6+7))");
    /// assert_eq!(BlockScaledFma::B200_MXF8.product_tree(4).to_string(), "(0+1+2+3)");
    /// ```
    pub fn product_tree(&self, k: usize) -> SumTree {
        let g = self.group.max(1);
        let terms = self.chain().tree(k.div_ceil(g));
        if g == 1 {
            return terms;
        }
        fn text(t: &SumTree, node: usize, g: usize, k: usize) -> String {
            if t.is_leaf(node) {
                let first = node * g;
                let leaves: Vec<String> =
                    (first..(first + g).min(k)).map(|i| i.to_string()).collect();
                return if leaves.len() == 1 {
                    leaves[0].clone()
                } else {
                    format!("({})", leaves.join("+"))
                };
            }
            let parts: Vec<String> = t
                .children(node)
                .iter()
                .map(|&c| text(t, c as usize, g, k))
                .collect();
            format!("({})", parts.join("+"))
        }
        if k == 0 {
            return terms;
        }
        text(&terms, terms.root(), g, k)
            .parse()
            .expect("a tree built from a tree's nodes parses")
    }

    /// The model in words, for reports and tables.
    ///
    /// ```
    /// let m = fprev::fused::BlockScaledFma::B200_NVFP4;
    /// assert!(m.describe().starts_with("e2m1 x ue4m3 blocks of 16"));
    /// ```
    pub fn describe(&self) -> String {
        let out = match self.frac_out {
            Some(f) => format!("truncated to {f} fraction bits"),
            None => "rounded to nearest".into(),
        };
        let c = match self.accumulator {
            AccumulatorJoin::Aligned => "aligned with the terms",
            AccumulatorJoin::Late => "added after each instruction, rounded to nearest",
        };
        format!(
            "{} x {} blocks of {}, groups of {} summed exactly, {} products per instruction, \
             aligned by {} with {} fraction bits, results {out}, C {c}",
            self.element.name(),
            self.scale.name(),
            self.block,
            self.group,
            self.k,
            self.alignment.words(),
            self.frac
        )
    }
}

/// `floor(log2 |x|)` for a non-zero finite `x`.
fn binade(x: f64) -> i32 {
    let bits = x.abs().to_bits();
    let field = (bits >> 52) as i32;
    if field == 0 {
        -1074 + (63 - bits.leading_zeros() as i32)
    } else {
        field - 1023
    }
}

/// The range of a leaf of a block-scaled dot: a power of two `ea eb sa sb` that
/// one element of each operand and two scales can make (elements' powers of two from
/// their smallest subnormal to their top binade, scales' from [`ScaleType::powers`]).
///
/// ```
/// use fprev::float::{ElementType, ScaleType};
/// let f = fprev::fused::scaled_leaf_format(ElementType::E2M1, ScaleType::Ue4m3);
/// assert_eq!((f.min_exp, f.max_exp), (-20, 20));
/// ```
pub fn scaled_leaf_format(element: ElementType, scale: ScaleType) -> FloatFormat {
    let e = element.format();
    let (lo, hi) = scale.powers();
    FloatFormat {
        name: element.name(),
        precision: 1,
        min_exp: 2 * (e.min_subnormal_exp() + lo),
        max_exp: 2 * (e.max_exp + hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_their_trees_have_one_node_per_instruction() {
        for (name, m) in BlockScaledFma::PRESETS {
            m.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(BlockScaledFma::B200_MXF4.tree(4).to_string(), "((0+1)+2+3)");
        assert_eq!(BlockScaledFma::B200_MXF8.tree(3).to_string(), "((0+1)+2)");
    }

    #[test]
    fn alignment_rules_differ_where_a_group_sum_carries() {
        // block 0: one product 6 x 6 = 36 at scale 1; block 1: 0.5 x 0.5 at 2^-30
        let base = BlockScaledFma {
            frac: 34,
            k: 64,
            ..BlockScaledFma::B200_MXF4
        };
        let mut a = vec![0.0; 64];
        let mut b = vec![0.0; 64];
        a[0] = 6.0;
        b[0] = 6.0;
        a[32] = 0.5;
        b[32] = 0.5;
        let (sa, sb) = ([1.0, 2f64.powi(-30)], [1.0, 1.0]);
        let by_scale = base.dot_add(&a, &b, &sa, &sb, 0.0).unwrap();
        let by_term = BlockScaledFma {
            alignment: ScaledAlignment::TermExponent,
            ..base
        }
        .dot_add(&a, &b, &sa, &sb, 0.0)
        .unwrap();
        // by the scales: top 2^0, quantum 2^-34 keeps 2^-32; by the term: top 2^5,
        // quantum 2^-29 cuts it
        assert_eq!(by_scale, 36.0 + 2f32.powi(-32));
        assert_eq!(by_term, 36.0);
    }

    #[test]
    fn bad_shapes_are_errors() {
        let m = BlockScaledFma::B200_NVFP4;
        assert!(m.dot_add(&[1.0; 16], &[1.0; 16], &[1.0], &[], 0.0).is_err());
        let wide = BlockScaledFma {
            frac: 45,
            ..BlockScaledFma::B200_MXF4
        };
        assert!(wide.validate().is_err());
    }
}
