//! `#[fprev::scramble]` on reductions into many elements at once (issue 47): per-element
//! accumulators over an outer index (column sums, per-cluster sums) and gradient-style
//! updates through `iter_mut().enumerate()`. Each element is a sum over the outer loop:
//! unscrambled, the result is the plain code's bit for bit; scrambled, each element is a
//! reordering of exactly its own terms (with terms whose sums are exact in any order,
//! the result equals the exact sum; with any terms, it stays within the rounding bound of
//! the exact sum and some seed moves it), and one seed gives the same bits twice. The
//! twins whose order is their meaning run as written under every mode and seed.

#![cfg(not(feature = "off"))] // needs scrambling compiled in; see scramble_off.rs
#![allow(clippy::needless_range_loop)] // the forms under test

mod common;

use fprev::scramble::{with_config, ScrambleConfig};

/// A seeded generator (splitmix64): a failing case prints its seed.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A float of any sign over many binades (sums of these round).
    fn wide(&mut self) -> f64 {
        let m = (self.below(2001) as f64 - 1000.0) / 1000.0;
        m * 2f64.powi(self.below(40) as i32 - 20)
    }
    /// A multiple of 2^-10 below 2^20 in magnitude: sums of a few thousand of these are
    /// exact in every order, so any reordering of the same terms gives the same bits.
    fn exact(&mut self) -> f64 {
        (self.below(1 << 21) as f64 - (1 << 20) as f64) / 1024.0
    }
}

/// Every scrambling mode, over a few seeds.
fn modes() -> Vec<ScrambleConfig> {
    common::scramble_modes(&[1, 2, 7, 99, 1234])
}

