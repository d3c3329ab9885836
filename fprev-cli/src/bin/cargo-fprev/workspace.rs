//! The user's workspace as cargo describes it, and the scratch copy that is annotated,
//! built and run: the user's own tree is only ever read.

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

/// Adds `fprev = { path = FPREV, default-features = false }` to a package manifest's
/// `[dependencies]`. A dependency on fprev the package has already (a published version,
/// a git checkout, under `[dev-dependencies]` too) is pointed at the same checkout, its
/// features kept; a dependency named `fprev` that is another package is an error that
/// says so.
pub fn add_dependency(manifest: &Path, fprev: &Path) -> Result<(), CargoFprevError> {
    let mut doc = read_manifest(manifest)?;
    let mut normal = false;
    let mut clash = None;
    visit_dependencies(&mut doc, &mut |table, name, item| {
        if name != "fprev" {
            return;
        }
        match fprev_entry(item) {
            FprevEntry::Other(package) => clash = Some(package),
            FprevEntry::Inherited => {}
            FprevEntry::Fprev => point_at(item, fprev),
        }
        normal |= table == "dependencies";
    });
    if let Some(package) = clash {
        return Err(CargoFprevError(format!(
            "{}: the dependency named `fprev` is the package `{package}`: the annotations \
             need that name for fprev itself (`#[fprev::scramble]`); rename the dependency \
             (`{package} = {{ .. }}`) to run cargo fprev on this package",
            manifest.display()
        )));
    }
    if !normal {
        let deps = doc
            .entry("dependencies")
            .or_insert_with(toml_edit::table)
            .as_table_like_mut()
            .ok_or_else(|| {
                CargoFprevError(format!(
                    "{}: [dependencies] is not a table",
                    manifest.display()
                ))
            })?;
        let mut dep = toml_edit::InlineTable::new();
        dep.insert("path", fprev.to_string_lossy().as_ref().into());
        dep.insert("default-features", false.into());
        deps.insert("fprev", toml_edit::value(dep));
    }
    write_manifest(manifest, &doc)
}

/// What a dependency named `fprev` is.
enum FprevEntry {
    /// fprev itself, from a registry, git or another checkout.
    Fprev,
    /// `fprev = { workspace = true }`: the root manifest's entry says which.
    Inherited,
    /// Another package under the name `fprev`.
    Other(String),
}

fn fprev_entry(item: &toml_edit::Item) -> FprevEntry {
    let Some(t) = item.as_table_like() else {
        return FprevEntry::Fprev;
    };
    if t.get("workspace").and_then(toml_edit::Item::as_bool) == Some(true) {
        return FprevEntry::Inherited;
    }
    match t.get("package").and_then(toml_edit::Item::as_str) {
        Some(p) if p != "fprev" => FprevEntry::Other(p.to_string()),
        _ => FprevEntry::Fprev,
    }
}

/// Points a dependency on fprev at the checkout `fprev` (its features kept), so that the
/// annotations and the user's own uses of fprev resolve to one fprev.
fn point_at(item: &mut toml_edit::Item, fprev: &Path) {
    let path = fprev.to_string_lossy().to_string();
    if let Some(t) = item.as_table_like_mut() {
        for key in [
            "version", "git", "branch", "tag", "rev", "registry", "optional",
        ] {
            t.remove(key);
        }
        t.insert("path", toml_edit::value(path));
    } else {
        let mut dep = toml_edit::InlineTable::new();
        dep.insert("path", path.as_str().into());
        *item = toml_edit::value(dep);
    }
}

/// Calls `f(table, name, entry)` on every dependency of a manifest: `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]`, their `[target.'..'.*]` forms,
/// `[workspace.dependencies]` (table `workspace`) and `[patch.*]` (table `patch`).
fn visit_dependencies(
    doc: &mut toml_edit::DocumentMut,
    f: &mut dyn FnMut(&str, &str, &mut toml_edit::Item),
) {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    fn entries(
        table: &mut dyn toml_edit::TableLike,
        kind: &str,
        f: &mut dyn FnMut(&str, &str, &mut toml_edit::Item),
    ) {
        for (name, item) in table.iter_mut() {
            f(kind, name.get(), item);
        }
    }
    let root = doc.as_table_mut();
    for kind in KINDS {
        if let Some(t) = root
            .get_mut(kind)
            .and_then(toml_edit::Item::as_table_like_mut)
        {
            entries(t, kind, f);
        }
    }
    if let Some(targets) = root
        .get_mut("target")
        .and_then(toml_edit::Item::as_table_like_mut)
    {
        for (_, target) in targets.iter_mut() {
            for kind in KINDS {
                if let Some(t) = target
                    .get_mut(kind)
                    .and_then(toml_edit::Item::as_table_like_mut)
                {
                    entries(t, kind, f);
                }
            }
        }
    }
    if let Some(t) = root
        .get_mut("workspace")
        .and_then(|w| w.get_mut("dependencies"))
        .and_then(toml_edit::Item::as_table_like_mut)
    {
        entries(t, "workspace", f);
    }
    if let Some(patches) = root
        .get_mut("patch")
        .and_then(toml_edit::Item::as_table_like_mut)
    {
        for (_, source) in patches.iter_mut() {
            if let Some(t) = source.as_table_like_mut() {
                entries(t, "patch", f);
            }
        }
    }
}

