//! The schedule-entropy amplifier: run a computation under many legal schedules and
//! report how much its floating-point result moves (Defour's testing framework).
//!
//! Stages, each [`AmplifyConfig::runs`] runs, each compared bit for bit with one
//! unscrambled reference run:
//!
//! 1. [`Stage::Repeat`]: the same configuration again (what a developer does by hand);
//! 2. [`Stage::Distribution`]: rayon pools of 1..=N threads and chunk sizes from
//!    [`chunk_len`] scaled by 1/8..8;
//! 3. [`Stage::Schedule`]: scrambled rayon items/chunks and kernel block/thread ids;
//! 4. [`Stage::LoopOrder`]: reassociated float reductions (and declared order-free
//!    loops) in `#[scramble]` functions.
//!
//! Each scrambled run is one consistent other platform: a reduction site combines its
//! terms in one shape for the whole run, however often the computation reaches it (see
//! [`Vary`](crate::scramble::Vary); `FPREV_VARY` is for `#[scramble]` code run under
//! `FPREV_SCRAMBLE`, the amplifier's runs are its variation).
//!
//! Each run's seed carries its stage in the top 4 bits and everything about the run is
//! derived from it, so its [`ReplayToken`] alone replays it: set `FPREV_SEED` to the
//! token and the amplifier runs just that run. A campaign token (top bits 0) replays
//! the whole campaign.
//!
//! ```
//! use fprev_runtime::amplify::{amplify, AmplifyConfig, Stage};
//!
//! // A sequential sum has one order: every stage agrees with the reference.
//! let v: Vec<f32> = (1..1000).map(|i| 1.0 / i as f32).collect();
//! let cfg = AmplifyConfig::default().runs(3).seed(1);
//! let report = amplify(&cfg, || v.iter().sum::<f32>());
//! assert!(report.is_reproducible(), "{report}");
//! assert_eq!(report.stage(Stage::Repeat).unwrap().distinct, 1);
//! ```

mod assert;
mod budget;
mod campaign;
mod json;
mod output;
mod regressions;
mod report;
mod shard;
mod threads;

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicI8, Ordering};
use std::time::{Duration, Instant};

#[doc(hidden)]
pub use assert::{check, AssertSite};
pub use budget::{parse_duration, DurationError};
pub use output::Floats;
pub use report::{AmplifyReport, RunRecord, StageEnd, StageReport};
pub use shard::{Shard, ShardError};

use crate::random::splitmix64;
use crate::scramble::call_site::reached_total;
use crate::scramble::config::{
    env_parse, parse_mode, random_seed, vars, warn_unknown_vars, MODES, MODE_DEFAULT, SEEDS,
};
use crate::scramble::rng::order_hash;
use crate::scramble::session::Session;
use crate::scramble::state::apply;
use crate::scramble::{entropy, Level, ReplayToken, ScrambleConfig, Shuffle};

/// One column group of Defour's Table II.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Configuration 1: the same execution configuration, repeated.
    Repeat,
    /// Configuration 2: vary the work distribution (pool size, chunk size).
    Distribution,
    /// Configuration 3: vary the schedule (scrambled parallel items, blocks, threads).
    Schedule,
    /// Configuration 4: vary the reduction order: reassociated float reductions, and the
    /// iteration order of loops declared order-free.
    LoopOrder,
}

impl Stage {
    /// All stages, in Table II order.
    pub const ALL: [Stage; 4] = [
        Stage::Repeat,
        Stage::Distribution,
        Stage::Schedule,
        Stage::LoopOrder,
    ];

    /// Table II's configuration number (1..=4), also the top nibble of run seeds.
    pub const fn number(self) -> u64 {
        match self {
            Stage::Repeat => 1,
            Stage::Distribution => 2,
            Stage::Schedule => 3,
            Stage::LoopOrder => 4,
        }
    }

    /// Name used by `FPREV_STAGES`.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Repeat => "repeat",
            Stage::Distribution => "distribution",
            Stage::Schedule => "schedule",
            Stage::LoopOrder => "loops",
        }
    }

    /// `"<number> <description>"`, as reports show it.
    pub const fn label(self) -> &'static str {
        match self {
            Stage::Repeat => "1 same config",
            Stage::Distribution => "2 vary distribution",
            Stage::Schedule => "3 vary schedule",
            Stage::LoopOrder => "4 vary reductions",
        }
    }

    fn from_number(n: u64) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.number() == n)
    }
}

