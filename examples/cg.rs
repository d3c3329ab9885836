//! Reproducible conjugate gradient: the same solver, run under different thread counts,
//! chunk sizes and reduction orders, with plain `f64` reductions and with exact ones.
//!
//! Plain parallel dot products and SpMV row sums round differently depending on how the
//! work was split, so the residual histories and even the iteration counts drift apart.
//! With `fprev::exact` dot products and row sums every run produces the same bits
//! (Mukunoki, Ozaki, Ogita and Iakymchuk make the same point with the Ozaki scheme).
//!
//! Three arithmetics: plain `f64`; exact accumulators fed one product at a time; and the
//! exact kernels (`exact::par_dot` for the dot products, `Accumulator::add_dot` on each
//! sparse row). A second part solves a dense system with several right-hand sides by
//! block CG, every reduction a matrix product: plain (split over the inner dimension as a
//! parallel BLAS does) or `exact::gemm`. The exact runs are checked bit-identical on rayon
//! pools of 1 to 8 threads; the example fails if they are not.
//!
//! `cargo run --release --example cg` prints the tables and writes
//! `fprev-out/cg_residuals.svg` (copied to `docs/`): per problem, the plain and the exact
//! runs' residual histories and, in a third panel, how far each plain run's residual
//! drifts from the 1-thread run's, where the plain runs fan out and the exact ones stay 0.

#[path = "../benches/common/exact_solvers.rs"]
mod solvers;

use solvers::Sparse;

use fprev::exact::{self, Accumulator};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::fmt::Write as _;

impl Sparse {
    /// The same matrix with each row's entries stored in a shuffled order.
    fn shuffled_rows(&self, rng: &mut ChaCha8Rng) -> Sparse {
        let mut cols = self.cols.clone();
        let mut vals = self.vals.clone();
        for r in 0..self.n {
            let (a, b) = (self.row_start[r], self.row_start[r + 1]);
            for i in (a + 1..b).rev() {
                let j = rng.random_range(a..=i);
                cols.swap(i, j);
                vals.swap(i, j);
            }
        }
        Sparse {
            n: self.n,
            row_start: self.row_start.clone(),
            cols,
            vals,
        }
    }

    fn row(&self, r: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let span = self.row_start[r]..self.row_start[r + 1];
        self.cols[span.clone()]
            .iter()
            .copied()
            .zip(self.vals[span].iter().copied())
    }
}

/// How one run splits and orders its reductions.
struct Schedule {
    threads: usize,
    chunk: usize,
    /// Dot products visit the indices in this order (None: natural order).
    order: Option<Vec<usize>>,
    /// Row entries shuffled with this seed (None: natural order).
    row_seed: Option<u64>,
}

