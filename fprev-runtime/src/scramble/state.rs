//! The process-wide scrambling state read by generated code, and call sites.
//!
//! Generated code reads one relaxed `AtomicU8` per loop entry; everything else
//! (initialisation from the environment, the random stream) is behind that check.

use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

use super::config::{Level, ScrambleConfig, Vary};
use super::rng::{self, ScrambleRng};
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
const UNINIT: u8 = 0xFF;

static STATE: AtomicU8 = AtomicU8::new(UNINIT);
static SEED: AtomicU64 = AtomicU64::new(0);
/// Bumped twice by every configuration change, a sequence lock over `STATE` and `SEED`:
/// odd while a change is being written, even once it is complete. Call sites restart
/// their counters on a new epoch, and a reduction site keeps its drawn shape for one
/// (even) epoch.
pub(crate) static EPOCH: AtomicU64 = AtomicU64::new(0);
static INIT: Once = Once::new();

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

fn ensure_init() {
    INIT.call_once(|| {
        let cfg = ScrambleConfig::from_env();
        if cfg.shuffle.is_some() {
            super::replay::install(&cfg);
        }
        apply(&cfg);
    });
}

/// Installs `cfg` for the whole process (no locking: callers hold the session).
pub(crate) fn apply(cfg: &ScrambleConfig) {
    publish(encode(cfg), cfg.seed);
}

/// Writes a state and a seed as the writer of a sequence lock: a reader that saw any of
/// the new values also sees an epoch other than the one it started from
/// ([`epoch_unchanged`]), so it never files something drawn from a half-written change
/// under a complete epoch.
fn publish(state: u8, seed: u64) {
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

/// The state byte, initialised from the environment on first use.
#[inline]
pub(crate) fn state() -> u8 {
    let st = STATE.load(Ordering::Relaxed);
    if st == UNINIT {
        ensure_init();
        return STATE.load(Ordering::Acquire);
    }
    st
}

pub(crate) fn seed() -> u64 {
    SEED.load(Ordering::Relaxed)
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
            previous: Some((STATE.load(Ordering::Acquire), seed())),
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

/// What a scrambled site reorders.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SiteKind {
    /// A float reduction in a loop (`s += e`, `c[i] += e`): its terms are reassociated,
    /// the loop keeps its order.
    Reduction,
    /// An iterator reduction (`.sum()`, `.fold(init, |a, t| a + t)`).
    IterReduction,
    /// A whole loop the user declared order-free (`#[scramble(loop)]`, `#[scramble(loops)]`).
    Loop,
    /// A rayon chain ending in a position-independent consumer.
    Parallel,
}

impl SiteKind {
    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            SiteKind::Reduction => "reduction",
            SiteKind::IterReduction => "iterator reduction",
            SiteKind::Loop => "declared loop",
            SiteKind::Parallel => "rayon chain",
        }
    }
}

/// A place in the source that draws scrambled orders: a reduction, a declared loop, a
/// rayon chain or a launch. Its id keys the random stream.
///
/// Construction stores the fields only: the id (a hash of label, file, line and column)
/// is computed when the site first draws, on the cold path, so that a function with
/// hundreds of sites does not pay for hashing their strings in the compiler's const
/// evaluator (issue 14 item 9: most of `#[scramble]`'s compile time went there).
#[derive(Debug)]
pub struct CallSite {
    pub(crate) label: &'static str,
    pub(crate) file: &'static str,
    pub(crate) line: u32,
    column: u32,
    pub(crate) shuffle: Option<Shuffle>,
    pub(crate) kind: SiteKind,
    reached: AtomicU64,
    /// [`id`](Self::id) once computed (0: not yet).
    id: AtomicU64,
    /// What the site drew in the current configuration, for reductions drawn once per
    /// site: `epoch << DRAWN_BITS | code`, code 0 for nothing yet.
    drawn: AtomicU64,
}

/// Bits of [`CallSite`]'s drawn code; the epoch takes the others.
const DRAWN_BITS: u32 = 24;

impl CallSite {
    /// A site named `label` (e.g. `module::function#loop-index`) at `file:line:column`;
    /// `shuffle` overrides the configured shuffle for this site.
    pub const fn new(
        label: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
        shuffle: Option<Shuffle>,
    ) -> Self {
        Self::with_kind(label, file, line, column, shuffle, SiteKind::Loop)
    }

    /// [`CallSite::new`] for a site of `kind`.
    pub const fn with_kind(
        label: &'static str,
        file: &'static str,
        line: u32,
        column: u32,
        shuffle: Option<Shuffle>,
        kind: SiteKind,
    ) -> Self {
        CallSite {
            label,
            file,
            line,
            column,
            shuffle,
            kind,
            reached: AtomicU64::new(0),
            id: AtomicU64::new(0),
            drawn: AtomicU64::new(0),
        }
    }

    /// The key of this site's random streams: a hash of label, file, line and column
    /// (unchanged since the streams were first keyed by site, so tokens still replay),
    /// hashed once per process.
    pub(crate) fn id(&self) -> u64 {
        match self.id.load(Ordering::Relaxed) {
            0 => {
                let h = rng::str_hash(0xcbf2_9ce4_8422_2325, self.label);
                let h = rng::str_hash(h, self.file);
                let id = rng::splitmix64(h ^ ((self.line as u64) << 32 | self.column as u64));
                self.id.store(id, Ordering::Relaxed);
                id
            }
            id => id,
        }
    }

