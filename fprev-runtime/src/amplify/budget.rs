//! Time budgets (`FPREV_TIME=90s`) and the progress line a budgeted campaign shows on a
//! terminal.
//!
//! The budget is per campaign (one [`amplify`](super::amplify) or `assert_reproducible!`
//! call): a test binary cannot know how many campaigns a run will select (filters,
//! `--skip`, other binaries, nextest partitions), so a per-process budget split between
//! them would depend on things the user did not write down. Per campaign, a nightly's
//! length is `FPREV_TIME x campaigns / test threads`, whatever else runs. Inside a
//! campaign the time left is split evenly between the stages still to run, so every stage
//! gets its share and time a stage leaves unused (its runs cap reached) goes to the next.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Parses a duration: a number with a unit (`500ms`, `90s`, `10m`, `2h`, `1d`), decimals
/// allowed (`1.5h`), several parts added (`1h30m`).
///
/// ```
/// use std::time::Duration;
/// use fprev_runtime::amplify::parse_duration;
///
/// assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert!(parse_duration("10").is_err()); // a unit is required
/// ```
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let text = s.trim();
    let malformed = || DurationError::Malformed(s.to_string());
    if text.is_empty() {
        return Err(malformed());
    }
    let mut total = 0.0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(malformed)?;
        if digits == 0 {
            return Err(malformed());
        }
        let value: f64 = rest[..digits].parse().map_err(|_| malformed())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match rest[..unit_len].trim() {
            "ms" => 1e-3,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return Err(malformed()),
        };
        rest = &rest[unit_len..];
        total += value * seconds;
    }
    if !total.is_finite() || total > 1e9 {
        return Err(malformed());
    }
    let d = Duration::from_secs_f64(total);
    if d.is_zero() {
        return Err(DurationError::Zero);
    }
    Ok(d)
}

/// Why a string is not a time budget.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DurationError {
    /// Not numbers with units (`ms`, `s`, `m`, `h`, `d`).
    Malformed(String),
    /// A zero budget would run nothing.
    Zero,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Malformed(s) => write!(
                f,
                "{s:?} is not a duration: expected a number and a unit, ms, s, m, h or d (500ms, 90s, 10m, 2h, 1h30m)"
            ),
            DurationError::Zero => write!(f, "a time budget must be longer than zero"),
        }
    }
}

impl std::error::Error for DurationError {}

/// `1m30s`-style text of a duration, for progress lines and reports.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{}ms", d.as_millis())
    } else if s < 60.0 {
        format!("{s:.1}s")
    } else if s < 3600.0 {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    } else {
        format!("{}h{:02}m", d.as_secs() / 3600, d.as_secs() / 60 % 60)
    }
}

/// A progress line on standard error, redrawn at most 5 times a second, only when stderr
/// is a terminal and the campaign has a budget or has run for 2 seconds. It writes to the
/// stderr handle directly, past libtest's output capture, which would otherwise hold it
/// back until the test ends.
pub(crate) struct ProgressLine {
    name: String,
    budget: Option<Duration>,
    start: Instant,
    last: Option<Instant>,
    tty: bool,
    shown: bool,
}

static TERMINAL: Mutex<()> = Mutex::new(());

impl ProgressLine {
    pub(crate) fn new(name: &str, budget: Option<Duration>, start: Instant) -> ProgressLine {
        ProgressLine {
            name: name.to_string(),
            budget,
            start,
            last: None,
            tty: std::io::stderr().is_terminal(),
            shown: false,
        }
    }

    /// Redraws the line if it is due.
    pub(crate) fn tick(&mut self, stage: &str, runs: u64, differing: u64) {
        if !self.tty {
            return;
        }
        let now = Instant::now();
        let elapsed = now - self.start;
        if self.budget.is_none() && elapsed < Duration::from_secs(2) {
            return;
        }
        if self
            .last
            .is_some_and(|t| now - t < Duration::from_millis(200))
        {
            return;
        }
        self.last = Some(now);
        let of = self
            .budget
            .map_or_else(String::new, |b| format!(" of {}", human(b)));
        let _lock = TERMINAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\rfprev campaign {}: {stage}, {runs} runs, {differing} differing, {}{of}\x1b[K",
            self.name,
            human(elapsed)
        );
        let _ = err.flush();
        self.shown = true;
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        if self.shown {
            let _lock = TERMINAL.lock().unwrap_or_else(|e| e.into_inner());
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_or_say_why() {
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration(" 10m "), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0s"), Err(DurationError::Zero));
        for bad in [
            "",
            "s",
            "10",
            "10x",
            "-5s",
            "1e3s",
            "ten minutes",
            "99999999999d",
        ] {
            assert!(
                matches!(parse_duration(bad), Err(DurationError::Malformed(_))),
                "{bad}"
            );
        }
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
        assert_eq!(human(Duration::from_secs(7260)), "2h01m");
    }
}
