//! The process's campaign report (`FPREV_REPORT=<path>`): every campaign of the process
//! is added as it ends, and the report is written once, when the process exits.
//!
//! The report is JSON Lines: one compact document per process, one line, so that the test
//! binaries of one `cargo test` (or the shards of a campaign on one machine) append to
//! the same file, under a lock file (`<path>.lock`, taken with an exclusive create, so it
//! works between processes and machines that share a filesystem). The schema is in
//! `docs/findings.schema.json` (`$defs/process_report`). Tables, Markdown and JUnit XML
//! are made from such reports by one renderer, `fprev campaign merge` (the same as `cargo
//! fprev merge`), not here.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::json::Json;
use super::report::{AmplifyReport, StageReport};
use super::Shard;
use crate::scramble::config::{vars, ALGORITHM_VERSION};
use crate::scramble::ReplayToken;

/// Version of the report schema; bump it when a field changes meaning or goes away.
pub(crate) const SCHEMA_VERSION: u64 = 1;

/// Findings listed per stage in a report.
const FINDINGS_PER_STAGE: usize = 100;

/// What `assert_reproducible!` adds to a campaign's entry.
pub(crate) struct CallInfo {
    /// `file:line` of the macro call.
    pub(crate) location: String,
    /// Persisted findings of the test, when persisting is on.
    pub(crate) regressions: Option<Regressions>,
}

/// The persisted findings of one test.
#[derive(Default)]
pub(crate) struct Regressions {
    pub(crate) file: PathBuf,
    pub(crate) replayed: Vec<ReplayToken>,
    pub(crate) still_reproduce: Vec<ReplayToken>,
    pub(crate) added: Vec<ReplayToken>,
}

struct Sink {
    path: PathBuf,
}

struct Entry {
    json: String,
}

static ENTRIES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn sink() -> Option<&'static Sink> {
    static SINK: OnceLock<Option<Sink>> = OnceLock::new();
    SINK.get_or_init(|| {
        let path = std::env::var_os(vars::FPREV_REPORT).filter(|p| !p.is_empty())?;
        if let Ok(f) = std::env::var(vars::FPREV_REPORT_FORMAT) {
            if !matches!(f.trim().to_ascii_lowercase().as_str(), "json" | "") {
                // past libtest's capture, like every ignored setting's warning
                let _ = writeln!(
                    io::stderr(),
                    "fprev: warning: ignoring {}={f:?}: the report is JSON Lines; for JUnit \
                     XML or Markdown, merge it: `fprev campaign merge {} --junit FILE` (or \
                     `cargo fprev merge`)",
                    vars::FPREV_REPORT_FORMAT,
                    PathBuf::from(&path).display()
                );
            }
        }
        Some(Sink {
            path: PathBuf::from(path),
        })
    })
    .as_ref()
}

/// Adds a finished campaign to the process report (when `FPREV_REPORT` is set).
pub(crate) fn record(report: &AmplifyReport, call: Option<&CallInfo>) {
    if sink().is_none() {
        return;
    }
    static AT_EXIT: Once = Once::new();
    AT_EXIT.call_once(|| crate::at_exit::register(write_at_exit));
    let entry = Entry {
        json: test_json(report, call),
    };
    ENTRIES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(entry);
}

fn shard_json(j: &mut Json, s: Shard) {
    j.begin_object();
    j.key("index").u64(u64::from(s.index()));
    j.key("count").u64(u64::from(s.count()));
    j.end_object();
}

fn opt_secs(j: &mut Json, d: Option<Duration>) {
    match d {
        Some(d) => j.f64(d.as_secs_f64()),
        None => j.null(),
    };
}

fn tokens(j: &mut Json, t: &[ReplayToken]) {
    j.begin_array();
    for t in t {
        j.str(&t.to_string());
    }
    j.end_array();
}

