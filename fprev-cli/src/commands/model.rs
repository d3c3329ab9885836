//! `fprev model`: a program's (or built-in target's) summation order as a function of the
//! length, fitted at chosen lengths and proved at lengths it did not see
//! ([`fprev::model::fit_with`]), printed as a spec and in words, and optionally emitted
//! as code (`--emit rust|c|python`).

use std::process::ExitCode;
use std::time::Instant;

use fprev::float::FloatFormat;
use fprev::model::{FitConfig, Lang, OrderModel};
use fprev::target::{FnTarget, ProbeBatch, Target, TargetError};
use fprev::ProbeFloat;

use crate::console::{write_out, CommandFailure};
use crate::flags::{accumulator, dtype_name, parse_values, wire_of, DtypeArg, ProgramWaits};
use crate::{exec, limits};

#[derive(clap::Args)]
pub struct ModelArgs {
    /// A built-in sum: iter-sum, unrolled4, ndarray-sum, rayon-sum (with --threads).
    /// Omit with --exec.
    target: Option<String>,
    /// The program: it reads one probe per line and answers one number per line, as
    /// `fprev reveal --exec`; a `{}` in the command is replaced by each length.
    #[arg(long, conflicts_with = "target")]
    exec: Option<String>,
    /// The lengths the model is for: `1..2048` (both ends included), `1,2,4,8`, or both.
    #[arg(long)]
    sizes: String,
    /// Float type of the values sent.
    #[arg(long, value_enum, default_value = "f32")]
    dtype: DtypeArg,
    /// Type of the answer and of the accumulation, when wider than --dtype.
    #[arg(long, value_enum)]
    acc_dtype: Option<DtypeArg>,
    /// Also write the model as one self-contained function `sum` in this language.
    #[arg(long, value_parser = ["rust", "c", "python"])]
    emit: Option<String>,
    /// Write the emitted code to FILE instead of standard output.
    #[arg(long, value_name = "FILE", requires = "emit")]
    out: Option<std::path::PathBuf>,
    /// Lengths the model is proved at after it fits (half above the largest fitted one).
    #[arg(long, default_value_t = 8)]
    proofs: usize,
    /// How far above the largest fitted length proofs reach, as a factor.
    #[arg(long, default_value_t = 10)]
    reach: usize,
    /// Seed of the proof lengths.
    #[arg(long, default_value_t = 49)]
    seed: u64,
    /// rayon-sum's thread count (its order is only fixed when no job is stolen: 1; from
    /// 2 on the fit is refused with the lengths where one input gave two sums).
    #[arg(long)]
    threads: Option<usize>,
    /// Encoding of probes (see `fprev reveal --help`).
    #[arg(long, value_enum, default_value = "text")]
    protocol: exec::Protocol,
    /// Seconds to wait for each answer.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Seconds each program has to exit after its input is closed.
    #[arg(long, default_value_t = 2.0)]
    grace: f64,
}

/// The built-in sums a model can be fitted to.
const BUILTINS: &str = "iter-sum, unrolled4, ndarray-sum, rayon-sum";

