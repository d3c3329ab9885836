use super::{Copies, Pattern};
use crate::black_box::FnTarget;
use crate::{Reveal, SumTree};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// PyTorch's CPU float sum as its `SumKernel.cpp` computes it, for inputs of a
/// multiple of 8: 8 lanes of a vector register, 4 accumulators (ILP) per lane, each a
/// cascade of 4 levels of `2^level_power` partial sums; the scalar tail, then the
/// lanes, added into one value. The loops follow the C++ index for index, so that
/// the two can be compared line by line.
#[allow(clippy::needless_range_loop)]
fn torch_like(x: &[f32]) -> f32 {
    const LANES: usize = 8;
    const ILP: usize = 4;
    const LEVELS: usize = 4;
    let vectors = x.len() / LANES;
    let rows = vectors / ILP;
    let ceil_log2 = (usize::BITS - rows.max(1).saturating_sub(1).leading_zeros()) as usize;
    let power = (ceil_log2 / LEVELS).max(4);
    let step = 1usize << power;
    let load = |v: usize| -> [f32; LANES] {
        let mut a = [0f32; LANES];
        a.copy_from_slice(&x[v * LANES..(v + 1) * LANES]);
        a
    };
    let add = |a: &mut [f32; LANES], b: &[f32; LANES]| {
        for (p, q) in a.iter_mut().zip(b) {
            *p += q;
        }
    };
    // one row of ILP vectors into the ILP accumulators of the lowest level
    let absorb = |acc: &mut [[f32; LANES]; ILP], row: usize| {
        for k in 0..ILP {
            add(&mut acc[k], &load(row * ILP + k));
        }
    };
    let mut acc = [[[0f32; LANES]; ILP]; LEVELS];
    let mut i = 0;
    while i + step <= rows {
        for _ in 0..step {
            absorb(&mut acc[0], i);
            i += 1;
        }
        for j in 1..LEVELS {
            for k in 0..ILP {
                let below = acc[j - 1][k];
                add(&mut acc[j][k], &below);
                acc[j - 1][k] = [0.0; LANES];
            }
            if i & ((step - 1) << (j * power)) != 0 {
                break;
            }
        }
    }
    while i < rows {
        absorb(&mut acc[0], i);
        i += 1;
    }
    for j in 1..LEVELS {
        for k in 0..ILP {
            let above = acc[j][k];
            add(&mut acc[0][k], &above);
        }
    }
    let mut partial = acc[0];
    for v in rows * ILP..vectors {
        let v = load(v);
        add(&mut partial[0], &v);
    }
    for k in 1..ILP {
        let p = partial[k];
        add(&mut partial[0], &p);
    }
    let mut total = 0f32;
    for v in &x[vectors * LANES..] {
        total += v;
    }
    for lane in partial[0] {
        total += lane;
    }
    total
}

#[test]
fn parts_within_a_known_prefix_or_sample_cost_no_search() {
    // Blocks within blocks, as XLA's CPU order for 16384 values (16 blocks of 1024 in
    // order, each 32 blocks of 32 in order), but each block of 32 summed in reverse,
    // so that no known order names it. The 1024-block's first 512 inputs are the
    // prefix searched already, which names the block whole: no second search.
    let chain = |c: usize, size: usize| Copies {
        first: (0..size).collect(),
        shift: size,
        top: SumTree::sequential(c),
    };
    let block = chain(32, 32).assemble(1024, &SumTree::reverse(32));
    let truth = chain(16, 1024).assemble(16384, &block);
    let r = Reveal::new(16384)
        .run_target(FnTarget(|x: &[f32]| truth.replay(x)))
        .unwrap();
    assert_eq!(r.tree, truth);
    assert_eq!(r.recognized.as_deref(), Some("structure-guided"));
    // one search of 512 inputs (about 1700 calls), a small sample (about 350) and the
    // proof (about 2000)
    assert!(r.probes < 4500, "{} probes", r.probes);
}