/// Amplifier settings.
///
/// ```
/// use fprev_runtime::amplify::{AmplifyConfig, Stage};
///
/// let cfg = AmplifyConfig::default().runs(50).stages(&[Stage::LoopOrder]).max_threads(2);
/// assert_eq!(cfg.runs, 50);
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmplifyConfig {
    /// Runs per stage (of this process's shard), or with a [`time`](Self::time) budget
    /// the most runs per stage (`usize::MAX`: no cap). Default 20; `FPREV_RUNS` overrides
    /// it; `FPREV_TIME` without `FPREV_RUNS` makes it `usize::MAX`.
    pub runs: usize,
    /// Time budget of one campaign (one [`amplify`] / `assert_reproducible!` call): the
    /// reference run and the stages stop starting runs once it is spent; the time left is
    /// split evenly between the stages still to run, and each stage runs at least once.
    /// Default none; `FPREV_TIME` (`500ms`, `90s`, `10m`, `2h`) sets it.
    pub time: Option<Duration>,
    /// The slice of the campaign's runs this process runs (see [`Shard`]). Default the
    /// whole campaign; `FPREV_SHARD=k/N` overrides it.
    pub shard: Shard,
    /// Persist findings of `assert_reproducible!` to `fprev-regressions/` and replay the
    /// persisted ones first. Default false for a config built in code (its seed is in the
    /// code already), true from [`from_env`](Self::from_env) unless
    /// `FPREV_REGRESSIONS=off`.
    pub regressions: bool,
    /// Stages to run, in order. Default all four; `FPREV_STAGES` overrides it
    /// (`repeat,distribution,schedule,loops` or `all`).
    pub stages: Vec<Stage>,
    /// Largest pool of the distribution stage. Default: available cores, at least 4;
    /// `FPREV_THREADS` overrides it.
    pub max_threads: usize,
    /// Shuffle of the scrambled stages. Default Fisher-Yates; `FPREV_SCRAMBLE=sattolo`
    /// or `identity` overrides it.
    pub shuffle: Shuffle,
    /// Campaign or run seed. Default random; `FPREV_SEED` overrides it.
    pub seed: Option<u64>,
    /// Record executed orders (see [`entropy`]). Default true.
    pub record_orders: bool,
    /// Reductions combine in a mix of shapes (see
    /// [`CombineShape`](crate::scramble::CombineShape)) in the scrambled stages. Default true;
    /// `FPREV_SCRAMBLE=fisher-yates` or `sattolo` switches to permuted sequential orders.
    pub shapes: bool,
}

impl Default for AmplifyConfig {
    fn default() -> Self {
        AmplifyConfig {
            runs: 20,
            stages: Stage::ALL.to_vec(),
            max_threads: std::thread::available_parallelism().map_or(4, |n| n.get().max(4)),
            shuffle: Shuffle::FisherYates,
            seed: None,
            record_orders: true,
            shapes: true,
            time: None,
            shard: Shard::WHOLE,
            regressions: false,
        }
    }
}

/// A setting from the environment that cannot be used, with the variable and its value.
///
/// ```
/// use fprev_runtime::amplify::ConfigError;
/// let e = ConfigError::new("FPREV_SHARD", "3/2", "shards are numbered 1 to 2");
/// assert_eq!(e.to_string(), "FPREV_SHARD=\"3/2\": shards are numbered 1 to 2");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

impl ConfigError {
    /// An error for `var=value`.
    pub fn new(var: &'static str, value: &str, reason: impl fmt::Display) -> Self {
        ConfigError {
            var,
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: {}", self.var, self.value, self.reason)
    }
}

impl std::error::Error for ConfigError {}

impl AmplifyConfig {
    /// The defaults overridden by `FPREV_RUNS`, `FPREV_STAGES`, `FPREV_THREADS`,
    /// `FPREV_SCRAMBLE`, `FPREV_SEED`, `FPREV_TIME`, `FPREV_SHARD` and
    /// `FPREV_REGRESSIONS`; bad values are reported and ignored (the defaults are used).
    /// `assert_reproducible!` uses [`try_from_env`](Self::try_from_env) instead, which
    /// fails on a bad `FPREV_TIME` or `FPREV_SHARD`.
    pub fn from_env() -> Self {
        let (cfg, errors) = Self::read_env();
        for e in errors {
            // Past libtest's capture, like every ignored setting's warning.
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "fprev: warning: ignoring {e}; using the default"
            );
        }
        cfg
    }

