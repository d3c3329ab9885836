//! Findings: the one report every fprev campaign writes, reads and merges. `cargo fprev
//! test` writes it (`findings.json`), `cargo fprev merge` and `fprev campaign merge` (the
//! same code) join such reports and the process reports of `assert_reproducible!`
//! campaigns (`FPREV_REPORT`) into one, and one set of renderers prints it as a console
//! table, Markdown and JUnit XML. Schema `fprev-findings`, version 1, written down as a
//! JSON Schema in `docs/findings.schema.json`, field by field in `docs/cargo-fprev.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::escape::{cell, xml};
use crate::{reports, stage_stats};

/// The report's schema name and version. A field that changes meaning or goes away bumps
/// the version; new fields do not.
pub const SCHEMA: &str = "fprev-findings";
pub const VERSION: u64 = 1;

/// A scramble site, as `FPREV_SITES_OUT` lists it and findings name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// `module::function#kindN`.
    pub label: String,
    pub file: String,
    pub line: u32,
}

/// Where a finding stands against the report it was replayed from (`--previous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Found by this run.
    New,
    /// A finding of the previous report that fails again with its token.
    StillFailing,
    /// A finding of the previous report that now passes with its token.
    Fixed,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::StillFailing => "still_failing",
            Status::Fixed => "fixed",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        [Status::New, Status::StillFailing, Status::Fixed]
            .into_iter()
            .find(|st| st.as_str() == s)
    }
}

/// An order dependence that replays: a test that fails scrambled, passes unscrambled
/// and fails again alone with the same token (kind `fail` or `timeout`), or a run of an
/// `assert_reproducible!` campaign whose result differs from the unscrambled run (kind
/// `differs`).
#[derive(Clone, Debug)]
pub struct Finding {
    pub test: String,
    pub package: String,
    /// The test binary's target (`lib`'s name, or the integration test file's); for a
    /// campaign's finding, the binary that reported it.
    pub target: String,
    /// `fail`, `timeout` or `differs`.
    pub kind: String,
    /// The scrambling mode (`shapes`, `fisher-yates`, `sattolo`), or a campaign's stage.
    pub mode: String,
    pub token: String,
    /// The command that replays it; `None` when no command can run it alone (a target
    /// built with `harness = false` runs whole, without test names).
    pub replay: Option<String>,
    /// The panic message (or, for a timeout, how long it ran; for a campaign, the
    /// differing element).
    pub message: String,
    /// `file:line:column` of the panic, or the `assert_reproducible!` call.
    pub at: Option<String>,
    /// The coverage line of the failing run.
    pub coverage: Option<String>,
    /// The scramble sites the failing run reached.
    pub sites: Vec<Site>,
    /// The smallest set of them whose scrambling alone fails the test (`--blame`).
    pub blame: Option<Vec<Site>>,
    pub status: Status,
    /// How many runs (or merged reports) found it.
    pub seen: u64,
}

impl Finding {
    /// What identifies a finding across reports: the same test failing with the same
    /// token under the same mode is one finding, however often it was seen.
    fn key(&self) -> (String, String, String, String) {
        (
            self.test.clone(),
            self.kind.clone(),
            self.mode.clone(),
            self.token.clone(),
        )
    }
}

/// Seeds `base + shard.index + shard.count * j` for `j < count`: how a run's seeds are
/// written, so that a night of millions of seeds takes one line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeedRange {
    pub base: u64,
    /// `(index, count)`, 1-based.
    pub shard: (u32, u32),
    pub count: u64,
}

/// A findings report: one `cargo fprev test` run, or the merge of several reports and
/// process reports.
#[derive(Debug, Default)]
pub struct Summary {
    /// The runs this report holds (`cargo fprev test` runs, process reports): merging
    /// a report twice would count its runs twice, so a repeated id is refused.
    pub ids: Vec<String>,
    /// UTC time the (latest) run ended, `YYYY-MM-DDTHH:MM:SSZ`.
    pub finished: String,
    pub findings: Vec<Finding>,
    /// Findings of the previous report that passed when replayed.
    pub fixed: Vec<Finding>,
    pub unscrambled_failures: Vec<String>,
    /// Tests that failed scrambled but passed when re-run alone with the same token:
    /// flaky on their own (threads, time), not findings.
    pub not_reproduced: Vec<String>,
    pub runs: u64,
    pub seed_ranges: Vec<SeedRange>,
    pub modes: Vec<String>,
    pub functions_annotated: u64,
    /// Per test binary, the coverage line of its first scrambled run.
    pub coverage: Vec<(String, String)>,
    pub tests: u64,
    pub wall_s: f64,
    /// Stopped by Ctrl-C (SIGINT) or SIGTERM before the last run.
    pub interrupted: bool,
    /// Seconds spent building the copy's tests, in the unscrambled runs and in the
    /// scrambled runs (the rest of `wall_s` went to confirming and blaming failures).
    pub build_s: f64,
    pub unscrambled_s: f64,
    pub scrambled_s: f64,
    /// The `assert_reproducible!` process reports joined in (schema
    /// `fprev-campaign-report`), as written.
    pub processes: Vec<Value>,
}

