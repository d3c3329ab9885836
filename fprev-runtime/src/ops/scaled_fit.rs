//! Revealing a block-scaled dot: the tree over its blocks, then the arithmetic fitted
//! on random full blocks.
//!
//! The engine reveals the order of the blocks through their scales ([`ScaledDot`]) and
//! checks it on random inputs of one product per block. Every [`BlockScaledFma`] whose
//! tree is that tree is then tried on random full inputs (random element codes, a
//! quarter of them zero, scales spread over narrow and wide ranges, a random running
//! value `C`): group sizes dividing the block, the three alignment rules, 8 to 45
//! alignment bits, results truncated to 23 bits or rounded to nearest, `C` aligned or
//! added late. What reproduces every answer bit for bit is the measurement, each
//! quantity with its consistent range; when nothing does, the reveal is refused
//! ([`ScaledDotError::Unexplained`]), never answered with a tree.

use std::fmt;

use super::scaled::{ScaledDot, ScaledDotShape, ScaledOperands};
use super::scaled_products::{narrowed_by_products, product_order, ProductOrder};
use crate::black_box::TargetError;
use crate::float::{ElementType, ProbeFloat, ScaleType};
use crate::fused::{AccumulatorJoin, BlockScaledFma, ScaledAlignment};
use crate::reveal::{Reveal, RevealError, RevealReport};
use crate::tree::SumTree;

/// Random full inputs the arithmetic is fitted on.
pub const SCALED_FIT_DRAWS: usize = 96;

/// Why a block-scaled dot was not revealed.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum ScaledDotError {
    /// The shape is not one (`k` no multiple of the block).
    Shape(String),
    /// The engine refused the order of the blocks.
    Reveal(RevealError),
    /// The target failed on a random full input.
    Target(TargetError),
    /// The tree was revealed, but no modelled block-scaled arithmetic reproduces the
    /// answers to random full inputs.
    Unexplained {
        /// The tree the probes found, over the blocks.
        tree: SumTree,
        /// Models tried.
        tried: usize,
        /// Random inputs they were tried on.
        draws: usize,
    },
    /// The products' tree, each block contracted to one leaf, is not the tree the
    /// scales revealed: one of the two readings does not hold.
    Disagree {
        /// The tree over the blocks, through the scales.
        blocks: SumTree,
        /// The tree over the products, every scale 1.
        products: SumTree,
    },
    /// The products' tree (every scale 1) is not the tree of any model that reproduces
    /// the random full inputs.
    ProductsUnexplained {
        /// The tree over the products.
        products: SumTree,
        /// Models consistent with the random full inputs.
        consistent: usize,
    },
    /// The probes could not settle the tree (`refusal`), and the models that reproduce
    /// the random inputs draw several trees.
    Ambiguous {
        /// The engine's refusal.
        refusal: RevealError,
        /// The trees of the consistent models.
        trees: Vec<SumTree>,
    },
}

