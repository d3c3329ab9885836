//! `fprev reveal mpi-allreduce` / `mpi-reduce`: launch the ranks under mpirun and reveal
//! rank 0's answers through the `--exec` machinery (timeouts, process-group shutdown):
//! one configuration, every element of one (`--element all`), or a sweep over several
//! printed as a table.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use fprev::ops::ElementOrders;
use fprev::{ProbeFloat, SumTree};

use super::printing::emit;
use super::program::reveal_exec;
use super::{config, ignored_options, RevealFlags, RevealFormat};
use crate::collectives::{self, CollectiveKind, ElementChoice, Launch};
use crate::console::{write_to, CommandFailure};
use crate::exec;
use crate::flags::{dtype_name, AlgorithmArg, DtypeArg, ProgramWaits};

/// Reveals the collective `kind` at each configuration the flags give.
pub fn run(
    kind: CollectiveKind,
    args: &RevealFlags,
    start: Instant,
) -> Result<ExitCode, CommandFailure> {
    let name = args.target.as_deref().unwrap_or("mpi-allreduce");
    let launches = launches(kind, name, args)?;
    for w in ignored_options(args, false) {
        errln!("fprev: {w}");
    }
    if !cfg!(feature = "mpi") {
        return Err(CommandFailure::Message(format!(
            "{name}: this fprev was built without its `mpi` feature; build it with \
             `cargo install fprev-cli --features mpi` (needs Open MPI: apt-get install \
             openmpi-bin libopenmpi-dev)"
        )));
    }
    let ranks = RankLauncher::find(name)?;
    let [launch] = &launches[..] else {
        if args.element == ElementChoice::All {
            return Err(CommandFailure::Message(format!(
                "{name} --element all reveals one configuration: give one --ranks, one \
                 --count and one --algorithm"
            )));
        }
        return sweep(&launches, args, &ranks, start);
    };
    if launch.all_elements {
        return reveal_elements(launch, args, &ranks, start);
    }
    let (tree, probes) = ranks.reveal(launch, args)?;
    let title = launch.describe();
    errln!(
        "revealed {title}: {probes} probes in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    emit(args, &tree, None, &title, None)?;
    Ok(ExitCode::SUCCESS)
}

/// The type MPI_SUM is revealed on: `--dtype` f64 or f32, after refusing the flags that
/// apply to `--exec` programs only.
fn sum_dtype(name: &str, args: &RevealFlags) -> Result<&'static str, CommandFailure> {
    let dtype = match args.dtype {
        DtypeArg::F64 => "f64",
        DtypeArg::F32 => "f32",
        other => {
            return Err(CommandFailure::Message(format!(
                "{name} --dtype {}: MPI_SUM is revealed on f64 or f32",
                dtype_name(other)
            )))
        }
    };
    if args.acc_dtype.is_some_and(|a| a != args.dtype) || args.op != exec::ProgramOp::Sum {
        return Err(CommandFailure::Message(format!(
            "{name} sums in its --dtype: --acc-dtype and --op apply to --exec programs"
        )));
    }
    if args.protocol != exec::Protocol::Text {
        return Err(CommandFailure::Message(format!(
            "{name}: fprev talks to its own ranks in the text protocol; --protocol applies \
             to --exec programs"
        )));
    }
    Ok(dtype)
}

