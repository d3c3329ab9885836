//! `fprev campaign merge`: joins the reports of a campaign's shards (`FPREV_REPORT`
//! files, one JSON document per process and line) into one summary: runs and differing
//! runs added up, distinct results as the union of result hashes, largest errors, and
//! findings deduplicated by test, stage, element and value. The result does not depend
//! on the order of the inputs (everything is keyed and sorted), so shards can be merged
//! as they arrive. Schema: `docs/campaigns.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::Failure;

/// The process reports' schema this merge reads.
const REPORT_SCHEMA: &str = "fprev-campaign-report";
const REPORT_VERSION: u64 = 1;
/// The merged document's schema.
const MERGED_SCHEMA: &str = "fprev-campaign-merged";
const MERGED_VERSION: u64 = 1;

#[derive(clap::Subcommand)]
pub(crate) enum CampaignCmd {
    /// Join shard reports (FPREV_REPORT files) into one summary and print a table.
    Merge {
        /// Report files (JSON Lines: one document per test process).
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Write the merged report (JSON) to this file.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Print the table as Markdown.
        #[arg(long)]
        markdown: bool,
        /// Also write the merged result as JUnit XML (one test case per campaign, failing
        /// when it was not reproducible), for CI dashboards.
        #[arg(long)]
        junit: Option<PathBuf>,
    },
}

pub(crate) fn run(cmd: &CampaignCmd) -> Result<(), Failure> {
    match cmd {
        CampaignCmd::Merge {
            reports,
            output,
            markdown,
            junit,
        } => {
            let mut docs = Vec::new();
            for path in reports {
                docs.extend(read_reports(path)?);
            }
            let merged = merge(&docs);
            if let Some(out) = output {
                let text = serde_json::to_string_pretty(&merged)? + "\n";
                std::fs::write(out, text)
                    .map_err(|e| Failure(format!("{}: {e}", out.display())))?;
            }
            if let Some(out) = junit {
                std::fs::write(out, junit_xml(&merged))
                    .map_err(|e| Failure(format!("{}: {e}", out.display())))?;
            }
            print!("{}", table(&merged, *markdown));
            Ok(())
        }
    }
}

/// Every document of a report file, checked against the schema's name and version.
fn read_reports(path: &Path) -> Result<Vec<Value>, Failure> {
    let text =
        std::fs::read_to_string(path).map_err(|e| Failure(format!("{}: {e}", path.display())))?;
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = || format!("{}:{}", path.display(), i + 1);
        let doc: Value = serde_json::from_str(line)
            .map_err(|e| Failure(format!("{}: not a JSON document: {e}", at())))?;
        if doc["schema"] != REPORT_SCHEMA {
            return Err(Failure(format!(
                "{}: not an fprev campaign report (schema {:?}; expected {REPORT_SCHEMA:?})",
                at(),
                doc["schema"]
            )));
        }
        if doc["version"] != REPORT_VERSION {
            return Err(Failure(format!(
                "{}: report schema version {} (this fprev reads version {REPORT_VERSION})",
                at(),
                doc["version"]
            )));
        }
        docs.push(doc);
    }
    if docs.is_empty() {
        return Err(Failure(format!(
            "{}: no report in the file",
            path.display()
        )));
    }
    Ok(docs)
}

fn as_str(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        // Reports write non-finite errors as strings.
        Value::String(s) => s.parse().unwrap_or(f64::NAN),
        _ => 0.0,
    }
}

fn strings(v: &Value) -> impl Iterator<Item = String> + '_ {
    v.as_array().into_iter().flatten().map(as_str)
}

/// A sum that does not depend on the order of its terms: the terms sorted first.
fn sorted_sum(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.into_iter().sum()
}

