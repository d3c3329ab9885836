//! The amplifier's findings: Defour's Table II for one computation, with replay tokens.

use std::fmt;
use std::time::Duration;

use super::{Shard, Stage};
use crate::scramble::entropy::OrderLog;
use crate::scramble::ReplayToken;

/// One run of one stage.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    /// Replays this run (`FPREV_SEED=<token>`).
    pub token: ReplayToken,
    /// Hash of the result's bits.
    pub hash: u64,
    /// Whether the bits differ from the unscrambled reference run.
    pub differs: bool,
    /// First differing element: (index, value, reference value); `None` when equal or
    /// when the lengths differ.
    pub first_difference: Option<(usize, f64, f64)>,
    /// Result length (number of floats).
    pub len: usize,
}

/// Why a stage stopped starting runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StageEnd {
    /// It ran its runs ([`AmplifyConfig::runs`](super::AmplifyConfig::runs)).
    Runs,
    /// Its share of the time budget was spent.
    Budget,
    /// It replayed the single run its token named.
    Replay,
    /// Its shard ran out of run numbers (2^32 per stage).
    RunNumbers,
}

impl StageEnd {
    /// `runs`, `budget`, `replay` or `run-numbers`, as reports write it.
    pub const fn name(self) -> &'static str {
        match self {
            StageEnd::Runs => "runs",
            StageEnd::Budget => "budget",
            StageEnd::Replay => "replay",
            StageEnd::RunNumbers => "run-numbers",
        }
    }
}

/// One stage (one column group of Table II). Equality compares everything but the
/// [`duration`](Self::duration): a replayed campaign equals the original.
#[derive(Clone, Debug)]
pub struct StageReport {
    /// The stage.
    pub stage: Stage,
    /// The runs kept, in order: the first 1000, then differing runs up to 2000 in all
    /// (long budgeted campaigns keep their memory bounded); [`run_count`](Self::run_count)
    /// counts them all.
    pub runs: Vec<RunRecord>,
    /// Runs this stage ran.
    pub run_count: u64,
    /// Runs whose result differs from the reference.
    pub differing_count: u64,
    /// Time the stage took.
    pub duration: Duration,
    /// Why it stopped.
    pub ended_by: StageEnd,
    /// Number of distinct results (bit patterns) among the runs (tracked up to 2^20).
    pub distinct: usize,
    /// Largest absolute difference from the reference over all runs and elements.
    pub max_abs: f64,
    /// Largest relative difference from the reference.
    pub max_rel: f64,
    /// Largest norm2 of the relative error vector of one run (Table II's "error").
    pub norm2: f64,
    /// Largest distance from the reference in units in the last place, counted in the
    /// narrowest of `f32` / `f64` that holds both values exactly (so an `f32` result
    /// counts `f32` ulps).
    pub max_ulps: u64,
    /// Most elements that differed in one run (out of the result's length).
    pub max_elements: usize,
    /// Orders executed by scrambled loops and launches during this stage.
    pub orders: OrderLog,
    /// Scrambled executions of scramble sites (reductions, declared loops, rayon sources)
    /// during this stage; 0 in a scrambled stage means it varied nothing.
    pub sites_reached: u64,
}

impl PartialEq for StageReport {
    fn eq(&self, o: &Self) -> bool {
        let StageReport {
            stage,
            runs,
            run_count,
            differing_count,
            duration: _,
            ended_by,
            distinct,
            max_abs,
            max_rel,
            norm2,
            max_ulps,
            max_elements,
            orders,
            sites_reached,
        } = self;
        (stage, runs, run_count, differing_count, ended_by, distinct)
            == (
                &o.stage,
                &o.runs,
                &o.run_count,
                &o.differing_count,
                &o.ended_by,
                &o.distinct,
            )
            && (max_abs, max_rel, norm2, max_ulps, max_elements)
                == (
                    &o.max_abs,
                    &o.max_rel,
                    &o.norm2,
                    &o.max_ulps,
                    &o.max_elements,
                )
            && (orders, sites_reached) == (&o.orders, &o.sites_reached)
    }
}

impl PartialEq for AmplifyReport {
    fn eq(&self, o: &Self) -> bool {
        let AmplifyReport {
            name,
            campaign,
            replay,
            len,
            stages,
            shard,
            time,
            max_threads,
            duration: _,
        } = self;
        (name, campaign, replay, len, stages)
            == (&o.name, &o.campaign, &o.replay, &o.len, &o.stages)
            && (shard, time, max_threads) == (&o.shard, &o.time, &o.max_threads)
    }
}

impl StageReport {
    /// Runs whose result differs from the reference.
    pub fn differing(&self) -> impl Iterator<Item = &RunRecord> {
        self.runs.iter().filter(|r| r.differs)
    }
}

/// Everything [`amplify`](super::amplify) found. Equality compares everything but the
/// [`duration`](Self::duration)s: a replayed campaign equals the original.
#[derive(Clone, Debug)]
pub struct AmplifyReport {
    /// What was amplified (the test name, for the replay command).
    pub name: String,
    /// Replays the whole campaign (or, when [`replay`](Self::replay), the one run).
    pub campaign: ReplayToken,
    /// True when the seed named a single run, which is all that ran.
    pub replay: bool,
    /// Number of floats in the reference result.
    pub len: usize,
    /// One entry per stage that ran.
    pub stages: Vec<StageReport>,
    /// The slice of the campaign's runs that ran.
    pub shard: Shard,
    /// The campaign's time budget, if it had one.
    pub time: Option<Duration>,
    /// Largest pool of the distribution stage (distribution-stage tokens draw their pool
    /// size below it, so their replay commands set `FPREV_THREADS`).
    pub max_threads: usize,
    /// Time the campaign took, reference run included.
    pub duration: Duration,
}

