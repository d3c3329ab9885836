//! The process-wide configuration as scrambled code sees it: read from the environment
//! on first use (installing the replay hints when that turns scrambling on), and replaced
//! for the length of a session ([`with_config`], the amplifier's campaigns).

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, Once};

use super::config::{Level, ScrambleConfig, Vary};
use super::state::{
    acquired_state, apply, decode_shuffle, fast_state, publish, seed, LOOPS, SCHEDULE, SHAPES,
    UNINIT, VARY_CALL,
};

static INIT: Once = Once::new();

fn ensure_init() {
    INIT.call_once(|| {
        let cfg = ScrambleConfig::from_env();
        if cfg.shuffle.is_some() {
            super::replay::install(&cfg);
        }
        apply(&cfg);
    });
}

/// The state byte, initialised from the environment on first use.
#[inline]
pub(crate) fn state() -> u8 {
    let st = fast_state();
    if st == UNINIT {
        ensure_init();
        return acquired_state();
    }
    st
}

/// The configuration scrambled code sees now (from the environment unless set).
pub fn current_config() -> ScrambleConfig {
    let st = state();
    let level = match st & (SCHEDULE | LOOPS) {
        SCHEDULE => Level::Schedule,
        LOOPS => Level::Loops,
        _ => Level::All,
    };
    ScrambleConfig::off()
        .shuffle((st & (SCHEDULE | LOOPS) != 0).then(|| decode_shuffle(st)))
        .shapes(st & SHAPES != 0)
        .vary(if st & VARY_CALL != 0 {
            Vary::Call
        } else {
            Vary::Site
        })
        .seed(seed())
        .level(level)
}

static SESSION: Mutex<()> = Mutex::new(());
thread_local! {
    static IN_SESSION: Cell<bool> = const { Cell::new(false) };
}

/// Exclusive use of the process-wide state; reentrant on the thread that holds it.
pub(crate) struct Session {
    _guard: Option<MutexGuard<'static, ()>>,
    previous: Option<(u8, u64)>,
}

impl Session {
    pub(crate) fn enter() -> Session {
        ensure_init();
        let guard = if IN_SESSION.with(Cell::get) {
            None
        } else {
            let g = SESSION.lock().unwrap_or_else(|e| e.into_inner());
            IN_SESSION.with(|c| c.set(true));
            Some(g)
        };
        Session {
            _guard: guard,
            previous: Some((acquired_state(), seed())),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some((st, seed)) = self.previous.take() {
            publish(st, seed);
        }
        if self._guard.is_some() {
            IN_SESSION.with(|c| c.set(false));
        }
    }
}

/// Runs `f` with `cfg` installed for the whole process, then restores the previous
/// configuration (also when `f` panics). Calls from different threads take turns, so
/// tests that need a known configuration do not disturb one another; nested calls on the
/// same thread are allowed. Invocation counters restart, so the same `cfg` replays the
/// same orders. Do not call it from a rayon task of a computation that runs under
/// another thread's `with_config` or [`amplify`](crate::amplify::amplify): that task
/// would wait for the session its own computation holds.
///
/// ```
/// use fprev_runtime::scramble::{current_config, with_config, ScrambleConfig, Shuffle};
///
/// let cfg = ScrambleConfig::off().shuffle(Some(Shuffle::Sattolo)).seed(3);
/// assert_eq!(with_config(&cfg, current_config), cfg);
/// ```
pub fn with_config<R>(cfg: &ScrambleConfig, f: impl FnOnce() -> R) -> R {
    let _session = Session::enter();
    apply(cfg);
    f()
}
