use super::super::super::call_site::SiteKind;
use super::super::super::config::{ScrambleConfig, Vary};
use super::super::super::rng::{below, stream, ScrambleRng};
use super::super::super::session::with_config;
use super::super::super::{context, entropy, Shuffle};
use super::super::{combine, CombineShape, PER_SITE};
use super::engine::FloatKind;
use super::*;
use crate::float::ProbeFloat;
use half::{bf16, f16};
use rand_core::RngCore;

#[test]
fn kinds_by_type() {
    assert_eq!(kind_of::<f32>(), Some(FloatKind::F32));
    assert_eq!(kind_of::<bf16>(), Some(FloatKind::BF16));
    assert_eq!(kind_of::<i32>(), None);
    assert_eq!(kind_of::<&f32>(), None);
}

/// A site of its own for each test, so that no other test's draws are filed in it.
fn site(label: &'static str) -> &'static CallSite {
    Box::leak(Box::new(CallSite::with_kind(
        label,
        file!(),
        line!(),
        1,
        None,
        SiteKind::Reduction,
    )))
}

/// What a reduction at `site` gave before shapes were filed per site: the shape
/// drawn from the site's stream, the terms combined on the rest of that stream.
fn per_site_reference<F: ProbeFloat>(site: &CallSite, cfg: &ScrambleConfig, terms: &[F]) -> F {
    let mut rng = stream(cfg.seed, site.id() ^ PER_SITE, 0);
    let shuffle = site.shuffle.or(cfg.shuffle).unwrap_or(Shuffle::Identity);
    let shape = CombineShape::draw(cfg.shapes, shuffle, &mut rng);
    combine(shape, terms, &mut rng)
}

fn reference_shape(site: &CallSite, cfg: &ScrambleConfig) -> CombineShape {
    let shuffle = site.shuffle.or(cfg.shuffle).unwrap_or(Shuffle::Identity);
    CombineShape::draw(
        cfg.shapes,
        shuffle,
        &mut stream(cfg.seed, site.id() ^ PER_SITE, 0),
    )
}

fn reduce<F: ProbeFloat>(site: &'static CallSite, terms: &[F]) -> Option<F> {
    let mut r = RunningReduction::<F>::begin(site);
    let mut plain = None;
    for &t in terms {
        push_or_add(&mut r, &mut plain, t);
    }
    finish_or_plain(r, plain)
}

/// A term as generated code takes it: to the reduction when on, else added in loop
/// order (the sequential shape runs as written).
fn push_or_add<F: ProbeFloat>(r: &mut RunningReduction<F>, plain: &mut Option<F>, t: F) {
    if r.on() {
        r.push(t);
    } else {
        *plain = Some(plain.map_or(t, |a| a.add(t)));
    }
}

fn finish_or_plain<F: ProbeFloat>(r: RunningReduction<F>, plain: Option<F>) -> Option<F> {
    if r.on() {
        assert!(
            plain.is_none(),
            "a reduction is on or off for its whole loop"
        );
        r.finish()
    } else {
        plain
    }
}

fn terms<F: ProbeFloat>(rng: &mut ScrambleRng, n: usize) -> Vec<F> {
    (0..n)
        .map(|_| {
            let m = below(rng, 1 << 20) as f64 / (1 << 19) as f64 - 1.0;
            F::from_f64_round(m * 2f64.powi(below(rng, 21) as i32 - 10))
        })
        .collect()
}

/// Runs one case in one float type: the streaming reduction against the reference,
/// with a second reduction at another site running inside it from `nest_at` terms on
/// (states in use at once must not be mixed up).
fn check_case<F: ProbeFloat>(
    case: u64,
    sites: [&'static CallSite; 2],
    cfg: &ScrambleConfig,
    n: usize,
    nest_at: usize,
) {
    let mut rng = stream(case, u64::from(F::FORMAT.precision), 7);
    let (outer, inner) = (terms::<F>(&mut rng, n), terms::<F>(&mut rng, n / 3));
    let name = F::FORMAT.name;
    let shape = reference_shape(sites[0], cfg);
    let want_outer = (n > 0).then(|| per_site_reference(sites[0], cfg, &outer));
    let want_inner = (!inner.is_empty()).then(|| per_site_reference(sites[1], cfg, &inner));
    // Twice: the second run finds what the first one kept.
    for run in 0..2 {
        let (got_outer, got_inner) = with_config(cfg, || {
            let mut r = RunningReduction::<F>::begin(sites[0]);
            assert_eq!(r.on(), shape != CombineShape::Sequential, "{shape}");
            let (mut plain, mut got_inner) = (None, None);
            for (i, &t) in outer.iter().enumerate() {
                if i == nest_at {
                    got_inner = Some(reduce(sites[1], &inner));
                }
                push_or_add(&mut r, &mut plain, t);
            }
            (finish_or_plain(r, plain), got_inner)
        });
        assert_eq!(
            got_outer.map(F::to_bits_u64),
            want_outer.map(F::to_bits_u64),
            "case {case}, run {run}: {name}, {n} terms, {shape} (cfg {cfg:?})"
        );
        if let Some(got) = got_inner {
            assert_eq!(
                got.map(F::to_bits_u64),
                want_inner.map(F::to_bits_u64),
                "case {case}, run {run}: nested {name}, {} terms (cfg {cfg:?})",
                inner.len()
            );
        }
    }
}

#[test]
fn streaming_gives_the_bits_of_the_reference_for_every_shape_and_type() {
    // Each case is replayed alone by its number, which the failure message prints.
    const SPECIAL: [usize; 13] = [
        0, 1, 2, 15, 16, 17, 1023, 1024, 1025, 2047, 2048, 2049, 2999,
    ];
    let sites = [site("running::property#0"), site("running::property#1")];
    let modes = [
        ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true),
        ScrambleConfig::off().shuffle(Some(Shuffle::FisherYates)),
        ScrambleConfig::off().shuffle(Some(Shuffle::Sattolo)),
        ScrambleConfig::off().shuffle(Some(Shuffle::Identity)),
    ];
    let mut kinds = std::collections::HashSet::new();
    for case in 0..240u64 {
        let mut rng = stream(0x7072_6f70, case, 0);
        let mut cfg = modes[case as usize % modes.len()]
            .clone()
            .seed(rng.next_u64());
        if case % 16 == 7 {
            cfg = cfg.seed(case / 16); // small seeds too
        }
        let n = if below(&mut rng, 3) == 0 {
            SPECIAL[below(&mut rng, SPECIAL.len())]
        } else {
            below(&mut rng, 3000)
        };
        let nest_at = below(&mut rng, n + 2);
        kinds.insert(std::mem::discriminant(&reference_shape(sites[0], &cfg)));
        check_case::<f64>(case, sites, &cfg, n, nest_at);
        check_case::<f32>(case, sites, &cfg, n, nest_at);
        check_case::<f16>(case, sites, &cfg, n, nest_at);
        check_case::<bf16>(case, sites, &cfg, n, nest_at);
    }
    assert_eq!(kinds.len(), 7, "every kind of shape was drawn");
}

/// `s = init; for v in x { s += v }` as `#[scramble]` rewrites it, under `cfg`, and the
/// site's reference over the same terms (`init` first).
fn as_generated_and_reference(
    site: &'static CallSite,
    cfg: &ScrambleConfig,
    init: f64,
    x: &[f64],
) -> (f64, f64) {
    let got = with_config(cfg, || {
        let mut s = init;
        let mut r = RunningReduction::begin_at(site, &mut s);
        for &v in x {
            r.add_assign(v);
        }
        r.write(&mut s);
        s
    });
    let mut terms = vec![init];
    terms.extend(x);
    (got, per_site_reference(site, cfg, &terms))
}

#[test]
fn generated_code_calls_give_the_bits_of_the_reference() {
    let site = site("running::generated#0");
    let x: Vec<f64> = (0..100).map(|i| (i as f64 * 0.7).sin() * 1e3).collect();
    for seed in 0..24 {
        let cfg = ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true)
            .seed(seed);
        let (got, want) = as_generated_and_reference(site, &cfg, 0.5, &x);
        assert_eq!(got.to_bits(), want.to_bits(), "seed {seed}");
    }
}

