//! Reports printed when the process exits, `cargo test` processes included: the chain
//! report (`FPREV_CHAINS=1`) and the scramble coverage line (`FPREV_SCRAMBLE` set).
//! std has no exit hooks, so this registers with the C library's `atexit`.

/// Calls `report` when the process exits normally (not on wasm, where it does nothing).
#[cfg(not(target_family = "wasm"))]
pub(crate) fn register(report: extern "C" fn()) {
    extern "C" {
        fn atexit(cb: extern "C" fn()) -> std::os::raw::c_int;
    }
    // SAFETY: `atexit` is the C library's; each callback is a plain `extern "C" fn` that
    // only reads statics and atomics and writes to stderr.
    unsafe {
        atexit(report);
    }
}

/// No exit hooks on wasm.
#[cfg(target_family = "wasm")]
pub(crate) fn register(_: extern "C" fn()) {}