    /// [`from_env`](Self::from_env), except that a bad `FPREV_TIME` or `FPREV_SHARD` is an
    /// error: a campaign meant to run for hours, or one shard of many, must not quietly run
    /// the default 20 runs of the whole seed space.
    ///
    /// ```
    /// let cfg = fprev_runtime::amplify::AmplifyConfig::try_from_env().unwrap();
    /// assert!(cfg.runs > 0);
    /// ```
    pub fn try_from_env() -> Result<Self, ConfigError> {
        let (cfg, mut errors) = Self::read_env();
        match errors.is_empty() {
            true => Ok(cfg),
            false => Err(errors.remove(0)),
        }
    }

    fn read_env() -> (Self, Vec<ConfigError>) {
        warn_unknown_vars();
        let mut cfg = AmplifyConfig::default();
        let mut errors = Vec::new();
        let positive = |s: &str| s.trim().parse::<usize>().ok().filter(|&n| n > 0);
        let runs = env_parse(vars::FPREV_RUNS, "a positive integer", "20", positive);
        if let Some(n) = runs {
            cfg.runs = n;
        }
        if let Ok(value) = std::env::var(vars::FPREV_TIME) {
            match parse_duration(&value) {
                Ok(d) => {
                    cfg.time = Some(d);
                    if runs.is_none() {
                        cfg.runs = usize::MAX;
                    }
                }
                Err(e) => errors.push(ConfigError::new(vars::FPREV_TIME, &value, e)),
            }
        }
        if let Ok(value) = std::env::var(vars::FPREV_SHARD) {
            match value.parse::<Shard>() {
                Ok(s) => cfg.shard = s,
                Err(e) => errors.push(ConfigError::new(vars::FPREV_SHARD, &value, e)),
            }
        }
        cfg.regressions = regressions_on();
        if let Some(n) = env_parse(
            vars::FPREV_THREADS,
            threads::EXPECTED,
            "available cores, at least 4",
            threads::parse,
        ) {
            cfg.max_threads = n;
        }
        if let Some(stages) = env_parse(
            vars::FPREV_STAGES,
            "all, or a list of repeat, distribution, schedule, loops (each at most once)",
            "all",
            parse_stages,
        ) {
            cfg.stages = stages;
        }
        if let Some((Some(s), shapes)) =
            env_parse(vars::FPREV_SCRAMBLE, MODES, MODE_DEFAULT, parse_mode)
        {
            cfg.shuffle = s;
            cfg.shapes = shapes;
        }
        cfg.seed = env_parse(vars::FPREV_SEED, SEEDS, "a random seed", |s| {
            s.parse::<ReplayToken>().ok()
        })
        .map(|t| t.seed);
        if cfg.shard != Shard::WHOLE && cfg.seed.is_none() {
            static WARNED: std::sync::Once = std::sync::Once::new();
            // Past libtest's capture: a passing test's eprintln! is never shown.
            WARNED.call_once(|| {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "fprev: warning: {}={} without {}: this shard draws its own campaign seed, \
                     so the shards do not split one seed space; give every shard the same {}",
                    vars::FPREV_SHARD,
                    cfg.shard,
                    vars::FPREV_SEED,
                    vars::FPREV_SEED
                );
            });
        }
        (cfg, errors)
    }

    /// Sets the time budget of each campaign (see [`time`](Self::time)); the runs per
    /// stage stay a cap.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fprev_runtime::amplify::AmplifyConfig;
    ///
    /// let cfg = AmplifyConfig::default().time(Duration::from_secs(90)).runs(usize::MAX);
    /// assert_eq!(cfg.time, Some(Duration::from_secs(90)));
    /// ```
    pub fn time(mut self, budget: Duration) -> Self {
        self.time = Some(budget);
        self
    }
    /// Sets this process's shard of the campaign.
    pub fn shard(mut self, shard: Shard) -> Self {
        self.shard = shard;
        self
    }
    /// Turns persisting and replaying findings (`fprev-regressions/`) on or off.
    pub fn regressions(mut self, on: bool) -> Self {
        self.regressions = on;
        self
    }

    /// Sets the runs per stage.
    pub fn runs(mut self, runs: usize) -> Self {
        self.runs = runs;
        self
    }
    /// Sets the stages.
    pub fn stages(mut self, stages: &[Stage]) -> Self {
        self.stages = stages.to_vec();
        self
    }
    /// Sets the largest pool of the distribution stage.
    pub fn max_threads(mut self, n: usize) -> Self {
        self.max_threads = n.max(1);
        self
    }
    /// Sets the shuffle of the scrambled stages.
    pub fn shuffle(mut self, shuffle: Shuffle) -> Self {
        self.shuffle = shuffle;
        self
    }
    /// Sets whether reductions combine in a mix of shapes in the scrambled stages.
    pub fn shapes(mut self, shapes: bool) -> Self {
        self.shapes = shapes;
        self
    }
    /// Sets the campaign seed, or a run seed (from a run's token) to replay that run.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Turns order recording on or off.
    pub fn record_orders(mut self, on: bool) -> Self {
        self.record_orders = on;
        self
    }
}