#[test]
fn a_new_seed_or_mode_draws_afresh() {
    let site = site("running::fresh#0");
    let x = super::super::spread(600);
    let shapes = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true);
    // Seeds whose shapes differ, so a stale shape would show.
    let seeds: Vec<u64> = {
        let mut seen = std::collections::HashSet::new();
        (0..200)
            .filter(|&s| seen.insert(reference_shape(site, &shapes.clone().seed(s)).to_string()))
            .collect()
    };
    assert!(seeds.len() > 8, "{seeds:?}");
    let configs = seeds.iter().map(|&s| shapes.clone().seed(s)).chain([
        shapes.clone().shapes(false).seed(5),
        shapes
            .clone()
            .shuffle(Some(Shuffle::Sattolo))
            .shapes(false)
            .seed(5),
        shapes.clone().shuffle(Some(Shuffle::Identity)).seed(5),
        shapes.clone().seed(5),
    ]);
    for (k, cfg) in configs.enumerate() {
        let want = per_site_reference(site, &cfg, &x);
        // Twice: the first call files the shape, the second uses it.
        for call in 0..2 {
            // Every other configuration runs on a thread of its own, which must see
            // what the previous thread filed as stale.
            let got = if k % 2 == 0 {
                with_config(&cfg, || reduce(site, &x))
            } else {
                let cfg = cfg.clone();
                let x = x.clone();
                std::thread::spawn(move || with_config(&cfg, || reduce(site, &x)))
                    .join()
                    .expect("thread")
            };
            assert_eq!(
                got.map(f64::to_bits),
                Some(want.to_bits()),
                "config {k} ({cfg:?}), call {call}"
            );
        }
    }
}

