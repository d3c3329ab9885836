//! `fprev reveal --exec CMD`: a program that reads probes and answers sums (or dots),
//! revealed in its accumulator's type; the notes a reveal leaves on standard error.

use std::process::ExitCode;
use std::time::Instant;

use fprev::reveal::Pivot;
use fprev::{ProbeFloat, Reveal, SumTree};

use super::printing::emit;
use super::{acc_dtype, algorithm_of, ignored_options, RevealFlags};
use crate::console::CommandFailure;
use crate::flags::{acc_bytes, dtype_name, wire_of, DtypeArg, ProgramWaits};
use crate::reveal_cost::{Estimate, RevealProgress};
use crate::tree_file::read_hint;
use crate::{exec, limits};

/// Reveals the program `cmd` and prints its tree.
pub fn run(cmd: &str, args: &RevealFlags, start: Instant) -> Result<ExitCode, CommandFailure> {
    for w in ignored_options(args, false) {
        errln!("fprev: {w}");
    }
    // Memory first: a size that cannot be held is refused whatever --yes says.
    let acc = acc_dtype(args)?;
    let elem = acc_bytes(acc);
    limits::vector(args.n(), elem, args.max_memory).map_err(CommandFailure::Message)?;
    fprev::reveal::check_memory(args.n(), algorithm_of(args), elem, args.max_memory)?;
    Estimate::new(args.algorithm, args.n(), 1, args.n() as f64)
        .check(&format!("{cmd:?} at n = {}", args.n()), args.yes)?;
    let (tree, probes, arithmetic) = match acc {
        DtypeArg::F32 => reveal_exec::<f32>(cmd, args.protocol, args)?,
        DtypeArg::F64 => reveal_exec::<f64>(cmd, args.protocol, args)?,
        DtypeArg::F16 => reveal_exec::<fprev::half::f16>(cmd, args.protocol, args)?,
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

/// Starts `cmd` and reveals its answers in `T` (the accumulator type), speaking
/// `protocol`, with a progress bar over the expected probes.
pub(super) fn reveal_exec<T: ProbeFloat>(
    cmd: &str,
    protocol: exec::Protocol,
    args: &RevealFlags,
) -> Result<Revealed, CommandFailure> {
    let waits = ProgramWaits::checked(args.timeout, args.startup_timeout, args.grace)?;
    if args.n() == 0 {
        return Err(CommandFailure::Message(
            "--n 0: there is nothing to sum".into(),
        ));
    }
    if args.op == exec::ProgramOp::Dot && args.protocol.is_delta() {
        return Err(CommandFailure::Message(
            "--op dot sends both operands whole: use --protocol text or binary".into(),
        ));
    }
    let mut target = exec::Exec::<T>::spawn(cmd, protocol, waits.answer, waits.grace)
        .map_err(CommandFailure::Message)?
        .with_startup_timeout(waits.startup)
        .with_wire(wire_of(args.dtype), args.op);
    let estimate = Estimate::new(args.algorithm, args.n(), 1, args.n() as f64);
    let progress = RevealProgress::new(estimate.calls, "probes");
    let p = progress.clone();
    target.on_answer(move |k| p.set(k));
    let r = run_engine(&mut target, args);
    progress.finish();
    r
}

/// A program's tree, the probes it took and the arithmetic measured at its fused nodes.
pub(super) type Revealed = (SumTree, u64, Option<fprev::reveal::FittedFused>);

/// The engine run on a started program, with the notes of what it recognized and
/// what its probes rule out.
fn run_engine<T: ProbeFloat>(
    target: &mut exec::Exec<T>,
    args: &RevealFlags,
) -> Result<Revealed, CommandFailure> {
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
