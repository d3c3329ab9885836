//! CPU models of block fused multiply-add units, the adders inside GPU Tensor Cores.
//!
//! A Tensor Core does not add two numbers at a time. It takes a block of `nfma` products
//! (and, in most generations, the running accumulator with them), aligns every term to the
//! largest exponent among them, keeps `frac` fraction bits below that exponent (truncating
//! toward zero the bits that fall off), adds the aligned significands exactly, and
//! normalizes the result, keeping `frac_out` fraction bits (truncated) before writing it
//! to the accumulator format. A product's exponent there is the sum of its operands'
//! exponents, its significand left unnormalised in `[1, 4)` ([`Alignment`]) (Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of
//! NVIDIA tensor cores", PeerJ CS 2021; Khattak and Mikaitis, "Accurate models of NVIDIA
//! Tensor Cores", arXiv:2512.07004). A matrix product chains such blocks along `k`; some
//! libraries restart the chain every `K` products and add the chunk results in ordinary
//! f32 ("slow accumulation", cuBLAS's non-fast FP8 mode).
//!
//! [`BlockFma`] is that model with its parameters as data, so hypotheses about hardware
//! can be tested on a CPU: its [`sum`](BlockFma::sum), [`dot`](BlockFma::dot) and
//! [`sum_tree`](BlockFma::sum_tree) are targets like any other, and
//! [`tree`](BlockFma::tree) says which tree fprev must reveal for them. AMD's CDNA1 and
//! CDNA2 matrix cores have no fused adder: [`PairwiseGroups`] models their pairwise
//! groups the same way.
//!
//! ```
//! use fprev::fused::BlockFma;
//! // an A100-like chain: the running value and 8 new products per fused node
//! let model = BlockFma::A100;
//! let tree = fprev::reveal(32, |x: &[f32]| model.sum(x))?;
//! assert_eq!(tree, model.tree(32));
//! assert_eq!(
//!     tree.to_string(),
//!     "((((0+1+2+3+4+5+6+7)+8+9+10+11+12+13+14+15)+16+17+18+19+20+21+22+23)+24+25+26+27+28+29+30+31)"
//! );
//! # Ok::<(), fprev::RevealError>(())
//! ```

use crate::float::{FloatFormat, ProbeFloat};
use crate::tree::SumTree;

mod pairwise;
mod presets;
mod scaled;
pub use pairwise::PairwiseGroups;
pub use scaled::{scaled_leaf_format, BlockScaledFma, ScaledAlignment};

/// The exponent a product is aligned by inside a block.
///
/// The two rules differ when a product's significand is 2 or more (`1.5 x 1.5`): its
/// normalised exponent is then one above the sum of its operands' exponents, and a block
/// aligned by the sum keeps one bit more of every other term.
///
/// ```
/// use fprev::fused::{Alignment, BlockFma};
/// let by_sum = BlockFma { frac: 2, frac_out: None, ..BlockFma::V100 };
/// let by_product = BlockFma { alignment: Alignment::ProductExponent, ..by_sum };
/// let a = [1.5f32, 1.0];
/// let b = [1.5f32, 0.125];
/// // 2.25 + 0.125: aligned at 2^0 (1 + 0) the quantum is 2^-2 and 0.125 is cut;
/// // aligned at 2^1 (2.25's own binade) the quantum is 2^-1 and 2.25 loses its 0.25 too
/// assert_eq!(by_sum.dot::<f32, f32>(&a, &b), 2.25);
/// assert_eq!(by_product.dot::<f32, f32>(&a, &b), 2.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Alignment {
    /// By the normalised product's own exponent, `floor(log2 |a b|)` (significand in
    /// `[1, 2)`): the textbook fused adder.
    ProductExponent,
    /// By the sum `ea + eb` of the operands' exponents, each clamped below at its format's
    /// smallest normal exponent (a subnormal operand keeps its denormalised significand),
    /// the product's significand left in `[1, 4)`: what NVIDIA Tensor Cores do (Khattak
    /// and Mikaitis, arXiv:2512.07004; Xie et al., MMA-Sim, arXiv:2511.10909). A plain
    /// summand is its own operand times one; the running accumulator's exponent is
    /// clamped at the accumulator format's smallest normal exponent.
    OperandExponents,
}

