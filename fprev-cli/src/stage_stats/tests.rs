use super::*;
use crate::reports::REPORT_SCHEMA;

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
        "name": "sum", "location": "tests/a.rs:1", "campaign": "v3-0000000000000001",
        "replay": false, "shard": {"index": shard, "count": 2}, "reproducible": false,
        "reached_a_site": true, "floats": 1, "duration_s": 0.1 * shard as f64,
        "time_budget_s": null, "max_threads": 4, "stages": [stage], "regressions": null
    });
    let site = json!({"kind": "reduction", "label": "a::sum#reduction0", "file": "a.rs",
                      "line": 3, "reached": 10, "reason": null});
    json!({
        "schema": REPORT_SCHEMA, "version": 1, "fprev": "0.1.0", "algorithm": 2,
        "binary": "t", "pid": shard, "finished": "2026-01-01T00:00:00Z",
        "seed": "v3-0000000000000001", "shard": {"index": shard, "count": 2},
        "time_budget_s": null, "tests": [test],
        "coverage": {"compiled": 1, "reached": 1, "left_alone": 0},
        "sites": [site], "chains": []
    })
}

const H1: &str = "0000000000000001";
const H2: &str = "0000000000000002";
const H3: &str = "0000000000000003";

fn parse(name: &str, doc: &Value) -> Result<Vec<Report>, String> {
    reports::parse(name, &doc.to_string()).map_err(|e| e.to_string())
}

fn merged(docs: &[Value]) -> Result<Value, String> {
    let mut all = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        all.extend(parse(&format!("r{i}.json"), d)?);
    }
    merge(&all)
}

fn stage_of(doc: &mut Value) -> &mut Value {
    &mut doc["tests"][0]["stages"][0]
}

#[test]
fn merge_is_order_independent_and_dedupes_findings() {
    let a = doc(1, &["v3-4a", "v3-4b"], &[H1, H2], 2.0);
    let b = doc(2, &["v3-4c", "v3-4d"], &[H2, H3], 2.0);
    let ab = merged(&[a.clone(), b.clone()]).expect("merge");
    let ba = merged(&[b, a]).expect("merge");
    assert_eq!(ab, ba);
    let t = &ab["tests"][0];
    let s = &t["stages"][0];
    assert_eq!(s["runs"], 4);
    assert_eq!(s["distinct"], 3);
    assert_eq!(s["overlapping_schedules"], 0);
    assert_eq!(s["max_ulps"], 2);
    assert_eq!(t["findings"].as_array().map(Vec::len), Some(1));
    assert_eq!(t["findings"][0]["seen"], 2);
    assert_eq!(t["findings"][0]["token"], "v3-4a");
    assert_eq!(ab["sites"][0]["reached"], 20);
    assert!(table(&ab, true).starts_with("| test | stage |"));
    let xml = junit_suite(&ab);
    assert!(xml.contains("tests=\"1\" failures=\"1\""), "{xml}");
    assert!(xml.contains("replay: x"), "{xml}");
}

#[test]
fn non_finite_errors_stay_non_finite_and_keep_the_finite_ones() {
    // Before: "NaN" read as 0 by the max, written as null, and the table said 0.
    for (bad, shown) in [("NaN", "NaN"), ("inf", "inf")] {
        let mut a = doc(1, &["v3-4a"], &[H1], 2.0);
        let b = doc(2, &["v3-4b"], &[H2], 2.0);
        for key in ["max_abs", "max_rel", "norm2"] {
            stage_of(&mut a)[key] = json!(bad);
        }
        stage_of(&mut a)["max_ulps"] = json!(u64::MAX);
        stage_of(&mut a)["findings"][0]["value"] = json!(bad);
        let m = merged(&[a.clone(), b.clone()]).expect("merge");
        assert_eq!(m, merged(&[b, a]).expect("merge"));
        let s = &m["tests"][0]["stages"][0];
        for key in ["max_abs", "max_rel", "norm2"] {
            assert_eq!(s[key], bad, "{key}: {s}");
        }
        assert_eq!(s["finite_max_rel"], 2e-7);
        assert_eq!(s["finite_max_abs"], 1e-9);
        assert_eq!(s["max_ulps"], u64::MAX);
        assert_eq!(s["finite_max_ulps"], 2);
        let values: Vec<&Value> = m["tests"][0]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| &f["value"])
            .collect();
        assert!(values.contains(&&json!(bad)), "{values:?}");
        let table = table(&m, true);
        assert!(
            table.contains(&format!("| {shown} (2.00e-7) | - (2) |")),
            "{table}"
        );
        assert!(junit_suite(&m).contains(&format!("max rel err {shown} (2.00e-7)")));
    }
}

/// `doc` as text with the value of `field` (a JSON pointer) replaced by `raw`.
fn with_raw(doc: &Value, field: &str, raw: &str) -> String {
    let mut d = doc.clone();
    *d.pointer_mut(field).expect("field") = json!("@@raw@@");
    d.to_string().replace("\"@@raw@@\"", raw)
}

fn without(doc: &Value, parent: &str, key: &str) -> String {
    let mut d = doc.clone();
    d.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect("object")
        .remove(key);
    d.to_string()
}

