//! The `fprev` command-line tool: reveal the summation order of built-in library targets
//! or of any program, compare trees, draw them, and run the demo.

/// `println!` that returns a [`Failure`] from the enclosing function when standard output
/// cannot be written (`println!` panics).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::write_out(&format!("{}\n", format_args!($($arg)*)))?
    };
}

/// `eprintln!` that ignores a failed write (`eprintln!` panics): with standard error
/// gone there is nowhere left to report anything.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` of `text`, ignoring a failed write as [`errln!`] does.
fn errout(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

mod budget;
mod builtins;
mod campaign;
mod collectives;
mod demo;
mod escape;
mod exec;
mod findings;
mod findings_render;
mod limits;
mod model;
mod reports;
mod scaled;
mod stage_stats;
mod sweep;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use fprev::ops::{ElementOrders, ElementReveal};
use fprev::reveal::Pivot;
use fprev::{Algorithm, ProbeFloat, Reveal, SumTree};

#[derive(Parser)]
#[command(
    name = "fprev",
    version,
    about = "Reveal the order in which floating-point sums are computed (FPRev)",
    after_help = "With no subcommand, runs the demo (`fprev demo`)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Reveal the summation tree of a built-in target or of a program (--exec).
    Reveal(Box<RevealArgs>),
    /// List the built-in targets.
    Targets,
    /// Compare two trees (canonical text or JSON files); exit 1 when they differ.
    Diff {
        /// First tree file.
        a: PathBuf,
        /// Second tree file.
        b: PathBuf,
    },
    /// Reveal a program's order at every value of a parameter (batch rows, threads,
    /// chunk size) and print the ranges of values that share one order.
    Sweep(sweep::SweepArgs),
    /// Fit a program's summation order as a function of the length (an algorithm with
    /// its parameters), prove it at lengths it did not see, and emit it as code.
    Model(model::ModelArgs),
    /// Reveal several real targets, print their trees and write pictures.
    Demo {
        /// Where the SVG pictures go.
        #[arg(long, default_value = "fprev-out")]
        out: PathBuf,
        /// Run only this section: loops, ndarray, matrix, rayon, numpy, scramble, exact.
        #[arg(long)]
        only: Option<String>,
    },
    /// Campaign reports (FPREV_REPORT files): merge shards into one summary.
    #[command(subcommand)]
    Campaign(campaign::CampaignCmd),
    /// One rank of `fprev reveal mpi-allreduce` / `mpi-reduce`, started by mpirun.
    #[cfg(feature = "mpi")]
    #[command(hide = true)]
    MpiRank(collectives::rank::RankArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Dtype {
    F32,
    F64,
    F16,
    Bf16,
    /// OCP FP8 E4M3 (operands; accumulated in f32 unless --acc-dtype says otherwise).
    F8e4m3,
    /// OCP FP8 E5M2.
    F8e5m2,
    /// AMD MI300's FP8 E4M3FNUZ (bias 8, largest 240, no negative zero, NaN at 0x80).
    #[value(name = "e4m3fnuz")]
    E4m3fnuz,
    /// AMD MI300's FP8 E5M2FNUZ (bias 16, largest 57344, no infinities or negative zero).
    #[value(name = "e5m2fnuz")]
    E5m2fnuz,
    /// NVIDIA's TF32 (f32's range, 10 fraction bits), sent as 4-byte f32 values; an
    /// operand type, accumulated in f32 unless --acc-dtype says otherwise.
    Tf32,
    /// OCP MX FP4 E2M1 (±{0, 0.5, 1, 1.5, 2, 3, 4, 6}), an operand type: the elements of
    /// --op scaled-dot, or --op dot operands.
    #[value(name = "e2m1")]
    E2m1,
    /// OCP MX FP6 E3M2 (largest 28), an operand type.
    #[value(name = "e3m2")]
    E3m2,
    /// OCP MX FP6 E2M3 (largest 7.5), an operand type.
    #[value(name = "e2m3")]
    E2m3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    /// The tree's structure in words (`SumTree::describe`), for trees too large to read.
    Summary,
    Dot,
    Json,
    Svg,
}

/// `--algorithm`: how fprev builds the tree, or, for `mpi-allreduce` and `mpi-reduce`,
/// which Open MPI algorithm the collective runs (fprev's own is then FPRev).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AlgorithmArg {
    Fprev,
    Basic,
    /// An Open MPI tuned algorithm, by name ([`collectives::Kind::algorithms`]).
    Collective(&'static str),
}

/// Parse `--algorithm`: `fprev`, `basic`, or an MPI collective algorithm's name (which
/// one is valid depends on the target, checked once it is known).
fn parse_algorithm(text: &str) -> Result<AlgorithmArg, String> {
    match text {
        "fprev" => Ok(AlgorithmArg::Fprev),
        "basic" => Ok(AlgorithmArg::Basic),
        other => collectives::known_name(other)
            .map(AlgorithmArg::Collective)
            .ok_or_else(|| {
                format!(
                    "expected fprev or basic (or, for mpi-allreduce and mpi-reduce, an Open \
                     MPI algorithm: {})",
                    collectives::Kind::Allreduce
                        .algorithms()
                        .iter()
                        .chain(collectives::Kind::Reduce.algorithms())
                        .map(|&(n, _)| n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }),
    }
}

#[derive(Clone, clap::Args)]
struct RevealArgs {
    /// A built-in target (see `fprev targets`); omit with --exec.
    target: Option<String>,
    /// Number of summands (k of a matrix product); for mpi-allreduce and mpi-reduce,
    /// --ranks instead.
    #[arg(short = 'n', long, required_unless_present = "ranks")]
    n: Option<usize>,
    /// mpi-allreduce, mpi-reduce: ranks launched under mpirun (the leaves of the tree).
    /// A range (2..16) or a list (2,4,8) sweeps, printing a table.
    #[arg(long, conflicts_with = "n", value_parser = collectives::sweep::parse_sizes)]
    ranks: Option<collectives::sweep::Sizes>,
    /// mpi-allreduce, mpi-reduce: elements of each rank's message; a list or range
    /// sweeps, as --ranks does.
    #[arg(long, default_value = "1", value_parser = collectives::sweep::parse_sizes)]
    count: collectives::sweep::Sizes,
    /// mpi-allreduce, mpi-reduce: the element whose order is revealed, or `all`: every
    /// element, printed as groups of elements that share one order.
    #[arg(long, default_value = "0", value_parser = collectives::parse_element)]
    element: collectives::ElementChoice,
    /// For fprev's tests: the last rank of an MPI target `die`s or `hang`s.
    #[arg(long, hide = true)]
    mpi_fault: Option<String>,
    /// Float type of the values sent (the summands, or the operands with --op dot).
    #[arg(long, value_enum, default_value = "f32")]
    dtype: Dtype,
    /// Type of the answer and of the accumulation, when wider than --dtype (numpy.sum
    /// of float16 accumulates in float32); default: f32 for FP8 values, else --dtype.
    #[arg(long, value_enum)]
    acc_dtype: Option<Dtype>,
    /// What the --exec program computes: `sum` of the n values, or `dot`: each probe
    /// holds 2n values, the n of `a` then the n of `b`, answered by their dot product
    /// (masks spread over both operands, which FP8 needs).
    #[arg(long, value_enum, default_value = "sum")]
    op: exec::Op,
    /// --op scaled-dot: elements per scale (16 for NVFP4, 32 for the MX formats).
    #[arg(long)]
    block: Option<usize>,
    /// --op scaled-dot: the scales' type, ue8m0 (MX) or ue4m3 (NVFP4).
    #[arg(long)]
    scale_dtype: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// Tree-construction algorithm: fprev or basic. For mpi-allreduce and mpi-reduce,
    /// the Open MPI algorithm instead (default, basic-linear, nonoverlapping,
    /// recursive-doubling, ring, segmented-ring, rabenseifner; for reduce: linear, chain,
    /// pipeline, binary, binomial, in-order-binary, rabenseifner).
    #[arg(long, default_value = "fprev", value_parser = parse_algorithm)]
    algorithm: AlgorithmArg,
    /// Seed of pivots and check inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Rows of A for matrix targets (default n).
    #[arg(long)]
    rows: Option<usize>,
    /// Columns of B for matrix targets (default n).
    #[arg(long)]
    cols: Option<usize>,
    /// rayon threads for rayon-sum.
    #[arg(long)]
    threads: Option<usize>,
    /// Probe a program instead: it reads one probe per line and answers one number per line.
    #[arg(long, conflicts_with = "target")]
    exec: Option<String>,
    /// Encoding of probes for --exec. text: one line of n numbers per probe; binary: n
    /// little-endian values per probe; delta: the vector once per batch as a line
    /// `B x0 x1 ...`, then each probe as `P i a j b` (answer f(x) with x[i] = a and
    /// x[j] = b, x unchanged) and each plain call as `C`; delta-binary: the same with
    /// bytes 'B' + n values, 'P' + u32 i + value + u32 j + value, 'C' (little-endian,
    /// values in --dtype's width). Every probe and call is answered by one number
    /// (a line, or one value in the binary protocols).
    #[arg(long, value_enum, default_value = "text")]
    protocol: exec::Protocol,
    /// Seconds to wait for each answer of --exec.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Seconds to wait for the first answer of --exec, which includes the program's
    /// start-up (an interpreter, framework imports, device initialisation); never less
    /// than --timeout, which it defaults to.
    #[arg(long)]
    startup_timeout: Option<f64>,
    /// Seconds the --exec program has to exit after its input is closed, before its
    /// whole process group is terminated.
    #[arg(long, default_value_t = 2.0)]
    grace: f64,
    /// Memory budget: larger sizes are refused before anything is allocated
    /// (bytes, or with K, M, G, T).
    #[arg(long, value_parser = limits::bytes, default_value = "8G")]
    max_memory: u64,
    /// With --exec: a tree to prove first (canonical text, or a file holding text or
    /// JSON), such as an order pinned earlier; a wrong hint only costs its probes.
    #[arg(long, requires = "exec")]
    hint: Option<String>,
    /// With --exec: search from scratch, without first trying the known library orders
    /// or a guess from the structure of the first 512 inputs.
    #[arg(long, requires = "exec")]
    no_guess: bool,
    /// Accept an order-independent target (exact or correctly rounded sums): its tree is
    /// one n-way node instead of an error (`Reveal::accept_flat(true)` in Rust).
    #[arg(long)]
    accept_flat: bool,
    /// Start even when the estimated work (calls x summands) is over the limit.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Write the result to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Why a command stopped.
enum Failure {
    /// Printed as `fprev: <message>`, with exit code 2.
    Message(String),
    /// Standard output's reader went away (a broken pipe, as under `| head`): nothing
    /// more can be shown, so fprev stops quietly with status 0, as ripgrep does.
    OutputClosed,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Message(e.to_string())
    }
}

/// The failure of a write to standard output.
fn stdout_failure(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::OutputClosed
    } else {
        Failure::Message(format!("cannot write to standard output: {e}"))
    }
}

/// Writes `text` to standard output and flushes it: an error is a [`Failure`], never a
/// panic (as `print!` would give).
fn write_out(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(stdout_failure)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Cmd::Demo {
        out: PathBuf::from("fprev-out"),
        only: None,
    });
    let result = match command {
        Cmd::Reveal(args) => reveal(&args),
        Cmd::Sweep(args) => sweep::run(&args),
        Cmd::Model(args) => model::run(&args),
        Cmd::Targets => {
            let mut text = String::new();
            for b in builtins::BUILTINS {
                text += &format!("{:<22} {:<16} {}\n", b.name, b.dtypes.join(","), b.about);
            }
            write_out(&text).map(|()| ExitCode::SUCCESS)
        }
        Cmd::Diff { a, b } => diff(&a, &b),
        Cmd::Demo { out, only } => demo::run(&out, only.as_deref()).map(|_| ExitCode::SUCCESS),
        Cmd::Campaign(cmd) => campaign::run(&cmd).map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "mpi")]
        Cmd::MpiRank(args) => collectives::rank::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(Failure::OutputClosed) => ExitCode::SUCCESS,
        Err(Failure::Message(msg)) => {
            // The library's messages name its Rust API; here the switch is a flag.
            let msg = msg.replace(
                "use Reveal::accept_flat(true)",
                "pass --accept-flat (Reveal::accept_flat(true) in Rust)",
            );
            errln!("fprev: {msg}");
            ExitCode::from(2)
        }
    }
}

