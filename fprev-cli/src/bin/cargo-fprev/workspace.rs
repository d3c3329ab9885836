//! The user's workspace as cargo describes it, and the scratch copy that is annotated,
//! built and run: its files, mirrored and synced, and the lock on its folder (its
//! manifests are edited in `copy_manifests`). The user's own tree is only ever read.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cli_output::CargoFprevError;

/// A package of the workspace that is annotated.
#[derive(Clone, Debug)]
pub struct Package {
    pub name: String,
    /// Its directory, relative to the workspace root.
    pub dir: PathBuf,
    /// Directories of its library and binary targets' sources, relative to the root.
    pub src_dirs: Vec<PathBuf>,
    /// A proc-macro package: its functions run in the compiler, not in the tests.
    pub proc_macro: bool,
}

/// What `cargo metadata` says of the workspace the command runs in.
#[derive(Debug)]
pub struct CargoWorkspace {
    pub root: PathBuf,
    pub members: Vec<Package>,
}

/// Reads the workspace of the current directory (`cargo metadata --no-deps`).
pub fn locate(manifest_path: Option<&Path>) -> Result<CargoWorkspace, CargoFprevError> {
    let mut cmd = Command::new(cargo());
    cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
    if let Some(m) = manifest_path {
        cmd.arg("--manifest-path").arg(m);
    }
    let out = cmd
        .output()
        .map_err(|e| CargoFprevError(format!("cannot run cargo: {e}")))?;
    if !out.status.success() {
        return Err(CargoFprevError(format!(
            "not a cargo project here (cargo metadata failed):\n{}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        )));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| CargoFprevError(format!("cargo metadata printed no JSON: {e}")))?;
    let root = PathBuf::from(
        meta["workspace_root"]
            .as_str()
            .ok_or_else(|| CargoFprevError("cargo metadata: no workspace_root".into()))?,
    );
    let ids: Vec<&str> = meta["workspace_members"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let mut members = Vec::new();
    for p in meta["packages"].as_array().into_iter().flatten() {
        if !ids.contains(&p["id"].as_str().unwrap_or("")) {
            continue;
        }
        let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or(""));
        let dir = manifest
            .parent()
            .and_then(|d| d.strip_prefix(&root).ok())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut src_dirs = Vec::new();
        let mut proc_macro = false;
        for t in p["targets"].as_array().into_iter().flatten() {
            let kinds: Vec<&str> = t["kind"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
                .unwrap_or_default();
            proc_macro |= kinds.contains(&"proc-macro");
            let code = kinds.iter().any(|k| {
                matches!(
                    *k,
                    "lib" | "rlib" | "bin" | "cdylib" | "dylib" | "staticlib"
                )
            });
            if !code {
                continue;
            }
            let src = PathBuf::from(t["src_path"].as_str().unwrap_or(""));
            if let Some(d) = src.parent().and_then(|d| d.strip_prefix(&root).ok()) {
                if !src_dirs.iter().any(|s: &PathBuf| d.starts_with(s)) {
                    src_dirs.retain(|s: &PathBuf| !s.starts_with(d));
                    src_dirs.push(d.to_path_buf());
                }
            }
        }
        members.push(Package {
            name: p["name"].as_str().unwrap_or("").to_string(),
            dir,
            src_dirs,
            proc_macro,
        });
    }
    Ok(CargoWorkspace { root, members })
}

/// `$CARGO` when cargo runs us as a subcommand, else `cargo`.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The scratch directory of a workspace: the same on every call, so a later `replay`
/// reuses the copy's build. Under the system's temporary directory unless `FPREV_SCRATCH`
/// is set... by `--scratch DIR`.
pub fn scratch_dir(root: &Path, over: Option<&Path>) -> PathBuf {
    if let Some(d) = over {
        return d.to_path_buf();
    }
    let mut h = DefaultHasher::new();
    root.hash(&mut h);
    let name = root
        .file_name()
        .map_or_else(|| "workspace".into(), |n| n.to_string_lossy().into_owned());
    std::env::temp_dir().join(format!("cargo-fprev-{name}-{:016x}", h.finish()))
}

/// The files of the workspace to copy: git's view (tracked, and untracked but not
/// ignored) when the root is in a git work tree, else every file outside `target/` and
/// `.git/`. `Cargo.lock` always comes along, so the copy builds the same versions.
pub fn files(root: &Path) -> Result<Vec<PathBuf>, CargoFprevError> {
    let git = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    let mut out: Vec<PathBuf> = match git {
        Ok(o) if o.status.success() => o
            .stdout
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| PathBuf::from(String::from_utf8_lossy(s).into_owned()))
            .filter(|p| root.join(p).is_file())
            .collect(),
        _ => {
            let mut v = Vec::new();
            walk(root, Path::new(""), &mut v)?;
            v
        }
    };
    // cargo fprev's own output folders (a previous run's logs can be gigabytes): never
    // copied, wherever --out put them
    let tagged: Vec<PathBuf> = out
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == CACHEDIR_TAG))
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    out.retain(|p| !tagged.iter().any(|dir| p.starts_with(dir)));
    if root.join("Cargo.lock").is_file() && !out.iter().any(|p| p == Path::new("Cargo.lock")) {
        out.push(PathBuf::from("Cargo.lock"));
    }
    Ok(out)
}

/// The file that marks a folder as cargo fprev's output (the Cache Directory Tagging
/// convention, so backup tools pass it over too).
const CACHEDIR_TAG: &str = "CACHEDIR.TAG";

/// Creates the output folder `out` with its `logs/` folder, tagged so that no later
/// copy of the workspace takes it along; returns the `logs/` folder.
pub fn create_out(out: &Path) -> Result<PathBuf, CargoFprevError> {
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", logs.display())))?;
    let tag = out.join(CACHEDIR_TAG);
    if !tag.is_file() {
        std::fs::write(
            &tag,
            "Signature: 8a477f597d28d172789f06886806bc55\n\
             # This folder holds cargo fprev's output: copies of the workspace leave it out.\n",
        )
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", tag.display())))?;
    }
    Ok(logs)
}

fn walk(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), CargoFprevError> {
    let dir = root.join(rel);
    let entries =
        std::fs::read_dir(&dir).map_err(|e| CargoFprevError(format!("{}: {e}", dir.display())))?;
    for e in entries {
        let e = e.map_err(|e| CargoFprevError(format!("{}: {e}", dir.display())))?;
        let name = e.file_name();
        if rel.as_os_str().is_empty() && (name == "target" || name == ".git") {
            continue;
        }
        let path = rel.join(&name);
        let ty = e
            .file_type()
            .map_err(|e| CargoFprevError(format!("{}: {e}", path.display())))?;
        if ty.is_dir() {
            walk(root, &path, out)?;
        } else if ty.is_file() {
            out.push(path);
        }
    }
    Ok(())
}

/// How many folders above the workspace root the copy's surroundings mirror.
const MIRRORED_LEVELS: usize = 4;

/// Where the copy of the workspace at `root` goes under `base`: at `base` followed by
/// `root`'s absolute path, so that [`mirror_surroundings`] can put beside it what lies
/// beside the original.
pub fn copy_root(base: &Path, root: &Path) -> PathBuf {
    base.join(normal_parts(root))
}

fn normal_parts(p: &Path) -> PathBuf {
    p.components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect()
}

/// Fills the ancestors of [`copy_root`] (up to [`MIRRORED_LEVELS`] above it) with
/// symbolic links to everything beside the workspace and its ancestors. So
/// `../../shared` means in the copy what it means in the original: path dependencies and
/// the files tests read outside the workspace root (`include_str!("../../data/x")`, the
/// fixtures of a monorepo) are the originals, read where they are.
pub fn mirror_surroundings(base: &Path, root: &Path) -> Result<(), CargoFprevError> {
    let mut below = root;
    for ancestor in root.ancestors().skip(1).take(MIRRORED_LEVELS) {
        if ancestor.parent().is_none() {
            break; // the filesystem's root: nothing a workspace reads lives beside it
        }
        let here = base.join(normal_parts(ancestor));
        std::fs::create_dir_all(&here)
            .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", here.display())))?;
        let Ok(entries) = std::fs::read_dir(ancestor) else {
            break; // an ancestor we may not list: nothing beside it is mirrored
        };
        for e in entries.flatten() {
            let original = e.path();
            let link = here.join(e.file_name());
            if original == below || link.symlink_metadata().is_ok() {
                continue;
            }
            std::os::unix::fs::symlink(&original, &link).map_err(|err| {
                CargoFprevError(format!(
                    "cannot link {} to {}: {err}",
                    link.display(),
                    original.display()
                ))
            })?;
        }
        below = ancestor;
    }
    Ok(())
}

/// Copies `files` from `root` into `dest`, replacing what an earlier copy left there
/// (the copy's own `target/` is elsewhere and stays).
pub fn copy(root: &Path, files: &[PathBuf], dest: &Path) -> Result<(), CargoFprevError> {
    if dest.exists() {
        std::fs::remove_dir_all(dest)
            .map_err(|e| CargoFprevError(format!("cannot clear {}: {e}", dest.display())))?;
    }
    for f in files {
        let to = dest.join(f);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", parent.display())))?;
        }
        std::fs::copy(root.join(f), &to)
            .map_err(|e| CargoFprevError(format!("cannot copy {}: {e}", f.display())))?;
    }
    Ok(())
}

/// Every file below `dir`, relative to it (links are not followed).
fn files_below(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir.join(rel)) else {
        return;
    };
    for e in entries.flatten() {
        let path = rel.join(e.file_name());
        match e.file_type() {
            Ok(t) if t.is_dir() => files_below(dir, &path, out),
            Ok(_) => out.push(path),
            Err(_) => {}
        }
    }
}

