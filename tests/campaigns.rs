//! Campaigns at scale (`docs/cargo-fprev.md`): shards split one seed space without overlap,
//! time budgets end campaigns, findings are persisted and replayed first, and reports
//! follow the documented schema.
//!
//! The drivers re-run this test binary as child processes (as `scramble_replay.rs`
//! does); the `child_*` test does the work there and is ignored in a plain run.

#![cfg(not(feature = "off"))]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const CHILD: &str = "FPREV_TEST_CHILD";
const SEED: &str = "v3-0000000000000c0d";

#[fprev::scramble]
fn total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

fn data() -> Vec<f64> {
    (0..3000)
        .map(|i| ((i * 7919 % 1013) as f64 - 506.0) * 10f64.powi(i % 9 - 4))
        .collect()
}

/// The computation under test: an order-dependent sum, or ("fixed") a sum of whole
/// numbers, exact in every order.
fn computation(v: &[f64]) -> f64 {
    if std::env::var(CHILD).as_deref() == Ok("fixed") {
        let whole: Vec<f64> = v.iter().map(|x| x.round()).collect();
        total(&whole)
    } else {
        total(v)
    }
}

#[test]
#[ignore = "run by the campaign drivers below as a child process"]
fn child_campaign() {
    let v = data();
    let report = fprev::assert_reproducible!(|| computation(&v));
    assert!(report.is_reproducible());
}

/// A fresh directory under the system's temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "fprev-campaigns-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn child(mode: &str, dir: &Path, vars: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = Command::new(exe);
    cmd.args(["child_campaign", "--exact", "--include-ignored"])
        .env(CHILD, mode)
        .env("FPREV_STAGES", "schedule,loops")
        .env("FPREV_THREADS", "2")
        .env("FPREV_REGRESSIONS_DIR", dir.join("regressions"))
        .env_remove("FPREV_SEED")
        .env_remove("FPREV_RUNS")
        .env_remove("FPREV_TIME")
        .env_remove("FPREV_SHARD")
        .env_remove("FPREV_REPORT")
        .env_remove("FPREV_REPORT_FORMAT")
        .env_remove("FPREV_REGRESSIONS")
        .env_remove("FPREV_SCRAMBLE");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("run the test binary")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn reports(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the report file");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON document"))
        .collect()
}

fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The run tokens of each stage of the only test of a report.
fn stage_tokens(report: &Value) -> Vec<(String, BTreeSet<String>)> {
    report["tests"][0]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            let tokens = s["tokens"]
                .as_array()
                .expect("tokens")
                .iter()
                .map(|t| t.as_str().expect("a token").to_string())
                .collect();
            (s["stage"].as_str().expect("stage").to_string(), tokens)
        })
        .collect()
}

#[test]
fn shards_split_the_seed_space_without_overlap() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("shards");
    let report = dir.0.join("report.json");
    let path = report.to_str().expect("utf-8 temp path");
    let common = [
        ("FPREV_SEED", SEED),
        ("FPREV_REPORT", path),
        ("FPREV_REGRESSIONS", "off"),
    ];
    for vars in [
        &[("FPREV_SHARD", "1/2"), ("FPREV_RUNS", "4")][..],
        &[("FPREV_SHARD", "2/2"), ("FPREV_RUNS", "4")][..],
        &[("FPREV_RUNS", "8")][..],
    ] {
        let all: Vec<_> = common.iter().chain(vars).copied().collect();
        let out = child("fixed", &dir.0, &all);
        assert!(out.status.success(), "{}", text(&out));
    }
    // Three processes appended one document each to the same file.
    let docs = reports(&report);
    assert_eq!(docs.len(), 3);
    let (one, two, whole) = (
        stage_tokens(&docs[0]),
        stage_tokens(&docs[1]),
        stage_tokens(&docs[2]),
    );
    assert_eq!(docs[0]["shard"]["index"], 1);
    assert_eq!(docs[1]["tests"][0]["shard"]["count"], 2);
    for ((stage, a), ((_, b), (_, w))) in one.iter().zip(two.iter().zip(&whole)) {
        assert_eq!((a.len(), b.len(), w.len()), (4, 4, 8), "{stage}");
        assert!(a.is_disjoint(b), "{stage}: shards share a schedule");
        let union: BTreeSet<String> = a.union(b).cloned().collect();
        assert_eq!(&union, w, "{stage}: two shards cover one process's 8 runs");
    }
}