/// The largest tree file `diff` and `--hint` read: canonical text of about 25 million
/// leaves. Read through `Read::take`, so a device or a pipe is never read past it.
const MAX_TREE_FILE: u64 = 256 << 20;

fn read_tree(path: &PathBuf) -> Result<SumTree, Failure> {
    use std::io::Read;
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| Failure::Message(format!("{name}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_TREE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::Message(format!("{name}: {e}")))?;
    if bytes.len() as u64 > MAX_TREE_FILE {
        return Err(Failure::Message(format!(
            "{name}: larger than {} MiB: not a tree file (fprev reads trees of up to about \
             25 million leaves)",
            MAX_TREE_FILE >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        Failure::Message(format!(
            "{name}: not UTF-8 text (byte {} is not valid UTF-8)",
            e.utf8_error().valid_up_to()
        ))
    })?;
    parse_tree(&text).map_err(|e| Failure::Message(format!("{name}: {e}")))
}

/// A tree in canonical text or JSON.
fn parse_tree(text: &str) -> Result<SumTree, String> {
    let t = text.trim();
    if t.starts_with('{') || t.starts_with('[') {
        SumTree::from_json(t).map_err(|e| e.to_string())
    } else {
        t.parse().map_err(|e: fprev::tree::TreeError| e.to_string())
    }
}

fn diff(a: &PathBuf, b: &PathBuf) -> Result<ExitCode, Failure> {
    let (ta, tb) = (read_tree(a)?, read_tree(b)?);
    match ta.diff(&tb) {
        None => {
            outln!("same tree ({} leaves)", ta.leaf_count());
            Ok(ExitCode::SUCCESS)
        }
        Some(d) => {
            if d.leaves.is_empty() {
                outln!("different sizes: {} vs {}", d.left, d.right);
            } else {
                let shown: Vec<String> = d.leaves.iter().take(16).map(|l| l.to_string()).collect();
                let more = if d.leaves.len() > 16 { ",..." } else { "" };
                outln!(
                    "trees differ; smallest differing subtree covers leaves {{{}{more}}} ({} leaves)",
                    shown.join(","),
                    d.leaves.len()
                );
                outln!("{}: {}", a.display(), d.left);
                outln!("{}: {}", b.display(), d.right);
            }
            Ok(ExitCode::from(1))
        }
    }
}

fn config(args: &RevealArgs) -> ElementReveal {
    let algorithm = algorithm_of(args);
    ElementReveal::new()
        .algorithm(algorithm)
        .seed(args.seed)
        .accept_flat(args.accept_flat)
        .max_memory(args.max_memory)
}

fn algorithm_of(args: &RevealArgs) -> Algorithm {
    match args.algorithm {
        AlgorithmArg::Fprev | AlgorithmArg::Collective(_) => Algorithm::FPRev,
        AlgorithmArg::Basic => Algorithm::Basic,
    }
}

impl RevealArgs {
    /// `-n`, or the rank count of an MPI target (clap requires one of the two).
    fn n(&self) -> usize {
        self.n
            .or(self.ranks.as_ref().and_then(|r| r.0.first().copied()))
            .unwrap_or(0)
    }
}

fn reveal(args: &RevealArgs) -> Result<ExitCode, Failure> {
    let start = Instant::now();
    if let Some(kind) = args
        .target
        .as_deref()
        .and_then(collectives::Kind::of_target)
    {
        return reveal_collective(kind, args, start);
    }
    if args.ranks.is_some() {
        return Err(Failure::Message(
            "--ranks applies to mpi-allreduce and mpi-reduce; other targets take -n".into(),
        ));
    }
    if let AlgorithmArg::Collective(name) = args.algorithm {
        return Err(Failure::Message(format!(
            "--algorithm {name} names an Open MPI algorithm, for mpi-allreduce and mpi-reduce; \
             this target takes fprev or basic"
        )));
    }
    if let Some(cmd) = &args.exec {
        if args.op == exec::Op::ScaledDot {
            return reveal_scaled(cmd, args, start);
        }
        return reveal_program(cmd, args, start);
    }
    if args.op == exec::Op::ScaledDot {
        return Err(Failure::Message(
            "--op scaled-dot applies to --exec programs".into(),
        ));
    }
    let Some(name) = args.target.as_deref() else {
        return Err(Failure::Message(
            "name a built-in target (see `fprev targets`) or pass --exec \"<command>\"".into(),
        ));
    };
    reveal_builtin(name, args, start)
}

/// `fprev reveal --exec CMD --op scaled-dot`: a block-scaled dot, probed through its
/// scales (text protocol; `scaled.rs` has the contract).
fn reveal_scaled(cmd: &str, args: &RevealArgs, start: Instant) -> Result<ExitCode, Failure> {
    let shape = scaled::shape(
        args.n(),
        dtype_name(args.dtype),
        args.block,
        args.scale_dtype.as_deref(),
    )
    .map_err(Failure::Message)?;
    if args.acc_dtype.is_some_and(|a| a != Dtype::F32) {
        return Err(Failure::Message(
            "--op scaled-dot: the instructions accumulate in f32 (--acc-dtype f32)".into(),
        ));
    }
    let wire =
        match args.protocol {
            exec::Protocol::Text => scaled::ScaledWire::Text,
            exec::Protocol::Binary => scaled::ScaledWire::Binary(shape),
            _ => return Err(Failure::Message(
                "--op scaled-dot speaks the text or the binary protocol (--protocol text|binary)"
                    .into(),
            )),
        };
    limits::vector(shape.line_len(), 8, args.max_memory).map_err(Failure::Message)?;
    let timeout = limits::seconds("--timeout", args.timeout, false).map_err(Failure::Message)?;
    let grace = limits::seconds("--grace", args.grace, true).map_err(Failure::Message)?;
    let startup = match args.startup_timeout {
        Some(s) => limits::seconds("--startup-timeout", s, false).map_err(Failure::Message)?,
        None => timeout,
    };
    let mut program = scaled::ScaledProgram::spawn(cmd, wire, timeout, startup, grace)
        .map_err(Failure::Message)?;
    let report = scaled::reveal(&mut program, shape, args.seed).map_err(Failure::Message)?;
    drop(program);
    errln!(
        "revealed {cmd:?}: k = {}, {} blocks, {} probes and {} random inputs in {:.2} s",
        shape.k,
        shape.blocks(),
        report.probes,
        report.fit_calls,
        start.elapsed().as_secs_f64()
    );
    let text = match args.format {
        Format::Summary => format!("{}\n", report.summary()),
        Format::Json => format!("{}\n", report.tree.to_json()),
        Format::Dot => report.tree.to_dot(),
        Format::Svg => fprev::picture::Picture::new()
            .title(format!("{cmd}, k = {}, blocks of {}", shape.k, shape.block))
            .render(&report.tree),
        Format::Text => format!("{}\n", report.tree),
    };
    match &args.output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| Failure::Message(format!("{}: {e}", p.display())))?,
        None => write_out(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `fprev reveal --exec`: the program's answers, in the accumulator's format.
fn reveal_program(cmd: &str, args: &RevealArgs, start: Instant) -> Result<ExitCode, Failure> {
    for w in budget::ignored_options(args, false) {
        errln!("fprev: {w}");
    }
    // Memory first: a size that cannot be held is refused whatever --yes says.
    let acc = acc_dtype(args)?;
    let elem = match acc {
        Dtype::F64 => 8,
        Dtype::F32 => 4,
        _ => 2,
    };
    limits::vector(args.n(), elem, args.max_memory).map_err(Failure::Message)?;
    fprev::reveal::check_memory(args.n(), algorithm_of(args), elem, args.max_memory)?;
    budget::Estimate::new(args.algorithm, args.n(), 1, args.n() as f64)
        .check(&format!("{cmd:?} at n = {}", args.n()), args.yes)?;
    let (tree, probes, arithmetic) = match acc {
        Dtype::F32 => reveal_exec::<f32>(cmd, args.protocol, args)?,
        Dtype::F64 => reveal_exec::<f64>(cmd, args.protocol, args)?,
        Dtype::F16 => reveal_exec::<fprev::half::f16>(cmd, args.protocol, args)?,
        _ => reveal_exec::<fprev::half::bf16>(cmd, args.protocol, args)?,
    };
    errln!(
        "revealed {cmd:?}: n = {}, {probes} probes in {:.2} s",
        args.n(),
        start.elapsed().as_secs_f64()
    );
    let title = format!("{cmd}, {}, n = {}", dtype_name(args.dtype), args.n());
    emit(args, &tree, None, &title, arithmetic.as_ref())?;
    Ok(ExitCode::SUCCESS)
}

/// `fprev reveal <target>`: a built-in target, every output element of a matrix target.
fn reveal_builtin(name: &str, args: &RevealArgs, start: Instant) -> Result<ExitCode, Failure> {
    let Some(b) = builtins::find(name) else {
        return Err(Failure::Message(format!(
            "no built-in target {name:?}; `fprev targets` lists them"
        )));
    };
    let dt = dtype_name(args.dtype);
    check_builtin_options(name, b, args)?;
    let size = builtins::Size {
        n: args.n(),
        rows: args.rows.unwrap_or(args.n()),
        cols: args.cols.unwrap_or(args.n()),
    };
    let elem = if args.dtype == Dtype::F64 { 8 } else { 4 };
    if b.matrix {
        limits::matrix(size.n, size.rows, size.cols, elem, args.max_memory)
            .map_err(Failure::Message)?;
    } else {
        limits::vector(size.n, elem, args.max_memory).map_err(Failure::Message)?;
    }
    fprev::reveal::check_memory(size.n, algorithm_of(args), elem, args.max_memory)?;
    for w in budget::ignored_options(args, b.matrix) {
        errln!("fprev: {w}");
    }
    let (lanes, per_call) = if b.matrix {
        (
            size.rows,
            size.rows as f64 * size.n as f64 * size.cols as f64,
        )
    } else {
        (1, size.n as f64)
    };
    let estimate = budget::Estimate::new(args.algorithm, size.n, lanes, per_call);
    estimate.check(&format!("{name} at n = {}", size.n), args.yes)?;
    let progress = budget::Progress::new(estimate.calls, "calls");
    let p = progress.clone();
    let cfg = config(args).on_call(move |calls| p.set(calls));
    let orders = match (name, args.dtype) {
        ("matrixmultiply-f16", _) => builtins::reveal_f16_operands(size, &cfg),
        ("unrolled4", Dtype::F16) => builtins::reveal_unrolled::<fprev::half::f16>(args.n(), &cfg),
        ("unrolled4", Dtype::Bf16) => {
            builtins::reveal_unrolled::<fprev::half::bf16>(args.n(), &cfg)
        }
        (_, Dtype::F64) => builtins::reveal::<f64>(name, size, &cfg, args.threads),
        _ => builtins::reveal::<f32>(name, size, &cfg, args.threads),
    };
    progress.finish();
    let orders = orders?;
    let shape = if b.matrix {
        format!("{} x {} by {} x {}", size.rows, size.n, size.n, size.cols)
    } else {
        format!("n = {}", size.n)
    };
    errln!(
        "revealed {name} ({dt}, {shape}): {} probes in {} calls, {:.3} s",
        orders.probes,
        orders.calls,
        start.elapsed().as_secs_f64()
    );
    if b.matrix {
        let summary = orders.to_string();
        errln!("{}", summary.lines().next().unwrap_or_default());
    }
    let title = format!("{name}, {dt}, {shape}");
    emit(args, &orders.groups[0].tree, Some(&orders), &title, None)?;
    Ok(ExitCode::SUCCESS)
}

/// The options a built-in target refuses: dtypes it does not support, `--acc-dtype`
/// beyond the one mixed-format target, `--op dot`.
fn check_builtin_options(
    name: &str,
    b: &builtins::Builtin,
    args: &RevealArgs,
) -> Result<(), Failure> {
    let dt = dtype_name(args.dtype);
    // the one built-in with narrower operands than its accumulator
    let mixed = name == "matrixmultiply-f16";
    if mixed && args.dtype == Dtype::F16 && args.acc_dtype != Some(Dtype::F32) {
        return Err(Failure::Message(format!(
            "{name} accumulates f16 operands in f32: pass --dtype f16 --acc-dtype f32"
        )));
    }
    let acc_ok = |a: Dtype| a == args.dtype || (mixed && a == Dtype::F32);
    if args.acc_dtype.is_some_and(|a| !acc_ok(a)) {
        return Err(Failure::Message(format!(
            "{name} accumulates in its --dtype; --acc-dtype applies to --exec programs and to matrixmultiply-f16"
        )));
    }
    if args.op == exec::Op::Dot {
        return Err(Failure::Message(
            "--op dot applies to --exec programs; the built-in dot and matrix targets are named (see `fprev targets`)".into(),
        ));
    }
    if !b.dtypes.contains(&dt) {
        return Err(Failure::Message(format!(
            "{name} supports --dtype {}",
            b.dtypes.join(", ")
        )));
    }
    Ok(())
}

/// `fprev reveal mpi-allreduce` / `mpi-reduce`: launch the ranks under mpirun and reveal
/// rank 0's answers through the `--exec` machinery (timeouts, process-group shutdown).
fn reveal_collective(
    kind: collectives::Kind,
    args: &RevealArgs,
    start: Instant,
) -> Result<ExitCode, Failure> {
    let name = args.target.as_deref().unwrap_or("mpi-allreduce");
    let Some(ranks) = &args.ranks else {
        return Err(Failure::Message(format!(
            "{name}: pass --ranks P, the number of ranks (the leaves of the tree); -n does \
             not apply"
        )));
    };
    let dtype = match args.dtype {
        Dtype::F64 => "f64",
        Dtype::F32 => "f32",
        other => {
            return Err(Failure::Message(format!(
                "{name} --dtype {}: MPI_SUM is revealed on f64 or f32",
                dtype_name(other)
            )))
        }
    };
    if args.acc_dtype.is_some_and(|a| a != args.dtype) || args.op != exec::Op::Sum {
        return Err(Failure::Message(format!(
            "{name} sums in its --dtype: --acc-dtype and --op apply to --exec programs"
        )));
    }
    if args.protocol != exec::Protocol::Text {
        return Err(Failure::Message(format!(
            "{name}: fprev talks to its own ranks in the text protocol; --protocol applies \
             to --exec programs"
        )));
    }
    let algorithms: Vec<&'static str> = match args.algorithm {
        AlgorithmArg::Collective("all") => kind.algorithms().iter().map(|&(n, _)| n).collect(),
        AlgorithmArg::Collective(a) => vec![a],
        AlgorithmArg::Fprev => vec!["default"],
        AlgorithmArg::Basic => {
            return Err(Failure::Message(format!(
                "{name} --algorithm basic: for MPI targets --algorithm names the MPI \
                 algorithm ({})",
                kind.algorithms()
                    .iter()
                    .map(|&(n, _)| n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let mut launches = Vec::new();
    for &algorithm in &algorithms {
        for &ranks in &ranks.0 {
            for &count in &args.count.0 {
                let (element, all_elements) = match args.element {
                    collectives::ElementChoice::One(e) => (e, false),
                    collectives::ElementChoice::All => (0, true),
                };
                let launch = collectives::Launch {
                    kind,
                    ranks,
                    algorithm,
                    count,
                    element,
                    all_elements,
                    dtype,
                    seed: args.seed,
                    fault: args.mpi_fault.clone(),
                };
                launch.check().map_err(Failure::Message)?;
                launch
                    .check_memory(args.max_memory)
                    .map_err(Failure::Message)?;
                launches.push(launch);
            }
        }
    }
    for w in budget::ignored_options(args, false) {
        errln!("fprev: {w}");
    }
    if !cfg!(feature = "mpi") {
        return Err(Failure::Message(format!(
            "{name}: this fprev was built without its `mpi` feature; build it with \
             `cargo install fprev-cli --features mpi` (needs Open MPI: apt-get install \
             openmpi-bin libopenmpi-dev)"
        )));
    }
    let mpirun = collectives::find_mpirun().map_err(Failure::Message)?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::Message(format!("{name}: cannot find the fprev binary: {e}")))?;
    let [launch] = &launches[..] else {
        if args.element == collectives::ElementChoice::All {
            return Err(Failure::Message(format!(
                "{name} --element all reveals one configuration: give one --ranks, one \
                 --count and one --algorithm"
            )));
        }
        return sweep_collective(&launches, args, &mpirun, &exe, start);
    };
    if launch.all_elements {
        return reveal_elements(launch, args, &mpirun, &exe, start);
    }
    let (tree, probes) = reveal_launch(launch, args, &mpirun, &exe)?;
    let title = launch.describe();
    errln!(
        "revealed {title}: {probes} probes in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    emit(args, &tree, None, &title, None)?;
    Ok(ExitCode::SUCCESS)
}

/// One configuration after another, then the table ([`collectives::sweep`]).
fn sweep_collective(
    launches: &[collectives::Launch],
    args: &RevealArgs,
    mpirun: &std::path::Path,
    exe: &std::path::Path,
    start: Instant,
) -> Result<ExitCode, Failure> {
    let mut rows = Vec::with_capacity(launches.len());
    for (k, launch) in launches.iter().enumerate() {
        let (tree, probes) = reveal_launch(launch, args, mpirun, exe)?;
        errln!(
            "[{}/{}] {}: {probes} probes, {:.1} s so far",
            k + 1,
            launches.len(),
            launch.describe(),
            start.elapsed().as_secs_f64()
        );
        rows.push(collectives::sweep::Row {
            algorithm: launch.algorithm,
            ranks: launch.ranks,
            count: launch.count,
            tree,
        });
    }
    let text = collectives::sweep::table(&rows);
    match &args.output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| Failure::Message(format!("{}: {e}", p.display())))?,
        None => write_out(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Launch one configuration's ranks and reveal rank 0's answers.
fn reveal_launch(
    launch: &collectives::Launch,
    args: &RevealArgs,
    mpirun: &std::path::Path,
    exe: &std::path::Path,
) -> Result<(SumTree, u64), Failure> {
    let cmd = launch.command(mpirun, exe, collectives::as_root());
    let n_args = RevealArgs {
        n: Some(launch.ranks),
        ..args.clone()
    };
    let args = &n_args;
    let dtype = launch.dtype;
    let (tree, probes, _) = match dtype {
        "f64" => reveal_exec::<f64>(&cmd, exec::Protocol::Text, args),
        _ => reveal_exec::<f32>(&cmd, exec::Protocol::Text, args),
    }
    .map_err(|e| match e {
        Failure::Message(m) => Failure::Message(format!("{}: {m}", launch.describe())),
        other => other,
    })?;
    Ok((tree, probes))
}

/// `--element all`: every element revealed, grouped by order
/// ([`collectives::elements`]).
fn reveal_elements(
    launch: &collectives::Launch,
    args: &RevealArgs,
    mpirun: &std::path::Path,
    exe: &std::path::Path,
    start: Instant,
) -> Result<ExitCode, Failure> {
    let orders = match launch.dtype {
        "f64" => reveal_launch_elements::<f64>(launch, args, mpirun, exe),
        _ => reveal_launch_elements::<f32>(launch, args, mpirun, exe),
    }
    .map_err(|e| match e {
        Failure::Message(m) => Failure::Message(format!("{}: {m}", launch.describe())),
        other => other,
    })?;
    let title = launch.describe();
    errln!(
        "revealed {title}: {} probes in {} calls, {:.2} s",
        orders.probes,
        orders.calls,
        start.elapsed().as_secs_f64()
    );
    match args.format {
        Format::Text | Format::Summary => {
            let text = collectives::elements::groups_text(&orders, launch.ranks);
            match &args.output {
                Some(p) => std::fs::write(p, text)
                    .map_err(|e| Failure::Message(format!("{}: {e}", p.display())))?,
                None => write_out(&text)?,
            }
        }
        _ => emit(args, &orders.groups[0].tree, Some(&orders), &title, None)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn reveal_launch_elements<T: ProbeFloat>(
    launch: &collectives::Launch,
    args: &RevealArgs,
    mpirun: &std::path::Path,
    exe: &std::path::Path,
) -> Result<ElementOrders, Failure> {
    let timeout = limits::seconds("--timeout", args.timeout, false).map_err(Failure::Message)?;
    let grace = limits::seconds("--grace", args.grace, true).map_err(Failure::Message)?;
    let startup = match args.startup_timeout {
        Some(s) => limits::seconds("--startup-timeout", s, false).map_err(Failure::Message)?,
        None => timeout,
    };
    let cmd = launch.command(mpirun, exe, collectives::as_root());
    let exec = exec::Exec::<T>::spawn(&cmd, exec::Protocol::Text, timeout, grace)
        .map_err(Failure::Message)?
        .with_startup_timeout(startup);
    let ranks = collectives::elements::RankElements {
        exec,
        count: launch.count,
        ranks: launch.ranks,
    };
    Ok(config(args).run(ranks)?)
}

fn dtype_name(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
        Dtype::F16 => "f16",
        Dtype::Bf16 => "bf16",
        Dtype::F8e4m3 => "f8e4m3",
        Dtype::F8e5m2 => "f8e5m2",
        Dtype::E4m3fnuz => "e4m3fnuz",
        Dtype::E5m2fnuz => "e5m2fnuz",
        Dtype::Tf32 => "tf32",
        Dtype::E2m1 => "e2m1",
        Dtype::E3m2 => "e3m2",
        Dtype::E2m3 => "e2m3",
    }
}

/// The accumulator type: `--acc-dtype`, or f32 for FP8 and TF32 values, or `--dtype`;
/// never narrower than the values, never FP8 or TF32.
fn acc_dtype(args: &RevealArgs) -> Result<Dtype, Failure> {
    accumulator(args.dtype, args.acc_dtype)
}

/// [`acc_dtype`] of values of `dtype` and an `--acc-dtype` of `acc`.
fn accumulator(dtype: Dtype, acc: Option<Dtype>) -> Result<Dtype, Failure> {
    let operand_only = |d: Dtype| {
        matches!(
            d,
            Dtype::F8e4m3
                | Dtype::F8e5m2
                | Dtype::E4m3fnuz
                | Dtype::E5m2fnuz
                | Dtype::Tf32
                | Dtype::E2m1
                | Dtype::E3m2
                | Dtype::E2m3
        )
    };
    let acc = acc.unwrap_or(if operand_only(dtype) {
        Dtype::F32
    } else {
        dtype
    });
    if operand_only(acc) {
        return Err(Failure::Message(format!(
            "--acc-dtype {}: FP8, FP6, FP4 and TF32 are operand types; accumulate in f16, \
             bf16, f32 or f64",
            dtype_name(acc)
        )));
    }
    let bits = |d: Dtype| match d {
        Dtype::F64 => 53,
        Dtype::F32 => 24,
        Dtype::F16 | Dtype::Tf32 => 11,
        Dtype::Bf16 => 8,
        Dtype::F8e4m3 | Dtype::E4m3fnuz => 4,
        Dtype::F8e5m2 | Dtype::E5m2fnuz | Dtype::E3m2 => 3,
        Dtype::E2m1 => 2,
        Dtype::E2m3 => 4,
    };
    let range = |d: Dtype| match d {
        Dtype::F64 => 1023,
        Dtype::F32 | Dtype::Bf16 | Dtype::Tf32 => 127,
        Dtype::F16 | Dtype::F8e5m2 | Dtype::E5m2fnuz => 15,
        Dtype::F8e4m3 | Dtype::E4m3fnuz => 8,
        Dtype::E3m2 => 4,
        Dtype::E2m1 | Dtype::E2m3 => 2,
    };
    if bits(acc) < bits(dtype) || range(acc) < range(dtype) {
        return Err(Failure::Message(format!(
            "--acc-dtype {} cannot hold every --dtype {} value exactly",
            dtype_name(acc),
            dtype_name(dtype)
        )));
    }
    Ok(acc)
}

/// The wire type of `--dtype`.
fn wire_of(d: Dtype) -> exec::Wire {
    match d {
        Dtype::F32 => exec::Wire::of::<f32>(),
        Dtype::F64 => exec::Wire::of::<f64>(),
        Dtype::F16 => exec::Wire::of::<fprev::half::f16>(),
        Dtype::Bf16 => exec::Wire::of::<fprev::half::bf16>(),
        Dtype::F8e4m3 => exec::Wire::of::<fprev::float::F8E4M3>(),
        Dtype::F8e5m2 => exec::Wire::of::<fprev::float::F8E5M2>(),
        Dtype::E4m3fnuz => exec::Wire::of::<fprev::float::F8E4M3Fnuz>(),
        Dtype::E5m2fnuz => exec::Wire::of::<fprev::float::F8E5M2Fnuz>(),
        Dtype::Tf32 => exec::Wire::of::<fprev::float::Tf32>(),
        Dtype::E2m1 => exec::Wire::of::<fprev::float::F4E2M1>(),
        Dtype::E3m2 => exec::Wire::of::<fprev::float::F6E3M2>(),
        Dtype::E2m3 => exec::Wire::of::<fprev::float::F6E2M3>(),
    }
}

fn emit(
    args: &RevealArgs,
    tree: &SumTree,
    orders: Option<&ElementOrders>,
    title: &str,
    arithmetic: Option<&fprev::reveal::FittedFused>,
) -> Result<(), Failure> {
    let groups = orders.filter(|o| !o.is_uniform());
    let acc = dtype_name(acc_dtype(args).unwrap_or(args.dtype));
    // a uniform element reveal's one group carries the arithmetic fitted to its tree
    let arithmetic = arithmetic.or_else(|| orders.and_then(|o| o.groups[0].arithmetic.as_ref()));
    let text = match (args.format, groups) {
        (Format::Text, None) => format!("{tree}\n"),
        (Format::Text, Some(o)) => {
            errout(&o.to_string());
            o.groups.iter().map(|g| format!("{}\n", g.tree)).collect()
        }
        (Format::Summary, None) => format!(
            "{}\n{}",
            tree.describe(),
            summary_lines(tree, arithmetic, acc)
        ),
        (Format::Summary, Some(o)) => {
            errout(&o.to_string());
            group_summaries(o, acc)
        }
        (Format::Dot, _) => tree.to_dot(),
        (Format::Json, None) => format!("{}\n", tree.to_json()),
        (Format::Json, Some(o)) => {
            let groups: Vec<String> = o
                .groups
                .iter()
                .map(|g| {
                    let el: Vec<String> = g
                        .elements
                        .iter()
                        .map(|e| format!("[{},{}]", e.lane, e.output))
                        .collect();
                    format!(
                        "{{\"elements\":[{}],\"tree\":{}}}",
                        el.join(","),
                        g.tree.to_json()
                    )
                })
                .collect();
            format!("{{\"groups\":[{}]}}\n", groups.join(","))
        }
        (Format::Svg, _) => fprev::picture::Picture::new().title(title).render(tree),
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).map_err(|e| Failure::Message(format!("{}: {e}", p.display())))
        }
        None => write_out(&text),
    }
}

fn reveal_exec<T: ProbeFloat>(
    cmd: &str,
    protocol: exec::Protocol,
    args: &RevealArgs,
) -> Result<Revealed, Failure> {
    let timeout = limits::seconds("--timeout", args.timeout, false).map_err(Failure::Message)?;
    let grace = limits::seconds("--grace", args.grace, true).map_err(Failure::Message)?;
    let startup = match args.startup_timeout {
        Some(s) => limits::seconds("--startup-timeout", s, false).map_err(Failure::Message)?,
        None => timeout,
    };
    if args.n() == 0 {
        return Err(Failure::Message("--n 0: there is nothing to sum".into()));
    }
    if args.op == exec::Op::Dot && args.protocol.is_delta() {
        return Err(Failure::Message(
            "--op dot sends both operands whole: use --protocol text or binary".into(),
        ));
    }
    let mut target = exec::Exec::<T>::spawn(cmd, protocol, timeout, grace)
        .map_err(Failure::Message)?
        .with_startup_timeout(startup)
        .with_wire(wire_of(args.dtype), args.op);
    let estimate = budget::Estimate::new(args.algorithm, args.n(), 1, args.n() as f64);
    let progress = budget::Progress::new(estimate.calls, "probes");
    let p = progress.clone();
    target.on_answer(move |k| p.set(k));
    let r = run_engine(&mut target, args);
    progress.finish();
    r
}

/// A program's tree, the probes it took and the arithmetic measured at its fused nodes.
type Revealed = (SumTree, u64, Option<fprev::reveal::FittedFused>);

/// The arithmetic lines of `--format summary` under a tree's description: what the
/// fit measured at fused nodes ([`arithmetic_lines`]), or for a tree of binary nodes
/// the one arithmetic its verified replay stands for (each addition rounded to nearest
/// in the accumulator `acc`). A flat node of an order-independent sum, accepted without
/// a fit, has no measured arithmetic and gets no line.
fn summary_lines(
    tree: &SumTree,
    arithmetic: Option<&fprev::reveal::FittedFused>,
    acc: &str,
) -> String {
    if let Some(a) = arithmetic {
        return arithmetic_lines(a);
    }
    let n = tree.leaf_count();
    let binary = (n..n + tree.inner_count()).all(|v| tree.children(v).len() <= 2);
    if binary && tree.inner_count() > 0 {
        format!("additions: binary, each rounded to nearest in {acc} (no fused nodes)\n")
    } else {
        String::new()
    }
}

/// `--format summary` of elements in several orders: each group's tree in words, then
/// its own arithmetic, numbered as the groups on stderr are.
fn group_summaries(o: &ElementOrders, acc: &str) -> String {
    o.groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            format!(
                "group {i}: {}\n{}",
                g.tree.describe(),
                summary_lines(&g.tree, g.arithmetic.as_ref(), acc)
            )
        })
        .collect()
}

/// The measured arithmetic of `--format summary`, one line per quantity.
fn arithmetic_lines(a: &fprev::reveal::FittedFused) -> String {
    use fprev::fused::{AccumulatorJoin, Alignment};
    let mut out = String::new();
    let rule = match a.alignment {
        Alignment::OperandExponents => "by the operands' exponent sum",
        Alignment::ProductExponent => "by each term's own exponent",
    };
    let told = if a.alignment_decided {
        ""
    } else {
        " (not told apart from the other rule)"
    };
    out += &format!(
        "alignment: {rule}{told}, {} fraction bits kept ({}-{} consistent), {}\n",
        a.frac,
        a.frac,
        a.frac_max,
        a.align_rounding_words()
    );
    if let Some(halves) = a.halves_words() {
        out += &format!("products: {halves}\n");
    }
    out += &match a.frac_out {
        Some(k) => format!(
            "block results: truncated to {k} fraction bits{}\n",
            a.result_alternatives()
        ),
        None => format!(
            "block results: rounded to nearest{}\n",
            a.result_alternatives()
        ),
    };
    if let Some(s) = a.structure {
        out += &format!("products per block: {}\n", s.nfma);
        let late = match a.binary {
            fprev::reveal::BinaryNodes::Rounded => "with round to nearest",
            _ => "in a fused node",
        };
        let aligned = match a.accumulator_cut {
            fprev::fused::AccumulatorCut::TwoStage {
                block_frac,
                acc_frac,
                rounding,
                ..
            } => {
                let [(b0, b1), (c0, c1)] = a
                    .accumulator_cut_ranges
                    .unwrap_or([(block_frac, block_frac), (acc_frac, acc_frac)]);
                let also = if a.accumulator_cut_rounding_decided {
                    ""
                } else {
                    " (or the other way, not told apart)"
                };
                let reach = a
                    .acc_reach_words()
                    .map(|w| format!("; {w}"))
                    .unwrap_or_default();
                format!(
                    "aligned with each block's products after they are summed, the sum and c \
                     cut {}{also} to {block_frac} ({b0}-{b1} consistent) and {acc_frac} \
                     ({c0}-{c1} consistent) fraction bits below the larger exponent, then \
                     rounded to nearest{reach}",
                    rounding.words()
                )
            }
            fprev::fused::AccumulatorCut::WithProducts => {
                "aligned and cut with each block's products".to_string()
            }
        };
        out += &match s.accumulator {
            Some(AccumulatorJoin::Aligned) => format!("running value (c): {aligned}\n"),
            Some(AccumulatorJoin::Late) => {
                format!("running value (c): added after each block, {late}\n")
            }
            None => "running value (c): not seen (one block, nothing runs before it)\n".to_string(),
        };
        out += &match s.promotion {
            Some(p) => {
                format!("promotion interval (products): {p}, chains added with round to nearest\n")
            }
            None => format!(
                "promotion interval (products): none within {} (every {} or more consistent)\n",
                s.n, s.unpromoted_from
            ),
        };
    }
    out += &format!(
        "verified: {} random inputs reproduced bit for bit\n",
        a.inputs
    );
    out
}

fn run_engine<T: ProbeFloat>(
    target: &mut exec::Exec<T>,
    args: &RevealArgs,
) -> Result<Revealed, Failure> {
    let mut reveal = Reveal::new(args.n())
        .algorithm(algorithm_of(args))
        .pivot(Pivot::Random)
        .seed(args.seed)
        .accept_flat(args.accept_flat)
        .known_orders(!args.no_guess)
        .max_memory(args.max_memory);
    if let Some(hint) = &args.hint {
        reveal = reveal.hint(read_hint(hint)?);
    }
    let r = reveal.run_target(&mut *target)?;
    if let Some(name) = &r.recognized {
        errln!("recognized the {name} order (proved with one probe per inner node)");
    }
    if let Some(f) = r.arithmetic() {
        errln!("truncating fused nodes, verified under a fitted block-FMA model: {f}");
    }
    // one value has no additions, so nothing about adders to say
    if r.verification.excluded_width < 53 && r.verification.fused.is_none() && args.n() > 1 {
        errln!(
            "note: {}",
            fused_width_note(target, args.n(), &r.verification)
        );
    }
    if let Some(bits) = r.verification.count_bits {
        errln!("unit counts are exact only below 2^{bits}: counted in windows of that size");
    }
    let arithmetic = r.arithmetic();
    Ok((r.tree, r.probes, arithmetic))
}

/// What the probes of a reveal rule out about fused multi-term adders. A format with
/// range to spare (f32) could rule out more: the masks widen to its range only once an
/// answer shows a truncating node, so the note says so rather than blaming the format,
/// which is right only where no wider masks exist (FP8 products).
fn fused_width_note<T: ProbeFloat>(
    target: &exec::Exec<T>,
    n: usize,
    verification: &fprev::reveal::Verification,
) -> String {
    use fprev::Target as _;
    let excluded = verification.excluded_width;
    let head = format!(
        "these probes exclude fused adders that keep fewer than {excluded} fraction bits below their largest term; a wider one could answer them like a different tree"
    );
    let input = target.input_format().unwrap_or(T::FORMAT);
    let wider = (!verification.wide_masks)
        .then(|| fprev::float::ProbeScale::wide_for_formats(input, T::FORMAT, n))
        .flatten();
    match wider {
        Some(w) => format!(
            "{head} (the masks widen to this format's range, 2^{} units, only when an answer shows a truncating node; none did)",
            w.gap()
        ),
        None => format!("{head}, and this format's range allows no wider masks"),
    }
}

/// A hint given as canonical text, or as a file holding canonical text or JSON.
fn read_hint(hint: &str) -> Result<SumTree, Failure> {
    let t = hint.trim();
    if t.starts_with('(') || t.parse::<usize>().is_ok() {
        return parse_tree(t).map_err(|e| Failure::Message(format!("--hint {hint}: {e}")));
    }
    read_tree(&PathBuf::from(hint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fprev::fused::BlockFma;
    use fprev::ops::{Element, OrderGroup, ReductionShape};

    /// A V100-like block-FMA chain's fitted arithmetic, as a reveal measures it.
    fn fused_arithmetic() -> fprev::reveal::FittedFused {
        let model = BlockFma::V100;
        let r = Reveal::new(16)
            .run_target(fprev::target::FnTarget(|x: &[f32]| model.sum(x)))
            .unwrap();
        r.arithmetic().unwrap()
    }

    #[test]
    fn summary_lines_state_binary_fused_or_no_arithmetic() {
        assert_eq!(
            summary_lines(&SumTree::sequential(4), None, "f16"),
            "additions: binary, each rounded to nearest in f16 (no fused nodes)\n"
        );
        // an order-independent sum accepted as one flat node: nothing was measured
        assert_eq!(summary_lines(&SumTree::fused(4), None, "f32"), "");
        assert_eq!(summary_lines(&SumTree::sequential(1), None, "f32"), "");
        let a = fused_arithmetic();
        let text = summary_lines(&BlockFma::V100.tree(16), Some(&a), "f32");
        assert!(text.starts_with("alignment: "), "{text}");
        assert!(
            text.contains("products per block: 4 (4-4 consistent)"),
            "{text}"
        );
    }

    #[test]
    fn each_group_of_elements_gets_its_own_arithmetic() {
        let fused = BlockFma::V100.tree(16);
        let o = ElementOrders {
            shape: ReductionShape {
                lanes: 2,
                k: 16,
                outputs: 1,
            },
            groups: vec![
                OrderGroup {
                    tree: fused.clone(),
                    elements: vec![Element { lane: 0, output: 0 }],
                    arithmetic: Some(fused_arithmetic()),
                },
                OrderGroup {
                    tree: SumTree::sequential(16),
                    elements: vec![Element { lane: 1, output: 0 }],
                    arithmetic: None,
                },
            ],
            unresolved: Vec::new(),
            calls: 0,
            probes: 0,
            operands_spread: false,
        };
        let text = group_summaries(&o, "f32");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("group 0: {}", fused.describe()));
        assert!(lines[1].starts_with("alignment: "), "{text}");
        let second = lines
            .iter()
            .position(|l| l.starts_with("group 1: "))
            .unwrap();
        assert_eq!(lines[second], "group 1: 16 in order");
        assert_eq!(
            lines[second + 1..],
            ["additions: binary, each rounded to nearest in f32 (no fused nodes)"]
        );
    }
}