impl AmplifyReport {
    /// True when no run of any stage differed from the reference.
    pub fn is_reproducible(&self) -> bool {
        self.stages.iter().all(|s| s.differing().next().is_none())
    }

    /// False when a scrambled stage (schedule or loop/reduction order) ran and reached no
    /// scramble site: nothing was reordered, so its agreement proves nothing.
    pub fn reached_a_site(&self) -> bool {
        let scrambled: Vec<_> = self
            .stages
            .iter()
            .filter(|s| matches!(s.stage, Stage::Schedule | Stage::LoopOrder))
            .collect();
        scrambled.is_empty() || scrambled.iter().any(|s| s.sites_reached > 0)
    }

    /// The stage report of `stage`, if it ran.
    pub fn stage(&self, stage: Stage) -> Option<&StageReport> {
        self.stages.iter().find(|s| s.stage == stage)
    }

    /// The command that replays `token`: the campaign token with its shard, a
    /// distribution-stage token with its pool bound, any other token alone.
    pub fn replay_command(&self, token: ReplayToken) -> String {
        let mut vars = String::new();
        if token.seed >> 60 == Stage::Distribution.number() {
            vars = format!("FPREV_THREADS={} ", self.max_threads);
        } else if token.seed >> 60 == 0 && self.shard != Shard::WHOLE {
            vars = format!("FPREV_SHARD={} ", self.shard);
        }
        format!("{vars}FPREV_SEED={token} cargo test {}", self.name)
    }
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:.2e}")
    }
}

/// `-` for a distance with no ulp count (`u64::MAX`: a NaN, or results of different
/// lengths), which would read as a real, enormous distance.
fn ulps_text(u: u64) -> String {
    if u == u64::MAX {
        "-".to_string()
    } else {
        u.to_string()
    }
}

impl AmplifyReport {
    /// One row per stage, with a note when a budget ended it or it varied nothing.
    fn write_stages(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "  {:<22} {:>5} {:>9} {:>10} {:>9} {:>11} {:>11} {:>13} {:>9}",
            "stage",
            "runs",
            "distinct",
            "differing",
            "elements",
            "max abs err",
            "max rel err",
            "norm2 rel err",
            "max ulps"
        )?;
        for s in &self.stages {
            writeln!(
                f,
                "  {:<22} {:>5} {:>9} {:>10} {:>9} {:>11} {:>11} {:>13} {:>9}",
                s.stage.label(),
                s.run_count,
                s.distinct,
                s.differing_count,
                format!("{}/{}", s.max_elements, self.len),
                sci(s.max_abs),
                sci(s.max_rel),
                sci(s.norm2),
                ulps_text(s.max_ulps)
            )?;
            if s.ended_by == StageEnd::Budget {
                writeln!(
                    f,
                    "    (its share of the time budget ended it after {:.1?})",
                    s.duration
                )?;
            }
            if matches!(s.stage, Stage::Schedule | Stage::LoopOrder) && s.sites_reached == 0 {
                writeln!(
                    f,
                    "    (no scramble site reached: this stage varied nothing)"
                )?;
            }
        }
        Ok(())
    }

    /// How many distinct orders each recorded site ran in, per stage.
    fn write_orders_covered(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sites: std::collections::BTreeSet<&String> = self
            .stages
            .iter()
            .flat_map(|s| s.orders.sites.keys())
            .collect();
        if !sites.is_empty() {
            writeln!(f, "  orders covered (distinct / invocations):")?;
            for site in sites {
                write!(f, "    {site}:")?;
                for s in &self.stages {
                    if let Some(v) = s.orders.sites.get(site) {
                        let distinct = v.iter().collect::<std::collections::BTreeSet<_>>().len();
                        write!(f, "  {} {distinct}/{}", s.stage.name(), v.len())?;
                    }
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }

    /// The first five differing runs, each with its replay command.
    fn write_differing_runs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = 0;
        for s in &self.stages {
            for (i, r) in s.runs.iter().enumerate().filter(|(_, r)| r.differs) {
                if shown == 0 {
                    writeln!(f, "  differing runs (first 5):")?;
                }
                if shown == 5 {
                    break;
                }
                shown += 1;
                match r.first_difference {
                    Some((k, got, want)) => writeln!(
                        f,
                        "    {} run {i}: element {k} = {got:?} (reference {want:?})",
                        s.stage.name()
                    )?,
                    None => writeln!(
                        f,
                        "    {} run {i}: {} floats (reference {})",
                        s.stage.name(),
                        r.len,
                        self.len
                    )?,
                }
                writeln!(f, "      replay: {}", self.replay_command(r.token))?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for AmplifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if !self.is_reproducible() {
            "NOT reproducible"
        } else if !self.reached_a_site() {
            "no scramble site was reached (nothing was reordered: annotate the functions that accumulate with #[fprev::scramble])"
        } else {
            "reproducible"
        };
        let shard = match self.shard {
            Shard::WHOLE => String::new(),
            s => format!(", shard {s}"),
        };
        writeln!(
            f,
            "fprev amplify: {}: {verdict} ({} floats, campaign {}{shard})",
            self.name, self.len, self.campaign
        )?;
        self.write_stages(f)?;
        self.write_orders_covered(f)?;
        self.write_differing_runs(f)?;
        if self.replay {
            write!(f, "  replayed the single run {}", self.campaign)
        } else {
            write!(
                f,
                "  replay the campaign: {}",
                self.replay_command(self.campaign)
            )
        }
    }
}
