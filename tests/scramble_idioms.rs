//! `#[fprev::scramble]` on the idioms of real code: loops whose order is their meaning
//! run as written (bit for bit, under every mode and seed), float reductions are
//! reassociated (and differ from plain by rounding only), and valid code stays valid.

#![cfg(not(feature = "off"))] // needs scrambling compiled in; see scramble_off.rs
#![allow(clippy::needless_range_loop, clippy::assign_op_pattern)] // forms under test

use std::fmt::Write as _;
use std::ops::Add;

mod common;

use fprev::scramble::{with_config, ScrambleConfig, Shuffle};
use rayon::prelude::*;

fn data(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let x = ((i * 7919) % 1009) as f64;
            (x - 500.0) * 10f64.powi((i % 11) as i32 - 5)
        })
        .collect()
}

/// Every scrambling mode, over a few seeds.
fn modes() -> Vec<ScrambleConfig> {
    common::scramble_modes(&[1, 2, 7, 99])
}

/// `f` gives the same bits with scrambling off and under every mode.
fn unchanged<R: PartialEq + std::fmt::Debug>(name: &str, f: impl Fn() -> R) {
    let plain = with_config(&ScrambleConfig::off(), &f);
    for cfg in modes() {
        let got = with_config(&cfg, &f);
        assert_eq!(got, plain, "{name} changed under {cfg:?}");
    }
}

/// `f` differs from plain under some mode, and only within the rounding bound of a sum
/// of `terms` whose magnitudes add to `mass`.
fn reassociated(name: &str, f: impl Fn() -> f64, terms: usize, mass: f64) {
    let plain = with_config(&ScrambleConfig::off(), &f);
    let bound = mass * terms as f64 * f64::EPSILON;
    let mut moved = false;
    for cfg in modes() {
        let a = with_config(&cfg, &f);
        let b = with_config(&cfg, &f);
        assert_eq!(a.to_bits(), b.to_bits(), "{name}: same seed, other bits");
        assert!(
            (a - plain).abs() <= bound,
            "{name}: {a} vs plain {plain} under {cfg:?}"
        );
        moved |= a.to_bits() != plain.to_bits();
    }
    assert!(moved, "{name}: no mode reassociated it");
}

fn mass(v: &[f64]) -> f64 {
    v.iter().map(|x| x.abs()).sum()
}

// ---- Order is meaning: these must run as written. ----

#[fprev::scramble]
fn forward_substitution(l: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut x = vec![0.0; n];
    for i in 0..n {
        let mut s = b[i];
        for j in 0..i {
            s -= l[i * n + j] * x[j];
        }
        x[i] = s / l[i * n + i];
    }
    x
}

#[fprev::scramble]
fn lattice_paths(n: usize) -> Vec<Vec<f64>> {
    let mut a = vec![vec![1.0; n]; n];
    for x in 1..n {
        for y in 1..n {
            a[x][y] = a[x - 1][y] + a[x][y - 1];
        }
    }
    a
}

/// Two-sample KS statistic: a two-pointer walk over two sorted samples.
#[fprev::scramble]
fn ks_statistic(a: &[f64], b: &[f64]) -> f64 {
    let (mut i, mut j, mut d) = (0usize, 0usize, 0.0f64);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            i += 1;
        } else {
            j += 1;
        }
        let gap = (i as f64 / na - j as f64 / nb).abs();
        if gap > d {
            d = gap;
        }
    }
    d
}

#[fprev::scramble]
fn prefix_sums(v: &[f64]) -> Vec<f64> {
    let mut s = 0.0;
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        s += x;
        out.push(s);
    }
    out
}

#[fprev::scramble]
fn running_max_rows(v: &[f64], cols: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for row in v.chunks(cols) {
        let mut m = f64::MIN;
        for &x in row {
            if x > m {
                m = x;
            }
        }
        out.push(m);
    }
    out
}

#[fprev::scramble]
fn column_major_fill(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    let mut k = 0.0;
    for c in 0..n {
        for r in 0..n {
            m[r * n + c] = k;
            k += 1.5;
        }
    }
    m
}