/// `FPREV_REGRESSIONS` is not `off` (or `0`, `false`, `no`).
fn regressions_on() -> bool {
    env_parse(vars::FPREV_REGRESSIONS, "on or off", "on", |s| {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "0" | "false" | "no" => Some(false),
            "on" | "1" | "true" | "yes" | "" => Some(true),
            _ => None,
        }
    })
    .unwrap_or(true)
}

fn parse_stages(s: &str) -> Option<Vec<Stage>> {
    if s.trim() == "all" {
        return Some(Stage::ALL.to_vec());
    }
    let stages = s
        .split(',')
        .map(|name| {
            let name = name.trim();
            Stage::ALL
                .into_iter()
                .find(|st| st.name() == name || st.number().to_string() == name)
        })
        .collect::<Option<Vec<_>>>()?;
    // A stage named twice would run twice, which is more likely a typo for another
    // stage than a wish: it is refused like any other bad value.
    let distinct = stages
        .iter()
        .enumerate()
        .all(|(i, st)| !stages[..i].contains(st));
    Some(stages).filter(|v| !v.is_empty() && distinct)
}

/// Chunk-size shift of the current distribution run (log2 of the scale).
static CHUNK_SHIFT: AtomicI8 = AtomicI8::new(0);

/// The chunk size a computation should use: `default`, except during distribution runs
/// of the amplifier, which scale it by 1/8..=8 (at least 1).
///
/// ```
/// assert_eq!(fprev_runtime::amplify::chunk_len(64), 64);
/// ```
pub fn chunk_len(default: usize) -> usize {
    let shift = CHUNK_SHIFT.load(Ordering::Relaxed);
    let scaled = if shift >= 0 {
        default << shift
    } else {
        default >> -shift
    };
    scaled.max(1)
}

/// The seed of run `run` of `stage` in the campaign `campaign`.
pub fn run_seed(campaign: u64, stage: Stage, run: u64) -> u64 {
    let mixed = splitmix64(campaign ^ splitmix64(stage.number() << 32 | run));
    (mixed >> 4) | stage.number() << 60
}

/// Everything a run does differently, derived from its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunSetup {
    Reference,
    Distribution { threads: usize, chunk_shift: i8 },
    Scrambled(ScrambledRun),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ScrambledRun {
    shuffle: Shuffle,
    shapes: bool,
    seed: u64,
    level: Level,
}

