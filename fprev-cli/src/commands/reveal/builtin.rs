//! `fprev reveal <target>`: a built-in library target, every output element of a matrix
//! product, after the options it refuses.

use std::process::ExitCode;
use std::time::Instant;

use super::printing::emit;
use super::{algorithm_of, config, ignored_options, RevealFlags};
use crate::builtins;
use crate::console::CommandFailure;
use crate::exec;
use crate::flags::{dtype_name, DtypeArg};
use crate::limits;
use crate::reveal_cost::{Estimate, RevealProgress};

/// Reveals the built-in target `name` and prints its tree (a matrix target's element
/// groups on standard error).
pub fn run(name: &str, args: &RevealFlags, start: Instant) -> Result<ExitCode, CommandFailure> {
    let Some(b) = builtins::find(name) else {
        return Err(CommandFailure::Message(format!(
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
    let elem = if args.dtype == DtypeArg::F64 { 8 } else { 4 };
    if b.matrix {
        limits::matrix(size.n, size.rows, size.cols, elem, args.max_memory)
            .map_err(CommandFailure::Message)?;
    } else {
        limits::vector(size.n, elem, args.max_memory).map_err(CommandFailure::Message)?;
    }
    fprev::reveal::check_memory(size.n, algorithm_of(args), elem, args.max_memory)?;
    for w in ignored_options(args, b.matrix) {
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
    let estimate = Estimate::new(args.algorithm, size.n, lanes, per_call);
    estimate.check(&format!("{name} at n = {}", size.n), args.yes)?;
    let progress = RevealProgress::new(estimate.calls, "calls");
    let p = progress.clone();
    let cfg = config(args).on_call(move |calls| p.set(calls));
    let orders = match (name, args.dtype) {
        ("matrixmultiply-f16", _) => builtins::reveal_f16_operands(size, &cfg),
        ("unrolled4", DtypeArg::F16) => {
            builtins::reveal_unrolled::<fprev::half::f16>(args.n(), &cfg)
        }
        ("unrolled4", DtypeArg::Bf16) => {
            builtins::reveal_unrolled::<fprev::half::bf16>(args.n(), &cfg)
        }
        (_, DtypeArg::F64) => builtins::reveal::<f64>(name, size, &cfg, args.threads),
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
    args: &RevealFlags,
) -> Result<(), CommandFailure> {
    let dt = dtype_name(args.dtype);
    // the one built-in with narrower operands than its accumulator
    let mixed = name == "matrixmultiply-f16";
    if mixed && args.dtype == DtypeArg::F16 && args.acc_dtype != Some(DtypeArg::F32) {
        return Err(CommandFailure::Message(format!(
            "{name} accumulates f16 operands in f32: pass --dtype f16 --acc-dtype f32"
        )));
    }
    let acc_ok = |a: DtypeArg| a == args.dtype || (mixed && a == DtypeArg::F32);
    if args.acc_dtype.is_some_and(|a| !acc_ok(a)) {
        return Err(CommandFailure::Message(format!(
            "{name} accumulates in its --dtype; --acc-dtype applies to --exec programs and to matrixmultiply-f16"
        )));
    }
    if args.op == exec::ProgramOp::Dot {
        return Err(CommandFailure::Message(
            "--op dot applies to --exec programs; the built-in dot and matrix targets are named (see `fprev targets`)".into(),
        ));
    }
    if !b.dtypes.contains(&dt) {
        return Err(CommandFailure::Message(format!(
            "{name} supports --dtype {}",
            b.dtypes.join(", ")
        )));
    }
    Ok(())
}
