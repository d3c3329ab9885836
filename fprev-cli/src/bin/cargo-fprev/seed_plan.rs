//! `cargo fprev test`'s seeds: what `--seeds`, `--seed`, `--time`, `--shard`, `--jobs`
//! and `--timeout-factor` ask for, checked before anything is copied or built, and the
//! token each seed runs under.

use std::time::Duration;

use fprev::scramble::ReplayToken;

use crate::cargo_flags::TestArgs;
use crate::cli_output::CargoFprevError;
use crate::scramble_env::MODES;

/// What the arguments ask for, checked before anything is copied or built.
pub struct SeedPlan {
    /// Seeds per mode (`u64::MAX`: until the time budget runs out).
    pub seeds: u64,
    pub budget: Option<Duration>,
    pub shard: fprev::amplify::Shard,
}

impl SeedPlan {
    pub fn new(a: &TestArgs) -> Result<SeedPlan, CargoFprevError> {
        for m in &a.modes {
            if !MODES.contains(&m.as_str()) {
                return Err(CargoFprevError(format!(
                    "unknown mode `{m}` (expected {})",
                    MODES.join(", ")
                )));
            }
        }
        if a.seeds == Some(0) {
            return Err(CargoFprevError("--seeds 0 runs nothing".into()));
        }
        let budget = match &a.time {
            Some(t) => Some(
                fprev::amplify::parse_duration(t)
                    .map_err(|e| CargoFprevError(format!("--time {t}: {e}")))?,
            ),
            None => None,
        };
        let seeds = a
            .seeds
            .unwrap_or(if budget.is_some() { u64::MAX } else { 8 });
        // the seeds run are --seed + 1, --seed + 2, ...: none may pass the largest
        let room = u64::MAX - a.seed;
        if room == 0 {
            return Err(CargoFprevError(format!(
                "--seed {} leaves no seed: the seeds run are --seed + 1, + 2, ... (give a smaller one)",
                a.seed
            )));
        }
        if a.seeds.is_some_and(|n| n > room) {
            return Err(CargoFprevError(format!(
                "--seed {} with --seeds {seeds} goes past the largest seed, 2^64 - 1 (give a smaller --seed or fewer --seeds)",
                a.seed
            )));
        }
        let seeds = seeds.min(room);
        if a.jobs == Some(0) {
            return Err(CargoFprevError(
                "--jobs 0 runs nothing: give 1 or more".into(),
            ));
        }
        let shard = match &a.shard {
            Some(s) => s
                .parse::<fprev::amplify::Shard>()
                .map_err(|e| CargoFprevError(format!("--shard {s}: {e}")))?,
            None => fprev::amplify::Shard::WHOLE,
        };
        if !(a.timeout_factor.is_finite() && (1.0..=MAX_TIMEOUT_FACTOR).contains(&a.timeout_factor))
        {
            return Err(CargoFprevError(format!(
                "--timeout-factor {} must be a number from 1 to {MAX_TIMEOUT_FACTOR}",
                a.timeout_factor
            )));
        }
        Ok(SeedPlan {
            seeds,
            budget,
            shard,
        })
    }

    /// This shard's seed indices, in order; with a time budget the rounds stop early.
    pub fn shard_seeds(&self) -> impl Iterator<Item = u64> + Clone + '_ {
        (0..).map_while(|j| self.nth_shard_seed(j))
    }

    /// This shard's `j`-th seed index (from 0), computed rather than listed, so that a
    /// campaign's memory does not grow with its seeds.
    pub fn nth_shard_seed(&self, j: u64) -> Option<u64> {
        let count = u64::from(self.shard.count());
        let i = u64::from(self.shard.index() - 1).checked_add(j.checked_mul(count)?)?;
        (i < self.seeds).then_some(i)
    }
}

/// The largest `--timeout-factor`: past it a limit is no limit.
pub const MAX_TIMEOUT_FACTOR: f64 = 10_000.0;

/// `d` times `factor` (finite, at least 0), saturating: no product panics.
pub fn times(d: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// The replay token of the `seed_index`-th seed (from 0): `--seed` + 1, + 2, ...
pub fn token_of(a: &TestArgs, seed_index: u64) -> String {
    ReplayToken::new(a.seed.wrapping_add(seed_index + 1)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<SeedPlan, CargoFprevError> {
        let argv = ["cargo-fprev", "test"].iter().chain(args);
        let cli = crate::Cli::try_parse_from(argv).expect("arguments clap accepts");
        let crate::Cmd::Test(a) = cli.command else {
            panic!("not `test`")
        };
        SeedPlan::new(&a)
    }

    fn refusal(args: &[&str]) -> String {
        match plan(args) {
            Ok(_) => panic!("{args:?} accepted"),
            Err(CargoFprevError(message)) => message,
        }
    }

    #[test]
    fn seeds_never_wrap_past_the_largest() {
        let max = u64::MAX.to_string();
        assert!(refusal(&["--seed", &max]).contains("leaves no seed"));
        let near = (u64::MAX - 5).to_string();
        assert!(refusal(&["--seed", &near, "--seeds", "6"]).contains("goes past the largest seed"));
        let p = plan(&["--seed", &near, "--seeds", "5"]).expect("five seeds fit");
        assert_eq!(p.shard_seeds().count(), 5);
        // with --time, the seeds stop at the largest rather than wrap to 0
        let p = plan(&["--seed", &near, "--time", "1h"]).expect("a time budget");
        assert_eq!(p.shard_seeds().last(), Some(4));
    }

    #[test]
    fn arguments_out_of_range_are_refused_by_name() {
        assert!(refusal(&["--jobs", "0"]).contains("--jobs 0 runs nothing"));
        for f in ["1e308", "0.5", "NaN", "inf", "10001"] {
            let message = refusal(&["--timeout-factor", f]);
            assert!(
                message.contains("must be a number from 1 to 10000"),
                "{f}: {message}"
            );
        }
        assert!(plan(&["--timeout-factor", "10000"]).is_ok());
        // the largest factor on the longest run: no panic, a saturated limit
        assert_eq!(times(Duration::MAX, MAX_TIMEOUT_FACTOR), Duration::MAX);
        assert_eq!(times(Duration::from_secs(2), 2.5), Duration::from_secs(5));
    }

    #[test]
    fn a_time_budget_computes_its_seeds_without_listing_them() {
        // `--time` with no `--seeds`: no end to the seeds, each computed from its index
        let p = plan(&["--time", "8h", "--shard", "2/3"]).expect("a nightly plan");
        assert_eq!(p.seeds, u64::MAX);
        assert_eq!(p.nth_shard_seed(0), Some(1));
        assert_eq!(p.nth_shard_seed(1), Some(4));
        assert_eq!(p.nth_shard_seed(1 << 40), Some(1 + 3 * (1 << 40)));
        assert_eq!(p.nth_shard_seed(u64::MAX / 2), None); // past u64: none, never a wrap
        let p = plan(&["--seeds", "7", "--shard", "3/3"]).expect("a plan");
        let seeds: Vec<u64> = p.shard_seeds().collect();
        assert_eq!(seeds, [2, 5]);
        assert_eq!(p.nth_shard_seed(2), None);
    }
}
