//! The amplifier's settings: [`AmplifyConfig`], its defaults, and the `FPREV_*` variables
//! that override them.

use std::fmt;
use std::time::Duration;

use super::stage::{parse_stages, Stage};
use super::{parse_duration, threads, Shard};
use crate::scramble::config::{
    env_parse, parse_mode, seed_from_env, vars, warn_unknown_vars, MODES, MODE_DEFAULT,
};
use crate::scramble::Shuffle;

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
    /// Time budget of one campaign (one [`amplify`](super::amplify()) / `assert_reproducible!` call): the
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
    /// (`repeat,distribution,schedule,loops` or `all`), and `FPREV_SCRAMBLE=off` keeps
    /// only `repeat` (nothing is reordered).
    pub stages: Vec<Stage>,
    /// Largest pool of the distribution stage. Default: available cores, at least 4;
    /// `FPREV_THREADS` overrides it.
    pub max_threads: usize,
    /// Shuffle of the scrambled stages. Default Fisher-Yates; `FPREV_SCRAMBLE=sattolo`
    /// or `identity` overrides it.
    pub shuffle: Shuffle,
    /// Campaign or run seed. Default random; `FPREV_SEED` overrides it.
    pub seed: Option<u64>,
    /// Record executed orders (see [`entropy`](crate::scramble::entropy)). Default true.
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
        match env_parse(vars::FPREV_SCRAMBLE, MODES, MODE_DEFAULT, parse_mode) {
            Some((Some(s), shapes)) => {
                cfg.shuffle = s;
                cfg.shapes = shapes;
            }
            // scrambling off: nothing is reordered, so only the repeat stage runs (real
            // non-determinism still shows); `cargo fprev test`'s unscrambled run is this
            Some((None, _)) => cfg.stages = vec![Stage::Repeat],
            None => {}
        }
        cfg.seed = seed_from_env().map(|t| t.seed);
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
