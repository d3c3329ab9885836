//! How `fprev reveal` prints a revealed tree in each `--format`: the tree, or the groups
//! of elements that share one order, and under `--format summary` the arithmetic the
//! reveal measured.

use fprev::ops::ElementOrders;
use fprev::SumTree;

use super::{acc_dtype, RevealFlags, RevealFormat};
use crate::console::{errout, write_to, CommandFailure};
use crate::flags::dtype_name;

/// Prints `tree` (or, when `orders` holds several orders, each group) in `--format`, to
/// `--output` or standard output; `title` heads a picture, `arithmetic` is what a fit
/// measured at fused nodes.
pub(super) fn emit(
    args: &RevealFlags,
    tree: &SumTree,
    orders: Option<&ElementOrders>,
    title: &str,
    arithmetic: Option<&fprev::reveal::FittedFused>,
) -> Result<(), CommandFailure> {
    let groups = orders.filter(|o| !o.is_uniform());
    let acc = dtype_name(acc_dtype(args).unwrap_or(args.dtype));
    // a uniform element reveal's one group carries the arithmetic fitted to its tree
    let arithmetic = arithmetic.or_else(|| orders.and_then(|o| o.groups[0].arithmetic.as_ref()));
    let text = match (args.format, groups) {
        (RevealFormat::Text, None) => format!("{tree}\n"),
        (RevealFormat::Text, Some(o)) => {
            errout(&o.to_string());
            o.groups.iter().map(|g| format!("{}\n", g.tree)).collect()
        }
        (RevealFormat::Summary, None) => format!(
            "{}\n{}",
            tree.describe(),
            summary_lines(tree, arithmetic, acc)
        ),
        (RevealFormat::Summary, Some(o)) => {
            errout(&o.to_string());
            group_summaries(o, acc)
        }
        (RevealFormat::Dot, _) => tree.to_dot(),
        (RevealFormat::Json, None) => format!("{}\n", tree.to_json()),
        (RevealFormat::Json, Some(o)) => {
            let groups: Vec<String> = o
                .groups
                .iter()
                .map(|g| {
                    let el: Vec<String> = g
                        .elements
                        .iter()
                        .map(|e| format!("[{},{}]", e.lane, e.output))
                        .collect();
                    format!(
                        "{{\"elements\":[{}],\"tree\":{}}}",
                        el.join(","),
                        g.tree.to_json()
                    )
                })
                .collect();
            format!("{{\"groups\":[{}]}}\n", groups.join(","))
        }
        (RevealFormat::Svg, _) => fprev::picture::Picture::new().title(title).render(tree),
    };
    write_to(args.output.as_deref(), &text)
}

/// The arithmetic lines of `--format summary` under a tree's description: what the
/// fit measured at fused nodes ([`arithmetic_lines`]), or for a tree of binary nodes
/// the one arithmetic its verified replay stands for (each addition rounded to nearest
/// in the accumulator `acc`). A flat node of an order-independent sum, accepted without
/// a fit, has no measured arithmetic and gets no line.
fn summary_lines(
    tree: &SumTree,
    arithmetic: Option<&fprev::reveal::FittedFused>,
    acc: &str,
) -> String {
    if let Some(a) = arithmetic {
        return arithmetic_lines(a);
    }
    let n = tree.leaf_count();
    let binary = (n..n + tree.inner_count()).all(|v| tree.children(v).len() <= 2);
    if binary && tree.inner_count() > 0 {
        format!("additions: binary, each rounded to nearest in {acc} (no fused nodes)\n")
    } else {
        String::new()
    }
}

/// `--format summary` of elements in several orders: each group's tree in words, then
/// its own arithmetic, numbered as the groups on stderr are.
fn group_summaries(o: &ElementOrders, acc: &str) -> String {
    o.groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            format!(
                "group {i}: {}\n{}",
                g.tree.describe(),
                summary_lines(&g.tree, g.arithmetic.as_ref(), acc)
            )
        })
        .collect()
}