impl fmt::Display for ScaledDotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScaledDotError::Shape(m) => write!(f, "not a block-scaled dot: {m}"),
            ScaledDotError::Reveal(e) => write!(f, "the order of the blocks: {e}"),
            ScaledDotError::Target(e) => write!(f, "the target failed: {e}"),
            ScaledDotError::Unexplained { tree, tried, draws } => write!(
                f,
                "the probes found the block tree {tree}, but none of {tried} block-scaled \
                 models (group size, alignment rule and bits, result rounding, where C \
                 enters) reproduces the answers to {draws} random inputs bit for bit, so \
                 the tree is not returned"
            ),
            ScaledDotError::Disagree { blocks, products } => write!(
                f,
                "the scales show the block tree {blocks}, but the products' tree (every \
                 scale 1) {products} does not contract to it, block by block: neither tree \
                 is returned"
            ),
            ScaledDotError::ProductsUnexplained {
                products,
                consistent,
            } => write!(
                f,
                "the products' tree (every scale 1) {products} is the tree of none of the \
                 {consistent} block-scaled models that reproduce the random inputs: no tree \
                 is returned"
            ),
            ScaledDotError::Ambiguous { refusal, trees } => {
                let t: Vec<String> = trees.iter().map(|t| t.to_string()).collect();
                write!(
                    f,
                    "the probes could not settle the block tree ({refusal}), and the models \
                     consistent with the random inputs draw {} trees: {}",
                    t.len(),
                    t.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ScaledDotError {}

impl From<RevealError> for ScaledDotError {
    fn from(e: RevealError) -> Self {
        ScaledDotError::Reveal(e)
    }
}

/// The arithmetic of a block-scaled dot, as measured: every model consistent with the
/// answers, and each quantity's consistent values.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaledArithmetic {
    /// The shape revealed.
    pub shape: ScaledDotShape,
    /// Every [`BlockScaledFma`] that reproduced all the answers.
    pub consistent: Vec<BlockScaledFma>,
    /// Whether one node covers every block, so `k` per instruction is only bounded
    /// below (by the `k` revealed).
    pub k_at_least: bool,
    /// Random full inputs the models were checked on.
    pub draws: usize,
}

impl ScaledArithmetic {
    fn values<V: PartialEq + Copy>(&self, f: impl Fn(&BlockScaledFma) -> V) -> Vec<V> {
        let mut out: Vec<V> = Vec::new();
        for m in &self.consistent {
            let v = f(m);
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// Products per instruction consistent (sorted).
    pub fn k(&self) -> Vec<usize> {
        let mut v = self.values(|m| m.k);
        v.sort_unstable();
        v
    }

    /// Group sizes consistent (products summed exactly before alignment), sorted.
    pub fn groups(&self) -> Vec<usize> {
        let mut v = self.values(|m| m.group);
        v.sort_unstable();
        v
    }

    /// Alignment rules consistent.
    pub fn alignments(&self) -> Vec<ScaledAlignment> {
        self.values(|m| m.alignment)
    }

    /// The narrowest and widest alignment widths consistent.
    pub fn frac_range(&self) -> (u32, u32) {
        let v = self.values(|m| m.frac);
        let lo = v.iter().copied().min().unwrap_or(0);
        (lo, v.iter().copied().max().unwrap_or(lo))
    }

    /// Result roundings consistent: `Some(23)` truncated to f32's 23 bits, `None`
    /// rounded to nearest.
    pub fn frac_out(&self) -> Vec<Option<u32>> {
        self.values(|m| m.frac_out)
    }

    /// Where `C` enters, as consistent.
    pub fn accumulators(&self) -> Vec<AccumulatorJoin> {
        self.values(|m| m.accumulator)
    }

    /// Whether `model`'s parameters are among the consistent ones.
    pub fn contains(&self, model: &BlockScaledFma) -> bool {
        self.consistent.contains(model)
    }

    /// Why the products of one block form one multi-way group of the tree.
    pub fn why_blocks(&self) -> String {
        let e = self.shape.element;
        let f = e.format();
        let span = 2 * (f.max_exp - f.min_subnormal_exp()) + 2;
        // a mask must sit 2^(24 + 2) above a unit in f32, more with several units
        if span < 26 {
            format!(
                "the {} products of a block share its two scales and lie within 2^{span} of \
                 one another, short of the 2^26 a mask needs above a unit in f32, so no \
                 input tells their order apart: a block is one leaf",
                self.shape.block
            )
        } else {
            format!(
                "the {} products of a block share its two scales; {} products span 2^{span}, \
                 which separates them: a block is one leaf of the tree over the blocks, and \
                 the order of the products is revealed apart, every scale 1",
                self.shape.block,
                e.name()
            )
        }
    }
}

impl fmt::Display for ScaledArithmetic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shape;
        writeln!(
            f,
            "elements: {} in blocks of {}, scales {}; {}",
            s.element.name(),
            s.block,
            s.scale.name(),
            self.why_blocks()
        )?;
        let ks = self.k();
        let k = match (ks.first(), ks.last()) {
            _ if self.k_at_least => format!("{} or more (one node over every block)", s.k),
            (Some(a), Some(b)) if a == b => format!("{a}"),
            (Some(a), Some(b)) => format!("{a}-{b} consistent"),
            _ => "none".into(),
        };
        writeln!(f, "products per instruction: {k}")?;
        let g = self.groups();
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let told = if g.len() == 1 {
            String::new()
        } else {
            " (not told apart)".into()
        };
        writeln!(
            f,
            "products summed exactly before alignment: groups of {}{told}",
            list(&g)
        )?;
        let rules: Vec<&str> = self.alignments().iter().map(|a| a.words()).collect();
        let (lo, hi) = self.frac_range();
        let best = self.consistent.first().map(|m| m.frac).unwrap_or(lo);
        writeln!(
            f,
            "alignment: by {}, {best} fraction bits kept ({lo}-{hi} consistent), cut toward zero",
            rules.join(" or ")
        )?;
        let outs: Vec<String> = self
            .frac_out()
            .iter()
            .map(|o| match o {
                Some(b) => format!("truncated to {b} fraction bits"),
                None => "rounded to nearest".into(),
            })
            .collect();
        writeln!(f, "instruction results: {}", outs.join(" or "))?;
        let cs: Vec<&str> = self
            .accumulators()
            .iter()
            .map(|a| match a {
                AccumulatorJoin::Aligned => "aligned and cut with each instruction's terms",
                AccumulatorJoin::Late => "added after each instruction, rounded to nearest",
            })
            .collect();
        writeln!(f, "running value (C): {}", cs.join(" or "))?;
        write!(
            f,
            "verified: {} random block-scaled inputs reproduced bit for bit ({} consistent {})",
            self.draws,
            self.consistent.len(),
            if self.consistent.len() == 1 {
                "model"
            } else {
                "models"
            }
        )
    }
}

/// Where a block-scaled dot's tree came from.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub enum ScaledTreeSource {
    /// The probes found it through the scales, and the engine checked it (its report).
    Probes(Box<RevealReport>),
    /// The probes could not settle it (the engine's refusal, kept): every block-scaled
    /// model that reproduces the random full inputs, over every instruction shape, draws
    /// this one tree. This happens where the terms are aligned by their scales'
    /// exponents: a mask's alignment exponent is then its scales' alone, up to `2^16` for
    /// UE4M3, which an adder keeping 34 bits or more cannot swamp a partial sum of units
    /// below.
    Arithmetic(RevealError),
}

