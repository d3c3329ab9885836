//! What the `fprev` binary's integration tests share: running it as users do, reading
//! its output, a scratch folder per test file.
#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built `fprev` with `args` from the package folder.
pub fn fprev(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fprev"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run fprev")
}

/// The built `cargo-fprev`, to be given its arguments and folder.
pub fn cargo_fprev() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cargo-fprev"))
}

/// A run's status and both of its outputs, for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    )
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A path named `name` in the scratch folder `dir` of this package's test target folder.
pub fn scratch(dir: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("tmp dir");
    dir.join(name)
}

/// The JSON Schema of findings reports that the docs publish, with `root` as its root:
/// `None` for the report, `Some(def)` for one of its `$defs`.
fn findings_schema(root: Option<&str>) -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/findings.schema.json");
    let text = std::fs::read_to_string(path).expect("docs/findings.schema.json");
    let mut schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    if let Some(def) = root {
        schema = serde_json::json!({
            "$schema": schema["$schema"],
            "$defs": schema["$defs"],
            "$ref": format!("#/$defs/{def}"),
        });
    }
    jsonschema::validator_for(&schema).expect("the schema is a JSON Schema")
}

fn assert_valid(validator: &jsonschema::Validator, doc: &serde_json::Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .take(5)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not follow docs/findings.schema.json: {errors:#?}\n{doc:#}"
    );
}

/// Asserts that `doc` is a findings report as docs/findings.schema.json defines it.
pub fn assert_findings_schema(doc: &serde_json::Value) {
    assert_valid(&findings_schema(None), doc, "the findings report");
}

/// Asserts that `doc` is a process report (`FPREV_REPORT`) as the schema's
/// `$defs/process_report` defines it.
pub fn assert_process_report_schema(doc: &serde_json::Value) {
    assert_valid(
        &findings_schema(Some("process_report")),
        doc,
        "the process report",
    );
}