/// A bottom-up walk of an implicit binary tree: parents from children, in order.
#[fprev::scramble]
fn tree_sums(leaves: &[f64]) -> Vec<f64> {
    let n = leaves.len();
    let mut t = vec![0.0; 2 * n];
    t[n..].copy_from_slice(leaves);
    for i in (1..n).rev() {
        t[i] = t[2 * i] + t[2 * i + 1];
    }
    t
}

#[fprev::scramble]
fn integer_prefix(v: &[i64]) -> Vec<i64> {
    let mut s = 0i64;
    v.iter()
        .map(|x| {
            s += x;
            s
        })
        .collect()
}

#[fprev::scramble]
fn text(v: &[f64]) -> String {
    let mut out = String::new();
    for x in v {
        out += "|";
        let _ = write!(out, "{x:.3}");
    }
    out
}

#[fprev::scramble]
fn state_machine(v: &[f64]) -> u32 {
    let mut state = 0u32;
    let mut crossings = 0u32;
    for &x in v {
        state = match (state, x > 0.0) {
            (0, true) => 1,
            (1, false) => {
                crossings += 1;
                0
            }
            (s, _) => s,
        };
    }
    crossings
}

#[fprev::scramble]
fn lcg_fill(n: usize) -> Vec<f64> {
    let mut seed = 12345u64;
    let mut out = vec![0.0; n];
    for slot in out.iter_mut() {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        *slot = (seed >> 11) as f64;
    }
    out
}

#[test]
fn order_carrying_loops_run_as_written() {
    let n = 40;
    let v = data(n * n);
    let l: Vec<f64> = (0..n * n)
        .map(|k| {
            if k % (n + 1) == 0 {
                2.0 + v[k].abs()
            } else {
                v[k] * 1e-3
            }
        })
        .collect();
    let b = data(n);
    let mut sa = data(300);
    let mut sb: Vec<f64> = data(350).iter().map(|x| x * 0.9 + 0.1).collect();
    sa.sort_by(f64::total_cmp);
    sb.sort_by(f64::total_cmp);
    let ints: Vec<i64> = (0..500).map(|i| (i * 37 % 101) - 50).collect();

    // The forward substitution's inner `s -= ...` is a legal reduction: the solution
    // moves by rounding only, never by the 14.7x of a reordered outer loop.
    let plain = with_config(&ScrambleConfig::off(), || forward_substitution(&l, &b, n));
    for cfg in modes() {
        let x = with_config(&cfg, || forward_substitution(&l, &b, n));
        for (got, want) in x.iter().zip(&plain) {
            assert!(
                (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                "{got} vs {want}"
            );
        }
    }
    unchanged("lattice paths", || lattice_paths(12));
    unchanged("KS statistic", || ks_statistic(&sa, &sb).to_bits());
    unchanged("running max", || running_max_rows(&v, 40));
    unchanged("column fill", || column_major_fill(20));
    unchanged("tree walk", || tree_sums(&v[..512]));
    unchanged("integer prefix", || integer_prefix(&ints));
    unchanged("text", || text(&v[..50]));
    unchanged("state machine", || state_machine(&v));
    unchanged("RNG fill", || lcg_fill(100));
    // A prefix sum's running value is read: order is meaning, it is left alone.
    unchanged("prefix sums", || {
        prefix_sums(&v)
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    });
}

#[test]
fn loops_left_alone_are_listed_with_their_reason() {
    let _ = prefix_sums(&[1.0]);
    let sites = fprev::scramble::sites();
    let reason = |name: &str| {
        sites
            .iter()
            .filter(|s| s.kind.is_none() && s.label.contains(name))
            .filter_map(|s| s.reason)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        reason("prefix_sums#loop"),
        ["order-carrying: reads `s` besides adding to `s`"]
    );
    assert!(reason("lcg_fill#fn")[0].contains("nothing to scramble"));
    assert_eq!(
        reason("fold_block_reads_acc#fold"),
        ["order-carrying: the fold's closure reads its accumulator besides the final `acc + term` (or leaves early)"]
    );
    // Reductions are listed as sites of their kind.
    assert!(sites
        .iter()
        .any(|s| s.label.contains("forward_substitution#reduction")
            && s.kind == Some(fprev::scramble::SiteKind::Reduction)));
}

// ---- Pure reductions in every idiom: these must be reassociated. ----

struct Samples(Vec<f64>);

impl<'a> IntoIterator for &'a Samples {
    type Item = f64;
    type IntoIter = std::iter::Copied<std::slice::Iter<'a, f64>>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().copied()
    }
}

