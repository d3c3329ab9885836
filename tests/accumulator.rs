//! Behaviour of `#[fprev::accumulator]`: counts, non-float sites, bit-identical results.
// `x = x + e` is one of the site forms under test.
#![allow(clippy::assign_op_pattern)]
// Counting and registration are compiled out with the `off` feature.
#![cfg(not(feature = "off"))]

use fprev::chains::{report, AccumulationKind, ChainReport, ChainShape, SiteChains};

/// The site `expr` of the function whose path ends with `function`, or a panic that
/// shows the report.
fn site_of<'a>(r: &'a ChainReport, function: &str, expr: &str) -> &'a SiteChains {
    r.sites
        .iter()
        .find(|s| s.source.function.ends_with(function) && s.source.expr == expr)
        .unwrap_or_else(|| panic!("no site `{expr}` in {function}:\n{r}"))
}

#[fprev::accumulator]
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

fn dot_plain(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[test]
fn sequential_dot() {
    let a: Vec<f64> = (0..1000).map(|i| (i as f64).sin()).collect();
    let b: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.3).cos()).collect();
    assert_eq!(dot(&a, &b).to_bits(), dot_plain(&a, &b).to_bits());
    let r = report();
    let s = r.site("accumulator::dot").unwrap();
    assert_eq!(s.max_chain, 1000);
    assert_eq!(s.source.kind, AccumulationKind::Variable);
    assert_eq!(s.shape, ChainShape::Sequential);
    assert_eq!(s.source.line, 22);
    assert_eq!(s.source.column, 9);
    assert_eq!(s.source.expr, "s += a[i] * b[i]");
    println!("{r}");
}

/// Two lanes, then combined: each lane a chain of n/2, the final add extends one lane.
#[fprev::accumulator]
fn two_lanes(x: &[f32]) -> f32 {
    let (mut a, mut b) = (0.0f32, 0.0f32);
    for pair in x.chunks(2) {
        a += pair[0];
        b = b + pair[1];
    }
    a + b
}

#[test]
fn lanes() {
    let x = vec![1.0f32; 64];
    assert_eq!(two_lanes(&x), 64.0);
    let r = report();
    let lanes: Vec<_> = r
        .sites
        .iter()
        .filter(|s| s.source.function.ends_with("two_lanes"))
        .collect();
    assert_eq!(lanes.len(), 2);
    assert!(lanes.iter().all(|s| s.max_chain == 32));
}

/// Integers, strings and a user type with `+=`: compile and behave as written.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct Meters(f64);
impl std::ops::AddAssign for Meters {
    fn add_assign(&mut self, o: Meters) {
        self.0 += o.0;
    }
}
impl std::ops::Add for Meters {
    type Output = Meters;
    fn add(self, o: Meters) -> Meters {
        Meters(self.0 + o.0)
    }
}

#[fprev::accumulator]
fn non_floats(n: u32) -> (u64, String, Meters, i32) {
    let mut total = 0u64;
    let mut text = String::new();
    let mut m = Meters::default();
    let mut v = [0i32; 3];
    for i in 0..n {
        total += i as u64;
        text += "ab";
        text = text + "c";
        m += Meters(1.5);
        m = m + Meters(0.5);
        v[i as usize % 3] += 1;
    }
    let count: i32 = v.iter().map(|x| x * 2).sum();
    (total, text, m, count)
}

#[test]
fn non_float_sites_behave_as_written() {
    let (t, s, m, c) = non_floats(4);
    assert_eq!(t, 6);
    assert_eq!(s, "abcabcabcabc");
    assert_eq!(m, Meters(8.0));
    assert_eq!(c, 8);
    let r = report();
    assert!(r.site("non_floats").is_none(), "{r}");
}

/// A `Sum` of float items that pulls them with `next()` (not `fold`): the chain is
/// recorded when the iterator runs dry, and once.
struct PullSum(f64);
impl std::iter::Sum<f64> for PullSum {
    fn sum<I: Iterator<Item = f64>>(mut iter: I) -> PullSum {
        let mut t = 0.0;
        for x in iter.by_ref() {
            t += x;
        }
        // Asking again after the end must not record a second (empty) chain.
        assert!(iter.next().is_none());
        PullSum(t)
    }
}

#[fprev::accumulator]
fn pulled(x: &[f64]) -> f64 {
    let t: PullSum = x.iter().map(|v| v * 2.0).sum();
    t.0
}

#[test]
fn sum_through_next() {
    assert_eq!(pulled(&[1.0; 7]), 14.0);
    assert_eq!(pulled(&[1.0; 3]), 6.0);
    let r = report();
    let s = r.site("pulled").unwrap();
    assert_eq!(s.source.kind, AccumulationKind::Iterator);
    assert_eq!((s.max_chain, s.chains, s.adds), (7, 2, 10));
}

/// Closures that declare the same accumulator name beside different ones: each
/// closure's frame keeps its own counters, and a counter a closure captures stays
/// apart from the tuples.
#[fprev::accumulator]
fn same_names(m: &[Vec<f64>]) -> (f64, f64, f64) {
    // `q` is the first accumulator: the second closure's frame holds `q` before `s`,
    // the first closure's holds `s` alone.
    let mut q = 0.0;
    q += 0.5;
    let firsts: f64 = m
        .iter()
        .map(|row| {
            let mut s = 0.0;
            for v in row {
                s += v;
            }
            s
        })
        .fold(0.0, |a, b| a.max(b));
    let both: f64 = m
        .iter()
        .map(|row| {
            let mut q = 0.0;
            let mut s = 0.0;
            for v in row {
                q += 2.0 * v;
                s -= v;
            }
            q + s
        })
        .fold(0.0, |a, b| a.max(b));
    let mut add_q = |v: f64| q += v;
    for row in m {
        add_q(row[0]);
    }
    (firsts, both, q)
}

