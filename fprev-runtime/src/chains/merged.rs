//! One chain report for a whole `cargo test`: every test binary (and example) that
//! prints its report at exit (`FPREV_CHAINS=1`) also merges its counts into
//! `<target>/fprev/chains.tsv` under a lock file, and rewrites the readable
//! `<target>/fprev/chains.txt` from the merged counts.
//!
//! "Printed once" works like this: each process prints its own report on stderr, as
//! before, and one line naming the merged file; the file is the record. Binaries of one
//! `cargo test` run one after another, so when the last one exits the file holds the
//! report of them all. A run is told apart from the next by its cargo process: the
//! nearest ancestor named `cargo` (doctests run under rustdoc, under cargo; on Linux,
//! read from `/proc`), else the parent. Counts left by another run are replaced, not
//! added to.
//!
//! `<target>` is `$CARGO_TARGET_DIR` when set to an absolute path, else found from the
//! binary's path (`target/debug/deps/name-hash` gives `target`).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::report::{sort, ChainReport, ChainShape, Order, SiteChains, HISTOGRAM_BUCKETS};
use super::source::{AccumulationKind, SiteSource};

/// The directory holding the merged report, if one can be found.
pub fn directory() -> Option<PathBuf> {
    // A relative `CARGO_TARGET_DIR` is relative to where cargo ran, not to the test's
    // working directory (its package): then the binary's path says more.
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from) {
        if dir.is_absolute() {
            return Some(dir.join("fprev"));
        }
    }
    let exe = std::env::current_exe().ok()?;
    let bins = exe.ancestors().find(|a| {
        a.file_name()
            .is_some_and(|n| n == "deps" || n == "examples")
    })?;
    Some(bins.parent()?.parent()?.join("fprev"))
}

/// Merge `report` into the files under `dir`; returns the readable report's path and the
/// number of processes merged so far in this run.
pub fn merge_into(dir: &Path, report: &ChainReport) -> std::io::Result<(PathBuf, u64)> {
    fs::create_dir_all(dir)?;
    let _lock = Lock::take(&dir.join("chains.lock"))?;
    let data = dir.join("chains.tsv");
    let run = run_key();
    let mut processes = 0;
    let mut sites: BTreeMap<Key, SiteChains> = BTreeMap::new();
    if let Ok(text) = fs::read_to_string(&data) {
        let mut lines = text.lines();
        if let Some(header) = lines.next() {
            let mut h = header.split('\t');
            if h.next() == Some("fprev-chains-v1") && h.next() == Some(run.as_str()) {
                processes = h.next().and_then(|n| n.parse().ok()).unwrap_or(0);
                for s in lines.filter_map(parse) {
                    sites.insert(key(&s), s);
                }
            }
        }
    }
    processes += 1;
    for s in &report.sites {
        match sites.get_mut(&key(s)) {
            Some(m) => add(m, s),
            None => {
                sites.insert(key(s), s.clone());
            }
        }
    }
    let mut merged = ChainReport {
        sites: sites.into_values().collect(),
    };
    sort(&mut merged.sites);
    let mut out = format!("fprev-chains-v1\t{run}\t{processes}\n");
    for s in &merged.sites {
        out.push_str(&record(s));
    }
    fs::write(&data, out)?;
    let txt = dir.join("chains.txt");
    fs::write(
        &txt,
        format!("merged from {processes} process(es) of one run\n{merged}"),
    )?;
    Ok((txt, processes))
}

/// The processes of one `cargo test` share their cargo process: the parent of the test
/// binaries, the grandparent of the doctests (run by rustdoc).
fn run_key() -> String {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        format!("parent-{}", cargo_ancestor(parent).unwrap_or(parent))
    }
    #[cfg(not(unix))]
    {
        "any".to_string()
    }
}

/// `pid` or its nearest ancestor named `cargo`, a few levels up, where `/proc` tells.
#[cfg(unix)]
fn cargo_ancestor(mut pid: u32) -> Option<u32> {
    for _ in 0..4 {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        if comm.trim_end() == "cargo" {
            return Some(pid);
        }
        pid = parent_in_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    }
    None
}

