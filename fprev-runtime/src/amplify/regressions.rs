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
pub(crate) struct PersistedRun {
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

    /// The findings persisted so far (none when there is no file). Lines that are not
    /// UTF-8, do not start with a token of this fprev or carry a bad `threads=` are
    /// reported (past libtest's capture, so a passing test shows them too): the first two
    /// are skipped, the third replays under the configured pool.
    pub(crate) fn load(&self) -> Vec<PersistedRun> {
        let bytes = match read(&self.path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Vec::new(),
            Err(e) => {
                warn(&format!("cannot read {}: {e}", self.path.display()));
                return Vec::new();
            }
        };
        let (findings, problems) = parse(&bytes, &self.path);
        for p in &problems {
            warn(p);
        }
        findings
    }

    /// Where findings go while the store's file is not UTF-8: `<file>.new`.
    pub(crate) fn side_file(&self) -> PathBuf {
        let mut side = self.path.as_os_str().to_owned();
        side.push(".new");
        PathBuf::from(side)
    }

    /// Appends the findings not already in the file. A file that is not UTF-8 is left
    /// as it is (rewriting it would change bytes this cannot read): the findings then go
    /// to [`side_file`](Self::side_file), and [`Added::not_utf8`] says why.
    pub(crate) fn add(&self, findings: &[PersistedRun], at: &str) -> io::Result<Added> {
        let _lock = FileLock::acquire(&self.path)?;
        let bytes = read(&self.path)?;
        // Its problems were reported when it was loaded.
        let mut known = bytes
            .as_deref()
            .map_or_else(Vec::new, |b| parse(b, &self.path).0);
        let (file, not_utf8, mut text) = match bytes.map(String::from_utf8) {
            None => (self.path.clone(), None, header(&self.test)),
            Some(Ok(text)) => (self.path.clone(), None, text),
            Some(Err(e)) => {
                let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
                let side = self.side_file();
                let text = match read(&side)? {
                    None => header(&self.test),
                    Some(b) => String::from_utf8(b).map_err(|e| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "neither {} nor {} is UTF-8 ({})",
                                self.path.display(),
                                side.display(),
                                e.utf8_error()
                            ),
                        )
                    })?,
                };
                known.extend(parse(text.as_bytes(), &side).0);
                (side, Some(line), text)
            }
        };
        let mut tokens = Vec::new();
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
            tokens.push(f.token);
        }
        if !tokens.is_empty() {
            write_atomically(&file, &text)?;
        }
        Ok(Added {
            tokens,
            file,
            not_utf8,
        })
    }
}

/// What [`Store::add`] wrote.
#[derive(Debug)]
pub(crate) struct Added {
    /// The tokens added (none: every finding was already persisted).
    pub(crate) tokens: Vec<ReplayToken>,
    /// The file they were added to.
    pub(crate) file: PathBuf,
    /// `Some(line)` when the store's file is not UTF-8 from that line on, and `file` is
    /// its side file.
    pub(crate) not_utf8: Option<usize>,
}