#[test]
fn per_call_draws_are_unchanged() {
    let site = site("running::per-call#0");
    let x: Vec<f32> = (0..300).map(|i| (i as f32 * 0.9).sin() * 1e2).collect();
    let cfg = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true)
        .vary(Vary::Call)
        .seed(11);
    let got: Vec<Option<f32>> = with_config(&cfg, || (0..12).map(|_| reduce(site, &x)).collect());
    // The same configuration again restarts the invocation counters.
    let want: Vec<f32> = with_config(&cfg, || {
        (0..12)
            .map(|_| {
                let (key, invocation) = context::next_key(site.id());
                let mut rng = stream(cfg.seed, key, invocation);
                let shape = CombineShape::draw(true, Shuffle::FisherYates, &mut rng);
                combine(shape, &x, &mut rng)
            })
            .collect()
    });
    let got: Vec<Option<u32>> = got.into_iter().map(|v| v.map(f32::to_bits)).collect();
    let want: Vec<Option<u32>> = want.into_iter().map(|v| Some(v.to_bits())).collect();
    assert_eq!(got, want);
}

#[test]
fn the_identity_order_reaches_its_sites_and_runs_them_as_written() {
    // What `cargo fprev test` learns reach from: every start counts, and the loop runs
    // itself (no term is stored), in both ways of drawing.
    for vary in [Vary::Site, Vary::Call] {
        let site = site("running::identity#0");
        let cfg = ScrambleConfig::off()
            .shuffle(Some(Shuffle::Identity))
            .seed(5)
            .vary(vary);
        let before = site.reached();
        let ons = with_config(&cfg, || {
            (0..3)
                .map(|_| RunningReduction::<f64>::begin(site).on())
                .collect::<Vec<_>>()
        });
        assert_eq!(ons, [false; 3], "{vary:?}");
        assert_eq!(site.reached() - before, 3, "{vary:?}");
        // A shuffle that reorders is on, and counted the same way.
        let fy = cfg.shuffle(Some(Shuffle::FisherYates));
        assert!(with_config(&fy, || {
            let r = RunningReduction::<f64>::begin(site);
            let on = r.on();
            r.finish();
            on
        }));
        assert_eq!(site.reached() - before, 4, "{vary:?}");
    }
}