#[test]
fn same_names_in_two_closures() {
    let m = vec![vec![1.0; 6]; 4];
    assert_eq!(same_names(&m), (6.0, 6.0, 4.5));
    let r = report();
    let by_text = |t: &str| site_of(&r, "same_names", t);
    // `s` of both closures: one site, chains of 6 in each of 8 rows.
    assert_eq!(by_text("s += v").max_chain, 6);
    assert_eq!(by_text("s += v").adds, 48);
    // `q`: the function's (1, then 4 through add_q) and the second closure's (6 per row).
    assert_eq!(by_text("q += 0.5").max_chain, 6);
    assert_eq!(by_text("q += 0.5").adds, 1 + 24 + 4);
}

/// Exits: `?` (the frame merges on drop), a macro that may hide a `return` (likewise), a
/// function without a value, and a `return` in every branch; every chain is merged once
/// whichever way the call leaves.
#[fprev::accumulator]
fn parsed_total(xs: &[&str]) -> Result<f64, std::num::ParseFloatError> {
    let mut s = 0.0;
    for x in xs {
        s += x.parse::<f64>()?;
    }
    Ok(s)
}

macro_rules! bail_if_negative {
    ($v:expr) => {
        if $v < 0.0 {
            return -1.0;
        }
    };
}

#[fprev::accumulator]
fn guarded_total(xs: &[f64]) -> f64 {
    let mut s = 0.0;
    for &x in xs {
        bail_if_negative!(x);
        s += x;
    }
    s
}

#[fprev::accumulator]
fn into_out(xs: &[f64], out: &mut f64) {
    let mut s = 0.0;
    for &x in xs {
        s += x;
    }
    if s < 0.0 {
        return;
    }
    *out = s;
}

#[fprev::accumulator]
#[allow(clippy::needless_return)]
fn branches(xs: &[f64], half: bool) -> f64 {
    let mut s = 0.0;
    for &x in xs {
        s += x;
    }
    if half {
        return s / 2.0;
    } else {
        return s;
    }
}

#[test]
fn every_exit_merges() {
    assert_eq!(parsed_total(&["1", "2", "3"]), Ok(6.0));
    assert!(parsed_total(&["1", "2", "x", "4"]).is_err());
    assert_eq!(guarded_total(&[1.0; 5]), 5.0);
    assert_eq!(guarded_total(&[1.0, 1.0, -1.0, 1.0]), -1.0);
    let mut out = 0.0;
    into_out(&[1.0; 7], &mut out);
    assert_eq!(out, 7.0);
    // `return;` merges too: its chain of 2 is counted, `out` is left as it was.
    into_out(&[-1.0; 2], &mut out);
    assert_eq!(out, 7.0);
    assert_eq!(branches(&[1.0; 4], true), 2.0);
    assert_eq!(branches(&[1.0; 3], false), 3.0);
    let r = report();
    let site = |f: &str| {
        r.site(f)
            .unwrap_or_else(|| panic!("no site in {f}: {r}"))
            .clone()
    };
    // The `?` exit merged the two additions before it.
    let p = site("parsed_total");
    assert_eq!((p.max_chain, p.chains, p.adds), (3, 2, 5));
    let g = site("guarded_total");
    assert_eq!((g.max_chain, g.chains, g.adds), (5, 2, 7));
    let o = site("into_out");
    assert_eq!((o.max_chain, o.chains, o.adds), (7, 2, 9));
    let b = site("branches");
    assert_eq!((b.max_chain, b.chains, b.adds), (4, 2, 7));
}

/// A user type that is not `Copy`, added into a variable and into a place: the term is
/// moved by the addition, so it is looked at before (not counted: not a float).
#[derive(Clone, Debug, PartialEq)]
struct Poly(Vec<f64>);
impl std::ops::AddAssign for Poly {
    fn add_assign(&mut self, o: Poly) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}
impl std::ops::SubAssign for Poly {
    fn sub_assign(&mut self, o: Poly) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a -= b;
        }
    }
}

#[fprev::accumulator]
fn poly_sums(ps: &[Poly]) -> (Poly, Vec<Poly>) {
    let mut s = Poly(vec![0.0; 2]);
    let mut out = vec![Poly(vec![0.0; 2])];
    for p in ps {
        s += p.clone();
        out[0] -= p.clone();
    }
    (s, out)
}

#[test]
fn terms_that_are_not_copy() {
    let (s, out) = poly_sums(&[Poly(vec![1.0, 2.0]), Poly(vec![3.0, 4.0])]);
    assert_eq!(s, Poly(vec![4.0, 6.0]));
    assert_eq!(out, vec![Poly(vec![-4.0, -6.0])]);
    let r = report();
    assert!(r.site("poly_sums").is_none(), "{r}");
}