/// Where the running accumulator enters a block.
///
/// ```
/// use fprev::fused::{AccumulatorJoin, BlockFma};
/// let late = BlockFma { accumulator: AccumulatorJoin::Late, ..BlockFma::V100 };
/// assert_eq!(late.tree(8).to_string(), "((0+1+2+3)+(4+5+6+7))");
/// assert_eq!(BlockFma::V100.tree(8).to_string(), "((0+1+2+3)+4+5+6+7)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccumulatorJoin {
    /// Aligned and truncated together with the block's products: one `(nfma + 1)`-term
    /// fused node per block (the Tensor Core behaviour the papers measure).
    Aligned,
    /// The block's products are fused alone, and the block result is added to the
    /// accumulator afterwards with one round-to-nearest addition in the accumulator type.
    Late,
}

/// How a step cuts the bits that fall below its quantum.
///
/// ```
/// use fprev::fused::Rounding;
/// assert_eq!(Rounding::TowardZero.integer(-2.5), -2.0);
/// assert_eq!(Rounding::NearestEven.integer(-2.5), -2.0);
/// assert_eq!(Rounding::TowardNegative.integer(-2.5), -3.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// Truncation: NVIDIA's alignment and result steps, AMD's alignment of products.
    TowardZero,
    /// To nearest, ties to even.
    NearestEven,
    /// Toward minus infinity (floor): AMD CDNA3's alignment of a block's sum and the
    /// running value (MMA-Sim, arXiv:2511.10909, `amd_fused_dot_rd_add`).
    TowardNegative,
}

impl Rounding {
    /// `v` rounded to an integer this way.
    pub fn integer(self, v: f64) -> f64 {
        match self {
            Rounding::TowardZero => v.trunc(),
            Rounding::NearestEven => v.round_ties_even(),
            Rounding::TowardNegative => v.floor(),
        }
    }

    /// The rounding in words, for reports.
    ///
    /// ```
    /// assert_eq!(fprev::fused::Rounding::TowardNegative.words(), "toward minus infinity");
    /// ```
    pub fn words(self) -> &'static str {
        match self {
            Rounding::TowardZero => "toward zero",
            Rounding::NearestEven => "to nearest even",
            Rounding::TowardNegative => "toward minus infinity",
        }
    }
}

/// How the running value is cut in a block it enters aligned ([`AccumulatorJoin::Aligned`]).
///
/// ```
/// use fprev::fused::{AccumulatorCut, BlockFma, Rounding};
/// let cdna3 = BlockFma::CDNA3_F16;
/// assert_eq!(
///     cdna3.accumulator_cut,
///     AccumulatorCut::TwoStage {
///         block_frac: 31,
///         acc_frac: 24,
///         rounding: Rounding::TowardNegative,
///         halves: false,
///         acc_reach: None,
///     }
/// );
/// assert_eq!(BlockFma::H100.accumulator_cut, AccumulatorCut::WithProducts);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccumulatorCut {
    /// One more term of the block: aligned with the products to their common largest
    /// exponent and cut as they are (NVIDIA's Tensor Cores).
    WithProducts,
    /// In two stages: the block's products are aligned and cut among themselves first
    /// (to `frac` bits below their largest exponent); their exact sum and the running
    /// value are then aligned to the larger of the two exponents (the running value's
    /// clamped below at the accumulator format's smallest normal exponent, a zero's taken
    /// as that), cut as `rounding` says, the sum to `block_frac` fraction bits below it and
    /// the running value to `acc_frac`, added exactly and rounded to nearest in the
    /// accumulator type: AMD CDNA3's matrix cores, 31 and 24 bits toward minus infinity
    /// (MMA-Sim, arXiv:2511.10909, `amd_fused_dot_rd_add`). The first block meets a zero
    /// running value the same way. The tree is that of [`WithProducts`](Self::WithProducts):
    /// the running value is cut relative to the block's products, so it is one of the
    /// block's children.
    TwoStage {
        /// Fraction bits of the products' sum kept below the larger exponent.
        block_frac: u32,
        /// Fraction bits of the running value kept below it.
        acc_frac: u32,
        /// How both are cut.
        rounding: Rounding,
        /// The products fused in two interleaved halves, even and odd `k` of the block,
        /// each aligned and cut alone (to `frac` bits below its own largest exponent);
        /// the two sums then aligned to the larger of their exponents, cut as
        /// `rounding` says to `frac` bits below it and added exactly, before the join
        /// with the running value: AMD CDNA3's FP8 instructions (MMA-Sim,
        /// arXiv:2511.10909, `amd_fused_dot_rd_add` with `is_fp8`). `false`: one group.
        halves: bool,
        /// The running value is taken as zero when its exponent lies more than this
        /// many binades below the larger exponent (CDNA3's FP8 instructions: 25);
        /// `None`: it is always cut as `acc_frac` says.
        acc_reach: Option<u32>,
    },
}

