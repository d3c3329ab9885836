//! The runner: one campaign, stage by stage, each run set up from its seed (pool size,
//! chunk scale, scrambling) and compared bit for bit with the reference run.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI8, Ordering};
use std::time::{Duration, Instant};

use super::report::{AmplifyReport, RunRecord, StageEnd, StageReport};
use super::{budget, threads, AmplifyConfig, Floats, Stage};
use crate::random::splitmix64;
use crate::scramble::call_site::reached_total;
use crate::scramble::config::random_seed;
use crate::scramble::rng::order_hash;
use crate::scramble::session::Session;
use crate::scramble::state::apply;
use crate::scramble::{entropy, Level, ReplayToken, ScrambleConfig, Shuffle};

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
    let mut progress = budget::ProgressLine::new(name, config.time, start);
    let reference = run_once(RunSetup::Reference, &mut pools, f);
    let replay = Stage::from_number(campaign >> 60);
    let mut stages = Vec::new();
    match replay {
        Some(stage) => {
            let plan = StagePlan {
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
                let plan = StagePlan {
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
struct StagePlan<'a> {
    stage: Stage,
    seeds: Box<dyn Iterator<Item = u64> + 'a>,
    /// When the stage's share of the time budget is spent.
    deadline: Option<Instant>,
    replay: bool,
}

fn run_stage<R: Floats, F: Fn() -> R + Sync>(
    config: &AmplifyConfig,
    plan: StagePlan<'_>,
    reference: &[f64],
    pools: &mut Pools,
    f: &F,
    progress: &mut budget::ProgressLine,
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
        compare(&out, reference, &mut record, &mut report);
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

/// Compares one run's `out` with the reference: notes the first differing element in
/// `record` and widens the stage's error bounds in `report`.
fn compare(out: &[f64], reference: &[f64], record: &mut RunRecord, report: &mut StageReport) {
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
pub(super) fn ulps(x: f64, r: f64) -> u64 {
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
