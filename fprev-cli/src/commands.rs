//! One module per `fprev` subcommand, in the manner of cargo's `commands/`: each holds
//! its clap flags and its `run`, which checks the flags, calls the logic (the crate's
//! topic modules: [`crate::exec`], [`crate::builtins`], [`crate::collectives`], ...) and
//! prints the result. `main.rs` only parses and dispatches.
//!
//! `fprev demo` and the hidden `mpi-rank` have their flags in [`crate::demo`] and
//! [`crate::collectives`].

pub mod campaign;
pub mod diff;
pub mod model;
pub mod reveal;
pub mod sweep;
pub mod targets;
