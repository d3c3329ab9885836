//! The process-wide scrambling state read by generated code: one state byte, the run
//! seed, and the epoch that orders their changes. Initialising it from the environment
//! and replacing it for a while are [`session`](super::session)'s.
//!
//! Generated code reads one relaxed `AtomicU8` per loop entry; everything else
//! (initialisation from the environment, the random stream) is behind that check.

use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering};

use super::config::{Level, ScrambleConfig, Vary};
use super::Shuffle;

pub(crate) const SCHEDULE: u8 = 1;
/// Reductions and declared loops.
pub(crate) const LOOPS: u8 = 2;
/// Reductions combine in a mix of shapes rather than the shuffle's permuted order.
pub(crate) const SHAPES: u8 = 8;
/// Reductions draw a new shape at every call ([`Vary::Call`]) rather than once per site.
pub(crate) const VARY_CALL: u8 = 0x40;
const SHUFFLE_SHIFT: u8 = 4;
/// All level bits set, so that the fast checks fall into the slow path that initialises.
pub(crate) const UNINIT: u8 = 0xFF;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Bumped twice by every configuration change, a sequence lock over `STATE` and `SEED`:
/// odd while a change is being written, even once it is complete. Call sites restart
/// their counters on a new epoch, and a reduction site keeps its drawn shape for one
/// (even) epoch.
pub(crate) static EPOCH: AtomicU64 = AtomicU64::new(0);

fn encode(cfg: &ScrambleConfig) -> u8 {
    let Some(shuffle) = cfg.shuffle else { return 0 };
    let levels = match cfg.level {
        Level::All => SCHEDULE | LOOPS,
        Level::Schedule => SCHEDULE,
        Level::Loops => LOOPS,
    };
    let code = match shuffle {
        Shuffle::FisherYates => 0,
        Shuffle::Sattolo => 1,
        Shuffle::Identity => 2,
    };
    let shapes = if cfg.shapes { SHAPES } else { 0 };
    let vary = match cfg.vary {
        Vary::Site => 0,
        Vary::Call => VARY_CALL,
    };
    levels | shapes | vary | (code << SHUFFLE_SHIFT)
}

pub(crate) fn decode_shuffle(state: u8) -> Shuffle {
    match (state >> SHUFFLE_SHIFT) & 3 {
        0 => Shuffle::FisherYates,
        1 => Shuffle::Sattolo,
        _ => Shuffle::Identity,
    }
}

/// Installs `cfg` for the whole process (no locking: callers hold the session).
pub(crate) fn apply(cfg: &ScrambleConfig) {
    publish(encode(cfg), cfg.seed);
}

/// Writes a state and a seed as the writer of a sequence lock: a reader that saw any of
/// the new values also sees an epoch other than the one it started from
/// ([`epoch_unchanged`]), so it never files something drawn from a half-written change
/// under a complete epoch.
pub(crate) fn publish(state: u8, seed: u64) {
    EPOCH.fetch_add(1, Ordering::Relaxed);
    fence(Ordering::Release);
    SEED.store(seed, Ordering::Relaxed);
    STATE.store(state, Ordering::Release);
    EPOCH.fetch_add(1, Ordering::Release);
}

/// The configuration's epoch, read before the state and seed that go with it; odd while
/// a change is being written.
#[inline]
pub(crate) fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// Whether the state and seed read since [`epoch`] returned `epoch` are those of one
/// complete configuration (the reader's side of the sequence lock).
pub(crate) fn epoch_unchanged(epoch: u64) -> bool {
    fence(Ordering::Acquire);
    epoch % 2 == 0 && EPOCH.load(Ordering::Relaxed) == epoch
}

/// The raw state byte: one relaxed load, all the off path of generated code costs.
#[inline(always)]
pub(crate) fn fast_state() -> u8 {
    STATE.load(Ordering::Relaxed)
}

/// The state byte as the last complete change left it (acquire load).
pub(crate) fn acquired_state() -> u8 {
    STATE.load(Ordering::Acquire)
}

pub(crate) fn seed() -> u64 {
    SEED.load(Ordering::Relaxed)
}
