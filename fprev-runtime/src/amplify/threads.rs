//! How many threads a distribution-stage pool may have: a range check on
//! `FPREV_THREADS` and [`AmplifyConfig::max_threads`](super::AmplifyConfig::max_threads),
//! since a pool the system cannot give stacks to aborts the process (5000 threads did,
//! "failed to allocate an alternative stack") instead of returning an error.

/// The most threads a distribution-stage pool gets: 256, well past the core counts whose
/// schedules amplification varies, and well inside what a process can start.
pub(crate) const MAX_POOL_THREADS: usize = 256;

/// `FPREV_THREADS` read as a pool size: a whole number in `1..=MAX_POOL_THREADS`, or
/// `None` (the caller's warning then names the variable, the value and the default).
pub(crate) fn parse(s: &str) -> Option<usize> {
    s.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=MAX_POOL_THREADS).contains(n))
}

/// What `FPREV_THREADS` must be, for the warning.
pub(crate) const EXPECTED: &str = "a positive integer up to 256";

/// A pool size in range: `threads` clamped to `1..=MAX_POOL_THREADS`, with one warning
/// the first time a configured size is clamped.
pub(crate) fn clamp(threads: usize) -> usize {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let used = threads.clamp(1, MAX_POOL_THREADS);
    if used != threads {
        WARNED.call_once(|| {
            eprintln!(
                "fprev: warning: max_threads = {threads} is out of range (1 to \
                 {MAX_POOL_THREADS}); using {used} threads"
            );
        });
    }
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_range_checked() {
        assert_eq!(parse("8"), Some(8));
        assert_eq!(parse(" 256 "), Some(256));
        for bad in ["0", "5000", "-1", "lots", "18446744073709551616"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert_eq!(clamp(5000), MAX_POOL_THREADS);
        assert_eq!(clamp(0), 1);
        assert_eq!(clamp(3), 3);
    }
}
