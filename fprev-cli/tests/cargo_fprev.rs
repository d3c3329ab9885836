//! `cargo fprev` on a real crate (tests/fixtures/orderdep), edited by nobody: its golden
//! test is a finding that replays and is blamed on the one reduction it needs; its
//! compute-twice test is never one (one seed is one consistent platform); its test that
//! fails unscrambled is reported as such, never as a finding; `scan` reports what the
//! attribute decides for each loop and chain; bad input ends in exit 1.
//!
//! The first run builds fprev into the copy's own target folder (about two minutes on
//! two cores); the later commands reuse that build.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_findings_schema, cargo_fprev, show};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/orderdep")
}

fn scratch() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-orderdep")
}

/// The findings.json of a run's `--out` folder, checked against the published schema.
fn findings_of(out_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out_dir.join("findings.json")).expect("findings.json");
    let json = serde_json::from_str(&text).expect("valid JSON");
    assert_findings_schema(&json);
    json
}

#[test]
fn findings_replay_and_are_blamed_on_their_sites() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let before = std::fs::read_dir(fixture()).expect("fixture").count();
    let out = cargo_fprev()
        .current_dir(fixture())
        // `cargo fprev test` as cargo runs it: the subcommand's name comes first.
        .args(["fprev", "test", "--seeds", "3", "--modes", "shapes,sattolo"])
        .arg("--blame")
        .arg("--out")
        .arg(&out_dir)
        .arg("--scratch")
        .arg(scratch())
        .output()
        .expect("run cargo-fprev");
    let text = show(&out);
    assert_eq!(out.status.code(), Some(2), "findings exit with 2: {text}");
    assert_eq!(
        std::fs::read_dir(fixture()).expect("fixture").count(),
        before,
        "the user's tree is only read"
    );
    let json = findings_of(&out_dir);
    let findings = json["findings"].as_array().expect("findings");
    let tests: Vec<&str> = findings.iter().filter_map(|f| f["test"].as_str()).collect();
    assert!(
        tests.contains(&"tests::golden_total"),
        "the golden value must fail under some seed: {text}"
    );
    for t in [
        "tests::computed_twice",
        "tests::within_tolerance",
        "mean_is_close",
    ] {
        assert!(!tests.contains(&t), "{t} is no finding: {text}");
    }
    assert_eq!(
        json["unscrambled_failures"],
        serde_json::json!(["broken_anyway"])
    );
    assert_eq!(json["runs"].as_u64().map(|r| r >= 2 + 2 * 6), Some(true));
    // running_sums_are_exact_prefixes reaches no scrambled site (its loop is left as
    // written), broken_anyway fails unscrambled: the later runs run only the others.
    assert!(
        text.contains("orderdep: 3 of 4 tests reach a scrambled site"),
        "{text}"
    );
    assert!(
        text.contains("plain: 1 of 2 tests reach a scrambled site"),
        "{text}"
    );
    let golden = findings
        .iter()
        .find(|f| f["test"] == "tests::golden_total")
        .expect("golden finding");
    assert_eq!(golden["kind"], "fail");
    assert_eq!(golden["status"], "new");
    assert_eq!(golden["at"], "src/lib.rs:54:9", "the original file's line");
    assert_eq!(
        golden["blame"],
        serde_json::json!([{"site": "orderdep::total#reduction0", "file": "src/lib.rs", "line": 13}]),
        "golden_total needs total's reduction alone"
    );
    for f in ["findings.md", "junit.xml"] {
        assert!(out_dir.join(f).is_file(), "{f} written");
    }

    // A shard runs its own seeds only. Its --out is relative, to the directory cargo
    // fprev runs in, not to the copy the tests run in: the tests still say which of
    // them reach a scrambled site.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let shard_dir = tmp.join("cargo-fprev-shard");
    let _ = std::fs::remove_dir_all(&shard_dir);
    let shard = cargo_fprev()
        .current_dir(tmp)
        .args([
            "test",
            "--seeds",
            "3",
            "--shard",
            "2/2",
            "--out",
            "cargo-fprev-shard",
        ])
        .arg("--manifest-path")
        .arg(fixture().join("Cargo.toml"))
        .arg("--scratch")
        .arg(scratch())
        .output()
        .expect("shard");
    let seeds = findings_of(&shard_dir);
    assert_eq!(
        seeds["seed_ranges"],
        serde_json::json!([{"base": 0, "shard": {"index": 2, "count": 2}, "count": 1}]),
        "shard 2/2 of 3 seeds runs the second only: {}",
        show(&shard)
    );
    assert!(
        show(&shard).contains("orderdep: 3 of 4 tests reach a scrambled site"),
        "reach is learned with a relative --out: {}",
        show(&shard)
    );

    // Rounds side by side (the default after the first seed, with 2 or more cores) and
    // one at a time find the same failures under the same tokens.
    let serial_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-serial");
    // a findings.json left by an earlier run would be replayed first (more runs)
    let _ = std::fs::remove_dir_all(&serial_dir);
    let serial = cargo_fprev()
        .current_dir(fixture())
        .args([
            "test",
            "--seeds",
            "3",
            "--modes",
            "shapes,sattolo",
            "--jobs",
            "1",
        ])
        .arg("--out")
        .arg(&serial_dir)
        .arg("--scratch")
        .arg(scratch())
        .output()
        .expect("serial");
    let serial_json = findings_of(&serial_dir);
    let keys = |j: &serde_json::Value| -> Vec<String> {
        j["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                format!(
                    "{} {} {} {} {}",
                    f["test"], f["kind"], f["mode"], f["token"], f["at"]
                )
            })
            .collect()
    };
    assert_eq!(keys(&serial_json), keys(&json), "{}", show(&serial));
    assert_eq!(serial_json["seed_ranges"], json["seed_ranges"]);
    assert_eq!(serial_json["runs"], json["runs"]);

    // The finding replays alone, with the same values.
    let replay = cargo_fprev()
        .current_dir(fixture())
        .args(["replay", "--mode"])
        .arg(golden["mode"].as_str().expect("mode"))
        .arg(golden["token"].as_str().expect("token"))
        .arg("tests::golden_total")
        .arg("--scratch")
        .arg(scratch())
        .output()
        .expect("replay");
    let replayed = show(&replay);
    assert_eq!(replay.status.code(), Some(2), "{replayed}");
    let first_value = golden["message"]
        .as_str()
        .and_then(|m| m.lines().find(|l| l.trim_start().starts_with("left:")))
        .expect("the assertion's left value");
    assert!(
        replayed.contains(first_value.trim()),
        "same values: {first_value}\n{replayed}"
    );

    // The next night replays the findings of the last one first: the golden test still
    // fails, a finding that passes now (made up here: computed_twice never fails) is
    // fixed; both go into the night's report and into the merge of the two nights.
    let mut previous = json.clone();
    let mut passing = golden.clone();
    passing["test"] = "tests::computed_twice".into();
    previous["findings"]
        .as_array_mut()
        .expect("findings")
        .push(passing);
    let previous_file = tmp.join("cargo-fprev-previous.json");
    std::fs::write(&previous_file, previous.to_string()).expect("previous report");
    let night2_dir = tmp.join("cargo-fprev-night2");
    let _ = std::fs::remove_dir_all(&night2_dir);
    let night2 = cargo_fprev()
        .current_dir(fixture())
        .args(["test", "--seeds", "1", "--seed", "100", "--previous"])
        .arg(&previous_file)
        .arg("--out")
        .arg(&night2_dir)
        .arg("--scratch")
        .arg(scratch())
        .output()
        .expect("night 2");
    let night2_text = show(&night2);
    assert_eq!(night2.status.code(), Some(2), "{night2_text}");
    let night2_json = findings_of(&night2_dir);
    let still = night2_json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["token"] == golden["token"] && f["test"] == "tests::golden_total")
        .expect("the golden finding replayed");
    assert_eq!(still["status"], "still_failing", "{night2_text}");
    assert_eq!(
        night2_json["fixed"][0]["test"], "tests::computed_twice",
        "{night2_text}"
    );
    assert!(night2_text.contains("still_failing"), "{night2_text}");
    assert!(
        night2_text.contains("fixed: tests::computed_twice"),
        "{night2_text}"
    );
    let merged_file = tmp.join("cargo-fprev-nights.json");
    let merged = cargo_fprev()
        .arg("merge")
        .arg(out_dir.join("findings.json"))
        .arg(night2_dir.join("findings.json"))
        .arg("-o")
        .arg(&merged_file)
        .output()
        .expect("merge the nights");
    assert_eq!(merged.status.code(), Some(2), "{}", show(&merged));
    let nights: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_file).expect("merged"))
            .expect("json");
    assert_findings_schema(&nights);
    let merged_golden = nights["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["token"] == golden["token"] && f["test"] == "tests::golden_total")
        .expect("golden in the merge");
    assert_eq!(merged_golden["status"], "still_failing");
    assert_eq!(merged_golden["seen"], 2);
}