#[fprev::scramble]
fn generic_total<I: IntoIterator<Item = T>, T: Into<f64>>(items: I) -> f64 {
    let mut s = 0.0;
    for x in items {
        s += x.into();
    }
    s
}

#[fprev::scramble]
fn binding_total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

#[fprev::scramble]
fn zip_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for (x, y) in a.iter().zip(b) {
        s = s + x * y;
    }
    s
}

#[fprev::scramble]
fn take_total(v: &[f64], n: usize) -> f64 {
    let mut s = 0.0;
    for &p in v.iter().take(n) {
        s = p + s;
    }
    s
}

#[fprev::scramble]
fn iter_sum(v: &[f64]) -> f64 {
    v.iter().map(|x| x * 2.0).sum::<f64>()
}

#[fprev::scramble]
fn fold_closure(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |a, b| a + b)
}

/// `P = P + e` on an indexed place.
#[fprev::scramble]
fn place_assign(c: &mut [f64], v: &[f64]) {
    for x in v {
        c[1] = c[1] + x;
    }
}

/// A block-bodied fold: `let` statements, then the additive update.
#[fprev::scramble]
fn fold_block(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |acc, x| {
        let t = x * x;
        let u = t * 0.5 - x;
        acc + u
    })
}

/// The accumulator is read before the update: order is meaning, run as written.
#[fprev::scramble]
fn fold_block_reads_acc(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |acc, x| {
        let damp = if acc > 1.0 { 0.5 } else { 1.0 };
        acc + damp * x
    })
}

/// A rayon dot product over `zip` (the shape of a clustering crate's centroid code):
/// the pairs stay pairs, only the sum is reassociated.
#[fprev::scramble]
fn par_zip_dot(a: &[f64], b: &[f64]) -> f64 {
    a.par_iter().zip(b.par_iter()).map(|(x, y)| x * y).sum()
}

/// `enumerate` on a rayon chain: the index stays the item's.
#[fprev::scramble]
fn par_weighted(a: &[f64]) -> f64 {
    a.par_iter()
        .enumerate()
        .map(|(i, x)| x * (i % 7) as f64)
        .sum::<f64>()
}

#[fprev::scramble]
fn fold_add<T: Copy + Add<Output = T> + Default>(v: &[T]) -> T {
    v.iter().copied().fold(T::default(), std::ops::Add::add)
}

#[fprev::scramble]
fn fold_f64_add(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::add)
}

#[fprev::scramble]
fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            for p in 0..n {
                c[i * n + j] += a[i * n + p] * b[p * n + j];
            }
        }
    }
    c
}

struct Centroid {
    acc: f64,
}

impl Centroid {
    #[fprev::scramble]
    fn absorb(&mut self, v: &[f64]) {
        for x in v {
            self.acc += x;
        }
    }
}

#[fprev::scramble]
fn while_total(v: &[f64]) -> f64 {
    let mut i = 0;
    let mut s = 0.0;
    while i < v.len() {
        s -= v[i];
        i += 1;
    }
    s
}

/// A `loop` that ends by a plain `break` owns its reduction (the KS p-value series of a
/// statistics crate has this form).
#[fprev::scramble]
fn loop_series(v: &[f64]) -> f64 {
    let (mut s, mut i) = (0.0, 0);
    loop {
        s += v[i];
        i += 1;
        if i == v.len() {
            break;
        }
    }
    s
}

/// A `loop` whose `break` carries the running value reads it: left alone.
#[fprev::scramble]
fn loop_value(v: &[f64]) -> f64 {
    let (mut s, mut i) = (0.0, 0);
    loop {
        s += v[i];
        i += 1;
        if i == v.len() {
            break s;
        }
    }
}

