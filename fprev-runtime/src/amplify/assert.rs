//! What `assert_reproducible!` does around a campaign: replay the test's persisted
//! findings first, run the campaign, persist what it found, add it to the process
//! report, and fail the test with the report.

use super::{
    campaign, current_test_name, regressions, run_campaign, AmplifyConfig, AmplifyReport, Floats,
};

/// Not public API. Where an `assert_reproducible!` call is, captured in the user's crate.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct AssertSite {
    manifest_dir: Option<&'static str>,
    module_path: &'static str,
    file: &'static str,
    line: u32,
}

impl AssertSite {
    /// Not public API. Used by generated code.
    #[doc(hidden)]
    pub const fn new(
        manifest_dir: Option<&'static str>,
        module_path: &'static str,
        file: &'static str,
        line: u32,
    ) -> Self {
        AssertSite {
            manifest_dir,
            module_path,
            file,
            line,
        }
    }
}

/// Not public API. The body of [`assert_reproducible!`]: replays the test's persisted
/// findings, runs the campaign, persists and records what it found, and fails the test.
#[doc(hidden)]
#[track_caller]
pub fn check<R, F>(config: Option<&AmplifyConfig>, site: AssertSite, f: F) -> AmplifyReport
where
    R: Floats,
    F: Fn() -> R + Sync,
{
    let from_env;
    let config = match config {
        Some(c) => c,
        None => match AmplifyConfig::try_from_env() {
            Ok(c) => {
                from_env = c;
                &from_env
            }
            Err(e) => panic!("fprev: {e}"),
        },
    };
    let name = current_test_name();
    let location = format!("{}:{}", site.file, site.line);
    // Persisted findings belong to a test: libtest names its threads after tests.
    let store = match std::thread::current().name() {
        Some(test) if config.regressions && test != "main" => {
            regressions::Store::locate(site.manifest_dir, site.module_path, test)
        }
        _ => None,
    };
    let mut persisted = store.as_ref().map(|s| campaign::Regressions {
        file: s.path.clone(),
        ..Default::default()
    });
    if let (Some(store), Some(reg)) = (&store, &mut persisted) {
        for finding in store.load() {
            let mut replay = config.clone().seed(finding.token.seed);
            if let Some(t) = finding.threads {
                replay = replay.max_threads(t);
            }
            let report = run_campaign(&replay, &name, &f);
            reg.replayed.push(finding.token);
            if !report.is_reproducible() {
                reg.still_reproduce.push(finding.token);
                let call = campaign::CallInfo {
                    location,
                    regressions: persisted,
                };
                campaign::record(&report, Some(&call));
                panic!(
                    "fprev: the persisted finding {} of {} still reproduces (its run still \
                     differs from the unscrambled run); fix the computation, and keep the line \
                     as a regression case\n{report}",
                    finding.token,
                    shown(&store.path)
                );
            }
        }
    }
    let report = run_campaign(config, &name, &f);
    let mut note = String::new();
    if let (Some(store), Some(reg)) = (&store, &mut persisted) {
        if !report.is_reproducible() && !report.replay {
            match store.add(&regressions::findings(&report), &location) {
                Ok(added) if !added.tokens.is_empty() => {
                    note = match added.not_utf8 {
                        None => format!(
                            "\n  persisted {} finding(s) to {}: commit it; `cargo test` replays them first",
                            added.tokens.len(),
                            shown(&added.file)
                        ),
                        Some(line) => format!(
                            "\n  {} is not UTF-8 from line {line} on, so it was left as it is; \
                             persisted {} finding(s) to {} instead: fix that file, then move \
                             these lines into it (only it is replayed)",
                            shown(&store.path),
                            added.tokens.len(),
                            shown(&added.file)
                        ),
                    };
                    reg.added = added.tokens;
                }
                Ok(_) => {}
                Err(e) => {
                    note = format!(
                        "\n  (could not persist the findings to {}: {e})",
                        shown(&store.path)
                    )
                }
            }
        }
    }
    let call = campaign::CallInfo {
        location,
        regressions: persisted,
    };
    campaign::record(&report, Some(&call));
    if !report.is_reproducible() || !report.reached_a_site() {
        panic!("{report}{note}");
    }
    report
}

/// `path` relative to the current directory when it is below it (`cargo test` runs tests
/// in their package's directory, where `fprev-regressions/` is).
fn shown(path: &std::path::Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .unwrap_or(path)
        .display()
        .to_string()
}
