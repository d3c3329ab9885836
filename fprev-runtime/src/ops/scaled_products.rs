//! Below the blocks: the order of an FP8 block-scaled dot's products, revealed with every
//! scale 1, checked against the tree over the blocks, and the instruction shapes it
//! tells apart.

use super::scaled::{ScaledDot, ScaledOperands, UnitScaled};
use super::scaled_fit::{ScaledArithmetic, ScaledDotError};
use crate::black_box::TargetError;
use crate::float::{ElementType, F8E4M3, F8E5M2};
use crate::fused::BlockScaledFma;
use crate::reveal::{Reveal, RevealError};
use crate::tree::SumTree;

/// The order of a block-scaled dot's products, below the blocks.
///
/// FP8 products span `2^36` and more, so masks and units spread over both elements of a
/// product separate them: with every scale 1 the dot is a plain FP8 dot, revealed as
/// [`Products`](crate::target::Products) reveals one, and its tree, each block's products
/// contracted to one leaf, must be the tree the scales revealed (else the reveal is
/// refused: [`ScaledDotError::Disagree`]). FP4 and FP6 products lie within `2^18` of
/// one another, which no mask in f32 separates.
///
/// ```
/// use fprev::float::{ElementType, ScaleType};
/// use fprev::fused::BlockScaledFma;
/// use fprev::ops::{reveal_scaled_dot, ProductOrder, ScaledDot, ScaledDotShape, ScaledOperands};
/// let model = BlockScaledFma::B200_MXF8;
/// let shape = ScaledDotShape { k: 64, block: 32, element: ElementType::E4M3, scale: ScaleType::Ue8m0 };
/// let dot = ScaledDot::new(shape, |o: &ScaledOperands| {
///     model.dot_add(&o.a, &o.b, &o.sa, &o.sb, 0.0).map_err(|e| fprev::target::TargetError::new(e.to_string()))
/// });
/// let r = reveal_scaled_dot(dot, 0)?;
/// let ProductOrder::Revealed { tree, .. } = &r.products else { panic!("{:?}", r.products) };
/// assert_eq!(tree.leaf_count(), 64);
/// assert_eq!(*tree, model.product_tree(64));
/// # Ok::<(), fprev::ops::ScaledDotError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum ProductOrder {
    /// The tree over the `k` products, checked on random inputs by the engine.
    Revealed {
        /// The tree; leaf `i` is product `a[i] b[i]`.
        tree: SumTree,
        /// Probes answered.
        probes: u64,
    },
    /// Not probed: the elements' products cannot be told apart (FP4, FP6), and why.
    NotProbed(String),
    /// Probed, but the engine refused the order (its refusal, in words): the tree over
    /// the blocks and the arithmetic stand.
    Refused(String),
}

/// The order of the products, every scale 1 (FP8 elements only), checked against the
/// tree over the blocks.
pub(super) fn product_order<F>(
    dot: &mut ScaledDot<F>,
    blocks: &SumTree,
    seed: u64,
) -> Result<ProductOrder, ScaledDotError>
where
    F: FnMut(&ScaledOperands) -> Result<f32, TargetError>,
{
    let shape = dot.shape();
    let reveal = Reveal::new(shape.k).seed(seed);
    let probed = match shape.element {
        ElementType::E4M3 => reveal.run_target(UnitScaled::<F8E4M3, _>::new(dot)),
        ElementType::E5M2 => reveal.run_target(UnitScaled::<F8E5M2, _>::new(dot)),
        e => {
            return Ok(ProductOrder::NotProbed(format!(
                "{} products lie too close to one another for a mask to separate them",
                e.name()
            )))
        }
    };
    let report = match probed {
        Ok(r) => r,
        Err(e @ RevealError::Target { .. }) => return Err(ScaledDotError::Reveal(e)),
        Err(e) => return Ok(ProductOrder::Refused(e.to_string())),
    };
    match contract_blocks(&report.tree, shape.block) {
        Some(c) if c == *blocks => Ok(ProductOrder::Revealed {
            tree: report.tree,
            probes: report.probes,
        }),
        _ => Err(ScaledDotError::Disagree {
            blocks: blocks.clone(),
            products: report.tree,
        }),
    }
}

/// The consistent models whose tree over the products is the revealed one (with or
/// without their groups as nodes): where the tree over the blocks cannot tell
/// instruction shapes apart (two blocks added in order by one node over both, or by two
/// instructions), the products can.
pub(super) fn narrowed_by_products(
    mut arithmetic: ScaledArithmetic,
    products: &ProductOrder,
) -> Result<ScaledArithmetic, ScaledDotError> {
    let ProductOrder::Revealed { tree, .. } = products else {
        return Ok(arithmetic);
    };
    let k = arithmetic.shape.k;
    let kept: Vec<BlockScaledFma> = arithmetic
        .consistent
        .iter()
        .filter(|m| {
            // a group summed exactly inside an adder that keeps every bit of it shows
            // no node of its own: the instructions' shape is what must match
            let flat = BlockScaledFma { group: 1, ..**m };
            m.product_tree(k) == *tree || flat.product_tree(k) == *tree
        })
        .copied()
        .collect();
    if kept.is_empty() {
        return Err(ScaledDotError::ProductsUnexplained {
            products: tree.clone(),
            consistent: arithmetic.consistent.len(),
        });
    }
    // "k or more" stands only while a model spanning every block is kept
    arithmetic.k_at_least &= kept.iter().any(|m| m.k >= k);
    arithmetic.consistent = kept;
    Ok(arithmetic)
}

/// `tree` over the products with each block of `block` consecutive products as one
/// leaf: a subtree holding exactly one block's products becomes its leaf, and a node's
/// leaf children that make a whole block become one child. `None` when a block's
/// products are split between nodes that hold other products too.
fn contract_blocks(tree: &SumTree, block: usize) -> Option<SumTree> {
    fn text(tree: &SumTree, node: usize, block: usize) -> Option<String> {
        let leaves = tree.leaves_under(node);
        let first = leaves.iter().min().copied().unwrap_or(0) / block.max(1);
        if leaves.len() == block && leaves.iter().all(|l| l / block.max(1) == first) {
            return Some(first.to_string());
        }
        if tree.is_leaf(node) {
            return None;
        }
        let mut parts = Vec::new();
        let mut loose: std::collections::BTreeMap<usize, usize> = Default::default();
        for &c in tree.children(node) {
            let c = c as usize;
            if tree.is_leaf(c) {
                *loose.entry(c / block.max(1)).or_default() += 1;
            } else {
                parts.push(text(tree, c, block)?);
            }
        }
        for (b, count) in loose {
            if count != block {
                return None;
            }
            parts.push(b.to_string());
        }
        Some(if parts.len() == 1 {
            parts.remove(0)
        } else {
            format!("({})", parts.join("+"))
        })
    }
    if tree.leaf_count() == 0 {
        return None;
    }
    text(tree, tree.root(), block)?.parse().ok()
}
