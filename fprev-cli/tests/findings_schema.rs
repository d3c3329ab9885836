//! Every report fprev writes follows the JSON Schema the docs publish
//! (`docs/findings.schema.json`): the process reports of `assert_reproducible!` campaigns
//! (`FPREV_REPORT`), and the findings report that `fprev campaign merge` and `cargo fprev
//! merge` (one merge) make of them. `cargo_fprev.rs` checks the findings.json of `cargo
//! fprev test` against the same schema.
//!
//! The driver re-runs this test binary as a child process; the `child_*` test runs the
//! campaign there and is ignored in a plain run.

mod common;

use std::process::Command;

use common::{assert_findings_schema, assert_process_report_schema, scratch, stderr, stdout};
use serde_json::Value;

#[fprev::scramble]
fn total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

#[test]
#[ignore = "run by campaign_reports_and_their_merge_follow_the_schema as a child process"]
fn child_campaign() {
    let v: Vec<f64> = (0..2000)
        .map(|i| ((i * 7919 % 1013) as f64 - 506.0) * 10f64.powi(i % 9 - 4))
        .collect();
    let report = fprev::assert_reproducible!(|| total(&v));
    assert!(report.is_reproducible());
}

/// Runs the child campaign as shard `k` of 2, appending its process report to `report`.
fn shard(k: u32, report: &std::path::Path) {
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "child_campaign",
            "--exact",
            "--ignored",
            "--test-threads",
            "1",
        ])
        .env("FPREV_SEED", "v3-0000000000000c0d")
        .env("FPREV_SHARD", format!("{k}/2"))
        .env("FPREV_RUNS", "6")
        .env("FPREV_STAGES", "loops")
        .env("FPREV_REGRESSIONS", "off")
        .env("FPREV_REPORT", report)
        .output()
        .expect("run the child campaign");
    // the campaign finds the sum order-dependent: the child fails, its report says why
    assert!(!out.status.success(), "{}", stdout(&out));
}

#[test]
fn campaign_reports_and_their_merge_follow_the_schema() {
    let report = scratch("findings_schema", "shards.json");
    let _ = std::fs::remove_file(&report);
    shard(1, &report);
    shard(2, &report);
    let text = std::fs::read_to_string(&report).expect("the process reports");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    for doc in &lines {
        assert_process_report_schema(doc);
    }
    // one merge under both names: the same report
    let mut merged = Vec::new();
    for (exe, args) in [
        (env!("CARGO_BIN_EXE_fprev"), vec!["campaign", "merge"]),
        (env!("CARGO_BIN_EXE_cargo-fprev"), vec!["fprev", "merge"]),
    ] {
        let out_file = scratch("findings_schema", &format!("merged-{}.json", merged.len()));
        let o = Command::new(exe)
            .args(&args)
            .arg(&report)
            .arg("-o")
            .arg(&out_file)
            .output()
            .expect("merge");
        assert!(o.status.code().is_some(), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("distinct finding(s)"),
            "{}{}",
            stdout(&o),
            stderr(&o)
        );
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(&out_file).expect("merged report"))
                .expect("JSON");
        assert_findings_schema(&doc);
        merged.push(doc);
    }
    assert_eq!(merged[0], merged[1], "the two merges differ");
    let doc = &merged[0];
    assert_eq!(doc["processes"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        doc["campaigns"]["shards"],
        serde_json::json!(["1/2", "2/2"])
    );
    let findings = doc["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{doc:#}");
    assert!(findings
        .iter()
        .all(|f| f["kind"] == "differs" && f["test"] == "child_campaign"));
    // a merged report merges again with a new one, and refuses one it already holds
    let merged_file = scratch("findings_schema", "merged-0.json");
    let again = common::fprev(&[
        "campaign",
        "merge",
        &merged_file.display().to_string(),
        &report.display().to_string(),
    ]);
    assert!(
        stderr(&again).contains("merging it twice would count its runs twice"),
        "{}",
        stderr(&again)
    );
}