#[test]
fn in_diff_annotates_only_what_a_diff_touches() {
    let diff = std::env::temp_dir().join(format!("fprev-in-diff-{}.patch", std::process::id()));
    std::fs::write(
        &diff,
        "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -19,1 +19,1 @@\n-x\n+y\n",
    )
    .expect("write the diff");
    let out = cargo_fprev()
        .current_dir(fixture())
        .args(["scan", "--in-diff"])
        .arg(&diff)
        .output()
        .expect("scan");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", show(&out));
    assert!(text.contains("src/lib.rs:18: fn mean"), "{text}");
    assert!(!text.contains("fn total"), "{text}");
    std::fs::write(&diff, "--- a/README\n+++ b/README\n@@ -1 +1 @@\n-a\n+b\n").expect("write");
    let out = cargo_fprev()
        .current_dir(fixture())
        .args(["scan", "--in-diff"])
        .arg(&diff)
        .output()
        .expect("scan");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        show(&out).contains("the diff touches no function"),
        "{}",
        show(&out)
    );
}

#[test]
fn merge_joins_findings_and_refuses_what_would_lose_data() {
    let dir = std::env::temp_dir().join(format!("fprev-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let finding = |token: &str| {
        serde_json::json!({
            "test": "t", "package": "p", "target": "p", "kind": "fail", "mode": "shapes",
            "token": token, "replay": null, "message": "m", "at": null, "coverage": null,
            "sites": [], "blame": null, "status": "new", "seen": 1
        })
    };
    let doc = |id: &str, tokens: &[&str], runs: u64| {
        serde_json::json!({
            "schema": "fprev-findings", "version": 1, "fprev": "0", "ids": [id],
            "finished": "2026-01-01T00:00:00Z",
            "findings": tokens.iter().map(|t| finding(t)).collect::<Vec<_>>(),
            "fixed": [], "unscrambled_failures": ["broken"], "not_reproduced": [],
            "runs": runs,
            "seed_ranges": [{"base": 0, "shard": {"index": 1, "count": 1}, "count": 2}],
            "modes": ["shapes"], "functions_annotated": 1, "coverage": [], "tests": 3,
            "wall_s": 1.0, "interrupted": false, "build_s": 0.5, "unscrambled_s": 0.1,
            "scrambled_s": "inf", "processes": [], "campaigns": null
        })
    };
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&a, doc("a", &["v-1", "v-2"], 10).to_string()).expect("a");
    std::fs::write(&b, doc("b", &["v-2", "v-3"], 7).to_string()).expect("b");
    let merged_file = dir.join("merged.json");
    let out = cargo_fprev()
        .args(["merge"])
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&merged_file)
        .output()
        .expect("merge");
    assert_eq!(out.status.code(), Some(2), "findings: {}", show(&out));
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged_file).expect("merged"))
            .expect("json");
    assert_findings_schema(&merged);
    assert_eq!(merged["runs"], 17);
    assert_eq!(merged["findings"].as_array().map(Vec::len), Some(3));
    assert_eq!(merged["scrambled_s"], "inf", "an infinity stays one");
    assert_eq!(
        merged["unscrambled_failures"],
        serde_json::json!(["broken"])
    );
    std::fs::write(dir.join("c.json"), doc("a", &[], 1).to_string()).expect("c");
    for (args, words) in [
        (vec![a.clone(), a.clone()], "are the same file"),
        (
            vec![a.clone(), b.clone(), "-o".into(), a.clone()],
            "names the input",
        ),
        (vec![a.clone(), dir.join("c.json")], "both hold the run a"),
        (vec![merged_file.clone(), b.clone()], "both hold the run b"),
    ] {
        let out = cargo_fprev()
            .arg("merge")
            .args(&args)
            .output()
            .expect("merge");
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        assert!(show(&out).contains(words), "{}", show(&out));
    }
    std::fs::write(&b, r#"{"findings": []}"#).expect("b");
    let out = cargo_fprev()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .output()
        .expect("merge");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        show(&out).contains("a findings.json of an earlier cargo fprev"),
        "{}",
        show(&out)
    );
}