/// A block-FMA fused adder and the chain of blocks a dot product runs through it.
///
/// All arithmetic is exact until the two truncations the parameters name, then one
/// rounding to the accumulator type `T` (round to nearest, ties to even; exact when
/// `frac_out` is below `T`'s fraction bits).
///
/// ```
/// use fprev::fused::BlockFma;
/// // 2^24 and seven ones: f32 loses every one, one at a time
/// let x = [16777216.0f32, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// assert_eq!(x.iter().sum::<f32>(), 16777216.0);
/// // one 8-product fused node keeps them (24 bits below 2^24), then truncates the
/// // result to f32's 23 fraction bits: 2^24 + 7 becomes 2^24 + 6
/// assert_eq!(BlockFma::A100.sum(&x), 16777222.0);
/// // V100 aligns to 23 bits below 2^24: the ones are cut before they are added
/// assert_eq!(BlockFma::V100.sum(&x), 16777216.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockFma {
    /// Products per block (`>= 1`).
    pub nfma: usize,
    /// Fraction bits kept below the block's largest exponent when terms are aligned
    /// (truncated toward zero); at most [`MAX_FRAC`].
    pub frac: u32,
    /// Fraction bits of the block result (truncated toward zero); `None`: rounded to
    /// nearest in the accumulator type instead.
    pub frac_out: Option<u32>,
    /// Where the running accumulator enters.
    pub accumulator: AccumulatorJoin,
    /// Restart the chain every this many products (a multiple of `nfma`) and add the
    /// chunk results in the accumulator type, round to nearest; `None`: one chain.
    pub chunk: Option<usize>,
    /// Which exponent a product is aligned by.
    pub alignment: Alignment,
    /// The block's largest exponent is clamped below at this one (so terms far below
    /// `2^min_exp` are cut even in a block of tiny values); `None`: no clamp.
    pub min_exp: Option<i32>,
    /// How the alignment step cuts each term to `frac` bits (toward zero on every
    /// published unit).
    pub align_rounding: Rounding,
    /// How the running value is cut when it enters a block aligned.
    pub accumulator_cut: AccumulatorCut,
}

/// The widest alignment [`BlockFma`] models: aligned sums of up to 64 terms stay exact in
/// the `f64` it computes with.
pub const MAX_FRAC: u32 = 45;

/// Why a [`BlockFma`] cannot run.
///
/// ```
/// use fprev::fused::BlockFma;
/// let bad = BlockFma { nfma: 0, ..BlockFma::V100 };
/// assert!(bad.validate().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidModel(pub String);

impl std::fmt::Display for InvalidModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid block-FMA model: {}", self.0)
    }
}

impl std::error::Error for InvalidModel {}

impl BlockFma {
    /// `a · b + c` through a chain of `mma.sync.m16n8k32` instructions with an f16
    /// accumulator, as Hopper and Blackwell run them ([`HOPPER_FP8_F16`](Self::HOPPER_FP8_F16)):
    /// each instruction's 32 products through this model in
    /// [`mma_k32_f16_order`](Self::mma_k32_f16_order), its result then added to the
    /// running `c` (the previous instruction's result) in one addition in `T`.
    ///
    /// ```
    /// use fprev::float::F8E5M2;
    /// use fprev::fused::BlockFma;
    /// use fprev::half::f16;
    /// use fprev::ProbeFloat;
    /// let a = vec![F8E5M2::from_f64_round(2.0); 64];
    /// let d: f16 = BlockFma::HOPPER_FP8_F16.mma_k32_f16_dot_add(&a, &a, f16::from_f64_round(1.0));
    /// assert_eq!(d.to_f64(), 257.0);
    /// ```
    pub fn mma_k32_f16_dot_add<I: ProbeFloat, T: ProbeFloat>(&self, a: &[I], b: &[I], c: T) -> T {
        let order = Self::mma_k32_f16_order(a.len().min(b.len()));
        order.chunks(32).fold(c, |acc, inst| {
            let pick = |v: &[I]| -> Vec<I> { inst.iter().map(|&k| v[k]).collect() };
            self.dot::<I, T>(&pick(a), &pick(b)).add(acc)
        })
    }