/// One stage of a campaign as a JSON object (the `stages` entries of the schema).
fn stage_json(j: &mut Json, r: &AmplifyReport, s: &StageReport) {
    j.begin_object();
    j.key("stage").str(s.stage.name());
    j.key("number").u64(s.stage.number());
    j.key("label").str(s.stage.label());
    j.key("runs").u64(s.run_count);
    j.key("distinct").u64(s.distinct as u64);
    j.key("differing").u64(s.differing_count);
    j.key("max_abs").f64(s.max_abs);
    j.key("max_rel").f64(s.max_rel);
    j.key("norm2").f64(s.norm2);
    j.key("max_ulps").u64(s.max_ulps);
    j.key("max_elements").u64(s.max_elements as u64);
    j.key("sites_reached").u64(s.sites_reached);
    j.key("duration_s").f64(s.duration.as_secs_f64());
    j.key("ended_by").str(s.ended_by.name());
    j.key("run_numbers").begin_object();
    j.key("first").u64(u64::from(r.shard.index() - 1));
    j.key("step").u64(u64::from(r.shard.count()));
    j.end_object();
    j.key("tokens");
    tokens(j, &s.runs.iter().map(|x| x.token).collect::<Vec<_>>());
    let mut hashes: Vec<u64> = s.runs.iter().map(|x| x.hash).collect();
    hashes.sort_unstable();
    hashes.dedup();
    j.key("result_hashes").begin_array();
    for h in hashes {
        j.str(&format!("{h:016x}"));
    }
    j.end_array();
    j.key("orders").begin_array();
    for (site, v) in &s.orders.sites {
        let distinct = v.iter().collect::<std::collections::BTreeSet<_>>().len();
        j.begin_object();
        j.key("site").str(site);
        j.key("invocations").u64(v.len() as u64);
        j.key("distinct").u64(distinct as u64);
        j.end_object();
    }
    j.end_array();
    j.key("findings").begin_array();
    for run in s.differing().take(FINDINGS_PER_STAGE) {
        j.begin_object();
        j.key("token").str(&run.token.to_string());
        match run.first_difference {
            Some((k, got, want)) => {
                j.key("element").u64(k as u64);
                j.key("value").f64(got);
                j.key("reference").f64(want);
            }
            None => {
                j.key("element").null();
                j.key("value").null();
                j.key("reference").null();
            }
        }
        j.key("floats").u64(run.len as u64);
        j.key("replay").str(&r.replay_command(run.token));
        j.end_object();
    }
    j.end_array();
    j.end_object();
}

/// One campaign as a JSON object (the `tests` entries of the schema).
fn test_json(r: &AmplifyReport, call: Option<&CallInfo>) -> String {
    let mut j = Json::new();
    j.begin_object();
    j.key("name").str(&r.name);
    j.key("location");
    match call {
        Some(c) => j.str(&c.location),
        None => j.null(),
    };
    j.key("campaign").str(&r.campaign.to_string());
    j.key("replay").bool(r.replay);
    j.key("shard");
    shard_json(&mut j, r.shard);
    j.key("reproducible").bool(r.is_reproducible());
    j.key("reached_a_site").bool(r.reached_a_site());
    j.key("floats").u64(r.len as u64);
    j.key("duration_s").f64(r.duration.as_secs_f64());
    j.key("time_budget_s");
    opt_secs(&mut j, r.time);
    j.key("max_threads").u64(r.max_threads as u64);
    j.key("stages").begin_array();
    for s in &r.stages {
        stage_json(&mut j, r, s);
    }
    j.end_array();
    j.key("regressions");
    match call.and_then(|c| c.regressions.as_ref()) {
        Some(reg) => {
            j.begin_object();
            j.key("file").str(&reg.file.display().to_string());
            j.key("replayed");
            tokens(&mut j, &reg.replayed);
            j.key("still_reproduce");
            tokens(&mut j, &reg.still_reproduce);
            j.key("added");
            tokens(&mut j, &reg.added);
            j.end_object();
        }
        None => {
            j.null();
        }
    }
    j.end_object();
    j.finish()
}

/// The accumulation-chain report of this process as a JSON array (the `chains` entry
/// of the schema).
fn chains_json(j: &mut Json) {
    j.begin_array();
    for c in &crate::chains::report().sites {
        j.begin_object();
        j.key("function").str(c.source.function);
        j.key("file").str(c.source.file);
        j.key("line").u64(u64::from(c.source.line));
        j.key("expr").str(c.source.expr);
        j.key("max_chain").u64(c.max_chain);
        j.key("adds").u64(c.adds);
        j.key("executions").u64(c.executions);
        j.key("shape").str(&c.shape.to_string());
        j.key("order").str(match c.order {
            crate::chains::Order::ExactInteger => "exact integer",
            crate::chains::Order::RunningValue => "running value",
            _ => "reorderable",
        });
        j.end_object();
    }
    j.end_array();
}