fn setup(cfg: &AmplifyConfig, seed: u64) -> RunSetup {
    match Stage::from_number(seed >> 60) {
        None | Some(Stage::Repeat) => RunSetup::Reference,
        Some(Stage::Distribution) => RunSetup::Distribution {
            threads: 1 + (splitmix64(seed) % cfg.max_threads as u64) as usize,
            chunk_shift: (splitmix64(seed ^ 0xC4A2) % 7) as i8 - 3,
        },
        Some(Stage::Schedule) => RunSetup::Scrambled(ScrambledRun {
            shuffle: cfg.shuffle,
            shapes: cfg.shapes,
            seed,
            level: Level::Schedule,
        }),
        Some(Stage::LoopOrder) => RunSetup::Scrambled(ScrambledRun {
            shuffle: cfg.shuffle,
            shapes: cfg.shapes,
            seed,
            level: Level::Loops,
        }),
    }
}

struct Pools(Vec<Option<rayon::ThreadPool>>);

impl Pools {
    fn get(&mut self, threads: usize) -> &rayon::ThreadPool {
        if self.0.len() <= threads {
            self.0.resize_with(threads + 1, || None);
        }
        self.0[threads].get_or_insert_with(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads::clamp(threads))
                .build()
                .expect("fprev amplify: cannot build a rayon pool")
        })
    }
}

fn run_once<R: Floats, F: Fn() -> R + Sync>(setup: RunSetup, pools: &mut Pools, f: &F) -> Vec<f64> {
    let mut out = Vec::new();
    match setup {
        RunSetup::Reference => {
            apply(&ScrambleConfig::off());
            f().push_floats(&mut out);
        }
        RunSetup::Distribution {
            threads,
            chunk_shift,
        } => {
            apply(&ScrambleConfig::off());
            CHUNK_SHIFT.store(chunk_shift, Ordering::Relaxed);
            struct Reset;
            impl Drop for Reset {
                fn drop(&mut self) {
                    CHUNK_SHIFT.store(0, Ordering::Relaxed);
                }
            }
            let _reset = Reset;
            let pool = pools.get(threads);
            pool.install(|| f().push_floats(&mut out));
        }
        RunSetup::Scrambled(s) => {
            apply(
                &ScrambleConfig::off()
                    .shuffle(Some(s.shuffle))
                    .shapes(s.shapes)
                    .seed(s.seed)
                    .level(s.level),
            );
            f().push_floats(&mut out);
        }
    }
    out
}

fn bits_hash(v: &[f64]) -> u64 {
    order_hash(v.iter().map(|x| x.to_bits() as usize))
}

/// Runs kept in a stage report: the first `KEPT_RUNS`, then differing runs up to as many
/// again; all runs are counted. Bounds a report's memory in budgeted campaigns, which may
/// run millions of times.
const KEPT_RUNS: usize = 1000;
/// Runs of a stage whose executed orders are recorded (entropy grows with invocations).
const RECORDED_RUNS: u64 = 1000;
/// Distinct results tracked per stage; beyond it `distinct` stops growing.
const TRACKED_RESULTS: usize = 1 << 20;

/// Runs `f` once unscrambled (the reference), then under every stage's runs, and reports
/// how the results differ. `name` appears in the report's replay commands. With
/// `FPREV_REPORT` set, the campaign is also added to this process's report file.
///
/// While it runs, the amplifier owns the process-wide scrambling state (see
/// [`with_config`](crate::scramble::with_config)).
pub fn amplify_named<R, F>(config: &AmplifyConfig, name: &str, f: F) -> AmplifyReport
where
    R: Floats,
    F: Fn() -> R + Sync,
{
    let report = run_campaign(config, name, &f);
    campaign::record(&report, None);
    report
}

