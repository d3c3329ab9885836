//! `fprev reveal --exec CMD --op scaled-dot`: a block-scaled dot, probed through its
//! scales (`crate::scaled` has the protocol and the search).

use std::process::ExitCode;
use std::time::Instant;

use super::{RevealFlags, RevealFormat};
use crate::console::{write_to, CommandFailure};
use crate::flags::{dtype_name, DtypeArg, ProgramWaits};
use crate::{exec, limits, scaled};

/// Reveals the scaled dot behind `cmd` and prints its tree in `--format`.
pub fn run(cmd: &str, args: &RevealFlags, start: Instant) -> Result<ExitCode, CommandFailure> {
    let shape = scaled::shape(
        args.n(),
        dtype_name(args.dtype),
        args.block,
        args.scale_dtype.as_deref(),
    )
    .map_err(CommandFailure::Message)?;
    if args.acc_dtype.is_some_and(|a| a != DtypeArg::F32) {
        return Err(CommandFailure::Message(
            "--op scaled-dot: the instructions accumulate in f32 (--acc-dtype f32)".into(),
        ));
    }
    let wire =
        match args.protocol {
            exec::Protocol::Text => scaled::ScaledWire::Text,
            exec::Protocol::Binary => scaled::ScaledWire::Binary(shape),
            _ => return Err(CommandFailure::Message(
                "--op scaled-dot speaks the text or the binary protocol (--protocol text|binary)"
                    .into(),
            )),
        };
    limits::vector(shape.line_len(), 8, args.max_memory).map_err(CommandFailure::Message)?;
    let waits = ProgramWaits::checked(args.timeout, args.startup_timeout, args.grace)?;
    let mut program =
        scaled::ScaledProgram::spawn(cmd, wire, waits.answer, waits.startup, waits.grace)
            .map_err(CommandFailure::Message)?;
    let report = scaled::reveal(&mut program, shape, args.seed).map_err(CommandFailure::Message)?;
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
        RevealFormat::Summary => format!("{}\n", report.summary()),
        RevealFormat::Json => format!("{}\n", report.tree.to_json()),
        RevealFormat::Dot => report.tree.to_dot(),
        RevealFormat::Svg => fprev::picture::Picture::new()
            .title(format!("{cmd}, k = {}, blocks of {}", shape.k, shape.block))
            .render(&report.tree),
        RevealFormat::Text => format!("{}\n", report.tree),
    };
    write_to(args.output.as_deref(), &text)?;
    Ok(ExitCode::SUCCESS)
}
