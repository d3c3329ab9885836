//! The hand-written shuffles: Sattolo draws single cycles, Fisher-Yates is uniform, the
//! launch model visits every (block, thread) once, and seeds replay.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};

use fprev::scramble::launch::{block_permutation, thread_permutation};
use fprev::scramble::rng::stream;
use fprev::scramble::{entropy, launch, permutation, with_config, Dim3, ScrambleConfig, Shuffle};

fn cycle_len(p: &[usize]) -> usize {
    let (mut i, mut len) = (0, 0);
    loop {
        i = p[i];
        len += 1;
        if i == 0 {
            return len;
        }
    }
}

#[test]
fn sattolo_draws_single_cycles() {
    for n in 2..40 {
        for inv in 0..20 {
            let p = permutation(Shuffle::Sattolo, n, &mut stream(3, n as u64, inv));
            assert_eq!(cycle_len(&p), n, "n={n}: {p:?}");
        }
    }
}

/// Pearson's chi-square of `counts` against a uniform distribution over `cells` cells.
fn chi_square(counts: &HashMap<Vec<usize>, usize>, cells: usize, samples: usize) -> f64 {
    assert_eq!(counts.len(), cells, "not every order was drawn");
    let expected = samples as f64 / cells as f64;
    counts
        .values()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

#[test]
fn fisher_yates_is_uniform_over_all_orders() {
    // n = 4: 24 orders, 23 degrees of freedom; 0.1% critical value 49.73.
    let samples = 24_000;
    let mut counts = HashMap::new();
    let mut rng = stream(11, 0, 0);
    for _ in 0..samples {
        *counts
            .entry(permutation(Shuffle::FisherYates, 4, &mut rng))
            .or_insert(0) += 1;
    }
    let chi2 = chi_square(&counts, 24, samples);
    assert!(chi2 < 49.73, "chi2 = {chi2}");
}

#[test]
fn sattolo_is_uniform_over_single_cycles_only() {
    // n = 5: (5-1)! = 24 cycles; every draw is one of them, uniformly.
    let samples = 24_000;
    let mut counts = HashMap::new();
    let mut rng = stream(12, 0, 0);
    for _ in 0..samples {
        let p = permutation(Shuffle::Sattolo, 5, &mut rng);
        assert_eq!(cycle_len(&p), 5);
        *counts.entry(p).or_insert(0) += 1;
    }
    let chi2 = chi_square(&counts, 24, samples);
    assert!(chi2 < 49.73, "chi2 = {chi2}");
}

#[test]
fn identity_draws_nothing() {
    assert_eq!(
        permutation(Shuffle::Identity, 5, &mut stream(0, 0, 0)),
        vec![0, 1, 2, 3, 4]
    );
}

fn launch_visits(cfg: &ScrambleConfig) -> (Vec<u32>, Vec<(Dim3, Dim3)>) {
    let grid = Dim3::new(3, 2, 1);
    let block = Dim3::new(4, 2, 1);
    let hits: Vec<AtomicU32> = (0..grid.count() * block.count())
        .map(|_| AtomicU32::new(0))
        .collect();
    let order = std::sync::Mutex::new(Vec::new());
    with_config(cfg, || {
        launch(grid, block, |ctx| {
            let b = grid.linear(ctx.block_idx());
            let t = block.linear(ctx.thread_idx());
            hits[b * block.count() + t].fetch_add(1, Ordering::Relaxed);
            if b == 0 {
                order
                    .lock()
                    .unwrap()
                    .push((ctx.block_idx(), ctx.thread_idx()));
            }
        })
    });
    (
        hits.iter().map(|h| h.load(Ordering::Relaxed)).collect(),
        order.into_inner().unwrap(),
    )
}

#[test]
fn launch_visits_every_thread_once_and_replays_its_thread_order() {
    let on = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .seed(77);
    let (hits, order) = launch_visits(&on);
    assert!(hits.iter().all(|&h| h == 1), "{hits:?}");
    let (_, again) = launch_visits(&on);
    assert_eq!(order, again, "same seed, different thread order in block 0");
    let (_, off) = launch_visits(&ScrambleConfig::off());
    let in_order: Vec<u32> = off
        .iter()
        .map(|(_, t)| Dim3::new(4, 2, 1).linear(*t) as u32)
        .collect();
    assert_eq!(in_order, (0..8).collect::<Vec<_>>());
    // The pure functions a GPU backend would upload give the order the model ran.
    let perm = thread_permutation(Shuffle::FisherYates, 77, 0, 0, Dim3::new(4, 2, 1));
    let ran: Vec<u32> = order
        .iter()
        .map(|(_, t)| Dim3::new(4, 2, 1).linear(*t) as u32)
        .collect();
    assert_eq!(ran, perm);
    assert_eq!(
        block_permutation(Shuffle::FisherYates, 77, 0, Dim3::new(3, 2, 1)).len(),
        6
    );
}

#[test]
fn scrambled_launches_cover_many_more_block_orders() {
    let runs = 20;
    let count = |cfg: ScrambleConfig| {
        let mut line = 0;
        let ((), log) = entropy::record_orders(|| {
            for r in 0..runs {
                line = line!() + 1;
                with_config(&cfg.clone().seed(r), || launch(8u32, 1u32, |_| {}));
            }
        });
        // Recording is process-wide: keep only this launch site.
        let here = format!(":{line}");
        log.distinct()
            .into_iter()
            .filter(|(site, _)| site.ends_with(&here))
            .map(|(_, n)| n)
            .sum::<usize>()
    };
    let with = count(ScrambleConfig::off().shuffle(Some(Shuffle::FisherYates)));
    let without = count(ScrambleConfig::off());
    assert!(
        with >= 18,
        "scrambled: {with} distinct block orders in {runs} launches"
    );
    assert!(
        with >= without,
        "scrambled {with} vs hardware-like {without}"
    );
}
