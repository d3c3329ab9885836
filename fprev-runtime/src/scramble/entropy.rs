//! Scheduling entropy: which orders did a campaign actually execute?
//!
//! While recording, every scrambled loop invocation and every [`launch`](super::launch())
//! logs a hash of the order it executed (for a launch: the order in which blocks
//! *started*, scrambled or not). Counting distinct hashes over K runs is the software
//! version of Defour's Figure 2.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::rng::order_hash;

static RECORDING: AtomicBool = AtomicBool::new(false);
static LOG: Mutex<Vec<(String, u64)>> = Mutex::new(Vec::new());

pub(crate) fn is_recording() -> bool {
    RECORDING.load(Ordering::Relaxed)
}

pub(crate) fn record(site: String, order: &[usize]) {
    let h = order_hash(order.iter().copied());
    LOG.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((site, h));
}

/// Orders executed while recording, per site (`label@file:line`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderLog {
    /// Hashes of the executed orders, one per invocation, in invocation order.
    pub sites: BTreeMap<String, Vec<u64>>,
}

impl OrderLog {
    /// Number of distinct orders seen at each site.
    pub fn distinct(&self) -> BTreeMap<&str, usize> {
        self.sites
            .iter()
            .map(|(k, v)| (k.as_str(), v.iter().collect::<BTreeSet<_>>().len()))
            .collect()
    }

    /// Adds another log's entries.
    pub fn extend(&mut self, other: OrderLog) {
        for (k, v) in other.sites {
            self.sites.entry(k).or_default().extend(v);
        }
    }
}

/// Runs `f` while recording executed orders and returns them. Recording is process-wide:
/// orders executed by other threads meanwhile are logged too.
///
/// ```
/// use fprev_runtime::scramble::{entropy, launch};
///
/// let ((), log) = entropy::record_orders(|| launch(4u32, 1u32, |_ctx| {}));
/// assert_eq!(log.sites.values().map(Vec::len).sum::<usize>(), 1);
/// ```
pub fn record_orders<R>(f: impl FnOnce() -> R) -> (R, OrderLog) {
    struct Stop(bool);
    impl Drop for Stop {
        fn drop(&mut self) {
            RECORDING.store(self.0, Ordering::Relaxed);
        }
    }
    let was = RECORDING.swap(true, Ordering::Relaxed);
    let start = LOG.lock().unwrap_or_else(|e| e.into_inner()).len();
    let r = {
        let _stop = Stop(was);
        f()
    };
    let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = OrderLog::default();
    let start = start.min(log.len());
    for (site, h) in log.drain(start..) {
        out.sites.entry(site).or_default().push(h);
    }
    (r, out)
}