/// A revealed block-scaled dot: the tree over its blocks, how it was found, and the
/// block-scaled arithmetic.
#[derive(Clone, Debug)]
pub struct ScaledDotReport {
    /// The tree over the `k / block` blocks.
    pub tree: SumTree,
    /// How the tree was found.
    pub source: ScaledTreeSource,
    /// The arithmetic fitted on random full blocks.
    pub arithmetic: ScaledArithmetic,
    /// Probes answered (0 when the tree came from the arithmetic alone).
    pub probes: u64,
    /// Calls made by the fit on random full inputs.
    pub fit_calls: u64,
    /// The order of the `k` products, inside the blocks and across them (FP8 elements).
    pub products: ProductOrder,
}

impl ScaledDotReport {
    /// The tree, how it was found and the arithmetic, one fact per line: what
    /// `fprev reveal --op scaled-dot --format summary` prints.
    pub fn summary(&self) -> String {
        let how = match &self.source {
            ScaledTreeSource::Probes(_) => {
                "tree: probed through the block scales, checked on random inputs".to_string()
            }
            ScaledTreeSource::Arithmetic(e) => format!(
                "tree: the one tree of every consistent model (the probes alone could not \
                 settle it: {e})"
            ),
        };
        let products = match &self.products {
            ProductOrder::Revealed { tree, probes } => format!(
                "\nproducts (every scale 1): {} over {} products, {probes} probes, checked on \
                 random inputs",
                tree.describe(),
                tree.leaf_count()
            ),
            ProductOrder::NotProbed(_) => String::new(),
            ProductOrder::Refused(why) => {
                format!("\nproducts (every scale 1): not revealed: {why}")
            }
        };
        format!(
            "{} over {} blocks\n{how}\n{}{products}",
            self.tree.describe(),
            self.tree.leaf_count(),
            self.arithmetic
        )
    }
}

