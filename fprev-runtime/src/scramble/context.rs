//! Replay keys: which random stream an invocation of a scrambled site draws from.
//!
//! A stream is keyed by (run seed, context, site, invocation number within the context),
//! never by a process-wide counter, so that `FPREV_SEED=<token> cargo test <name>` gives the
//! same bits whether the test runs alone or inside the whole suite, at any
//! `--test-threads`. The context is the current thread's name: libtest runs every test on
//! a thread named after it, so each test numbers its own invocations from 0. Work inside
//! rayon's workers arrives in a timing-dependent order, so there the invocation number is
//! left out: every entry of a site inside a task draws the same stream within a run.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::rng;
use super::state::EPOCH;

/// Salt of the context of rayon workers.
const IN_TASK: u64 = 0x7461_736b_6b65_7973;

struct Counters {
    epoch: u64,
    context: u64,
    next: HashMap<u64, u64>,
}

thread_local! {
    static COUNTERS: RefCell<Option<Counters>> = const { RefCell::new(None) };
}

/// Hash of the current thread's name (`"main"`, a test's path, or unnamed).
fn thread_context() -> u64 {
    let t = std::thread::current();
    let name = t.name().unwrap_or("<unnamed>");
    crate::random::splitmix64(rng::str_hash(0x636f_6e74_6578_7431, name))
}

/// The key of the next invocation of the site with id `site`: `(stream key, invocation)`.
/// The stream key mixes the site and the context; pass both to [`rng::stream`].
pub(crate) fn next_key(site: u64) -> (u64, u64) {
    if rayon::current_thread_index().is_some() {
        return (site ^ IN_TASK, 0);
    }
    let epoch = EPOCH.load(Ordering::Acquire);
    COUNTERS.with(|c| {
        let mut c = c.borrow_mut();
        let counters = match &mut *c {
            Some(k) if k.epoch == epoch => k,
            slot => slot.insert(Counters {
                epoch,
                context: thread_context(),
                next: HashMap::new(),
            }),
        };
        let n = counters.next.entry(site).or_insert(0);
        let invocation = *n;
        *n += 1;
        (site ^ counters.context, invocation)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocations_count_per_thread_and_site() {
        let (k0, i0) = next_key(11);
        let (k1, i1) = next_key(11);
        let (_, j0) = next_key(12);
        assert_eq!((k0, i1), (k1, i0 + 1));
        assert_eq!(j0, 0);
        let other = std::thread::Builder::new()
            .name("another test".into())
            .spawn(|| next_key(11))
            .expect("spawn")
            .join()
            .expect("join");
        assert_eq!(other.1, 0, "a new thread numbers its invocations from 0");
        assert_ne!(other.0, k0, "and draws from its own streams");
    }
}