    /// The code this site filed for `epoch` with [`file_drawn`](Self::file_drawn), if any.
    #[inline]
    pub(crate) fn drawn(&self, epoch: u64) -> Option<u32> {
        let v = self.drawn.load(Ordering::Relaxed);
        let code = (v & ((1 << DRAWN_BITS) - 1)) as u32;
        (code != 0 && v >> DRAWN_BITS == epoch & (u64::MAX >> DRAWN_BITS)).then_some(code)
    }

    /// Files `code` (non-zero, below 2^24) as what this site drew in `epoch`, unless the
    /// configuration changed since `epoch` was read ([`epoch_unchanged`]).
    pub(crate) fn file_drawn(&self, epoch: u64, code: u32) {
        debug_assert!(code != 0 && code >> DRAWN_BITS == 0);
        if epoch_unchanged(epoch) {
            self.drawn
                .store(epoch << DRAWN_BITS | u64::from(code), Ordering::Relaxed);
        }
    }

    /// Whether this site may scramble: every site, unless `FPREV_SITES` names some.
    pub(crate) fn enabled(&self) -> bool {
        static ONLY: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();
        let only = ONLY.get_or_init(|| {
            let v = std::env::var(super::config::vars::FPREV_SITES).ok()?;
            Some(
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
            )
        });
        only.as_ref()
            .is_none_or(|o| o.iter().any(|l| l == self.label))
    }

    /// Counts one scrambled execution of this site (and one for the process).
    pub(crate) fn mark_reached(&self) {
        self.reached.fetch_add(1, Ordering::Relaxed);
        REACHED.fetch_add(1, Ordering::Relaxed);
        super::reached_by::note();
    }

    /// Scrambled executions of this site so far in this process.
    pub fn reached(&self) -> u64 {
        self.reached.load(Ordering::Relaxed)
    }

    /// What the site reorders.
    pub fn kind(&self) -> SiteKind {
        self.kind
    }

    /// `module::function#kindN`.
    pub fn label(&self) -> &'static str {
        self.label
    }

    /// Source file and line.
    pub fn location(&self) -> (&'static str, u32) {
        (self.file, self.line)
    }

    /// `label@file:line`, as reports show it.
    pub fn describe(&self) -> String {
        format!("{}@{}:{}", self.label, self.file, self.line)
    }
}

/// Scrambled site executions in this process (all sites).
static REACHED: AtomicU64 = AtomicU64::new(0);

/// Scrambled site executions in this process so far: the amplifier compares it before and
/// after a campaign to tell whether any site was reached.
pub(crate) fn reached_total() -> u64 {
    REACHED.load(Ordering::Relaxed)
}

/// The random order of one invocation of a scrambled site (a declared loop or a rayon
/// source); its stream is keyed by (run seed, thread context, site, invocation within
/// that context), as `#[fprev::scramble]` documents.
#[derive(Debug)]
pub struct Scrambler {
    pub(crate) seed: u64,
    pub(crate) key: (u64, u64),
    pub(crate) shuffle: Shuffle,
    pub(crate) site: &'static CallSite,
}

impl Scrambler {
    /// The scrambler of the next invocation of `site` if `level_bit` is on, else `None`.
    #[cold]
    #[inline(never)]
    pub(crate) fn begin(site: &'static CallSite, level_bit: u8) -> Option<Scrambler> {
        let st = state();
        if st & level_bit == 0 || !site.enabled() {
            return None;
        }
        site.mark_reached();
        Some(Scrambler {
            seed: seed(),
            key: super::context::next_key(site.id()),
            shuffle: site.shuffle.unwrap_or(decode_shuffle(st)),
            site,
        })
    }

    fn rng(&self, len: usize) -> ScrambleRng {
        let (key, invocation) = self.key;
        // Inside rayon tasks the invocation is 0: key by length so that entries of
        // different lengths still differ.
        rng::stream(self.seed, key, invocation ^ (len as u64).rotate_left(40))
    }

    /// `iter` in scrambled order, or as is: one iterator type either way, so the loop
    /// body is written once.
    pub fn maybe_shuffled<I: IntoIterator>(
        this: Option<Scrambler>,
        items: I,
    ) -> rayon::iter::Either<I::IntoIter, std::vec::IntoIter<I::Item>> {
        match this {
            None => rayon::iter::Either::Left(items.into_iter()),
            Some(s) => rayon::iter::Either::Right(s.shuffled(items)),
        }
    }

    /// Collects `items` and returns them in scrambled order (recorded when
    /// [`entropy`](super::entropy) recording is on).
    pub fn shuffled<I: IntoIterator>(self, items: I) -> std::vec::IntoIter<I::Item> {
        self.shuffle_vec(items.into_iter().collect()).into_iter()
    }

    /// Returns `v` in scrambled order (recorded when recording is on).
    pub fn shuffle_vec<T>(self, mut v: Vec<T>) -> Vec<T> {
        let mut rng = self.rng(v.len());
        if super::entropy::is_recording() {
            let mut order: Vec<usize> = (0..v.len()).collect();
            rng::shuffle_with(self.shuffle, v.len(), &mut rng, |i, j| {
                v.swap(i, j);
                order.swap(i, j);
            });
            super::entropy::record(self.site.describe(), &order);
        } else {
            rng::shuffle(self.shuffle, &mut v, &mut rng);
        }
        v
    }
}
