//! Persisted findings, as `proptest-regressions/` does it: a non-reproducible result of
//! `assert_reproducible!` is appended to `fprev-regressions/<crate>/<test path>.txt` in
//! the package that holds the test, and the next run of that test replays those tokens
//! first, failing while one still reproduces.
//!
//! One line per finding: the replay token, then `key=value` fields (`stage`, `threads`
//! the distribution stage drew its pool size under, `at` the macro call, `date`), then
//! the differing value in words. Lines starting with `#` are comments. The file is
//! changed under a lock file and replaced atomically, so concurrent tests and processes
//! neither lose nor tear lines.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::campaign::{utc_now, write_atomically, FileLock};
use super::report::AmplifyReport;
use super::Stage;
use crate::scramble::config::vars;
use crate::scramble::ReplayToken;

/// One persisted finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Finding {
    pub(crate) token: ReplayToken,
    /// The distribution stage's largest pool when it was found.
    pub(crate) threads: Option<usize>,
    /// The rest of the line (stage, value), to recognise the same finding again.
    pub(crate) what: String,
}

/// The regressions file of one test.
pub(crate) struct Store {
    pub(crate) path: PathBuf,
    test: String,
}

/// `off` in `FPREV_REGRESSIONS` is read by the config; this is where files go.
fn base_dir(manifest_dir: Option<&str>) -> Option<PathBuf> {
    match std::env::var_os(vars::FPREV_REGRESSIONS_DIR).filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => manifest_dir.map(|d| Path::new(d).join("fprev-regressions")),
    }
}

/// A path segment that is safe as a file name on every platform.
fn segment(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' => c,
            _ => '_',
        })
        .collect()
}

impl Store {
    /// The file of `test` (a libtest thread name, `module::test_fn`) in the crate whose
    /// root module is the first segment of `module_path`.
    pub(crate) fn locate(
        manifest_dir: Option<&str>,
        module_path: &str,
        test: &str,
    ) -> Option<Store> {
        let mut path = base_dir(manifest_dir)?;
        path.push(segment(module_path.split("::").next().unwrap_or("crate")));
        let parts: Vec<&str> = test.split("::").collect();
        for (i, part) in parts.iter().enumerate() {
            if i + 1 == parts.len() {
                path.push(format!("{}.txt", segment(part)));
            } else {
                path.push(segment(part));
            }
        }
        Some(Store {
            path,
            test: test.to_string(),
        })
    }

    /// The findings persisted so far (none when there is no file). Lines that do not
    /// start with a token of this fprev are reported and skipped.
    pub(crate) fn load(&self) -> Vec<Finding> {
        let text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                eprintln!("fprev: cannot read {}: {e}", self.path.display());
                return Vec::new();
            }
        };
        parse(&text, &self.path)
    }

    /// Appends the findings not already in the file; returns the tokens added.
    pub(crate) fn add(&self, findings: &[Finding], at: &str) -> io::Result<Vec<ReplayToken>> {
        let _lock = FileLock::acquire(&self.path)?;
        let mut text = match fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => header(&self.test),
            Err(e) => return Err(e),
        };
        let mut known = parse(&text, &self.path);
        let mut added = Vec::new();
        let date = utc_now();
        for f in findings {
            if known.iter().any(|k| k.token == f.token || k.what == f.what) {
                continue;
            }
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            let threads = f
                .threads
                .map_or_else(String::new, |t| format!(" threads={t}"));
            text.push_str(&format!(
                "{}{threads} at={} date={date} {}\n",
                f.token,
                at.replace(' ', "_"),
                f.what
            ));
            known.push(f.clone());
            added.push(f.token);
        }
        if !added.is_empty() {
            write_atomically(&self.path, &text)?;
        }
        Ok(added)
    }
}

