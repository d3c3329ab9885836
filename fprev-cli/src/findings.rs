//! Findings: the one report every fprev campaign writes, reads and merges. `cargo fprev
//! test` writes it (`findings.json`), `cargo fprev merge` and `fprev campaign merge` (the
//! same code) join such reports and the process reports of `assert_reproducible!`
//! campaigns (`FPREV_REPORT`) into one (`findings_merge.rs`), and one set of renderers
//! (`findings_render.rs`) prints it as a console table, Markdown and JUnit XML. Schema
//! `fprev-findings`, version 1, written down as a JSON Schema in
//! `docs/findings.schema.json`, field by field in `docs/cargo-fprev.md`.

use serde_json::{json, Map, Value};

use crate::reports::{Reader, SchemaError};
use crate::{reports, stage_stats};

/// The report's schema name and version. A field that changes meaning or goes away bumps
/// the version; new fields do not.
pub const SCHEMA: &str = "fprev-findings";
pub const VERSION: u64 = 1;

/// A scramble site, as `FPREV_SITES_OUT` lists it and findings name it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScrambleSite {
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
    pub(crate) fn as_str(self) -> &'static str {
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
    pub sites: Vec<ScrambleSite>,
    /// The smallest set of them whose scrambling alone fails the test (`--blame`).
    pub blame: Option<Vec<ScrambleSite>>,
    pub status: Status,
    /// How many runs (or merged reports) found it.
    pub seen: u64,
}