#[test]
fn pure_reductions_are_reassociated_in_every_idiom() {
    let v = data(3000);
    let w: Vec<f64> = data(3000).iter().rev().copied().collect();
    let m = mass(&v);
    let sample = Samples(v.clone());
    reassociated("generic IntoIterator", || generic_total(&sample), 3000, m);
    reassociated(
        "generic f32 items",
        || generic_total(v.iter().map(|&x| x as f32)),
        3000,
        m,
    );
    reassociated("binding", || binding_total(&v), 3000, m);
    let dot_mass: f64 = v.iter().zip(&w).map(|(x, y)| (x * y).abs()).sum();
    reassociated("zip", || zip_dot(&v, &w), 3000, dot_mass);
    reassociated("take", || take_total(&v, 2000), 2000, m);
    reassociated("iterator sum", || iter_sum(&v), 3000, 2.0 * m);
    reassociated("fold closure", || fold_closure(&v), 3000, m);
    reassociated("fold Add::add", || fold_add(&v), 3000, m);
    reassociated("fold f64::add", || fold_f64_add(&v), 3000, m);
    let block_mass: f64 = v.iter().map(|x| (x * x * 0.5).abs() + x.abs()).sum();
    reassociated(
        "fold with a block body",
        || fold_block(&v),
        3000,
        block_mass,
    );
    unchanged("fold reading its accumulator", || {
        fold_block_reads_acc(&v).to_bits()
    });
    reassociated("rayon zip", || par_zip_dot(&v, &w), 3000, dot_mass);
    reassociated(
        "c[1] = c[1] + x",
        || {
            let mut c = [0.0, 0.25, 0.0];
            place_assign(&mut c, &v);
            c[1]
        },
        3001,
        m + 0.25,
    );
    reassociated("rayon enumerate", || par_weighted(&v), 3000, 6.0 * m);
    reassociated("while -=", || while_total(&v), 3000, m);
    reassociated("loop with break", || loop_series(&v), 3000, m);
    unchanged("loop breaking with its value", || loop_value(&v).to_bits());
    reassociated(
        "self.acc",
        || {
            let mut c = Centroid { acc: 0.5 };
            c.absorb(&v);
            c.acc
        },
        3001,
        m + 0.5,
    );
    let n = 30;
    let (a, b) = (data(n * n), data(n * n + 7)[7..].to_vec());
    reassociated(
        "matmul place",
        || matmul(&a, &b, n).iter().sum(),
        n * n * n,
        a.iter().map(|x| x.abs()).sum::<f64>() * b.iter().map(|x| x.abs()).sum::<f64>(),
    );
    // Integers through the same generic code are not touched.
    let ints: Vec<i64> = (0..1000).collect();
    unchanged("generic ints", || fold_add(&ints));
}

/// A counter beside a reduction, and inner attributes: the counter is no site (its terms
/// are integers), the attributes stay first in the block.
#[fprev::scramble]
fn counted_total(v: &[f64]) -> (f64, usize) {
    #![allow(unused_mut)]
    let mut s = 0.0;
    let mut negatives = 0;
    for x in v {
        s += x;
        if *x < 0.0 {
            negatives += 1;
        }
    }
    (s, negatives)
}

#[test]
fn integer_counters_are_left_alone_beside_their_reduction() {
    let v = data(3000);
    let negatives = v.iter().filter(|x| **x < 0.0).count();
    reassociated(
        "sum beside a counter",
        || counted_total(&v).0,
        3000,
        mass(&v),
    );
    unchanged("the counter", || counted_total(&v).1);
    assert_eq!(counted_total(&v).1, negatives);
    let sites = fprev::scramble::sites();
    let of = |kind: bool| {
        sites
            .iter()
            .filter(|s| s.label.contains("counted_total#") && s.kind.is_some() == kind)
            .count()
    };
    assert_eq!(of(true), 1, "one reduction site: {sites:#?}");
    assert!(sites.iter().any(|s| s.label.contains("counted_total#loop")
        && s.reason
            .is_some_and(|r| r.starts_with("integer accumulator") && r.contains("`negatives`"))));
}

// ---- Valid code stays valid and behaves as written. ----

#[fprev::scramble]
fn channel_total(rx: std::sync::mpsc::Receiver<f64>) -> f64 {
    let mut s = 0.0;
    for x in rx.iter() {
        s += x;
    }
    s
}

