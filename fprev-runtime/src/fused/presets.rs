//! The measured units as [`BlockFma`] presets: one constant per GPU generation and
//! precision (with the paper or measurement each is taken from), and the name tables the
//! command line's `--model` reads.

use super::{AccumulatorCut, AccumulatorJoin, Alignment, BlockFma, Rounding};

/// The preset called `name` in a preset table, its case ignored (the command line's
/// `--model H100` and `h100` name the same adder).
pub(super) fn by_name<M: Copy>(presets: &[(&str, M)], name: &str) -> Option<M> {
    presets
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, m)| m)
}

impl BlockFma {
    /// Volta V100, fp16 products into f32 (`mma.m8n8k4`): blocks of 4 products plus the
    /// accumulator, aligned by the operands' exponent sums to the largest exponent
    /// (clamped below at f32's `-126`) with 23 fraction bits kept, the sum truncated to
    /// f32's 23 fraction bits (Fasi et al. 2021, §4; Khattak and Mikaitis,
    /// arXiv:2512.07004; MMA-Sim, arXiv:2511.10909, "Volta": 23 bits).
    pub const V100: BlockFma = BlockFma {
        nfma: 4,
        frac: 23,
        frac_out: Some(23),
        accumulator: AccumulatorJoin::Aligned,
        chunk: None,
        alignment: Alignment::OperandExponents,
        min_exp: Some(-126),
        align_rounding: Rounding::TowardZero,
        accumulator_cut: AccumulatorCut::WithProducts,
    };

    /// Ampere A100 (and Turing, Ada Lovelace), fp16/bf16 products into f32: blocks of 8
    /// products plus the accumulator (`mma.m16n8k16` runs as two 8-product halves), 24
    /// fraction bits kept in alignment, result truncated to 23 (MMA-Sim,
    /// arXiv:2511.10909, "Turing"/"Ampere"/"Ada Lovelace": 24 bits, split k; Khattak and
    /// Mikaitis, arXiv:2512.07004; the 9-way trees of the FPRev paper, §7).
    pub const A100: BlockFma = BlockFma {
        nfma: 8,
        frac: 24,
        ..BlockFma::V100
    };

    /// Hopper H100, fp16/bf16 products into f32 (`wgmma` with k = 16): blocks of 16
    /// products plus the accumulator, 25 fraction bits kept in alignment, result
    /// truncated to 23 (MMA-Sim, arXiv:2511.10909, "Hopper": 25 bits; Khattak and
    /// Mikaitis, arXiv:2512.07004; the 17-way trees of the FPRev paper, §7).
    pub const H100: BlockFma = BlockFma {
        nfma: 16,
        frac: 25,
        ..BlockFma::V100
    };

    /// Hopper H100, FP8 products with "fast accumulation" (`wgmma` with k = 32): blocks
    /// of 32 products plus the accumulator, 13 fraction bits kept in alignment and in the
    /// result (the e8m13 accumulator: MMA-Sim, arXiv:2511.10909, FP8 `wgmma`: 13 bits,
    /// output `f32_e8m13`; Khattak and Mikaitis, arXiv:2512.07004; DeepSeek-V3 report
    /// §3.3.2, "around 14 bits").
    pub const H100_FP8: BlockFma = BlockFma {
        nfma: 32,
        frac: 13,
        frac_out: Some(13),
        ..BlockFma::V100
    };

    /// [`H100_FP8`](Self::H100_FP8) with the chain restarted every 128 products and the
    /// chunk results added in f32, as cuBLAS does without fast accumulation and as the
    /// DeepSeek-V3 report (§3.3.2) promotes partial sums every 128 elements.
    pub const H100_FP8_SLOW: BlockFma = BlockFma {
        chunk: Some(128),
        ..BlockFma::H100_FP8
    };