#[test]
fn scan_says_what_the_attribute_decides_for_each_loop_and_chain() {
    let before = std::fs::read_dir(fixture()).expect("fixture").count();
    let out = cargo_fprev()
        .current_dir(fixture())
        .args(["fprev", "scan"])
        .output()
        .expect("scan");
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "\
src/lib.rs:10: fn total
  src/lib.rs:13:9   scrambled   for loop: reduction into `s` (total#reduction0)
src/lib.rs:18: fn mean
  src/lib.rs:19:14  scrambled   iterator reduction (mean#sum0)
src/lib.rs:29: fn running
  src/lib.rs:32:5   left alone  for loop: integer accumulator: every term added to `positive` is an integer, which any order adds the same
  src/lib.rs:32:5   left alone  for loop: order-carrying: reads `s` besides adding to `s`
3 function(s) accumulate: 2 site(s) scrambled, 2 left alone (order-carrying 1, integer accumulator 1)
",
        "{}",
        show(&out)
    );
    assert_eq!(
        std::fs::read_dir(fixture()).expect("fixture").count(),
        before,
        "scan writes nothing into the user's tree (no copy, no build)"
    );

    let out = cargo_fprev()
        .current_dir(fixture())
        .args(["scan", "--json", "-p", "orderdep"])
        .output()
        .expect("scan --json");
    assert!(out.status.success(), "{}", show(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let functions = doc["functions"].as_array().expect("functions");
    let seen: Vec<(String, u64, u64, String, String, String)> = functions
        .iter()
        .flat_map(|f| {
            let name = f["name"].as_str().unwrap_or("").to_string();
            assert_eq!(f["package"], "orderdep");
            assert_eq!(f["file"], "src/lib.rs");
            f["decisions"]
                .as_array()
                .expect("decisions")
                .iter()
                .map(move |d| {
                    (
                        name.clone(),
                        d["line"].as_u64().unwrap_or(0),
                        d["column"].as_u64().unwrap_or(0),
                        d["construct"].as_str().unwrap_or("").to_string(),
                        d["outcome"].as_str().unwrap_or("").to_string(),
                        d["place"]
                            .as_str()
                            .or(d["reason_kind"].as_str())
                            .unwrap_or("")
                            .to_string(),
                    )
                })
        })
        .collect();
    let row = |n: &str, l: u64, c: u64, what: &str, outcome: &str, detail: &str| {
        (
            n.to_string(),
            l,
            c,
            what.to_string(),
            outcome.to_string(),
            detail.to_string(),
        )
    };
    assert_eq!(
        seen,
        [
            row("total", 13, 9, "for_loop", "scrambled", "s"),
            row("mean", 19, 14, "iter_reduction", "scrambled", ""),
            row(
                "running",
                32,
                5,
                "for_loop",
                "left_alone",
                "integer_accumulator"
            ),
            row("running", 32, 5, "for_loop", "left_alone", "order_carrying"),
        ]
    );
    assert_eq!(
        functions[2]["decisions"][1]["reason"],
        "order-carrying: reads `s` besides adding to `s`"
    );
    // The totals are the decisions counted.
    let count = |outcome: &str| seen.iter().filter(|r| r.4 == outcome).count();
    let totals = &doc["totals"];
    assert_eq!(totals["functions"], functions.len());
    assert_eq!(totals["scrambled"], count("scrambled"));
    assert_eq!(totals["left_alone"], count("left_alone"));
    let by_reason = totals["left_alone_by_reason"]
        .as_object()
        .expect("by reason");
    assert_eq!(
        by_reason.values().filter_map(|v| v.as_u64()).sum::<u64>(),
        count("left_alone") as u64
    );
    for kind in ["integer_accumulator", "order_carrying"] {
        assert_eq!(by_reason[kind], 1, "{kind}");
    }
    assert_eq!(totals["errors"], 0);
}

#[test]
fn bad_input_is_an_error_with_exit_status_1() {
    // Outside fprev's own workspace (CARGO_TARGET_TMPDIR is inside it).
    let empty = std::env::temp_dir().join(format!("fprev-not-a-project-{}", std::process::id()));
    std::fs::create_dir_all(&empty).expect("dir");
    let fixture = fixture();
    let scratch = scratch().display().to_string();
    // not the default `fprev.out`, which would land in the fixture's folder
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cargo-fprev-bad-input")
        .display()
        .to_string();
    let cases: Vec<(Vec<&str>, &Path, &str)> = vec![
        (
            vec!["test", "--jobs", "0"],
            &fixture,
            "--jobs 0 runs nothing",
        ),
        (
            vec!["test", "--timeout-factor", "1e308"],
            &fixture,
            "must be a number from 1 to 10000",
        ),
        (
            vec![
                "test",
                "--scratch",
                &scratch,
                "--out",
                &out_dir,
                "--",
                "--bogus-flag",
            ],
            &fixture,
            "ran no test and failed: error: Unrecognized option: 'bogus-flag'",
        ),
        (vec!["test"], &empty, "not a cargo project"),
        (vec!["scan", "--json"], &empty, "not a cargo project"),
        (vec!["scan", "-p", "nope"], &fixture, "no package `nope`"),
        (
            vec!["test", "--modes", "junk"],
            &fixture,
            "unknown mode `junk`",
        ),
        (vec!["test", "--seeds", "0"], &fixture, "--seeds 0"),
        (
            vec!["replay", "banana", "t"],
            &fixture,
            "is not a replay token",
        ),
    ];
    for (args, dir, words) in cases {
        let out = cargo_fprev()
            .current_dir(dir)
            .args(&args)
            .output()
            .expect("run");
        let text = show(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(
            text.contains(words),
            "{args:?} should say {words:?}: {text}"
        );
    }
}

#[test]
fn chains_reports_the_suites_accumulations_at_their_original_lines() {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-chains-out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let run = || {
        cargo_fprev()
            .current_dir(fixture())
            .args(["fprev", "chains", "--out"])
            .arg(&out_dir)
            .arg("--scratch")
            .arg(scratch())
            .output()
            .expect("run cargo-fprev chains")
    };
    let out = run();
    let text = show(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let report = std::fs::read_to_string(out_dir.join("chains.txt")).expect("chains.txt");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&report),
        "{text}"
    );
    // Both sites, at the fixture's own lines: the attribute went on the function's line.
    let lines: Vec<&str> = report.lines().collect();
    let total = lines
        .iter()
        .find(|l| l.contains("orderdep::total src/lib.rs:13:9 `s += x` (variable)"))
        .unwrap_or_else(|| panic!("the loop of total: {text}"));
    assert!(
        lines.iter().any(
            |l| l.contains("orderdep::mean src/lib.rs:19:5 `v.iter().sum::<f64>()` (iterator)")
        ),
        "the sum of mean: {text}"
    );
    // The prefix sum is ranked last, as #[scramble] leaves it: order is its meaning.
    assert!(
        lines.last().is_some_and(|l| l.contains(
            "orderdep::running src/lib.rs:33:9 `s += x` (variable) [running value: order is meaning]"
        )),
        "the running value: {text}"
    );
    // Every test that calls total adds 2000 terms in one chain (plus the 100 of
    // mean_is_close), sequentially: the longest chain is the trip count.
    let max_chain: u64 = total
        .split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .expect("max chain");
    assert_eq!(max_chain, 2000, "{text}");
    assert!(total.contains("sequential"), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 test(s) failed")
            && text.contains("broken_anyway"),
        "the failing test is named: {text}"
    );
    // A second run replaces the counts rather than adding to them.
    let again = run();
    assert_eq!(again.status.code(), Some(0), "{}", show(&again));
    let second = std::fs::read_to_string(out_dir.join("chains.txt")).expect("chains.txt");
    assert_eq!(
        second.lines().skip(1).collect::<Vec<_>>(),
        lines[1..].to_vec(),
        "the same suite gives the same report"
    );
}

#[test]
fn a_workspace_as_published_crates_make_them() {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/realws");
    let scan = cargo_fprev()
        .current_dir(&ws)
        .args(["fprev", "scan"])
        .output()
        .expect("scan");
    let text = show(&scan);
    assert_eq!(scan.status.code(), Some(0), "{text}");
    for f in [
        "core/src/lib.rs:11: fn total",
        "core/src/lib.rs:20: fn extra_total",
    ] {
        assert!(text.contains(f), "{f}: {text}");
    }
    // syn reads no `&Fn(f64) -> f64` (edition 2015): that one item is left as it is,
    // with a note, and the rest of the file is read item by item.
    assert!(
        !text.contains("fn apply") && !text.contains("fn three"),
        "{text}"
    );
    assert!(
        text.contains("core/src/lib.rs does not parse as a whole"),
        "{text}"
    );
    assert!(
        text.contains("wspm is a proc-macro package"),
        "the proc-macro member is named: {text}"
    );
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-realws-out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = cargo_fprev()
        .current_dir(&ws)
        .args([
            "fprev",
            "test",
            "--seeds",
            "2",
            "--features",
            "extra",
            "--out",
        ])
        .arg(&out_dir)
        .arg("--scratch")
        .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-realws"))
        // fprev's own build is shared with the other tests' copy.
        .arg("--target-dir")
        .arg(scratch().join("target"))
        .output()
        .expect("test");
    let text = show(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let json = findings_of(&out_dir);
    let mut tests: Vec<&str> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["test"].as_str())
        .collect();
    tests.sort();
    tests.dedup();
    // The declared test target ran, with the feature on and the build script's output.
    assert_eq!(tests, ["extra_golden", "golden"], "{text}");
    assert_eq!(
        json["unscrambled_failures"],
        serde_json::json!([]),
        "{text}"
    );
}

/// Inputs are read with a cap (`--max-input-bytes`): a device that never ends, or a
/// file past the cap, is an error naming the flag, never a read without bound.
#[test]
fn merge_and_in_diff_read_at_most_max_input_bytes() {
    let dir = std::env::temp_dir().join(format!("fprev-capped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let big = dir.join("big.json");
    std::fs::write(&big, " ".repeat(5000)).expect("big");
    for (args, words) in [
        (
            vec!["merge", "/dev/zero"],
            "larger than 67108864 bytes (--max-input-bytes)",
        ),
        (
            vec![
                "merge",
                "--max-input-bytes",
                "4K",
                big.to_str().expect("utf-8"),
            ],
            "larger than 4096 bytes (--max-input-bytes)",
        ),
        (
            vec!["scan", "--in-diff", "/dev/zero", "--max-input-bytes", "1M"],
            "--in-diff /dev/zero: larger than 1048576 bytes (--max-input-bytes)",
        ),
    ] {
        let out = cargo_fprev()
            .args(&args)
            .current_dir(fixture())
            .output()
            .expect("cargo fprev");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", show(&out));
        assert!(show(&out).contains(words), "{args:?}: {}", show(&out));
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Ctrl-C while cargo fprev builds or runs: exit status 130 and `interrupted`, never a
/// build failure the user did not cause.
#[test]
fn an_interrupt_ends_with_130_and_says_so() {
    use std::io::{BufRead, BufReader};
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fprev-interrupted");
    let mut child = cargo_fprev()
        .current_dir(fixture())
        .args(["test", "--seeds", "1000", "--out"])
        .arg(&out_dir)
        .arg("--scratch")
        .arg(scratch())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("cargo-fprev");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut text = String::new();
    // once it builds (the handler is set), interrupt it, as a terminal's Ctrl-C does
    while stderr.read_line(&mut text).expect("stderr") > 0 {
        if text.contains("building the tests once") {
            break;
        }
    }
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on a child of this test that has not been waited for yet
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    std::io::Read::read_to_string(&mut stderr, &mut text).expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("cargo fprev: interrupted"), "{text}");
    assert!(!text.contains("do not build"), "{text}");
}

#[test]
fn a_monorepo_member_with_fprev_a_custom_harness_and_a_child_process() {
    // Before: the copy did not build (`shared` is outside the workspace root, and the
    // message blamed the user's tests), nor could it read `shared/golden.txt`; the harness = false target's replay said `no
    // test named golden`; the parent test that runs its own binary lost its finding to
    // the child after the first seed; the assert_reproducible! test failed unscrambled.
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/monorepo/ws");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let out_dir = tmp.join("cargo-fprev-monorepo-out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let copy = |cmd: &mut Command| {
        cmd.current_dir(&ws)
            .arg("--scratch")
            .arg(tmp.join("cargo-fprev-monorepo"))
            // fprev's own build is shared with the other tests' copy.
            .arg("--target-dir")
            .arg(scratch().join("target"));
    };
    let mut test = cargo_fprev();
    test.args(["test", "--seeds", "2", "--out"]).arg(&out_dir);
    copy(&mut test);
    let out = test.output().expect("test");
    let text = show(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let json = findings_of(&out_dir);
    let found = |test: &str| -> Vec<&serde_json::Value> {
        json["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["test"] == test)
            .collect()
    };
    for t in [
        "tests::golden_total",
        "tests::golden_from_a_file_outside_the_workspace",
        "tests::parent_reads_its_child",
        "total_is_reproducible",
        "golden",
    ] {
        assert_eq!(found(t).len(), 2, "{t} fails under both seeds: {text}");
    }
    assert_eq!(
        json["unscrambled_failures"],
        serde_json::json!([]),
        "{text}"
    );
    assert_eq!(json["not_reproduced"], serde_json::json!([]), "{text}");
    let golden = found("golden")[0];
    assert_eq!(golden["target"], "golden_main");
    let replay = golden["replay"].as_str().expect("a replay command");
    assert!(replay.contains("--target golden_main"), "{replay}");
    // the printed command replays it
    let words: Vec<&str> = replay.split_whitespace().collect();
    assert_eq!(words[..2], ["cargo", "fprev"], "{replay}");
    let mut again = cargo_fprev();
    again.args(&words[2..]);
    copy(&mut again);
    let again = again.output().expect("replay");
    assert_eq!(again.status.code(), Some(2), "{}", show(&again));
    assert!(
        show(&again).contains("golden FAILED under FPREV_SCRAMBLE=shapes"),
        "{}",
        show(&again)
    );
}