#[test]
fn a_shard_finding_replays_from_its_token_alone() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("replay");
    let (a, b) = (dir.0.join("a.json"), dir.0.join("b.json"));
    let shard = child(
        "broken",
        &dir.0,
        &[
            ("FPREV_SEED", SEED),
            ("FPREV_SHARD", "2/3"),
            ("FPREV_RUNS", "3"),
            ("FPREV_REGRESSIONS", "off"),
            ("FPREV_REPORT", a.to_str().expect("utf-8")),
        ],
    );
    assert!(!shard.status.success(), "{}", text(&shard));
    let found = &reports(&a)[0]["tests"][0]["stages"][1]["findings"][0];
    let token = found["token"].as_str().expect("a finding");
    assert!(
        found["replay"]
            .as_str()
            .is_some_and(|r| r.starts_with(&format!("FPREV_SEED={token} cargo test"))),
        "{found}"
    );
    let replay = child(
        "broken",
        &dir.0,
        &[
            ("FPREV_SEED", token),
            ("FPREV_REGRESSIONS", "off"),
            ("FPREV_REPORT", b.to_str().expect("utf-8")),
        ],
    );
    assert!(!replay.status.success(), "{}", text(&replay));
    let again = &reports(&b)[0]["tests"][0];
    assert_eq!(again["replay"], true);
    assert_eq!(again["stages"][0]["findings"][0]["value"], found["value"]);
}

#[test]
fn findings_persist_replay_first_and_pass_once_fixed() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("persist");
    let file = dir.0.join("regressions/campaigns/child_campaign.txt");
    let first = child(
        "broken",
        &dir.0,
        &[("FPREV_SEED", SEED), ("FPREV_RUNS", "3")],
    );
    assert!(!first.status.success());
    assert!(text(&first).contains("persisted"), "{}", text(&first));
    let saved = std::fs::read_to_string(&file).expect("the regressions file");
    assert!(saved.contains("Commit this file"), "{saved}");
    let tokens: Vec<&str> = saved
        .lines()
        .filter(|l| l.starts_with("v3-"))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert!(!tokens.is_empty() && tokens.len() <= 2, "{saved}");

    // A plain run (another campaign seed, default runs) replays the tokens first.
    let second = child("broken", &dir.0, &[]);
    assert!(!second.status.success());
    let out = text(&second);
    assert!(
        out.contains(&format!("persisted finding {}", tokens[0]))
            && out.contains("still reproduces"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("file"), saved);

    // Fixed: the tokens pass and stay.
    let fixed = child("fixed", &dir.0, &[]);
    assert!(fixed.status.success(), "{}", text(&fixed));
    assert_eq!(std::fs::read_to_string(&file).expect("file"), saved);

    // Off: nothing is replayed, the broken code fails on its own campaign.
    let off = child(
        "fixed",
        &dir.0,
        &[("FPREV_REGRESSIONS", "off"), ("FPREV_RUNS", "2")],
    );
    assert!(off.status.success(), "{}", text(&off));
}