/// The measured arithmetic of `--format summary`, one line per quantity.
fn arithmetic_lines(a: &fprev::reveal::FittedFused) -> String {
    use fprev::fused::{AccumulatorJoin, Alignment};
    let mut out = String::new();
    let rule = match a.alignment {
        Alignment::OperandExponents => "by the operands' exponent sum",
        Alignment::ProductExponent => "by each term's own exponent",
    };
    let told = if a.alignment_decided {
        ""
    } else {
        " (not told apart from the other rule)"
    };
    out += &format!(
        "alignment: {rule}{told}, {} fraction bits kept ({}-{} consistent), {}\n",
        a.frac,
        a.frac,
        a.frac_max,
        a.align_rounding_words()
    );
    if let Some(halves) = a.halves_words() {
        out += &format!("products: {halves}\n");
    }
    out += &match a.frac_out {
        Some(k) => format!(
            "block results: truncated to {k} fraction bits{}\n",
            a.result_alternatives()
        ),
        None => format!(
            "block results: rounded to nearest{}\n",
            a.result_alternatives()
        ),
    };
    if let Some(s) = a.structure {
        out += &format!("products per block: {}\n", s.nfma);
        let late = match a.binary {
            fprev::reveal::BinaryNodes::Rounded => "with round to nearest",
            _ => "in a fused node",
        };
        let aligned = match a.accumulator_cut {
            fprev::fused::AccumulatorCut::TwoStage {
                block_frac,
                acc_frac,
                rounding,
                ..
            } => {
                let [(b0, b1), (c0, c1)] = a
                    .accumulator_cut_ranges
                    .unwrap_or([(block_frac, block_frac), (acc_frac, acc_frac)]);
                let also = if a.accumulator_cut_rounding_decided {
                    ""
                } else {
                    " (or the other way, not told apart)"
                };
                let reach = a
                    .acc_reach_words()
                    .map(|w| format!("; {w}"))
                    .unwrap_or_default();
                format!(
                    "aligned with each block's products after they are summed, the sum and c \
                     cut {}{also} to {block_frac} ({b0}-{b1} consistent) and {acc_frac} \
                     ({c0}-{c1} consistent) fraction bits below the larger exponent, then \
                     rounded to nearest{reach}",
                    rounding.words()
                )
            }
            fprev::fused::AccumulatorCut::WithProducts => {
                "aligned and cut with each block's products".to_string()
            }
        };
        out += &match s.accumulator {
            Some(AccumulatorJoin::Aligned) => format!("running value (c): {aligned}\n"),
            Some(AccumulatorJoin::Late) => {
                format!("running value (c): added after each block, {late}\n")
            }
            None => "running value (c): not seen (one block, nothing runs before it)\n".to_string(),
        };
        out += &match s.promotion {
            Some(p) => {
                format!("promotion interval (products): {p}, chains added with round to nearest\n")
            }
            None => format!(
                "promotion interval (products): none within {} (every {} or more consistent)\n",
                s.n, s.unpromoted_from
            ),
        };
    }
    out += &format!(
        "verified: {} random inputs reproduced bit for bit\n",
        a.inputs
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fprev::fused::BlockFma;
    use fprev::ops::{Element, OrderGroup, ReductionShape};
    use fprev::Reveal;

    /// A V100-like block-FMA chain's fitted arithmetic, as a reveal measures it.
    fn fused_arithmetic() -> fprev::reveal::FittedFused {
        let model = BlockFma::V100;
        let r = Reveal::new(16)
            .run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))
            .unwrap();
        r.arithmetic().unwrap()
    }

    #[test]
    fn summary_lines_state_binary_fused_or_no_arithmetic() {
        assert_eq!(
            summary_lines(&SumTree::sequential(4), None, "f16"),
            "additions: binary, each rounded to nearest in f16 (no fused nodes)\n"
        );
        // an order-independent sum accepted as one flat node: nothing was measured
        assert_eq!(summary_lines(&SumTree::fused(4), None, "f32"), "");
        assert_eq!(summary_lines(&SumTree::sequential(1), None, "f32"), "");
        let a = fused_arithmetic();
        let text = summary_lines(&BlockFma::V100.tree(16), Some(&a), "f32");
        assert!(text.starts_with("alignment: "), "{text}");
        assert!(
            text.contains("products per block: 4 (4-4 consistent)"),
            "{text}"
        );
    }

    #[test]
    fn each_group_of_elements_gets_its_own_arithmetic() {
        let fused = BlockFma::V100.tree(16);
        let o = ElementOrders {
            shape: ReductionShape {
                lanes: 2,
                k: 16,
                outputs: 1,
            },
            groups: vec![
                OrderGroup {
                    tree: fused.clone(),
                    elements: vec![Element { lane: 0, output: 0 }],
                    arithmetic: Some(fused_arithmetic()),
                },
                OrderGroup {
                    tree: SumTree::sequential(16),
                    elements: vec![Element { lane: 1, output: 0 }],
                    arithmetic: None,
                },
            ],
            unresolved: Vec::new(),
            calls: 0,
            probes: 0,
            operands_spread: false,
        };
        let text = group_summaries(&o, "f32");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("group 0: {}", fused.describe()));
        assert!(lines[1].starts_with("alignment: "), "{text}");
        let second = lines
            .iter()
            .position(|l| l.starts_with("group 1: "))
            .unwrap();
        assert_eq!(lines[second], "group 1: 16 in order");
        assert_eq!(
            lines[second + 1..],
            ["additions: binary, each rounded to nearest in f32 (no fused nodes)"]
        );
    }
}
