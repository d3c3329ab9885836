//! A seeded fuzz harness for the report reader and the merge: valid reports with
//! random fields replaced, removed or added and random bytes cut or inserted; each
//! case's seed is printed when it fails (rerun one with `FPREV_SEED`).
use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

fn valid(k: u64) -> Value {
    let stage = json!({
        "stage": "loops", "number": 4, "label": "4 vary reductions",
        "runs": 2, "distinct": 1, "differing": 1,
        "max_abs": 1e-9, "max_rel": "NaN", "norm2": 1e-7,
        "max_ulps": u64::MAX, "max_elements": 1, "sites_reached": 3,
        "duration_s": 0.05, "ended_by": "runs",
        "run_numbers": {"first": k - 1, "step": 2},
        "tokens": ["v3-4000000000000001", "v3-4000000000000002"],
        "result_hashes": ["00000000000000aa"], "orders": [],
        "findings": [{"token": "v3-4000000000000001", "element": 0, "value": "-inf",
                      "reference": 1.0, "floats": 1, "replay": "x | y"}]
    });
    json!({
        "schema": REPORT_SCHEMA, "version": 1, "fprev": "0.1.0", "algorithm": 2,
        "binary": "t", "pid": k, "finished": "2026-01-01T00:00:00Z",
        "seed": null, "shard": {"index": k, "count": 2}, "time_budget_s": null,
        "tests": [{
            "name": "sum", "location": null, "campaign": "v3-0000000000000001",
            "replay": false, "shard": {"index": k, "count": 2}, "reproducible": false,
            "reached_a_site": true, "floats": 1, "duration_s": 0.1,
            "time_budget_s": null, "max_threads": 4, "stages": [stage],
            "regressions": {"file": "f", "replayed": [], "still_reproduce": [],
                            "added": ["v3-4000000000000001"]}
        }],
        "coverage": {"compiled": 1, "reached": 1, "left_alone": 0},
        "sites": [{"kind": "reduction", "label": "a", "file": "a.rs", "line": 3,
                   "reached": 10, "reason": null}],
        "chains": []
    })
}

const RAW: &[&str] = &[
    "-5",
    "1.5",
    "0",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "1e308",
    "-0.0",
    "\"NaN\"",
    "\"inf\"",
    "\"-inf\"",
    "\"nan\"",
    "null",
    "true",
    "{}",
    "[]",
    "\"\\u0000|\\n\"",
    "\"\u{FFFE}\"",
    "{\"index\":0,\"count\":0}",
    "{\"index\":5,\"count\":2}",
    "{\"first\":0,\"step\":0}",
];

/// Every JSON pointer into `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(x, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn mutated(rng: &mut ChaCha8Rng, k: u64) -> String {
    let mut doc = valid(k);
    let mut raws = Vec::new();
    for _ in 0..rng.random_range(0..4) {
        let mut ps = Vec::new();
        pointers(&doc, String::new(), &mut ps);
        let p = &ps[rng.random_range(0..ps.len())];
        if p.is_empty() {
            continue;
        }
        let (parent, key) = p.rsplit_once('/').unwrap_or_default();
        match rng.random_range(0..3) {
            0 => {
                if let Some(Value::Object(m)) = doc.pointer_mut(parent) {
                    m.remove(key);
                }
            }
            1 => {
                if let Some(v) = doc.pointer_mut(p) {
                    // a marker replaced by raw text once serialized (numbers a Value
                    // cannot hold)
                    let marker = format!("@@{}@@", raws.len());
                    raws.push(RAW[rng.random_range(0..RAW.len())]);
                    *v = json!(marker);
                }
            }
            _ => {
                if let Some(Value::Array(a)) = doc.pointer_mut(parent) {
                    if let Some(x) = a.first().cloned() {
                        a.push(x);
                    }
                }
            }
        }
    }
    let mut text = doc.to_string();
    for (i, raw) in raws.iter().enumerate() {
        text = text.replace(&format!("\"@@{i}@@\""), raw);
    }
    if rng.random_bool(0.1) && !text.is_empty() {
        let at = rng.random_range(0..text.len());
        if text.is_char_boundary(at) {
            text.truncate(at);
        }
    }
    text
}

fn one_case(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut docs = Vec::new();
    for k in 1..=2 {
        let text = mutated(&mut rng, k);
        match parse(&format!("r{k}.json"), &text) {
            Ok(mut r) => docs.append(&mut r),
            Err(e) => {
                // Named by file, and by line when a line is at fault (an empty
                // file has none).
                let e = e.to_string();
                assert!(
                    e.starts_with(&format!("r{k}.json:1: "))
                        || e == format!("r{k}.json: no report in the file"),
                    "{e}"
                );
                return;
            }
        }
    }
    if let Ok(merged) = crate::stage_stats::merge(&docs) {
        for markdown in [false, true] {
            let _ = crate::stage_stats::table(&merged, markdown);
        }
        let xml = crate::stage_stats::junit_suite(&merged);
        assert!(
            !xml.chars()
                .any(|c| (c < ' ' && !"\t\n\r".contains(c)) || c == '\u{FFFE}' || c == '\u{FFFF}'),
            "{xml:?}"
        );
        // the merged document holds no null where a number was merged
        let s = &merged["tests"][0]["stages"][0];
        for key in [
            "runs",
            "max_abs",
            "max_rel",
            "norm2",
            "max_ulps",
            "duration_s",
        ] {
            assert!(s.is_null() || !s[key].is_null(), "{key}: {s}");
        }
    }
}

#[test]
fn report_reader_and_merge_never_panic() {
    fprev::scramble::fuzz_cases("report fuzz", 0x3E9_0000, 1000, one_case);
}
