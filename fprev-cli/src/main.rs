//! The `fprev` command-line tool: reveal the summation order of built-in library targets
//! or of any program, compare trees, draw them, and run the demo.
//!
//! This file is the clap root and the dispatch: each subcommand's flags and flow are in
//! [`commands`], the flags several share in [`flags`], and what they print through and
//! stop with in [`console`].

#[macro_use]
mod console;

mod builtin_sweeps;
mod builtins;
mod collectives;
mod commands;
mod demo;
mod escape;
mod exec;
mod findings;
mod findings_merge;
mod findings_render;
mod flags;
mod limits;
mod reports;
mod reveal_cost;
mod scaled;
mod stage_stats;
mod tree_file;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use commands::{campaign, model, reveal, sweep};
use console::CommandFailure;

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
    Reveal(Box<reveal::RevealFlags>),
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

/// Parses the command line, runs the subcommand (the demo when none is given) and maps
/// its failure to an exit status: 2 with a message, 0 when standard output was closed.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let command = cli.command.unwrap_or(Cmd::Demo {
        out: PathBuf::from("fprev-out"),
        only: None,
    });
    let result = match command {
        Cmd::Reveal(args) => reveal::run(&args),
        Cmd::Sweep(args) => sweep::run(&args),
        Cmd::Model(args) => model::run(&args),
        Cmd::Targets => commands::targets::run(),
        Cmd::Diff { a, b } => commands::diff::run(&a, &b),
        Cmd::Demo { out, only } => demo::run(&out, only.as_deref()).map(|_| ExitCode::SUCCESS),
        Cmd::Campaign(cmd) => campaign::run(&cmd).map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "mpi")]
        Cmd::MpiRank(args) => collectives::rank::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(CommandFailure::OutputClosed) => ExitCode::SUCCESS,
        Err(CommandFailure::Message(msg)) => {
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