    /// The order in which Hopper's and Blackwell's FP8 `mma.sync.m16n8k32` with an f16
    /// accumulator ([`HOPPER_FP8_F16`](Self::HOPPER_FP8_F16)) takes the `k` products of
    /// each instruction: within every 32, `k` ≡ 0 or 1 (mod 4) first, then `k` ≡ 2 or 3.
    ///
    /// ```
    /// let order = fprev::fused::BlockFma::mma_k32_f16_order(32);
    /// assert_eq!(&order[..4], &[0, 1, 4, 5]);
    /// assert_eq!(&order[16..20], &[2, 3, 6, 7]);
    /// ```
    pub fn mma_k32_f16_order(k: usize) -> Vec<usize> {
        (0..k)
            .step_by(32)
            .flat_map(|base| {
                let end = (base + 32).min(k);
                let pick =
                    move |low: bool| (base..end).filter(move |i| ((i - base) % 4 < 2) == low);
                pick(true).chain(pick(false))
            })
            .collect()
    }

    /// This unit in a split-K GEMM: the `k` products of each dot split into `parts`
    /// slices, each run as its own chain from zero, the slice results added in order in
    /// the accumulator type, rounded to nearest (cuBLAS's split-K reduction and
    /// CUTLASS's serial and parallel split-K both add the slices in order). That is
    /// [`chunk`](Self::chunk) with the slice length: `ceil(k / parts)` rounded up to a
    /// whole number of blocks, as the kernels tile `k`. So a reveal reports a split-K
    /// dot as a promotion interval of one slice; the two cannot be told apart by any
    /// input, because they compute the same sums.
    ///
    /// ```
    /// use fprev::fused::BlockFma;
    /// let split = BlockFma::H100.split_k(256, 4);
    /// assert_eq!(split.chunk, Some(64));
    /// assert_eq!(split.tree(256).children(split.tree(256).root()).len(), 2);
    /// // one slice: the chain itself
    /// assert_eq!(BlockFma::H100.split_k(256, 1).tree(256), BlockFma::H100.tree(256));
    /// ```
    pub fn split_k(self, k: usize, parts: usize) -> BlockFma {
        let nfma = self.nfma.max(1);
        let slice = k.div_ceil(parts.max(1)).div_ceil(nfma).max(1) * nfma;
        BlockFma {
            chunk: (slice < k).then_some(slice),
            ..self
        }
    }

    /// Whether the parameters describe a unit this model can run.
    pub fn validate(&self) -> Result<(), InvalidModel> {
        if self.nfma == 0 || self.nfma > 64 {
            return Err(InvalidModel(format!(
                "nfma = {} (products per block must be 1..=64)",
                self.nfma
            )));
        }
        if self.frac > MAX_FRAC {
            return Err(InvalidModel(format!(
                "frac = {} (at most {MAX_FRAC} fraction bits are modelled)",
                self.frac
            )));
        }
        if let AccumulatorCut::TwoStage {
            block_frac,
            acc_frac,
            ..
        } = self.accumulator_cut
        {
            if block_frac > MAX_FRAC || acc_frac > MAX_FRAC {
                return Err(InvalidModel(format!(
                    "two-stage widths {block_frac}/{acc_frac} (at most {MAX_FRAC} fraction \
                     bits are modelled)"
                )));
            }
            if self.accumulator != AccumulatorJoin::Aligned {
                return Err(InvalidModel(
                    "a two-stage cut of the running value needs it aligned with each block \
                     (accumulator: Aligned)"
                        .into(),
                ));
            }
        }
        if let Some(k) = self.chunk {
            if k == 0 || k % self.nfma != 0 {
                return Err(InvalidModel(format!(
                    "chunk = {k} is not a positive multiple of nfma = {}",
                    self.nfma
                )));
            }
        }
        Ok(())
    }