/// Runs `fprev model`: the lengths fitted and proved, the model printed (and emitted).
pub fn run(args: &ModelArgs) -> Result<ExitCode, CommandFailure> {
    let start = Instant::now();
    let sizes = parse_values(&args.sizes)
        .map_err(|e| CommandFailure::Message(format!("--sizes {:?}: {e}", args.sizes)))?;
    let acc = accumulator(args.dtype, args.acc_dtype)?;
    let config = FitConfig::default()
        .proofs(args.proofs)
        .reach(args.reach)
        .seed(args.seed);
    let largest = sizes.last().copied().unwrap_or(0) * args.reach.max(2);
    limits::vector(largest, 8, 8 << 30).map_err(CommandFailure::Message)?;
    let (what, model) = match (&args.target, &args.exec) {
        (Some(name), _) => {
            if args.dtype != acc || !matches!(acc, DtypeArg::F32 | DtypeArg::F64) {
                return Err(CommandFailure::Message(format!(
                    "{name} sums f32 or f64 in its own type: pass --dtype f32 or f64, without --acc-dtype"
                )));
            }
            let model = match acc {
                DtypeArg::F64 => fit_builtin::<f64>(name, args.threads, &config, &sizes)?,
                _ => fit_builtin::<f32>(name, args.threads, &config, &sizes)?,
            };
            (name.clone(), model)
        }
        (None, Some(_)) => {
            let model = match acc {
                DtypeArg::F32 => fit_exec::<f32>(args, &config, &sizes)?,
                DtypeArg::F64 => fit_exec::<f64>(args, &config, &sizes)?,
                DtypeArg::F16 => fit_exec::<fprev::half::f16>(args, &config, &sizes)?,
                _ => fit_exec::<fprev::half::bf16>(args, &config, &sizes)?,
            };
            (
                format!("{:?}", args.exec.as_deref().unwrap_or_default()),
                model,
            )
        }
        (None, None) => {
            return Err(CommandFailure::Message(format!(
                "name a built-in sum ({BUILTINS}) or pass --exec \"<command>\""
            )))
        }
    };
    errln!(
        "fitted {what} ({}) over {} lengths in {:.2} s",
        dtype_name(args.dtype),
        sizes.len(),
        start.elapsed().as_secs_f64()
    );
    let mut text = format!("{model}\n{}\n", model.describe());
    if let Some(lang) = &args.emit {
        let lang: Lang = lang.parse().map_err(CommandFailure::Message)?;
        let code = model.emit(lang);
        match &args.out {
            Some(path) => std::fs::write(path, code)
                .map_err(|e| CommandFailure::Message(format!("--out {}: {e}", path.display())))?,
            None => text = format!("{text}\n{code}"),
        }
    }
    write_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn failure(e: fprev::model::ModelError) -> CommandFailure {
    CommandFailure::Message(e.to_string())
}

fn fit_builtin<T: crate::builtins::Real>(
    name: &str,
    threads: Option<usize>,
    config: &FitConfig,
    sizes: &[usize],
) -> Result<OrderModel, CommandFailure> {
    let fit = |f: &dyn Fn(&[T]) -> T| {
        fprev::model::fit_with(config, |_n| FnTarget(|x: &[T]| f(x)), sizes.iter().copied())
            .map_err(failure)
    };
    if threads.is_some() && name != "rayon-sum" {
        return Err(CommandFailure::Message(format!(
            "--threads applies to rayon-sum, not {name}"
        )));
    }
    match name {
        "iter-sum" => fit(&|x| x.iter().copied().sum::<T>()),
        "unrolled4" => fit(&|x| crate::builtins::unrolled4(x)),
        "ndarray-sum" => fit(&|x| ndarray::ArrayView1::from(x).sum()),
        "rayon-sum" => {
            use rayon::prelude::*;
            let t = threads.unwrap_or(1);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .map_err(|e| {
                    CommandFailure::Message(format!("cannot start {t} rayon threads: {e}"))
                })?;
            fit(&|x| pool.install(|| x.par_iter().copied().sum::<T>())).map_err(|e| match e {
                // the refusal says what does have a model
                CommandFailure::Message(m) if m.contains("changes from call to call") => {
                    CommandFailure::Message(format!(
                        "{m}\n(rayon splits a stolen job again, and which jobs are stolen \
                         depends on the threads' timing; with --threads 1 nothing is stolen \
                         and rayon-sum fits rayon-halving threads=1)"
                    ))
                }
                other => other,
            })
        }
        other => Err(CommandFailure::Message(format!(
            "no built-in sum named {other:?} ({BUILTINS})"
        ))),
    }
}

/// A program started for one length, or why it could not be: the fit reports the
/// failure with the length.
enum Spawned<T> {
    Ready(Box<exec::Exec<T>>),
    Failed(String),
}

impl<T: ProbeFloat> Target<T> for Spawned<T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        match self {
            Spawned::Ready(e) => e.call(x),
            Spawned::Failed(m) => Err(TargetError::new(m.clone())),
        }
    }

    fn input_format(&self) -> Option<FloatFormat> {
        match self {
            Spawned::Ready(e) => e.input_format(),
            Spawned::Failed(_) => None,
        }
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        match self {
            Spawned::Ready(e) => e.replay_format(),
            Spawned::Failed(_) => None,
        }
    }

    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        match self {
            Spawned::Ready(e) => e.random_input(seed, x),
            Spawned::Failed(_) => false,
        }
    }

    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        match self {
            Spawned::Ready(e) => e.operand_exponents(x),
            Spawned::Failed(_) => None,
        }
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        match self {
            Spawned::Ready(e) => e.probe_batch(batch, out),
            Spawned::Failed(m) => Err(TargetError::new(m.clone())),
        }
    }
}

fn fit_exec<T: ProbeFloat>(
    args: &ModelArgs,
    config: &FitConfig,
    sizes: &[usize],
) -> Result<OrderModel, CommandFailure> {
    let waits = ProgramWaits::checked(args.timeout, None, args.grace)?;
    let exec_cmd = args.exec.as_deref().unwrap_or_default();
    let spawn = |n: usize| {
        let command = exec_cmd.replace("{}", &n.to_string());
        match exec::Exec::<T>::spawn(&command, args.protocol, waits.answer, waits.grace) {
            Ok(e) => Spawned::Ready(Box::new(
                e.with_wire(wire_of(args.dtype), exec::ProgramOp::Sum),
            )),
            Err(e) => Spawned::Failed(e.to_string()),
        }
    };
    fprev::model::fit_with(config, spawn, sizes.iter().copied()).map_err(failure)
}
