//! `fprev demo`: reveal real targets, print their trees, draw them.
//!
//! The demo is a list of [`Section`]s run in order; each prints a heading, what it found,
//! and may write pictures. New parts (scrambling, exact sums) are added as sections.

use std::path::Path;
use std::time::Instant;

use fprev::ops::ElementReveal;
use fprev::picture::Picture;
use fprev::SumTree;

use crate::builtins::{self, Size};
use crate::console::CommandFailure;

/// One part of the demo.
pub struct Section {
    /// Name for `fprev demo --only <key>`.
    pub key: &'static str,
    /// Heading.
    pub title: &'static str,
    /// Runs the section, writing pictures under the given folder.
    pub run: fn(&Path) -> Result<(), CommandFailure>,
}

/// The demo's sections, in order.
pub const SECTIONS: &[Section] = &[
    Section {
        key: "loops",
        title: "Plain Rust loops",
        run: plain_loops,
    },
    Section {
        key: "ndarray",
        title: "ndarray: sum and dot unroll into 8 lanes",
        run: ndarray_lanes,
    },
    Section {
        key: "matrix",
        title: "Matrix products: one probe per row, every element checked",
        run: matrix_products,
    },
    Section {
        key: "rayon",
        title: "rayon: the tree depends on the thread count",
        run: rayon_threads,
    },
    Section {
        key: "numpy",
        title: "Any program: numpy.sum through --exec",
        run: numpy_exec,
    },
    Section {
        key: "scramble",
        title: "Amplify: #[scramble] catches an order-dependent sum",
        run: scramble_catches,
    },
    Section {
        key: "exact",
        title: "Fix: exact sums give the same bits in every order",
        run: exact_fixes,
    },
];

/// A plain f32 accumulation: `#[scramble]` reassociates its reduction.
#[fprev::scramble]
fn plain_total(v: &[f32]) -> f32 {
    let mut s = 0.0f32;
    for x in v.iter() {
        s += x;
    }
    s
}

/// The same loop accumulating exactly, rounded once to f32. Its `acc.add` is no float
/// reduction the attribute could reassociate, so the loop is declared order-free
/// (`loops`) and scrambled whole: exactly what an exact sum must survive.
#[fprev::scramble(loops)]
fn exact_total(v: &[f32]) -> f32 {
    let mut acc = fprev::exact::Accumulator::new();
    for x in v.iter() {
        acc.add(f64::from(*x));
    }
    acc.round_to(fprev::exact::RoundingFormat::F32) as f32
}

fn demo_values() -> Vec<f32> {
    (0..20_000)
        .map(|i| ((i as f32) * 0.618).sin() * 1e3 + 1e-3)
        .collect()
}

/// The amplifier's settings: `FPREV_*` variables as everywhere, else 12 runs per stage
/// and campaign seed 2026, so that the demo prints the same bits every time.
fn amplify_config() -> fprev::AmplifyConfig {
    let mut cfg = fprev::AmplifyConfig::from_env();
    if std::env::var_os(fprev::scramble::vars::FPREV_RUNS).is_none() {
        cfg = cfg.runs(12);
    }
    if cfg.seed.is_none() {
        cfg = cfg.seed(2026);
    }
    cfg
}

/// The command that re-runs one demo section: this binary, by name when `fprev` on
/// `PATH` is this binary, else by its path, so that it runs as printed.
fn rerun_command(key: &str) -> String {
    let exe = std::env::current_exe().and_then(|p| p.canonicalize());
    let on_path = exe.as_ref().ok().is_some_and(|exe| {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths)
                .filter_map(|d| d.join("fprev").canonicalize().ok())
                .next()
                .is_some_and(|first| &first == exe)
        })
    });
    let program = match exe {
        Ok(p) if !on_path => {
            let p = p.display().to_string();
            if p.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
                format!("'{}'", p.replace('\'', "'\\''"))
            } else {
                p
            }
        }
        _ => "fprev".to_string(),
    };
    format!("{program} demo --only {key}")
}