/// A frame merged on drop (the function uses `?`) whose updates read other counters'
/// chains, in the function and in a closure that captures its accumulator.
#[fprev::accumulator]
fn chained(xs: &[&str]) -> Result<f64, std::num::ParseFloatError> {
    let mut total = 0.0;
    let mut s = 0.0;
    for x in xs {
        s += x.parse::<f64>()?;
    }
    total += s;
    let mut double_then_add = |v: f64| {
        total = total + total;
        total += v;
    };
    double_then_add(1.0);
    Ok(total)
}

#[test]
fn chains_read_across_counters() {
    assert_eq!(chained(&["1", "2"]), Ok(7.0));
    let r = report();
    let t = site_of(&r, "chained", "total += s");
    // 1 + s's 2 = 3; `total + total` by Defour's rule 3 + 3 + 1 = 7; `+= v` 8.
    assert_eq!(t.max_chain, 8);
}

/// Written on one line on purpose: the rewritten `s += v` must not look like a block
/// missing its `else` to clippy (`possible_missing_else`), which CI runs on this file.
#[rustfmt::skip]
#[fprev::accumulator]
fn skip_nans(x: &[f64]) -> Option<f64> {
    let mut s = 0.0;
    for v in x { if v.is_nan() { return None; } s += v; }
    Some(s)
}

#[test]
fn one_line_if_then_update() {
    assert_eq!(skip_nans(&[1.0, 2.0]), Some(3.0));
    assert_eq!(skip_nans(&[1.0, f64::NAN]), None);
    let r = report();
    let s = site_of(&r, "skip_nans", "s += v");
    assert_eq!((s.max_chain, s.chains, s.adds), (2, 2, 3));
}

/// Generic code counts its float instances only.
#[fprev::accumulator]
fn generic_sum<T: Copy + Default + std::ops::AddAssign>(xs: &[T]) -> T {
    let mut s = T::default();
    for &x in xs {
        s += x;
    }
    s
}

#[test]
fn generic() {
    assert_eq!(generic_sum(&[1i64, 2, 3]), 6);
    assert_eq!(generic_sum(&[1.0f32; 10]), 10.0);
    let r = report();
    assert_eq!(r.site("generic_sum").unwrap().max_chain, 10);
    assert_eq!(r.site("generic_sum").unwrap().adds, 10);
}

/// Iterator sums and folds, closures, nested loops, early returns.
#[fprev::accumulator]
fn rows(m: &[Vec<f64>], stop_at: usize) -> Vec<f64> {
    let mut out = Vec::new();
    let mut grand = 0.0;
    let mut add = |v: f64| grand += v;
    for (r, row) in m.iter().enumerate() {
        if r == stop_at {
            return out;
        }
        let s: f64 = row.iter().map(|x| x * 1.0).sum();
        let f = row.iter().fold(0.0, |a, b| a + b);
        add(s + f);
        let mut inner = 0.0;
        for x in row {
            inner -= x;
        }
        out.push(inner);
    }
    out
}

#[test]
fn iterators_closures_nested_early_return() {
    let m = vec![vec![1.0; 10]; 5];
    assert_eq!(rows(&m, 3), vec![-10.0; 3]);
    let r = report();
    let sites: Vec<_> = r
        .sites
        .iter()
        .filter(|s| s.source.function.ends_with("rows"))
        .collect();
    let by_text = |t: &str| sites.iter().find(|s| s.source.expr.starts_with(t)).unwrap();
    assert_eq!(
        by_text("row.iter().map").source.kind,
        AccumulationKind::Iterator
    );
    assert_eq!(by_text("row.iter().map").max_chain, 10);
    assert_eq!(by_text("row.iter().fold").max_chain, 10);
    assert_eq!(by_text("inner -= x").max_chain, 10);
    assert_eq!(by_text("inner -= x").chains, 3);
    // Inside the closure: one chain across the three calls (s + f counts 1 more each).
    assert_eq!(by_text("grand += v").max_chain, 3);
}

/// A matrix product into indexed places: runs of k additions per output.
#[fprev::accumulator]
fn gemm(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
            }
        }
    }
    c
}

#[test]
fn places() {
    let c = gemm(3, 4, 5, &[1.0; 15], &[1.0; 20]);
    assert_eq!(c, vec![5.0; 12]);
    let r = report();
    let s = r.site("accumulator::gemm").unwrap();
    assert_eq!(s.source.kind, AccumulationKind::Place);
    assert_eq!((s.max_chain, s.chains, s.adds), (5, 12, 60));
    assert_eq!(s.shape, ChainShape::Blocked);
}

/// `#[acc]`: Defour's rule through assignments that are not `s = s + e`.
#[fprev::accumulator]
fn decayed(x: &[f64]) -> f64 {
    #[acc]
    let mut s = 0.0;
    let mut t = 0.0;
    for &v in x {
        s = (s + v) + t;
        t = 0.5 * v;
    }
    s
}

#[test]
fn acc_marker() {
    assert_eq!(decayed(&[1.0, 2.0, 4.0]), 1.0 + 2.0 + 0.5 + 4.0 + 1.0);
    let s = report();
    let s = s.site("decayed").unwrap();
    assert_eq!(s.max_chain, 6);
}

/// Closures that must stay `Fn + Sync` (rayon) count in a frame of their own.
#[fprev::accumulator]
fn par_rows(m: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>) {
    use rayon::prelude::*;
    let sums = m
        .par_iter()
        .map(|row| {
            let mut s = 0.0;
            for v in row {
                s += v;
            }
            s
        })
        .collect();
    let mut out = vec![0.0; m.len()];
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        for v in &m[i] {
            *o += v;
        }
    });
    (sums, out)
}