#[test]
fn time_budgets_end_the_stages() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("time");
    let report = dir.0.join("r.json");
    let out = child(
        "fixed",
        &dir.0,
        &[
            ("FPREV_TIME", "600ms"),
            ("FPREV_REGRESSIONS", "off"),
            ("FPREV_REPORT", report.to_str().expect("utf-8")),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let test = &reports(&report)[0]["tests"][0];
    assert_eq!(test["time_budget_s"], 0.6);
    for stage in test["stages"].as_array().expect("stages") {
        assert_eq!(stage["ended_by"], "budget", "{stage}");
        assert!(stage["runs"].as_u64().is_some_and(|n| n > 1), "{stage}");
    }
    // With no runs cap a campaign cannot end before its budget; the upper bound is loose
    // (one run past each share, on a loaded machine).
    let took = test["duration_s"].as_f64().expect("duration");
    assert!((0.6..30.0).contains(&took), "{took}");

    // Both given: the runs cap ends it first.
    let capped = dir.0.join("c.json");
    let out = child(
        "fixed",
        &dir.0,
        &[
            ("FPREV_TIME", "1h"),
            ("FPREV_RUNS", "3"),
            ("FPREV_REGRESSIONS", "off"),
            ("FPREV_REPORT", capped.to_str().expect("utf-8")),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stages = reports(&capped)[0]["tests"][0]["stages"].clone();
    assert!(stages
        .as_array()
        .expect("stages")
        .iter()
        .all(|s| s["ended_by"] == "runs" && s["runs"] == 3));
}

#[test]
fn bad_settings_fail_naming_the_variable() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("bad");
    for (var, value, says) in [
        (
            "FPREV_TIME",
            "10",
            "FPREV_TIME=\"10\": \"10\" is not a duration",
        ),
        (
            "FPREV_SHARD",
            "3/2",
            "FPREV_SHARD=\"3/2\": shard 3/2 does not exist",
        ),
        ("FPREV_SHARD", "0/4", "shards are numbered 1 to 4"),
    ] {
        let out = child("fixed", &dir.0, &[(var, value)]);
        assert!(!out.status.success());
        assert!(text(&out).contains(says), "{}", text(&out));
    }
    // A shard with no common seed runs, and says why that splits nothing.
    let out = child(
        "fixed",
        &dir.0,
        &[
            ("FPREV_SHARD", "1/2"),
            ("FPREV_RUNS", "2"),
            ("FPREV_REGRESSIONS", "off"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("FPREV_SHARD=1/2 without FPREV_SEED"),
        "{}",
        text(&out)
    );
}

/// A token of this fprev for `seed`.
fn token(seed: u64) -> String {
    format!("v{}-{seed:016x}", fprev::scramble::ALGORITHM_VERSION)
}

#[test]
fn ignored_settings_are_reported_with_what_is_used() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("settings");
    let report = dir.0.join("r.json");
    let out = child(
        "fixed",
        &dir.0,
        &[
            ("FPREV_STAGES", "loops,loops"),
            ("FPREV_RUNS", "2"),
            ("FPREV_REGRESSIONS", "off"),
            ("FPREV_REPORT", report.to_str().expect("utf-8")),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(
            "ignoring FPREV_STAGES=\"loops,loops\": expected all, or a list of repeat, \
             distribution, schedule, loops (each at most once); using the default (all)"
        ),
        "{}",
        text(&out)
    );
    let stages: Vec<String> = stage_tokens(&reports(&report)[0])
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(stages, ["repeat", "distribution", "schedule", "loops"]);
    for value in ["", "junk"] {
        let out = child(
            "fixed",
            &dir.0,
            &[
                ("FPREV_SCRAMBLE", value),
                ("FPREV_RUNS", "2"),
                ("FPREV_REGRESSIONS", "off"),
            ],
        );
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "ignoring FPREV_SCRAMBLE={value:?}: expected off, shapes (or on), fisher-yates, \
                 sattolo or identity; using the default (off; the amplifier's scrambled stages \
                 scramble in shapes)"
            )),
            "{}",
            text(&out)
        );
    }
}

#[test]
fn persisted_lines_with_bad_thread_counts_are_reported() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("threads");
    let file = dir.0.join("regressions/campaigns/child_campaign.txt");
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    let mut lines = String::from("# persisted by hand\n");
    for (n, threads) in ["0", "-3", "99999999"].into_iter().enumerate() {
        lines.push_str(&format!(
            "{} threads={threads} at=a.rs:1 date=d stage=distribution element 0 = {n}.0 (reference 0.5)\n",
            token(0x2000_0000_0000_0010 + n as u64)
        ));
    }
    std::fs::write(&file, &lines).expect("write the findings");
    let out = child("fixed", &dir.0, &[("FPREV_RUNS", "2")]);
    assert!(out.status.success(), "{}", text(&out));
    for (line, threads) in [(2, "0"), (3, "-3"), (4, "99999999")] {
        let says = format!(
            "child_campaign.txt:{line}: threads={threads} is not a positive integer up to 256; \
             replaying v"
        );
        assert!(text(&out).contains(&says), "{says}\n{}", text(&out));
    }
    assert_eq!(std::fs::read_to_string(&file).expect("file"), lines);
}

