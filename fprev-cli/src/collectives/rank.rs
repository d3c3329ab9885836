//! The hidden `fprev mpi-rank` subcommand: one rank of a collective being revealed,
//! started by `mpirun` (see the parent module), never by hand.
//!
//! Rank 0 reads probes from standard input, one line of one number per rank, and
//! answers each with one line holding the probed element of the collective's result (the
//! `--exec` text protocol); at the end of its input it tells the other ranks to stop.
//! The other ranks serve: [`fprev::mpi::CollectiveTarget::serve`].

use std::io::{BufRead, Write};
use std::process::ExitCode;

use fprev::mpi::rsmpi::traits::Communicator;
use fprev::mpi::{CollectiveTarget, MpiFloat};
use fprev::ops::Reduction;
use fprev::target::Target;

use crate::console::CommandFailure;

/// The options `fprev reveal mpi-*` passes to each rank.
#[derive(clap::Args)]
pub struct RankArgs {
    /// `allreduce` or `reduce`.
    #[arg(long)]
    collective: String,
    /// Elements per rank.
    #[arg(long)]
    count: usize,
    /// The probed element.
    #[arg(long)]
    element: usize,
    /// `f64` or `f32`.
    #[arg(long)]
    dtype: String,
    /// Seed of the other elements.
    #[arg(long)]
    seed: u64,
    /// Every element at once: each probe line holds `count x ranks` values (element
    /// after element), answered by `count` lines, one per element.
    #[arg(long)]
    all_elements: bool,
    /// For the tests: the last rank `die`s or `hang`s instead of serving.
    #[arg(long)]
    fault: Option<String>,
}

/// Run one rank.
pub fn run(args: &RankArgs) -> Result<ExitCode, CommandFailure> {
    die_with_mpirun();
    let Some(universe) = fprev::mpi::rsmpi::initialize() else {
        return Err(CommandFailure::Message(
            "mpi-rank: MPI is already initialized".into(),
        ));
    };
    let world = universe.world();
    match args.dtype.as_str() {
        "f64" => serve::<f64>(&world, args),
        "f32" => serve::<f32>(&world, args),
        other => Err(CommandFailure::Message(format!(
            "mpi-rank --dtype {other}: f64 or f32"
        ))),
    }
}

/// Open MPI starts each rank in a process group of its own, out of reach of the signals
/// fprev sends to mpirun's group when a rank hangs; mpirun killed before it could end
/// them would leave them running. So a rank dies with its parent (Linux).
fn die_with_mpirun() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: getppid and prctl(PR_SET_PDEATHSIG) have no memory effects.
        unsafe {
            let parent = libc::getppid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // the parent died before the request took effect: no signal will come
            if libc::getppid() != parent {
                std::process::exit(1);
            }
        }
    }
}

fn serve<T: MpiFloat>(
    world: &impl Communicator,
    args: &RankArgs,
) -> Result<ExitCode, CommandFailure> {
    let target: CollectiveTarget<'_, _, T> = match args.collective.as_str() {
        "allreduce" => fprev::mpi::allreduce_target(world, args.count, args.element, args.seed)?,
        "reduce" => fprev::mpi::reduce_target(world, args.count, args.element, args.seed)?,
        other => {
            return Err(CommandFailure::Message(format!(
                "mpi-rank --collective {other}: allreduce or reduce"
            )))
        }
    };
    if world.rank() == world.size() - 1 && world.rank() != 0 {
        match args.fault.as_deref() {
            // leave without a word, as a crashed rank does (no MPI_Finalize)
            Some("die") => std::process::exit(3),
            Some("hang") => loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            },
            _ => {}
        }
    }
    if !target.is_driver() {
        target.serve()?;
        return Ok(ExitCode::SUCCESS);
    }
    drive(target, world.size() as usize, args.all_elements)
}

/// Rank 0: answer every probe line of standard input, then stop the other ranks.
fn drive<C: Communicator, T: MpiFloat>(
    mut target: CollectiveTarget<'_, C, T>,
    ranks: usize,
    all_elements: bool,
) -> Result<ExitCode, CommandFailure> {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut probe = Vec::with_capacity(ranks);
    let count = target.shape().lanes;
    let mut out = vec![T::ZERO; count];
    for (k, line) in stdin.lines().enumerate() {
        let line = line.map_err(|e| format!("mpi-rank: reading probe {k}: {e}"))?;
        probe.clear();
        for word in line.split_ascii_whitespace() {
            let v: f64 = word
                .parse()
                .map_err(|_| format!("mpi-rank: probe {k}: {word:?} is not a number"))?;
            probe.push(T::from_f64_round(v));
        }
        if all_elements {
            target.eval(&probe, &mut out)?;
            let mut text = String::with_capacity(24 * count);
            for v in &out {
                text += &format!("{}\n", v.to_f64());
            }
            stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(|e| format!("mpi-rank: answering probe {k}: {e}"))?;
            continue;
        }
        let answer = target.call(&probe)?;
        writeln!(stdout, "{}", answer.to_f64())
            .and_then(|()| stdout.flush())
            .map_err(|e| format!("mpi-rank: answering probe {k}: {e}"))?;
    }
    target.finish()?;
    Ok(ExitCode::SUCCESS)
}