/// An id for a new run: its time, process and a hash of what it ran.
#[allow(dead_code)] // `fprev` only merges: cargo-fprev's runs get ids
pub fn new_id(what: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    what.hash(&mut h);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    nanos.hash(&mut h);
    std::process::id().hash(&mut h);
    format!("run-{:016x}", h.finish())
}

fn sites_json(sites: &[Site]) -> Value {
    sites
        .iter()
        .map(|s| json!({"site": s.label, "file": s.file, "line": s.line}))
        .collect()
}

fn finding_json(f: &Finding) -> Value {
    json!({
        "test": f.test,
        "package": f.package,
        "target": f.target,
        "kind": f.kind,
        "mode": f.mode,
        "token": f.token,
        "replay": f.replay,
        "message": f.message,
        "at": f.at,
        "coverage": f.coverage,
        "sites": sites_json(&f.sites),
        "blame": f.blame.as_deref().map(sites_json),
        "status": f.status.as_str(),
        "seen": f.seen,
    })
}

/// A float as JSON: finite ones as numbers, the others as `"NaN"`, `"inf"`, `"-inf"`
/// (JSON has no such numbers; a merge keeps them).
fn seconds_json(x: f64) -> Value {
    reports::float_json(x)
}

impl Summary {
    /// The document, with the `campaigns` view derived from the process reports.
    pub fn to_value(&self) -> Value {
        let campaigns = self.campaigns().ok().flatten();
        json!({
            "schema": SCHEMA,
            "version": VERSION,
            "fprev": env!("CARGO_PKG_VERSION"),
            "ids": self.ids,
            "finished": self.finished,
            "findings": self.findings.iter().map(finding_json).collect::<Vec<_>>(),
            "fixed": self.fixed.iter().map(finding_json).collect::<Vec<_>>(),
            "unscrambled_failures": self.unscrambled_failures,
            "not_reproduced": self.not_reproduced,
            "runs": self.runs,
            "seed_ranges": self.seed_ranges.iter().map(|r| json!({
                "base": r.base,
                "shard": {"index": r.shard.0, "count": r.shard.1},
                "count": r.count,
            })).collect::<Vec<_>>(),
            "modes": self.modes,
            "functions_annotated": self.functions_annotated,
            "coverage": self
                .coverage
                .iter()
                .map(|(t, c)| json!({"target": t, "coverage": c}))
                .collect::<Vec<_>>(),
            "tests": self.tests,
            "wall_s": seconds_json(self.wall_s),
            "interrupted": self.interrupted,
            "build_s": seconds_json(self.build_s),
            "unscrambled_s": seconds_json(self.unscrambled_s),
            "scrambled_s": seconds_json(self.scrambled_s),
            "processes": self.processes,
            "campaigns": campaigns,
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.to_value()).unwrap_or_default() + "\n"
    }

    /// The campaign statistics of the process reports joined (`None` without any).
    fn campaigns(&self) -> Result<Option<Value>, String> {
        if self.processes.is_empty() {
            return Ok(None);
        }
        let mut all = Vec::new();
        for (i, p) in self.processes.iter().enumerate() {
            let place = format!("processes[{i}]");
            all.extend(reports::parse(&place, &p.to_string()).map_err(|e| e.to_string())?);
        }
        stage_stats::merge(&all).map(Some)
    }

    /// Reads a report back; `place` names it in errors.
    pub fn from_value(place: &str, v: &Value) -> Result<Summary, String> {
        let r = Reader { place };
        let obj = v
            .as_object()
            .ok_or_else(|| format!("{place}: not a JSON object"))?;
        match obj.get("schema").and_then(Value::as_str) {
            Some(SCHEMA) => {}
            Some(other) => {
                return Err(format!(
                    "{place}: schema {other:?} is not a findings report ({SCHEMA:?})"
                ))
            }
            None if obj.contains_key("findings") => {
                return Err(format!(
                    "{place}: a findings.json of an earlier cargo fprev (no `schema`): run it \
                     again to write schema {SCHEMA} version {VERSION}"
                ))
            }
            None => return Err(format!("{place}: no `schema`: not a findings report")),
        }
        let version = r.count(obj, "version")?;
        if version != VERSION {
            return Err(format!(
                "{place}: version {version} of {SCHEMA}: this fprev reads version {VERSION}"
            ));
        }
        let mut s = Summary {
            ids: r.strings(obj, "ids")?,
            finished: r.string(obj, "finished")?,
            runs: r.count(obj, "runs")?,
            tests: r.count(obj, "tests")?,
            functions_annotated: r.count(obj, "functions_annotated")?,
            modes: r.strings(obj, "modes")?,
            unscrambled_failures: r.strings(obj, "unscrambled_failures")?,
            not_reproduced: r.strings(obj, "not_reproduced")?,
            wall_s: r.seconds(obj, "wall_s")?,
            build_s: r.seconds(obj, "build_s")?,
            unscrambled_s: r.seconds(obj, "unscrambled_s")?,
            scrambled_s: r.seconds(obj, "scrambled_s")?,
            interrupted: r.flag(obj, "interrupted")?,
            ..Summary::default()
        };
        for (i, f) in r.array(obj, "findings")?.iter().enumerate() {
            s.findings.push(r.finding(f, &format!("findings[{i}]"))?);
        }
        for (i, f) in r.array(obj, "fixed")?.iter().enumerate() {
            s.fixed.push(r.finding(f, &format!("fixed[{i}]"))?);
        }
        for (i, x) in r.array(obj, "seed_ranges")?.iter().enumerate() {
            let field = format!("seed_ranges[{i}]");
            let o = r.object(x, &field)?;
            let shard = r.object(
                o.get("shard").unwrap_or(&Value::Null),
                &format!("{field}.shard"),
            )?;
            let index = r.count(shard, "index")?;
            let count = r.count(shard, "count")?;
            let (Ok(index), Ok(count)) = (u32::try_from(index), u32::try_from(count)) else {
                return Err(format!("{place}: field {field}.shard: not a shard"));
            };
            if index == 0 || index > count {
                return Err(format!(
                    "{place}: field {field}.shard: shard {index}/{count} does not exist"
                ));
            }
            s.seed_ranges.push(SeedRange {
                base: r.count(o, "base")?,
                shard: (index, count),
                count: r.count(o, "count")?,
            });
        }
        for (i, c) in r.array(obj, "coverage")?.iter().enumerate() {
            let o = r.object(c, &format!("coverage[{i}]"))?;
            s.coverage
                .push((r.string(o, "target")?, r.string(o, "coverage")?));
        }
        for (i, p) in r.array(obj, "processes")?.iter().enumerate() {
            reports::parse(&format!("{place}: processes[{i}]"), &p.to_string())
                .map_err(|e| e.to_string())?;
            s.processes.push(p.clone());
        }
        Ok(s)
    }

    /// The report of one process of an `assert_reproducible!` campaign (a line of an
    /// `FPREV_REPORT` file, already checked against its schema).
    pub fn of_process(raw: Value, report: &reports::Report) -> Summary {
        let runs = report
            .tests
            .iter()
            .flat_map(|t| &t.stages)
            .fold(0u64, |a, s| a.saturating_add(s.runs));
        Summary {
            ids: vec![format!(
                "process {} {} {}",
                report.binary,
                raw["pid"],
                raw["finished"].as_str().unwrap_or("")
            )],
            finished: raw["finished"].as_str().unwrap_or("").to_string(),
            runs,
            tests: report.tests.len() as u64,
            processes: vec![raw],
            ..Summary::default()
        }
    }
}

/// Reads the fields of one report, naming `place` and the field in errors.
struct Reader<'a> {
    place: &'a str,
}