    /// Ada Lovelace (L40S, RTX 4000 series), FP8 products (`mma.m16n8k32` as two
    /// 16-product halves): 13 fraction bits kept in alignment and in the result (MMA-Sim,
    /// arXiv:2511.10909, "Ada Lovelace" FP8: 13 bits, split k, output `f32_e8m13`;
    /// Khattak and Mikaitis, arXiv:2512.07004).
    pub const ADA_FP8: BlockFma = BlockFma {
        nfma: 16,
        ..BlockFma::H100_FP8
    };

    /// Blackwell B200, fp16/bf16 products into f32 (`tcgen05.mma` with k = 16): blocks of
    /// 16 products plus the accumulator, 25 fraction bits kept in alignment as on Hopper,
    /// result truncated to 23 (MMA-Sim, arXiv:2511.10909, "Blackwell": 25 bits; Khattak
    /// and Mikaitis, arXiv:2512.07004).
    pub const B200: BlockFma = BlockFma {
        nfma: 16,
        frac: 25,
        ..BlockFma::V100
    };

    /// Ampere A100 (and Ada Lovelace), TF32 products into f32 (`mma.m16n8k8` with
    /// `.tf32` operands, run as two 4-product halves; `m16n8k4` is one block): blocks of
    /// 4 products plus the accumulator, 24 fraction bits kept in alignment, the result
    /// truncated to 23 (MMA-Sim, arXiv:2511.10909, "Ampere"/"Ada Lovelace": 24 bits,
    /// split k for `k = 8` with f32 operands, which it cuts to TF32 first; Khattak and
    /// Mikaitis, arXiv:2512.07004). Operands are [`Tf32`](crate::float::Tf32) values.
    pub const A100_TF32: BlockFma = BlockFma {
        nfma: 4,
        ..BlockFma::A100
    };

    /// Hopper H100, TF32 products into f32 (`wgmma` with k = 8): blocks of 8 products
    /// plus the accumulator, 25 fraction bits kept in alignment as for fp16, the result
    /// truncated to 23 (MMA-Sim, arXiv:2511.10909, `wgmma` "Hopper": 25 bits, k = 8 for
    /// `tf32`; Khattak and Mikaitis, arXiv:2512.07004).
    pub const H100_TF32: BlockFma = BlockFma {
        nfma: 8,
        ..BlockFma::H100
    };

    /// Blackwell B200, TF32 products into f32 (`tcgen05.mma` `kind::tf32`, k = 8):
    /// blocks of 8 products plus the accumulator, 25 fraction bits, the result truncated
    /// to 23 (MMA-Sim, arXiv:2511.10909, `tcgen05.mma`: 25 bits; Khattak and Mikaitis,
    /// arXiv:2512.07004).
    pub const B200_TF32: BlockFma = BlockFma {
        nfma: 8,
        ..BlockFma::B200
    };

    /// Volta V100, fp16 products into an f16 result: [`V100`](Self::V100)'s blocks, the
    /// exact aligned sum rounded to nearest in f16 (not truncated), the block's largest
    /// exponent clamped below at `-19` (Khattak and Mikaitis, arXiv:2512.07004; toolbox
    /// `models/V100TC.m`: `frmode = 'rne'`, `min_exp_limit = -19` for an fp16 output).
    pub const V100_F16: BlockFma = BlockFma {
        frac_out: None,
        min_exp: Some(-19),
        ..BlockFma::V100
    };

    /// Ampere A100 (and Ada Lovelace), fp16 products into an f16 result:
    /// [`A100`](Self::A100)'s blocks, the exact aligned sum rounded to nearest in f16, the
    /// largest exponent clamped below at `-20` (toolbox `models/A100TC.m`, `AdaTC.m`:
    /// `frmode = 'rne'`, `min_exp_limit = -20` for an fp16 output).
    pub const A100_F16: BlockFma = BlockFma {
        frac_out: None,
        min_exp: Some(-20),
        ..BlockFma::A100
    };