fn read_manifest(manifest: &Path) -> Result<toml_edit::DocumentMut, CargoFprevError> {
    let text = std::fs::read_to_string(manifest)
        .map_err(|e| CargoFprevError(format!("{}: {e}", manifest.display())))?;
    text.parse()
        .map_err(|e| CargoFprevError(format!("{}: not a TOML manifest: {e}", manifest.display())))
}

fn write_manifest(manifest: &Path, doc: &toml_edit::DocumentMut) -> Result<(), CargoFprevError> {
    std::fs::write(manifest, doc.to_string())
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", manifest.display())))
}

/// `path` with `.` and `..` resolved lexically (symbolic links are left alone, as cargo
/// leaves them).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// In the copy's manifests, points every path dependency (and `[workspace.dependencies]`,
/// `[patch]` entry) that leads outside the workspace root at the original, by an absolute
/// path: a monorepo's shared crates (`path = "../../shared"`) are built from where they
/// are, read-only, as the copy cannot hold them. A workspace-inherited `fprev` is pointed
/// at the checkout `fprev` in the root manifest.
pub fn point_outside_paths(
    root: &Path,
    files: &[PathBuf],
    tree: &Path,
    fprev: &Path,
) -> Result<(), CargoFprevError> {
    for rel in files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "Cargo.toml"))
    {
        let manifest = tree.join(rel);
        let Ok(mut doc) = read_manifest(&manifest) else {
            continue; // not a manifest cargo reads (a fixture, a template): left as it is
        };
        let dir = root.join(rel.parent().unwrap_or(Path::new("")));
        let mut changed = false;
        visit_dependencies(&mut doc, &mut |table, name, item| {
            if table == "workspace" && name == "fprev" {
                if let FprevEntry::Fprev = fprev_entry(item) {
                    point_at(item, fprev);
                    changed = true;
                }
                return;
            }
            let Some(t) = item.as_table_like_mut() else {
                return;
            };
            let Some(path) = t.get("path").and_then(toml_edit::Item::as_str) else {
                return;
            };
            let target = lexical(&dir.join(path));
            if !target.starts_with(root) {
                t.insert("path", toml_edit::value(target.to_string_lossy().as_ref()));
                changed = true;
            }
        });
        if changed {
            write_manifest(&manifest, &doc)?;
        }
    }
    Ok(())
}

/// Packages of fprev's that scrambled code calls on every reduction: built optimized in
/// the copy's test profile, as fprev's own workspace builds them, so that scrambling costs
/// the tests little time and a slow test stays a finding about order, not about a debug
/// build of the runtime.
const OPTIMIZED: [&str; 3] = ["fprev-runtime", "half", "rand_chacha"];

/// Sets `[profile.dev.package.<name>] opt-level = 2` in the workspace root manifest for
/// [`OPTIMIZED`] (a setting the user made is kept).
pub fn optimize_runtime(root_manifest: &Path) -> Result<(), CargoFprevError> {
    let text = std::fs::read_to_string(root_manifest)
        .map_err(|e| CargoFprevError(format!("{}: {e}", root_manifest.display())))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        CargoFprevError(format!(
            "{}: not a TOML manifest: {e}",
            root_manifest.display()
        ))
    })?;
    let profile = doc.entry("profile").or_insert_with(toml_edit::table);
    let Some(profile) = profile.as_table_like_mut() else {
        return Ok(());
    };
    profile.set_dotted(true);
    let dev = profile
        .entry("dev")
        .or_insert(toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(dev) = dev.as_table_like_mut() else {
        return Ok(());
    };
    let package = dev
        .entry("package")
        .or_insert(toml_edit::Item::Table(toml_edit::Table::new()));
    let Some(package) = package.as_table_like_mut() else {
        return Ok(());
    };
    package.set_dotted(true);
    for name in OPTIMIZED {
        if package.get(name).is_none() {
            let mut t = toml_edit::Table::new();
            t.insert("opt-level", toml_edit::value(2));
            package.insert(name, toml_edit::Item::Table(t));
        }
    }
    std::fs::write(root_manifest, doc.to_string())
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", root_manifest.display())))
}