impl Schedule {
    fn label(&self) -> String {
        format!(
            "{:>2} threads, chunk {:>5}, {}, {}",
            self.threads,
            self.chunk,
            if self.order.is_some() {
                "permuted dots"
            } else {
                "natural dots "
            },
            if self.row_seed.is_some() {
                "shuffled rows"
            } else {
                "natural rows "
            }
        )
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Arith {
    /// Plain `f64` sums.
    Plain,
    /// Exact accumulators, one product at a time.
    Exact,
    /// The exact dot kernel: `exact::par_dot`, `Accumulator::add_dot` per sparse row.
    Kernels,
}

impl Arith {
    fn name(self) -> &'static str {
        match self {
            Arith::Plain => "plain f64",
            Arith::Exact => "exact",
            Arith::Kernels => "kernels",
        }
    }
}

fn dot(x: &[f64], y: &[f64], s: &Schedule, arith: Arith) -> f64 {
    match (arith, &s.order) {
        (Arith::Plain, None) => x
            .par_chunks(s.chunk)
            .zip(y.par_chunks(s.chunk))
            .map(|(a, b)| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>())
            .sum(),
        (Arith::Plain, Some(order)) => order
            .par_chunks(s.chunk)
            .map(|idx| idx.iter().map(|&i| x[i] * y[i]).sum::<f64>())
            .sum(),
        (Arith::Exact, None) => x
            .par_chunks(s.chunk)
            .zip(y.par_chunks(s.chunk))
            .fold(Accumulator::new, |mut acc, (a, b)| {
                acc.add_dot(a, b);
                acc
            })
            .reduce(Accumulator::new, Accumulator::merged)
            .finish(),
        (Arith::Exact, Some(order)) => order
            .par_chunks(s.chunk)
            .fold(Accumulator::new, |mut acc, idx| {
                idx.iter().for_each(|&i| acc.add_product(x[i], y[i]));
                acc
            })
            .reduce(Accumulator::new, Accumulator::merged)
            .finish(),
        // The lengths always match here; NaN would show in the table if they did not.
        (Arith::Kernels, None) => exact::par_dot(x, y).unwrap_or(f64::NAN),
        (Arith::Kernels, Some(order)) => {
            let (xs, ys): (Vec<f64>, Vec<f64>) = order.iter().map(|&i| (x[i], y[i])).unzip();
            exact::par_dot(&xs, &ys).unwrap_or(f64::NAN)
        }
    }
}

fn spmv(a: &Sparse, x: &[f64], out: &mut [f64], s: &Schedule, arith: Arith) {
    let rows_per_task = s.chunk.max(1);
    out.par_chunks_mut(rows_per_task)
        .enumerate()
        .for_each(|(task, block)| {
            let mut acc = Accumulator::new();
            let (mut vals, mut xs) = (Vec::new(), Vec::new());
            for (k, o) in block.iter_mut().enumerate() {
                let r = task * rows_per_task + k;
                *o = match arith {
                    Arith::Plain => a.row(r).map(|(c, v)| v * x[c]).sum(),
                    Arith::Exact => {
                        acc.clear();
                        a.row(r).for_each(|(c, v)| acc.add_product(v, x[c]));
                        acc.finish()
                    }
                    Arith::Kernels => {
                        vals.clear();
                        xs.clear();
                        for (c, v) in a.row(r) {
                            vals.push(v);
                            xs.push(x[c]);
                        }
                        acc.clear();
                        acc.add_dot(&vals, &xs);
                        acc.finish()
                    }
                };
            }
        });
}

/// What one CG run produced.
struct CgRun {
    history: Vec<f64>,
    x_bits: u64,
}

/// Unpreconditioned CG from x = 0 until ||r|| <= tol ||b|| or `max_iter` iterations.
fn cg(a: &Sparse, b: &[f64], s: &Schedule, arith: Arith, tol: f64, max_iter: usize) -> CgRun {
    let n = a.n;
    let (mut x, mut r, mut p, mut ap) = (vec![0.0; n], b.to_vec(), b.to_vec(), vec![0.0; n]);
    let b_norm = dot(b, b, s, arith).sqrt();
    let mut rr = dot(&r, &r, s, arith);
    let mut history = vec![rr.sqrt() / b_norm];
    while history.len() <= max_iter && rr.sqrt() > tol * b_norm {
        spmv(a, &p, &mut ap, s, arith);
        let alpha = rr / dot(&p, &ap, s, arith);
        x.par_iter_mut()
            .zip(&p)
            .for_each(|(xi, pi)| *xi += alpha * pi);
        r.par_iter_mut()
            .zip(&ap)
            .for_each(|(ri, api)| *ri -= alpha * api);
        let rr_next = dot(&r, &r, s, arith);
        let beta = rr_next / rr;
        rr = rr_next;
        p.par_iter_mut()
            .zip(&r)
            .for_each(|(pi, ri)| *pi = ri + beta * *pi);
        history.push(rr.sqrt() / b_norm);
    }
    // One number that changes if any bit of the solution changes.
    let x_bits = x
        .iter()
        .fold(0u64, |h, v| (h ^ v.to_bits()).wrapping_mul(0x100_0000_01b3));
    CgRun { history, x_bits }
}

struct Problem {
    name: &'static str,
    a: Sparse,
    b: Vec<f64>,
    tol: f64,
    max_iter: usize,
}

fn problems() -> Vec<Problem> {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let m = 64;
    let poisson = Sparse::scaled_laplacian(m, 1.0, &vec![1.0; m * m]);
    let b: Vec<f64> = (0..m * m).map(|_| rng.random_range(-1.0..1.0)).collect();
    let m2 = 24;
    // Anisotropic coupling and a diagonal scaling over two orders of magnitude.
    let scale: Vec<f64> = (0..m2 * m2)
        .map(|_| 10f64.powf(rng.random_range(-1.0..1.0)))
        .collect();
    let hard = Sparse::scaled_laplacian(m2, 1e-2, &scale);
    let b2: Vec<f64> = (0..m2 * m2).map(|_| rng.random_range(-1.0..1.0)).collect();
    vec![
        Problem {
            name: "2-D Poisson 64x64",
            a: poisson,
            b,
            tol: 1e-10,
            max_iter: 2000,
        },
        Problem {
            name: "scaled anisotropic 24x24",
            a: hard,
            b: b2,
            tol: 1e-6,
            max_iter: 5000,
        },
    ]
}

fn schedules(n: usize) -> Vec<Schedule> {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, rng.random_range(0..=i));
    }
    let mut reversed: Vec<usize> = (0..n).collect();
    reversed.reverse();
    vec![
        Schedule {
            threads: 1,
            chunk: 4096,
            order: None,
            row_seed: None,
        },
        Schedule {
            threads: 2,
            chunk: 1024,
            order: None,
            row_seed: None,
        },
        Schedule {
            threads: 2,
            chunk: 97,
            order: None,
            row_seed: None,
        },
        Schedule {
            threads: 3,
            chunk: 256,
            order: Some(reversed),
            row_seed: None,
        },
        Schedule {
            threads: 4,
            chunk: 64,
            order: Some(perm.clone()),
            row_seed: Some(1),
        },
        Schedule {
            threads: 7,
            chunk: 333,
            order: Some(perm),
            row_seed: Some(2),
        },
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut curves: Vec<(String, Arith, Vec<f64>)> = Vec::new();
    for problem in problems() {
        println!(
            "\n{}  (n = {}, tol = {:e})",
            problem.name, problem.a.n, problem.tol
        );
        println!(
            "| arithmetic | schedule                                             | iters | final ||r||/||b|| (bits)          | x hash           |"
        );
        println!(
            "|------------|------------------------------------------------------|-------|-----------------------------------|------------------|"
        );
        for arith in [Arith::Plain, Arith::Exact, Arith::Kernels] {
            let mut distinct = std::collections::BTreeSet::new();
            for s in schedules(problem.a.n) {
                let a = match s.row_seed {
                    Some(seed) => problem
                        .a
                        .shuffled_rows(&mut ChaCha8Rng::seed_from_u64(seed)),
                    None => Sparse {
                        n: problem.a.n,
                        row_start: problem.a.row_start.clone(),
                        cols: problem.a.cols.clone(),
                        vals: problem.a.vals.clone(),
                    },
                };
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(s.threads)
                    .build()?;
                let run =
                    pool.install(|| cg(&a, &problem.b, &s, arith, problem.tol, problem.max_iter));
                let last = run.history.last().copied().unwrap_or(f64::NAN);
                let name = arith.name();
                println!(
                    "| {name:<10} | {:<52} | {:>5} | {last:.6e} ({:016x}) | {:016x} |",
                    s.label(),
                    run.history.len() - 1,
                    last.to_bits(),
                    run.x_bits
                );
                distinct.insert((run.history.len(), last.to_bits(), run.x_bits));
                if arith != Arith::Kernels {
                    curves.push((
                        format!("{} / {name} / {}", problem.name, s.label()),
                        arith,
                        run.history,
                    ));
                }
            }
            println!(
                "|            | => {} distinct result(s) over {} schedules",
                distinct.len(),
                schedules(0).len()
            );
        }
        same_on_every_pool(&problem)?;
    }
    block_solver()?;
    std::fs::create_dir_all("fprev-out")?;
    std::fs::write("fprev-out/cg_residuals.svg", svg(&curves))?;
    println!("\nwrote fprev-out/cg_residuals.svg");
    Ok(())
}