    /// Hopper H100, fp16 products into an f16 result: [`H100`](Self::H100)'s blocks, the
    /// exact aligned sum rounded to nearest in f16, the largest exponent clamped below at
    /// `-21` (toolbox `models/H100TC.m`: `frmode = 'rne'`, `min_exp_limit = -21` for an
    /// fp16 output).
    pub const H100_F16: BlockFma = BlockFma {
        frac_out: None,
        min_exp: Some(-21),
        ..BlockFma::H100
    };

    /// Blackwell B200, fp16 products into an f16 result, as [`H100_F16`](Self::H100_F16)
    /// (toolbox `models/B200TC.m`: `frmode = 'rne'`, `min_exp_limit = -21`).
    pub const B200_F16: BlockFma = BlockFma {
        frac_out: None,
        min_exp: Some(-21),
        ..BlockFma::B200
    };

    /// Blackwell B200, FP8 products into f32 (`mma.sync` with k = 32): the 32 products
    /// fused alone (25 fraction bits kept in alignment, as for fp16; the result
    /// truncated to 23), then added to `c` with one round-to-nearest f32 addition
    /// ([`AccumulatorJoin::Late`]). Fitted to the toolbox's B200 vectors (Khattak and
    /// Mikaitis, arXiv:2512.07004, `model_validation/B200/E4M3`, `E5M2`), all 5000 rows
    /// of each bit for bit; any alignment width from 23 to 45 bits fits them, 25 is
    /// Blackwell's (MMA-Sim, arXiv:2511.10909). The toolbox's own `models/B200TC.m`
    /// (`c` aligned with the products, `fma = 32`, `neab = 2`, truncated) misses a
    /// third of those rows by one unit in the last place.
    pub const B200_FP8: BlockFma = BlockFma {
        nfma: 32,
        accumulator: AccumulatorJoin::Late,
        ..BlockFma::B200
    };

    /// Ada Lovelace (L40S, RTX 4000 series), FP8 products into an f16 result
    /// (`mma.m16n8k32` with f16 `C` and `D`, two 16-product halves): as
    /// [`ADA_FP8`](Self::ADA_FP8), 13 fraction bits kept in alignment, but each half's
    /// exact aligned sum rounded to nearest in f16, the first half's f16 result the
    /// second's running value (MMA-Sim, arXiv:2511.10909: Ada Lovelace FP8, 13 bits,
    /// split k, f16 output rounded to nearest; the toolbox's `model_validation/Ada`
    /// vectors match bit for bit).
    pub const ADA_FP8_F16: BlockFma = BlockFma {
        frac_out: None,
        ..BlockFma::ADA_FP8
    };

    /// Hopper (H100, H200) and Blackwell (B200) FP8 products into an f16 result
    /// (`mma.sync.m16n8k32` with f16 `C` and `D`): the 32 products in two fused groups
    /// of 16, 25 fraction bits kept in alignment, each result rounded to nearest in f16,
    /// the first group's f16 result the second's running value; `c` is added after both,
    /// in one f16 addition rounded to nearest. The groups are not contiguous: the first
    /// holds the products with `k` ≡ 0 or 1 (mod 4), the second those with `k` ≡ 2 or 3
    /// ([`mma_k32_f16_order`](Self::mma_k32_f16_order)); instructions chain through
    /// `c`. [`mma_k32_f16_dot_add`](Self::mma_k32_f16_dot_add) computes that.
    /// Found by fprev on the toolbox's hardware vectors (Khattak and Mikaitis,
    /// arXiv:2512.07004, `model_validation/H100|H200|B200/E4M3|E5M2`, f16 results): all
    /// 5000 rows of each of the six cases bit for bit, where neither published model
    /// describes the instruction (the toolbox gives such a result 0 fraction bits; MMA-Sim
    /// models it on Ada only). Any alignment width from about 16 bits up fits the rows;
    /// 25 is these architectures' (MMA-Sim, arXiv:2511.10909).
    ///
    /// ```
    /// use fprev::float::F8E4M3;
    /// use fprev::fused::BlockFma;
    /// use fprev::half::f16;
    /// use fprev::ProbeFloat;
    /// let a: Vec<F8E4M3> = (0..32).map(|k| F8E4M3::from_f64_round(k as f64)).collect();
    /// let b = vec![F8E4M3::from_f64_round(1.0); 32];
    /// let d = BlockFma::HOPPER_FP8_F16.mma_k32_f16_dot_add(&a, &b, f16::from_f64_round(0.5));
    /// assert_eq!(d.to_f64(), 496.5); // every integer exact
    /// ```
    pub const HOPPER_FP8_F16: BlockFma = BlockFma {
        nfma: 16,
        frac_out: None,
        ..BlockFma::H100
    };