fn max_f(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

#[derive(Default)]
struct StageAcc {
    number: u64,
    label: String,
    runs: u64,
    differing: u64,
    hashes: BTreeSet<String>,
    /// Largest `distinct` of one process (counted over all its runs, not only kept ones).
    distinct: u64,
    tokens: BTreeMap<String, u64>,
    max_abs: f64,
    max_rel: f64,
    norm2: f64,
    max_ulps: u64,
    max_elements: u64,
    sites_reached: u64,
    durations: Vec<f64>,
    ended_by: BTreeSet<String>,
}

/// A finding's identity: (stage number, stage, element, value, reference), as JSON text.
type FindingKey = (u64, String, String, String, String);

#[derive(Default)]
struct TestAcc {
    locations: BTreeSet<String>,
    campaigns: BTreeSet<String>,
    shards: BTreeSet<(u64, u64)>,
    processes: u64,
    reproducible: bool,
    reached_a_site: bool,
    durations: Vec<f64>,
    stages: BTreeMap<String, StageAcc>,
    /// (stage number, stage, element, value, reference) -> tokens that found it, with
    /// their replay commands.
    findings: BTreeMap<FindingKey, BTreeMap<String, String>>,
    still_reproduce: BTreeSet<String>,
    persisted: BTreeSet<String>,
}

/// Joins process reports; the result is the same for any order of `docs`.
pub(crate) fn merge(docs: &[Value]) -> Value {
    let mut tests: BTreeMap<String, TestAcc> = BTreeMap::new();
    let mut seeds = BTreeSet::new();
    let mut shards = BTreeSet::new();
    let mut binaries = BTreeSet::new();
    let mut sites: BTreeMap<(String, String, u64), (Value, u64)> = BTreeMap::new();
    for doc in docs {
        if !doc["seed"].is_null() {
            seeds.insert(as_str(&doc["seed"]));
        }
        binaries.insert(as_str(&doc["binary"]));
        for t in doc["tests"].as_array().into_iter().flatten() {
            let acc = tests.entry(as_str(&t["name"])).or_insert_with(|| TestAcc {
                reproducible: true,
                ..TestAcc::default()
            });
            acc.processes += 1;
            if !t["location"].is_null() {
                acc.locations.insert(as_str(&t["location"]));
            }
            acc.campaigns.insert(as_str(&t["campaign"]));
            let shard = (
                t["shard"]["index"].as_u64().unwrap_or(1),
                t["shard"]["count"].as_u64().unwrap_or(1),
            );
            acc.shards.insert(shard);
            shards.insert(shard);
            acc.reproducible &= t["reproducible"].as_bool().unwrap_or(false);
            acc.reached_a_site |= t["reached_a_site"].as_bool().unwrap_or(false);
            acc.durations.push(num(&t["duration_s"]));
            for s in t["stages"].as_array().into_iter().flatten() {
                let name = as_str(&s["stage"]);
                let st = acc.stages.entry(name.clone()).or_default();
                st.number = s["number"].as_u64().unwrap_or(0);
                st.label = as_str(&s["label"]);
                st.runs += s["runs"].as_u64().unwrap_or(0);
                st.differing += s["differing"].as_u64().unwrap_or(0);
                st.hashes.extend(strings(&s["result_hashes"]));
                st.distinct = st.distinct.max(s["distinct"].as_u64().unwrap_or(0));
                for tok in strings(&s["tokens"]) {
                    *st.tokens.entry(tok).or_insert(0) += 1;
                }
                st.max_abs = max_f(st.max_abs, num(&s["max_abs"]));
                st.max_rel = max_f(st.max_rel, num(&s["max_rel"]));
                st.norm2 = max_f(st.norm2, num(&s["norm2"]));
                st.max_ulps = st.max_ulps.max(s["max_ulps"].as_u64().unwrap_or(0));
                st.max_elements = st.max_elements.max(s["max_elements"].as_u64().unwrap_or(0));
                st.sites_reached += s["sites_reached"].as_u64().unwrap_or(0);
                st.durations.push(num(&s["duration_s"]));
                st.ended_by.insert(as_str(&s["ended_by"]));
                for f in s["findings"].as_array().into_iter().flatten() {
                    let key = (
                        st.number,
                        name.clone(),
                        f["element"].to_string(),
                        f["value"].to_string(),
                        f["reference"].to_string(),
                    );
                    acc.findings
                        .entry(key)
                        .or_default()
                        .insert(as_str(&f["token"]), as_str(&f["replay"]));
                }
            }
            let reg = &t["regressions"];
            acc.still_reproduce.extend(strings(&reg["still_reproduce"]));
            acc.persisted.extend(strings(&reg["added"]));
        }
        for site in doc["sites"].as_array().into_iter().flatten() {
            let key = (
                as_str(&site["label"]),
                as_str(&site["file"]),
                site["line"].as_u64().unwrap_or(0),
            );
            let entry = sites.entry(key).or_insert_with(|| (site.clone(), 0));
            entry.1 += site["reached"].as_u64().unwrap_or(0);
        }
    }
    let tests: Vec<Value> = tests
        .into_iter()
        .map(|(name, t)| {
            let stages: Vec<Value> = {
                let mut v: Vec<(&String, &StageAcc)> = t.stages.iter().collect();
                v.sort_by_key(|(_, s)| s.number);
                v.into_iter()
                    .map(|(stage, s)| {
                        let overlap = s.tokens.values().filter(|&&n| n > 1).count();
                        json!({
                            "stage": stage,
                            "number": s.number,
                            "label": s.label,
                            "runs": s.runs,
                            "distinct_schedules": s.tokens.len(),
                            "overlapping_schedules": overlap,
                            "distinct": s.distinct.max(s.hashes.len() as u64),
                            "differing": s.differing,
                            "max_abs": s.max_abs,
                            "max_rel": s.max_rel,
                            "norm2": s.norm2,
                            "max_ulps": s.max_ulps,
                            "max_elements": s.max_elements,
                            "sites_reached": s.sites_reached,
                            "duration_s": sorted_sum(s.durations.clone()),
                            "ended_by": s.ended_by.iter().collect::<Vec<_>>(),
                        })
                    })
                    .collect()
            };
            let findings: Vec<Value> = t
                .findings
                .iter()
                .map(|((_, stage, element, value, reference), tokens)| {
                    let (token, replay) = tokens.iter().next().unzip();
                    json!({
                        "stage": stage,
                        "element": serde_json::from_str::<Value>(element).unwrap_or(Value::Null),
                        "value": serde_json::from_str::<Value>(value).unwrap_or(Value::Null),
                        "reference": serde_json::from_str::<Value>(reference).unwrap_or(Value::Null),
                        "token": token,
                        "replay": replay,
                        "seen": tokens.len(),
                    })
                })
                .collect();
            json!({
                "name": name,
                "locations": t.locations,
                "campaigns": t.campaigns,
                "shards": t.shards.iter().map(|(k, n)| format!("{k}/{n}")).collect::<Vec<_>>(),
                "processes": t.processes,
                "reproducible": t.reproducible,
                "reached_a_site": t.reached_a_site,
                "duration_s": sorted_sum(t.durations.clone()),
                "stages": stages,
                "findings": findings,
                "still_reproduce": t.still_reproduce,
                "persisted": t.persisted,
            })
        })
        .collect();
    let sites: Vec<Value> = sites
        .into_values()
        .map(|(mut site, reached)| {
            site["reached"] = json!(reached);
            site
        })
        .collect();
    let compiled = sites.iter().filter(|s| !s["kind"].is_null()).count();
    let reached = sites
        .iter()
        .filter(|s| !s["kind"].is_null() && s["reached"].as_u64().unwrap_or(0) > 0)
        .count();
    json!({
        "schema": MERGED_SCHEMA,
        "version": MERGED_VERSION,
        "processes": docs.len(),
        "binaries": binaries,
        "seeds": seeds,
        "shards": shards.iter().map(|(k, n)| format!("{k}/{n}")).collect::<Vec<_>>(),
        "tests": tests,
        "coverage": {
            "compiled": compiled,
            "reached": reached,
            "left_alone": sites.len() - compiled,
        },
        "sites": sites,
    })
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The merged result as JUnit XML: one `<testcase>` per test, failing when a process
/// found it not reproducible (or a persisted finding still reproduced).
pub(crate) fn junit_xml(merged: &Value) -> String {
    let empty = Vec::new();
    let tests = merged["tests"].as_array().unwrap_or(&empty);
    let failing = |t: &Value| {
        !t["reproducible"].as_bool().unwrap_or(false)
            || !t["reached_a_site"].as_bool().unwrap_or(false)
            || t["still_reproduce"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
    };
    let failures = tests.iter().filter(|t| failing(t)).count();
    let mut x = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"fprev campaign\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n",
        tests.len()
    );
    for t in tests {
        let _ = write!(
            x,
            "    <testcase classname=\"fprev.campaign\" name=\"{}\" time=\"{:.3}\"",
            xml(&as_str(&t["name"])),
            num(&t["duration_s"])
        );
        if !failing(t) {
            x.push_str("/>\n");
            continue;
        }
        let mut text = String::new();
        for s in t["stages"].as_array().unwrap_or(&empty) {
            let _ = writeln!(
                text,
                "{}: {} of {} runs differ, max rel err {}, max ulps {}",
                as_str(&s["label"]),
                s["differing"],
                s["runs"],
                sci(&s["max_rel"]),
                s["max_ulps"]
            );
        }
        for f in t["findings"].as_array().unwrap_or(&empty) {
            let _ = writeln!(text, "replay: {}", as_str(&f["replay"]));
        }
        let _ = write!(
            x,
            ">\n      <failure message=\"not reproducible\">{}</failure>\n    </testcase>\n",
            xml(&text)
        );
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

fn sci(v: &Value) -> String {
    let x = num(v);
    if x == 0.0 {
        "0".to_string()
    } else {
        format!("{x:.2e}")
    }
}

/// The merged report as a table (Markdown or aligned text), then the findings.
pub(crate) fn table(merged: &Value, markdown: bool) -> String {
    let header = [
        "test",
        "stage",
        "shards",
        "runs",
        "distinct",
        "differing",
        "max rel err",
        "max ulps",
        "overlap",
    ];
    let mut rows: Vec<[String; 9]> = Vec::new();
    let empty = Vec::new();
    let tests = merged["tests"].as_array().unwrap_or(&empty);
    for t in tests {
        for s in t["stages"].as_array().unwrap_or(&empty) {
            let ulps = s["max_ulps"].as_u64().unwrap_or(0);
            rows.push([
                as_str(&t["name"]),
                as_str(&s["label"]),
                strings(&t["shards"]).collect::<Vec<_>>().join(","),
                s["runs"].to_string(),
                s["distinct"].to_string(),
                s["differing"].to_string(),
                sci(&s["max_rel"]),
                if ulps == u64::MAX {
                    "-".to_string()
                } else {
                    ulps.to_string()
                },
                s["overlapping_schedules"].to_string(),
            ]);
        }
    }
    let mut out = String::new();
    if markdown {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(
            out,
            "|{}",
            header
                .iter()
                .enumerate()
                .map(|(i, _)| if i < 3 { " --- |" } else { " ---: |" })
                .collect::<String>()
        );
        for r in &rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
    } else {
        let mut widths = header.map(str::len);
        for r in &rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.len());
            }
        }
        let line = |cells: &[String]| {
            cells
                .iter()
                .zip(widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    if i < 3 {
                        format!("{c:<w$}")
                    } else {
                        format!("{c:>w$}")
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        let _ = writeln!(out, "{}", line(&header.map(String::from)));
        for r in &rows {
            let _ = writeln!(out, "{}", line(r));
        }
    }
    let findings: Vec<(&Value, &Value)> = tests
        .iter()
        .flat_map(|t| {
            t["findings"]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .map(move |f| (t, f))
        })
        .collect();
    let _ = writeln!(
        out,
        "\n{} process report(s), shards {}, campaign seed(s) {}; {} distinct finding(s)",
        merged["processes"],
        strings(&merged["shards"]).collect::<Vec<_>>().join(","),
        strings(&merged["seeds"]).collect::<Vec<_>>().join(","),
        findings.len()
    );
    // At most two per test and stage (the merged JSON has them all).
    let mut shown: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (t, f) in &findings {
        let n = shown
            .entry((as_str(&t["name"]), as_str(&f["stage"])))
            .or_insert(0);
        *n += 1;
        if *n > 2 {
            continue;
        }
        let _ = writeln!(
            out,
            "{}- {} {}: element {} = {} (reference {}), seen {}x; replay: {}",
            if markdown { "" } else { "  " },
            as_str(&t["name"]),
            as_str(&f["stage"]),
            f["element"],
            f["value"],
            f["reference"],
            f["seen"],
            as_str(&f["replay"]),
        );
    }
    let hidden: usize = shown.values().map(|&n| n.saturating_sub(2)).sum();
    if hidden > 0 {
        let _ = writeln!(out, "  ... and {hidden} more (see the merged JSON)");
    }
    let cov = &merged["coverage"];
    let _ = writeln!(
        out,
        "scramble sites reached: {} of {} ({} loop(s) left alone)",
        cov["reached"], cov["compiled"], cov["left_alone"]
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(shard: u64, tokens: &[&str], hashes: &[&str], value: f64) -> Value {
        let finding = json!({"token": tokens[0], "element": 0, "value": value,
                             "reference": 1.0, "floats": 1, "replay": "x"});
        let stage = json!({
            "stage": "loops", "number": 4, "label": "4 vary reductions",
            "runs": tokens.len(), "distinct": hashes.len(), "differing": 1,
            "max_abs": 1e-9, "max_rel": 1e-7 * shard as f64, "norm2": 1e-7,
            "max_ulps": shard, "max_elements": 1, "sites_reached": 3,
            "duration_s": 0.05, "ended_by": "runs",
            "run_numbers": {"first": shard - 1, "step": 2},
            "tokens": tokens, "result_hashes": hashes, "orders": [],
            "findings": [finding]
        });
        let test = json!({
            "name": "sum", "location": "tests/a.rs:1", "campaign": "v2-0000000000000001",
            "replay": false, "shard": {"index": shard, "count": 2}, "reproducible": false,
            "reached_a_site": true, "floats": 1, "duration_s": 0.1 * shard as f64,
            "time_budget_s": null, "max_threads": 4, "stages": [stage], "regressions": null
        });
        let site = json!({"kind": "reduction", "label": "a::sum#reduction0", "file": "a.rs",
                          "line": 3, "reached": 10, "reason": null});
        json!({
            "schema": REPORT_SCHEMA, "version": 1, "fprev": "0.1.0", "algorithm": 2,
            "binary": "t", "pid": shard, "finished": "2026-01-01T00:00:00Z",
            "seed": "v2-0000000000000001", "shard": {"index": shard, "count": 2},
            "time_budget_s": null, "tests": [test],
            "coverage": {"compiled": 1, "reached": 1, "left_alone": 0},
            "sites": [site], "chains": []
        })
    }

    #[test]
    fn merge_is_order_independent_and_dedupes_findings() {
        let a = doc(1, &["v2-4a", "v2-4b"], &["01", "02"], 2.0);
        let b = doc(2, &["v2-4c", "v2-4d"], &["02", "03"], 2.0);
        let ab = merge(&[a.clone(), b.clone()]);
        let ba = merge(&[b, a]);
        assert_eq!(ab, ba);
        let t = &ab["tests"][0];
        let s = &t["stages"][0];
        assert_eq!(s["runs"], 4);
        assert_eq!(s["distinct"], 3);
        assert_eq!(s["overlapping_schedules"], 0);
        assert_eq!(s["max_ulps"], 2);
        assert_eq!(t["findings"].as_array().map(Vec::len), Some(1));
        assert_eq!(t["findings"][0]["seen"], 2);
        assert_eq!(t["findings"][0]["token"], "v2-4a");
        assert_eq!(ab["sites"][0]["reached"], 20);
        assert!(table(&ab, true).starts_with("| test | stage |"));
        let xml = junit_xml(&ab);
        assert!(xml.contains("tests=\"1\" failures=\"1\""), "{xml}");
        assert!(xml.contains("replay: x"), "{xml}");
    }
}