/// Most threads the reproducibility checks try.
const MAX_THREADS: usize = 8;

/// Runs the exact-kernel CG on pools of 1 to [`MAX_THREADS`] threads (chunks of 1024)
/// and fails unless every run gives the bits of the 1-thread run.
fn same_on_every_pool(problem: &Problem) -> Result<(), Box<dyn std::error::Error>> {
    let mut first: Option<(Vec<u64>, u64)> = None;
    for threads in 1..=MAX_THREADS {
        let s = Schedule {
            threads,
            chunk: 1024,
            order: None,
            row_seed: None,
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let run = pool.install(|| {
            cg(
                &problem.a,
                &problem.b,
                &s,
                Arith::Kernels,
                problem.tol,
                problem.max_iter,
            )
        });
        let bits = (
            run.history.iter().map(|v| v.to_bits()).collect(),
            run.x_bits,
        );
        match &first {
            None => first = Some(bits),
            Some(want) if *want == bits => {}
            Some(_) => return Err(format!("exact kernels differ on {threads} threads").into()),
        }
    }
    println!("|            | => exact kernels: the same bits on 1..={MAX_THREADS} threads");
    Ok(())
}

/// Block CG for a dense system with four right-hand sides, every reduction a matrix
/// product: plain products split over the inner dimension drift with the thread count,
/// `exact::gemm` gives the same bits on every pool (checked).
fn block_solver() -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let m = 16;
    let n = m * m;
    let s = 4;
    let scale: Vec<f64> = (0..n)
        .map(|_| 10f64.powf(rng.random_range(-1.0..1.0)))
        .collect();
    let a = solvers::dense_spd(m, 0.05, &scale);
    let b: Vec<f64> = (0..n * s).map(|_| rng.random_range(-1.0..1.0)).collect();
    let (tol, max_iter) = (1e-10, 2000);
    println!(
        "\nblock CG, dense {n} x {n} (scaled anisotropic Laplacian), {s} right-hand sides, \
         tol = {tol:e}"
    );
    println!("| products         | threads | iters | final max residual (bits)          | x hash           |");
    println!("|------------------|---------|-------|------------------------------------|------------------|");
    for (name, exact) in [("plain, split k", false), ("exact::gemm", true)] {
        let mut distinct = std::collections::BTreeSet::new();
        for threads in 1..=MAX_THREADS {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()?;
            let run = pool.install(|| {
                let mut product = if exact {
                    solvers::exact_product
                } else {
                    solvers::plain_split_k
                };
                solvers::block_cg(&a, n, &b, s, &mut product, tol, max_iter)
            })?;
            let last = run.history.last().copied().unwrap_or(f64::NAN);
            println!(
                "| {name:<16} | {threads:>7} | {:>5} | {last:.6e} ({:016x}) | {:016x} |",
                run.history.len() - 1,
                last.to_bits(),
                run.x_hash
            );
            distinct.insert((run.history.len(), last.to_bits(), run.x_hash));
        }
        println!(
            "|                  | => {} distinct result(s) over 1..={MAX_THREADS} threads",
            distinct.len()
        );
        if exact && distinct.len() != 1 {
            return Err("block CG with exact::gemm differs between thread counts".into());
        }
    }
    Ok(())
}