#[test]
fn channels_are_never_collected_before_the_body_runs() {
    let cfg = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .shapes(true)
        .seed(3);
    let total = with_config(&cfg, || {
        let (tx, rx) = std::sync::mpsc::channel();
        let producer = std::thread::spawn(move || {
            for i in 0..100 {
                tx.send(i as f64).expect("receiver alive");
            }
        });
        let t = channel_total(rx);
        producer.join().expect("producer");
        t
    });
    assert_eq!(total, 4950.0);
}

#[fprev::scramble]
fn item_in_loop(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        struct Twice(f64);
        impl Twice {
            fn get(&self) -> f64 {
                self.0 * 2.0
            }
        }
        s += Twice(*x).get();
    }
    s
}

#[fprev::scramble]
fn inherent_sum_receiver(n: CallCounter) -> u32 {
    // A place receiver with an inherent `sum(&self)`: left alone, still usable after.
    let a = n.sum();
    a + n.sum()
}

struct CallCounter(u32);

impl CallCounter {
    fn sum(&self) -> u32 {
        self.0
    }
}

/// A collection whose `IndexMut` grows: the place is evaluated exactly as written.
struct GrowingVec(Vec<f64>);

impl std::ops::Index<usize> for GrowingVec {
    type Output = f64;
    fn index(&self, i: usize) -> &f64 {
        &self.0[i]
    }
}

impl std::ops::IndexMut<usize> for GrowingVec {
    fn index_mut(&mut self, i: usize) -> &mut f64 {
        if i >= self.0.len() {
            self.0.resize(i + 1, 0.0);
        }
        &mut self.0[i]
    }
}

#[fprev::scramble]
fn grow(g: &mut GrowingVec, v: &[f64]) {
    for x in v {
        g[3] += x;
    }
}

#[test]
fn valid_forms_compile_and_behave_as_written() {
    assert_eq!(item_in_loop(&[1.0, 2.0]), 6.0);
    assert_eq!(inherent_sum_receiver(CallCounter(4)), 8);
    let mut g = GrowingVec(Vec::new());
    grow(&mut g, &[1.0, 2.0]);
    assert_eq!(g.0, [0.0, 0.0, 0.0, 3.0]);
    // On, the place is read and written once each around the loop.
    let mut g = GrowingVec(Vec::new());
    let on = ScrambleConfig::off()
        .shuffle(Some(Shuffle::FisherYates))
        .seed(1);
    with_config(&on, || grow(&mut g, &[1.0, 2.0]));
    assert_eq!(g.0, [0.0, 0.0, 0.0, 3.0]);
}

/// On one line on purpose: the block that wraps a reduction loop must not look like a
/// block missing its `else` to clippy (`possible_missing_else`), which CI runs on this
/// file.
#[rustfmt::skip]
#[fprev::scramble]
fn after_one_line_if(x: &[f64], c: bool) -> f64 {
    let mut s = 0.0;
    if c { s = 1.0; } for v in x { s += v; }
    s
}

#[test]
fn reduction_loop_after_a_one_line_if() {
    // Whole numbers: every order gives the same sum.
    assert_eq!(after_one_line_if(&[1.0, 2.0, 4.0], true), 8.0);
    assert_eq!(after_one_line_if(&[1.0, 2.0, 4.0], false), 7.0);
}

#[path = "common/not_iterators.rs"]
mod not_iterators;
use not_iterators::{Consumed, Pairwise};

#[fprev::scramble]
fn temporary_receivers(x: &[f64]) -> (u64, u64) {
    let p = Pairwise(x.to_vec()).sum();
    let c = Consumed(x.to_vec()).sum();
    (p.to_bits(), c.to_bits())
}

#[test]
fn receivers_that_are_not_iterators_keep_their_own_sum() {
    let x: Vec<f64> = (0..37).map(|i| f64::from(i).sin()).collect();
    let own = (
        Pairwise(x.clone()).sum().to_bits(),
        Consumed(x.clone()).sum().to_bits(),
    );
    assert_eq!(temporary_receivers(&x), own);
    unchanged("temporary_receivers", || temporary_receivers(&x));
    // Both `.sum()`s are sites, so the dispatch ran (and handed the receivers back).
    let dispatched = fprev::scramble::sites()
        .iter()
        .filter(|s| s.label.contains("temporary_receivers#"))
        .filter(|s| s.kind == Some(fprev::scramble::SiteKind::IterReduction))
        .count();
    assert_eq!(dispatched, 2);
}
