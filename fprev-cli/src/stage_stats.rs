//! The statistics of `assert_reproducible!` campaigns joined across processes: the
//! `campaigns` part of a findings report. The process reports (`FPREV_REPORT` files, one
//! JSON document per process and line) of a campaign's shards become one view: runs and
//! differing runs added up, distinct results as the union of result hashes, largest
//! errors, and differing runs deduplicated by test, stage, element and value. The result
//! does not depend on the order of the inputs (everything is keyed and sorted), so shards
//! can be merged as they arrive. Schema: `docs/findings.schema.json`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::escape::{cell, xml};
use crate::reports::{self, float_json, Report};

/// A sum that does not depend on the order of its terms: the terms sorted first; an
/// error past the largest float.
fn sorted_sum(mut v: Vec<f64>, what: &str) -> Result<f64, String> {
    v.sort_by(f64::total_cmp);
    let sum: f64 = v.into_iter().sum();
    if sum.is_finite() {
        Ok(sum)
    } else {
        Err(format!("{what} add up past the largest float ({sum})"))
    }
}

/// The largest of some error measures: NaN when any is NaN (an error that cannot be
/// measured stays visible), and beside it the largest finite one, which a shard's NaN or
/// infinity would otherwise hide.
#[derive(Clone, Copy, Default)]
struct Largest {
    all: f64,
    finite: Option<f64>,
}

impl Largest {
    fn add(&mut self, x: f64) {
        self.all = if self.all.is_nan() || x.is_nan() {
            f64::NAN
        } else {
            self.all.max(x)
        };
        if x.is_finite() {
            self.finite = Some(self.finite.map_or(x, |f| f.max(x)));
        }
    }
}

/// `total + add` of field `field` (read at `place`), or an error: counts never wrap.
fn checked(total: u64, add: u64, place: &str, field: &str, what: &str) -> Result<u64, String> {
    total.checked_add(add).ok_or_else(|| {
        reports::SchemaError {
            place: place.to_string(),
            field: field.to_string(),
            problem: format!(
                "{add} more {what} make more than {} in all: the inputs cannot be counted",
                u64::MAX
            ),
        }
        .to_string()
    })
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
    max_abs: Largest,
    max_rel: Largest,
    norm2: Largest,
    max_ulps: u64,
    /// Largest `max_ulps` below `u64::MAX` (which stands for a distance with no ulp count).
    finite_ulps: Option<u64>,
    max_elements: u64,
    sites_reached: u64,
    durations: Vec<f64>,
    ended_by: BTreeSet<String>,
}

/// A finding's identity: (stage number, stage, element, value, reference), as JSON text.
type DifferingKey = (u64, String, String, String, String);

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
    findings: BTreeMap<DifferingKey, BTreeMap<String, String>>,
    still_reproduce: BTreeSet<String>,
    persisted: BTreeSet<String>,
}

fn opt_float_json(x: Option<f64>) -> Value {
    x.map_or(Value::Null, float_json)
}

/// Site key: (label, file, line) -> (its JSON, compiled, executions).
type SiteAcc = BTreeMap<(String, String, u64), (Value, bool, u64)>;

/// Joins process reports; the result is the same for any order of `docs`. Counts that
/// would pass `u64::MAX` are an error naming the report and field that overflowed them.
pub(crate) fn merge(docs: &[Report]) -> Result<Value, String> {
    let mut tests: BTreeMap<String, TestAcc> = BTreeMap::new();
    let mut seeds = BTreeSet::new();
    let mut shards = BTreeSet::new();
    let mut binaries = BTreeSet::new();
    let mut sites: SiteAcc = BTreeMap::new();
    for doc in docs {
        if let Some(seed) = &doc.seed {
            seeds.insert(seed.clone());
        }
        binaries.insert(doc.binary.clone());
        for (ti, t) in doc.tests.iter().enumerate() {
            let acc = tests.entry(t.name.clone()).or_insert_with(|| TestAcc {
                reproducible: true,
                ..TestAcc::default()
            });
            shards.insert(t.shard);
            acc.add(t, ti, &doc.place)?;
        }
        add_sites(&mut sites, doc)?;
    }
    let mut tests_json = Vec::new();
    for (name, t) in tests {
        tests_json.push(t.into_json(&name)?);
    }
    let compiled = sites.values().filter(|s| s.1).count();
    let reached = sites.values().filter(|s| s.1 && s.2 > 0).count();
    let left_alone = sites.len() - compiled;
    let sites: Vec<Value> = sites
        .into_values()
        .map(|(mut site, _, reached)| {
            site["reached"] = json!(reached);
            site
        })
        .collect();
    Ok(json!({
        "processes": docs.len(),
        "binaries": binaries,
        "seeds": seeds,
        "shards": shards.iter().map(|(k, n)| format!("{k}/{n}")).collect::<Vec<_>>(),
        "tests": tests_json,
        "coverage": {
            "compiled": compiled,
            "reached": reached,
            "left_alone": left_alone,
        },
        "sites": sites,
    }))
}