/// Each document must be refused by the reader, naming its first line and saying `says`.
fn assert_refused(cases: Vec<(String, &str)>) {
    for (text, says) in cases {
        let err = reports::parse("r.json", &text)
            .err()
            .unwrap_or_else(|| panic!("accepted: {text}"))
            .to_string();
        assert!(err.starts_with("r.json:1: "), "{err}");
        assert!(err.contains(says), "{says:?} not in {err:?}");
    }
}

#[test]
fn values_outside_the_schema_are_refused_naming_the_field() {
    // Before: each of these became 0, 1/1 or an empty list, silently.
    let d = doc(1, &["v3-4a"], &[H1], 2.0);
    let raw = |f: &str, r: &str| with_raw(&d, f, r);
    assert_refused(vec![
        (
            raw("/tests/0/stages/0/runs", "-5"),
            "tests[0].stages[0].runs: expected a whole number",
        ),
        (
            raw("/tests/0/stages/0/runs", "1.5"),
            "tests[0].stages[0].runs: expected a whole number",
        ),
        (
            raw("/tests/0/stages/0/runs", "18446744073709551616"),
            "tests[0].stages[0].runs",
        ),
        (
            raw("/tests/0/stages/0/max_ulps", "99999999999999999999999"),
            "tests[0].stages[0].max_ulps",
        ),
        (
            raw("/tests/0/stages/0/max_rel", "-1"),
            "tests[0].stages[0].max_rel: expected an error",
        ),
        (
            raw("/tests/0/stages/0/max_rel", "\"nan\""),
            "tests[0].stages[0].max_rel",
        ),
        (
            raw("/tests/0/stages/0/max_abs", "null"),
            "tests[0].stages[0].max_abs",
        ),
        (
            raw("/tests/0/stages/0/differing", "7"),
            "more than the stage's 1 runs",
        ),
        (
            raw("/tests/0/shard", r#"{"index":0,"count":0}"#),
            "tests[0].shard: shard 0/0 does not exist",
        ),
        (
            raw("/tests/0/shard", r#"{"index":5,"count":2}"#),
            "tests[0].shard: shard 5/2 does not exist",
        ),
        (
            raw("/shard", r#"{"index":3,"count":2}"#),
            "field shard: shard 3/2",
        ),
        (
            raw("/tests/0/stages/0/run_numbers/step", "0"),
            "run_numbers.step: 0",
        ),
        (
            raw("/tests/0/stages/0/run_numbers/first", "5"),
            "is not shard 1/2's",
        ),
        (raw("/tests/0/stages/0/stage", "\"loop\""), "is not a stage"),
        (raw("/tests/0/stages/0/number", "2"), "is number 4, not 2"),
        (raw("/tests/0/stages/0/ended_by", "\"tired\""), "ended_by"),
        (
            raw("/tests/0/stages/0/result_hashes/0", "\"xyz\""),
            "result_hashes[0]",
        ),
        (
            raw("/tests/0/stages/0/duration_s", "-1"),
            "duration_s: expected seconds",
        ),
        (
            raw("/tests/0/reproducible", "1"),
            "reproducible: expected true or false",
        ),
        (raw("/sites/0/line", "-3"), "sites[0].line"),
    ]);
}

#[test]
fn missing_fields_are_refused_naming_the_field() {
    // Before: each of these became 0, 1/1 or an empty list, silently.
    let d = doc(1, &["v3-4a"], &[H1], 2.0);
    let st = "/tests/0/stages/0";
    assert_refused(vec![
        (
            without(&d, st, "result_hashes"),
            "tests[0].stages[0].result_hashes: missing",
        ),
        (
            without(&d, st, "findings"),
            "tests[0].stages[0].findings: missing",
        ),
        (without(&d, st, "run_numbers"), "run_numbers: missing"),
        (
            without(&d, "/tests/0", "stages"),
            "tests[0].stages: missing",
        ),
        (without(&d, "/tests/0", "name"), "tests[0].name: missing"),
        (without(&d, "/tests/0", "shard"), "tests[0].shard: missing"),
        (without(&d, "", "tests"), "field tests: missing"),
        (without(&d, "", "sites"), "field sites: missing"),
        (
            without(&d, "/tests/0/stages/0/findings/0", "token"),
            "findings[0].token: missing",
        ),
    ]);
}

#[test]
fn sums_past_u64_max_are_an_error() {
    // Before: two shards of 2^63 runs merged to 0 runs.
    let mut a = doc(1, &["v3-4a"], &[H1], 2.0);
    let mut b = doc(2, &["v3-4b"], &[H2], 2.0);
    for d in [&mut a, &mut b] {
        stage_of(d)["runs"] = json!(1u64 << 63);
    }
    let err = merged(&[a.clone(), b.clone()]).expect_err("overflow");
    assert!(
        err.contains("r1.json:1: field tests[0].stages[0].runs"),
        "{err}"
    );
    // 2^63 - 1 + 2^63 still fits
    stage_of(&mut a)["runs"] = json!((1u64 << 63) - 1);
    let m = merged(&[a, b]).expect("fits");
    assert_eq!(m["tests"][0]["stages"][0]["runs"], u64::MAX);
}
