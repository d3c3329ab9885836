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