impl Reader<'_> {
    fn err(&self, field: &str, problem: &str) -> String {
        format!("{}: field {field}: {problem}", self.place)
    }
    fn get<'v>(&self, o: &'v Map<String, Value>, field: &str) -> Result<&'v Value, String> {
        o.get(field).ok_or_else(|| self.err(field, "missing"))
    }
    fn object<'v>(&self, v: &'v Value, field: &str) -> Result<&'v Map<String, Value>, String> {
        v.as_object()
            .ok_or_else(|| self.err(field, "expected an object"))
    }
    fn array<'v>(&self, o: &'v Map<String, Value>, field: &str) -> Result<&'v Vec<Value>, String> {
        self.get(o, field)?
            .as_array()
            .ok_or_else(|| self.err(field, "expected a list"))
    }
    fn count(&self, o: &Map<String, Value>, field: &str) -> Result<u64, String> {
        self.get(o, field)?.as_u64().ok_or_else(|| {
            self.err(
                field,
                &format!("expected a whole number from 0 to {}", u64::MAX),
            )
        })
    }
    fn string(&self, o: &Map<String, Value>, field: &str) -> Result<String, String> {
        self.get(o, field)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.err(field, "expected a string"))
    }
    fn opt_string(&self, o: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
        match self.get(o, field)? {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(self.err(field, "expected a string or null")),
        }
    }
    fn strings(&self, o: &Map<String, Value>, field: &str) -> Result<Vec<String>, String> {
        self.array(o, field)?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.err(field, "expected a list of strings"))
            })
            .collect()
    }
    fn flag(&self, o: &Map<String, Value>, field: &str) -> Result<bool, String> {
        self.get(o, field)?
            .as_bool()
            .ok_or_else(|| self.err(field, "expected true or false"))
    }
    /// Seconds: a number at least 0, or `"inf"`/`"NaN"` (kept by merges).
    fn seconds(&self, o: &Map<String, Value>, field: &str) -> Result<f64, String> {
        match self.get(o, field)? {
            Value::Number(n) => n
                .as_f64()
                .filter(|x| *x >= 0.0)
                .ok_or_else(|| self.err(field, "expected seconds, at least 0")),
            Value::String(s) if s == "inf" => Ok(f64::INFINITY),
            Value::String(s) if s == "NaN" => Ok(f64::NAN),
            _ => Err(self.err(field, "expected seconds (a number, \"inf\" or \"NaN\")")),
        }
    }
    fn sites(&self, v: &Value, field: &str) -> Result<Vec<Site>, String> {
        let list = v
            .as_array()
            .ok_or_else(|| self.err(field, "expected a list of sites"))?;
        let mut out = Vec::new();
        for (i, s) in list.iter().enumerate() {
            let f = format!("{field}[{i}]");
            let o = self.object(s, &f)?;
            let line = self.count(o, "line")?;
            out.push(Site {
                label: self.string(o, "site")?,
                file: self.string(o, "file")?,
                line: u32::try_from(line).map_err(|_| self.err(&f, "line out of range"))?,
            });
        }
        Ok(out)
    }
    fn finding(&self, v: &Value, field: &str) -> Result<Finding, String> {
        let o = self.object(v, field)?;
        let sub = |name: &str| format!("{field}.{name}");
        let kind = self.string(o, "kind")?;
        if !["fail", "timeout", "differs"].contains(&kind.as_str()) {
            return Err(self.err(&sub("kind"), &format!("unknown kind {kind:?}")));
        }
        let status = self.string(o, "status")?;
        let status = Status::parse(&status)
            .ok_or_else(|| self.err(&sub("status"), &format!("unknown status {status:?}")))?;
        Ok(Finding {
            test: self.string(o, "test")?,
            package: self.string(o, "package")?,
            target: self.string(o, "target")?,
            kind,
            mode: self.string(o, "mode")?,
            token: self.string(o, "token")?,
            replay: self.opt_string(o, "replay")?,
            message: self.string(o, "message")?,
            at: self.opt_string(o, "at")?,
            coverage: self.opt_string(o, "coverage")?,
            sites: self.sites(self.get(o, "sites")?, &sub("sites"))?,
            blame: match self.get(o, "blame")? {
                Value::Null => None,
                b => Some(self.sites(b, &sub("blame"))?),
            },
            status,
            seen: self.count(o, "seen")?,
        })
    }
}