/// Makes `to` hold what `from` holds, writing only the files whose bytes differ and
/// removing those `from` lacks (but a `Cargo.lock` cargo wrote in the copy's root when
/// the workspace has none): an unchanged file keeps its modification time, so cargo
/// rebuilds only what changed.
pub fn sync(from: &Path, to: &Path) -> Result<(), CargoFprevError> {
    let mut wanted = Vec::new();
    files_below(from, Path::new(""), &mut wanted);
    for rel in &wanted {
        let (src, dst) = (from.join(rel), to.join(rel));
        let bytes = std::fs::read(&src)
            .map_err(|e| CargoFprevError(format!("cannot read {}: {e}", src.display())))?;
        if std::fs::read(&dst).is_ok_and(|old| old == bytes) {
            continue;
        }
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", parent.display())))?;
        }
        std::fs::write(&dst, bytes)
            .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", dst.display())))?;
    }
    let wanted: std::collections::HashSet<&PathBuf> = wanted.iter().collect();
    let mut present = Vec::new();
    files_below(to, Path::new(""), &mut present);
    for rel in present {
        if !wanted.contains(&rel) && rel != Path::new("Cargo.lock") {
            let _ = std::fs::remove_file(to.join(&rel));
        }
    }
    Ok(())
}

/// Keeps the `Cargo.lock` cargo completed in the copy `tree` (the workspace's own lock
/// with fprev's packages added) while the workspace's lock, as copied into `staging`, is
/// still the one it was completed from (kept in the file `source`): handed the
/// workspace's lock again, cargo would update the registry's index to add fprev's
/// packages to it at every call (seconds, and a network round trip). A changed lock in
/// the workspace goes to the copy as it is, and cargo completes it again.
pub fn keep_completed_lock(
    staging: &Path,
    tree: &Path,
    source: &Path,
) -> Result<(), CargoFprevError> {
    let theirs = staging.join("Cargo.lock");
    let Ok(bytes) = std::fs::read(&theirs) else {
        // no lock of the workspace's: `sync` keeps the one cargo writes in the copy
        return Ok(());
    };
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", path.display())))
    };
    if std::fs::read(source).is_ok_and(|b| b == bytes) {
        if let Ok(completed) = std::fs::read(tree.join("Cargo.lock")) {
            write(&theirs, &completed)?;
        }
        Ok(())
    } else {
        write(source, &bytes)
    }
}