/// The campaign itself, not recorded.
pub(crate) fn run_campaign<R, F>(config: &AmplifyConfig, name: &str, f: &F) -> AmplifyReport
where
    R: Floats,
    F: Fn() -> R + Sync,
{
    let start = Instant::now();
    let _session = Session::enter();
    let mut pools = Pools(Vec::new());
    let campaign = config.seed.unwrap_or_else(random_seed);
    let mut progress = budget::Progress::new(name, config.time, start);
    let reference = run_once(RunSetup::Reference, &mut pools, f);
    let replay = Stage::from_number(campaign >> 60);
    let mut stages = Vec::new();
    match replay {
        Some(stage) => {
            let plan = Plan {
                stage,
                seeds: Box::new(std::iter::once(campaign)),
                deadline: None,
                replay: true,
            };
            stages.push(run_stage(
                config,
                plan,
                &reference,
                &mut pools,
                f,
                &mut progress,
            ));
        }
        None => {
            let count = config.stages.len();
            for (i, &stage) in config.stages.iter().enumerate() {
                let deadline = config.time.map(|budget| {
                    let left = budget.saturating_sub(start.elapsed());
                    Instant::now() + left / (count - i) as u32
                });
                let shard = config.shard;
                let seeds = (0..config.runs as u64)
                    .map_while(move |j| shard.run_number(j))
                    .map(move |r| run_seed(campaign, stage, r));
                let plan = Plan {
                    stage,
                    seeds: Box::new(seeds),
                    deadline,
                    replay: false,
                };
                stages.push(run_stage(
                    config,
                    plan,
                    &reference,
                    &mut pools,
                    f,
                    &mut progress,
                ));
            }
        }
    }
    AmplifyReport {
        name: name.to_string(),
        campaign: ReplayToken::new(campaign),
        replay: replay.is_some(),
        len: reference.len(),
        stages,
        shard: config.shard,
        time: config.time,
        max_threads: config.max_threads,
        duration: start.elapsed(),
    }
}

/// What one stage runs.
struct Plan<'a> {
    stage: Stage,
    seeds: Box<dyn Iterator<Item = u64> + 'a>,
    /// When the stage's share of the time budget is spent.
    deadline: Option<Instant>,
    replay: bool,
}

fn run_stage<R: Floats, F: Fn() -> R + Sync>(
    config: &AmplifyConfig,
    plan: Plan<'_>,
    reference: &[f64],
    pools: &mut Pools,
    f: &F,
    progress: &mut budget::Progress,
) -> StageReport {
    let start = Instant::now();
    let mut report = StageReport {
        stage: plan.stage,
        runs: Vec::new(),
        distinct: 0,
        max_abs: 0.0,
        max_rel: 0.0,
        norm2: 0.0,
        max_ulps: 0,
        max_elements: 0,
        orders: entropy::OrderLog::default(),
        sites_reached: 0,
        run_count: 0,
        differing_count: 0,
        duration: Duration::ZERO,
        ended_by: if plan.replay {
            StageEnd::Replay
        } else {
            StageEnd::Runs
        },
    };
    let reached_before = reached_total();
    let mut distinct = HashSet::new();
    for seed in plan.seeds {
        if report.run_count > 0 && plan.deadline.is_some_and(|d| Instant::now() >= d) {
            report.ended_by = StageEnd::Budget;
            break;
        }
        let setup = setup(config, seed);
        let out = if config.record_orders && report.run_count < RECORDED_RUNS {
            let (out, log) = entropy::record_orders(|| run_once(setup, pools, f));
            report.orders.extend(log);
            out
        } else {
            run_once(setup, pools, f)
        };
        let hash = bits_hash(&out);
        if distinct.len() < TRACKED_RESULTS {
            distinct.insert(hash);
        }
        let mut record = RunRecord {
            token: ReplayToken::new(seed),
            hash,
            differs: out.len() != reference.len(),
            first_difference: None,
            len: out.len(),
        };
        if out.len() == reference.len() {
            let mut norm2 = 0.0f64;
            let mut elements = 0;
            for (k, (&x, &r)) in out.iter().zip(reference).enumerate() {
                if x.to_bits() == r.to_bits() {
                    continue;
                }
                elements += 1;
                report.max_ulps = report.max_ulps.max(ulps(x, r));
                if !record.differs {
                    record.differs = true;
                    record.first_difference = Some((k, x, r));
                }
                let abs = (x - r).abs();
                // an infinite reference makes any other value infinitely wrong (abs / |r|
                // would be NaN for a value of the other sign)
                let rel = if r != 0.0 && r.is_finite() {
                    abs / r.abs()
                } else {
                    abs
                };
                report.max_abs = max_or_nan(report.max_abs, abs);
                report.max_rel = max_or_nan(report.max_rel, rel);
                norm2 += rel * rel;
            }
            report.norm2 = max_or_nan(report.norm2, norm2.sqrt());
            report.max_elements = report.max_elements.max(elements);
        } else {
            report.max_elements = reference.len().max(out.len());
            report.max_ulps = u64::MAX;
            report.max_abs = f64::INFINITY;
            report.max_rel = f64::INFINITY;
            report.norm2 = f64::INFINITY;
        }
        report.run_count += 1;
        report.differing_count += u64::from(record.differs);
        if report.runs.len() < KEPT_RUNS || (record.differs && report.runs.len() < 2 * KEPT_RUNS) {
            report.runs.push(record);
        }
        progress.tick(plan.stage.label(), report.run_count, report.differing_count);
    }
    if report.ended_by == StageEnd::Runs && report.run_count < config.runs as u64 {
        report.ended_by = StageEnd::RunNumbers;
    }
    report.distinct = distinct.len();
    report.sites_reached = reached_total() - reached_before;
    report.duration = start.elapsed();
    report
}