/// Joins reports: the result is the same for any order of `docs`. A run held by two of
/// them is refused (its runs would count twice); findings are united by test, kind, mode
/// and token, each with how often it was seen and the status of the latest report that
/// holds it; the differing runs of campaigns are derived again from the process reports.
pub fn merge(mut docs: Vec<Summary>) -> Result<Summary, String> {
    let mut owner: BTreeMap<String, usize> = BTreeMap::new();
    for (i, d) in docs.iter().enumerate() {
        for id in &d.ids {
            if let Some(j) = owner.insert(id.clone(), i) {
                return Err(format!(
                    "inputs {} and {} both hold the run {id}: merging it twice would count its \
                     runs twice",
                    j + 1,
                    i + 1
                ));
            }
        }
    }
    // the campaigns' statistics first: their errors name the process report and field
    if docs.iter().any(|d| !d.processes.is_empty()) {
        let mut all = Summary::default();
        for d in &docs {
            all.processes.extend(d.processes.iter().cloned());
        }
        all.campaigns()?;
    }
    // the latest report last: its status of a finding wins
    docs.sort_by(|a, b| (&a.finished, &a.ids).cmp(&(&b.finished, &b.ids)));
    let mut out = Summary::default();
    // key -> (finding, failing: true, fixed: false)
    let mut all: BTreeMap<(String, String, String, String), (Finding, bool)> = BTreeMap::new();
    for d in docs {
        out.ids.extend(d.ids);
        out.finished = out.finished.max(d.finished);
        for (f, failing) in d
            .findings
            .into_iter()
            .filter(|f| f.kind != "differs")
            .map(|f| (f, true))
            .chain(d.fixed.into_iter().map(|f| (f, false)))
        {
            match all.get_mut(&f.key()) {
                Some((kept, was)) => {
                    kept.seen = kept.seen.saturating_add(f.seen);
                    kept.status = f.status;
                    *was = failing;
                }
                None => {
                    all.insert(f.key(), (f, failing));
                }
            }
        }
        out.unscrambled_failures.extend(d.unscrambled_failures);
        out.not_reproduced.extend(d.not_reproduced);
        out.runs = out
            .runs
            .checked_add(d.runs)
            .ok_or("the runs of the inputs add up past 2^64 - 1")?;
        out.seed_ranges.extend(d.seed_ranges);
        out.modes.extend(d.modes);
        out.functions_annotated = out.functions_annotated.max(d.functions_annotated);
        out.coverage.extend(d.coverage);
        out.tests = out.tests.max(d.tests);
        out.wall_s += d.wall_s;
        out.build_s += d.build_s;
        out.unscrambled_s += d.unscrambled_s;
        out.scrambled_s += d.scrambled_s;
        out.interrupted |= d.interrupted;
        out.processes.extend(d.processes);
    }
    for (f, failing) in all.into_values() {
        if failing {
            out.findings.push(f);
        } else {
            out.fixed.push(f);
        }
    }
    for list in [
        &mut out.unscrambled_failures,
        &mut out.not_reproduced,
        &mut out.modes,
    ] {
        list.sort();
        list.dedup();
    }
    out.seed_ranges.sort();
    out.seed_ranges.dedup();
    out.coverage.sort();
    out.coverage.dedup();
    out.processes
        .sort_by_cached_key(|p| serde_json::to_string(p).unwrap_or_default());
    out.findings.extend(campaign_findings(&out)?);
    Ok(out)
}

