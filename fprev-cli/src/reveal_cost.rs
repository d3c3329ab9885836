//! What a reveal costs: the work estimate `fprev reveal` checks before probing, and the
//! progress bar it shows while probing.
//!
//! Revealing costs (calls) x (summands per call): FPRev needs about `2n` probes for the
//! usual orders, so a plain sum costs about `2n^2` additions (103 s at n = 100,000 on a
//! laptop core, about 12 days at n = 1e7). Above [`WORK_LIMIT`] the tool refuses to
//! start unless `--yes` is given, and says how long it would take.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::console::CommandFailure;
use crate::flags::AlgorithmArg;

/// Summands visited (calls x summands per call) that `fprev reveal` starts without
/// `--yes`: about five minutes at [`RATE`].
pub const WORK_LIMIT: f64 = 6e10;

/// Summands visited per second, measured on `iter-sum` (n = 100,000: 2e10 in 103 s);
/// only used to say roughly how long a refused reveal would take.
pub const RATE: f64 = 2e8;

/// What a reveal is expected to cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Calls of the target (probes for `--exec` and single sums).
    pub calls: f64,
    /// Summands in one call (`n`, or `rows x n x cols` for a matrix product).
    pub per_call: f64,
}

impl Estimate {
    /// The work of revealing `n` summands: `lanes` probes answered per call (rows of a
    /// matrix product), `per_call` summands in each call.
    pub fn new(algorithm: AlgorithmArg, n: usize, lanes: usize, per_call: f64) -> Estimate {
        let n = n as f64;
        let probes = match algorithm {
            // about 2n with random pivots, plus the verification calls
            AlgorithmArg::Fprev | AlgorithmArg::Collective(_) => 2.0 * n + 2.0,
            // every pair of leaves
            AlgorithmArg::Basic => n * (n - 1.0) / 2.0 + 2.0,
        };
        Estimate {
            calls: (probes / lanes.max(1) as f64).ceil().max(1.0),
            per_call,
        }
    }

    /// Summands visited in all.
    pub fn work(&self) -> f64 {
        self.calls * self.per_call
    }

    /// Refuse when over [`WORK_LIMIT`] and `yes` is not set.
    pub fn check(&self, what: &str, yes: bool) -> Result<(), CommandFailure> {
        if yes || self.work() <= WORK_LIMIT {
            return Ok(());
        }
        Err(CommandFailure::Message(format!(
            "refusing to start: revealing {what} takes about {} calls of {} summands \
             ({} additions, roughly {} at {RATE:.0e} per second), over the limit of \
             {WORK_LIMIT:.0e} (about {}); use a smaller -n, or pass --yes to run it anyway",
            count(self.calls),
            count(self.per_call),
            count(self.work()),
            human(self.work() / RATE),
            human(WORK_LIMIT / RATE),
        )))
    }
}

/// A count: whole below a million, in scientific notation above.
fn count(x: f64) -> String {
    if x < 1e6 {
        format!("{x:.0}")
    } else {
        format!("{x:.1e}")
    }
}

/// Seconds as a person would say them.
pub fn human(secs: f64) -> String {
    if !secs.is_finite() {
        return "forever".into();
    }
    match secs {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 90.0 * 60.0 => format!("{:.0} minutes", s / 60.0),
        s if s < 48.0 * 3600.0 => format!("{:.0} hours", s / 3600.0),
        s if s < 3.0 * 365.0 * 86400.0 => format!("{:.0} days", s / 86400.0),
        s if s < 1e4 * 365.0 * 86400.0 => format!("{:.0} years", s / (365.0 * 86400.0)),
        s => format!("{:.0e} years", s / (365.0 * 86400.0)),
    }
}

/// A progress bar over the estimated calls, drawn on stderr when it is a terminal and
/// only once the reveal has run for a second (short reveals stay quiet).
#[derive(Clone)]
pub struct RevealProgress {
    bar: ProgressBar,
    shown: std::sync::Arc<AtomicBool>,
    terminal: bool,
}

impl RevealProgress {
    /// A bar of `len` estimated steps (`unit`: "calls" or "probes").
    pub fn new(len: f64, unit: &str) -> RevealProgress {
        let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::hidden());
        let template =
            format!("{{elapsed_precise}} [{{wide_bar}}] {{pos}}/~{{len}} {unit}, ETA {{eta}}");
        bar.set_style(
            ProgressStyle::with_template(&template)
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        RevealProgress {
            bar,
            shown: Default::default(),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// `done` steps so far.
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
        if self.terminal
            && !self.shown.load(Ordering::Relaxed)
            && self.bar.elapsed() > Duration::from_secs(1)
        {
            self.shown.store(true, Ordering::Relaxed);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_sums_are_refused_small_ones_start() {
        let e = Estimate::new(AlgorithmArg::Fprev, 10_000_000, 1, 1e7);
        let Err(CommandFailure::Message(msg)) = e.check("iter-sum at n = 10000000", false) else {
            panic!("not refused with a message");
        };
        assert!(msg.contains("--yes") && msg.contains("days"), "{msg}");
        assert!(e.check("iter-sum", true).is_ok());
        assert!(Estimate::new(AlgorithmArg::Fprev, 100_000, 1, 1e5)
            .check("iter-sum", false)
            .is_ok());
        // the basic algorithm is quadratic in probes
        assert!(Estimate::new(AlgorithmArg::Basic, 100_000, 1, 1e5)
            .check("iter-sum", false)
            .is_err());
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(5.0), "5 s");
        assert_eq!(human(600.0), "10 minutes");
        assert_eq!(human(12.0 * 86400.0), "12 days");
        assert_eq!(human(5e8 * 365.0 * 86400.0), "5e8 years");
    }
}