/// The fprev checkout this tool was built from (its facade crate), or `over`.
pub fn fprev_path(over: Option<&Path>) -> Result<PathBuf, CargoFprevError> {
    let path = match over {
        Some(p) => p.to_path_buf(),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    };
    let manifest = path.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap_or_default();
    if !text.contains("name = \"fprev\"") {
        return Err(CargoFprevError(format!(
            "{} is not an fprev checkout (no package `fprev` in {}); pass --fprev-path DIR",
            path.display(),
            manifest.display()
        )));
    }
    path.canonicalize()
        .map_err(|e| CargoFprevError(format!("{}: {e}", path.display())))
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

    fn manifest(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fprev-manifest-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("Cargo.toml");
        std::fs::write(&path, text).expect("manifest");
        path
    }

    #[test]
    fn a_dependency_on_fprev_is_pointed_at_the_checkout_and_another_named_fprev_refused() {
        let fprev = Path::new("/checkout/fprev");
        let m = manifest(
            "published",
            "[package]\nname = \"a\"\n[dev-dependencies]\nfprev = { version = \"0.1\", features = [\"serde\"] }\n",
        );
        add_dependency(&m, fprev).expect("added");
        let doc = read_manifest(&m).expect("manifest");
        let dev = &doc["dev-dependencies"]["fprev"];
        assert_eq!(dev["path"].as_str(), Some("/checkout/fprev"), "{doc}");
        assert!(dev.get("version").is_none(), "{doc}");
        assert!(
            dev.get("features").is_some(),
            "the features are kept: {doc}"
        );
        assert_eq!(
            doc["dependencies"]["fprev"]["path"].as_str(),
            Some("/checkout/fprev"),
            "{doc}"
        );
        let m = manifest(
            "other",
            "[package]\nname = \"a\"\n[dependencies]\nfprev = { package = \"fprevious\", version = \"1\" }\n",
        );
        let e = add_dependency(&m, fprev).expect_err("a clash");
        assert!(e.0.contains("is the package `fprevious`"), "{}", e.0);
    }

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
    fn path_dependencies_outside_the_root_point_at_the_originals() {
        let root = std::env::temp_dir().join(format!("fprev-outside-{}", std::process::id()));
        let tree = root.join("copy");
        let ws = root.join("mono/ws");
        for dir in [ws.join("app"), tree.join("app")] {
            std::fs::create_dir_all(&dir).expect("dir");
        }
        let text = "[package]\nname = \"app\"\n[dependencies]\nshared = { path = \"../../shared\" }\ninside = { path = \"../inside\" }\n";
        std::fs::write(tree.join("app/Cargo.toml"), text).expect("copy");
        point_outside_paths(
            &ws,
            &[PathBuf::from("app/Cargo.toml")],
            &tree,
            Path::new("/f"),
        )
        .expect("pointed");
        let doc = read_manifest(&tree.join("app/Cargo.toml")).expect("manifest");
        assert_eq!(
            doc["dependencies"]["shared"]["path"].as_str(),
            Some(root.join("mono/shared").to_str().expect("utf-8")),
            "{doc}"
        );
        assert_eq!(
            doc["dependencies"]["inside"]["path"].as_str(),
            Some("../inside"),
            "a path inside the root goes with the copy: {doc}"
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

    #[test]
    fn the_runtime_is_optimized_in_the_copy_and_a_users_setting_kept() {
        let dir = std::env::temp_dir().join(format!("fprev-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let m = dir.join("Cargo.toml");
        std::fs::write(
            &m,
            "[package]\nname = \"x\"\n\n[profile.dev.package.half]\nopt-level = 1\n",
        )
        .expect("write");
        optimize_runtime(&m).expect("edit");
        let doc: toml_edit::DocumentMut = std::fs::read_to_string(&m)
            .expect("read")
            .parse()
            .expect("toml");
        let pkg = &doc["profile"]["dev"]["package"];
        assert_eq!(pkg["fprev-runtime"]["opt-level"].as_integer(), Some(2));
        assert_eq!(pkg["rand_chacha"]["opt-level"].as_integer(), Some(2));
        assert_eq!(
            pkg["half"]["opt-level"].as_integer(),
            Some(1),
            "the user's own"
        );
        assert_eq!(doc["package"]["name"].as_str(), Some("x"));
    }
}
