//! House rules a newcomer relies on, checked over the sources of every crate of the
//! workspace and the Python bindings (names also over their tests, examples and
//! benches):
//!
//! - one name for one thing: every struct, enum, trait, union and type alias is defined
//!   once, private ones and those inside functions and test modules included, apart from
//!   the written exceptions below (and the definitions of `cuda/stub.rs`, which stand in
//!   for those of the real backend when the `cuda` feature is off: compiled one or the
//!   other, never both);
//! - no file over 800 lines outside its test modules, and no function over 100 lines
//!   outside test modules, unless a comment says why: `Over 800 lines because ...` in the
//!   file's first lines, `Over 100 lines because ...` in the comments above the function.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The source folders of every crate of the workspace, and of the Python bindings.
const SOURCES: &[&str] = &[
    "src",
    "fprev-runtime/src",
    "fprev-macros/src",
    "fprev-expand/src",
    "fprev-cli/src",
    "fprev-testlib/src",
    "fprev-edition2015/src",
    "python/src",
];

/// The crates' other targets: tests, examples and benches (one name for one thing holds
/// across them too: a reader greps a name and lands in one place).
const TARGETS: &[&str] = &[
    "tests",
    "examples",
    "benches",
    "fprev-cli/tests",
    "fprev-cli/examples",
    "fprev-cli/benches",
    "fprev-testlib/tests",
];

/// Names that may repeat, each with why.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "Sealed",
        "the private supertrait of a sealed public trait: one per sealed trait, never named \
         outside its module",
    ),
    (
        "Cli",
        "clap's root parser: one per binary (`fprev`, `cargo-fprev`), each in its own main.rs",
    ),
    (
        "Cmd",
        "clap's subcommand enum: one per binary (`fprev`, `cargo-fprev`), each in its own main.rs",
    ),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            // crates of their own that the tests build (`fixtures/`), and compile-fail
            // cases (`ui/`), which are not this workspace's code
            if path.ends_with("fixtures") || path.ends_with("tests/ui") {
                continue;
            }
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
fn every_type_name_of_the_workspace_is_defined_once() {
    let every_crate = definitions_in(&[SOURCES, TARGETS].concat());
    assert!(
        every_crate.len() > 300,
        "found only {} type names: the walk missed the sources",
        every_crate.len()
    );
    let twice: Vec<String> = every_crate
        .iter()
        .filter(|(name, places)| places.len() > 1 && !EXCEPTIONS.iter().any(|(n, _)| n == name))
        .map(|(name, places)| format!("{name}: {}", places.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "{} type names are defined more than once across the workspace (give each thing \
         its own name):\n{}",
        twice.len(),
        twice.join("\n")
    );
}

/// Whether `attrs` hold `#[cfg(test)]` (a test module or test-only item).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The line span of an item, its attributes and doc comments excluded.
fn lines_of(first: proc_macro2::Span, last: proc_macro2::Span) -> usize {
    last.end().line + 1 - first.start().line
}

/// Functions over 100 lines outside test modules, each as `file:line name (lines)`.
#[derive(Default)]
struct FileSizes {
    file: String,
    text: Vec<String>,
    test_lines: usize,
    long_functions: Vec<String>,
}

impl FileSizes {
    /// Whether the comments just above `line` (1-based; attributes and doc comments
    /// included) say why the function is long.
    fn excused(&self, line: usize) -> bool {
        self.text[..line.saturating_sub(1)]
            .iter()
            .rev()
            .take_while(|l| {
                let l = l.trim_start();
                l.starts_with("//") || l.starts_with("#[")
            })
            .any(|l| l.contains("Over 100 lines because"))
    }

    fn function(&mut self, name: &syn::Ident, attrs: &[syn::Attribute], block: &syn::Block) {
        let first = attrs
            .iter()
            .map(|a| a.pound_token.span.start().line)
            .chain([name.span().start().line])
            .min()
            .unwrap_or(0);
        let n = lines_of(name.span(), block.brace_token.span.close());
        if n > 100 && !self.excused(first) {
            self.long_functions.push(format!(
                "{}:{} {name} ({n} lines)",
                self.file,
                name.span().start().line
            ));
        }
    }
}

impl<'ast> Visit<'ast> for FileSizes {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test_only(&item.attrs) {
            if let Some((brace, _)) = &item.content {
                self.test_lines += lines_of(item.mod_token.span, brace.span.close());
            }
            return;
        }
        syn::visit::visit_item_mod(self, item);
    }
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.function(&item.sig.ident, &item.attrs, &item.block);
        syn::visit::visit_item_fn(self, item);
    }
    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.function(&item.sig.ident, &item.attrs, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }
}

#[test]
fn no_long_file_or_function_without_a_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&root.join(dir), &mut files);
    }
    let (mut long_files, mut long_functions) = (Vec::new(), Vec::new());
    let mut functions_seen = 0;
    for path in &files {
        let shown = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        let text = std::fs::read_to_string(path).expect("a source file is readable");
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{shown}: {e}"));
        let mut sizes = FileSizes {
            file: shown.clone(),
            text: text.lines().map(str::to_string).collect(),
            ..FileSizes::default()
        };
        sizes.visit_file(&file);
        functions_seen += text.matches("fn ").count();
        let lines = sizes.text.len().saturating_sub(sizes.test_lines);
        let excused = sizes
            .text
            .iter()
            .take(20)
            .any(|l| l.contains("Over 800 lines because"));
        if lines > 800 && !excused {
            long_files.push(format!("{shown} ({lines} lines outside test modules)"));
        }
        long_functions.append(&mut sizes.long_functions);
    }
    assert!(
        files.len() > 200 && functions_seen > 1000,
        "read only {} files and {functions_seen} functions: the walk missed the sources",
        files.len()
    );
    assert!(
        long_files.is_empty() && long_functions.is_empty(),
        "split these, or say why at their top (`Over 800 lines because ...`, `Over 100 \
         lines because ...`):\n{}\n{}",
        long_files.join("\n"),
        long_functions.join("\n")
    );
}
