//! What `cargo fprev test` found, and the files it writes: `findings.json` (the schema is
//! in docs/cargo-fprev.md, field by field), `findings.md` and `junit.xml`.

use std::fmt::Write as _;

use crate::escape::{cell, xml};

/// A test that fails scrambled, passes unscrambled and fails again alone with the same
/// token: the order dependence is real and replays.
#[derive(Clone, Debug)]
pub struct Finding {
    pub test: String,
    pub package: String,
    /// The test binary's target (`lib`'s name, or the integration test file's).
    pub target: String,
    /// `fail` or `timeout`.
    pub kind: &'static str,
    pub mode: String,
    pub token: String,
    /// The command that replays it.
    pub replay: String,
    /// The panic message (or, for a timeout, how long it ran).
    pub message: String,
    /// `file:line:column` of the panic, when it printed one.
    pub at: Option<String>,
    /// Scrambled sites the failing run reached (its coverage line).
    pub coverage: Option<String>,
    /// The scramble sites the failing run reached.
    pub sites: Vec<crate::blame::Site>,
    /// The smallest set of them whose scrambling alone fails the test (`--blame`).
    pub blame: Option<Vec<crate::blame::Site>>,
}

fn sites_json(sites: &[crate::blame::Site]) -> serde_json::Value {
    sites
        .iter()
        .map(|s| serde_json::json!({"site": s.label, "file": s.file, "line": s.line}))
        .collect()
}

/// Everything one `cargo fprev test` found.
#[derive(Debug, Default)]
pub struct Summary {
    pub findings: Vec<Finding>,
    pub unscrambled_failures: Vec<String>,
    /// Tests that failed scrambled but passed when re-run alone with the same token:
    /// flaky on their own (threads, time), not findings.
    pub not_reproduced: Vec<String>,
    pub runs: usize,
    pub seeds: Vec<String>,
    pub modes: Vec<String>,
    pub functions_annotated: usize,
    /// Per test binary, the coverage line of its first scrambled run: sites compiled in,
    /// reached, loops left alone.
    pub coverage: Vec<(String, String)>,
    pub tests: usize,
    pub wall_s: f64,
    /// Stopped by Ctrl-C (SIGINT) or SIGTERM before the last run.
    pub interrupted: bool,
    /// Seconds spent building the copy's tests, in the unscrambled runs and in the
    /// scrambled runs (the rest of `wall_s` went to confirming and blaming failures).
    pub build_s: f64,
    pub unscrambled_s: f64,
    pub scrambled_s: f64,
}

fn json_str(s: &str) -> serde_json::Value {
    serde_json::Value::String(s.to_string())
}

