//! The annotated copy every command but `scan` and `merge` builds: the selection of
//! packages and functions read from the workspace, and the copy prepared (only changed
//! files rewritten, so cargo keeps its builds).

use std::path::{Path, PathBuf};

use crate::cargo_flags::{CopyArgs, SourceArgs};
use crate::cli_output::CargoFprevError;
use crate::{annotate, copy_manifests, diff, limits, runner, workspace};

/// The annotated copy, ready to build.
pub struct Prepared {
    pub root: PathBuf,
    pub tree: PathBuf,
    pub target_dir: PathBuf,
    pub packages: Vec<String>,
    /// The annotated functions, each with its file.
    pub annotated: Vec<(String, annotate::Annotated)>,
    /// Held until the command ends: one cargo fprev at a time per scratch folder.
    pub _lock: Option<workspace::ScratchLock>,
}

/// The workspace, its selected packages and the lines a diff touches: what the
/// commands read functions from.
pub struct Selection {
    pub root: PathBuf,
    pub packages: Vec<workspace::Package>,
    pub changed: Option<diff::Changed>,
}

/// The workspace and the packages `a` selects (an unknown `-p` is an error naming the
/// members), with the lines `--in-diff` touches.
pub fn select(a: &SourceArgs) -> Result<Selection, CargoFprevError> {
    let ws = workspace::locate(a.manifest_path.as_deref())?;
    for p in &a.packages {
        if !ws.members.iter().any(|m| &m.name == p) {
            let names: Vec<&str> = ws.members.iter().map(|m| m.name.as_str()).collect();
            return Err(CargoFprevError(format!(
                "no package `{p}` in the workspace (members: {})",
                names.join(", ")
            )));
        }
    }
    let changed = match &a.in_diff {
        Some(path) => {
            let text = limits::read_capped_text(path, a.max_input_bytes, "--max-input-bytes")
                .map_err(|e| CargoFprevError(format!("--in-diff {e}")))?;
            Some(
                diff::Changed::parse(&text)
                    .map_err(|e| CargoFprevError(format!("--in-diff {}: {e}", path.display())))?,
            )
        }
        None => None,
    };
    let packages = ws
        .members
        .into_iter()
        .filter(|m| a.packages.is_empty() || a.packages.contains(&m.name))
        .collect();
    Ok(Selection {
        root: ws.root,
        packages,
        changed,
    })
}

impl Selection {
    /// The packages whose functions are annotated: proc-macro ones are left out, with a
    /// note.
    pub fn annotated_packages(&self) -> impl Iterator<Item = &workspace::Package> {
        self.packages.iter().filter(|p| {
            if p.proc_macro {
                eprintln!(
                    "cargo fprev: note: {} is a proc-macro package (its code runs in the \
                     compiler): left as it is",
                    p.name
                );
            }
            !p.proc_macro
        })
    }

    /// The Rust sources of `p`, in path order: (path relative to the root, its text
    /// with `/` separators, the source). Unreadable files are skipped.
    pub fn sources(&self, p: &workspace::Package) -> Vec<(PathBuf, String, String)> {
        let mut out = Vec::new();
        for dir in &p.src_dirs {
            let mut files = Vec::new();
            rust_files(&self.root.join(dir), &mut files);
            files.sort();
            for file in files {
                let rel = file.strip_prefix(&self.root).unwrap_or(&file).to_path_buf();
                let Ok(src) = std::fs::read_to_string(&file) else {
                    continue;
                };
                let rel_text = rel.to_string_lossy().replace('\\', "/");
                out.push((rel, rel_text, src));
            }
        }
        out
    }

    /// Whether the function is one to annotate (with --in-diff: one the diff touches).
    pub fn keeps(&self, file: &str, f: &annotate::Annotated) -> bool {
        self.changed
            .as_ref()
            .is_none_or(|c| c.touches(file, f.line, f.end_line))
    }

    /// The error for a selection in which no function accumulates.
    pub fn nothing_found(&self) -> CargoFprevError {
        CargoFprevError(if self.changed.is_some() {
            "the diff touches no function that accumulates floats: nothing to scramble".into()
        } else {
            "no function that accumulates floats was found in the selected packages \
             (looked for +=, -=, x = x + .., .sum(), .fold() outside test code)"
                .into()
        })
    }
}

