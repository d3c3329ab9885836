//! `fprev sweep`: one program (or built-in target) revealed at every value of a
//! parameter, to find where its summation order changes (a kernel that blocks its sums
//! from some batch size on).
//!
//! `{}` in the command is replaced by each value; every value gets a fresh program. Each
//! value's tree is first proved to be the previous value's and searched only when the
//! proof fails ([`fprev::sweep`](mod@fprev::sweep)).

use std::process::ExitCode;
use std::time::Instant;

use fprev::model::SweepModel;
use fprev::target::TargetError;
use fprev::{ProbeFloat, Reveal, Sweep, SweepError};

use crate::builtin_sweeps as builtin;
use crate::console::{write_out, CommandFailure};
use crate::flags::{
    acc_bytes, accumulator, dtype_name, parse_values, wire_of, DtypeArg, ProgramWaits,
};
use crate::{exec, limits};

#[derive(clap::Args)]
pub struct SweepArgs {
    /// A built-in target: the matrix products (matrixmultiply-gemm, ndarray-matmul,
    /// nalgebra-matmul) are swept over their rows, element (0, 0) revealed and row 0
    /// checked; rayon-sum over its threads. Omit with --exec.
    target: Option<String>,
    /// The program, with `{}` where each value goes (`"python3 kernel.py --rows {}"`); it
    /// reads one probe per line and answers one number per line, as `fprev reveal --exec`.
    #[arg(long, conflicts_with = "target")]
    exec: Option<String>,
    /// The values: `1..64` (both ends included), `1,2,4,8`, or both (`1..4,8,16`), in
    /// increasing order.
    #[arg(long)]
    values: String,
    /// Number of summands (not with --lengths, where each value is that number).
    #[arg(short = 'n', long, required_unless_present = "lengths")]
    n: Option<usize>,
    /// Sweep over lengths: each value is the number of summands (`k` of the matrix
    /// built-ins, whose element (0, 0) is revealed; `n` of an --exec program, `{}` in its
    /// command). A length keeps the previous one's order when its tree cut to that
    /// length is the previous tree: the order only grew.
    #[arg(long, conflicts_with = "n")]
    lengths: bool,
    /// Rows of A for the matrix built-ins swept with --lengths (default 1).
    #[arg(long, requires = "lengths")]
    rows: Option<usize>,
    /// What a value stands for, in the output (`M = 1..3: ...`); default `value` (`n`
    /// with --lengths), or `rows` / `threads` (`k`) for a built-in target.
    #[arg(long)]
    label: Option<String>,
    /// Columns of B for the matrix built-ins (default n; 1 with --lengths).
    #[arg(long)]
    cols: Option<usize>,
    /// Float type of the values sent.
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DtypeArg,
    /// Type of the answer and of the accumulation, when wider than --dtype.
    #[arg(long, value_enum)]
    acc_dtype: Option<DtypeArg>,
    /// Output: `summary` (each range's tree in words; with --lengths, the order model
    /// that gives every length, or a handful of runs each with its model, when there is
    /// one), `text` (each range's canonical tree), `json` (breakpoints and ranges with
    /// their trees; with --lengths, also `model` and `pieces`).
    #[arg(long, value_enum, default_value = "summary")]
    format: SweepFormat,
    /// With --lengths and the summary format: print the ranges as well as the order
    /// model (without a model, the ranges are printed anyway).
    #[arg(long, requires = "lengths")]
    ranges: bool,
    /// Also write a picture of the ranges to FILE (SVG): the values as a strip of cells
    /// coloured by their tree, breakpoints in red, the values searched rather than proved
    /// marked, one band per range with its tree in words.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
    /// Encoding of probes (see `fprev reveal --help`).
    #[arg(long, value_enum, default_value = "text")]
    protocol: exec::Protocol,
    /// Seed of pivots and check inputs.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Seconds each program has to exit after its input is closed.
    #[arg(long, default_value_t = 2.0)]
    grace: f64,
    /// Search every value from scratch, without first trying the known library orders
    /// (the previous value's tree is still tried first).
    #[arg(long)]
    no_guess: bool,
    /// Accept an order-independent program: its tree is one n-way node.
    #[arg(long)]
    accept_flat: bool,
    /// Memory budget (bytes, or with K, M, G, T).
    #[arg(long, value_parser = limits::bytes, default_value = "8G")]
    max_memory: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SweepFormat {
    Summary,
    Text,
    Json,
}

/// Runs `fprev sweep`: the flags checked, every value revealed, the ranges printed.
pub fn run(args: &SweepArgs) -> Result<ExitCode, CommandFailure> {
    let start = Instant::now();
    let (what, label) = subject(args)?;
    let values = parse_values(&args.values)
        .map_err(|e| CommandFailure::Message(format!("--values {:?}: {e}", args.values)))?;
    let acc = accumulator(args.dtype, args.acc_dtype)?;
    let elem = acc_bytes(acc);
    let n = longest_sum(args, &values, elem)?;
    let sweep = match &args.target {
        Some(name) => sweep_builtin(name, args, &values, acc, elem, &label)?,
        None => match acc {
            DtypeArg::F32 => sweep_exec::<f32>(args, &values, &label)?,
            DtypeArg::F64 => sweep_exec::<f64>(args, &values, &label)?,
            DtypeArg::F16 => sweep_exec::<fprev::half::f16>(args, &values, &label)?,
            _ => sweep_exec::<fprev::half::bf16>(args, &values, &label)?,
        },
    };
    let proved = sweep.points().iter().filter(|p| p.from_previous).count();
    let (length, how) = if args.lengths {
        (
            "length = the value".to_string(),
            "each length revealed on its own".to_string(),
        )
    } else {
        (
            format!("n = {n}"),
            format!(
                "{proved} proved to keep the previous value's order, {} revealed afresh",
                values.len() - proved
            ),
        )
    };
    errln!(
        "swept {} values of {what} ({}, {length}) in {:.2} s: {how}; {} probes, {} check calls",
        values.len(),
        dtype_name(args.dtype),
        start.elapsed().as_secs_f64(),
        sweep.probes(),
        sweep.replays()
    );
    if let Some(path) = &args.svg {
        let title = format!("{what}: {}, {length}", dtype_name(args.dtype));
        let picture = fprev::picture::Picture::new().title(title);
        std::fs::write(path, sweep.picture(&label, &picture))
            .map_err(|e| CommandFailure::Message(format!("--svg {}: {e}", path.display())))?;
    }
    let text = if args.lengths && args.format == SweepFormat::Summary {
        // the order model, or why none and the ranges
        let mut text = fprev::model::describe_sweep(&sweep, &label);
        if args.ranges && sweep.model().is_ok() {
            text.push_str(&render(&sweep, args.format, &label));
        }
        text
    } else {
        render(&sweep, args.format, &label)
    };
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// What is swept, as the output names it (the target, or the quoted command), and the
/// word for a value (`--label`, or the natural one: rows, threads, k, n, value).
fn subject(args: &SweepArgs) -> Result<(String, String), CommandFailure> {
    match (&args.target, &args.exec) {
        (Some(name), _) => {
            let over = builtin::Over::of(name).map_err(CommandFailure::Message)?;
            let natural = if args.lengths { "k" } else { over.label() };
            Ok((name.clone(), args.label.clone().unwrap_or(natural.into())))
        }
        (None, Some(exec)) => {
            if !exec.contains("{}") {
                return Err(CommandFailure::Message(format!(
                    "--exec {exec:?} has no {{}} for the value to go in (\"my-kernel --rows {{}}\")"
                )));
            }
            if args.cols.is_some() {
                return Err(CommandFailure::Message(
                    "--cols applies to the built-in matrix products, not to --exec programs"
                        .into(),
                ));
            }
            let natural = if args.lengths { "n" } else { "value" };
            Ok((format!("{exec:?}"), args.label.clone().unwrap_or(natural.into())))
        }
        (None, None) => Err(CommandFailure::Message(
            "name a built-in target (matrixmultiply-gemm, ndarray-matmul, nalgebra-matmul, rayon-sum) or pass --exec \"<command with {}>\"".into(),
        )),
    }
}

/// The length of the longest sum (`-n`, or with `--lengths` the largest value), refused
/// when empty or when its memory is over `--max-memory`, before anything runs.
fn longest_sum(args: &SweepArgs, values: &[usize], elem: usize) -> Result<usize, CommandFailure> {
    let n = match args.n {
        Some(n) => n,
        None => values.last().copied().unwrap_or(0),
    };
    if n == 0 {
        let what = if args.lengths { "--values" } else { "--n" };
        return Err(CommandFailure::Message(format!(
            "{what}: a sum of 0 values has nothing to sum"
        )));
    }
    limits::vector(n, elem, args.max_memory).map_err(CommandFailure::Message)?;
    fprev::reveal::check_memory(n, fprev::Algorithm::FPRev, elem, args.max_memory)?;
    Ok(n)
}

/// The engine's settings for every value (with --lengths, each value sets `n`).
fn engine(args: &SweepArgs) -> Reveal {
    Reveal::new(args.n.unwrap_or(1))
        .seed(args.seed)
        .accept_flat(args.accept_flat)
        .known_orders(!args.no_guess)
        .max_memory(args.max_memory)
}

/// A failed sweep, the value named as the output names it.
fn failure(e: SweepError, label: &str) -> CommandFailure {
    match e.size() {
        Some(value) => {
            let inner = e.reveal_error().map(|r| r.to_string()).unwrap_or_default();
            CommandFailure::Message(format!("at {label} = {value}: {inner}"))
        }
        None => CommandFailure::Message(e.to_string()),
    }
}

fn sweep_builtin(
    name: &str,
    args: &SweepArgs,
    values: &[usize],
    acc: DtypeArg,
    elem: usize,
    label: &str,
) -> Result<Sweep, CommandFailure> {
    let over = builtin::Over::of(name).map_err(CommandFailure::Message)?;
    if args.dtype != acc || !matches!(acc, DtypeArg::F32 | DtypeArg::F64) {
        return Err(CommandFailure::Message(format!(
            "{name} sums f32 or f64 in its own type: pass --dtype f32 or f64, without --acc-dtype"
        )));
    }
    if args.protocol != exec::Protocol::Text {
        return Err(CommandFailure::Message(
            "--protocol applies to --exec programs".into(),
        ));
    }
    if args.lengths && over != builtin::Over::Rows {
        return Err(CommandFailure::Message(format!(
            "--lengths sweeps k of the matrix products (matrixmultiply-gemm, ndarray-matmul, nalgebra-matmul) or n of an --exec program, not {name}"
        )));
    }
    let cols = args
        .cols
        .unwrap_or(if args.lengths { 1 } else { args.n.unwrap_or(1) });
    if over == builtin::Over::Rows {
        if cols == 0 {
            return Err(CommandFailure::Message(
                "--cols 0: the product has no row 0".into(),
            ));
        }
        if args.rows == Some(0) {
            return Err(CommandFailure::Message(
                "--rows 0: the product has no row 0".into(),
            ));
        }
        // the largest value needs the most memory: refused before anything runs
        let largest = values.last().copied();
        let (k, rows) = match (args.lengths, largest) {
            (true, Some(k)) => (k, args.rows.unwrap_or(1)),
            (false, Some(rows)) => (args.n.unwrap_or(1), rows),
            (_, None) => (0, 0),
        };
        limits::matrix(k, rows, cols, elem, args.max_memory).map_err(CommandFailure::Message)?;
    } else if args.cols.is_some() {
        return Err(CommandFailure::Message(format!(
            "--cols applies to the matrix products, not to {name}"
        )));
    }
    let reveal = engine(args);
    let sweep = match (acc, args.n) {
        (DtypeArg::F64, Some(n)) => builtin::sweep::<f64>(name, over, &reveal, values, n, cols),
        (_, Some(n)) => builtin::sweep::<f32>(name, over, &reveal, values, n, cols),
        (DtypeArg::F64, None) => {
            builtin::sweep_k::<f64>(name, &reveal, values, args.rows.unwrap_or(1), cols)
        }
        (_, None) => builtin::sweep_k::<f32>(name, &reveal, values, args.rows.unwrap_or(1), cols),
    };
    sweep.map_err(|e| failure(e, label))
}

fn sweep_exec<T: ProbeFloat>(
    args: &SweepArgs,
    values: &[usize],
    label: &str,
) -> Result<Sweep, CommandFailure> {
    let waits = ProgramWaits::checked(args.timeout, None, args.grace)?;
    let exec_cmd = args.exec.as_deref().unwrap_or_default();
    let spawn = |value: usize| {
        let command = exec_cmd.replace("{}", &value.to_string());
        exec::Exec::<T>::spawn(&command, args.protocol, waits.answer, waits.grace)
            .map(|e| e.with_wire(wire_of(args.dtype), exec::ProgramOp::Sum))
            .map_err(TargetError::new)
    };
    let sweep = if args.lengths {
        engine(args).try_sweep_lengths(values.iter().copied(), spawn)
    } else {
        engine(args).try_sweep(values.iter().copied(), spawn)
    };
    sweep.map_err(|e| failure(e, label))
}

/// The JSON of a sweep over lengths as order models: `"model"` (the spec of the model
/// that gives every length, or null) and `"pieces"` (runs of lengths with their models;
/// empty without).
fn model_json(sweep: &Sweep) -> String {
    match sweep.model() {
        Ok(SweepModel::One(m)) => format!(",\"model\":\"{m}\",\"pieces\":[]"),
        Ok(SweepModel::Pieces(pieces)) => {
            let pieces: Vec<String> = pieces
                .iter()
                .map(|p| {
                    format!(
                        "{{\"first\":{},\"last\":{},\"sizes\":{},\"model\":\"{}\"}}",
                        p.first, p.last, p.sizes, p.model
                    )
                })
                .collect();
            format!(",\"model\":null,\"pieces\":[{}]", pieces.join(","))
        }
        Ok(_) | Err(_) => ",\"model\":null,\"pieces\":[]".into(),
    }
}

fn render(sweep: &Sweep, format: SweepFormat, label: &str) -> String {
    let span = |first: usize, last: usize| {
        if first == last {
            first.to_string()
        } else {
            format!("{first}..{last}")
        }
    };
    match format {
        SweepFormat::Summary => sweep
            .ranges()
            .iter()
            .map(|r| format!("{label} = {r}\n"))
            .collect(),
        SweepFormat::Text => sweep
            .ranges()
            .iter()
            .map(|r| format!("{label} = {}: {}\n", span(r.first, r.last), r.tree))
            .collect(),
        SweepFormat::Json => {
            let breakpoints: Vec<String> =
                sweep.breakpoints().iter().map(|b| b.to_string()).collect();
            let ranges: Vec<String> = sweep
                .ranges()
                .iter()
                .map(|r| {
                    format!(
                        "{{\"first\":{},\"last\":{},\"sizes\":{},\"tree\":{}}}",
                        r.first,
                        r.last,
                        r.sizes,
                        r.tree.to_json()
                    )
                })
                .collect();
            let model = if sweep.over_lengths() {
                model_json(sweep)
            } else {
                String::new()
            };
            format!(
                "{{\"n\":{},\"breakpoints\":[{}],\"ranges\":[{}]{model}}}\n",
                sweep.n(),
                breakpoints.join(","),
                ranges.join(",")
            )
        }
    }
}
