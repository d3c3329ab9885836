//! Joining findings reports: `cargo fprev merge` and `fprev campaign merge` (the same
//! code) read findings reports of shards or nights and the process reports of
//! `assert_reproducible!` campaigns (`FPREV_REPORT`), refuse what would count twice,
//! and write one findings report whatever the inputs' order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::findings::{Finding, Status, Summary, SCHEMA};
use crate::reports;

/// Joins reports: the result is the same for any order of `docs`. A run held by two of
/// them is refused (its runs would count twice); findings are united by test, kind, mode
/// and token, each with how often it was seen and the status of the latest report that
/// holds it; the differing runs of campaigns are derived again from the process reports.
pub fn merge(mut docs: Vec<Summary>) -> Result<Summary, String> {
    no_run_twice(&docs)?;
    // the campaigns' statistics first, once: their errors name the process report and
    // field (a sum of runs past 2^64 - 1, say), before the totals below would fail vaguely
    let view = {
        let mut all = Summary::default();
        for d in &docs {
            all.processes.extend(d.processes.iter().cloned());
        }
        all.campaigns()?
    };
    // the latest report last: its status of a finding wins
    docs.sort_by(|a, b| (&a.finished, &a.ids).cmp(&(&b.finished, &b.ids)));
    let mut out = Summary::default();
    let mut all = UnitedFindings::new();
    for d in docs {
        out.ids.extend(d.ids);
        out.finished = out.finished.max(d.finished.clone());
        unite(&mut all, d.findings, d.fixed, &d.finished);
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
    for (f, failing, _) in all.into_values() {
        if failing {
            out.findings.push(f);
        } else {
            out.fixed.push(f);
        }
    }
    sort_and_dedup(&mut out);
    if let Some(view) = &view {
        out.findings.extend(campaign_findings(view));
    }
    Ok(out)
}

/// Refuses inputs that hold one run twice (its runs would count twice).
fn no_run_twice(docs: &[Summary]) -> Result<(), String> {
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
    Ok(())
}

/// Findings united by test, kind, mode and token: key -> (the finding, failing: true or
/// fixed: false, when its status was reported).
type UnitedFindings = BTreeMap<(String, String, String, String), (Finding, bool, String)>;

/// Adds one report's findings (those that fail, and those `fixed`) to `all`, counting
/// how often each was seen; the report `finished` later sets the status, reports being
/// united in the order they finished.
fn unite(all: &mut UnitedFindings, findings: Vec<Finding>, fixed: Vec<Finding>, finished: &str) {
    for (f, failing) in findings
        .into_iter()
        .filter(|f| f.kind != "differs")
        .map(|f| (f, true))
        .chain(fixed.into_iter().map(|f| (f, false)))
    {
        match all.get_mut(&f.key()) {
            Some((kept, was, when)) => {
                kept.seen = kept.seen.saturating_add(f.seen);
                // Times are whole seconds: a report finished in the same second as
                // one that replayed its finding (a quick shard after a merge) is the
                // earlier one, since a replay follows what it replays.
                let replayed_then = *when == finished && kept.status != Status::New;
                if !(replayed_then && f.status == Status::New) {
                    kept.status = f.status;
                    *was = failing;
                    *when = finished.to_string();
                }
            }
            None => {
                all.insert(f.key(), (f, failing, finished.to_string()));
            }
        }
    }
}

/// The merged lists in one order whatever the inputs' order, each entry once.
fn sort_and_dedup(out: &mut Summary) {
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
}

/// The differing runs of the campaigns' process reports as findings (kind `differs`),
/// one per test, stage, element and value, with the smallest token that found it.
fn campaign_findings(view: &Value) -> Vec<Finding> {
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
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::tests::{finding, report};
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
    fn a_replay_in_the_same_second_outranks_the_report_it_replayed() {
        // a quick shard after a merge: both finished at the same second, and the earlier
        // report's run id sorts after the replaying one's (CI saw this as `new`)
        let mut again = finding("t", "v3-1");
        again.status = Status::StillFailing;
        for order in [false, true] {
            let mut docs = vec![
                report(
                    "zz-night1",
                    "2026-01-01T00:00:07Z",
                    vec![finding("t", "v3-1")],
                    vec![],
                ),
                report(
                    "aa-night2",
                    "2026-01-01T00:00:07Z",
                    vec![again.clone()],
                    vec![],
                ),
            ];
            if order {
                docs.reverse();
            }
            let m = merge(docs).expect("merges");
            assert_eq!(m.findings.len(), 1);
            assert_eq!(m.findings[0].status, Status::StillFailing);
            assert_eq!(m.findings[0].seen, 2);
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
}