/// Every site of one report, its executions added to the site's total.
fn add_sites(sites: &mut SiteAcc, doc: &Report) -> Result<(), String> {
    for (i, site) in doc.sites.iter().enumerate() {
        let key = (site.label.clone(), site.file.clone(), site.line);
        let entry = sites
            .entry(key)
            .or_insert_with(|| (site.json.clone(), site.compiled, 0));
        entry.2 = checked(
            entry.2,
            site.reached,
            &doc.place,
            &format!("sites[{i}].reached"),
            "site executions",
        )?;
    }
    Ok(())
}

impl TestAcc {
    /// One process's record of the test (`tests[ti]` of the report read at `place`).
    fn add(&mut self, t: &reports::TestRecord, ti: usize, place: &str) -> Result<(), String> {
        self.processes += 1;
        if let Some(l) = &t.location {
            self.locations.insert(l.clone());
        }
        self.campaigns.insert(t.campaign.clone());
        self.shards.insert(t.shard);
        self.reproducible &= t.reproducible;
        self.reached_a_site |= t.reached_a_site;
        self.durations.push(t.duration_s);
        for (si, s) in t.stages.iter().enumerate() {
            let field = |key: &str| format!("tests[{ti}].stages[{si}].{key}");
            let st = self.stages.entry(s.stage.clone()).or_default();
            st.add(s, place, field)?;
            for f in &s.findings {
                let key = (
                    st.number,
                    s.stage.clone(),
                    f.element.map_or(Value::Null, Value::from).to_string(),
                    opt_float_json(f.value).to_string(),
                    opt_float_json(f.reference).to_string(),
                );
                self.findings
                    .entry(key)
                    .or_default()
                    .insert(f.token.clone(), f.replay.clone());
            }
        }
        self.still_reproduce
            .extend(t.still_reproduce.iter().cloned());
        self.persisted.extend(t.persisted.iter().cloned());
        Ok(())
    }

    /// The merged test, its stages in order of their numbers.
    fn into_json(self, name: &str) -> Result<Value, String> {
        let mut ordered: Vec<(&String, &StageAcc)> = self.stages.iter().collect();
        ordered.sort_by_key(|(_, s)| s.number);
        let mut stages = Vec::new();
        for (stage, s) in ordered {
            stages.push(s.to_json(name, stage)?);
        }
        let findings: Vec<Value> = self
            .findings
            .iter()
            .map(|((_, stage, element, value, reference), tokens)| {
                let (token, replay) = tokens.iter().next().unzip();
                // The keys are JSON text this merge wrote itself.
                let back = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
                json!({
                    "stage": stage,
                    "element": back(element),
                    "value": back(value),
                    "reference": back(reference),
                    "token": token,
                    "replay": replay,
                    "seen": tokens.len(),
                })
            })
            .collect();
        Ok(json!({
            "name": name,
            "locations": self.locations,
            "campaigns": self.campaigns,
            "shards": self.shards.iter().map(|(k, n)| format!("{k}/{n}")).collect::<Vec<_>>(),
            "processes": self.processes,
            "reproducible": self.reproducible,
            "reached_a_site": self.reached_a_site,
            "duration_s": sorted_sum(self.durations, &format!("the durations of test {name:?}"))?,
            "stages": stages,
            "findings": findings,
            "still_reproduce": self.still_reproduce,
            "persisted": self.persisted,
        }))
    }
}

