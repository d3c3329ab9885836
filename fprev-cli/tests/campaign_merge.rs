//! `fprev campaign merge` joins shard reports the same way in any order, and refuses
//! files that are not campaign reports, numbers and fields outside the schema, inputs
//! given twice, outputs that name an input and inputs past the size cap.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

mod common;
use common::{fprev, stderr, stdout};

fn tmp(name: &str) -> PathBuf {
    common::scratch("campaign_merge", name)
}

/// One process report of shard `k` of 2 (schema version 1, trimmed to what merge reads
/// plus the required keys).
fn report(k: u32, tokens: [&str; 2], hash: &str, value: f64) -> String {
    format!(
        r#"{{"schema":"fprev-campaign-report","version":1,"fprev":"0.1.0","algorithm":2,"binary":"ports","pid":{k},"finished":"2026-11-24T00:00:00Z","seed":"v3-0000000000000abc","shard":{{"index":{k},"count":2}},"time_budget_s":null,"tests":[{{"name":"reduction","location":null,"campaign":"v3-0000000000000abc","replay":false,"shard":{{"index":{k},"count":2}},"reproducible":false,"reached_a_site":true,"floats":1,"duration_s":0.{k},"time_budget_s":null,"max_threads":4,"stages":[{{"stage":"loops","number":4,"label":"4 vary reductions","runs":2,"distinct":1,"differing":2,"max_abs":1e-6,"max_rel":{k}e-7,"norm2":1e-7,"max_ulps":{k},"max_elements":1,"sites_reached":2,"duration_s":0.0{k},"ended_by":"runs","run_numbers":{{"first":{k0},"step":2}},"tokens":["{t0}","{t1}"],"result_hashes":["{hash}"],"orders":[],"findings":[{{"token":"{t0}","element":0,"value":{value},"reference":1.0,"floats":1,"replay":"FPREV_SEED={t0} cargo test reduction"}}]}}],"regressions":null}}],"coverage":{{"compiled":1,"reached":1,"left_alone":0}},"sites":[{{"kind":"reduction","label":"ports::reduction#reduction0","file":"ports.rs","line":30,"reached":4,"reason":null}}],"chains":[]}}"#,
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
        report(
            1,
            ["v3-4000000000000001", "v3-4000000000000003"],
            "00000000000000aa",
            0.5,
        ) + "\n",
    )
    .expect("write");
    std::fs::write(
        &b,
        report(
            2,
            ["v3-4000000000000002", "v3-4000000000000004"],
            "00000000000000bb",
            0.5,
        ) + "\n",
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
        merged.contains("\"schema\": \"fprev-findings\""),
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
    assert!(
        err.contains("neither a findings report nor a campaign process report"),
        "{err}"
    );
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf-8").to_string()
}

/// Shard `k`'s report as a JSON value, to edit.
fn report_json(k: u32) -> Value {
    let tokens = [
        ["v3-4000000000000001", "v3-4000000000000003"],
        ["v3-4000000000000002", "v3-4000000000000004"],
    ];
    let hash = ["00000000000000aa", "00000000000000bb"];
    let i = (k - 1) as usize;
    serde_json::from_str(&report(k, tokens[i], hash[i], 0.5)).expect("fixture")
}

fn write(name: &str, text: &str) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn refused(o: &Output, says: &[&str]) {
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
    for s in says {
        assert!(stderr(o).contains(s), "{s:?} not in {}", stderr(o));
    }
    assert!(stdout(o).is_empty(), "{}", stdout(o));
}

#[test]
fn merge_keeps_nan_and_inf_and_the_finite_values() {
    // Before: the table said `max rel err 0` and the merged JSON had null, the finite
    // shard's 2.00e-7 lost too.
    for bad in ["NaN", "inf"] {
        let mut a = report_json(1);
        let st = &mut a["tests"][0]["stages"][0];
        for key in ["max_abs", "max_rel", "norm2"] {
            st[key] = json!(bad);
        }
        st["max_ulps"] = json!(u64::MAX);
        let a = write(&format!("nonfinite-{bad}-1.json"), &format!("{a}\n"));
        let b = write(
            &format!("nonfinite-{bad}-2.json"),
            &format!("{}\n", report_json(2)),
        );
        let out = tmp(&format!("nonfinite-{bad}-merged.json"));
        let o = fprev(&[
            "campaign",
            "merge",
            &s(&a),
            &s(&b),
            "-o",
            &s(&out),
            "--markdown",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let table = stdout(&o);
        assert!(
            table.contains(&format!("| 4 | 2 | 4 | {bad} (2.00e-7) | - (2) | 0 |")),
            "{table}"
        );
        let merged: Value =
            serde_json::from_str(&std::fs::read_to_string(&out).expect("merged")).expect("json");
        common::assert_findings_schema(&merged);
        let st = &merged["campaigns"]["tests"][0]["stages"][0];
        assert_eq!(st["max_rel"], bad, "{st}");
        assert_eq!(st["max_abs"], bad, "{st}");
        assert_eq!(st["finite_max_rel"], 2e-7, "{st}");
        assert_eq!(st["finite_max_ulps"], 2, "{st}");
    }
}

#[test]
fn merge_refuses_numbers_and_fields_outside_the_schema() {
    // Before: every one of these merged, as 0, 1/1 or an empty list.
    let stage = "/tests/0/stages/0";
    let set = |field: &str, raw: &str| {
        let mut d = report_json(1);
        *d.pointer_mut(field).expect("field") = json!("@@raw@@");
        d.to_string().replace("\"@@raw@@\"", raw)
    };
    let remove = |parent: &str, key: &str| {
        let mut d = report_json(1);
        d.pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .expect("object")
            .remove(key);
        d.to_string()
    };
    let cases = [
        (
            set(&format!("{stage}/runs"), "-5"),
            "tests[0].stages[0].runs",
        ),
        (
            set(&format!("{stage}/runs"), "1.5"),
            "tests[0].stages[0].runs",
        ),
        (
            set(&format!("{stage}/runs"), "18446744073709551616"),
            "tests[0].stages[0].runs",
        ),
        (
            set(&format!("{stage}/max_ulps"), "99999999999999999999999"),
            "tests[0].stages[0].max_ulps",
        ),
        (
            set("/tests/0/shard", r#"{"index":0,"count":0}"#),
            "tests[0].shard: shard 0/0 does not exist",
        ),
        (
            set("/tests/0/shard", r#"{"index":5,"count":2}"#),
            "tests[0].shard: shard 5/2 does not exist",
        ),
        (
            set(&format!("{stage}/run_numbers/step"), "0"),
            "tests[0].stages[0].run_numbers.step",
        ),
        (
            remove(stage, "result_hashes"),
            "tests[0].stages[0].result_hashes: missing",
        ),
        (
            remove(stage, "findings"),
            "tests[0].stages[0].findings: missing",
        ),
        (remove("/tests/0", "stages"), "tests[0].stages: missing"),
        (remove("/tests/0", "name"), "tests[0].name: missing"),
        (remove("/tests/0", "shard"), "tests[0].shard: missing"),
    ];
    for (i, (text, field)) in cases.iter().enumerate() {
        let p = write(&format!("schema-{i}.json"), &format!("\n{text}\n"));
        let o = fprev(&["campaign", "merge", &s(&p)]);
        refused(&o, &[&format!("{}:2: field {field}", s(&p))]);
    }
}

#[test]
fn merge_counts_never_wrap() {
    // Before: two shards of 2^63 runs merged to 0 runs.
    let mut files = Vec::new();
    for k in [1, 2] {
        let mut d = report_json(k);
        d["tests"][0]["stages"][0]["runs"] = json!(1u64 << 63);
        files.push(write(&format!("wrap-{k}.json"), &format!("{d}\n")));
    }
    let o = fprev(&["campaign", "merge", &s(&files[0]), &s(&files[1])]);
    refused(&o, &["tests[0].stages[0].runs", "18446744073709551615"]);
}

#[test]
fn merge_refuses_an_input_given_twice_and_an_output_naming_an_input() {
    let a = write("twice-a.json", &format!("{}\n", report_json(1)));
    let b = write("twice-b.json", &format!("{}\n", report_json(2)));
    // Before: the runs doubled, with only `overlap 2` to show for it.
    let o = fprev(&["campaign", "merge", &s(&a), &s(&b), &s(&a)]);
    refused(&o, &[&format!("{} and {} are the same file", s(&a), s(&a))]);
    let dir = a.parent().expect("dir");
    let dotted = dir.join(".").join("twice-a.json");
    let o = fprev(&["campaign", "merge", &s(&a), &s(&dotted)]);
    refused(&o, &["are the same file"]);
    let copy = write(
        "twice-copy.json",
        &std::fs::read_to_string(&a).expect("read"),
    );
    let o = fprev(&["campaign", "merge", &s(&a), &s(&b), &s(&copy)]);
    refused(
        &o,
        &[&format!("{} has the same content as {}", s(&copy), s(&a))],
    );
    // one process report inside two files
    let both = write(
        "twice-both.json",
        &format!("{}\n{}\n", report_json(2), report_json(1)),
    );
    let o = fprev(&["campaign", "merge", &s(&a), &s(&both)]);
    refused(
        &o,
        &[&format!(
            "{}:2: the same process report as {}:1",
            s(&both),
            s(&a)
        )],
    );
    // Before: -o overwrote the input.
    let before = std::fs::read_to_string(&a).expect("read");
    for flag in ["-o", "--junit"] {
        let o = fprev(&["campaign", "merge", &s(&a), &s(&b), flag, &s(&a)]);
        refused(
            &o,
            &[&format!("{flag} {} names the input {}", s(&a), s(&a))],
        );
        assert_eq!(std::fs::read_to_string(&a).expect("read"), before);
    }
    let out = tmp("twice-out.json");
    let o = fprev(&[
        "campaign",
        "merge",
        &s(&a),
        "-o",
        &s(&out),
        "--junit",
        &s(&out),
    ]);
    refused(&o, &["-o and --junit name the same file"]);
}

#[test]
fn merge_reads_at_most_max_input_bytes() {
    // Before: /dev/zero was read until memory ran out (here: a 1 GiB address-space limit).
    let limited = |args: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v 1048576 && exec \"$0\" {args}"))
            .arg(env!("CARGO_BIN_EXE_fprev"))
            .output()
            .expect("run fprev")
    };
    let o = limited("campaign merge /dev/zero");
    refused(
        &o,
        &["/dev/zero: larger than 67108864 bytes (--max-input-bytes)"],
    );
    let a = write("cap-a.json", &format!("{}\n", report_json(1)));
    let o = limited(&format!("campaign merge --max-input-bytes 1K {}", s(&a)));
    refused(&o, &["larger than 1024 bytes"]);
    let o = limited(&format!("campaign merge --max-input-bytes 1M {}", s(&a)));
    assert!(o.status.success(), "{}", stderr(&o));
    let help = fprev(&["campaign", "merge", "--help"]);
    assert!(
        stdout(&help).contains("--max-input-bytes"),
        "{}",
        stdout(&help)
    );
}

/// Whether `c` may appear in an XML 1.0 document.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

#[test]
fn junit_and_markdown_escape_control_characters_pipes_and_line_ends() {
    // Before: the NUL went into the JUnit XML as is (not well-formed XML 1.0), and the
    // `|` and the line end split the Markdown row.
    let name = "sum\u{0}x|y\nz\u{1b}\u{FFFE}";
    let mut d = report_json(1);
    d["tests"][0]["name"] = json!(name);
    let a = write("escape-a.json", &format!("{d}\n"));
    let xml_path = tmp("escape.xml");
    let o = fprev(&[
        "campaign",
        "merge",
        &s(&a),
        "--markdown",
        "--junit",
        &s(&xml_path),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let xml = std::fs::read_to_string(&xml_path).expect("junit");
    assert!(xml.chars().all(xml_char), "{xml:?}");
    assert!(
        xml.contains(r#"name="sum\x00x|y&#10;z\x1b\u{fffe}""#),
        "{xml}"
    );
    let table = stdout(&o);
    // the findings table, then the campaigns' table: header, separator, one row each
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 6, "{table}");
    assert!(
        rows[2].starts_with("| sum\\x00x\\|y<br>z\\x1b\u{FFFE} | differs | loops |"),
        "{}",
        rows[2]
    );
    let row = rows[5];
    assert!(
        row.starts_with("| sum\\x00x\\|y<br>z\\x1b\u{FFFE} | 4 vary reductions |"),
        "{row}"
    );
    // ten cell borders: nine columns, the escaped pipe not among them
    let borders = row.matches('|').count() - row.matches("\\|").count();
    assert_eq!(borders, 10, "{row}");
    assert!(!table.contains('\u{0}'), "{table:?}");
    let o = fprev(&["campaign", "merge", &s(&a)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("sum\\x00x|y\\nz\\x1b\u{FFFE}  4 vary"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    // Before: `fprev campaign merge a.json --markdown > /dev/full` panicked (status 101).
    let a = write("full-a.json", &format!("{}\n", report_json(1)));
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_fprev"))
        .args(["campaign", "merge", &s(&a), "--markdown"])
        .stdout(full)
        .output()
        .expect("run fprev");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fprev: cannot write to standard output: No space left on device"),
        "{}",
        stderr(&o)
    );
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_fprev"))
        .args(["campaign", "merge", &s(&a), "--markdown"])
        .stdout(writer)
        .output()
        .expect("run fprev");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}