    /// One fused node over `terms` (plain summands of `T`, or exact products aligned by
    /// their own exponent): aligned to the largest exponent, each truncated to `frac`
    /// fraction bits below it, added exactly, the result truncated to `frac_out`
    /// fraction bits and rounded to `T`. Infinities and NaNs give the IEEE sum; a zero
    /// result is `+0`.
    ///
    /// ```
    /// use fprev::fused::BlockFma;
    /// // 1 + 2^-24 keeps its low term in a 23-bit alignment? no: 2^-24 is below it
    /// assert_eq!(BlockFma::V100.fused::<f32>(&[1.0, 2f64.powi(-24), 2f64.powi(-24)]), 1.0);
    /// // with 24 bits both survive, and the sum 1 + 2^-23 is exact in f32
    /// assert_eq!(BlockFma::A100.fused::<f32>(&[1.0, 2f64.powi(-24), 2f64.powi(-24)]), 1.0 + 2f32.powi(-23));
    /// ```
    pub fn fused<T: ProbeFloat>(&self, terms: &[f64]) -> T {
        let terms: Vec<(f64, i32)> = terms.iter().map(|&v| (v, self.exponent::<T>(v))).collect();
        self.node(&terms)
    }

    /// One fused node over `(value, alignment exponent)` pairs (see [`Alignment`]).
    pub(crate) fn node<T: ProbeFloat>(&self, terms: &[(f64, i32)]) -> T {
        let (sum, _) = self.node_exact(terms);
        T::from_f64_round(output(sum, self.frac_out, T::FORMAT.min_exp))
    }

    /// One fused node's exact aligned sum, before the result is rounded, and the
    /// exponent it was aligned to.
    pub(crate) fn node_exact(&self, terms: &[(f64, i32)]) -> (f64, i32) {
        let AccumulatorCut::TwoStage {
            halves: true,
            rounding,
            ..
        } = self.accumulator_cut
        else {
            return aligned_sum(self.frac, self.min_exp, self.align_rounding, terms);
        };
        let half = |skip: usize| {
            let terms = terms.iter().copied().skip(skip).step_by(2);
            aligned_sum_of(self.frac, self.min_exp, self.align_rounding, terms)
        };
        let (even, odd) = (half(0), half(1));
        if !even.0.is_finite() || !odd.0.is_finite() {
            return (even.0 + odd.0, 0);
        }
        // a half whose products cancel keeps their exponent, as one group does
        let top = even.1.max(odd.1);
        let cut = |v: f64| cut_below(v, self.frac, top, rounding);
        (cut(even.0) + cut(odd.0), top)
    }

    /// The two-stage block of [`AccumulatorCut::TwoStage`]: the running value `acc`
    /// (none before the first block) and the exact sum `block` of the block's products
    /// with the exponent they were aligned to. With
    /// [`AccumulatorCut::WithProducts`] the block alone, rounded as `frac_out` says.
    pub(crate) fn join<T: ProbeFloat>(&self, acc: Option<T>, block: (f64, i32)) -> T {
        let AccumulatorCut::TwoStage {
            block_frac,
            acc_frac,
            rounding,
            acc_reach,
            ..
        } = self.accumulator_cut
        else {
            return T::from_f64_round(output(block.0, self.frac_out, T::FORMAT.min_exp));
        };
        let mut c = acc.map_or(0.0, |a| a.to_f64());
        if !c.is_finite() || !block.0.is_finite() {
            return T::from_f64_round(c + block.0);
        }
        // a block whose products cancel keeps their exponent: it still cuts c
        let ec = clamped_exponent(c, T::FORMAT);
        let top = ec.max(block.1);
        if acc_reach.is_some_and(|r| ec < top - r as i32) {
            c = 0.0;
        }
        T::from_f64_round(
            cut_below(block.0, block_frac, top, rounding) + cut_below(c, acc_frac, top, rounding),
        )
    }

    /// The alignment exponent of `v`, a plain summand or running value of `T`.
    pub(crate) fn exponent<T: ProbeFloat>(&self, v: f64) -> i32 {
        match self.alignment {
            Alignment::ProductExponent => binade_or_min(v),
            Alignment::OperandExponents => clamped_exponent(v, T::FORMAT),
        }
    }

    /// The chain over already formed products (or plain summands) `x`, in order: blocks
    /// of `nfma` (a short last block is fused as if padded with zeros, as the hardware
    /// pads `k`; a block of one term with nothing to add passes unchanged), the
    /// accumulator joined as [`accumulator`](Self::accumulator) says,
    /// restarted every [`chunk`](Self::chunk) terms. Panics if the model is invalid
    /// (see [`validate`](Self::validate)).
    ///
    /// ```
    /// use fprev::fused::BlockFma;
    /// let x = vec![1.0f32; 100];
    /// assert_eq!(BlockFma::H100.sum(&x), 100.0);
    /// ```
    pub fn sum<T: ProbeFloat>(&self, x: &[T]) -> T {
        let terms: Vec<(f64, i32)> = x
            .iter()
            .map(|v| (v.to_f64(), self.exponent::<T>(v.to_f64())))
            .collect();
        self.sum_exact(&terms)
    }