#[test]
fn parallel_closures() {
    let m = vec![vec![0.5; 40]; 6];
    let (sums, out) = par_rows(&m);
    assert_eq!(sums, vec![20.0; 6]);
    assert_eq!(out, vec![20.0; 6]);
    let r = report();
    let sites: Vec<_> = r
        .sites
        .iter()
        .filter(|s| s.source.function.ends_with("par_rows"))
        .collect();
    assert_eq!(sites.len(), 2, "{r}");
    for s in sites {
        assert_eq!((s.max_chain, s.adds, s.executions), (40, 240, 6), "{r}");
    }
}

/// An in-place pairwise reduction: every address takes one addition per level.
#[fprev::accumulator]
fn pairwise_in_place(x: &mut [f32]) -> f32 {
    let mut stride = 1;
    while stride < x.len() {
        let mut i = 0;
        while i + stride < x.len() {
            x[i] += x[i + stride];
            i += 2 * stride;
        }
        stride *= 2;
    }
    x[0]
}

#[test]
fn tree_like() {
    let mut x = vec![1.0f32; 256];
    assert_eq!(pairwise_in_place(&mut x), 256.0);
    let r = report();
    let s = r.site("pairwise_in_place").unwrap();
    assert_eq!(s.adds, 255);
    assert_eq!(s.shape, ChainShape::TreeLike, "{r}");
}

/// Methods: `self.field += e` is a place site.
struct Running {
    sum: f64,
}

impl Running {
    #[fprev::accumulator]
    fn add_all(&mut self, x: &[f64]) -> &mut Self {
        for v in x {
            self.sum += v;
        }
        self
    }
}

#[test]
fn method_with_self() {
    let mut r = Running { sum: 0.0 };
    r.add_all(&[1.0; 12]).add_all(&[2.0; 3]);
    assert_eq!(r.sum, 18.0);
    let rep = report();
    let s = rep.site("add_all").unwrap();
    assert_eq!(
        (s.source.kind, s.max_chain, s.executions),
        (AccumulationKind::Place, 12, 2)
    );
}

// Valid code the rewrite once rejected or changed (issue 14, item 9).

#[fprev::accumulator]
#[allow(unused_mut)]
fn cfg_let(x: &[f64]) -> f64 {
    #[cfg(any())]
    let mut s = 0.0;
    #[cfg(not(any()))]
    let mut s = 1.0;
    for v in x {
        s += v;
    }
    s
}

#[test]
fn cfg_on_an_accumulator_let() {
    assert_eq!(cfg_let(&[1.0, 2.0]), 4.0);
}

#[fprev::accumulator]
fn constant_contexts(x: &[f64]) -> f64 {
    const N: usize = 2;
    let lanes = [0.0; {
        let mut n = 0;
        n += N;
        n
    }];
    let k = const {
        let mut k = 1usize;
        k += 1;
        k
    };
    let mut s = lanes[0] + lanes[1];
    for v in x.iter().take(k) {
        s += v;
    }
    s
}

#[test]
fn no_counting_in_constant_contexts() {
    assert_eq!(constant_contexts(&[1.0, 2.0, 4.0]), 3.0);
}

/// A non-`Copy` value with an inherent `sum(&self)`: `(n).sum()` borrows it.
struct Bag(Vec<f64>);

impl Bag {
    fn sum(&self) -> f64 {
        self.0.iter().copied().sum()
    }
}

#[fprev::accumulator]
#[allow(unused_parens)]
fn bag_twice(n: Bag) -> f64 {
    let a = (n).sum();
    let b = n.sum();
    a + b
}

#[test]
fn inherent_sum_on_a_parenthesised_place() {
    assert_eq!(bag_twice(Bag(vec![1.0, 2.0])), 6.0);
}

/// A collection whose `IndexMut` grows it (and whose `Index` panics past the end): the
/// plain `c[i] += e` calls `index_mut` once and never `index`.
struct GrowingOnIndex(Vec<f64>, std::cell::Cell<usize>);

impl std::ops::Index<usize> for GrowingOnIndex {
    type Output = f64;
    fn index(&self, i: usize) -> &f64 {
        self.1.set(self.1.get() + 1);
        &self.0[i]
    }
}

impl std::ops::IndexMut<usize> for GrowingOnIndex {
    fn index_mut(&mut self, i: usize) -> &mut f64 {
        if i >= self.0.len() {
            self.0.resize(i + 1, 0.0);
        }
        &mut self.0[i]
    }
}

#[fprev::accumulator]
fn grow(c: &mut GrowingOnIndex, x: &[f64]) {
    for (i, v) in x.iter().enumerate() {
        c[i] += v;
        c[i] -= 0.5;
        c[0] += c[i];
    }
}

#[test]
fn place_sites_go_through_index_mut_once() {
    let mut c = GrowingOnIndex(Vec::new(), std::cell::Cell::new(0));
    grow(&mut c, &[1.0, 2.0, 3.0]);
    let mut plain = GrowingOnIndex(Vec::new(), std::cell::Cell::new(0));
    for (i, v) in [1.0, 2.0, 3.0].iter().enumerate() {
        plain[i] += v;
        plain[i] -= 0.5;
        plain[0] += plain[i];
    }
    assert_eq!(c.0, plain.0);
    // `Index::index` only where the code reads (`c[i]` on the right): 3 times.
    assert_eq!((c.1.get(), plain.1.get()), (3, 3));
    let rep = report();
    assert!(rep.site("grow").is_some(), "{rep}");
}