    /// AMD CDNA3 (MI300) matrix cores, fp16 or bf16 products into f32
    /// (`v_mfma_f32_16x16x16_f16`, `32x32x8`): groups of 8 products aligned among
    /// themselves by their operands' exponent sums to the largest, 24 fraction bits cut
    /// toward zero (no clamp of that exponent); the group's sum and the running value
    /// are then aligned to the larger of their exponents and cut toward minus infinity,
    /// the sum to 31 fraction bits and the running value to 24, added and rounded to
    /// nearest in f32 ([`AccumulatorCut::TwoStage`]; the tree is a chain of 9-way nodes)
    /// (MMA-Sim, arXiv:2511.10909: `mfma` on "CDNA3", `fused_dot_rd_add`, group size
    /// `min(8, k)`, 24 bits; `amd_fused_dot_rd_add` for the 31/24-bit round-down join).
    pub const CDNA3_F16: BlockFma = BlockFma {
        nfma: 8,
        frac: 24,
        frac_out: None,
        accumulator: AccumulatorJoin::Aligned,
        chunk: None,
        alignment: Alignment::OperandExponents,
        min_exp: None,
        align_rounding: Rounding::TowardZero,
        accumulator_cut: AccumulatorCut::TwoStage {
            block_frac: 31,
            acc_frac: 24,
            rounding: Rounding::TowardNegative,
            halves: false,
            acc_reach: None,
        },
    };

    /// AMD CDNA3 (MI300) `xf32` instructions (`v_mfma_f32_16x16x8_xf32`): f32 operands
    /// cut to TF32 ([`Tf32`](crate::float::Tf32)), groups of 4 products, otherwise as
    /// [`CDNA3_F16`](Self::CDNA3_F16) (MMA-Sim, arXiv:2511.10909: `xf32` group size 4,
    /// `truncate_to_tf32`).
    pub const CDNA3_XF32: BlockFma = BlockFma {
        nfma: 4,
        ..BlockFma::CDNA3_F16
    };

    /// AMD CDNA3 (MI300) FP8 instructions (`v_mfma_f32_16x16x32_fp8_fp8` and the
    /// `bf8` ones, on the FNUZ formats [`F8E4M3Fnuz`](crate::float::F8E4M3Fnuz) and
    /// [`F8E5M2Fnuz`](crate::float::F8E5M2Fnuz)): groups of 16 products, fused in two
    /// interleaved halves of 8 (even and odd `k`), each aligned by its operands'
    /// exponent sums and cut toward zero to 24 fraction bits; the two half sums aligned
    /// to the larger of their exponents and cut toward minus infinity to 24 bits; that
    /// sum and the running value joined as in [`CDNA3_F16`](Self::CDNA3_F16) (31 and
    /// 24 bits toward minus infinity, then rounded to nearest in f32), the running
    /// value taken as zero when it lies more than 25 binades below (MMA-Sim,
    /// arXiv:2511.10909: `mfma` fp8 group size 16, `amd_fused_dot_rd_add` with
    /// `is_fp8`). The tree is a chain of 17-way nodes.
    ///
    /// ```
    /// use fprev::float::F8E4M3Fnuz;
    /// use fprev::fused::BlockFma;
    /// use fprev::ProbeFloat;
    /// let a = vec![F8E4M3Fnuz::from_f64_round(1.0); 32];
    /// let d: f32 = BlockFma::CDNA3_FP8.dot(&a, &a);
    /// assert_eq!(d, 32.0);
    /// assert_eq!(BlockFma::CDNA3_FP8.tree(32).to_string(), "((0+1+2+3+4+5+6+7+8+9+10+11+12+13+14+15)+16+17+18+19+20+21+22+23+24+25+26+27+28+29+30+31)");
    /// ```
    pub const CDNA3_FP8: BlockFma = BlockFma {
        nfma: 16,
        accumulator_cut: AccumulatorCut::TwoStage {
            block_frac: 31,
            acc_frac: 24,
            rounding: Rounding::TowardNegative,
            halves: true,
            acc_reach: Some(25),
        },
        ..BlockFma::CDNA3_F16
    };

