//! The scrambling a run is under: the modes `cargo fprev` knows, and the environment
//! (`FPREV_SCRAMBLE`, `FPREV_SEED`) each run of a test binary gets.

use crate::cli_output::CargoFprevError;

/// The scrambling modes, as `FPREV_SCRAMBLE` takes them.
pub const MODES: [&str; 3] = ["shapes", "fisher-yates", "sattolo"];

/// `mode`, when it is one of [`MODES`]; else an error that lists them.
pub fn check_mode(mode: &str) -> Result<(), CargoFprevError> {
    if MODES.contains(&mode) {
        Ok(())
    } else {
        Err(CargoFprevError(format!(
            "unknown mode `{mode}` (expected {})",
            MODES.join(", ")
        )))
    }
}

/// The environment of a run under `mode` and `token`. Persisted findings of
/// `assert_reproducible!` tests (`fprev-regressions/`) are neither replayed nor written:
/// a campaign's finding of one seed would otherwise fail every later run of its test,
/// the unscrambled one included (`--previous` replays findings across nights instead).
pub fn env_for(mode: &str, token: &str) -> Vec<(String, String)> {
    vec![
        ("FPREV_SCRAMBLE".into(), mode.into()),
        ("FPREV_SEED".into(), token.into()),
        ("FPREV_REGRESSIONS".into(), "off".into()),
    ]
}

/// [`env_for`] for the runs that find and confirm failures (rounds, confirmations, blame):
/// without backtraces. Symbolizing one costs a debug test binary about 0.2 s per failure,
/// which across hundreds of failing runs would cost more than the runs themselves; the
/// panic message and location are in the log, and `cargo fprev replay` runs the test
/// under the user's own RUST_BACKTRACE.
pub fn finding_env(mode: &str, token: &str) -> Vec<(String, String)> {
    let mut env = env_for(mode, token);
    env.push(("RUST_BACKTRACE".into(), "0".into()));
    env
}
