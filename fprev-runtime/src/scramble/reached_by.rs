//! Which threads reached a scrambled site, by name, for `FPREV_TESTS_OUT`.
//!
//! libtest runs each test on a thread named after the test, so the names of the threads
//! that reached a site are the tests a scrambled run can change: `cargo fprev test` runs
//! only those under the next seeds. A test that reached no site ran exactly as written
//! and cannot fail differently under another seed. Threads without a name (a test's
//! own threads, rayon's workers) are written as an empty line, which tells the reader
//! that some reach cannot be attributed to a test.
//!
//! Every process that inherits the variable appends its names under a line `# process
//! PID`: a test that runs its own test binary (`current_exe() child --exact`) makes a
//! second process, whose reach belongs to the parent test as much as to the child, and
//! the reader sees that two processes wrote.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use super::config::vars;

/// 0: not read yet, 1: off, 2: recording.
static RECORDING: AtomicU8 = AtomicU8::new(0);
/// Names of the threads that reached a site ("" for an unnamed thread).
static NAMES: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

thread_local! {
    /// Whether this thread's name is already in [`NAMES`].
    static NOTED: Cell<bool> = const { Cell::new(false) };
}

/// Whether `FPREV_TESTS_OUT` asks for the names (read once).
#[inline]
fn recording() -> bool {
    match RECORDING.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os(vars::FPREV_TESTS_OUT).is_some();
            RECORDING.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        state => state == 2,
    }
}

/// Records that the current thread reached a scrambled site (once per thread).
#[inline]
pub(crate) fn note() {
    if !recording() || NOTED.with(Cell::get) {
        return;
    }
    NOTED.with(|n| n.set(true));
    let name = std::thread::current()
        .name()
        .unwrap_or_default()
        .to_string();
    if let Ok(mut names) = NAMES.lock() {
        names.insert(name);
    }
}

/// Appends `# process PID` and the names, one per line, to the file `FPREV_TESTS_OUT`
/// names (at exit), in one write: processes that end at once do not interleave.
pub(crate) fn write_out() {
    use std::io::Write as _;
    let Ok(path) = std::env::var(vars::FPREV_TESTS_OUT) else {
        return;
    };
    let names = match NAMES.lock() {
        Ok(names) => names.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    let mut text = format!("# process {}\n", std::process::id());
    for name in &names {
        text.push_str(name);
        text.push('\n');
    }
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!("fprev: cannot write {}={path}: {e}", vars::FPREV_TESTS_OUT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_noted_once_under_its_name() {
        RECORDING.store(2, Ordering::Relaxed);
        std::thread::Builder::new()
            .name("suite::reaches_a_site".into())
            .spawn(|| {
                note();
                note();
            })
            .expect("spawn")
            .join()
            .expect("join");
        std::thread::spawn(note).join().expect("join");
        let names = NAMES.lock().expect("lock").clone();
        assert!(names.contains("suite::reaches_a_site"), "{names:?}");
        assert!(
            names.contains(""),
            "an unnamed thread is written as \"\": {names:?}"
        );
    }
}
