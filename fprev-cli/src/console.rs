//! What the `fprev` commands write and how they stop: standard output written without
//! panics (a reader that went away stops a command quietly), standard error written best
//! effort, and [`CommandFailure`], the one error every command returns.
//!
//! Declared first in `main.rs` with `#[macro_use]`, so that every module sees
//! `outln!` and `errln!`.

/// `println!` that returns a [`CommandFailure`] from the enclosing function when standard
/// output cannot be written (`println!` panics).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::console::write_out(&format!("{}\n", format_args!($($arg)*)))?
    };
}

/// `eprintln!` that ignores a failed write (`eprintln!` panics): with standard error
/// gone there is nowhere left to report anything.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` of `text`, ignoring a failed write as [`errln!`] does.
pub fn errout(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Why a command stopped.
pub enum CommandFailure {
    /// Printed as `fprev: <message>`, with exit code 2.
    Message(String),
    /// Standard output's reader went away (a broken pipe, as under `| head`): nothing
    /// more can be shown, so fprev stops quietly with status 0, as ripgrep does.
    OutputClosed,
}

impl<E: std::fmt::Display> From<E> for CommandFailure {
    fn from(e: E) -> Self {
        CommandFailure::Message(e.to_string())
    }
}

/// The failure of a write to standard output.
fn stdout_failure(e: std::io::Error) -> CommandFailure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CommandFailure::OutputClosed
    } else {
        CommandFailure::Message(format!("cannot write to standard output: {e}"))
    }
}

/// Writes `text` to standard output and flushes it: an error is a [`CommandFailure`],
/// never a panic (as `print!` would give).
pub fn write_out(text: &str) -> Result<(), CommandFailure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(stdout_failure)
}

/// Writes `text` to `--output`'s file when one is given, else to standard output.
pub fn write_to(output: Option<&std::path::Path>, text: &str) -> Result<(), CommandFailure> {
    match output {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| CommandFailure::Message(format!("{}: {e}", p.display()))),
        None => write_out(text),
    }
}