/// Property test cases: `FPREV_PROPTEST_CASES` (default 24), from `FPREV_SEED` (a
/// number or a replay token) when set.
fn cases() -> std::ops::Range<u64> {
    let n = fprev::scramble::proptest_cases(24);
    let first = fprev::scramble::property_seed(1);
    first..first.saturating_add(n)
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

// ---- Form 1: per-element accumulators over an outer index ----

#[fprev::scramble]
fn column_sums(x: &[Vec<f64>], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    for i in 0..x.len() {
        for j in 0..p {
            acc[j] += x[i][j];
        }
    }
    acc
}

fn column_sums_plain(x: &[Vec<f64>], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    for i in 0..x.len() {
        for j in 0..p {
            acc[j] += x[i][j];
        }
    }
    acc
}

/// Per-cluster sums and counts (a k-means update), flattened: `k * p` sums then `k`
/// counts.
#[fprev::scramble]
fn cluster_sums(x: &[Vec<f64>], label: &[usize], k: usize, p: usize) -> Vec<f64> {
    let mut sums = vec![vec![0.0; p]; k];
    let mut counts = vec![0usize; k];
    for i in 0..x.len() {
        for j in 0..p {
            sums[label[i]][j] += x[i][j];
        }
        counts[label[i]] += 1;
    }
    let mut out: Vec<f64> = sums.concat();
    out.extend(counts.iter().map(|&c| c as f64));
    out
}

fn cluster_sums_plain(x: &[Vec<f64>], label: &[usize], k: usize, p: usize) -> Vec<f64> {
    let mut sums = vec![vec![0.0; p]; k];
    let mut counts = vec![0usize; k];
    for i in 0..x.len() {
        for j in 0..p {
            sums[label[i]][j] += x[i][j];
        }
        counts[label[i]] += 1;
    }
    let mut out: Vec<f64> = sums.concat();
    out.extend(counts.iter().map(|&c| c as f64));
    out
}

// ---- Form 2: gradient-style updates through an element loop ----

/// The gradient of a least-squares loss in `w` (the last weight is the intercept; rows
/// have `p + 1` entries): `g[j] = -sum_i d_i x[i][j]`, and `g[p]` takes both
/// `-d_i x[i][p]` through the element loop and `-d_i` through `g[p]`: two spellings of
/// one element.
#[fprev::scramble]
fn gradient(x: &[Vec<f64>], y: &[f64], w: &[f64]) -> Vec<f64> {
    let p = w.len() - 1;
    let mut g = vec![0.0; p + 1];
    for i in 0..x.len() {
        let mut pred = w[p];
        for j in 0..p {
            pred += w[j] * x[i][j];
        }
        let d = y[i] - pred;
        for (j, g_j) in g.iter_mut().enumerate() {
            *g_j -= d * x[i][j];
        }
        g[p] -= d;
    }
    g
}

fn gradient_plain(x: &[Vec<f64>], y: &[f64], w: &[f64]) -> Vec<f64> {
    let p = w.len() - 1;
    let mut g = vec![0.0; p + 1];
    for i in 0..x.len() {
        let mut pred = w[p];
        for j in 0..p {
            pred += w[j] * x[i][j];
        }
        let d = y[i] - pred;
        for (j, g_j) in g.iter_mut().enumerate() {
            *g_j -= d * x[i][j];
        }
        g[p] -= d;
    }
    g
}

// ---- Form 3: tuple folds ----

/// Three sums and a count in one accumulator: the count runs as written, each float
/// component is its own reduction. Flattened: the sums then the count.
#[fprev::scramble]
fn moments(x: &[Vec<f64>]) -> Vec<f64> {
    let (a, b, c, n) = x.iter().fold((0.0, 0.0, 0.0, 0usize), |(a, b, c, n), r| {
        (a + r[0], r[1] + b, c - r[2], n + 1)
    });
    vec![a, b, c, n as f64]
}

fn moments_plain(x: &[Vec<f64>]) -> Vec<f64> {
    let (a, b, c, n) = x.iter().fold((0.0, 0.0, 0.0, 0usize), |(a, b, c, n), r| {
        (a + r[0], r[1] + b, c - r[2], n + 1)
    });
    vec![a, b, c, n as f64]
}

/// A maximum: not a sum, left alone with that reason.
#[fprev::scramble]
fn largest(v: &[f64]) -> f64 {
    v.iter().fold(f64::MIN, |m, &x| m.max(x))
}

// ---- Form 5: accumulation through a rebuilt vector ----

/// A weighted sum of rows, the vector rebuilt from itself at every row.
#[fprev::scramble]
fn weighted_rows(x: &[Vec<f64>], w: &[f64]) -> Vec<f64> {
    let mut mean = vec![0.0; x[0].len()];
    for (row, &wi) in x.iter().zip(w) {
        mean = row
            .iter()
            .zip(mean.iter())
            .map(|(&e, &s)| e * wi + s)
            .collect();
    }
    mean
}

fn weighted_rows_plain(x: &[Vec<f64>], w: &[f64]) -> Vec<f64> {
    let mut mean = vec![0.0; x[0].len()];
    for (row, &wi) in x.iter().zip(w) {
        mean = row
            .iter()
            .zip(mean.iter())
            .map(|(&e, &s)| e * wi + s)
            .collect();
    }
    mean
}

/// Twin of form 5: exponential smoothing reads the element it rebuilds.
#[fprev::scramble]
fn smoothed_rows(x: &[Vec<f64>]) -> Vec<f64> {
    let mut mean = vec![0.0; x[0].len()];
    for row in x {
        mean = row
            .iter()
            .zip(mean.iter())
            .map(|(&e, &s)| e + 0.5 * s)
            .collect();
    }
    mean
}

// ---- Form 4: sums of small float structs ----

#[derive(Clone, Copy, Debug, PartialEq)]
struct Vec2 {
    x: f64,
    y: f64,
}

impl Vec2 {
    fn zero() -> Vec2 {
        Vec2 { x: 0.0, y: 0.0 }
    }
}

impl std::ops::Add for Vec2 {
    type Output = Vec2;
    fn add(self, o: Vec2) -> Vec2 {
        Vec2 {
            x: self.x + o.x,
            y: self.y + o.y,
        }
    }
}

impl std::ops::AddAssign for Vec2 {
    fn add_assign(&mut self, o: Vec2) {
        *self = *self + o;
    }
}

impl std::ops::Mul<f64> for Vec2 {
    type Output = Vec2;
    fn mul(self, w: f64) -> Vec2 {
        Vec2 {
            x: self.x * w,
            y: self.y * w,
        }
    }
}

impl std::iter::Sum for Vec2 {
    fn sum<I: Iterator<Item = Vec2>>(it: I) -> Vec2 {
        it.fold(Vec2::zero(), |a, b| a + b)
    }
}

/// A weighted sum of points: the runtime reassociates floats only, so the macro (and
/// `cargo fprev scan`) leave these alone as not floats, by their declarations.
#[fprev::scramble]
fn weighted(points: &[Vec2], w: &[f64]) -> (Vec2, Vec2) {
    let mut left = Vec2::zero();
    for (p, w) in points.iter().zip(w) {
        left += *p * *w;
    }
    let right = points.iter().map(|p| *p * 0.5).sum::<Vec2>();
    (left, right)
}

// ---- Twins whose order is their meaning: never scrambled ----

/// Running column sums, each row's read back: a prefix sum per column.
#[fprev::scramble]
fn running_columns(x: &[Vec<f64>], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    let mut out = Vec::new();
    for i in 0..x.len() {
        for j in 0..p {
            acc[j] += x[i][j];
            out.push(acc[j]);
        }
    }
    out
}

/// A gradient whose norm is read while it is built (an early-stopping test): order-carrying.
#[fprev::scramble]
fn gradient_norms(x: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let p = x[0].len();
    let mut g = vec![0.0; p];
    let mut norms = Vec::new();
    for i in 0..x.len() {
        for (j, g_j) in g.iter_mut().enumerate() {
            *g_j -= y[i] * x[i][j];
            norms.push(*g_j);
        }
    }
    norms
}

fn rows(d: &mut Draw, n: usize, p: usize, term: fn(&mut Draw) -> f64) -> Vec<Vec<f64>> {
    (0..n).map(|_| (0..p).map(|_| term(d)).collect()).collect()
}

/// The three forms on one input: (name, scrambled, plain, each element's terms).
type RecallCase = (&'static str, Vec<f64>, Vec<f64>, Vec<Vec<f64>>);

fn forms(seed: u64, term: fn(&mut Draw) -> f64, cfg: &ScrambleConfig) -> Vec<RecallCase> {
    let mut d = Draw(seed);
    let (n, p, k) = (
        2 + d.below(200) as usize,
        1 + d.below(6) as usize,
        1 + d.below(4) as usize,
    );
    let x = rows(&mut d, n, p, term);
    let label: Vec<usize> = (0..n).map(|_| d.below(k as u64) as usize).collect();
    let col_terms: Vec<Vec<f64>> = (0..p).map(|j| x.iter().map(|r| r[j]).collect()).collect();
    let mut cluster_terms = vec![Vec::new(); k * p];
    for (i, r) in x.iter().enumerate() {
        for j in 0..p {
            cluster_terms[label[i] * p + j].push(r[j]);
        }
    }
    let x3 = rows(&mut d, n, 3, term);
    let moment_terms = vec![
        x3.iter().map(|r| r[0]).collect(),
        x3.iter().map(|r| r[1]).collect(),
        x3.iter().map(|r| -r[2]).collect(),
    ];
    let mut out = vec![
        (
            "moments",
            with_config(cfg, || moments(&x3))[..3].to_vec(),
            moments_plain(&x3)[..3].to_vec(),
            moment_terms,
        ),
        (
            "column_sums",
            with_config(cfg, || column_sums(&x, p)),
            column_sums_plain(&x, p),
            col_terms,
        ),
        (
            "cluster_sums",
            with_config(cfg, || cluster_sums(&x, &label, k, p))[..k * p].to_vec(),
            cluster_sums_plain(&x, &label, k, p)[..k * p].to_vec(),
            cluster_terms,
        ),
    ];
    // The gradient at w = 0: d_i = y_i exactly, so its terms are known: -y_i x[i][j],
    // and for g[p] also -y_i.
    let xg = rows(&mut d, n, p + 1, term);
    let y: Vec<f64> = (0..n).map(|_| term(&mut d)).collect();
    let w = vec![0.0; p + 1];
    let mut g_terms: Vec<Vec<f64>> = (0..=p)
        .map(|j| (0..n).map(|i| -(y[i] * xg[i][j])).collect())
        .collect();
    g_terms[p].extend(y.iter().map(|v| -v));
    // Weights that are powers of two: the products are exact, so are the terms.
    let wr: Vec<f64> = (0..n).map(|_| 2f64.powi(-(d.below(3) as i32))).collect();
    let wr_terms: Vec<Vec<f64>> = (0..p)
        .map(|j| x.iter().zip(&wr).map(|(r, w)| r[j] * w).collect())
        .collect();
    out.push((
        "weighted_rows",
        with_config(cfg, || weighted_rows(&x, &wr)),
        weighted_rows_plain(&x, &wr),
        wr_terms,
    ));
    out.push((
        "gradient",
        with_config(cfg, || gradient(&xg, &y, &w)),
        gradient_plain(&xg, &y, &w),
        g_terms,
    ));
    out
}

#[test]
fn unscrambled_forms_are_the_plain_code_bit_for_bit() {
    for seed in cases() {
        for (name, got, plain, _) in forms(seed, Draw::wide, &ScrambleConfig::off()) {
            assert_eq!(
                bits(&got),
                bits(&plain),
                "{name}, seed {seed} (rerun with FPREV_SEED={seed} FPREV_PROPTEST_CASES=1)"
            );
        }
    }
}

#[test]
fn scrambled_forms_reorder_exactly_their_own_terms() {
    // Terms whose sums are exact in every order: a dropped, duplicated or misplaced
    // term would change an element's value.
    for seed in cases() {
        for cfg in modes() {
            for (name, got, plain, terms) in forms(seed, Draw::exact, &cfg) {
                let exact: Vec<f64> = terms.iter().map(|t| fprev::exact::sum(t)).collect();
                assert_eq!(
                    bits(&plain),
                    bits(&exact),
                    "{name}, seed {seed}: the terms listed are not the plain code's"
                );
                assert_eq!(
                    bits(&got),
                    bits(&exact),
                    "{name}, seed {seed} (rerun with FPREV_SEED={seed} FPREV_PROPTEST_CASES=1) under {cfg:?}"
                );
            }
        }
    }
}

#[test]
fn scrambled_forms_round_within_the_bound_and_some_seed_moves_them() {
    let mut moved = std::collections::BTreeSet::new();
    for seed in cases() {
        for cfg in modes() {
            let again = forms(seed, Draw::wide, &cfg);
            for (case, (name, got, _, terms)) in
                forms(seed, Draw::wide, &cfg).into_iter().zip(again)
            {
                // One seed, one platform: the same bits twice.
                assert_eq!(bits(&got), bits(&case.1), "{name}, seed {seed}, {cfg:?}");
                for (e, t) in terms.iter().enumerate() {
                    let exact = fprev::exact::sum(t);
                    let mass: f64 = t.iter().map(|v| v.abs()).sum();
                    let bound = mass * (t.len() + 1) as f64 * f64::EPSILON;
                    assert!(
                        (got[e] - exact).abs() <= bound,
                        "{name}[{e}], seed {seed} (rerun with FPREV_SEED={seed} FPREV_PROPTEST_CASES=1): {} vs exact {exact} under {cfg:?}",
                        got[e]
                    );
                }
                let plain = forms(seed, Draw::wide, &ScrambleConfig::off());
                let reference = &plain.iter().find(|c| c.0 == name).expect("same forms").2;
                if bits(&got) != bits(reference) {
                    moved.insert(name);
                }
            }
        }
    }
    assert_eq!(
        moved.into_iter().collect::<Vec<_>>(),
        [
            "cluster_sums",
            "column_sums",
            "gradient",
            "moments",
            "weighted_rows"
        ],
        "every form is reassociated under some seed"
    );
}

#[test]
fn twins_whose_order_is_their_meaning_run_as_written() {
    for seed in cases() {
        let mut d = Draw(seed);
        let (n, p) = (2 + d.below(100) as usize, 1 + d.below(5) as usize);
        let x = rows(&mut d, n, p, Draw::wide);
        let y: Vec<f64> = (0..n).map(|_| d.wide()).collect();
        let plain = with_config(&ScrambleConfig::off(), || {
            (
                running_columns(&x, p),
                gradient_norms(&x, &y),
                largest(&y),
                smoothed_rows(&x),
            )
        });
        for cfg in modes() {
            let got = with_config(&cfg, || {
                (
                    running_columns(&x, p),
                    gradient_norms(&x, &y),
                    largest(&y),
                    smoothed_rows(&x),
                )
            });
            assert_eq!(bits(&got.3), bits(&plain.3), "seed {seed}, {cfg:?}");
            assert_eq!(bits(&got.0), bits(&plain.0), "seed {seed}, {cfg:?}");
            assert_eq!(bits(&got.1), bits(&plain.1), "seed {seed}, {cfg:?}");
            assert_eq!(got.2.to_bits(), plain.2.to_bits(), "seed {seed}, {cfg:?}");
        }
        let points: Vec<Vec2> = x.iter().map(|r| Vec2 { x: r[0], y: y[0] }).collect();
        let w: Vec<f64> = (0..n).map(|_| d.wide()).collect();
        let plain = with_config(&ScrambleConfig::off(), || weighted(&points, &w));
        for cfg in modes() {
            assert_eq!(
                with_config(&cfg, || weighted(&points, &w)),
                plain,
                "seed {seed}"
            );
        }
        // The count of a tuple fold runs as written.
        let x3 = rows(&mut d, n, 3, Draw::wide);
        let counted = with_config(&modes()[2], || moments(&x3));
        assert_eq!(counted[3], n as f64, "seed {seed}");
    }
}

#[test]
fn the_sites_say_what_was_scrambled_and_why_the_twins_were_not() {
    let sites = fprev::scramble::sites();
    let site = |label: &str| {
        sites
            .iter()
            .find(|s| s.label.ends_with(label))
            .unwrap_or_else(|| panic!("no site {label}: {sites:#?}"))
    };
    for label in [
        "moments#sum0",
        "weighted_rows#reduction0",
        "column_sums#reduction0",
        "cluster_sums#reduction0",
        "gradient#reduction1",
    ] {
        assert!(site(label).kind.is_some(), "{label}: {:?}", site(label));
    }
    let reasons: Vec<&str> = sites
        .iter()
        .filter(|s| s.label.contains("running_columns") || s.label.contains("gradient_norms"))
        .filter_map(|s| s.reason)
        .collect();
    assert!(
        reasons.contains(&"order-carrying: reads `acc` besides adding to `acc[j]`")
            && reasons.contains(&"order-carrying: reads `g_j` besides adding to `*g_j`")
            && !sites
                .iter()
                .any(|s| s.label.contains("smoothed_rows") && s.kind.is_some()),
        "{reasons:?}"
    );
    let not_floats: Vec<&str> = sites
        .iter()
        .filter(|s| s.label.contains("::weighted#"))
        .map(|s| s.reason.unwrap_or("scrambled"))
        .collect();
    assert_eq!(
        not_floats,
        [
            "not a float: `left` is a `Vec2`, and fprev reassociates f32, f64, f16 and bf16 only: it runs as written",
            "not a float: `.sum(..)` is a `Vec2`, and fprev reassociates f32, f64, f16 and bf16 only: it runs as written",
        ]
    );
    let largest = site("largest#fold");
    assert_eq!(
        largest.reason,
        Some("not a sum (max/min): the fold's closure keeps the largest or smallest value, which no order changes")
    );
    assert!(
        !sites.iter().any(|s| s.kind.is_some()
            && (s.label.contains("running_columns") || s.label.contains("gradient_norms"))),
        "a twin was scrambled: {sites:#?}"
    );
}
