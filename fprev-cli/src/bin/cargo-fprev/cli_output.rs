//! What `cargo fprev` writes, and the error it stops with: standard output (a reader
//! that closed the pipe is no error), report files and run logs.

use std::path::Path;

/// An error for the user: printed as `cargo fprev: <text>`, exit status 1.
#[derive(Debug)]
pub struct CargoFprevError(pub String);

/// Writes `text` to standard output; a reader that closed the pipe early (`| head`) is
/// no error.
pub fn write_stdout(text: &str) -> Result<(), CargoFprevError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(CargoFprevError(format!(
            "cannot write to standard output: {e}"
        ))),
        _ => Ok(()),
    }
}

/// `s` as a file name: ASCII letters, digits and `-` kept, the rest `_`, at most 80
/// characters.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect()
}

/// Writes a run's log to `DIR/NAME.log` (best effort: a log that cannot be written
/// costs the report nothing).
pub fn write_log(dir: &Path, name: &str, text: &str) {
    let _ = std::fs::write(dir.join(format!("{}.log", sanitize(name))), text);
}

/// Writes a report file; an error names the file.
pub fn write_file(path: &Path, text: &str) -> Result<(), CargoFprevError> {
    std::fs::write(path, text)
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", path.display())))
}