#[test]
fn every_call_is_recorded() {
    let site = site("running::recorded#0");
    let cfg = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true)
        .seed(3);
    let (_, log) = entropy::record_orders(|| {
        with_config(&cfg, || {
            for _ in 0..5 {
                reduce(site, &[1.0f64, 2.0, 3.0]);
            }
        })
    });
    let calls = &log.sites[&site.describe()];
    assert_eq!(calls.len(), 5);
    assert!(calls.iter().all(|&h| h == calls[0]));
}

#[test]
fn long_permuted_reductions_give_the_reference_whether_their_order_is_kept_or_not() {
    // The first call of a length shuffles in place, the second keeps the order, the
    // later ones read it; another length in between starts over. Every call must give
    // the site's reference bits.
    let site = site("running::long-permuted#0");
    let x = super::super::spread(60_000);
    for shuffle in [Shuffle::FisherYates, Shuffle::Sattolo] {
        let cfg = ScrambleConfig::off().shuffle(Some(shuffle)).seed(9);
        for n in [300, 5000, 60_000, 5000, 300] {
            for call in 0..4 {
                let (got, want) = as_generated_and_reference(site, &cfg, 0.0, &x[..n]);
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{shuffle:?}, n = {n}, call {call}"
                );
            }
        }
    }
}

#[test]
fn random_trees_give_the_reference_whether_their_splits_are_kept_or_not() {
    // Short trees keep their splits at once, long ones from the second call of a length
    // in a row; another length in between starts over. Every call must give the site's
    // reference bits.
    let site = site("running::random-tree#0");
    let shapes = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true);
    let Some(cfg) = (0..1000)
        .map(|seed| shapes.clone().seed(seed))
        .find(|cfg| reference_shape(site, cfg) == CombineShape::RandomTree)
    else {
        panic!("no seed below 1000 draws a random tree at the test's site");
    };
    let x = super::super::spread(60_000);
    for n in [17, 100, 300, 5000, 60_000, 5000, 300, 100, 17] {
        for call in 0..4 {
            let (got, want) = as_generated_and_reference(site, &cfg, 0.0, &x[..n]);
            assert_eq!(got.to_bits(), want.to_bits(), "n = {n}, call {call}");
        }
    }
}

#[test]
fn long_states_keep_their_words_within_the_budget() {
    use super::engine::On;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let grown = |terms: usize| {
        let mut on = On::start(
            FloatKind::F64,
            CombineShape::Threads { threads: 3 },
            None,
            true,
        );
        for i in 0..terms {
            on.push_raw((&(i as f64)) as *const f64 as *const u8);
        }
        on
    };
    let kept = AtomicUsize::new(0);
    let beyond = |on: &On| on.words.len().saturating_sub(super::super::CHUNK) * 8;
    // Two states of 3 CHUNKs of f64 terms, their words grown to 4 CHUNKs: 24 KiB each
    // beyond the chunk; a budget of 30 KiB keeps the first and gives the second's back.
    let mut a = grown(3 * super::super::CHUNK);
    let mut b = grown(3 * super::super::CHUNK);
    let (a_beyond, b_beyond) = (beyond(&a), beyond(&b));
    assert!(
        a_beyond == 24 << 10 && b_beyond == a_beyond,
        "{a_beyond} {b_beyond}"
    );
    a.keep_within(&kept, 30 << 10);
    b.keep_within(&kept, 30 << 10);
    assert_eq!(beyond(&a), a_beyond, "the first state keeps its words");
    assert_eq!(a.kept, a_beyond);
    assert_eq!(beyond(&b), 0, "the second is past the budget");
    assert_eq!(b.kept, 0);
    assert_eq!(kept.load(Ordering::Relaxed), a_beyond);
    // Kept again, a state counts once; shrunk, it hands its count back.
    a.keep_within(&kept, 30 << 10);
    assert_eq!(kept.load(Ordering::Relaxed), a_beyond);
    a.words.truncate(super::super::CHUNK);
    a.keep_within(&kept, 30 << 10);
    assert_eq!((kept.load(Ordering::Relaxed), a.kept), (0, 0));
    // counted in the test's own count: dropping them leaves the process count alone
    (a.kept, b.kept) = (0, 0);
}