#[test]
fn a_findings_file_that_is_not_utf8_loses_nothing() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("not-utf8");
    let file = dir.0.join("regressions/campaigns/child_campaign.txt");
    std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
    // UTF-16, as an editor may save it: not UTF-8 from its first byte on
    let mut bytes = vec![0xff, 0xfe];
    for unit in "# saved as UTF-16\n".encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    std::fs::write(&file, &bytes).expect("write the findings");
    let out = child(
        "broken",
        &dir.0,
        &[("FPREV_SEED", SEED), ("FPREV_RUNS", "3")],
    );
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("child_campaign.txt:1: skipping a line that is not UTF-8"),
        "{said}"
    );
    assert!(
        said.contains("child_campaign.txt is not UTF-8 from line 1 on, so it was left as it is")
            && said.contains("child_campaign.txt.new instead"),
        "{said}"
    );
    assert!(
        !said.contains("stream did not contain valid UTF-8"),
        "{said}"
    );
    assert_eq!(std::fs::read(&file).expect("file"), bytes, "left as it was");
    let side = std::fs::read_to_string(file.with_extension("txt.new")).expect("the side file");
    let v = format!("v{}-", fprev::scramble::ALGORITHM_VERSION);
    assert!(side.lines().any(|l| l.starts_with(&v)), "{side}");
}

/// A key and the test its value must pass.
type Field<'a> = (&'a str, fn(&Value) -> bool);

/// The documented schema (docs/findings.schema.json, $defs/process_report, version 1): required keys and their types.
fn check_schema(doc: &Value) {
    let has = |v: &Value, keys: &[Field]| {
        for (k, ok) in keys {
            assert!(ok(&v[*k]), "key {k:?} missing or mistyped in {v}");
        }
    };
    let s = |v: &Value| v.is_string();
    let n = |v: &Value| v.is_number();
    let b = |v: &Value| v.is_boolean();
    let a = |v: &Value| v.is_array();
    let o = |v: &Value| v.is_object();
    let s_or_null = |v: &Value| v.is_string() || v.is_null();
    let n_or_null = |v: &Value| v.is_number() || v.is_null();
    let o_or_null = |v: &Value| v.is_object() || v.is_null();
    assert_eq!(doc["schema"], "fprev-campaign-report");
    assert_eq!(doc["version"], 1);
    has(
        doc,
        &[
            ("fprev", s),
            ("algorithm", n),
            ("binary", s),
            ("pid", n),
            ("finished", s),
            ("seed", s_or_null),
            ("shard", o_or_null),
            ("time_budget_s", n_or_null),
            ("tests", a),
            ("coverage", o),
            ("sites", a),
            ("chains", a),
        ],
    );
    has(
        &doc["coverage"],
        &[("compiled", n), ("reached", n), ("left_alone", n)],
    );
    for site in doc["sites"].as_array().expect("sites") {
        has(
            site,
            &[
                ("kind", s_or_null),
                ("label", s),
                ("file", s),
                ("line", n),
                ("reached", n),
                ("reason", s_or_null),
            ],
        );
    }
    for test in doc["tests"].as_array().expect("tests") {
        has(
            test,
            &[
                ("name", s),
                ("location", s_or_null),
                ("campaign", s),
                ("replay", b),
                ("shard", o),
                ("reproducible", b),
                ("reached_a_site", b),
                ("floats", n),
                ("duration_s", n),
                ("time_budget_s", n_or_null),
                ("max_threads", n),
                ("stages", a),
                ("regressions", o_or_null),
            ],
        );
        for stage in test["stages"].as_array().expect("stages") {
            has(
                stage,
                &[
                    ("stage", s),
                    ("number", n),
                    ("label", s),
                    ("runs", n),
                    ("distinct", n),
                    ("differing", n),
                    ("max_abs", n),
                    ("max_rel", n),
                    ("norm2", n),
                    ("max_ulps", n),
                    ("max_elements", n),
                    ("sites_reached", n),
                    ("duration_s", n),
                    ("ended_by", s),
                    ("run_numbers", o),
                    ("tokens", a),
                    ("result_hashes", a),
                    ("orders", a),
                    ("findings", a),
                ],
            );
            for f in stage["findings"].as_array().expect("findings") {
                has(f, &[("token", s), ("floats", n), ("replay", s)]);
            }
        }
    }
}

