//! Reproducible conjugate gradient: the same solver, run under different thread counts,
//! chunk sizes and reduction orders, with plain `f64` reductions and with exact ones.
//!
//! Plain parallel dot products and SpMV row sums round differently depending on how the
//! work was split, so the residual histories and even the iteration counts drift apart.
//! With `fprev::exact` dot products and row sums every run produces the same bits
//! (Mukunoki, Ozaki, Ogita and Iakymchuk make the same point with the Ozaki scheme).
//!
//! `cargo run --release --example cg` prints a table and writes
//! `fprev-out/cg_residuals.svg`.

use fprev::exact::Accumulator;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::fmt::Write as _;

/// A sparse symmetric positive definite matrix in compressed-row form.
struct Csr {
    n: usize,
    row_start: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
}

impl Csr {
    /// The 5-point Laplacian on an `m` x `m` grid with Dirichlet boundaries, with
    /// coupling `eps` in the y direction (1 is the plain Poisson problem) and then scaled
    /// symmetrically by `scale` (`D A D` stays SPD but its condition number grows).
    fn laplacian(m: usize, eps: f64, scale: &[f64]) -> Csr {
        let n = m * m;
        let (mut row_start, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
        for i in 0..m {
            for j in 0..m {
                let row = i * m + j;
                let mut push = |col: usize, v: f64| {
                    cols.push(col);
                    vals.push(scale[row] * v * scale[col]);
                };
                if i > 0 {
                    push(row - m, -eps);
                }
                if j > 0 {
                    push(row - 1, -1.0);
                }
                push(row, 2.0 + 2.0 * eps);
                if j + 1 < m {
                    push(row + 1, -1.0);
                }
                if i + 1 < m {
                    push(row + m, -eps);
                }
                row_start.push(cols.len());
            }
        }
        Csr {
            n,
            row_start,
            cols,
            vals,
        }
    }

    /// The same matrix with each row's entries stored in a shuffled order.
    fn shuffled_rows(&self, rng: &mut ChaCha8Rng) -> Csr {
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
        Csr {
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
    Plain,
    Exact,
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
    }
}

fn spmv(a: &Csr, x: &[f64], out: &mut [f64], s: &Schedule, arith: Arith) {
    let rows_per_task = s.chunk.max(1);
    out.par_chunks_mut(rows_per_task)
        .enumerate()
        .for_each(|(task, block)| {
            let mut acc = Accumulator::new();
            for (k, o) in block.iter_mut().enumerate() {
                let r = task * rows_per_task + k;
                *o = match arith {
                    Arith::Plain => a.row(r).map(|(c, v)| v * x[c]).sum(),
                    Arith::Exact => {
                        acc.clear();
                        a.row(r).for_each(|(c, v)| acc.add_product(v, x[c]));
                        acc.finish()
                    }
                };
            }
        });
}

/// What one CG run produced.
struct Run {
    history: Vec<f64>,
    x_bits: u64,
}

/// Unpreconditioned CG from x = 0 until ||r|| <= tol ||b|| or `max_iter` iterations.
fn cg(a: &Csr, b: &[f64], s: &Schedule, arith: Arith, tol: f64, max_iter: usize) -> Run {
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
    Run { history, x_bits }
}

struct Problem {
    name: &'static str,
    a: Csr,
    b: Vec<f64>,
    tol: f64,
    max_iter: usize,
}

fn problems() -> Vec<Problem> {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let m = 64;
    let poisson = Csr::laplacian(m, 1.0, &vec![1.0; m * m]);
    let b: Vec<f64> = (0..m * m).map(|_| rng.random_range(-1.0..1.0)).collect();
    let m2 = 24;
    // Anisotropic coupling and a diagonal scaling over two orders of magnitude.
    let scale: Vec<f64> = (0..m2 * m2)
        .map(|_| 10f64.powf(rng.random_range(-1.0..1.0)))
        .collect();
    let hard = Csr::laplacian(m2, 1e-2, &scale);
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
        for arith in [Arith::Plain, Arith::Exact] {
            let mut distinct = std::collections::BTreeSet::new();
            for s in schedules(problem.a.n) {
                let a = match s.row_seed {
                    Some(seed) => problem
                        .a
                        .shuffled_rows(&mut ChaCha8Rng::seed_from_u64(seed)),
                    None => Csr {
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
                let name = if arith == Arith::Plain {
                    "plain f64"
                } else {
                    "exact"
                };
                println!(
                    "| {name:<10} | {:<52} | {:>5} | {last:.6e} ({:016x}) | {:016x} |",
                    s.label(),
                    run.history.len() - 1,
                    last.to_bits(),
                    run.x_bits
                );
                distinct.insert((run.history.len(), last.to_bits(), run.x_bits));
                curves.push((
                    format!("{} / {name} / {}", problem.name, s.label()),
                    arith,
                    run.history,
                ));
            }
            println!(
                "|            | => {} distinct result(s) over {} schedules",
                distinct.len(),
                schedules(0).len()
            );
        }
    }
    std::fs::create_dir_all("fprev-out")?;
    std::fs::write("fprev-out/cg_residuals.svg", svg(&curves))?;
    println!("\nwrote fprev-out/cg_residuals.svg");
    Ok(())
}

/// Residual histories as an SVG line plot (log scale), one panel per problem and mode.
fn svg(curves: &[(String, Arith, Vec<f64>)]) -> String {
    let panels: Vec<String> = {
        let mut names: Vec<String> = Vec::new();
        for (label, _, _) in curves {
            let panel = label
                .rsplit_once(" / ")
                .map_or(label.clone(), |(p, _)| p.to_string());
            if !names.contains(&panel) {
                names.push(panel);
            }
        }
        names
    };
    let (w, h, pad) = (560.0, 300.0, 50.0);
    let cols = 2.0;
    let rows = (panels.len() as f64 / cols).ceil();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">"#,
        cols * w,
        rows * h
    );
    let colors = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    ];
    for (k, panel) in panels.iter().enumerate() {
        let (ox, oy) = ((k % 2) as f64 * w, (k / 2) as f64 * h);
        let mine: Vec<&(String, Arith, Vec<f64>)> = curves
            .iter()
            .filter(|c| c.0.starts_with(panel.as_str()))
            .collect();
        let max_it = mine.iter().map(|c| c.2.len()).max().unwrap_or(1).max(2) as f64 - 1.0;
        let logs = mine
            .iter()
            .flat_map(|c| c.2.iter())
            .filter(|v| **v > 0.0)
            .map(|v| v.log10());
        let (lo, hi) = logs.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        let (lo, hi) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
        let px = |i: f64| ox + pad + i / max_it * (w - 1.5 * pad);
        let py = |v: f64| oy + pad + (hi - v.max(1e-300).log10()) / (hi - lo) * (h - 2.0 * pad);
        let _ = writeln!(
            out,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="black"/><text x="{}" y="{}">{panel}</text>"#,
            ox + pad,
            oy + pad,
            w - 1.5 * pad,
            h - 2.0 * pad,
            ox + pad,
            oy + pad - 8.0
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}">1e{hi}</text><text x="{}" y="{}">1e{lo}</text><text x="{}" y="{}">iteration {max_it}</text>"#,
            ox + 5.0,
            oy + pad + 4.0,
            ox + 5.0,
            oy + h - pad,
            ox + w - 2.0 * pad,
            oy + h - pad + 16.0
        );
        for (c, (label, _, history)) in mine.iter().enumerate() {
            let schedule = label.rsplit_once(" / ").map_or(label.as_str(), |(_, s)| s);
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" font-size="9" fill="{}">{}</text>"#,
                ox + w - 300.0,
                oy + pad + 12.0 + 11.0 * c as f64,
                colors[c % colors.len()],
                schedule
            );
            let points: Vec<String> = history
                .iter()
                .enumerate()
                .map(|(i, v)| format!("{:.1},{:.1}", px(i as f64), py(*v)))
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{}" stroke-width="1" points="{}"><title>{label}</title></polyline>"#,
                colors[c % colors.len()],
                points.join(" ")
            );
        }
    }
    out.push_str("</svg>\n");
    out
}
