//! `cargo fprev` on reductions into many elements at once (tests/fixtures/recall, issue
//! 47): each form's golden test is a finding that replays and is blamed on the form's
//! site; the twins whose order is their meaning, and the compute-twice test, are never
//! findings; and `scan` agrees with the runtime site by site: every site `scan` calls
//! scrambled is reached scrambled by the suite, and as many loops are left alone.
//!
//! One test for the whole fixture: the first run builds fprev into the copy's own target
//! folder (minutes on two cores), the later commands reuse that build.

mod common;

use common::{cargo_fprev, show};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recall")
}

#[test]
fn each_form_is_a_finding_blamed_on_its_site_and_scan_agrees_with_the_runtime() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let (out_dir, scratch) = (
        tmp.join("cargo-fprev-recall-out"),
        tmp.join("cargo-fprev-recall"),
    );
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = cargo_fprev()
        .current_dir(fixture())
        .args([
            "fprev", "test", "--seeds", "2", "--modes", "shapes", "--blame",
        ])
        .arg("--out")
        .arg(&out_dir)
        .arg("--scratch")
        .arg(&scratch)
        .output()
        .expect("run cargo-fprev");
    let text = show(&out);
    assert_eq!(out.status.code(), Some(2), "findings exit with 2: {text}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("findings.json")).expect("findings.json"),
    )
    .expect("valid JSON");
    common::assert_findings_schema(&json);
    let findings = json["findings"].as_array().expect("findings");
    // Each form's golden test fails under some seed, blamed on its own site alone.
    for (test, site, line) in [
        (
            "tests::golden_column_sums",
            "recall::column_sums#reduction0",
            23,
        ),
        (
            "tests::golden_cluster_sums",
            "recall::cluster_sums#reduction0",
            36,
        ),
        ("tests::golden_gradient", "recall::gradient#reduction0", 54),
        (
            "tests::golden_sums_and_count",
            "recall::sums_and_count#sum0",
            63,
        ),
        (
            "tests::golden_weighted_rows",
            "recall::weighted_rows#reduction0",
            83,
        ),
    ] {
        let f = findings
            .iter()
            .find(|f| f["test"] == test)
            .unwrap_or_else(|| panic!("{test} is a finding: {text}"));
        assert_eq!(f["kind"], "fail", "{test}");
        assert_eq!(
            f["blame"],
            serde_json::json!([{"site": site, "file": "src/lib.rs", "line": line}]),
            "{test} needs {site} alone"
        );
        // The finding replays alone.
        let replay = cargo_fprev()
            .current_dir(fixture())
            .args(["replay", "--mode"])
            .arg(f["mode"].as_str().expect("mode"))
            .arg(f["token"].as_str().expect("token"))
            .arg(test)
            .arg("--scratch")
            .arg(&scratch)
            .output()
            .expect("replay");
        assert_eq!(replay.status.code(), Some(2), "{test}: {}", show(&replay));
    }
    // Twins whose order is their meaning, and computing twice: never findings.
    for test in [
        "tests::running_columns_are_exact_prefixes",
        "tests::gradient_until_stops_where_written",
        "tests::smo_steps_run_as_written",
        "tests::smoothed_and_largest_are_exact",
        "tests::weighted_sum_runs_as_written",
        "tests::computed_twice",
    ] {
        assert!(
            !findings.iter().any(|f| f["test"] == test),
            "{test} is no finding: {text}"
        );
    }

    // What `scan` says, site by site.
    let scan = cargo_fprev()
        .current_dir(fixture())
        .args(["scan", "--json"])
        .output()
        .expect("scan");
    assert!(scan.status.success(), "{}", show(&scan));
    let doc: serde_json::Value = serde_json::from_slice(&scan.stdout).expect("JSON");
    let mut scrambled = BTreeSet::new();
    let mut left_alone = 0;
    for f in doc["functions"].as_array().expect("functions") {
        for d in f["decisions"].as_array().expect("decisions") {
            match d["outcome"].as_str() {
                Some("scrambled") => {
                    scrambled.insert(format!("recall::{}", d["site"].as_str().expect("site")));
                }
                _ => left_alone += 1,
            }
        }
    }
    // What the runtime reaches: the annotated copy's test binary (built by the run
    // above), run scrambled with its reached sites written out.
    // the copy sits under `tree` at the workspace's absolute path (what lies beside the
    // workspace is linked around it)
    let root = std::fs::canonicalize(fixture()).expect("the fixture");
    let copy: PathBuf = scratch
        .join("tree")
        .join(root.strip_prefix("/").expect("an absolute path"));
    let build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(&copy)
        .env("CARGO_TARGET_DIR", scratch.join("target"))
        .args(["test", "--no-run", "--message-format=json"])
        .output()
        .expect("cargo test --no-run");
    assert!(build.status.success(), "{}", show(&build));
    let exe = String::from_utf8_lossy(&build.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| m["profile"]["test"] == true && m["target"]["name"] == "recall")
        .and_then(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("the annotated lib's test binary");
    let sites_out = tmp.join("cargo-fprev-recall-sites.txt");
    let run = Command::new(&exe)
        .env("FPREV_SCRAMBLE", "shapes")
        .env("FPREV_SEED", "1")
        .env("FPREV_SITES_OUT", &sites_out)
        .output()
        .expect("run the annotated tests");
    let reached: BTreeSet<String> = std::fs::read_to_string(&sites_out)
        .expect("sites written")
        .lines()
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    assert_eq!(reached, scrambled, "{}", show(&run));
    let coverage = String::from_utf8_lossy(&run.stderr)
        .lines()
        .find(|l| l.starts_with("fprev scramble: "))
        .map(str::to_string)
        .expect("the coverage line");
    assert!(
        coverage.contains(&format!(
            "{n} of {n} scramble site(s) reached, {left_alone} loop(s) left alone",
            n = scrambled.len()
        )),
        "{coverage}"
    );
}
