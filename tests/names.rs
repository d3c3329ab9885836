//! One name for one thing: every struct, enum, trait, union and type alias of the runtime
//! and facade crates is defined once, private ones and those inside functions and test
//! modules included. The facade re-exports the runtime whole, so a name defined twice makes
//! a reader check the import at every use.
//!
//! Left aside, because they are one thing under one name: the private `Sealed` traits, and
//! the definitions of `cuda/stub.rs`, which stand in for those of the real backend when the
//! `cuda` feature is off (compiled one or the other, never both).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

#[derive(Default)]
struct Definitions {
    file: String,
    found: Vec<(String, String)>,
}

impl Definitions {
    fn define(&mut self, ident: &syn::Ident) {
        let line = ident.span().start().line;
        self.found
            .push((ident.to_string(), format!("{}:{line}", self.file)));
    }
}

impl<'ast> Visit<'ast> for Definitions {
    fn visit_item_struct(&mut self, item: &'ast syn::ItemStruct) {
        self.define(&item.ident);
        syn::visit::visit_item_struct(self, item);
    }
    fn visit_item_enum(&mut self, item: &'ast syn::ItemEnum) {
        self.define(&item.ident);
        syn::visit::visit_item_enum(self, item);
    }
    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        self.define(&item.ident);
        syn::visit::visit_item_trait(self, item);
    }
    fn visit_item_union(&mut self, item: &'ast syn::ItemUnion) {
        self.define(&item.ident);
        syn::visit::visit_item_union(self, item);
    }
    fn visit_item_type(&mut self, item: &'ast syn::ItemType) {
        self.define(&item.ident);
        syn::visit::visit_item_type(self, item);
    }
}

/// Every type definition in the Rust files below `dirs` (relative to the repository), by
/// name, each as `file:line`. The definitions of `cuda/stub.rs` are left out: they stand
/// in for those of the real backend when the `cuda` feature is off.
fn definitions_in(dirs: &[&str]) -> BTreeMap<String, Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in &files {
        let shown = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        if shown.ends_with("cuda/stub.rs") {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("a source file is readable");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{shown}: {e}"));
        let mut defs = Definitions {
            file: shown,
            ..Definitions::default()
        };
        defs.visit_file(&file);
        for (name, place) in defs.found {
            by_name.entry(name).or_default().push(place);
        }
    }
    by_name
}

#[test]
fn every_type_name_of_the_runtime_and_facade_is_defined_once() {
    let by_name = definitions_in(&["src", "fprev-runtime/src"]);
    assert!(
        by_name.len() > 100,
        "found only {} type names: the walk missed the sources",
        by_name.len()
    );
    let twice: Vec<String> = by_name
        .iter()
        .filter(|(name, places)| places.len() > 1 && name.as_str() != "Sealed")
        .map(|(name, places)| format!("{name}: {}", places.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "{} type names are defined more than once (give each thing its own name):\n{}",
        twice.len(),
        twice.join("\n")
    );
}

#[test]
fn one_finding_type_across_the_workspace() {
    // One campaign system: `cargo fprev test`, `cargo fprev merge` and `fprev campaign
    // merge` write, merge and render one findings report (docs/findings.schema.json).
    let every_crate = definitions_in(&[
        "src",
        "fprev-runtime/src",
        "fprev-macros/src",
        "fprev-expand/src",
        "fprev-cli/src",
        "python/src",
    ]);
    assert!(
        every_crate.len() > 300,
        "found only {} type names: the walk missed the sources",
        every_crate.len()
    );
    let files: Vec<String> = every_crate
        .get("Finding")
        .into_iter()
        .flatten()
        .map(|place| place.split(':').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        files,
        ["fprev-cli/src/findings.rs"],
        "one Finding type across the workspace"
    );
}
