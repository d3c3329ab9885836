use super::*;
use rand::{Rng, SeedableRng};

#[test]
fn named_shapes() {
    for (t, want) in [
        (SumTree::sequential(1000), "1000 in order"),
        (SumTree::reverse(50), "50 in reverse order"),
        (SumTree::pairwise(1024), "pairwise over 1024"),
        (SumTree::pairwise(1000), "pairwise over 1000"),
        (SumTree::fused(9), "one fused add of 9"),
        (SumTree::sequential(1), "1 value"),
    ] {
        assert_eq!(t.describe(), want);
    }
    assert_eq!(
        SumTree::numpy_pairwise(4096).describe(),
        "pairwise over 32 blocks of 128; each block 8 lanes, stride 8, 16 in order; \
         lanes combined pairwise"
    );
}

#[test]
fn blocked_gemm_names_its_blocks() {
    // matrixmultiply's sgemm at k = 600: blocks of 256 summed in order, added in order
    let t: SumTree = text::blocks(
        &[0, 256, 512, 600],
        |lo, hi| text::chain(lo..hi),
        text::in_order,
    )
    .parse()
    .unwrap();
    assert_eq!(
        t.describe(),
        "3 blocks of 256, 256, 88, combined in order; each block in order"
    );
}

#[test]
fn uneven_halving_names_its_blocks() {
    // NumPy at n = 300: halves rounded to multiples of 8 give blocks of 72 and 84
    assert_eq!(
        SumTree::numpy_pairwise(300).describe(),
        "pairwise over 4 blocks of 72, 72, 72, 84; \
         blocks 1-3 [8 lanes, stride 8, 9 in order; lanes combined pairwise]; \
         block 4 [8 lanes, stride 8, 10 in order; lanes combined pairwise; \
         then 4 more added in order (296..=299)]"
    );
}

#[test]
fn irregular_trees_get_counts() {
    let t: SumTree = "((0+(1+(2+3)))+(((4+5)+6)+7))".parse().unwrap();
    let d = t.describe();
    assert_eq!(
        d,
        "2 blocks of 4, combined in order; block 1 [in reverse order]; block 2 [in order]"
    );
    // a few named pieces joined by a small tree: the tree is spelled out
    let t: SumTree = "(((0+5)+(2+4))+((1+6)+(3+7+8)))".parse().unwrap();
    let d = t.describe();
    assert!(
        d.starts_with("4 parts of 2, 2, 2, 3, combined as ((0+2)+(1+3))"),
        "{d}"
    );
    // random merges, each leaf joined to another part: counts only
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut items: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    while items.len() > 1 {
        let a = items.swap_remove(rng.random_range(0..items.len()));
        let b = items.swap_remove(rng.random_range(0..items.len()));
        let c = if items.len() > 3 && rng.random_bool(0.2) {
            format!("+{}", items.swap_remove(rng.random_range(0..items.len())))
        } else {
            String::new()
        };
        items.push(format!("({a}+{b}{c})"));
    }
    let d = items[0].parse::<SumTree>().unwrap().describe();
    assert!(d.starts_with("irregular: 40 values, "), "seed 7: {d}");
    assert!(d.contains("fan-in up to 3"), "seed 7: {d}");
}

/// Any tree gets a description without panicking: random merges of random arity,
/// and a million-leaf NumPy tree in linear time. Seeded; a failure prints its seed.
#[test]
fn every_tree_is_described() {
    for seed in 0..200u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n = rng.random_range(1..300);
        let mut items: Vec<String> = (0..n).map(|i: usize| i.to_string()).collect();
        while items.len() > 1 {
            let k = rng.random_range(2..=items.len().min(4));
            let picked: Vec<String> = (0..k)
                .map(|_| items.swap_remove(rng.random_range(0..items.len())))
                .collect();
            items.push(format!("({})", picked.join("+")));
        }
        let t: SumTree = items[0]
            .parse()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let d = t.describe();
        assert!(!d.is_empty(), "seed {seed}");
        let svg = crate::picture::svg(&t);
        assert!(svg.ends_with("</svg>\n"), "seed {seed}");
    }
    let t = SumTree::numpy_pairwise(1 << 20);
    assert_eq!(
        t.describe(),
        "pairwise over 8192 blocks of 128; each block 8 lanes, stride 8, 16 in order; \
         lanes combined pairwise"
    );
    let d = SumTree::numpy_pairwise(1_000_000).describe();
    // 10^6 = 8 x 125000 halves evenly three times; below that the halves differ
    assert!(
        d.starts_with("pairwise over 8 blocks of 125000; each block irregular: 125000 values"),
        "{d}"
    );
}

