//! Every `FPREV_*` variable fprev's own code reads is registered, so setting it never
//! draws the unknown-variable warning: a setting of the library in `scramble::vars::KNOWN`,
//! a variable of the repository's own tests and examples in `scramble::vars::DEVELOPMENT`.
//! No variable is in both lists, and every development variable is still read (by name,
//! or by the runtime's reader of it).

use std::path::Path;

/// Quoted `FPREV_*` names that are not environment variables (CUDA prelude macros).
const NOT_VARIABLES: &[&str] = &["FPREV_SCRAMBLE_PARAMS", "FPREV_SCRAMBLE_BEGIN"];

fn quoted_names(dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            quoted_names(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for (at, _) in text.match_indices("\"FPREV_") {
                let name: String = text[at + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                // a whole quoted name, not a prefix in a search like this file's
                if name.len() > "FPREV_".len() && text[at + 1 + name.len()..].starts_with('"') {
                    out.push((name, path.display().to_string()));
                }
            }
        }
    }
}

#[test]
fn every_variable_read_is_known() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut names = Vec::new();
    for dir in [
        "src",
        "tests",
        "examples",
        "benches",
        "fprev-runtime",
        "fprev-macros",
        "fprev-expand",
    ] {
        quoted_names(&root.join(dir), &mut names);
    }
    assert!(
        names.iter().any(|(n, _)| n == "FPREV_SEED"),
        "the scan found nothing"
    );
    let (known, development) = (
        fprev::scramble::vars::KNOWN,
        fprev::scramble::vars::DEVELOPMENT,
    );
    for (name, file) in &names {
        if NOT_VARIABLES.contains(&name.as_str()) {
            continue;
        }
        assert!(
            known.contains(&name.as_str()) || development.contains(&name.as_str()),
            "{file} reads {name}, which is in neither scramble::vars::KNOWN nor DEVELOPMENT"
        );
    }
    // Development variables are read by name, as literals, or by the runtime's one reader
    // of a variable every seeded test calls (`scramble::proptest_cases`): one that nothing
    // reads any more has no place in the list.
    let config = std::fs::read_to_string(root.join("fprev-runtime/src/scramble/config.rs"))
        .expect("the runtime's settings are readable");
    for name in development {
        assert!(
            names
                .iter()
                .any(|(n, file)| n == name && !file.ends_with("config.rs"))
                || config.contains(&format!("env::var(vars::{name})")),
            "{name} is a development variable but nothing reads it"
        );
    }
    for name in development {
        assert!(
            !known.contains(name),
            "{name} is both a user setting and a development variable"
        );
    }
}
