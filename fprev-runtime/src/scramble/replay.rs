//! When scrambling is switched on from the environment, every failure says how to replay
//! it: a panic hook prints the token and the command, and the process prints its site
//! coverage when it exits.

use std::sync::Once;

use super::config::{vars, ScrambleConfig, Vary};
use super::sites::Coverage;

static HOOK: Once = Once::new();

/// Installs the panic hook and the exit report for `cfg` (once per process).
pub(crate) fn install(cfg: &ScrambleConfig) {
    let mode = std::env::var(vars::FPREV_SCRAMBLE).unwrap_or_default();
    let token = cfg.token();
    let vary = match cfg.vary {
        Vary::Site => String::new(),
        other => format!("{}={other} ", vars::FPREV_VARY),
    };
    HOOK.call_once(move || {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let test = std::thread::current()
                .name()
                .filter(|n| *n != "main")
                .map_or_else(String::new, |n| format!(" {n} -- --exact"));
            eprintln!(
                "fprev: scrambling was on ({}={mode}); replay: {vary}{}={mode} {}={token} cargo test{test}",
                vars::FPREV_SCRAMBLE,
                vars::FPREV_SCRAMBLE,
                vars::FPREV_SEED,
            );
        }));
        crate::at_exit::register(print_coverage_at_exit);
    });
}

extern "C" fn print_coverage_at_exit() {
    eprintln!("fprev scramble: {}", Coverage::now());
    super::reached_by::write_out();
    if let Ok(path) = std::env::var(vars::FPREV_SITES_OUT) {
        let mut text = String::new();
        for s in super::sites::sites() {
            if s.kind.is_some() && s.reached > 0 {
                text.push_str(&format!("{}\t{}\t{}\n", s.label, s.file, s.line));
            }
        }
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("fprev: cannot write {}={path}: {e}", vars::FPREV_SITES_OUT);
        }
    }
}