    /// The dot product of `a` and `b` through the chain: products formed exactly (in
    /// `f64`, which holds the product of any two values of the 8- and 16-bit formats and
    /// of `f32`), each aligned as [`alignment`](Self::alignment) says, then summed as
    /// [`sum`](Self::sum) sums in `T`.
    ///
    /// ```
    /// use fprev::float::F8E4M3;
    /// use fprev::fused::BlockFma;
    /// use fprev::ProbeFloat;
    /// let a: Vec<F8E4M3> = (0..64).map(|i| F8E4M3::from_f64_round(i as f64 / 8.0)).collect();
    /// let b = vec![F8E4M3::from_f64_round(2.0); 64];
    /// let d: f32 = BlockFma::H100_FP8.dot(&a, &b);
    /// assert_eq!(d, 504.0);
    /// ```
    pub fn dot<I: ProbeFloat, T: ProbeFloat>(&self, a: &[I], b: &[I]) -> T {
        let terms = self.product_terms(a, b);
        self.sum_exact::<T>(&terms)
    }

    /// `a . b + c`, one output element of a matrix-multiply-accumulate `D = A B + C`:
    /// [`dot`](Self::dot) with `c` as the running value before the first block (aligned
    /// with the first block's products, or added after it, as
    /// [`accumulator`](Self::accumulator) says), so `K` products and `c` through
    /// `ceil(K / nfma)` chained blocks, the result in `T` (`f32`, or `f16` where the
    /// instruction writes an f16 `D`: `c` is then an f16 too).
    ///
    /// ```
    /// use fprev::fused::BlockFma;
    /// use fprev::half::f16;
    /// let a = vec![f16::from_f32(1.0); 8];
    /// let b = vec![f16::from_f32(2f32.powi(-24)); 8];
    /// // c = 2^24 and eight products 2^-24: all cut in the alignment at 2^24
    /// let d: f32 = BlockFma::A100.dot_add(&a, &b, 16777216.0);
    /// assert_eq!(d, 16777216.0);
    /// // with c = 0 the products align among themselves and sum exactly
    /// let d: f32 = BlockFma::A100.dot_add(&a, &b, 0.0);
    /// assert_eq!(d, 2f32.powi(-21));
    /// ```
    pub fn dot_add<I: ProbeFloat, T: ProbeFloat>(&self, a: &[I], b: &[I], c: T) -> T {
        let terms = self.product_terms(a, b);
        self.chain::<T>(&terms, Some(c))
    }

    fn product_terms<I: ProbeFloat>(&self, a: &[I], b: &[I]) -> Vec<(f64, i32)> {
        a.iter()
            .zip(b)
            .map(|(x, y)| {
                let (p, q) = (x.to_f64(), y.to_f64());
                (p * q, self.product_exponent(p, q, I::FORMAT))
            })
            .collect()
    }

    /// The alignment exponent of the exact product `p * q` of two values of `fmt`.
    pub(crate) fn product_exponent(&self, p: f64, q: f64, fmt: FloatFormat) -> i32 {
        match self.alignment {
            Alignment::ProductExponent => binade_or_min(p * q),
            Alignment::OperandExponents => clamped_exponent(p, fmt) + clamped_exponent(q, fmt),
        }
    }

    /// [`sum`](Self::sum) over exact `(value, alignment exponent)` terms, each given to
    /// the first node unrounded (products of narrow formats that `T` may not hold as
    /// they are).
    fn sum_exact<T: ProbeFloat>(&self, x: &[(f64, i32)]) -> T {
        self.chain(x, None)
    }

