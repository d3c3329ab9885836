//! Ctrl-C and SIGTERM during a campaign: noted, so that the campaign stops starting runs
//! and still writes what it found.

/// Set by SIGINT/SIGTERM: the campaign stops starting runs and writes what it found.
/// A terminal's Ctrl-C reaches the running test binary too (same process group), so
/// nothing keeps running.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether SIGINT or SIGTERM has come since [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Notes SIGINT and SIGTERM in [`INTERRUPTED`] from now on, instead of ending the
/// process.
pub fn catch_interrupts() {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}