// The report ranks what matters (issue 14, item 7).

#[fprev::accumulator]
fn ranked(x: &[f64], out: &mut [f64]) -> (f64, f64, f64, f64) {
    let mut count = 0.0;
    let mut s = 0.0;
    let mut running = 0.0;
    for (i, v) in x.iter().enumerate() {
        count += 1.0;
        s += v;
        running += v;
        out[i] = running;
    }
    let folded = x.iter().fold(0.0, std::ops::Add::add);
    (count, s, running, folded)
}

/// Whole numbers that pass 2^53 on the way: no exact counter, although every term and
/// every value the additions start from is whole (the chain's initial value counts).
#[fprev::accumulator]
fn near_limit(n: usize) -> (f64, f64) {
    let mut high = 9007199254740990.0; // 2^53 - 2
    let mut low = 0.0;
    for _ in 0..n {
        high += 1.0;
        low += 1.0;
    }
    (high, low)
}

#[test]
fn a_counter_near_two_to_the_53_is_not_exact() {
    use fprev::chains::Order;
    // 2^53 + 1 is not a float: the last two additions round back to 2^53.
    assert_eq!(near_limit(4), (9007199254740992.0, 4.0));
    let rep = report();
    let order_of = |text: &str| site_of(&rep, "near_limit", text).order;
    assert_eq!(order_of("high += 1.0"), Order::Reorderable);
    assert_eq!(order_of("low += 1.0"), Order::ExactInteger);
}

#[test]
fn counters_and_running_values_rank_below_reductions() {
    use fprev::chains::Order;
    let x: Vec<f64> = (0..64).map(|i| 0.1 * i as f64).collect();
    let mut out = vec![0.0; 64];
    let (count, s, running, folded) = ranked(&x, &mut out);
    assert_eq!((count, s.to_bits()), (64.0, running.to_bits()));
    assert!((folded - s).abs() < 1e-9);
    let rep = report();
    let order_of = |text: &str| site_of(&rep, "ranked", text).order;
    assert_eq!(order_of("count += 1.0"), Order::ExactInteger);
    assert_eq!(order_of("s += v"), Order::Reorderable);
    assert_eq!(order_of("running += v"), Order::RunningValue);
    assert_eq!(
        order_of("x.iter().fold(0.0, std::ops::Add::add)"),
        Order::Reorderable
    );
    // Reorderable sites come first, whatever their chain lengths.
    let first_other = rep.sites.iter().position(|s| s.order != Order::Reorderable);
    assert!(rep.sites[first_other.unwrap()..]
        .iter()
        .all(|s| s.order != Order::Reorderable));
    // One line per site.
    let text = rep.to_string();
    assert_eq!(text.lines().count(), rep.sites.len() + 2, "{text}");
    assert!(text.contains("`running += v` (variable) [running value: order is meaning]"));
}

/// The first `let` of an accumulator in the function's own block costs no call (its
/// counter is still empty); a `let` after the counter was used, at the top or deeper,
/// still ends the running chain.
#[fprev::accumulator]
fn lets_that_restart(x: &[f64], mut s: f64) -> f64 {
    // The parameter's chain: 2 additions.
    s += x[0];
    s += x[1];
    // Ends it, starts one of x.len() additions.
    let mut s = 0.0;
    for v in x {
        s += v;
    }
    let first = s;
    // A fresh name at the top, first counted here: no call, a chain of 3.
    let mut t = 0.0;
    for v in &x[..3] {
        t += v;
    }
    // A restart in a loop body, each time around: chains of 1.
    for v in x {
        let mut u = 0.0;
        u += v;
        t -= u * 0.0;
    }
    first + s + t
}

#[test]
fn a_let_restarts_its_chain_unless_nothing_counted_it_yet() {
    let x: Vec<f64> = (1..=8).map(f64::from).collect();
    assert_eq!(lets_that_restart(&x, 0.5), 36.0 + 36.0 + 6.0);
    let r = report();
    let s = site_of(&r, "lets_that_restart", "s += x[0]");
    // Both `s` updates share one variable site: the parameter's chain of 2, then 8.
    assert_eq!((s.max_chain, s.adds), (8, 10));
    assert_eq!(s.chains, 2);
    let t = site_of(&r, "lets_that_restart", "t += v");
    // 3 additions, then 8 subtractions (a product brings no chain).
    assert_eq!((t.max_chain, t.chains), (11, 1));
    let u = site_of(&r, "lets_that_restart", "u += v");
    assert_eq!((u.max_chain, u.chains), (1, 8));
}

#[path = "common/not_iterators.rs"]
mod not_iterators;
use not_iterators::{Consumed, Pairwise};

#[fprev::accumulator]
fn receivers(x: &[f64]) -> (f64, f64, f64) {
    // Not iterators: their own `sum` runs, untouched and uncounted.
    let p = Pairwise(x.to_vec()).sum();
    let c = Consumed(x.to_vec()).sum();
    // An iterator: counted.
    let s: f64 = (&Pairwise(x.to_vec())).into_iter().sum();
    (p, c, s)
}