    /// Every preset with its name, for tables and command lines: the units that write an
    /// f32 result. The f16-result variants ([`F16_RESULT_PRESETS`](Self::F16_RESULT_PRESETS))
    /// are listed apart, as they mean what they say only in a chain of `f16`.
    ///
    /// ```
    /// let names: Vec<&str> = fprev::fused::BlockFma::PRESETS.iter().map(|p| p.0).collect();
    /// assert!(names.contains(&"h100-fp8"));
    /// ```
    pub const PRESETS: &'static [(&'static str, BlockFma)] = &[
        ("v100", BlockFma::V100),
        ("a100", BlockFma::A100),
        ("h100", BlockFma::H100),
        ("h100-fp8", BlockFma::H100_FP8),
        ("h100-fp8-slow", BlockFma::H100_FP8_SLOW),
        ("ada-fp8", BlockFma::ADA_FP8),
        ("b200", BlockFma::B200),
        ("a100-tf32", BlockFma::A100_TF32),
        ("h100-tf32", BlockFma::H100_TF32),
        ("b200-tf32", BlockFma::B200_TF32),
        ("b200-fp8", BlockFma::B200_FP8),
        ("cdna3-f16", BlockFma::CDNA3_F16),
        ("cdna3-xf32", BlockFma::CDNA3_XF32),
        ("cdna3-fp8", BlockFma::CDNA3_FP8),
    ];

    /// The presets of instructions that write an f16 result (`D` and `C` in f16), with
    /// their names: run them as `dot_add::<_, half::f16>` or `sum::<half::f16>`.
    ///
    /// ```
    /// use fprev::fused::BlockFma;
    /// use fprev::half::f16;
    /// let model = BlockFma::preset("h100-f16").unwrap();
    /// let a = vec![f16::from_f32(1.0); 16];
    /// let b = vec![f16::from_f32(0.25); 16];
    /// let d: f16 = model.dot_add(&a, &b, f16::from_f32(0.5));
    /// assert_eq!(d, f16::from_f32(4.5));
    /// ```
    pub const F16_RESULT_PRESETS: &'static [(&'static str, BlockFma)] = &[
        ("v100-f16", BlockFma::V100_F16),
        ("a100-f16", BlockFma::A100_F16),
        ("h100-f16", BlockFma::H100_F16),
        ("b200-f16", BlockFma::B200_F16),
        ("ada-fp8-f16", BlockFma::ADA_FP8_F16),
        ("hopper-fp8-f16", BlockFma::HOPPER_FP8_F16),
    ];

    /// The preset named `name` (see [`PRESETS`](Self::PRESETS) and
    /// [`F16_RESULT_PRESETS`](Self::F16_RESULT_PRESETS)).
    ///
    /// ```
    /// assert_eq!(fprev::fused::BlockFma::preset("v100"), Some(fprev::fused::BlockFma::V100));
    /// ```
    pub fn preset(name: &str) -> Option<BlockFma> {
        by_name(Self::PRESETS, name).or_else(|| by_name(Self::F16_RESULT_PRESETS, name))
    }
}