/// The amplifier's report with its replay commands pointing at this demo section (the
/// report's own commands re-run a `cargo test` of that name, which the demo is not).
fn print_report(report: &fprev::AmplifyReport, key: &str) -> Result<(), CommandFailure> {
    let text = report
        .to_string()
        .replace(&format!("cargo test {}", report.name), &rerun_command(key));
    outln!("{text}");
    Ok(())
}

fn scramble_catches(_out: &Path) -> Result<(), CommandFailure> {
    let v = demo_values();
    let report =
        fprev::amplify::amplify_named(&amplify_config(), "demo::plain_total", || plain_total(&v));
    print_report(&report, "scramble")?;
    outln!(
        "-> {}",
        if report.is_reproducible() {
            "no order dependence found"
        } else {
            "order-dependent: every differing run above prints the seed that replays it"
        }
    );
    Ok(())
}

fn exact_fixes(_out: &Path) -> Result<(), CommandFailure> {
    let v = demo_values();
    let report =
        fprev::amplify::amplify_named(&amplify_config(), "demo::exact_total", || exact_total(&v));
    print_report(&report, "exact")?;
    outln!(
        "-> exact::Accumulator: {}",
        if report.is_reproducible() {
            "one result under every schedule"
        } else {
            "STILL NOT REPRODUCIBLE (a bug: please report)"
        }
    );
    match fprev::reveal(64, fprev::exact::sum) {
        Err(e @ fprev::RevealError::OrderIndependent { .. }) => {
            outln!("-> fprev::reveal(64, exact::sum): {e}")
        }
        other => outln!("-> fprev::reveal(64, exact::sum): unexpected {other:?}"),
    }
    Ok(())
}

/// A line-by-line responder (the same as tests/python/numpy_sum.py).
const NUMPY_SUM: &str = "import sys, numpy as np\nfor line in sys.stdin:\n    x = np.array(line.split(), dtype=np.float64).astype(np.float32)\n    print(repr(float(np.sum(x))), flush=True)\n";

fn numpy_exec(out: &Path) -> Result<(), CommandFailure> {
    let have_numpy = std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_numpy {
        outln!("SKIPPED: this section needs python3 with numpy, which was not found.");
        outln!("   To run it: python3 -m venv .venv && .venv/bin/pip install numpy");
        outln!("   then: PATH=\"$PWD/.venv/bin:$PATH\" cargo run --release");
        return Ok(());
    }
    let command = format!("python3 -c '{NUMPY_SUM}'");
    // n = 32 by search alone (the order as the FPRev paper published it); n = 1024 with
    // the default guess, proved with one probe per inner node.
    for (n, guess) in [(32usize, false), (1024, true)] {
        let target = crate::exec::Exec::<f32>::spawn(
            &command,
            crate::exec::Protocol::Text,
            std::time::Duration::from_secs(30),
            std::time::Duration::from_secs(2),
        )
        .map_err(CommandFailure::Message)?;
        let start = Instant::now();
        let r = fprev::Reveal::new(n)
            .known_orders(guess)
            .run_target(target)?;
        let how = match &r.recognized {
            Some(name) => format!("recognized as {name} and proved"),
            None => "found by search".to_string(),
        };
        outln!(
            "numpy.sum, float32, n = {n}: {how}, {} probes, {:.2} s",
            r.probes,
            start.elapsed().as_secs_f64()
        );
        outln!("   {}", clip(&r.tree));
        picture(
            out,
            &format!("numpy_sum_{n}.svg"),
            &format!("numpy.sum, float32, n = {n}"),
            &r.tree,
        )?;
    }
    Ok(())
}

