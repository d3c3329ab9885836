//! The copy's manifests, edited so that it builds against fprev: fprev added as a
//! dependency (the checkout this tool was built from), path dependencies that lead
//! outside the workspace pointed at the originals, fprev's runtime built optimized.

use std::path::{Path, PathBuf};

use crate::cli_output::CargoFprevError;

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
/// [`OPTIMIZED`] (a setting the user made is kept). When the tests are built optimized
/// ([`tests_optimized`]), the runtime's debug assertions are turned off as well: they are
/// how the runtime tells that the code storing a scrambled term is unoptimized, where one
/// call per term into the runtime is cheaper than inlined code; optimized, that call
/// doubled the scrambled time of smartcore's suite (`[profile.test] opt-level = 3`).
pub fn optimize_runtime(root_manifest: &Path) -> Result<(), CargoFprevError> {
    let text = std::fs::read_to_string(root_manifest)
        .map_err(|e| CargoFprevError(format!("{}: {e}", root_manifest.display())))?;
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        CargoFprevError(format!(
            "{}: not a TOML manifest: {e}",
            root_manifest.display()
        ))
    })?;
    let optimized = tests_optimized(&doc);
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
    if optimized {
        if let Some(runtime) = package
            .get_mut("fprev-runtime")
            .and_then(toml_edit::Item::as_table_like_mut)
        {
            if runtime.get("debug-assertions").is_none() {
                runtime.insert("debug-assertions", toml_edit::value(false));
            }
        }
    }
    std::fs::write(root_manifest, doc.to_string())
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", root_manifest.display())))
}

/// The inlining budget of the copy's builds, in LLVM's cost units (its default is 225).
const INLINE_THRESHOLD: u32 = 600;

/// Writes `base/.cargo/config.toml`, above the copy: a `build.rustflags` that lets LLVM
/// inline more. An annotated function is bigger than the one written, so a small one
/// that the plain build inlines into its loop stops being inlined, and with it what it
/// calls (smartcore's `partial_dot`, LLVM cost 490, and its `get`): its slowest test ran
/// 2.8 to 4x the plain time scrambled, 2.5x with this. No float result depends on
/// inlining. Cargo joins this array to the user's own `build.rustflags`; `RUSTFLAGS`,
/// `CARGO_ENCODED_RUSTFLAGS` and `target.*.rustflags`, where the user sets them, take
/// its place (the copy then builds as it did). Not written where `base/.cargo` is not a
/// folder of the scratch's own (a link to the original's surroundings).
pub fn inline_more(base: &Path) -> Result<(), CargoFprevError> {
    let dir = base.join(".cargo");
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return Ok(());
    }
    let text = format!(
        "# Written by cargo fprev for its annotated copy (see docs/cargo-fprev.md).\n\
         [build]\nrustflags = [\"-Cllvm-args=-inline-threshold={INLINE_THRESHOLD}\"]\n"
    );
    let path = dir.join("config.toml");
    if std::fs::read_to_string(&path).is_ok_and(|t| t == text) {
        // unchanged: cargo compares times, and a rewrite would rebuild nothing anyway
        return Ok(());
    }
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, text))
        .map_err(|e| CargoFprevError(format!("cannot write {}: {e}", path.display())))
}

/// Whether the workspace of `root_manifest` builds its tests optimized
/// ([`tests_optimized`]); false when it cannot be read.
pub fn builds_tests_optimized(root_manifest: &Path) -> bool {
    std::fs::read_to_string(root_manifest)
        .ok()
        .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok())
        .is_some_and(|doc| tests_optimized(&doc))
}

/// Whether `cargo test` builds optimized code by the root manifest `doc`: the test
/// profile's `opt-level`, else the dev profile's, which it inherits; cargo's
/// `CARGO_PROFILE_TEST_OPT_LEVEL` and `CARGO_PROFILE_DEV_OPT_LEVEL` override each. (Profiles
/// set in `.cargo/config.toml` files are not read: there the runtime keeps its debug
/// assertions, which costs time, not correctness.)
fn tests_optimized(doc: &toml_edit::DocumentMut) -> bool {
    let level = |profile: &str| -> Option<String> {
        let var = format!("CARGO_PROFILE_{}_OPT_LEVEL", profile.to_ascii_uppercase());
        if let Ok(v) = std::env::var(var) {
            return Some(v);
        }
        let item = doc.get("profile")?.get(profile)?.get("opt-level")?;
        item.as_integer()
            .map(|i| i.to_string())
            .or_else(|| item.as_str().map(str::to_string))
    };
    level("test")
        .or_else(|| level("dev"))
        .is_some_and(|l| l.trim() != "0")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inlining_budget_is_written_above_the_copy_and_never_through_a_link() {
        let base = std::env::temp_dir().join(format!("fprev-inline-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).expect("dir");
        inline_more(&base).expect("written");
        let config = base.join(".cargo/config.toml");
        let text = std::fs::read_to_string(&config).expect("config");
        let doc: toml_edit::DocumentMut = text.parse().expect("TOML");
        assert_eq!(
            doc["build"]["rustflags"][0].as_str(),
            Some("-Cllvm-args=-inline-threshold=600"),
            "{text}"
        );
        let written = std::fs::metadata(&config)
            .and_then(|m| m.modified())
            .expect("time");
        inline_more(&base).expect("again");
        let again = std::fs::metadata(&config)
            .and_then(|m| m.modified())
            .expect("time");
        assert_eq!(written, again, "an unchanged config is not written again");
        // `.cargo` a link (the mirrored surroundings): nothing is written through it.
        let elsewhere = base.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).expect("dir");
        let linked = base.join("linked");
        std::fs::create_dir_all(&linked).expect("dir");
        std::os::unix::fs::symlink(&elsewhere, linked.join(".cargo")).expect("link");
        inline_more(&linked).expect("skipped");
        assert!(!elsewhere.join("config.toml").exists());
        let _ = std::fs::remove_dir_all(&base);
    }

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
        assert!(
            pkg["fprev-runtime"].get("debug-assertions").is_none(),
            "unoptimized tests keep the runtime's debug assertions: {doc}"
        );
    }

    #[test]
    fn optimized_tests_turn_off_the_runtimes_debug_assertions_alone() {
        for (case, (profiles, off)) in [
            ("[profile.test]\nopt-level = 3\ndebug = 1\n", true),
            ("[profile.dev]\nopt-level = 1\n", true),
            (
                "[profile.dev]\nopt-level = 2\n[profile.test]\nopt-level = 0\n",
                false,
            ),
            ("[profile.release]\nopt-level = 3\n", false),
            ("[profile.test]\nopt-level = \"s\"\n", true),
        ]
        .into_iter()
        .enumerate()
        {
            let m = manifest(
                &format!("optimized-{case}"),
                &format!("[package]\nname = \"x\"\n\n{profiles}"),
            );
            optimize_runtime(&m).expect("edit");
            let doc: toml_edit::DocumentMut = std::fs::read_to_string(&m)
                .expect("read")
                .parse()
                .expect("toml");
            let runtime = &doc["profile"]["dev"]["package"]["fprev-runtime"];
            let got = runtime.get("debug-assertions").and_then(|v| v.as_bool());
            assert_eq!(got, off.then_some(false), "{profiles}: {doc}");
            assert_eq!(builds_tests_optimized(&m), off, "{profiles}");
            assert!(
                doc["profile"]["dev"].get("debug-assertions").is_none(),
                "the user's code keeps its debug assertions: {doc}"
            );
            if let Some(dir) = m.parent() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}
