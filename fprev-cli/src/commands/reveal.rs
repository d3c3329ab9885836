//! `fprev reveal`: its flags, and the choice of flow: a built-in target ([`builtin`]), a
//! program behind `--exec` ([`program`], or [`scaled_dot`] for `--op scaled-dot`), or an
//! MPI collective launched under mpirun ([`collective`]); each prints through
//! [`printing`].

mod builtin;
mod collective;
mod printing;
mod program;
mod scaled_dot;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use fprev::ops::ElementReveal;
use fprev::Algorithm;

use crate::collectives;
use crate::console::CommandFailure;
use crate::exec;
use crate::flags::{accumulator, parse_algorithm, AlgorithmArg, DtypeArg};
use crate::limits;

/// `--format`: how the revealed tree is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RevealFormat {
    Text,
    /// The tree's structure in words (`SumTree::describe`), for trees too large to read.
    Summary,
    Dot,
    Json,
    Svg,
}

#[derive(Clone, clap::Args)]
pub struct RevealFlags {
    /// A built-in target (see `fprev targets`); omit with --exec.
    target: Option<String>,
    /// Number of summands (k of a matrix product); for mpi-allreduce and mpi-reduce,
    /// --ranks instead.
    #[arg(short = 'n', long, required_unless_present = "ranks")]
    n: Option<usize>,
    /// mpi-allreduce, mpi-reduce: ranks launched under mpirun (the leaves of the tree).
    /// A range (2..16) or a list (2,4,8) sweeps, printing a table.
    #[arg(long, conflicts_with = "n", value_parser = collectives::sweep_table::parse_sizes)]
    ranks: Option<collectives::sweep_table::Sizes>,
    /// mpi-allreduce, mpi-reduce: elements of each rank's message; a list or range
    /// sweeps, as --ranks does.
    #[arg(long, default_value = "1", value_parser = collectives::sweep_table::parse_sizes)]
    count: collectives::sweep_table::Sizes,
    /// mpi-allreduce, mpi-reduce: the element whose order is revealed, or `all`: every
    /// element, printed as groups of elements that share one order.
    #[arg(long, default_value = "0", value_parser = collectives::parse_element)]
    element: collectives::ElementChoice,
    /// For fprev's tests: the last rank of an MPI target `die`s or `hang`s.
    #[arg(long, hide = true)]
    mpi_fault: Option<String>,
    /// Float type of the values sent (the summands, or the operands with --op dot).
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DtypeArg,
    /// Type of the answer and of the accumulation, when wider than --dtype (numpy.sum
    /// of float16 accumulates in float32); default: f32 for FP8 values, else --dtype.
    #[arg(long, value_enum)]
    acc_dtype: Option<DtypeArg>,
    /// What the --exec program computes: `sum` of the n values, or `dot`: each probe
    /// holds 2n values, the n of `a` then the n of `b`, answered by their dot product
    /// (masks spread over both operands, which FP8 needs).
    #[arg(long, value_enum, default_value = "sum")]
    op: exec::ProgramOp,
    /// --op scaled-dot: elements per scale (16 for NVFP4, 32 for the MX formats).
    #[arg(long)]
    block: Option<usize>,
    /// --op scaled-dot: the scales' type, ue8m0 (MX) or ue4m3 (NVFP4).
    #[arg(long)]
    scale_dtype: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: RevealFormat,
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

impl RevealFlags {
    /// `-n`, or the rank count of an MPI target (clap requires one of the two).
    fn n(&self) -> usize {
        self.n
            .or(self.ranks.as_ref().and_then(|r| r.0.first().copied()))
            .unwrap_or(0)
    }
}

/// Runs `fprev reveal`: the flags checked against the target, then its flow.
pub fn run(args: &RevealFlags) -> Result<ExitCode, CommandFailure> {
    let start = Instant::now();
    if let Some(kind) = args
        .target
        .as_deref()
        .and_then(collectives::CollectiveKind::of_target)
    {
        return collective::run(kind, args, start);
    }
    if args.ranks.is_some() {
        return Err(CommandFailure::Message(
            "--ranks applies to mpi-allreduce and mpi-reduce; other targets take -n".into(),
        ));
    }
    if let AlgorithmArg::Collective(name) = args.algorithm {
        return Err(CommandFailure::Message(format!(
            "--algorithm {name} names an Open MPI algorithm, for mpi-allreduce and mpi-reduce; \
             this target takes fprev or basic"
        )));
    }
    if let Some(cmd) = &args.exec {
        if args.op == exec::ProgramOp::ScaledDot {
            return scaled_dot::run(cmd, args, start);
        }
        return program::run(cmd, args, start);
    }
    if args.op == exec::ProgramOp::ScaledDot {
        return Err(CommandFailure::Message(
            "--op scaled-dot applies to --exec programs".into(),
        ));
    }
    let Some(name) = args.target.as_deref() else {
        return Err(CommandFailure::Message(
            "name a built-in target (see `fprev targets`) or pass --exec \"<command>\"".into(),
        ));
    };
    builtin::run(name, args, start)
}

/// The element reveal's settings from the flags (a built-in target, MPI elements).
fn config(args: &RevealFlags) -> ElementReveal {
    let algorithm = algorithm_of(args);
    ElementReveal::new()
        .algorithm(algorithm)
        .seed(args.seed)
        .accept_flat(args.accept_flat)
        .max_memory(args.max_memory)
}

/// The engine's algorithm: FPRev, or BasicFPRev for `--algorithm basic`.
fn algorithm_of(args: &RevealFlags) -> Algorithm {
    match args.algorithm {
        AlgorithmArg::Fprev | AlgorithmArg::Collective(_) => Algorithm::FPRev,
        AlgorithmArg::Basic => Algorithm::Basic,
    }
}

/// The accumulator type: `--acc-dtype`, or f32 for FP8 and TF32 values, or `--dtype`;
/// never narrower than the values, never FP8 or TF32.
fn acc_dtype(args: &RevealFlags) -> Result<DtypeArg, CommandFailure> {
    accumulator(args.dtype, args.acc_dtype)
}

/// Warnings for options given that the chosen target does not use.
fn ignored_options(args: &RevealFlags, matrix: bool) -> Vec<String> {
    let mut w = Vec::new();
    let target = args.target.as_deref().unwrap_or("--exec");
    let mut unused = |flag: &str, why: &str| {
        w.push(format!(
            "warning: {flag} does not apply to {target} ({why}); ignored"
        ))
    };
    if args.threads.is_some() && args.target.as_deref() != Some("rayon-sum") {
        unused("--threads", "only rayon-sum runs on a thread pool");
    }
    if (args.rows.is_some() || args.cols.is_some()) && !matrix {
        unused(
            "--rows/--cols",
            "only matrix products have rows and columns",
        );
    }
    let collective = args
        .target
        .as_deref()
        .and_then(collectives::CollectiveKind::of_target)
        .is_some();
    if !collective && (args.count.0 != [1] || args.element != collectives::ElementChoice::One(0)) {
        unused("--count/--element", "only MPI collectives have messages");
    }
    // fprev's own ranks answer as --exec programs do: --timeout and --grace apply
    if args.exec.is_none() && !collective {
        if args.protocol != exec::Protocol::Text {
            unused("--protocol", "it is for --exec programs");
        }
        if args.timeout != 10.0 {
            unused("--timeout", "it is for --exec programs");
        }
    }
    w
}