/// The larger of two errors, NaN when either is: `f64::max` drops a NaN, and a run that
/// differs from a NaN reference (or gives NaN against a number) would then report no
/// error at all.
fn max_or_nan(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Distance in ulps between `x` and `r`, in the narrowest of `f32` / `f64` that holds
/// both exactly (`u64::MAX` when either is NaN or their signs differ past zero).
fn ulps(x: f64, r: f64) -> u64 {
    if x.is_nan() || r.is_nan() {
        return u64::MAX;
    }
    // Bits as a signed integer, negatives mirrored: consecutive floats differ by 1 and
    // both zeros map to 0.
    let key32 = |v: f32| {
        let b = v.to_bits() as i32;
        if b < 0 {
            i32::MIN.wrapping_sub(b)
        } else {
            b
        }
    };
    let key64 = |v: f64| {
        let b = v.to_bits() as i64;
        if b < 0 {
            i64::MIN.wrapping_sub(b)
        } else {
            b
        }
    };
    if f64::from(x as f32) == x && f64::from(r as f32) == r {
        u64::from(key32(x as f32).abs_diff(key32(r as f32)))
    } else {
        key64(x).abs_diff(key64(r))
    }
}

/// [`amplify_named`] named after the current test (the thread name libtest gives it).
///
/// ```
/// use fprev_runtime::amplify::{amplify, AmplifyConfig};
///
/// let report = amplify(&AmplifyConfig::default().runs(2).seed(7), || [1.0f64, 2.0]);
/// assert!(report.is_reproducible());
/// ```
pub fn amplify<R, F>(config: &AmplifyConfig, f: F) -> AmplifyReport
where
    R: Floats,
    F: Fn() -> R + Sync,
{
    amplify_named(config, &current_test_name(), f)
}

/// The running test's name (libtest names its threads after tests), or `<test name>`.
pub fn current_test_name() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_string(),
        _ => "<test name>".to_string(),
    }
}

/// Fails the current test, printing the amplifier's report, when `computation` is not
/// reproducible under the stages of [`AmplifyConfig::try_from_env`] (or of the config
/// given first), or when a scrambled stage ran but no scramble site was reached (then
/// nothing was reordered, and "reproducible" would mean nothing). Returns the report
/// otherwise.
///
/// In a test configured from the environment (and with a config whose
/// [`regressions`](AmplifyConfig::regressions) is on), the first differing run of each
/// stage is persisted to `fprev-regressions/<crate>/<test path>.txt` in the test's package
/// (or under `FPREV_REGRESSIONS_DIR`), and the test replays the tokens of that file before
/// its campaign, failing while one still reproduces; `FPREV_REGRESSIONS=off` turns this
/// off. A bad `FPREV_TIME` or `FPREV_SHARD` fails the test with a message naming it.
///
/// ```
/// #[fprev::scramble]
/// fn total(v: &[f64]) -> f64 {
///     v.iter().sum() // whole numbers, exact in every order: reassociation cannot move them
/// }
/// let v: Vec<f64> = (0..100).map(f64::from).collect();
/// fprev_runtime::assert_reproducible!(|| total(&v));
/// ```
///
/// ```should_panic
/// use fprev_runtime::amplify::AmplifyConfig;
/// // Different on every pool size: not reproducible.
/// let cfg = AmplifyConfig::default().runs(4).max_threads(4).seed(1);
/// fprev_runtime::assert_reproducible!(&cfg, || rayon::current_num_threads() as f64);
/// ```
#[macro_export]
macro_rules! assert_reproducible {
    ($config:expr, $computation:expr $(,)?) => {
        $crate::amplify::check(
            ::core::option::Option::Some($config),
            $crate::__amplify_call_site!(),
            $computation,
        )
    };
    ($computation:expr $(,)?) => {
        $crate::amplify::check(
            ::core::option::Option::None,
            $crate::__amplify_call_site!(),
            $computation,
        )
    };
}