fn plain_iterator_sum<I: Iterator<Item = f64>>(it: I) -> f64 {
    it.sum()
}

#[fprev::accumulator]
fn generic_receiver<I: Iterator<Item = f64>>(it: I) -> f64 {
    // An iterator by its bound only: counted too.
    it.map(|v| v * 2.0).sum()
}

#[test]
fn sum_receivers_dispatch_by_what_they_are() {
    let x: Vec<f64> = (0..37).map(|i| f64::from(i).sin()).collect();
    let plain = (
        Pairwise(x.clone()).sum(),
        Consumed(x.clone()).sum(),
        x.iter().sum::<f64>(),
    );
    let (p, c, s) = receivers(&x);
    assert_eq!(
        (p.to_bits(), c.to_bits(), s.to_bits()),
        (plain.0.to_bits(), plain.1.to_bits(), plain.2.to_bits())
    );
    // The three orders differ on these terms, so the equalities above say which ran.
    assert_ne!(plain.0.to_bits(), plain.2.to_bits());
    assert_ne!(plain.1.to_bits(), plain.2.to_bits());
    let r = report();
    let counted: Vec<&SiteChains> = r
        .sites
        .iter()
        .filter(|s| {
            s.source.function.ends_with("receivers") && s.source.kind == AccumulationKind::Iterator
        })
        .filter(|s| s.adds > 0)
        .collect();
    assert_eq!(counted.len(), 1, "{r}");
    assert_eq!(counted[0].max_chain, 37);
    let g = generic_receiver(x.iter().copied());
    assert_eq!(
        g.to_bits(),
        plain_iterator_sum(x.iter().map(|v| v * 2.0)).to_bits()
    );
    let r = report();
    let s = site_of(&r, "generic_receiver", "it.map(|v| v * 2.0).sum()");
    assert_eq!(s.max_chain, 37);
}

/// A vector declared again in every round of an outer loop: each element gets one
/// subtraction per round from a fresh value (its chain is 1), although the allocator
/// hands the new vector the old one's address.
#[fprev::accumulator]
fn redeclared(w: &[f64], y: &[f64], rounds: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..rounds {
        let mut z = w.to_vec();
        for i in 0..z.len() {
            z[i] -= y[i];
        }
        total += z[0];
    }
    total
}

/// Two sites adding into one place in one loop build one value: each site's chain runs
/// through the other's additions.
#[fprev::accumulator]
fn two_sites_one_place(a: &[f64], b: &[f64]) -> [f64; 2] {
    let mut g = [0.0; 2];
    for k in 0..a.len() {
        g[1] += a[k];
        g[1] = g[1] + b[k];
    }
    g
}

/// A place scaled between additions: the scaling ends the chain (Defour's rule).
#[fprev::accumulator]
fn scaled_between(x: &[f64]) -> f64 {
    let mut acc = [0.0f64; 1];
    for (k, v) in x.iter().enumerate() {
        acc[0] += v;
        if k % 4 == 3 {
            acc[0] *= 0.5;
        }
    }
    acc[0]
}

#[test]
fn a_place_set_by_other_code_starts_a_new_chain() {
    let w: Vec<f64> = (0..8).map(|i| 1.5 + i as f64).collect();
    let y: Vec<f64> = (0..8).map(|i| 0.25 * i as f64 + 0.125).collect();
    assert_eq!(redeclared(&w, &y, 50), 50.0 * (1.5 - 0.125));
    let x: Vec<f64> = (0..40).map(|i| i as f64 * 0.1).collect();
    let g = two_sites_one_place(&x, &x);
    assert_eq!(g[1], x.iter().map(|v| v + v).fold(0.0, |a, b| a + b));
    scaled_between(&x);
    let r = report();
    let z = site_of(&r, "redeclared", "z[i] -= y[i]");
    assert_eq!((z.max_chain, z.adds), (1, 400), "{r}");
    let first = site_of(&r, "two_sites_one_place", "g[1] += a[k]");
    let second = site_of(&r, "two_sites_one_place", "g[1] = g[1] + b[k]");
    assert_eq!((first.max_chain, second.max_chain), (40, 40), "{r}");
    let scaled = site_of(&r, "scaled_between", "acc[0] += v");
    assert_eq!((scaled.max_chain, scaled.adds), (4, 40), "{r}");
}

/// One body, both attributes (a macro around the whole function: sites inside a macro
/// invocation are not rewritten): an SMO-style gradient update (the loop reads `g[i]`
/// besides adding to `g[p]` and through `iter_mut`), a plain reduction and two lanes.
macro_rules! smo {
    ($attr:meta, $name:ident) => {
        #[$attr]
        fn $name(g: &mut [f64], x: &[f64], d: f64) -> f64 {
            let n = g.len();
            let mut lanes = [0.0f64; 2];
            let mut s = 0.0;
            for i in 0..n {
                for (j, g_j) in g.iter_mut().enumerate() {
                    *g_j -= d * x[(i + j) % n];
                }
                g[i % n] -= d;
                s += x[i];
                lanes[0] += x[i];
                lanes[1] += g[i];
            }
            s + lanes[0] + lanes[1]
        }
    };
}
smo!(fprev::accumulator, smo_counted);
smo!(fprev::scramble, smo_scrambled);