/// The whole process's report as one JSON line.
fn process_json(entries: &[Entry]) -> String {
    let mut j = Json::new();
    j.begin_object();
    j.key("schema").str("fprev-campaign-report");
    j.key("version").u64(SCHEMA_VERSION);
    j.key("fprev").str(env!("CARGO_PKG_VERSION"));
    j.key("algorithm").u64(u64::from(ALGORITHM_VERSION));
    j.key("binary").str(&binary_name());
    j.key("pid").u64(u64::from(std::process::id()));
    j.key("finished").str(&utc_now());
    j.key("seed");
    // Silent here: a bad value is reported where the settings are read (the report says none).
    match crate::scramble::config::seed_var().and_then(|(_, token)| token.ok()) {
        Some(t) => j.str(&t.to_string()),
        None => j.null(),
    };
    j.key("shard");
    match std::env::var(vars::FPREV_SHARD)
        .ok()
        .and_then(|s| s.parse::<Shard>().ok())
    {
        Some(s) => shard_json(&mut j, s),
        None => {
            j.null();
        }
    }
    j.key("time_budget_s");
    opt_secs(
        &mut j,
        std::env::var(vars::FPREV_TIME)
            .ok()
            .and_then(|s| super::parse_duration(&s).ok()),
    );
    j.key("tests").begin_array();
    j.end_array();
    let mut out = j.finish();
    // Splice the pre-rendered test objects into the empty array.
    out.truncate(out.len() - 1);
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&e.json);
    }
    out.push(']');
    let mut j = Json::new();
    j.begin_object();
    let cov = crate::scramble::Coverage::now();
    j.key("coverage").begin_object();
    j.key("compiled").u64(cov.compiled as u64);
    j.key("reached").u64(cov.reached as u64);
    j.key("left_alone").u64(cov.left_alone as u64);
    j.end_object();
    j.key("sites").begin_array();
    for s in crate::scramble::sites() {
        j.begin_object();
        j.key("kind");
        match s.kind {
            Some(k) => j.str(k.name()),
            None => j.null(),
        };
        j.key("label").str(s.label);
        j.key("file").str(s.file);
        j.key("line").u64(u64::from(s.line));
        j.key("reached").u64(s.reached);
        j.key("reason");
        match s.reason {
            Some(r) => j.str(r),
            None => j.null(),
        };
        j.end_object();
    }
    j.end_array();
    j.key("chains");
    chains_json(&mut j);
    j.end_object();
    // `{"coverage":...}` continues the outer object.
    let rest = j.finish();
    out.push(',');
    out.push_str(&rest[1..]);
    out
}

fn binary_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "<unknown>".to_string())
}

extern "C" fn write_at_exit() {
    let Some(sink) = sink() else { return };
    let entries = std::mem::take(&mut *ENTRIES.lock().unwrap_or_else(|e| e.into_inner()));
    if entries.is_empty() {
        return;
    }
    let mut line = process_json(&entries);
    line.push('\n');
    let result = append(&sink.path, &line);
    if let Err(e) = result {
        eprintln!(
            "fprev: cannot write the campaign report {}: {e}",
            sink.path.display()
        );
    }
}

fn append(path: &Path, text: &str) -> io::Result<()> {
    let _lock = FileLock::acquire(path)?;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_data()
}

/// Replaces `path` with `text`: written to a sibling file, then renamed over it.
pub(crate) fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_data()?;
    }
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// An exclusive lock on `path` held through `<path>.lock`, created with `create_new`
/// (atomic on local and network filesystems); a lock older than a minute is taken to be
/// left by a killed process and removed.
pub(crate) struct FileLock(PathBuf);

impl FileLock {
    pub(crate) fn acquire(path: &Path) -> io::Result<FileLock> {
        static IN_PROCESS: Mutex<()> = Mutex::new(());
        let _one_thread = IN_PROCESS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let mut lock = path.as_os_str().to_owned();
        lock.push(".lock");
        let lock = PathBuf::from(lock);
        let start = Instant::now();
        loop {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
            {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(FileLock(lock));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(&lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > Duration::from_secs(60));
                    if stale {
                        let _ = fs::remove_file(&lock);
                        continue;
                    }
                    if start.elapsed() > Duration::from_secs(120) {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("{} is held by another process", lock.display()),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

/// The current UTC time as campaign reports and persisted findings write it
/// (`finished`, `date=`): `YYYY-MM-DDTHH:MM:SSZ`, which sorts as the times do.
///
/// ```
/// let t = fprev_runtime::amplify::utc_now();
/// assert_eq!(t.len(), "2026-11-24T01:15:00Z".len());
/// assert!(t.ends_with('Z'));
/// ```
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc(secs)
}

fn utc(secs: u64) -> String {
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_795_483_500), "2026-11-24T01:25:00Z");
    }
}