/// The Open MPI algorithms `--algorithm` names (`all`: every one of the collective;
/// fprev's default: the library's own choice).
fn algorithms(
    kind: CollectiveKind,
    name: &str,
    args: &RevealFlags,
) -> Result<Vec<&'static str>, CommandFailure> {
    Ok(match args.algorithm {
        AlgorithmArg::Collective("all") => kind.algorithms().iter().map(|&(n, _)| n).collect(),
        AlgorithmArg::Collective(a) => vec![a],
        AlgorithmArg::Fprev => vec!["default"],
        AlgorithmArg::Basic => {
            return Err(CommandFailure::Message(format!(
                "{name} --algorithm basic: for MPI targets --algorithm names the MPI \
                 algorithm ({})",
                kind.algorithms()
                    .iter()
                    .map(|&(n, _)| n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    })
}

/// Every configuration the flags ask for (algorithms x ranks x counts), each checked and
/// its memory bounded before anything is launched.
fn launches(
    kind: CollectiveKind,
    name: &str,
    args: &RevealFlags,
) -> Result<Vec<Launch>, CommandFailure> {
    let Some(ranks) = &args.ranks else {
        return Err(CommandFailure::Message(format!(
            "{name}: pass --ranks P, the number of ranks (the leaves of the tree); -n does \
             not apply"
        )));
    };
    let dtype = sum_dtype(name, args)?;
    let (element, all_elements) = match args.element {
        ElementChoice::One(e) => (e, false),
        ElementChoice::All => (0, true),
    };
    let mut launches = Vec::new();
    for algorithm in algorithms(kind, name, args)? {
        for &ranks in &ranks.0 {
            for &count in &args.count.0 {
                let launch = Launch {
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
                launch.check().map_err(CommandFailure::Message)?;
                launch
                    .check_memory(args.max_memory)
                    .map_err(CommandFailure::Message)?;
                launches.push(launch);
            }
        }
    }
    Ok(launches)
}

/// What starts a configuration's ranks: mpirun, and this fprev binary, whose hidden
/// `mpi-rank` subcommand each rank runs.
struct RankLauncher {
    mpirun: PathBuf,
    exe: PathBuf,
}

impl RankLauncher {
    /// mpirun and this binary, found (`name`: the target, for the message).
    fn find(name: &str) -> Result<RankLauncher, CommandFailure> {
        let mpirun = collectives::find_mpirun().map_err(CommandFailure::Message)?;
        let exe = std::env::current_exe().map_err(|e| {
            CommandFailure::Message(format!("{name}: cannot find the fprev binary: {e}"))
        })?;
        Ok(RankLauncher { mpirun, exe })
    }

    /// The command line that launches `launch`'s ranks.
    fn command(&self, launch: &Launch) -> String {
        launch.command(&self.mpirun, &self.exe, collectives::as_root())
    }

    /// Launch one configuration's ranks and reveal rank 0's answers.
    fn reveal(
        &self,
        launch: &Launch,
        args: &RevealFlags,
    ) -> Result<(SumTree, u64), CommandFailure> {
        let cmd = self.command(launch);
        let n_args = RevealFlags {
            n: Some(launch.ranks),
            ..args.clone()
        };
        let args = &n_args;
        let (tree, probes, _) = match launch.dtype {
            "f64" => reveal_exec::<f64>(&cmd, exec::Protocol::Text, args),
            _ => reveal_exec::<f32>(&cmd, exec::Protocol::Text, args),
        }
        .map_err(|e| named(launch, e))?;
        Ok((tree, probes))
    }

    /// Launch one configuration's ranks and reveal the order of every element.
    fn reveal_elements<T: ProbeFloat>(
        &self,
        launch: &Launch,
        args: &RevealFlags,
    ) -> Result<ElementOrders, CommandFailure> {
        let waits = ProgramWaits::checked(args.timeout, args.startup_timeout, args.grace)?;
        let cmd = self.command(launch);
        let exec = exec::Exec::<T>::spawn(&cmd, exec::Protocol::Text, waits.answer, waits.grace)
            .map_err(CommandFailure::Message)?
            .with_startup_timeout(waits.startup);
        let ranks = collectives::elements::RankElements {
            exec,
            count: launch.count,
            ranks: launch.ranks,
        };
        Ok(config(args).run(ranks)?)
    }
}

/// A configuration's failure, its message led by the configuration.
fn named(launch: &Launch, e: CommandFailure) -> CommandFailure {
    match e {
        CommandFailure::Message(m) => {
            CommandFailure::Message(format!("{}: {m}", launch.describe()))
        }
        other => other,
    }
}

/// One configuration after another, then the table ([`collectives::sweep_table`]).
fn sweep(
    launches: &[Launch],
    args: &RevealFlags,
    ranks: &RankLauncher,
    start: Instant,
) -> Result<ExitCode, CommandFailure> {
    let mut rows = Vec::with_capacity(launches.len());
    for (k, launch) in launches.iter().enumerate() {
        let (tree, probes) = ranks.reveal(launch, args)?;
        errln!(
            "[{}/{}] {}: {probes} probes, {:.1} s so far",
            k + 1,
            launches.len(),
            launch.describe(),
            start.elapsed().as_secs_f64()
        );
        rows.push(collectives::sweep_table::RevealedConfiguration {
            algorithm: launch.algorithm,
            ranks: launch.ranks,
            count: launch.count,
            tree,
        });
    }
    write_to(
        args.output.as_deref(),
        &collectives::sweep_table::table(&rows),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `--element all`: every element revealed, grouped by order
/// ([`collectives::elements`]).
fn reveal_elements(
    launch: &Launch,
    args: &RevealFlags,
    ranks: &RankLauncher,
    start: Instant,
) -> Result<ExitCode, CommandFailure> {
    let orders = match launch.dtype {
        "f64" => ranks.reveal_elements::<f64>(launch, args),
        _ => ranks.reveal_elements::<f32>(launch, args),
    }
    .map_err(|e| named(launch, e))?;
    let title = launch.describe();
    errln!(
        "revealed {title}: {} probes in {} calls, {:.2} s",
        orders.probes,
        orders.calls,
        start.elapsed().as_secs_f64()
    );
    match args.format {
        RevealFormat::Text | RevealFormat::Summary => {
            let text = collectives::elements::groups_text(&orders, launch.ranks);
            write_to(args.output.as_deref(), &text)?;
        }
        _ => emit(args, &orders.groups[0].tree, Some(&orders), &title, None)?,
    }
    Ok(ExitCode::SUCCESS)
}