/// The differing runs of the campaigns' process reports as findings (kind `differs`),
/// one per test, stage, element and value, with the smallest token that found it.
fn campaign_findings(s: &Summary) -> Result<Vec<Finding>, String> {
    let Some(view) = s.campaigns()? else {
        return Ok(Vec::new());
    };
    let empty = Vec::new();
    let binaries: Vec<&str> = view["binaries"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let binaries = binaries.join(",");
    let mut out = Vec::new();
    for t in view["tests"].as_array().unwrap_or(&empty) {
        let name = t["name"].as_str().unwrap_or("").to_string();
        let still: Vec<&str> = t["still_reproduce"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for f in t["findings"].as_array().unwrap_or(&empty) {
            let token = f["token"].as_str().unwrap_or("").to_string();
            out.push(Finding {
                test: name.clone(),
                package: String::new(),
                target: binaries.clone(),
                kind: "differs".into(),
                mode: f["stage"].as_str().unwrap_or("").to_string(),
                replay: f["replay"].as_str().map(str::to_string),
                message: format!(
                    "element {} = {} (reference {})",
                    f["element"], f["value"], f["reference"]
                ),
                at: t["locations"]
                    .as_array()
                    .and_then(|l| l.first())
                    .and_then(Value::as_str)
                    .map(str::to_string),
                coverage: None,
                sites: Vec::new(),
                blame: None,
                status: if still.contains(&token.as_str()) {
                    Status::StillFailing
                } else {
                    Status::New
                },
                seen: f["seen"].as_u64().unwrap_or(1),
                token,
            });
        }
    }
    Ok(out)
}

/// A file's device and inode: two paths name the same file when these are equal.
type FileId = (u64, u64);

/// Reads the inputs of a merge: findings reports, and `FPREV_REPORT` files of process
/// reports (JSON Lines). Each is read up to `max_bytes` (a device or an endless pipe is
/// an error after that many bytes) and checked against its schema; an input given twice
/// (the same file, the same content) and an output that names an input (it would be
/// overwritten) are refused.
pub fn read_inputs(
    inputs: &[PathBuf],
    outputs: &[(&str, &Path)],
    max_bytes: u64,
) -> Result<Vec<Summary>, String> {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    for (flag, out) in outputs {
        if let Some(input) = inputs
            .iter()
            .find(|i| *i == out || id(out).is_some_and(|o| id(i) == Some(o)))
        {
            return Err(format!(
                "{flag} {} names the input {}: it would be overwritten; write the merged result elsewhere",
                out.display(),
                input.display()
            ));
        }
    }
    if let [(a, pa), (b, pb)] = outputs {
        if pa == pb || id(pa).is_some_and(|x| id(pb) == Some(x)) {
            return Err(format!("{a} and {b} name the same file {}", pa.display()));
        }
    }
    let mut seen: Vec<(&Path, Option<FileId>, String)> = Vec::new();
    let mut lines: BTreeMap<String, String> = BTreeMap::new();
    let mut all = Vec::new();
    for path in inputs {
        let file_id = id(path);
        if let Some((earlier, _, _)) = seen
            .iter()
            .find(|(p, i, _)| *p == path || (file_id.is_some() && *i == file_id))
        {
            return Err(format!(
                "{} and {} are the same file: merging it twice would count its runs twice",
                earlier.display(),
                path.display()
            ));
        }
        let name = path.display().to_string();
        let text = crate::limits::read_capped_text(path, max_bytes, "--max-input-bytes")?;
        if let Some((earlier, _, _)) = seen.iter().find(|(_, _, t)| *t == text) {
            return Err(format!(
                "{} has the same content as {}: merging it twice would count its runs twice",
                path.display(),
                earlier.display()
            ));
        }
        all.extend(read_text(&name, &text, &mut lines)?);
        seen.push((path, file_id, text));
    }
    Ok(all)
}

/// One input's reports: a findings report (one JSON document), or process reports (one
/// per line). `lines` refuses a process report seen before in another file.
fn read_text(
    name: &str,
    text: &str,
    lines: &mut BTreeMap<String, String>,
) -> Result<Vec<Summary>, String> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        match v.get("schema").and_then(Value::as_str) {
            Some(reports::REPORT_SCHEMA) => {}
            Some(SCHEMA) => return Ok(vec![Summary::from_value(name, &v)?]),
            None if v.get("findings").is_some() => return Ok(vec![Summary::from_value(name, &v)?]),
            _ => {
                return Err(format!(
                    "{name}: neither a findings report nor a campaign process report (schema \
                     {SCHEMA:?} or {:?})",
                    reports::REPORT_SCHEMA
                ))
            }
        }
    }
    let reports = reports::parse(name, text).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (line, r) in text.lines().filter(|l| !l.trim().is_empty()).zip(&reports) {
        if let Some(first) = lines.insert(line.to_string(), r.place.clone()) {
            return Err(format!(
                "{}: the same process report as {first}: merging it twice would count its runs twice",
                r.place
            ));
        }
        let raw: Value = serde_json::from_str(line).map_err(|e| format!("{}: {e}", r.place))?;
        out.push(Summary::of_process(raw, r));
    }
    Ok(out)
}