#[test]
fn both_attributes_agree_on_what_carries_its_order() {
    use fprev::chains::Order;
    let x: Vec<f64> = (0..16).map(|i| 0.5 + i as f64).collect();
    let (mut g1, mut g2) = (vec![1.0; 16], vec![1.0; 16]);
    assert_eq!(
        smo_counted(&mut g1, &x, 0.25).to_bits(),
        smo_scrambled(&mut g2, &x, 0.25).to_bits()
    );
    let rep = report();
    let order_of = |text: &str| site_of(&rep, "smo_counted", text).order;
    assert_eq!(order_of("g[i % n] -= d"), Order::RunningValue, "{rep}");
    assert_eq!(order_of("s += x[i]"), Order::Reorderable, "{rep}");
    assert_eq!(order_of("lanes[0] += x[i]"), Order::Reorderable, "{rep}");
    // #[scramble] leaves the same update alone for the same reason, and owns `s`.
    let sites = fprev::scramble::sites();
    let reasons: Vec<&str> = sites
        .iter()
        .filter(|s| s.kind.is_none() && s.label.contains("smo_scrambled#"))
        .filter_map(|s| s.reason)
        .collect();
    assert!(
        reasons.contains(&"order-carrying: reads `g` besides adding to `g[i%n]`"),
        "{reasons:?}"
    );
    // The two lanes are elements of one array: one keyed reduction (a reduction per
    // element), no longer left alone as "several places".
    assert!(
        !reasons.iter().any(|r| r.starts_with("several places")),
        "{reasons:?}"
    );
    let reductions = sites
        .iter()
        .filter(|s| s.kind.is_some() && s.label.contains("smo_scrambled#"))
        .count();
    assert_eq!(reductions, 2, "`s` and the lanes are reassociated");
}

/// Column sums over 40 interleaved places: more than a place site tracks at once.
#[fprev::accumulator]
fn wide_column_sums(x: &[f64], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    for (k, v) in x.iter().enumerate() {
        acc[k % p] += v;
    }
    acc
}

/// Eight interleaved places: tracked, each its own chain.
#[fprev::accumulator]
fn narrow_column_sums(x: &[f64], p: usize) -> Vec<f64> {
    let mut acc = vec![0.0; p];
    for (k, v) in x.iter().enumerate() {
        acc[k % p] += v;
    }
    acc
}

#[test]
fn more_interleaved_places_than_tracked_say_that_tracking_overflowed() {
    let x: Vec<f64> = (0..4000).map(|i| 0.5 + (i % 7) as f64).collect();
    wide_column_sums(&x, 40);
    narrow_column_sums(&x, 8);
    let r = report();
    let wide = site_of(&r, "wide_column_sums", "acc[k % p] += v");
    assert!(wide.evicted > 0, "{r}");
    assert!(
        r.to_string().contains("tracking overflowed: ")
            && r.to_string()
                .contains("cut by more than 16 interleaved places"),
        "{r}"
    );
    let narrow = site_of(&r, "narrow_column_sums", "acc[k % p] += v");
    assert_eq!((narrow.evicted, narrow.max_chain), (0, 500), "{r}");
}

/// A tuple fold: independent sums carried in one accumulator, and a count.
#[fprev::accumulator]
fn sums_and_count(x: &[[f64; 2]]) -> (f64, f64, usize) {
    x.iter()
        .fold((0.0, 0.0, 0), |(a, b, n), r| (a + r[0], b + r[1], n + 1))
}

/// A fold over points whose accumulator is the float (the items are not).
#[fprev::accumulator]
fn first_coordinates(x: &[[f64; 2]]) -> f64 {
    x.iter().fold(0.0, |a, r| a + r[0])
}

/// A tuple fold of integers only, and one whose accumulators are read (smoothing).
#[fprev::accumulator]
fn not_float_sums(x: &[[f64; 2]]) -> ((usize, usize), (f64, f64)) {
    let counts = x
        .iter()
        .fold((0, 0), |(a, b), r| (a + 1, b + (r[0] > 0.0) as usize));
    let smoothed = x
        .iter()
        .fold((0.0, 0.0), |(a, b), r| (0.5 * a + r[0], 0.5 * b + r[1]));
    (counts, smoothed)
}

#[test]
fn tuple_folds_are_chains_of_their_items() {
    let x: Vec<[f64; 2]> = (0..300)
        .map(|i| [i as f64 * 0.1, 1.0 / (i + 1) as f64])
        .collect();
    let (a, b, n) = sums_and_count(&x);
    let plain = x.iter().fold((0.0, 0.0), |(a, b), r| (a + r[0], b + r[1]));
    assert_eq!(
        (a.to_bits(), b.to_bits(), n),
        (plain.0.to_bits(), plain.1.to_bits(), 300)
    );
    assert_eq!(first_coordinates(&x).to_bits(), plain.0.to_bits());
    let _ = not_float_sums(&x);
    let r = report();
    let tuple = site_of(
        &r,
        "sums_and_count",
        "x.iter().fold((0.0, 0.0, 0), |(a, b, n), r| (a + r[0], b + r[1], n + 1))",
    );
    assert_eq!(tuple.source.kind, AccumulationKind::Iterator);
    assert_eq!(tuple.order, fprev::chains::Order::Reorderable, "{r}");
    assert_eq!((tuple.max_chain, tuple.chains), (300, 1), "{r}");
    let points = site_of(
        &r,
        "first_coordinates",
        "x.iter().fold(0.0, |a, r| a + r[0])",
    );
    assert_eq!(points.max_chain, 300, "{r}");
    assert!(
        !r.sites
            .iter()
            .any(|s| s.source.function.ends_with("not_float_sums")),
        "an integer tuple fold and a smoothing are no float chains: {r}"
    );
}