impl Finding {
    /// What identifies a finding across reports: the same test failing with the same
    /// token under the same mode is one finding, however often it was seen.
    pub(crate) fn key(&self) -> (String, String, String, String) {
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

fn sites_json(sites: &[ScrambleSite]) -> Value {
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
    pub(crate) fn campaigns(&self) -> Result<Option<Value>, String> {
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
        let version = r.u64(obj, "", "version").map_err(|e| e.to_string())?;
        if version != VERSION {
            return Err(format!(
                "{place}: version {version} of {SCHEMA}: this fprev reads version {VERSION}"
            ));
        }
        read_summary(&r, obj).map_err(|e| e.to_string())
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

/// The fields of a findings report (its schema and version checked by the caller).
fn read_summary(r: &Reader, obj: &Map<String, Value>) -> Result<Summary, SchemaError> {
    let mut s = Summary {
        ids: r.strings(obj, "", "ids")?,
        finished: r.string(obj, "", "finished")?,
        runs: r.u64(obj, "", "runs")?,
        tests: r.u64(obj, "", "tests")?,
        functions_annotated: r.u64(obj, "", "functions_annotated")?,
        modes: r.strings(obj, "", "modes")?,
        unscrambled_failures: r.strings(obj, "", "unscrambled_failures")?,
        not_reproduced: r.strings(obj, "", "not_reproduced")?,
        wall_s: seconds(r, obj, "wall_s")?,
        build_s: seconds(r, obj, "build_s")?,
        unscrambled_s: seconds(r, obj, "unscrambled_s")?,
        scrambled_s: seconds(r, obj, "scrambled_s")?,
        interrupted: r.bool(obj, "", "interrupted")?,
        ..Summary::default()
    };
    for (i, f) in r.array(obj, "", "findings")?.iter().enumerate() {
        s.findings.push(finding(r, f, &format!("findings[{i}]"))?);
    }
    for (i, f) in r.array(obj, "", "fixed")?.iter().enumerate() {
        s.fixed.push(finding(r, f, &format!("fixed[{i}]"))?);
    }
    for (i, x) in r.array(obj, "", "seed_ranges")?.iter().enumerate() {
        let at = format!("seed_ranges[{i}]");
        let o = r.object(x, &at)?;
        let shard_at = format!("{at}.shard");
        let shard = r.object(r.get(o, &at, "shard")?, &shard_at)?;
        let (index, count) = (
            r.u64(shard, &shard_at, "index")?,
            r.u64(shard, &shard_at, "count")?,
        );
        let (Ok(index), Ok(count)) = (u32::try_from(index), u32::try_from(count)) else {
            return Err(r.err(&shard_at, "not a shard"));
        };
        if index == 0 || index > count {
            return Err(r.err(&shard_at, format!("shard {index}/{count} does not exist")));
        }
        s.seed_ranges.push(SeedRange {
            base: r.u64(o, &at, "base")?,
            shard: (index, count),
            count: r.u64(o, &at, "count")?,
        });
    }
    for (i, c) in r.array(obj, "", "coverage")?.iter().enumerate() {
        let at = format!("coverage[{i}]");
        let o = r.object(c, &at)?;
        s.coverage
            .push((r.string(o, &at, "target")?, r.string(o, &at, "coverage")?));
    }
    for (i, p) in r.array(obj, "", "processes")?.iter().enumerate() {
        reports::parse(&format!("{}: processes[{i}]", r.place), &p.to_string())?;
        s.processes.push(p.clone());
    }
    Ok(s)
}

/// Seconds in a findings report: a number at least 0, or `"inf"`/`"NaN"` (kept by merges).
fn seconds(r: &Reader, o: &Map<String, Value>, key: &str) -> Result<f64, SchemaError> {
    match r.get(o, "", key)? {
        Value::Number(n) => n
            .as_f64()
            .filter(|x| *x >= 0.0)
            .ok_or_else(|| r.err(key, "expected seconds, at least 0")),
        Value::String(s) if s == "inf" => Ok(f64::INFINITY),
        Value::String(s) if s == "NaN" => Ok(f64::NAN),
        _ => Err(r.err(key, "expected seconds (a number, \"inf\" or \"NaN\")")),
    }
}

fn sites(r: &Reader, v: &Value, path: &str) -> Result<Vec<ScrambleSite>, SchemaError> {
    let list = v
        .as_array()
        .ok_or_else(|| r.err(path, "expected a list of sites"))?;
    let mut out = Vec::new();
    for (i, s) in list.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let o = r.object(s, &at)?;
        out.push(ScrambleSite {
            label: r.string(o, &at, "site")?,
            file: r.string(o, &at, "file")?,
            line: u32::try_from(r.u64(o, &at, "line")?)
                .map_err(|_| r.err(&format!("{at}.line"), "line out of range"))?,
        });
    }
    Ok(out)
}

fn finding(r: &Reader, v: &Value, path: &str) -> Result<Finding, SchemaError> {
    let o = r.object(v, path)?;
    let kind = r.string(o, path, "kind")?;
    if !["fail", "timeout", "differs"].contains(&kind.as_str()) {
        return Err(r.err(&format!("{path}.kind"), format!("unknown kind {kind:?}")));
    }
    let status = r.string(o, path, "status")?;
    let status = Status::parse(&status).ok_or_else(|| {
        r.err(
            &format!("{path}.status"),
            format!("unknown status {status:?}"),
        )
    })?;
    Ok(Finding {
        test: r.string(o, path, "test")?,
        package: r.string(o, path, "package")?,
        target: r.string(o, path, "target")?,
        kind,
        mode: r.string(o, path, "mode")?,
        token: r.string(o, path, "token")?,
        replay: r.opt_string(o, path, "replay")?,
        message: r.string(o, path, "message")?,
        at: r.opt_string(o, path, "at")?,
        coverage: r.opt_string(o, path, "coverage")?,
        sites: sites(r, r.get(o, path, "sites")?, &format!("{path}.sites"))?,
        blame: match r.get(o, path, "blame")? {
            Value::Null => None,
            b => Some(sites(r, b, &format!("{path}.blame"))?),
        },
        status,
        seen: r.u64(o, path, "seen")?,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn finding(test: &str, token: &str) -> Finding {
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
            sites: vec![ScrambleSite {
                label: "p::f#reduction0".into(),
                file: "src/lib.rs".into(),
                line: 3,
            }],
            blame: None,
            status: Status::New,
            seen: 1,
        }
    }

    pub(crate) fn report(
        id: &str,
        finished: &str,
        findings: Vec<Finding>,
        fixed: Vec<Finding>,
    ) -> Summary {
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
