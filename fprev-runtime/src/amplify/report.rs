//! The amplifier's findings: Defour's Table II for one computation, with replay tokens.

use std::fmt;

use super::Stage;
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

/// One stage (one column group of Table II).
#[derive(Clone, Debug, PartialEq)]
pub struct StageReport {
    /// The stage.
    pub stage: Stage,
    /// Every run, in order.
    pub runs: Vec<RunRecord>,
    /// Number of distinct results (bit patterns) among the runs.
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

impl StageReport {
    /// Runs whose result differs from the reference.
    pub fn differing(&self) -> impl Iterator<Item = &RunRecord> {
        self.runs.iter().filter(|r| r.differs)
    }
}

/// Everything [`amplify`](super::amplify) found.
#[derive(Clone, Debug, PartialEq)]
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

    /// The command that replays `token`.
    pub fn replay_command(&self, token: ReplayToken) -> String {
        format!("FPREV_SEED={token} cargo test {}", self.name)
    }
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:.2e}")
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
        writeln!(
            f,
            "fprev amplify: {}: {verdict} ({} floats, campaign {})",
            self.name, self.len, self.campaign
        )?;
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
                s.runs.len(),
                s.distinct,
                s.differing().count(),
                format!("{}/{}", s.max_elements, self.len),
                sci(s.max_abs),
                sci(s.max_rel),
                sci(s.norm2),
                s.max_ulps
            )?;
            if matches!(s.stage, Stage::Schedule | Stage::LoopOrder) && s.sites_reached == 0 {
                writeln!(
                    f,
                    "    (no scramble site reached: this stage varied nothing)"
                )?;
            }
        }
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