#[test]
fn blocks_larger_than_the_prefix_show_in_a_small_sample() {
    // As JAX 0.10.0's CPU order for 65536 f32 on an earlier machine: 4 blocks of 16384 in order, each 32 blocks of
    // 512 in order, each block 4 lanes (stride 4) combined pairwise. Every 128th input
    // shows the 4 large blocks; each is 32 copies of the prefix, with no new search.
    let n = 65536;
    let lanes = Copies {
        first: (0..512).step_by(4).collect(),
        shift: 1,
        top: SumTree::pairwise(4),
    }
    .assemble(512, &SumTree::sequential(128));
    let chain = |c: usize, size: usize| Copies {
        first: (0..size).collect(),
        shift: size,
        top: SumTree::sequential(c),
    };
    let block = chain(32, 512).assemble(16384, &lanes);
    let truth = chain(4, 16384).assemble(n, &block);
    let r = Reveal::new(n)
        .run_target(FnTarget(|x: &[f32]| truth.replay(x)))
        .unwrap();
    assert_eq!(r.tree, truth);
    assert_eq!(r.recognized.as_deref(), Some("structure-guided"));
    println!("{} probes", r.probes);
    // the prefix's search, the sample's (a quarter of it) and the proof
    assert!(r.probes < 9000, "{} probes", r.probes);
}

#[test]
fn a_torch_like_cascade_is_guessed_and_proved_in_a_fraction_of_a_search() {
    for n in [4096, 16384] {
        let guided = Reveal::new(n).run_target(FnTarget(torch_like)).unwrap();
        let searched = Reveal::new(n)
            .structure_guided(false)
            .run_target(FnTarget(torch_like))
            .unwrap();
        assert_eq!(guided.tree, searched.tree, "n = {n}");
        assert_eq!(guided.recognized.as_deref(), Some("structure-guided"));
        println!(
            "n = {n}: guided {} probes + {} replays, searched {} + {}",
            guided.probes, guided.replays, searched.probes, searched.replays
        );
        assert!(guided.probes * 3 < searched.probes, "n = {n}");
    }
}

/// A random structured order over `m` leaves: lanes, blocks of a fixed size or count,
/// chains, reverse chains and pairwise sums, nested.
fn structured(m: usize, rng: &mut ChaCha8Rng, depth: u32) -> SumTree {
    let named = [SumTree::sequential, SumTree::reverse, SumTree::pairwise];
    let divisors: Vec<usize> = [2, 4, 8, 16, 32]
        .into_iter()
        .filter(|d| m % d == 0 && m / d >= 2)
        .collect();
    if depth == 0 || divisors.is_empty() || rng.random_bool(0.2) {
        return named[rng.random_range(0..3)](m);
    }
    let c = divisors[rng.random_range(0..divisors.len())];
    let top = named[rng.random_range(0..3)];
    let part = m / c;
    let copies = if rng.random_bool(0.5) {
        // lanes: copy i takes every c-th position from i
        Copies {
            first: (0..m).step_by(c).collect(),
            shift: 1,
            top: top(c),
        }
    } else if rng.random_bool(0.5) {
        Copies {
            first: (0..part).collect(),
            shift: part,
            top: top(c),
        }
    } else {
        // blocks of a fixed size: c of them is m / c, size c
        Copies {
            first: (0..c).collect(),
            shift: c,
            top: top(part),
        }
    };
    let inner = structured(copies.first.len(), rng, depth - 1);
    copies.assemble_pattern(m, &Pattern::of(&inner, inner.root()))
}

fn random_binary(n: usize, rng: &mut ChaCha8Rng) -> SumTree {
    let mut pool: Vec<usize> = (0..n).collect();
    let mut nodes: Vec<Vec<usize>> = Vec::new();
    while pool.len() > 1 {
        let a = pool.swap_remove(rng.random_range(0..pool.len()));
        let b = pool.swap_remove(rng.random_range(0..pool.len()));
        nodes.push(vec![a, b]);
        pool.push(n + nodes.len() - 1);
    }
    SumTree::from_nodes(n, nodes).unwrap()
}

#[test]
fn guided_reveals_equal_the_truth_on_random_structured_and_unstructured_orders() {
    let mut guided = 0;
    for case in 0..12u64 {
        let seed = 0x6A1D_0000 + case;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let n = [4096, 6144, 8192][rng.random_range(0..3)];
        let truth = if case % 4 == 3 {
            // no structure: a random binary tree, which the guess must not get wrong
            random_binary(n, &mut rng)
        } else {
            structured(n, &mut rng, 4)
        };
        let target = |x: &[f64]| truth.replay(x);
        let r = Reveal::new(n)
            .seed(seed)
            .run_target(FnTarget(target))
            .unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        assert_eq!(r.tree, truth, "seed {seed:#x}: {}", truth.describe());
        println!(
            "seed {seed:#x} n = {n}: {:?} in {} probes: {}",
            r.recognized,
            r.probes,
            truth.describe()
        );
        guided += usize::from(r.recognized.as_deref() == Some("structure-guided"));
    }
    // most structured orders are guessed (the rest are searched, and still right)
    assert!(guided >= 5, "{guided} of 9 structured orders guessed");
}