/// The bytes of `path`, or `None` when there is no such file.
fn read(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A warning written to the process's stderr itself: libtest captures `eprintln!` and
/// shows it only for failing tests, and a skipped line matters when the test passes.
fn warn(what: &str) {
    use std::io::Write as _;
    let _ = writeln!(io::stderr(), "fprev: warning: {what}");
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

/// The findings of a file's bytes, and one message (`path:line: ...`) per line that is
/// skipped or not read whole.
fn parse(bytes: &[u8], path: &Path) -> (Vec<PersistedRun>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let at = format!("{}:{}", path.display(), i + 1);
        let Ok(line) = std::str::from_utf8(line) else {
            problems.push(format!("{at}: skipping a line that is not UTF-8"));
            continue;
        };
        // An editor's byte-order mark is not part of the first line's token.
        let line = if i == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let token = match words.next().map(str::parse::<ReplayToken>) {
            Some(Ok(t)) => t,
            Some(Err(e)) => {
                problems.push(format!("{at}: skipping a line: {e}"));
                continue;
            }
            None => continue,
        };
        let mut threads = None;
        let mut what = Vec::new();
        for w in words {
            if let Some(t) = w.strip_prefix("threads=") {
                // A pool size out of range would be clamped (or abort the process), so
                // the line would not replay what it says: it replays under the
                // configured pool instead, and says so.
                threads = super::threads::parse(t);
                if threads.is_none() {
                    problems.push(format!(
                        "{at}: threads={t} is not {}; replaying {token} under the configured pool",
                        super::threads::EXPECTED
                    ));
                }
            } else if !(w.starts_with("at=") || w.starts_with("date=")) {
                what.push(w);
            }
        }
        out.push(PersistedRun {
            token,
            threads,
            what: what.join(" "),
        });
    }
    (out, problems)
}

/// The findings of a report worth persisting: the first differing run of each stage.
pub(crate) fn findings(report: &AmplifyReport) -> Vec<PersistedRun> {
    report
        .stages
        .iter()
        .filter_map(|s| {
            let run = s.differing().next()?;
            let value = match run.first_difference {
                Some((k, got, want)) => format!("element {k} = {got:?} (reference {want:?})"),
                None => format!("{} floats (reference {})", run.len, report.len),
            };
            Some(PersistedRun {
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
        let (f, problems) = parse(text.as_bytes(), Path::new("f.txt"));
        assert_eq!(f.len(), 2);
        assert_eq!(problems.len(), 1, "{problems:?}");
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
        let finding = |n: u64| PersistedRun {
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
        assert!(added.tokens.is_empty(), "{added:?}");
        let loaded = store.load();
        let _ = fs::remove_dir_all(&dir);
        let mut tokens: Vec<u64> = loaded.iter().map(|f| f.token.seed & 0xff).collect();
        tokens.sort_unstable();
        assert_eq!(tokens, (0..8).collect::<Vec<_>>());
    }

    fn temp_store(tag: &str) -> (PathBuf, Store) {
        let dir = std::env::temp_dir().join(format!(
            "fprev-regressions-{tag}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let store = Store {
            path: dir.join("c/t.txt"),
            test: "t".into(),
        };
        (dir, store)
    }

    #[test]
    fn a_file_that_is_not_utf8_keeps_its_bytes_and_the_findings_go_beside_it() {
        let v = crate::scramble::ALGORITHM_VERSION;
        let (dir, store) = temp_store("not-utf8");
        fs::create_dir_all(store.path.parent().expect("a parent")).expect("mkdir");
        let mut bytes = format!(
            "# header\nv{v}-4000000000000001 at=a.rs:1 date=d stage=loops element 0 = 1.0 (reference 2.0)\n"
        )
        .into_bytes();
        // a Latin-1 line, then garbage: not UTF-8 from line 3 on
        bytes.extend_from_slice(b"caf\xe9 in Latin-1\n\xfe\xff\x00\n");
        fs::write(&store.path, &bytes).expect("write");
        let (loaded, problems) = parse(&bytes, &store.path);
        assert_eq!(loaded.len(), 1, "the readable line still replays");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].ends_with("t.txt:3: skipping a line that is not UTF-8"),
            "{problems:?}"
        );
        let new = |n: u64| PersistedRun {
            token: ReplayToken::new(0x4000_0000_0000_0100 | n),
            threads: Some(4),
            what: format!("stage=distribution element 0 = {n}.0 (reference 0.0)"),
        };
        let added = store.add(&[new(1)], "b.rs:2").expect("add");
        assert_eq!(added.tokens, [new(1).token]);
        assert_eq!(added.not_utf8, Some(3));
        assert_eq!(added.file, store.side_file());
        assert!(added.file.ends_with("c/t.txt.new"), "{added:?}");
        // Twice, another one, and one already in the file: each once in the side file.
        let already = loaded[0].clone();
        let again = store
            .add(&[new(1), new(2), already], "b.rs:2")
            .expect("add");
        assert_eq!(again.tokens, [new(2).token]);
        assert_eq!(
            fs::read(&store.path).expect("read"),
            bytes,
            "left as it was"
        );
        let side = Store {
            path: store.side_file(),
            test: "t".into(),
        };
        let kept = side.load();
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(kept, [new(1), new(2)]);
    }

    #[test]
    fn bad_thread_counts_and_marks_are_reported() {
        let v = crate::scramble::ALGORITHM_VERSION;
        let line = |threads: &str| {
            format!("v{v}-4000000000000001 threads={threads} at=a date=d stage=distribution element 0 = 1.0 (reference 2.0)\n")
        };
        let mut text = String::from("\u{feff}# an editor's byte-order mark\n");
        for t in ["0", "-3", "99999999", "257", "four", "", "256", "1"] {
            text.push_str(&line(t));
        }
        let (f, problems) = parse(text.as_bytes(), Path::new("f.txt"));
        let threads: Vec<Option<usize>> = f.iter().map(|f| f.threads).collect();
        assert_eq!(
            threads,
            [None, None, None, None, None, None, Some(256), Some(1)]
        );
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("f.txt:2: threads=0 is not a positive integer up to 256; replaying v"),
            "{problems:?}"
        );
        assert!(
            problems[2].contains("threads=99999999 is not"),
            "{problems:?}"
        );
    }

    /// A seeded fuzz harness for the findings-file reader: lines of valid findings,
    /// mutated and mixed with bytes that are not UTF-8, signs, spaces and pool sizes out
    /// of range. Nothing may panic, every line read keeps a pool size in range, every
    /// message names a line of the file, and the valid lines are all read. Each case's
    /// seed is printed when it fails.
    #[test]
    fn fuzz_the_findings_reader() {
        use rand::{Rng, SeedableRng};
        let cases = crate::scramble::config::proptest_cases(300);
        let v = crate::scramble::ALGORITHM_VERSION;
        let pieces: &[&[u8]] = &[
            b" ",
            b"\t",
            b"\r",
            b"#",
            b"+",
            b"-",
            b"0",
            b"threads=",
            b"threads=0",
            b"threads=-3",
            b"threads=99999999",
            b"threads=18446744073709551616",
            b"at=x",
            b"stage=loops",
            b"\xff",
            b"\xc3",
            b"\xe9",
            b"\xef\xbb\xbf",
            b"\x00",
            "\u{e9}".as_bytes(),
        ];
        for case in 0..cases {
            let seed = 0xF1D5_0000 + case;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut bytes = Vec::new();
            let mut valid = 0;
            for _ in 0..rng.random_range(0..12) {
                let threads = rng.random_range(1..=super::super::threads::MAX_POOL_THREADS);
                let line = format!(
                    "v{v}-{:016x} threads={threads} at=a.rs:1 date=d stage=loops element {} = 1.0 (reference 2.0)",
                    rng.random::<u64>(),
                    rng.random_range(0..9)
                );
                let mut line = line.into_bytes();
                if rng.random_bool(0.5) {
                    valid += 1;
                } else {
                    for _ in 0..rng.random_range(1..4) {
                        let at = rng.random_range(0..=line.len());
                        let piece = pieces[rng.random_range(0..pieces.len())];
                        line.splice(at..at, piece.iter().copied());
                    }
                }
                bytes.extend_from_slice(&line);
                bytes.push(b'\n');
            }
            let (found, problems) = parse(&bytes, Path::new("f.txt"));
            let lines = bytes.split(|&b| b == b'\n').count();
            assert!(found.len() <= lines, "seed {seed}");
            assert!(found.len() >= valid, "seed {seed}: {found:?}");
            for p in &problems {
                let line: Option<usize> = p
                    .strip_prefix("f.txt:")
                    .and_then(|r| r.split(':').next())
                    .and_then(|n| n.parse().ok());
                assert!(
                    line.is_some_and(|l| (1..=lines).contains(&l)),
                    "seed {seed}: {p}"
                );
            }
            for f in &found {
                assert!(
                    f.threads.is_none_or(|t| (1..=256).contains(&t)),
                    "seed {seed}: {f:?}"
                );
            }
        }
    }
}