#[test]
fn reports_follow_the_schema_and_are_json_lines_only() {
    if is_child() {
        return;
    }
    let dir = TempDir::new("schema");
    let json = dir.0.join("r.json");
    for (mode, format) in [("broken", "json"), ("fixed", "junit")] {
        let out = child(
            mode,
            &dir.0,
            &[
                ("FPREV_SEED", SEED),
                ("FPREV_RUNS", "2"),
                ("FPREV_REGRESSIONS", "off"),
                ("FPREV_REPORT", json.to_str().expect("utf-8")),
                ("FPREV_REPORT_FORMAT", format),
            ],
        );
        assert_eq!(out.status.success(), mode == "fixed", "{}", text(&out));
        if format == "junit" {
            // one renderer: JUnit comes from merging the report, which stays JSON Lines
            assert!(
                text(&out).contains("fprev campaign merge"),
                "{}",
                text(&out)
            );
        }
    }
    let docs = reports(&json);
    assert_eq!(docs.len(), 2);
    docs.iter().for_each(check_schema);
    assert_eq!(docs[0]["tests"][0]["reproducible"], false);
    assert_eq!(docs[1]["tests"][0]["reproducible"], true);
    assert!(docs[1]["coverage"]["reached"]
        .as_u64()
        .is_some_and(|n| n >= 1));
    assert!(!dir.0.join("r.json.lock").exists());
}

#[test]
fn scrambling_off_runs_only_the_repeat_stage() {
    // `cargo fprev test` runs every test once with FPREV_SCRAMBLE=off before any seed:
    // an assert_reproducible! test must pass there unless it is non-deterministic on its
    // own, so that its order dependence is a finding of a seed, not an unscrambled failure.
    let dir = TempDir::new("off");
    let report = dir.0.join("off.json");
    let report_var = report.to_str().expect("utf-8");
    let off = child(
        "dependent",
        &dir.0,
        &[
            ("FPREV_SCRAMBLE", "off"),
            ("FPREV_REPORT", report_var),
            ("FPREV_REGRESSIONS", "off"),
        ],
    );
    assert!(off.status.success(), "{}", text(&off));
    let docs = reports(&report);
    let stages: Vec<&str> = docs[0]["tests"][0]["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert_eq!(stages, ["repeat"], "{}", docs[0]);
    // the same campaign under a scrambling mode finds the sum order-dependent
    let on = child(
        "dependent",
        &dir.0,
        &[("FPREV_SCRAMBLE", "shapes"), ("FPREV_REGRESSIONS", "off")],
    );
    assert!(!on.status.success(), "{}", text(&on));
}
