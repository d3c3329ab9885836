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
//! derived from it, so its [`ReplayToken`](crate::scramble::ReplayToken) alone replays it: set `FPREV_SEED` to the
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
mod config;
mod json;
mod output;
mod regressions;
mod report;
mod run;
mod shard;
mod stage;
mod threads;

#[doc(hidden)]
pub use assert::{check, AssertSite};
pub use budget::{parse_duration, DurationError};
pub use campaign::utc_now;
pub use config::{AmplifyConfig, ConfigError};
pub use output::Floats;
pub use report::{AmplifyReport, RunRecord, StageEnd, StageReport};
pub use run::{chunk_len, run_seed};
pub use shard::{Shard, ShardError};
pub use stage::Stage;

use run::run_campaign;

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
    use super::run::ulps;
    use super::stage::parse_stages;
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