/// Canonical text of trees built from known parts.
mod text {
    pub fn chain(leaves: impl IntoIterator<Item = usize>) -> String {
        in_order(leaves.into_iter().map(|i| i.to_string()).collect())
    }
    pub fn in_order(items: Vec<String>) -> String {
        let mut it = items.into_iter();
        let first = it.next().unwrap_or_default();
        it.fold(first, |acc, x| format!("({acc}+{x})"))
    }
    pub fn reverse(items: Vec<String>) -> String {
        let mut it = items.into_iter().rev();
        let first = it.next().unwrap_or_default();
        it.fold(first, |acc, x| format!("({x}+{acc})"))
    }
    pub fn pairwise(items: &[String]) -> String {
        if items.len() == 1 {
            return items[0].clone();
        }
        let mid = items.len() / 2;
        format!("({}+{})", pairwise(&items[..mid]), pairwise(&items[mid..]))
    }
    pub fn fused(items: Vec<String>) -> String {
        format!("({})", items.join("+"))
    }
    /// Blocks between consecutive `cuts`, each built by `block`, combined by `top`.
    pub fn blocks(
        cuts: &[usize],
        block: impl Fn(usize, usize) -> String,
        top: impl Fn(Vec<String>) -> String,
    ) -> String {
        top(cuts.windows(2).map(|w| block(w[0], w[1])).collect())
    }
}

#[derive(Clone, Copy, Debug)]
enum Top {
    InOrder,
    Reverse,
    Pairwise,
    Fused,
}

#[derive(Clone, Copy, Debug)]
enum Block {
    InOrder,
    Reverse,
    Pairwise,
    Fused,
    /// `k` lanes of stride `k`, each `m` in order, combined pairwise or in order.
    Lanes {
        k: usize,
        m: usize,
        pairwise: bool,
    },
}

fn join(top: Top, items: Vec<String>) -> String {
    match top {
        Top::InOrder => text::in_order(items),
        Top::Reverse => text::reverse(items),
        Top::Pairwise => text::pairwise(&items),
        Top::Fused => text::fused(items),
    }
}

fn build(block: Block, lo: usize, len: usize) -> String {
    let leaves = || (lo..lo + len).map(|i| i.to_string()).collect::<Vec<_>>();
    match block {
        Block::InOrder => text::in_order(leaves()),
        Block::Reverse => text::reverse(leaves()),
        Block::Pairwise => text::pairwise(&leaves()),
        Block::Fused => text::fused(leaves()),
        Block::Lanes { k, m, pairwise } => {
            let lanes: Vec<String> = (0..k)
                .map(|j| text::chain((0..m).map(|i| lo + j + i * k)))
                .collect();
            join(
                if pairwise {
                    Top::Pairwise
                } else {
                    Top::InOrder
                },
                lanes,
            )
        }
    }
}

fn block_words(block: Block, len: usize) -> String {
    match block {
        Block::InOrder => format!("{len} in order"),
        Block::Reverse => format!("{len} in reverse order"),
        Block::Pairwise => format!("pairwise over {len}"),
        Block::Fused => format!("one fused add of {len}"),
        Block::Lanes { k, m, pairwise } => format!(
            "{k} lanes, stride {k}, {m} in order; lanes combined {}",
            if pairwise { "pairwise" } else { "in order" }
        ),
    }
}

/// Trees made of `c` shifted copies of a named block, combined in a named way: the
/// description names both and the block size. Seeded; a failure prints its seed.
#[test]
fn generated_block_trees_are_described() {
    for seed in 0..400u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let top = [Top::InOrder, Top::Reverse, Top::Pairwise, Top::Fused][rng.random_range(0..4)];
        let c = rng.random_range(if matches!(top, Top::Pairwise) { 4 } else { 3 }..=9);
        let (block, len) = match rng.random_range(0..5) {
            0 => (Block::InOrder, rng.random_range(4..40)),
            1 => (Block::Reverse, rng.random_range(4..40)),
            // pairwise blocks under a pairwise top are one pairwise tree
            2 if !matches!(top, Top::Pairwise) => (Block::Pairwise, rng.random_range(4..40)),
            3 => (Block::Fused, rng.random_range(3..12)),
            _ => {
                let (k, m) = (rng.random_range(2..9), rng.random_range(3..12));
                let pairwise = k > 3 && rng.random_bool(0.5);
                (Block::Lanes { k, m, pairwise }, k * m)
            }
        };
        let cuts: Vec<usize> = (0..=c).map(|i| i * len).collect();
        let tree: SumTree = text::blocks(&cuts, |lo, _| build(block, lo, len), |b| join(top, b))
            .parse()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let of = format!("{c} blocks of {len}");
        let head = match top {
            Top::Pairwise => format!("pairwise over {of}"),
            Top::Fused => format!("one fused add over {of}"),
            Top::InOrder => format!("{of}, combined in order"),
            Top::Reverse => format!("{of}, combined in reverse order"),
        };
        let want = format!("{head}; each block {}", block_words(block, len));
        assert_eq!(
            tree.describe(),
            want,
            "seed {seed}: {top:?} over {c} x {block:?} of {len}; replay with this seed \
             in generated_block_trees_are_described"
        );
    }
}
