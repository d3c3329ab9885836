//! Block-scaled dots (MXFP8, MXFP6, MXFP4, NVFP4) revealed through their scales: the
//! presets at one instruction's k and chained, random models of the family (group size,
//! alignment rule and bits, result rounding, where C enters, instruction k), and targets
//! no model explains. Every case ends in the model's block tree with its parameters
//! among the consistent ones, or a typed error; never another tree. Seeds print on
//! failure; `FPREV_PROPTEST_CASES` raises the case count.

mod common;

use common::{cases, rng};
use fprev::float::{ElementType, ScaleType};
use fprev::fused::{AccumulatorJoin, BlockScaledFma, ScaledAlignment};
use fprev::ops::{
    reveal_scaled_dot, ProductOrder, ScaledDot, ScaledDotError, ScaledDotShape, ScaledOperands,
};
use fprev::target::TargetError;
use rand::Rng;

fn shape_of(m: &BlockScaledFma, k: usize) -> ScaledDotShape {
    ScaledDotShape {
        k,
        block: m.block,
        element: m.element,
        scale: m.scale,
    }
}

fn target(
    m: BlockScaledFma,
    k: usize,
) -> ScaledDot<impl FnMut(&ScaledOperands) -> Result<f32, TargetError>> {
    ScaledDot::new(shape_of(&m, k), move |o: &ScaledOperands| {
        m.dot_add(&o.a, &o.b, &o.sa, &o.sb, 0.0)
            .map_err(|e| TargetError::new(e.to_string()))
    })
}

/// The model's tree and its parameters among the consistent ones.
fn check(m: BlockScaledFma, k: usize, seed: u64) -> Result<(), ScaledDotError> {
    let r = reveal_scaled_dot(target(m, k), seed)?;
    let blocks = k / m.block;
    assert_eq!(
        r.tree,
        m.tree(blocks),
        "{} k = {k} seed {seed}",
        m.describe()
    );
    let a = &r.arithmetic;
    // a k larger than the dot product is the same tree: compare at the k revealed
    let want = BlockScaledFma { k: m.k.min(k), ..m };
    assert!(
        a.contains(&want),
        "{} k = {k} seed {seed}: {a}",
        m.describe()
    );
    let (lo, hi) = a.frac_range();
    assert!(lo <= m.frac && m.frac <= hi);
    // below the blocks: FP8 products in the model's order, or the engine's refusal
    match (&r.products, m.element) {
        (ProductOrder::Revealed { tree, .. }, ElementType::E4M3 | ElementType::E5M2) => {
            // groups summed exactly show as nodes, or not at all where the adder keeps
            // every bit of them; the instructions' shape is the model's either way
            let flat = BlockScaledFma { group: 1, ..m };
            assert!(
                *tree == m.product_tree(k) || *tree == flat.product_tree(k),
                "{} k = {k} seed {seed}: the products' tree {tree}",
                m.describe()
            )
        }
        (ProductOrder::Refused(why), ElementType::E4M3 | ElementType::E5M2) => {
            eprintln!(
                "seed {seed}: {}: products not revealed: {why}",
                m.describe()
            )
        }
        (ProductOrder::NotProbed(_), e) => assert!(
            !matches!(e, ElementType::E4M3 | ElementType::E5M2),
            "{} k = {k}: FP8 products not probed",
            m.describe()
        ),
        (p, e) => panic!("{} k = {k}: {e:?} products: {p:?}", m.describe()),
    }
    Ok(())
}

#[test]
fn presets_reveal_their_block_trees_and_arithmetic_at_one_instruction_and_chained() {
    for (name, m) in BlockScaledFma::PRESETS {
        for chained in [1, 2, 4] {
            let k = m.k * chained;
            check(*m, k, 7).unwrap_or_else(|e| panic!("{name} k = {k}: {e}"));
        }
    }
}

#[test]
fn mxfp8_e5m2_and_mxfp6_instructions_reveal() {
    let e5m2 = BlockScaledFma {
        element: ElementType::E5M2,
        ..BlockScaledFma::B200_MXF8
    };
    check(e5m2, 96, 3).unwrap();
    let e3m2 = BlockScaledFma {
        element: ElementType::E3M2,
        group: 8,
        alignment: ScaledAlignment::ScaleExponents,
        frac: 30,
        accumulator: AccumulatorJoin::Aligned,
        ..BlockScaledFma::B200_MXF8
    };
    check(e3m2, 128, 5).unwrap();
}

/// A random model of the family.
fn random_model(r: &mut rand_chacha::ChaCha8Rng) -> BlockScaledFma {
    let (element, scale, block) = match r.random_range(0..5) {
        0 => (ElementType::E2M1, ScaleType::Ue4m3, 16),
        1 => (ElementType::E2M1, ScaleType::Ue8m0, 32),
        2 => (ElementType::E2M3, ScaleType::Ue8m0, 32),
        3 => (ElementType::E4M3, ScaleType::Ue8m0, 32),
        _ => (ElementType::E5M2, ScaleType::Ue8m0, 32),
    };
    let fp8 = matches!(element, ElementType::E4M3 | ElementType::E5M2);
    let group = if fp8 && element == ElementType::E5M2 {
        1
    } else {
        [1, 2, 4, 8, 16, 32][r.random_range(0..6)].min(block)
    };
    let alignment = if group == 1 && r.random_bool(0.3) {
        ScaledAlignment::OperandExponents
    } else if r.random_bool(0.5) {
        ScaledAlignment::ScaleExponents
    } else {
        ScaledAlignment::TermExponent
    };
    BlockScaledFma {
        element,
        scale,
        block,
        group,
        k: block * [1, 2, 4][r.random_range(0..3)],
        alignment,
        frac: r.random_range(14..=34),
        frac_out: if r.random_bool(0.5) { Some(23) } else { None },
        accumulator: if r.random_bool(0.5) {
            AccumulatorJoin::Aligned
        } else {
            AccumulatorJoin::Late
        },
    }
}

