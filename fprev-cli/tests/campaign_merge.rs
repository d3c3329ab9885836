//! `fprev campaign merge` joins shard reports the same way in any order, and refuses
//! files that are not campaign reports.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fprev(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fprev"))
        .args(args)
        .output()
        .expect("run fprev")
}

fn tmp(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("campaign_merge");
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

/// One process report of shard `k` of 2 (schema version 1, trimmed to what merge reads
/// plus the required keys).
fn report(k: u32, tokens: [&str; 2], hash: &str, value: f64) -> String {
    format!(
        r#"{{"schema":"fprev-campaign-report","version":1,"fprev":"0.1.0","algorithm":2,"binary":"ports","pid":{k},"finished":"2026-11-24T00:00:00Z","seed":"v2-0000000000000abc","shard":{{"index":{k},"count":2}},"time_budget_s":null,"tests":[{{"name":"reduction","location":null,"campaign":"v2-0000000000000abc","replay":false,"shard":{{"index":{k},"count":2}},"reproducible":false,"reached_a_site":true,"floats":1,"duration_s":0.{k},"time_budget_s":null,"max_threads":4,"stages":[{{"stage":"loops","number":4,"label":"4 vary reductions","runs":2,"distinct":1,"differing":2,"max_abs":1e-6,"max_rel":{k}e-7,"norm2":1e-7,"max_ulps":{k},"max_elements":1,"sites_reached":2,"duration_s":0.0{k},"ended_by":"runs","run_numbers":{{"first":{k0},"step":2}},"tokens":["{t0}","{t1}"],"result_hashes":["{hash}"],"orders":[],"findings":[{{"token":"{t0}","element":0,"value":{value},"reference":1.0,"floats":1,"replay":"FPREV_SEED={t0} cargo test reduction"}}]}}],"regressions":null}}],"coverage":{{"compiled":1,"reached":1,"left_alone":0}},"sites":[{{"kind":"reduction","label":"ports::reduction#reduction0","file":"ports.rs","line":30,"reached":4,"reason":null}}],"chains":[]}}"#,
        k0 = k - 1,
        t0 = tokens[0],
        t1 = tokens[1],
    )
}

#[test]
fn merge_is_order_independent() {
    let a = tmp("a.json");
    let b = tmp("b.json");
    std::fs::write(
        &a,
        report(1, ["v2-4000000000000001", "v2-4000000000000003"], "aa", 0.5) + "\n",
    )
    .expect("write");
    std::fs::write(
        &b,
        report(2, ["v2-4000000000000002", "v2-4000000000000004"], "bb", 0.5) + "\n",
    )
    .expect("write");
    let (ab, ba) = (tmp("ab.json"), tmp("ba.json"));
    let s = |p: &PathBuf| p.to_str().expect("utf-8").to_string();
    let one = fprev(&[
        "campaign",
        "merge",
        &s(&a),
        &s(&b),
        "-o",
        &s(&ab),
        "--markdown",
    ]);
    let two = fprev(&[
        "campaign",
        "merge",
        &s(&b),
        &s(&a),
        "-o",
        &s(&ba),
        "--markdown",
    ]);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    assert_eq!(one.stdout, two.stdout);
    let merged = std::fs::read_to_string(&ab).expect("merged");
    assert_eq!(merged, std::fs::read_to_string(&ba).expect("merged"));
    assert!(
        merged.contains("\"schema\": \"fprev-campaign-merged\""),
        "{merged}"
    );
    let table = String::from_utf8_lossy(&one.stdout);
    // 4 runs over two shards, 2 distinct results, no schedule run twice, one finding.
    assert!(
        table.contains("| reduction | 4 vary reductions | 1/2,2/2 | 4 | 2 | 4 | 2.00e-7 | 2 | 0 |"),
        "{table}"
    );
    assert!(table.contains("1 distinct finding(s)"), "{table}");
}

#[test]
fn merge_refuses_other_files() {
    let bad = tmp("bad.json");
    std::fs::write(&bad, "{\"schema\":\"something-else\",\"version\":1}\n").expect("write");
    let o = fprev(&["campaign", "merge", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not an fprev campaign report"), "{err}");
}