/// Not public API. The call site of `assert_reproducible!`, read in the caller's crate.
#[doc(hidden)]
#[macro_export]
macro_rules! __amplify_call_site {
    () => {
        $crate::amplify::AssertSite::new(
            ::core::option_env!("CARGO_MANIFEST_DIR"),
            ::core::module_path!(),
            ::core::file!(),
            ::core::line!(),
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulp_distances() {
        assert_eq!(ulps(1.0, 1.0), 0);
        let next32 = f64::from(f32::from_bits(1.0f32.to_bits() + 3));
        assert_eq!(ulps(next32, 1.0), 3);
        assert_eq!(ulps(f64::from_bits(1.0f64.to_bits() + 1), 1.0), 1);
        assert_eq!(ulps(-0.0, 0.0), 0);
        assert_eq!(
            ulps(f64::from(f32::from_bits(1)), -f64::from(f32::from_bits(1))),
            2
        );
    }

    #[test]
    fn errors_against_a_nan_reference_are_nan_not_zero() {
        use std::sync::atomic::{AtomicU64, Ordering};
        // The first call is the reference run: NaN; every later run answers 1.0.
        let calls = AtomicU64::new(0);
        let config = AmplifyConfig::default()
            .runs(2)
            .seed(7)
            .stages(&[Stage::Repeat]);
        let report = amplify_named(&config, "nan_reference", || {
            if calls.fetch_add(1, Ordering::Relaxed) == 0 {
                [f64::NAN]
            } else {
                [1.0]
            }
        });
        let s = &report.stages[0];
        assert_eq!(s.differing_count, 2);
        assert!(s.max_abs.is_nan(), "max_abs {}", s.max_abs);
        assert!(s.max_rel.is_nan(), "max_rel {}", s.max_rel);
        assert!(s.norm2.is_nan(), "norm2 {}", s.norm2);
        assert_eq!(s.max_ulps, u64::MAX);
        let text = report.to_string();
        assert!(!text.contains(&u64::MAX.to_string()), "{text}");
        let row = text
            .lines()
            .find(|l| l.contains("1 same config"))
            .unwrap_or_default();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells[cells.len() - 4..],
            ["NaN", "NaN", "NaN", "-"],
            "{row:?}"
        );
        // and a NaN run against a number reference
        let calls = AtomicU64::new(0);
        let report = amplify_named(&config, "nan_run", || {
            if calls.fetch_add(1, Ordering::Relaxed) == 0 {
                [1.0, 2.0]
            } else {
                [1.5, f64::NAN]
            }
        });
        let s = &report.stages[0];
        assert!(s.max_abs.is_nan() && s.max_rel.is_nan() && s.norm2.is_nan());
        // an infinite reference: the other-signed infinity is infinitely far, not NaN
        let calls = AtomicU64::new(0);
        let report = amplify_named(&config, "inf_reference", || {
            if calls.fetch_add(1, Ordering::Relaxed) == 0 {
                [f64::INFINITY]
            } else {
                [f64::NEG_INFINITY]
            }
        });
        assert_eq!(report.stages[0].max_rel, f64::INFINITY);
    }

    #[test]
    fn run_seeds_carry_their_stage() {
        for st in Stage::ALL {
            assert_eq!(Stage::from_number(run_seed(5, st, 3) >> 60), Some(st));
        }
        assert_eq!(
            parse_stages("repeat, loops"),
            Some(vec![Stage::Repeat, Stage::LoopOrder])
        );
        assert_eq!(parse_stages("4"), Some(vec![Stage::LoopOrder]));
        assert_eq!(parse_stages("bogus"), None);
        for twice in ["loops,loops", "loops,4", "repeat, schedule,repeat"] {
            assert_eq!(parse_stages(twice), None, "{twice}");
        }
    }
}