/// Reveal a block-scaled dot: the tree over its blocks, then its arithmetic.
///
/// ```
/// use fprev::float::{ElementType, ScaleType};
/// use fprev::fused::BlockScaledFma;
/// use fprev::ops::{reveal_scaled_dot, ScaledDot, ScaledDotShape, ScaledOperands};
/// let model = BlockScaledFma::B200_MXF4;
/// let shape = ScaledDotShape { k: 256, block: 32, element: ElementType::E2M1, scale: ScaleType::Ue8m0 };
/// let dot = ScaledDot::new(shape, |o: &ScaledOperands| {
///     model.dot_add(&o.a, &o.b, &o.sa, &o.sb, 0.0).map_err(|e| fprev::target::TargetError::new(e.to_string()))
/// });
/// let r = reveal_scaled_dot(dot, 0)?;
/// assert_eq!(r.tree, model.tree(8));
/// assert!(r.arithmetic.contains(&model));
/// # Ok::<(), fprev::ops::ScaledDotError>(())
/// ```
pub fn reveal_scaled_dot<F>(
    mut dot: ScaledDot<F>,
    seed: u64,
) -> Result<ScaledDotReport, ScaledDotError>
where
    F: FnMut(&ScaledOperands) -> Result<f32, TargetError>,
{
    let shape = dot.shape();
    shape.validate().map_err(ScaledDotError::Shape)?;
    let probed = Reveal::new(shape.blocks()).seed(seed).run_target(&mut dot);
    let (tree, source, probes) = match probed {
        Ok(report) => (
            Some(report.tree.clone()),
            ScaledTreeSource::Probes(Box::new(report.clone())),
            report.probes,
        ),
        // a target that fails is its error, not a question of trees
        Err(e @ RevealError::Target { .. }) => return Err(ScaledDotError::Reveal(e)),
        Err(e) => (None, ScaledTreeSource::Arithmetic(e), 0),
    };
    let (arithmetic, fit_calls) = match fit(&mut dot, tree.as_ref(), seed) {
        Ok(a) => a,
        Err(ScaledDotError::Unexplained { tried, draws, .. }) if tree.is_none() => {
            let ScaledTreeSource::Arithmetic(e) = source else {
                unreachable!("no tree without a refusal")
            };
            let _ = (tried, draws);
            return Err(ScaledDotError::Reveal(e));
        }
        Err(e) => return Err(e),
    };
    let blocks = shape.blocks();
    let mut trees: Vec<SumTree> = Vec::new();
    for m in &arithmetic.consistent {
        let t = m.tree(blocks);
        if !trees.contains(&t) {
            trees.push(t);
        }
    }
    // without probes, the consistent models must agree on one tree
    let tree = match (tree, trees.as_slice()) {
        (Some(t), _) => t,
        (None, [one]) => one.clone(),
        (None, _) => {
            let ScaledTreeSource::Arithmetic(refusal) = source else {
                unreachable!("no tree without a refusal")
            };
            return Err(ScaledDotError::Ambiguous { refusal, trees });
        }
    };
    let products = product_order(&mut dot, &tree, seed)?;
    let arithmetic = narrowed_by_products(arithmetic, &products)?;
    Ok(ScaledDotReport {
        tree,
        source,
        arithmetic,
        probes,
        fit_calls,
        products,
    })
}

/// A random input with the answer it got.
struct AnsweredDraw {
    o: ScaledOperands,
    c: f32,
    answer: f32,
}