/// The note for a file read item by item.
pub fn note_partial(rel: &Path, e: &syn::Error) {
    eprintln!(
        "cargo fprev: note: {} does not parse as a whole ({}:{}: {e}); \
         read item by item, the items that do not parse left as they are",
        rel.display(),
        e.span().start().line,
        e.span().start().column + 1
    );
}

/// The note for a file that does not lex.
pub fn note_unparsed(rel: &Path, e: &syn::Error) {
    eprintln!(
        "cargo fprev: note: {}:{}:{} does not parse ({e}); left as it is",
        rel.display(),
        e.span().start().line,
        e.span().start().column + 1
    );
}

/// Copies the workspace (when `write`) and puts `#[fprev::scramble(chains)]` on its
/// accumulating functions: one copy and one build, which `test` and `replay` run
/// scrambled and `chains` runs counting.
pub fn prepare(a: &CopyArgs, write: bool) -> Result<Prepared, CargoFprevError> {
    runner::set_log_cap(a.max_log_bytes);
    let sel = select(&a.source)?;
    let scratch = workspace::scratch_dir(&sel.root, a.scratch.as_deref());
    let lock = if write {
        Some(workspace::ScratchLock::take(&scratch)?)
    } else {
        None
    };
    if write {
        forget_the_chains_copy(&scratch);
    }
    let base = scratch.join("tree");
    let tree = workspace::copy_root(&base, &sel.root);
    // The copy is prepared in `staging`, then only the files whose bytes changed are
    // written into `tree`: cargo keeps every build of an unchanged copy (it compares
    // times), so a second call builds nothing.
    let staging = scratch.join("staging");
    let fprev = copy_manifests::fprev_path(a.fprev_path.as_deref())?;
    if write {
        let files = workspace::files(&sel.root)?;
        workspace::mirror_surroundings(&base, &sel.root)?;
        workspace::copy(&sel.root, &files, &staging)?;
        copy_manifests::point_outside_paths(&sel.root, &files, &staging, &fprev)?;
    }
    let mut annotated = Vec::new();
    let mut packages = Vec::new();
    for p in sel.annotated_packages() {
        packages.push(p.name.clone());
        let mut found = 0;
        for (rel, rel_text, src) in sel.sources(p) {
            match annotate::annotate_where(&src, |f| sel.keeps(&rel_text, f)) {
                Ok(r) => {
                    if let Some(e) = &r.partial {
                        note_partial(&rel, e);
                    }
                    if let (true, Some(text)) = (write, &r.text) {
                        std::fs::write(staging.join(&rel), text).map_err(|e| {
                            CargoFprevError(format!(
                                "cannot write the copy of {}: {e}",
                                rel.display()
                            ))
                        })?;
                    }
                    for f in r.annotated {
                        annotated.push((rel.display().to_string(), f));
                        found += 1;
                    }
                }
                Err(e) => note_unparsed(&rel, &e),
            }
        }
        if write && found > 0 {
            copy_manifests::add_dependency(&staging.join(&p.dir).join("Cargo.toml"), &fprev)?;
        }
    }
    if write {
        copy_manifests::optimize_runtime(&staging.join("Cargo.toml"))?;
        copy_manifests::inline_more(&base)?;
        workspace::keep_completed_lock(&staging, &tree, &staging.with_extension("lock-source"))?;
        workspace::sync(&staging, &tree)?;
    }
    if annotated.is_empty() {
        return Err(sel.nothing_found());
    }
    Ok(Prepared {
        root: sel.root.clone(),
        tree,
        target_dir: a
            .target_dir
            .clone()
            .unwrap_or_else(|| scratch.join("target")),
        packages,
        annotated,
        _lock: lock,
    })
}

/// Removes the second copy and build that `chains` kept before it ran the test build
/// (`tree-chains`, `staging-chains`, `target-chains`): gigabytes nothing reads now.
fn forget_the_chains_copy(scratch: &Path) {
    for dir in ["tree-chains", "staging-chains", "target-chains"] {
        let _ = std::fs::remove_dir_all(scratch.join(dir));
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The feature flags of `a` for cargo (`--features`, `--all-features`).
pub fn cargo_args(a: &CopyArgs) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(f) = &a.features {
        v.push("--features".into());
        v.push(f.clone());
    }
    if a.all_features {
        v.push("--all-features".into());
    }
    v
}