impl Summary {
    pub fn to_json(&self) -> String {
        let findings: Vec<serde_json::Value> = self
            .findings
            .iter()
            .map(|f| {
                serde_json::json!({
                    "test": f.test,
                    "package": f.package,
                    "target": f.target,
                    "kind": f.kind,
                    "mode": f.mode,
                    "token": f.token,
                    "replay": f.replay,
                    "message": f.message,
                    "at": f.at,
                    "coverage": f.coverage,
                    "sites": sites_json(&f.sites),
                    "blame": f.blame.as_deref().map(sites_json),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "findings": findings,
            "unscrambled_failures": self.unscrambled_failures,
            "not_reproduced": self.not_reproduced,
            "runs": self.runs,
            "seeds": self.seeds.iter().map(|s| json_str(s)).collect::<Vec<_>>(),
            "modes": self.modes,
            "functions_annotated": self.functions_annotated,
            "coverage": self
                .coverage
                .iter()
                .map(|(t, c)| serde_json::json!({"target": t, "coverage": c}))
                .collect::<Vec<_>>(),
            "tests": self.tests,
            "wall_s": self.wall_s,
            "interrupted": self.interrupted,
            "build_s": self.build_s,
            "unscrambled_s": self.unscrambled_s,
            "scrambled_s": self.scrambled_s,
        });
        serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
    }

    /// The table the command prints, as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# cargo fprev test\n\n{} finding(s) in {} runs ({} tests, {} functions annotated, \
             seeds {}, modes {}), {:.0} s.\n",
            self.findings.len(),
            self.runs,
            self.tests,
            self.functions_annotated,
            self.seeds.len(),
            self.modes.join(", "),
            self.wall_s
        );
        if !self.findings.is_empty() {
            s.push_str("| test | kind | mode | token | first assertion | replay |\n");
            s.push_str("|---|---|---|---|---|---|\n");
            for f in &self.findings {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | `{}` | {} | `{}` |",
                    cell(&f.test, true),
                    f.kind,
                    f.mode,
                    f.token,
                    cell(f.at.as_deref().unwrap_or("-"), true),
                    cell(&f.replay, true)
                );
            }
        }
        if !self.unscrambled_failures.is_empty() {
            let _ = writeln!(
                s,
                "\nFailing unscrambled (not findings): {}",
                self.unscrambled_failures
                    .iter()
                    .map(|t| cell(t, true))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !self.not_reproduced.is_empty() {
            let _ = writeln!(
                s,
                "\nFailed scrambled but passed alone with the same token (not findings): {}",
                self.not_reproduced
                    .iter()
                    .map(|t| cell(t, true))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        s
    }

    pub fn to_junit(&self) -> String {
        let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            s,
            "<testsuite name=\"cargo-fprev\" tests=\"{}\" failures=\"{}\">",
            self.findings.len(),
            self.findings.len()
        );
        for f in &self.findings {
            let _ = writeln!(
                s,
                "  <testcase classname=\"{}\" name=\"{} [{} {}]\">\n    <failure message=\"{}\">{}</failure>\n  </testcase>",
                xml(&f.package, true),
                xml(&f.test, true),
                xml(&f.mode, true),
                xml(&f.token, true),
                xml(f.kind, true),
                xml(&format!("{}\nreplay: {}", f.message, f.replay), false)
            );
        }
        s.push_str("</testsuite>\n");
        s
    }
}

/// Joins findings.json documents (already checked to have the top-level fields).
pub fn merge(docs: &[serde_json::Value]) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    let mut findings: Vec<Value> = Vec::new();
    let mut keys = std::collections::HashSet::new();
    let mut lists: [(&str, Vec<Value>); 4] = [
        ("unscrambled_failures", Vec::new()),
        ("not_reproduced", Vec::new()),
        ("seeds", Vec::new()),
        ("modes", Vec::new()),
    ];
    let mut runs: u64 = 0;
    let mut wall = 0.0f64;
    let mut coverage: Vec<Value> = Vec::new();
    let mut functions = 0u64;
    let mut tests = 0u64;
    for (i, d) in docs.iter().enumerate() {
        for f in d["findings"]
            .as_array()
            .ok_or(format!("input {}: findings is not a list", i + 1))?
        {
            let key = (
                f["test"].to_string(),
                f["mode"].to_string(),
                f["token"].to_string(),
            );
            if keys.insert(key) {
                findings.push(f.clone());
            }
        }
        for (field, acc) in lists.iter_mut() {
            for v in d[*field].as_array().into_iter().flatten() {
                if !acc.contains(v) {
                    acc.push(v.clone());
                }
            }
        }
        let r = d["runs"]
            .as_u64()
            .ok_or(format!("input {}: runs is not a count", i + 1))?;
        runs = runs
            .checked_add(r)
            .ok_or(format!("input {}: runs overflow", i + 1))?;
        wall += d["wall_s"].as_f64().unwrap_or(0.0);
        functions = functions.max(d["functions_annotated"].as_u64().unwrap_or(0));
        tests = tests.max(d["tests"].as_u64().unwrap_or(0));
        for c in d["coverage"].as_array().into_iter().flatten() {
            if !coverage.contains(c) {
                coverage.push(c.clone());
            }
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("findings".into(), Value::Array(findings));
    for (field, acc) in lists {
        out.insert(field.into(), Value::Array(acc));
    }
    out.insert("runs".into(), runs.into());
    out.insert("functions_annotated".into(), functions.into());
    out.insert("tests".into(), tests.into());
    out.insert("coverage".into(), Value::Array(coverage));
    out.insert("wall_s".into(), wall.into());
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(test: &str) -> Finding {
        Finding {
            test: test.into(),
            package: "p".into(),
            target: "p".into(),
            kind: "fail",
            mode: "shapes".into(),
            token: "v3-0000000000000001".into(),
            replay: "cargo fprev replay v3-0000000000000001 t".into(),
            message: "a <b> & \u{0}".into(),
            at: Some("src/lib.rs:3:5".into()),
            coverage: None,
            sites: Vec::new(),
            blame: None,
        }
    }

    #[test]
    fn reports_escape_what_their_formats_cannot_carry() {
        let s = Summary {
            findings: vec![finding("odd|name\nx")],
            ..Summary::default()
        };
        let md = s.to_markdown();
        assert!(md.contains("odd\\|name<br>x"), "{md}");
        let junit = s.to_junit();
        assert!(junit.contains("a &lt;b&gt; &amp; \\x00"), "{junit}");
        assert!(!junit.contains('\u{0}'));
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).expect("json");
        assert_eq!(json["findings"][0]["test"], "odd|name\nx");
        assert_eq!(json["findings"][0]["kind"], "fail");
    }
}
