//! The `fprev` command-line tool (placeholder until the CLI issue lands).
fn main() {
    eprintln!("fprev: command-line tool not built yet");
    std::process::exit(2);
}
