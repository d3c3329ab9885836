//! `fprev targets`: the built-in targets, one a line: name, dtypes, what it is.

use std::process::ExitCode;

use crate::builtins;
use crate::console::{write_out, CommandFailure};

/// Prints the table of built-in targets.
pub fn run() -> Result<ExitCode, CommandFailure> {
    let mut text = String::new();
    for b in builtins::BUILTINS {
        text += &format!("{:<22} {:<16} {}\n", b.name, b.dtypes.join(","), b.about);
    }
    write_out(&text).map(|()| ExitCode::SUCCESS)
}