/// An exclusive lock on a scratch folder (`flock` on `SCRATCH/.lock`), released when
/// dropped: two cargo fprev commands on one copy would rewrite it under each other's
/// builds and runs.
pub struct ScratchLock {
    _file: std::fs::File,
}

impl ScratchLock {
    /// Takes the lock, waiting (with a note) while another command holds it. Where
    /// there is no `flock` (not Unix) the file is only opened.
    pub fn take(scratch: &Path) -> Result<ScratchLock, CargoFprevError> {
        std::fs::create_dir_all(scratch)
            .map_err(|e| CargoFprevError(format!("cannot create {}: {e}", scratch.display())))?;
        let path = scratch.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| CargoFprevError(format!("cannot open {}: {e}", path.display())))?;
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            let fd = file.as_raw_fd();
            // SAFETY: flock on a descriptor this function owns; no memory is involved.
            if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                eprintln!(
                    "cargo fprev: waiting for another cargo fprev that uses {}",
                    scratch.display()
                );
                // SAFETY: as above.
                if unsafe { libc::flock(fd, libc::LOCK_EX) } != 0 {
                    return Err(CargoFprevError(format!(
                        "cannot lock {}: {}",
                        path.display(),
                        std::io::Error::last_os_error()
                    )));
                }
            }
        }
        Ok(ScratchLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_writes_only_what_changed() {
        let top = std::env::temp_dir().join(format!("fprev-sync-{}", std::process::id()));
        let (from, to) = (top.join("from"), top.join("to"));
        for (rel, text) in [("a.rs", "a"), ("src/b.rs", "b")] {
            std::fs::create_dir_all(from.join(rel).parent().expect("parent")).expect("dir");
            std::fs::write(from.join(rel), text).expect("write");
        }
        sync(&from, &to).expect("first");
        let mtime = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .expect("mtime")
        };
        let before = mtime(&to.join("src/b.rs"));
        std::fs::write(to.join("stale.rs"), "x").expect("stale");
        std::fs::write(to.join("Cargo.lock"), "lock").expect("lock");
        std::fs::write(from.join("a.rs"), "a2").expect("change");
        std::thread::sleep(std::time::Duration::from_millis(20));
        sync(&from, &to).expect("second");
        assert_eq!(
            std::fs::read_to_string(to.join("a.rs")).ok().as_deref(),
            Some("a2")
        );
        assert_eq!(
            mtime(&to.join("src/b.rs")),
            before,
            "an unchanged file is not written"
        );
        assert!(!to.join("stale.rs").exists());
        assert!(to.join("Cargo.lock").exists(), "cargo's lock file stays");
    }

    #[test]
    fn the_lock_cargo_completed_stays_while_the_workspace_lock_is_unchanged() {
        let top = std::env::temp_dir().join(format!("fprev-lock-{}", std::process::id()));
        let (staging, tree) = (top.join("staging"), top.join("tree"));
        let source = top.join("staging.lock-source");
        std::fs::create_dir_all(&staging).expect("dir");
        // a call: the workspace's lock goes to the copy, where cargo completes it
        let call = |theirs: &str| {
            std::fs::write(staging.join("Cargo.lock"), theirs).expect("copy");
            keep_completed_lock(&staging, &tree, &source).expect("kept");
            sync(&staging, &tree).expect("sync");
            let lock = std::fs::read_to_string(tree.join("Cargo.lock")).expect("lock");
            std::fs::write(tree.join("Cargo.lock"), format!("{lock}+fprev")).expect("cargo");
            lock
        };
        assert_eq!(call("v1"), "v1");
        assert_eq!(call("v1"), "v1+fprev", "the completed lock stays");
        assert_eq!(call("v1"), "v1+fprev+fprev");
        assert_eq!(call("v2"), "v2", "a changed lock goes to the copy as it is");
        assert_eq!(call("v2"), "v2+fprev");
        // no lock in the workspace: the one cargo wrote in the copy stays
        std::fs::remove_file(staging.join("Cargo.lock")).expect("rm");
        keep_completed_lock(&staging, &tree, &source).expect("kept");
        sync(&staging, &tree).expect("sync");
        assert_eq!(
            std::fs::read_to_string(tree.join("Cargo.lock"))
                .ok()
                .as_deref(),
            Some("v2+fprev+fprev")
        );
        let _ = std::fs::remove_dir_all(&top);
    }

    #[test]
    fn the_copy_sees_what_lies_beside_the_workspace() {
        let top = std::env::temp_dir().join(format!("fprev-mirror-{}", std::process::id()));
        let ws = top.join("mono/ws");
        std::fs::create_dir_all(ws.join("app")).expect("dir");
        std::fs::create_dir_all(top.join("mono/data")).expect("dir");
        std::fs::write(top.join("mono/data/golden.txt"), "42").expect("data");
        let base = top.join("scratch");
        mirror_surroundings(&base, &ws).expect("mirrored");
        let dest = copy_root(&base, &ws);
        std::fs::create_dir_all(dest.join("app")).expect("copy");
        assert!(dest.ends_with("mono/ws"), "{}", dest.display());
        let read = std::fs::read_to_string(dest.join("app/../../data/golden.txt"));
        assert_eq!(read.ok().as_deref(), Some("42"));
        // the workspace itself is not linked: the copy is written there
        assert!(!dest.symlink_metadata().is_ok_and(|m| m.is_symlink()));
        // a second call keeps its links
        mirror_surroundings(&base, &ws).expect("again");
        assert_eq!(
            std::fs::read_to_string(dest.join("../data/golden.txt"))
                .ok()
                .as_deref(),
            Some("42")
        );
    }

    #[test]
    fn an_earlier_output_folder_is_not_copied() {
        let dir = std::env::temp_dir().join(format!("fprev-out-copy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).expect("src");
        std::fs::write(dir.join("src/lib.rs"), "").expect("lib.rs");
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").expect("toml");
        for out in ["fprev.out", "reports/nightly"] {
            let logs = create_out(&dir.join(out)).expect("out");
            std::fs::write(logs.join("run.log"), "x").expect("log");
        }
        // /tmp is no git work tree: every file outside target/ and .git/, less the outputs
        let files = files(&dir).expect("files");
        let mut names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        names.sort();
        assert_eq!(names, ["Cargo.toml", "src/lib.rs"]);
        std::fs::remove_dir_all(&dir).ok();
    }
}