    /// [`sum_exact`](Self::sum_exact) with the running value `init` before the first
    /// block of the first chunk (`D = A B + C`'s `C`).
    fn chain<T: ProbeFloat>(&self, x: &[(f64, i32)], init: Option<T>) -> T {
        self.validate().unwrap_or_else(|e| panic!("{e}"));
        let chunk = self.chunk.unwrap_or(usize::MAX);
        let mut total: Option<T> = None;
        let mut terms: Vec<(f64, i32)> = Vec::with_capacity(self.nfma + 1);
        let mut init = init;
        if x.is_empty() {
            return init.unwrap_or(T::ZERO);
        }
        for part in x.chunks(chunk.min(x.len().max(1))) {
            let mut acc: Option<T> = init.take();
            for block in part.chunks(self.nfma) {
                terms.clear();
                let two_stage = self.accumulator_cut != AccumulatorCut::WithProducts;
                if let (AccumulatorJoin::Aligned, false, Some(a)) =
                    (self.accumulator, two_stage, acc)
                {
                    terms.push((a.to_f64(), self.exponent::<T>(a.to_f64())));
                }
                terms.extend_from_slice(block);
                let lone = terms.len() == 1;
                acc = Some(match (self.accumulator, acc) {
                    // the products first, then the running value (even a zero one before
                    // the first block, which makes -0 a +0)
                    _ if two_stage => {
                        let sum = if lone {
                            terms[0]
                        } else {
                            self.node_exact(&terms)
                        };
                        self.join(acc, sum)
                    }
                    // a lone term is no addition: it passes as it is (rounded to T)
                    (_, None) if lone => T::from_f64_round(terms[0].0),
                    (AccumulatorJoin::Aligned, _) => self.node(&terms),
                    (AccumulatorJoin::Late, Some(a)) if lone => {
                        a.add(T::from_f64_round(terms[0].0))
                    }
                    (AccumulatorJoin::Late, Some(a)) => a.add(self.node(&terms)),
                    (AccumulatorJoin::Late, None) => self.node(&terms),
                });
            }
            let Some(acc) = acc else { continue };
            total = Some(match total {
                Some(t) => t.add(acc),
                None => acc,
            });
        }
        total.unwrap_or(T::ZERO)
    }

    /// The summation tree of [`sum`](Self::sum) over `n` terms: one node per block (the
    /// accumulator among its children when aligned), chunk results added in order.
    ///
    /// ```
    /// let t = fprev::fused::BlockFma::H100_FP8_SLOW.tree(256);
    /// assert_eq!(t.leaf_count(), 256);
    /// assert_eq!(t.children(t.root()).len(), 2); // two 128-product chunks
    /// ```
    pub fn tree(&self, n: usize) -> SumTree {
        let chunk = self.chunk.unwrap_or(usize::MAX).max(1);
        let mut nodes: Vec<Vec<usize>> = Vec::new();
        let node = |nodes: &mut Vec<Vec<usize>>, kids: Vec<usize>| -> usize {
            if kids.len() == 1 {
                return kids[0];
            }
            nodes.push(kids);
            n + nodes.len() - 1
        };
        let mut total: Option<usize> = None;
        let mut start = 0;
        while start < n {
            let end = start.saturating_add(chunk).min(n);
            let mut acc: Option<usize> = None;
            let mut b = start;
            while b < end {
                let e = (b + self.nfma.max(1)).min(end);
                let leaves: Vec<usize> = (b..e).collect();
                acc = Some(match (self.accumulator, acc) {
                    (AccumulatorJoin::Aligned, Some(a)) => {
                        let mut kids = vec![a];
                        kids.extend(leaves);
                        node(&mut nodes, kids)
                    }
                    (AccumulatorJoin::Aligned, None) => node(&mut nodes, leaves),
                    (AccumulatorJoin::Late, prev) => {
                        let blk = node(&mut nodes, leaves);
                        match prev {
                            Some(a) => node(&mut nodes, vec![a, blk]),
                            None => blk,
                        }
                    }
                });
                b = e;
            }
            if let Some(acc) = acc {
                total = Some(match total {
                    Some(t) => node(&mut nodes, vec![t, acc]),
                    None => acc,
                });
            }
            start = end;
        }
        SumTree::from_nodes(n, nodes).unwrap_or_else(|e| unreachable!("a chain is a tree: {e}"))
    }

