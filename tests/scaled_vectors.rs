//! `tests/data/scaled_vectors.txt` (written by `scripts/scaled_vectors.py`): block-scaled
//! dot products answered by the independent responder
//! `fprev-cli/tests/python/scaled_dot.py`, checked bit for bit against
//! `fprev::fused::BlockScaledFma` with the same parameters.

use fprev::float::{ElementType, ScaleType};
use fprev::fused::{AccumulatorJoin, BlockScaledFma, ScaledAlignment};

/// The model a case's responder flags describe.
fn model(flags: &str) -> BlockScaledFma {
    let words: Vec<&str> = flags.split_whitespace().collect();
    let get = |name: &str| -> &str {
        let i = words.iter().position(|w| *w == name).expect(name);
        words[i + 1]
    };
    let num = |name: &str| -> usize { get(name).parse().expect(name) };
    BlockScaledFma {
        element: ElementType::parse(get("--fmt")).expect("an element type"),
        scale: ScaleType::parse(get("--scale")).expect("a scale type"),
        block: num("--block"),
        group: num("--group"),
        k: num("--k"),
        alignment: match get("--align") {
            "term" => ScaledAlignment::TermExponent,
            "scales" => ScaledAlignment::ScaleExponents,
            _ => ScaledAlignment::OperandExponents,
        },
        frac: num("--frac") as u32,
        frac_out: (get("--out") == "trunc").then_some(23),
        accumulator: if get("--c") == "aligned" {
            AccumulatorJoin::Aligned
        } else {
            AccumulatorJoin::Late
        },
    }
}

#[test]
fn block_scaled_models_match_the_independent_responder_bit_for_bit() {
    let text = include_str!("data/scaled_vectors.txt");
    let mut current: Option<BlockScaledFma> = None;
    let (mut rows, mut cases) = (0, 0);
    for (n, line) in text.lines().enumerate() {
        if let Some(flags) = line.strip_prefix("# ") {
            let m = model(flags);
            m.validate()
                .unwrap_or_else(|e| panic!("line {}: {e}", n + 1));
            current = Some(m);
            cases += 1;
            continue;
        }
        let m = current.expect("a case line first");
        let (bits, values) = line.split_once(" | ").expect("ANSWER | LINE");
        let want = u32::from_str_radix(bits, 16).expect("hex bits");
        let v: Vec<f64> = values
            .split(' ')
            .map(|t| t.parse().expect("a number"))
            .collect();
        let k = v.len() * m.block / (2 * m.block + 2);
        let nb = k / m.block;
        let (a, rest) = v.split_at(k);
        let (b, rest) = rest.split_at(k);
        let (sa, sb) = rest.split_at(nb);
        for x in a.iter().chain(b) {
            assert_eq!(m.element.value(*x), Some(*x), "line {}", n + 1);
        }
        for s in sa.iter().chain(sb) {
            assert!(m.scale.code(*s).is_some(), "line {}: scale {s}", n + 1);
        }
        let got = m.dot_add(a, b, sa, sb, 0.0).expect("a valid model");
        assert_eq!(
            got.to_bits(),
            want,
            "line {} ({}): fprev {got}, responder {}",
            n + 1,
            m.describe(),
            f32::from_bits(want)
        );
        rows += 1;
    }
    assert_eq!((cases, rows), (7, 112));
}