impl StageAcc {
    /// One process's record of the stage; `field` names a field of it for errors.
    fn add(
        &mut self,
        s: &reports::StageRecord,
        place: &str,
        field: impl Fn(&str) -> String,
    ) -> Result<(), String> {
        self.number = s.number;
        self.label = s.label.clone();
        self.runs = checked(self.runs, s.runs, place, &field("runs"), "runs")?;
        self.differing = checked(
            self.differing,
            s.differing,
            place,
            &field("differing"),
            "differing runs",
        )?;
        self.hashes.extend(s.result_hashes.iter().cloned());
        self.distinct = self.distinct.max(s.distinct);
        for tok in &s.tokens {
            *self.tokens.entry(tok.clone()).or_insert(0) += 1;
        }
        self.max_abs.add(s.max_abs);
        self.max_rel.add(s.max_rel);
        self.norm2.add(s.norm2);
        self.max_ulps = self.max_ulps.max(s.max_ulps);
        if s.max_ulps != u64::MAX {
            self.finite_ulps = Some(self.finite_ulps.map_or(s.max_ulps, |u| u.max(s.max_ulps)));
        }
        self.max_elements = self.max_elements.max(s.max_elements);
        self.sites_reached = checked(
            self.sites_reached,
            s.sites_reached,
            place,
            &field("sites_reached"),
            "site executions",
        )?;
        self.durations.push(s.duration_s);
        self.ended_by.insert(s.ended_by.clone());
        Ok(())
    }

    /// The merged stage `stage` of test `name`.
    fn to_json(&self, name: &str, stage: &str) -> Result<Value, String> {
        let overlap = self.tokens.values().filter(|&&n| n > 1).count();
        Ok(json!({
            "stage": stage,
            "number": self.number,
            "label": self.label,
            "runs": self.runs,
            "distinct_schedules": self.tokens.len(),
            "overlapping_schedules": overlap,
            "distinct": self.distinct.max(self.hashes.len() as u64),
            "differing": self.differing,
            "max_abs": float_json(self.max_abs.all),
            "max_rel": float_json(self.max_rel.all),
            "norm2": float_json(self.norm2.all),
            "max_ulps": self.max_ulps,
            "finite_max_abs": opt_float_json(self.max_abs.finite),
            "finite_max_rel": opt_float_json(self.max_rel.finite),
            "finite_norm2": opt_float_json(self.norm2.finite),
            "finite_max_ulps": self.finite_ulps,
            "max_elements": self.max_elements,
            "sites_reached": self.sites_reached,
            "duration_s": sorted_sum(
                self.durations.clone(),
                &format!("the durations of test {name:?}, stage {stage}"),
            )?,
            "ended_by": self.ended_by.iter().collect::<Vec<_>>(),
        }))
    }
}

fn as_str(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn strings(v: &Value) -> impl Iterator<Item = String> + '_ {
    v.as_array().into_iter().flatten().map(as_str)
}

/// A float of the merged document (non-finite ones are strings there).
fn num(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => s.parse().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

/// The campaigns as one JUnit `<testsuite>`: one `<testcase>` per test, failing when a
/// process found it not reproducible (or a persisted finding still reproduced).
pub(crate) fn junit_suite(merged: &Value) -> String {
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
        "  <testsuite name=\"fprev campaign\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n",
        tests.len()
    );
    for t in tests {
        let _ = write!(
            x,
            "    <testcase classname=\"fprev.campaign\" name=\"{}\" time=\"{:.3}\"",
            xml(&as_str(&t["name"]), true),
            t["duration_s"].as_f64().unwrap_or(0.0)
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
                error_cell(s, "max_rel"),
                ulps_cell(s)
            );
        }
        for f in t["findings"].as_array().unwrap_or(&empty) {
            let _ = writeln!(text, "replay: {}", as_str(&f["replay"]));
        }
        let _ = write!(
            x,
            ">\n      <failure message=\"not reproducible\">{}</failure>\n    </testcase>\n",
            xml(&text, false)
        );
    }
    x.push_str("  </testsuite>\n");
    x
}