    /// Sum `x` in the order of `tree`, every node with three or more children a fused
    /// node of this model (aligned, truncated), binary nodes one round-to-nearest
    /// addition in `T`: any tree shape as a hardware-like target. (A chain whose last
    /// block holds one product fuses that node in [`sum`](Self::sum); here it is binary.)
    ///
    /// ```
    /// use fprev::fused::BlockFma;
    /// let shape: fprev::SumTree = "((0+1+2+3)+(4+5+6+7))".parse()?;
    /// let model = BlockFma::V100;
    /// let t = fprev::reveal(8, |x: &[f32]| model.sum_tree(&shape, x))?;
    /// assert_eq!(t, shape);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sum_tree<T: ProbeFloat>(&self, tree: &SumTree, x: &[T]) -> T {
        tree.replay_with(x, |_, terms| self.fused(terms), |_, a, b| a.add(b))
    }
}

/// `x * 2^e`, exact while the result is a normal `f64` (two steps keep `2^e` in range).
fn scale2(x: f64, e: i32) -> f64 {
    let half = e / 2;
    x * crate::exact::pow2(half.clamp(-1022, 1023))
        * crate::exact::pow2((e - half).clamp(-1022, 1023))
}

/// `floor(log2 |x|)` of a finite non-zero `x`.
fn binade(x: f64) -> i32 {
    let bits = x.abs().to_bits();
    let field = (bits >> 52) as i32;
    if field == 0 {
        // subnormal: the position of the highest set bit
        -1074 + (63 - bits.leading_zeros() as i32)
    } else {
        field - 1023
    }
}

/// [`binade`], or the lowest exponent for zero (a zero term never sets the alignment).
fn binade_or_min(x: f64) -> i32 {
    if x == 0.0 || !x.is_finite() {
        i32::MIN / 4
    } else {
        binade(x)
    }
}

/// The exponent of a value of `fmt` as a fused adder's input stage sees it: its binade,
/// clamped below at the format's smallest normal exponent (a subnormal keeps its
/// denormalised significand rather than being renormalised).
fn clamped_exponent(x: f64, fmt: FloatFormat) -> i32 {
    binade_or_min(x).max(fmt.min_exp)
}

/// The exact sum of `terms`, `(value, alignment exponent)` pairs, aligned to the largest
/// exponent of a non-zero term (clamped below at `min_exp`), each cut as `rounding` says
/// to `frac` fraction bits below it, and that exponent. Exact in `f64` for up to 64 terms of `frac <= 45`
/// whose values stay below 4 times `2^exponent`. A zero result is `+0`, as the hardware
/// writes a sum that cancels or truncates to nothing.
pub(crate) fn aligned_sum(
    frac: u32,
    min_exp: Option<i32>,
    rounding: Rounding,
    terms: &[(f64, i32)],
) -> (f64, i32) {
    aligned_sum_of(frac, min_exp, rounding, terms.iter().copied())
}

/// [`aligned_sum`] over terms read twice from an iterator (a block's interleaved half,
/// without collecting it).
fn aligned_sum_of(
    frac: u32,
    min_exp: Option<i32>,
    rounding: Rounding,
    terms: impl Iterator<Item = (f64, i32)> + Clone,
) -> (f64, i32) {
    if terms.clone().any(|t| !t.0.is_finite()) {
        return (terms.map(|t| t.0).sum(), 0);
    }
    let Some(emax) = terms.clone().filter(|t| t.0 != 0.0).map(|t| t.1).max() else {
        return (0.0, min_exp.unwrap_or(i32::MIN / 4));
    };
    let emax = emax.max(min_exp.unwrap_or(i32::MIN));
    let shift = frac as i32 - emax;
    let mut acc: i128 = 0;
    for (t, _) in terms {
        acc += rounding.integer(scale2(t, shift)) as i128;
    }
    (scale2(acc as f64, -shift), emax)
}

/// `v` cut as `rounding` says to a multiple of `2^(top - frac)`: `frac` fraction bits
/// below the exponent `top` (exact while the result is a normal `f64`).
fn cut_below(v: f64, frac: u32, top: i32, rounding: Rounding) -> f64 {
    let shift = frac as i32 - top;
    scale2(rounding.integer(scale2(v, shift)), -shift)
}

/// `v` truncated toward zero to `frac_out` fraction bits below its leading bit (that bit
/// taken no lower than `2^min_exp`, where the output format's subnormals start), or `v`.
pub(crate) fn output(v: f64, frac_out: Option<u32>, min_exp: i32) -> f64 {
    match frac_out {
        Some(k) if v != 0.0 && v.is_finite() => {
            let shift = k as i32 - binade(v).max(min_exp);
            scale2(scale2(v, shift).trunc(), -shift)
        }
        _ => v,
    }
}

#[cfg(test)]
mod tests;