#[test]
fn random_block_scaled_models_reveal_their_parameters_or_refuse() {
    let n = cases(24);
    let mut ok = 0;
    for case in 0..n {
        let seed = 0x5CA1_0000 + u64::from(case);
        let mut r = rng(seed);
        let m = random_model(&mut r);
        if m.validate().is_err() {
            continue;
        }
        let k = m.k * r.random_range(1..=3);
        match check(m, k, seed) {
            Ok(()) => ok += 1,
            Err(
                ScaledDotError::Reveal(_)
                | ScaledDotError::Unexplained { .. }
                | ScaledDotError::Ambiguous { .. },
            ) => {
                eprintln!("seed {seed}: {} refused (typed)", m.describe())
            }
            Err(e) => panic!("seed {seed}: {}: {e}", m.describe()),
        }
    }
    assert!(ok * 2 >= n, "only {ok} of {n} random models revealed");
}

#[test]
fn a_dot_no_block_scaled_model_explains_is_refused() {
    // f32 additions one product at a time, each product rounded to f32 first: the
    // blocks' order shows, but no fused model reproduces the answers
    let shape = ScaledDotShape {
        k: 64,
        block: 16,
        element: ElementType::E2M1,
        scale: ScaleType::Ue4m3,
    };
    let t = ScaledDot::new(shape, |o: &ScaledOperands| {
        let mut acc = 0.0f32;
        for i in 0..o.a.len() {
            let s = o.sa[i / 16] * o.sb[i / 16];
            acc += (o.a[i] * o.b[i] * s) as f32 * f32::from_bits(0x3F80_0001);
        }
        Ok(acc)
    });
    match reveal_scaled_dot(t, 1) {
        Err(
            ScaledDotError::Unexplained { .. }
            | ScaledDotError::Reveal(_)
            | ScaledDotError::Ambiguous { .. },
        ) => {}
        other => panic!("expected a refusal, got {:?}", other.map(|r| r.tree)),
    }
}

#[test]
fn mxfp8_products_are_revealed_inside_the_blocks() {
    // the B200 MXFP8 preset at one and two instructions: 32-way fused nodes of products,
    // each block's node the block's leaf of the tree over the blocks
    for k in [32, 64, 128] {
        let m = BlockScaledFma::B200_MXF8;
        let r = reveal_scaled_dot(target(m, k), 11).unwrap_or_else(|e| panic!("k = {k}: {e}"));
        let ProductOrder::Revealed { tree, probes } = &r.products else {
            panic!("k = {k}: {:?}", r.products)
        };
        assert_eq!(*tree, m.product_tree(k), "k = {k}");
        assert!(*probes > 0);
        let s = r.summary();
        assert!(s.contains("products (every scale 1): "), "{s}");
        assert!(s.contains(&format!("over {k} products")), "{s}");
    }
    // FP4 products are not probed, and the summary says nothing of them
    let r = reveal_scaled_dot(target(BlockScaledFma::B200_MXF4, 64), 1).unwrap();
    assert!(matches!(r.products, ProductOrder::NotProbed(_)));
    assert!(!r.summary().contains("products (every scale 1)"));
}

#[test]
fn fp8_products_summed_exactly_in_groups_are_revealed_or_refused() {
    // groups of 2, 4 and 8 products summed exactly before alignment: a group's products
    // cancel a mask inside it exactly, so the groups show as nodes, or the engine refuses
    for (group, seed) in [(2, 21), (4, 22), (8, 23)] {
        let m = BlockScaledFma {
            group,
            alignment: ScaledAlignment::TermExponent,
            ..BlockScaledFma::B200_MXF8
        };
        check(m, 64, seed).unwrap_or_else(|e| panic!("group {group} seed {seed}: {e}"));
    }
}

#[test]
fn products_whose_tree_does_not_contract_to_the_blocks_are_refused() {
    // a target that answers inputs with every scale 1 and no zero element (the products'
    // probes and checks) with one unit (two blocks per instruction) and all others (the
    // blocks' probes and the fit's draws, a quarter of whose elements are zero) with
    // another (one block per instruction): each reading is consistent alone, together
    // they cannot both hold
    let wide = BlockScaledFma {
        k: 64,
        ..BlockScaledFma::B200_MXF8
    };
    let narrow = BlockScaledFma::B200_MXF8;
    let shape = shape_of(&narrow, 128);
    let dot = ScaledDot::new(shape, move |o: &ScaledOperands| {
        let unit = o.sa.iter().chain(&o.sb).all(|&s| s == 1.0)
            && o.a.iter().chain(&o.b).all(|&x| x != 0.0);
        let m = if unit { wide } else { narrow };
        m.dot_add(&o.a, &o.b, &o.sa, &o.sb, 0.0)
            .map_err(|e| TargetError::new(e.to_string()))
    });
    match reveal_scaled_dot(dot, 5) {
        Err(ScaledDotError::Disagree { blocks, products }) => {
            assert_eq!(blocks, narrow.tree(4));
            assert_eq!(products, wide.product_tree(128));
        }
        other => panic!("{:?}", other.map(|r| r.tree)),
    }
}