/// Accumulation through a rebuilt vector: a weighted sum of rows, one chain per element.
#[fprev::accumulator]
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

/// The same, started over for each block of rows: each block its own chain.
#[fprev::accumulator]
fn block_means(x: &[Vec<f64>], block: usize) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for rows in x.chunks(block) {
        let mut mean = vec![0.0; x[0].len()];
        for row in rows {
            mean = mean.iter().zip(row.iter()).map(|(s, e)| *s + e).collect();
        }
        out.push(mean);
    }
    out
}

/// A vector of integers rebuilt the same way: no float chain.
#[fprev::accumulator]
fn rebuilt_counts(x: &[Vec<u32>]) -> Vec<u32> {
    let mut c = vec![0; x[0].len()];
    for row in x {
        c = row.iter().zip(c.iter()).map(|(&e, &s)| e + s).collect();
    }
    c
}

#[test]
fn rebuilt_vectors_are_chains_of_their_rebuilds() {
    let x: Vec<Vec<f64>> = (0..40)
        .map(|i| (0..3).map(|j| (i * 3 + j) as f64 * 0.37).collect())
        .collect();
    let w: Vec<f64> = (0..40).map(|i| 1.0 / (i + 1) as f64).collect();
    let mut plain = vec![0.0; 3];
    for (row, &wi) in x.iter().zip(&w) {
        plain = row
            .iter()
            .zip(plain.iter())
            .map(|(&e, &s)| e * wi + s)
            .collect();
    }
    assert_eq!(weighted_rows(&x, &w), plain);
    assert_eq!(block_means(&x, 16).len(), 3);
    let counts: Vec<Vec<u32>> = (0..10).map(|i| vec![i, 1]).collect();
    assert_eq!(rebuilt_counts(&counts), vec![45, 10]);
    let r = report();
    let rows = site_of(
        &r,
        "weighted_rows",
        "mean = row.iter().zip(mean.iter()).map(|(&e, &s)| e * wi + s).collect()",
    );
    assert_eq!(rows.source.kind, AccumulationKind::Variable);
    assert_eq!((rows.max_chain, rows.chains), (40, 1), "{r}");
    // A reduction `#[scramble]` reorders, not a running value.
    assert_eq!(rows.order, fprev::chains::Order::Reorderable, "{r}");
    let blocks = site_of(
        &r,
        "block_means",
        "mean = mean.iter().zip(row.iter()).map(|(s, e)| *s + e).collect()",
    );
    // 16, 16 and 8 rows: a `let` in the loop starts each block over.
    assert_eq!((blocks.max_chain, blocks.chains), (16, 3), "{r}");
    assert!(
        !r.sites
            .iter()
            .any(|s| s.source.function.ends_with("rebuilt_counts")),
        "{r}"
    );
}

/// A model whose mean is a field rebuilt from itself for every point (a running
/// weighted mean, as an online k-means centroid is written).
struct OnlineMean {
    mean: Vec<f64>,
}

impl OnlineMean {
    #[fprev::accumulator]
    fn absorb(&mut self, x: &[Vec<f64>], w: f64) {
        for row in x {
            self.mean = row
                .iter()
                .zip(self.mean.iter())
                .map(|(&e, &s)| e * w + s)
                .collect();
        }
    }

    /// The same, each running mean kept: the order is the meaning.
    #[fprev::accumulator]
    fn trace(&mut self, x: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let mut out = Vec::new();
        for row in x {
            self.mean = row
                .iter()
                .zip(self.mean.iter())
                .map(|(&e, &s)| e + s)
                .collect();
            out.push(self.mean.clone());
        }
        out
    }
}

#[test]
fn a_vector_rebuilt_in_a_field_is_a_chain_of_its_rebuilds() {
    let x: Vec<Vec<f64>> = (0..25)
        .map(|i| (0..2).map(|j| (i * 2 + j) as f64 * 0.61).collect())
        .collect();
    let mut plain = vec![0.0; 2];
    for row in &x {
        plain = row
            .iter()
            .zip(plain.iter())
            .map(|(&e, &s)| e * 0.5 + s)
            .collect();
    }
    let mut c = OnlineMean { mean: vec![0.0; 2] };
    c.absorb(&x, 0.5);
    assert_eq!(c.mean, plain);
    let r = report();
    let site = site_of(
        &r,
        "absorb",
        "self.mean = row.iter().zip(self.mean.iter()).map(|(&e, &s)| e * w + s).collect()",
    );
    assert_eq!(site.source.kind, AccumulationKind::Place);
    assert_eq!((site.max_chain, site.chains), (25, 1), "{r}");
    // What `#[scramble]` reorders: a keyed reduction, not a running value.
    assert_eq!(site.order, fprev::chains::Order::Reorderable, "{r}");
    assert_eq!(c.trace(&x[..3]).len(), 3);
    let r = report();
    let kept = site_of(
        &r,
        "trace",
        "self.mean = row.iter().zip(self.mean.iter()).map(|(&e, &s)| e + s).collect()",
    );
    assert_eq!(kept.order, fprev::chains::Order::RunningValue, "{r}");
}