fn fit<F>(
    dot: &mut ScaledDot<F>,
    tree: Option<&SumTree>,
    seed: u64,
) -> Result<(ScaledArithmetic, u64), ScaledDotError>
where
    F: FnMut(&ScaledOperands) -> Result<f32, TargetError>,
{
    let shape = dot.shape();
    let blocks = shape.blocks();
    // the instruction shapes whose tree is the revealed one
    let mut shapes: Vec<(usize, AccumulatorJoin)> = Vec::new();
    let mut k_at_least = false;
    for per in 1..=blocks {
        for acc in [AccumulatorJoin::Aligned, AccumulatorJoin::Late] {
            let m = BlockScaledFma {
                k: per * shape.block,
                accumulator: acc,
                ..base(shape)
            };
            let t = m.tree(blocks);
            if tree.is_none_or(|want| t == *want) {
                shapes.push((m.k, acc));
                k_at_least |= per == blocks && tree.is_some();
            }
        }
    }
    let mut draws = Vec::with_capacity(SCALED_FIT_DRAWS);
    for d in 0..SCALED_FIT_DRAWS {
        let o = random_full(&shape, seed.wrapping_mul(31).wrapping_add(d as u64));
        // C is the running value before the first instruction; the target is called
        // with C = 0 (the --exec contract has no C), so only C = 0 is drawn here
        let c = 0.0f32;
        let answer = dot.call_operands(&o).map_err(ScaledDotError::Target)?;
        draws.push(AnsweredDraw { o, c, answer });
    }
    let mut consistent = Vec::new();
    let mut tried = 0;
    for &(k, accumulator) in &shapes {
        for group in (0..=shape.block.trailing_zeros()).map(|p| 1usize << p) {
            if shape.block % group != 0 {
                continue;
            }
            for alignment in ScaledAlignment::ALL {
                for frac_out in [Some(23), None] {
                    for frac in 8..=45 {
                        let m = BlockScaledFma {
                            group,
                            k,
                            alignment,
                            frac,
                            frac_out,
                            accumulator,
                            ..base(shape)
                        };
                        if m.validate().is_err() {
                            continue;
                        }
                        tried += 1;
                        if draws.iter().all(|d| reproduces(&m, d)) {
                            consistent.push(m);
                        }
                    }
                }
            }
        }
    }
    if consistent.is_empty() {
        return Err(ScaledDotError::Unexplained {
            tree: tree.cloned().unwrap_or_else(|| SumTree::sequential(blocks)),
            tried,
            draws: draws.len(),
        });
    }
    let calls = draws.len() as u64;
    Ok((
        ScaledArithmetic {
            shape,
            consistent,
            k_at_least,
            draws: draws.len(),
        },
        calls,
    ))
}

/// The model family's fixed part for a shape.
fn base(shape: ScaledDotShape) -> BlockScaledFma {
    BlockScaledFma {
        element: shape.element,
        scale: shape.scale,
        block: shape.block,
        group: 1,
        k: shape.block,
        alignment: ScaledAlignment::TermExponent,
        frac: 24,
        frac_out: Some(23),
        accumulator: AccumulatorJoin::Aligned,
    }
}

fn reproduces(m: &BlockScaledFma, d: &AnsweredDraw) -> bool {
    match m.dot_add(&d.o.a, &d.o.b, &d.o.sa, &d.o.sb, d.c) {
        Ok(v) => v == d.answer || v.to_bits() == d.answer.to_bits(),
        Err(_) => false,
    }
}