fn sci(x: f64) -> String {
    if x == 0.0 {
        "0".to_string()
    } else if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        "inf".to_string()
    } else {
        format!("{x:.2e}")
    }
}

/// An error of a merged stage: its largest value, and when that is NaN or infinite, the
/// largest finite value another shard reported, in parentheses.
fn error_cell(stage: &Value, key: &str) -> String {
    let x = num(&stage[key]);
    let finite = &stage[format!("finite_{key}")];
    if x.is_finite() || !finite.is_number() {
        sci(x)
    } else {
        format!("{} ({})", sci(x), sci(num(finite)))
    }
}

/// The ulp distance of a merged stage: `-` for a distance with no ulp count (`u64::MAX`:
/// a NaN, or results of different lengths), with the largest counted one in parentheses.
fn ulps_cell(stage: &Value) -> String {
    match (
        stage["max_ulps"].as_u64(),
        stage["finite_max_ulps"].as_u64(),
    ) {
        (Some(u64::MAX), Some(u)) => format!("- ({u})"),
        (Some(u64::MAX) | None, _) => "-".to_string(),
        (Some(u), _) => u.to_string(),
    }
}

/// The table's columns.
const HEADER: [&str; 9] = [
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

/// The merged report as a table (Markdown or aligned text), then the findings.
pub(crate) fn table(merged: &Value, markdown: bool) -> String {
    let empty = Vec::new();
    let tests = merged["tests"].as_array().unwrap_or(&empty);
    let mut out = String::new();
    let rows = stage_rows(tests, markdown);
    if markdown {
        markdown_table(&mut out, &rows);
    } else {
        text_table(&mut out, &rows);
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
    finding_lines(&mut out, &findings, markdown);
    let cov = &merged["coverage"];
    let _ = writeln!(
        out,
        "scramble sites reached: {} of {} ({} loop(s) left alone)",
        cov["reached"], cov["compiled"], cov["left_alone"]
    );
    out
}

/// One row per stage of every test.
fn stage_rows(tests: &[Value], markdown: bool) -> Vec<[String; 9]> {
    let empty = Vec::new();
    let mut rows = Vec::new();
    for t in tests {
        for s in t["stages"].as_array().unwrap_or(&empty) {
            rows.push([
                cell(&as_str(&t["name"]), markdown),
                cell(&as_str(&s["label"]), markdown),
                strings(&t["shards"]).collect::<Vec<_>>().join(","),
                s["runs"].to_string(),
                s["distinct"].to_string(),
                s["differing"].to_string(),
                error_cell(s, "max_rel"),
                ulps_cell(s),
                s["overlapping_schedules"].to_string(),
            ]);
        }
    }
    rows
}

/// The rows as a Markdown table, the counts right-aligned.
fn markdown_table(out: &mut String, rows: &[[String; 9]]) {
    let _ = writeln!(out, "| {} |", HEADER.join(" | "));
    let _ = writeln!(
        out,
        "|{}",
        HEADER
            .iter()
            .enumerate()
            .map(|(i, _)| if i < 3 { " --- |" } else { " ---: |" })
            .collect::<String>()
    );
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
}

/// The rows as aligned text: names left-aligned, counts right-aligned.
fn text_table(out: &mut String, rows: &[[String; 9]]) {
    let mut widths = HEADER.map(str::len);
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
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
    let _ = writeln!(out, "{}", line(&HEADER.map(String::from)));
    for r in rows {
        let _ = writeln!(out, "{}", line(r));
    }
}

/// The findings, at most two per test and stage (the merged JSON has them all).
fn finding_lines(out: &mut String, findings: &[(&Value, &Value)], markdown: bool) {
    let mut shown: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (t, f) in findings {
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
            cell(&as_str(&t["name"]), markdown),
            cell(&as_str(&f["stage"]), markdown),
            f["element"],
            f["value"],
            f["reference"],
            f["seen"],
            cell(&as_str(&f["replay"]), markdown),
        );
    }
    let hidden: usize = shown.values().map(|&n| n.saturating_sub(2)).sum();
    if hidden > 0 {
        let _ = writeln!(out, "  ... and {hidden} more (see the merged JSON)");
    }
}

#[cfg(test)]
#[path = "stage_stats/tests.rs"]
mod tests;