/// Run every section, or only the one named `only`.
pub fn run(out: &Path, only: Option<&str>) -> Result<(), CommandFailure> {
    if let Some(key) = only {
        if !SECTIONS.iter().any(|s| s.key == key) {
            let keys: Vec<&str> = SECTIONS.iter().map(|s| s.key).collect();
            return Err(CommandFailure::Message(format!(
                "no demo section {key:?}; sections: {}",
                keys.join(", ")
            )));
        }
    }
    std::fs::create_dir_all(out)
        .map_err(|e| CommandFailure::Message(format!("{}: {e}", out.display())))?;
    let start = Instant::now();
    for (i, s) in SECTIONS.iter().enumerate() {
        if only.is_some_and(|k| k != s.key) {
            continue;
        }
        outln!("\n== {}. {} ==", i + 1, s.title);
        (s.run)(out)?;
    }
    outln!(
        "\ndone in {:.1} s; pictures in {}/",
        start.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

/// `text` cut after whole words to at most about `max` bytes, with "..." when cut.
fn clip_words(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if i > max {
            break;
        }
        if c == ' ' {
            end = i;
        }
    }
    if end == 0 {
        end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    }
    format!("{} ...", text[..end].trim_end_matches([',', ';', ':']))
}

fn clip(t: &SumTree) -> String {
    let s = t.to_string();
    if s.len() <= 160 {
        s
    } else {
        format!(
            "{}... ({} leaves, depth {})",
            &s[..150],
            t.leaf_count(),
            t.stats().depth
        )
    }
}

fn picture(out: &Path, file: &str, title: &str, t: &SumTree) -> Result<(), CommandFailure> {
    let path = out.join(file);
    std::fs::write(&path, Picture::new().title(title).render(t))
        .map_err(|e| CommandFailure::Message(format!("{}: {e}", path.display())))?;
    outln!("   picture: {}", path.display());
    Ok(())
}

fn one(name: &str, n: usize) -> Result<SumTree, CommandFailure> {
    let o = builtins::reveal::<f32>(name, Size::square(n), &ElementReveal::new(), None)?;
    Ok(o.groups[0].tree.clone())
}

fn plain_loops(out: &Path) -> Result<(), CommandFailure> {
    let t = one("iter-sum", 16)?;
    outln!(
        "Iterator::sum, f32, n = 16 (sequential: {}):",
        t == SumTree::sequential(16)
    );
    outln!("   {}", clip(&t));
    let t = one("unrolled4", 18)?;
    outln!("hand-unrolled, 4 accumulators, n = 18:");
    outln!("   {}", clip(&t));
    picture(
        out,
        "unrolled4_18.svg",
        "hand-unrolled loop, 4 accumulators, n = 18",
        &t,
    )
}

fn ndarray_lanes(out: &Path) -> Result<(), CommandFailure> {
    let t = one("ndarray-sum", 32)?;
    outln!("ndarray sum, f32, n = 32:");
    outln!("   {}", clip(&t));
    picture(
        out,
        "ndarray_sum_32.svg",
        "ndarray Array1::sum, f32, n = 32",
        &t,
    )?;
    let t = one("ndarray-dot", 37)?;
    outln!("ndarray dot, f32, n = 37 (5 leftovers added at the end):");
    outln!("   {}", clip(&t));
    Ok(())
}

fn matrix_products(out: &Path) -> Result<(), CommandFailure> {
    for (name, size) in [
        (
            "matrixmultiply-gemm",
            Size {
                n: 600,
                rows: 64,
                cols: 64,
            },
        ),
        (
            "nalgebra-matmul",
            Size {
                n: 300,
                rows: 16,
                cols: 16,
            },
        ),
        (
            "ndarray-matmul",
            Size {
                n: 300,
                rows: 16,
                cols: 16,
            },
        ),
    ] {
        let start = Instant::now();
        let o = builtins::reveal::<f32>(name, size, &ElementReveal::new(), None)?;
        let t = &o.groups[0].tree;
        let blocks: Vec<usize> = t
            .children(t.root())
            .iter()
            .map(|&c| t.leaves_under(c as usize).len())
            .collect();
        outln!(
            "{name}, f32, {} x {} by {} x {}: {} in {} calls ({:.2} s); root adds blocks of {:?}",
            size.rows,
            size.n,
            size.n,
            size.cols,
            if o.is_uniform() {
                "all elements share one order"
            } else {
                "SEVERAL ORDERS"
            },
            o.calls,
            start.elapsed().as_secs_f64(),
            blocks
        );
        if name == "matrixmultiply-gemm" {
            picture(
                out,
                "sgemm_k600.svg",
                "matrixmultiply sgemm, f32, k = 600 (kc = 256 blocks)",
                t,
            )?;
        }
    }
    let start = Instant::now();
    let o = builtins::reveal::<f32>(
        "matrixmultiply-gemm",
        Size::square(512),
        &ElementReveal::new(),
        None,
    )?;
    outln!(
        "matrixmultiply sgemm 512 x 512 x 512: {} elements, {} order(s), {} calls, {:.2} s",
        o.shape.elements(),
        o.groups.len(),
        o.calls,
        start.elapsed().as_secs_f64()
    );
    let o = builtins::reveal_f16_operands(
        Size {
            n: 64,
            rows: 8,
            cols: 8,
        },
        &ElementReveal::new(),
    )?;
    outln!(
        "f16 operands, f32 accumulation (sgemm), k = 64: sequential = {}",
        o.groups[0].tree == SumTree::sequential(64)
    );
    Ok(())
}

fn rayon_threads(out: &Path) -> Result<(), CommandFailure> {
    let n = 64;
    let mut seen: Vec<(SumTree, Vec<String>)> = Vec::new();
    for threads in [1, 2, 4] {
        for run in 0..3 {
            let label = format!("{threads} thread(s), run {run}");
            match builtins::reveal::<f32>(
                "rayon-sum",
                Size::square(n),
                &ElementReveal::new(),
                Some(threads),
            ) {
                Ok(o) => {
                    let t = o.groups[0].tree.clone();
                    match seen.iter_mut().find(|(s, _)| *s == t) {
                        Some((_, labels)) => labels.push(label),
                        None => seen.push((t, vec![label])),
                    }
                }
                Err(e) => {
                    outln!("   {label}: failed, {}", clip_words(&e.to_string(), 60));
                }
            }
        }
    }
    outln!(
        "rayon par_iter().sum(), f32, n = {n}: {} distinct trees",
        seen.len()
    );
    for (i, (t, labels)) in seen.iter().enumerate() {
        let top: Vec<usize> = t
            .children(t.root())
            .iter()
            .map(|&c| t.leaves_under(c as usize).len())
            .collect();
        outln!(
            "   tree {i}: root halves {top:?}, depth {}; seen with {}",
            t.stats().depth,
            labels.join("; ")
        );
        if i < 2 {
            picture(
                out,
                &format!("rayon_sum_{i}.svg"),
                &format!("rayon par_iter().sum(), f32, n = {n}: {}", labels[0]),
                t,
            )?;
        }
    }
    // Larger sums get stolen work: the order changes between calls of the same reveal.
    let n = 2048;
    for threads in [1, 2] {
        let mut trees: Vec<SumTree> = Vec::new();
        let mut failures = Vec::new();
        for _ in 0..3 {
            let cfg = ElementReveal::new();
            match builtins::reveal::<f32>("rayon-sum", Size::square(n), &cfg, Some(threads)) {
                Ok(o) => trees.push(o.groups[0].tree.clone()),
                Err(e) => failures.push(e.to_string()),
            }
        }
        trees.dedup();
        let first = failures
            .first()
            .map(|f| format!(" (first: {})", clip_words(f, 110)));
        outln!(
            "rayon, n = {n}, {threads} thread(s), 3 reveals: {} distinct tree(s), {} failed{}",
            trees.len(),
            failures.len(),
            first.unwrap_or_default()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::clip_words;

    #[test]
    fn clipped_messages_end_on_a_whole_word() {
        let e = "inconsistent probe answers: 3 leaves join a subtree, which no tree allows";
        assert_eq!(clip_words(e, 200), e);
        let c = clip_words(e, 60);
        assert_eq!(
            c,
            "inconsistent probe answers: 3 leaves join a subtree, which ..."
        );
        assert!(clip_words("ééééééééééé", 5).ends_with("..."));
    }
}