/// A step of 1, 2 or 5 times a power of ten giving at most `most` ticks over `span`.
fn tick_step(span: f64, most: f64) -> f64 {
    let mut step = 10f64.powf((span / most).log10().floor());
    for k in [1.0, 2.0, 5.0, 10.0] {
        if span / (step * k) <= most {
            step *= k;
            break;
        }
    }
    step
}

/// One log-scale panel: frame, ticks, axis titles, one polyline per series.
struct Panel<'a> {
    origin: (f64, f64),
    title: String,
    y_title: &'a str,
    series: Vec<(usize, Vec<f64>)>,
    note: Option<String>,
}

const PANEL_W: f64 = 400.0;
const PANEL_H: f64 = 300.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

impl Panel<'_> {
    fn draw(&self, out: &mut String) {
        let (ox, oy) = self.origin;
        let (left, right, top, bottom) = (
            ox + 62.0,
            ox + PANEL_W - 14.0,
            oy + 44.0,
            oy + PANEL_H - 46.0,
        );
        let max_it = self
            .series
            .iter()
            .map(|s| s.1.len())
            .max()
            .unwrap_or(2)
            .max(2) as f64
            - 1.0;
        let logs = self
            .series
            .iter()
            .flat_map(|s| s.1.iter())
            .filter(|v| **v > 0.0)
            .map(|v| v.log10());
        let (lo, hi) = logs.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        let (lo, hi) = if lo > hi {
            (-1.0, 0.0)
        } else {
            (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
        };
        let px = |i: f64| left + i / max_it * (right - left);
        let py = |v: f64| top + (hi - v.max(10f64.powf(lo)).log10()) / (hi - lo) * (bottom - top);
        let _ = writeln!(
            out,
            r##"<text x="{left}" y="{}" font-size="13" font-weight="bold">{}</text><rect x="{left}" y="{top}" width="{}" height="{}" fill="none" stroke="#333"/>"##,
            oy + 20.0,
            self.title,
            right - left,
            bottom - top
        );
        // y: a labelled tick per decade (or every few decades), faint grid lines
        let every = ((hi - lo) / 6.0).ceil().max(1.0);
        let mut d = lo;
        while d <= hi {
            let y = py(10f64.powf(d));
            let _ = writeln!(
                out,
                r##"<line x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#eee"/><line x1="{}" y1="{y:.1}" x2="{left}" y2="{y:.1}" stroke="#333"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">1e{d}</text>"##,
                left - 4.0,
                left - 6.0,
                y + 4.0
            );
            d += every;
        }
        let step = tick_step(max_it, 6.0);
        let mut i = 0.0;
        while i <= max_it {
            let x = px(i);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{bottom}" x2="{x:.1}" y2="{}" stroke="#333"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{i}</text>"##,
                bottom + 4.0,
                bottom + 16.0
            );
            i += step;
        }
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{}" font-size="12" text-anchor="middle">CG iteration</text>"##,
            (left + right) / 2.0,
            bottom + 34.0
        );
        let (ty, tx) = ((top + bottom) / 2.0, ox + 14.0);
        let _ = writeln!(
            out,
            r##"<text x="{tx}" y="{ty:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 {tx} {ty:.1})">{}</text>"##,
            self.y_title
        );
        for (color, values) in &self.series {
            let points: Vec<String> = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{:.1},{:.1}", px(i as f64), py(*v)))
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{}" stroke-width="1" points="{}"/>"#,
                COLORS[color % COLORS.len()],
                points.join(" ")
            );
        }
        if let Some(note) = &self.note {
            let _ = writeln!(
                out,
                r##"<text x="{left}" y="{}" font-size="11" fill="#555">{note}</text>"##,
                oy + 36.0
            );
        }
    }
}