fn header(test: &str) -> String {
    format!(
        "# fprev regressions of the test `{test}`: runs whose result differed from the\n\
         # unscrambled run. Commit this file: `cargo test` replays every token below before\n\
         # the test's campaign and fails while one still reproduces; once fixed they pass and\n\
         # stay as regression cases. FPREV_REGRESSIONS=off skips them.\n\
         # token [threads=N] at=<call> date=<UTC> stage=<stage> <first differing value>\n"
    )
}

fn parse(text: &str, path: &Path) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let token = match words.next().map(str::parse::<ReplayToken>) {
            Some(Ok(t)) => t,
            Some(Err(e)) => {
                eprintln!(
                    "fprev: warning: {}:{}: skipping a line: {e}",
                    path.display(),
                    i + 1
                );
                continue;
            }
            None => continue,
        };
        let mut threads = None;
        let mut what = Vec::new();
        for w in words {
            if let Some(t) = w.strip_prefix("threads=") {
                threads = t.parse().ok();
            } else if !(w.starts_with("at=") || w.starts_with("date=")) {
                what.push(w);
            }
        }
        out.push(Finding {
            token,
            threads,
            what: what.join(" "),
        });
    }
    out
}

/// The findings of a report worth persisting: the first differing run of each stage.
pub(crate) fn findings(report: &AmplifyReport) -> Vec<Finding> {
    report
        .stages
        .iter()
        .filter_map(|s| {
            let run = s.differing().next()?;
            let value = match run.first_difference {
                Some((k, got, want)) => format!("element {k} = {got:?} (reference {want:?})"),
                None => format!("{} floats (reference {})", run.len, report.len),
            };
            Some(Finding {
                token: run.token,
                threads: (s.stage == Stage::Distribution).then_some(report.max_threads),
                what: format!("stage={} {value}", s.stage.name()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_paths_are_safe() {
        let text = "# header\n\nv3-4000000000000001 at=tests/a.rs:3 date=2026-01-01T00:00:00Z stage=loops element 0 = 1.0 (reference 2.0)\n\
                    v3-2000000000000002 threads=4 at=x date=y stage=distribution element 1 = 3.0 (reference 2.0)\nnot-a-token\n";
        let f = parse(text, Path::new("f.txt"));
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].token, ReplayToken::new(0x4000_0000_0000_0001));
        assert_eq!(f[0].what, "stage=loops element 0 = 1.0 (reference 2.0)");
        assert_eq!(f[1].threads, Some(4));
        let s = Store::locate(Some("/pkg"), "my_crate::tests", "tests::a b").unwrap();
        if std::env::var_os(vars::FPREV_REGRESSIONS_DIR).is_none() {
            assert_eq!(
                s.path,
                Path::new("/pkg/fprev-regressions/my_crate/tests/a_b.txt")
            );
        }
    }

    #[test]
    fn findings_are_added_once_by_concurrent_writers() {
        let dir = std::env::temp_dir().join(format!(
            "fprev-regressions-unit-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let store = Store {
            path: dir.join("c/t.txt"),
            test: "t".into(),
        };
        let finding = |n: u64| Finding {
            token: ReplayToken::new(0x4000_0000_0000_0000 | n),
            threads: None,
            what: format!("stage=loops element 0 = {n}.0 (reference 0.0)"),
        };
        std::thread::scope(|s| {
            for n in 0..8 {
                let (store, f) = (&store, finding(n));
                s.spawn(move || store.add(&[f.clone(), f], "a.rs:1").expect("add"));
            }
        });
        // Again: the same tokens, and a new token with a value already persisted.
        let mut same_value = finding(3);
        same_value.token = ReplayToken::new(0x4000_0000_0000_00ff);
        let added = store.add(&[finding(1), same_value], "a.rs:1").expect("add");
        assert!(added.is_empty(), "{added:?}");
        let loaded = store.load();
        let _ = fs::remove_dir_all(&dir);
        let mut tokens: Vec<u64> = loaded.iter().map(|f| f.token.seed & 0xff).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, (0..8).collect::<Vec<_>>());
    }
}