/// The parent pid in a `/proc/<pid>/stat` line, `pid (comm) state ppid ...`, where the
/// command name may itself hold spaces and parentheses.
#[cfg(unix)]
fn parent_in_stat(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

type Key = (String, String, u32, u32, String);

fn key(s: &SiteChains) -> Key {
    (
        s.source.function.to_string(),
        s.source.file.to_string(),
        s.source.line,
        s.source.column,
        s.source.expr.to_string(),
    )
}

fn add(m: &mut SiteChains, s: &SiteChains) {
    m.max_chain = m.max_chain.max(s.max_chain);
    m.adds += s.adds;
    m.chains += s.chains;
    m.executions += s.executions;
    m.evicted += s.evicted;
    for (a, b) in m.histogram.iter_mut().zip(&s.histogram) {
        *a += b;
    }
    // A running value is one everywhere; one process that saw an inexact term makes
    // the site reorderable.
    m.order = match (m.order, s.order) {
        (Order::RunningValue, _) | (_, Order::RunningValue) => Order::RunningValue,
        (Order::ExactInteger, Order::ExactInteger) => Order::ExactInteger,
        _ => Order::Reorderable,
    };
    m.shape = super::report::classify(m.adds, m.chains, m.executions, m.max_chain);
}

fn clean(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

fn record(s: &SiteChains) -> String {
    let hist: Vec<String> = s.histogram.iter().map(u64::to_string).collect();
    format!(
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
        clean(s.source.function),
        clean(s.source.file),
        s.source.line,
        s.source.column,
        clean(s.source.expr),
        s.source.kind,
        s.max_chain,
        s.adds,
        s.chains,
        s.executions,
        match s.order {
            Order::Reorderable => "reorderable",
            Order::ExactInteger => "exact",
            Order::RunningValue => "running",
        },
        hist.join(","),
        s.evicted
    )
}

/// A record written by [`record`]; the strings live until the process exits.
fn parse(line: &str) -> Option<SiteChains> {
    let f: Vec<&str> = line.split('\t').collect();
    // Records written before `evicted` was counted have one field less.
    let (f, evicted) = match f.as_slice() {
        [rest @ .., evicted] if rest.len() == 12 => (rest, evicted.parse().ok()?),
        rest => (rest, 0),
    };
    let [function, file, line, column, expr, kind, max, adds, chains, execs, order, hist] = f
    else {
        return None;
    };
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let mut histogram = [0u64; HISTOGRAM_BUCKETS];
    for (h, v) in histogram.iter_mut().zip(hist.split(',')) {
        *h = v.parse().ok()?;
    }
    let (max_chain, adds, chains, executions) = (
        max.parse().ok()?,
        adds.parse().ok()?,
        chains.parse().ok()?,
        execs.parse().ok()?,
    );
    Some(SiteChains {
        source: SiteSource {
            function: leak(function),
            file: leak(file),
            line: line.parse().ok()?,
            column: column.parse().ok()?,
            expr: leak(expr),
            kind: match *kind {
                "variable" => AccumulationKind::Variable,
                "place" => AccumulationKind::Place,
                "iterator" => AccumulationKind::Iterator,
                _ => return None,
            },
        },
        max_chain,
        adds,
        chains,
        executions,
        histogram,
        evicted,
        shape: ChainShape::Short,
        order: match *order {
            "exact" => Order::ExactInteger,
            "running" => Order::RunningValue,
            _ => Order::Reorderable,
        },
    })
    .map(|mut s| {
        s.shape = super::report::classify(s.adds, s.chains, s.executions, s.max_chain);
        s
    })
}

/// A lock file, removed when dropped. One left by a process that died is taken over
/// after 10 seconds.
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> std::io::Result<Lock> {
        let start = Instant::now();
        loop {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(Lock(path.to_path_buf()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(10));
                    if stale || start.elapsed() > Duration::from_secs(20) {
                        let _ = fs::remove_file(path);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_merge_into_one_report() {
        let dir = std::env::temp_dir().join(format!("fprev-merge-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let site = |adds, order| SiteChains {
            source: SiteSource {
                function: "k::dot",
                file: "src/lib.rs",
                line: 3,
                column: 9,
                expr: "s += a[i] * b[i]",
                kind: AccumulationKind::Variable,
            },
            max_chain: adds,
            adds,
            chains: 1,
            executions: 1,
            histogram: [0; HISTOGRAM_BUCKETS],
            evicted: 0,
            shape: ChainShape::Sequential,
            order,
        };
        let one = ChainReport {
            sites: vec![site(100, Order::ExactInteger)],
        };
        let two = ChainReport {
            sites: vec![site(300, Order::Reorderable)],
        };
        merge_into(&dir, &one).unwrap();
        let (txt, n) = merge_into(&dir, &two).unwrap();
        assert_eq!(n, 2);
        let text = fs::read_to_string(txt).unwrap();
        assert!(text.starts_with("merged from 2 process(es)"), "{text}");
        let data = fs::read_to_string(dir.join("chains.tsv")).unwrap();
        let merged = parse(data.lines().nth(1).unwrap()).unwrap();
        assert_eq!(
            (
                merged.adds,
                merged.max_chain,
                merged.executions,
                merged.order
            ),
            (400, 300, 2, Order::Reorderable)
        );
        assert!(!dir.join("chains.lock").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_run_is_its_cargo_process() {
        assert_eq!(parent_in_stat("4242 (rustdoc) S 4100 4242 ..."), Some(4100));
        assert_eq!(parent_in_stat("17 (a (b) c) R 9 17 ..."), Some(9));
        assert_eq!(parent_in_stat("garbage"), None);
        // Under `cargo test` (cargo sets `CARGO` for the tests it runs) on Linux, this
        // binary's parent is cargo; a doctest's grandparent is.
        let parent = std::os::unix::process::parent_id();
        if std::env::var_os("CARGO").is_some() && Path::new("/proc/self/stat").exists() {
            assert_eq!(cargo_ancestor(parent), Some(parent));
            assert_eq!(cargo_ancestor(std::process::id()), Some(parent));
        }
        assert_eq!(
            run_key(),
            format!("parent-{}", cargo_ancestor(parent).unwrap_or(parent))
        );
    }
}