/// Random full operands: element codes drawn uniformly (a quarter of them zero); the
/// scales drawn from a window of exponents whose width changes from draw to draw (0 to
/// 40 binades for UE8M0, 0 to 15 exponent fields of UE4M3, subnormals included), so
/// that some draws put terms just within, and others just beyond, every alignment
/// width, and a partial sum's cut shows; a third of the draws make each odd block nearly
/// cancel the one before it, and a third lay ladders: a large block, a small one 20 to 35
/// binades below it, and the large one's exact negation, which tell a wide node from a
/// chain of narrower ones.
fn random_full(shape: &ScaledDotShape, seed: u64) -> ScaledOperands {
    use rand_core::{RngCore, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xF17_5CA1);
    let mut o = ScaledOperands::zeros(shape);
    let width = (rng.next_u64() % 41) as i32;
    let fields = (rng.next_u64() % 16) as u8;
    let low = (rng.next_u64() % u64::from(16 - fields)) as u8;
    let element = |rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
        let r = rng.next_u64();
        if r % 4 == 0 {
            return 0.0;
        }
        let v = element_of(shape.element, (r >> 8) as u8);
        if v.is_finite() {
            v
        } else {
            1.0
        }
    };
    for (x, y) in o.a.iter_mut().zip(o.b.iter_mut()) {
        *x = element(&mut rng);
        *y = element(&mut rng);
    }
    let pattern = rng.next_u64() % 3;
    let cancel = pattern == 0;
    let ladder = pattern == 1;
    for j in 0..shape.blocks() {
        if ladder && j % 4 == 2 {
            // block j cancels block j - 2 exactly: what survives is block j - 1, some
            // 20 to 35 binades below block j - 2, kept by a wide node and cut by a chain
            // that ends between them
            let (b, from) = (shape.block, (j - 2) * shape.block);
            for i in 0..b {
                o.a[from + 2 * b + i] = -o.a[from + i];
                o.b[from + 2 * b + i] = o.b[from + i];
            }
            o.sa[j] = o.sa[j - 2];
            o.sb[j] = o.sb[j - 2];
            continue;
        }
        if ladder && j % 4 < 2 {
            let high = j % 4 == 0;
            let r = rng.next_u64();
            let s = match shape.scale {
                // UE4M3: 2^7 against 2^-6 (a product ratio of 2^26), the significands
                // and elements spreading it over about 2^19..2^33
                ScaleType::Ue4m3 => {
                    let code = if high { 0x70 } else { 0x08 } | (r & 7) as u8;
                    shape.scale.value(code).unwrap_or(1.0)
                }
                _ => crate::exact::pow2(if high { 8 } else { -8 - (r % 10) as i32 }),
            };
            o.sa[j] = s;
            o.sb[j] = s;
            continue;
        }
        if cancel && j % 2 == 1 {
            // block j nearly cancels block j - 1 (one element redrawn): a running sum's
            // cut bits then decide the answer, which tells chains from single nodes
            let (b, prev) = (shape.block, (j - 1) * shape.block);
            for i in 0..b {
                o.a[prev + b + i] = -o.a[prev + i];
                o.b[prev + b + i] = o.b[prev + i];
            }
            let i = prev + b + (rng.next_u64() % b as u64) as usize;
            o.a[i] = element(&mut rng);
            o.sa[j] = o.sa[j - 1];
            o.sb[j] = o.sb[j - 1];
            continue;
        }
        for s in [&mut o.sa[j], &mut o.sb[j]] {
            let r = rng.next_u64();
            *s = match shape.scale {
                ScaleType::Ue4m3 => {
                    let field = low + (r % (u64::from(fields) + 1)) as u8;
                    // neither zero (a zero scale would hide its block) nor NaN
                    let code = ((field << 3) | ((r >> 8) & 7) as u8).clamp(0x01, 0x7E);
                    shape.scale.value(code).unwrap_or(1.0)
                }
                _ => crate::exact::pow2((r % (width as u64 + 1)) as i32 - width / 2),
            };
        }
    }
    o
}

/// The value of element code `code` (its low bits).
fn element_of(t: ElementType, code: u8) -> f64 {
    use crate::float::{F4E2M1, F6E2M3, F6E3M2, F8E4M3, F8E5M2};
    match t {
        ElementType::E2M1 => F4E2M1::from_bits(code).to_f64(),
        ElementType::E3M2 => F6E3M2::from_bits(code).to_f64(),
        ElementType::E2M3 => F6E2M3::from_bits(code).to_f64(),
        ElementType::E4M3 => F8E4M3::from_bits(code).to_f64(),
        ElementType::E5M2 => F8E5M2::from_bits(code).to_f64(),
    }
}