/// Reads, merges and writes (`-o` JSON, `--junit` XML): `cargo fprev merge` and `fprev
/// campaign merge` are this.
pub fn merge_files(
    inputs: &[PathBuf],
    output: Option<&Path>,
    junit: Option<&Path>,
    max_input_bytes: u64,
) -> Result<Summary, String> {
    let mut outputs: Vec<(&str, &Path)> = Vec::new();
    if let Some(o) = output {
        outputs.push(("-o", o));
    }
    if let Some(j) = junit {
        outputs.push(("--junit", j));
    }
    let docs = read_inputs(inputs, &outputs, max_input_bytes)?;
    let merged = merge(docs)?;
    if let Some(out) = output {
        std::fs::write(out, merged.to_json()).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    if let Some(out) = junit {
        std::fs::write(out, merged.to_junit()).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(merged)
}

/// A site as the table shows it.
fn site_text(s: &Site) -> String {
    format!("{}:{} {}", s.file, s.line, s.label)
}

/// The seeds of the report, in words.
fn seeds_text(s: &Summary) -> String {
    let n: u64 = s.seed_ranges.iter().map(|r| r.count).sum();
    let shards: std::collections::BTreeSet<(u32, u32)> = s
        .seed_ranges
        .iter()
        .filter(|r| r.shard.1 > 1)
        .map(|r| r.shard)
        .collect();
    let shards: Vec<String> = shards.iter().map(|(k, n)| format!("{k}/{n}")).collect();
    match shards.len() {
        0 => format!("{n} seeds"),
        1 => format!("{n} seeds (shard {})", shards[0]),
        _ => format!("{n} seeds (shards {})", shards.join(",")),
    }
}

impl Summary {
    /// What ran, for the first line of a table: tests, seeds, modes and time, when
    /// `cargo fprev test` ran them (a merge of campaign reports has none of these).
    fn run_details(&self, markdown: bool) -> String {
        if self.seed_ranges.is_empty() && self.modes.is_empty() {
            return String::new();
        }
        let annotated = if markdown {
            format!(", {} functions annotated", self.functions_annotated)
        } else {
            String::new()
        };
        format!(
            " of {} tests, {} x {} mode(s){annotated}, {:.0} s",
            self.tests,
            seeds_text(self),
            self.modes.len(),
            self.wall_s
        )
    }

    /// The console table: one block per finding (a long test name takes its own line),
    /// with its blame, then what is not a finding, then the campaigns' statistics.
    pub fn to_console(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "fprev: {} finding(s){}; {} runs{}",
            self.findings.len(),
            if self.fixed.is_empty() {
                String::new()
            } else {
                format!(", {} fixed", self.fixed.len())
            },
            self.runs,
            self.run_details(false)
        );
        const NAME: usize = 44;
        if !self.findings.is_empty() {
            let _ = writeln!(
                s,
                "{:<NAME$} {:<7} {:<12} {:<13} {:<19} first assertion",
                "test", "kind", "mode", "status", "token"
            );
        }
        for f in &self.findings {
            let name = cell(&f.test, false);
            if name.chars().count() > NAME {
                let _ = writeln!(s, "{name}");
                let _ = write!(s, "{:<NAME$} ", "");
            } else {
                let _ = write!(s, "{name:<NAME$} ");
            }
            let _ = writeln!(
                s,
                "{:<7} {:<12} {:<13} {:<19} {}",
                f.kind,
                cell(&f.mode, false),
                f.status.as_str(),
                cell(&f.token, false),
                cell(f.at.as_deref().unwrap_or("-"), false)
            );
            if let Some(blame) = &f.blame {
                for site in blame {
                    let _ = writeln!(s, "    blame: {}", cell(&site_text(site), false));
                }
            }
            if f.replay.is_none() {
                let _ = writeln!(
                    s,
                    "    not replayable by name: {} is built with harness = false (it runs whole)",
                    cell(&f.target, false)
                );
            }
        }
        if let Some(f) = self.findings.iter().find(|f| f.replay.is_some()) {
            let _ = writeln!(s, "replay one: {}", f.replay.as_deref().unwrap_or(""));
        }
        for f in &self.fixed {
            let _ = writeln!(
                s,
                "fixed: {} ({} {}) passes now",
                cell(&f.test, false),
                cell(&f.mode, false),
                cell(&f.token, false)
            );
        }
        if !self.unscrambled_failures.is_empty() {
            let _ = writeln!(
                s,
                "failing unscrambled (not findings): {}",
                cell(&self.unscrambled_failures.join(", "), false)
            );
        }
        if !self.not_reproduced.is_empty() {
            let _ = writeln!(
                s,
                "failed scrambled, passed alone with the same token (not findings): {}",
                cell(&self.not_reproduced.join(", "), false)
            );
        }
        if let Ok(Some(view)) = self.campaigns() {
            s.push('\n');
            s.push_str(&stage_stats::table(&view, false));
        }
        s
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# fprev findings\n\n{} finding(s), {} fixed, in {} runs{}.\n",
            self.findings.len(),
            self.fixed.len(),
            self.runs,
            self.run_details(true)
        );
        if !self.findings.is_empty() || !self.fixed.is_empty() {
            s.push_str(
                "| test | kind | mode | status | token | first assertion | blame | replay |\n",
            );
            s.push_str("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
            for f in self.findings.iter().chain(&self.fixed) {
                let blame = f.blame.as_deref().map_or("-".to_string(), |b| {
                    b.iter().map(site_text).collect::<Vec<_>>().join("; ")
                });
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | `{}` | {} | {} | {} |",
                    cell(&f.test, true),
                    f.kind,
                    cell(&f.mode, true),
                    f.status.as_str(),
                    cell(&f.token, true),
                    cell(f.at.as_deref().unwrap_or("-"), true),
                    cell(&blame, true),
                    f.replay.as_deref().map_or_else(
                        || "not replayable by name (harness = false)".to_string(),
                        |r| format!("`{}`", cell(r, true))
                    )
                );
            }
        }
        if !self.unscrambled_failures.is_empty() {
            let _ = writeln!(
                s,
                "\nFailing unscrambled (not findings): {}",
                cell(&self.unscrambled_failures.join(", "), true)
            );
        }
        if !self.not_reproduced.is_empty() {
            let _ = writeln!(
                s,
                "\nFailed scrambled but passed alone with the same token (not findings): {}",
                cell(&self.not_reproduced.join(", "), true)
            );
        }
        if let Ok(Some(view)) = self.campaigns() {
            s.push_str("\n## Campaigns\n\n");
            s.push_str(&stage_stats::table(&view, true));
        }
        s
    }

    /// The report as JUnit XML: a failing test case per finding, a passing one per fixed
    /// finding, and the campaigns' test cases.
    pub fn to_junit(&self) -> String {
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
        let _ = writeln!(
            s,
            "  <testsuite name=\"fprev findings\" tests=\"{}\" failures=\"{}\">",
            self.findings.len() + self.fixed.len(),
            self.findings.len()
        );
        for f in self.findings.iter().chain(&self.fixed) {
            let _ = write!(
                s,
                "    <testcase classname=\"{}\" name=\"{} [{} {}]\"",
                xml(
                    if f.package.is_empty() {
                        &f.target
                    } else {
                        &f.package
                    },
                    true
                ),
                xml(&f.test, true),
                xml(&f.mode, true),
                xml(&f.token, true),
            );
            if f.status == Status::Fixed {
                s.push_str("/>\n");
                continue;
            }
            let mut text = f.message.clone();
            if let Some(blame) = &f.blame {
                for site in blame {
                    let _ = write!(text, "\nblame: {}", site_text(site));
                }
            }
            let _ = write!(
                text,
                "\nreplay: {}",
                f.replay
                    .as_deref()
                    .unwrap_or("not replayable by name (harness = false)")
            );
            let _ = writeln!(
                s,
                ">\n      <failure message=\"{} ({})\">{}</failure>\n    </testcase>",
                xml(&f.kind, true),
                f.status.as_str(),
                xml(&text, false)
            );
        }
        s.push_str("  </testsuite>\n");
        if let Ok(Some(view)) = self.campaigns() {
            s.push_str(&stage_stats::junit_suite(&view));
        }
        s.push_str("</testsuites>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(test: &str, token: &str) -> Finding {
        Finding {
            test: test.into(),
            package: "p".into(),
            target: "p".into(),
            kind: "fail".into(),
            mode: "shapes".into(),
            token: token.into(),
            replay: Some(format!(
                "cargo fprev replay -p p --mode shapes {token} {test}"
            )),
            message: "a <b> & \u{0}".into(),
            at: Some("src/lib.rs:3:5".into()),
            coverage: None,
            sites: vec![Site {
                label: "p::f#reduction0".into(),
                file: "src/lib.rs".into(),
                line: 3,
            }],
            blame: None,
            status: Status::New,
            seen: 1,
        }
    }

    fn report(id: &str, finished: &str, findings: Vec<Finding>, fixed: Vec<Finding>) -> Summary {
        Summary {
            ids: vec![id.into()],
            finished: finished.into(),
            findings,
            fixed,
            runs: 3,
            seed_ranges: vec![SeedRange {
                base: 0,
                shard: (1, 1),
                count: 3,
            }],
            modes: vec!["shapes".into()],
            ..Summary::default()
        }
    }

    #[test]
    fn reports_escape_what_their_formats_cannot_carry() {
        let s = report(
            "a",
            "2026-01-01T00:00:00Z",
            vec![finding("odd|name\nx", "v3-1")],
            vec![],
        );
        let md = s.to_markdown();
        assert!(md.contains("odd\\|name<br>x"), "{md}");
        let junit = s.to_junit();
        assert!(junit.contains("a &lt;b&gt; &amp; \\x00"), "{junit}");
        assert!(!junit.contains('\u{0}'));
        let json: Value = serde_json::from_str(&s.to_json()).expect("json");
        assert_eq!(json["findings"][0]["test"], "odd|name\nx");
        assert_eq!(json["findings"][0]["kind"], "fail");
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let mut f = finding("t", "v3-0000000000000001");
        f.blame = Some(f.sites.clone());
        let s = report(
            "a",
            "2026-01-01T00:00:00Z",
            vec![f],
            vec![finding("u", "v3-2")],
        );
        let back = Summary::from_value("r", &s.to_value()).expect("reads back");
        assert_eq!(back.to_value(), s.to_value());
    }

    #[test]
    fn merge_refuses_a_run_twice_and_keeps_the_latest_status() {
        let night1 = report(
            "n1",
            "2026-01-01T00:00:00Z",
            vec![finding("t", "v3-1")],
            vec![],
        );
        let again = report("n1", "2026-01-01T00:00:00Z", vec![], vec![]);
        let e = merge(vec![night1, again]).expect_err("a run twice");
        assert!(e.contains("both hold the run n1"), "{e}");
        // night 2 replayed night 1's finding and it passed: fixed, whatever the order
        let mut fixed = finding("t", "v3-1");
        fixed.status = Status::Fixed;
        for order in [false, true] {
            let mut docs = vec![
                report(
                    "n1",
                    "2026-01-01T00:00:00Z",
                    vec![finding("t", "v3-1")],
                    vec![],
                ),
                report("n2", "2026-01-02T00:00:00Z", vec![], vec![fixed.clone()]),
            ];
            if order {
                docs.reverse();
            }
            let m = merge(docs).expect("merges");
            assert!(m.findings.is_empty());
            assert_eq!(m.fixed.len(), 1);
            assert_eq!(m.fixed[0].seen, 2);
            assert_eq!(m.runs, 6);
        }
    }

    #[test]
    fn non_finite_seconds_survive_a_merge() {
        let mut a = report("a", "2026-01-01T00:00:00Z", vec![], vec![]);
        a.wall_s = f64::INFINITY;
        let b = report("b", "2026-01-01T00:00:00Z", vec![], vec![]);
        let m = merge(vec![a, b]).expect("merges");
        let v = m.to_value();
        assert_eq!(v["wall_s"], "inf");
        let back = Summary::from_value("m", &v).expect("reads back");
        assert!(back.wall_s.is_infinite());
    }

    #[test]
    fn the_console_table_gives_long_names_their_own_line_and_prints_the_blame() {
        let long = "a_module::with_a_long_name::tests::a_test_whose_name_is_longer_than_the_column";
        let mut f = finding(long, "v3-0000000000000001");
        f.blame = Some(f.sites.clone());
        let s = report("a", "2026-01-01T00:00:00Z", vec![f], vec![]);
        let text = s.to_console();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], long, "{text}");
        assert!(lines[3].trim_start().starts_with("fail"), "{text}");
        assert_eq!(
            lines[4], "    blame: src/lib.rs:3 p::f#reduction0",
            "{text}"
        );
    }
}