/// Residual histories as SVG line plots (log scale): per problem, the plain and the exact
/// runs' residuals, and how far each plain run's residual is from the first schedule's,
/// where the plain runs fan out while the exact ones stay identical.
fn svg(curves: &[(String, Arith, Vec<f64>)]) -> String {
    let mut problems: Vec<&str> = Vec::new();
    for (label, _, _) in curves {
        let p = label.split(" / ").next().unwrap_or(label);
        if !problems.contains(&p) {
            problems.push(p);
        }
    }
    let legend_h = 70.0;
    let (width, height) = (3.0 * PANEL_W, problems.len() as f64 * PANEL_H + legend_h);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="#ffffff"/>"##
    );
    let mut schedules: Vec<&str> = Vec::new();
    for (row, problem) in problems.iter().enumerate() {
        let runs = |arith: Arith| -> Vec<(&str, &Vec<f64>)> {
            curves
                .iter()
                .filter(|c| c.1 == arith && c.0.starts_with(problem))
                .map(|c| (c.0.rsplit_once(" / ").map_or("", |(_, s)| s), &c.2))
                .collect()
        };
        let (plain, exact) = (runs(Arith::Plain), runs(Arith::Exact));
        if schedules.is_empty() {
            schedules = plain.iter().map(|r| r.0).collect();
        }
        let oy = row as f64 * PANEL_H;
        let residual_series = |r: &[(&str, &Vec<f64>)]| -> Vec<(usize, Vec<f64>)> {
            r.iter()
                .enumerate()
                .map(|(k, (_, h))| (k, h.to_vec()))
                .collect()
        };
        let bits = |h: &Vec<f64>| h.iter().map(|v| v.to_bits()).collect::<Vec<u64>>();
        let exact_same = exact.windows(2).all(|w| bits(w[0].1) == bits(w[1].1));
        let plain_iters: std::collections::BTreeSet<usize> =
            plain.iter().map(|r| r.1.len() - 1).collect();
        // distance of each plain run from the first schedule's run, per iteration
        let spread: Vec<(usize, Vec<f64>)> = plain
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, (_, h))| {
                let reference = plain[0].1;
                let d = h
                    .iter()
                    .zip(reference.iter())
                    .map(|(a, b)| ((a - b) / b).abs())
                    .collect();
                (k, d)
            })
            .collect();
        let panels = [
            Panel {
                origin: (0.0, oy),
                title: format!("{problem}: plain f64"),
                y_title: "residual ||r|| / ||b||",
                series: residual_series(&plain),
                note: Some(format!(
                    "{} runs; iterations: {}",
                    plain.len(),
                    plain_iters
                        .iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            },
            Panel {
                origin: (PANEL_W, oy),
                title: format!("{problem}: exact"),
                y_title: "residual ||r|| / ||b||",
                series: residual_series(&exact),
                note: Some(if exact_same {
                    format!("{} runs, every residual the same bits", exact.len())
                } else {
                    "exact runs differ".to_string()
                }),
            },
            Panel {
                origin: (2.0 * PANEL_W, oy),
                title: format!("{problem}: drift"),
                y_title: "|r - r1| / r1 (0 at the bottom)",
                series: spread,
                note: Some(if exact_same {
                    "plain runs vs r1, the 1-thread run; exact: all 0".to_string()
                } else {
                    "plain runs".to_string()
                }),
            },
        ];
        for panel in &panels {
            panel.draw(&mut out);
        }
    }
    // one legend for all panels, below them
    let ly = problems.len() as f64 * PANEL_H + 14.0;
    for (k, schedule) in schedules.iter().enumerate() {
        let (x, y) = (62.0 + (k / 3) as f64 * 560.0, ly + (k % 3) as f64 * 18.0);
        let _ = writeln!(
            out,
            r##"<rect x="{x}" y="{}" width="18" height="4" fill="{}"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            y - 4.0,
            COLORS[k % COLORS.len()],
            x + 24.0,
            y + 1.0,
            schedule.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }
    out.push_str("</svg>\n");
    out
}
