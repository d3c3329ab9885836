//! `#[scramble]` and `#[accumulator]` read a function the same way: on the recall
//! fixture (every form of accumulation `cargo fprev` reorders, and a twin of each whose
//! order is its meaning), a function has a reduction `#[scramble]` reorders exactly when
//! `#[accumulator]` counts a chain it ranks as reorderable (not a running value).

use quote::ToTokens;

use crate::{accumulator, explain_scramble, ReasonKind};

/// The sites of an `#[accumulator]` expansion, each as whether it is a running value.
fn chain_sites(expanded: &str) -> Vec<bool> {
    let mut entries: Vec<&str> = expanded.split("Site :: here (").skip(1).collect();
    if let Some(last) = entries.last_mut() {
        // The table ends at the first `;` after its last entry.
        *last = last.split(';').next().unwrap_or(last);
    }
    entries
        .iter()
        .map(|e| e.contains("running_value"))
        .collect()
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn the_recall_fixture_is_read_alike_by_both_attributes() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fprev-cli/tests/fixtures/recall/src/lib.rs"
    );
    let file: syn::File =
        syn::parse_str(&std::fs::read_to_string(path).expect("the fixture")).expect("parses");
    let mut checked = Vec::new();
    for item in file.items {
        let syn::Item::Fn(f) = item else { continue };
        let name = f.sig.ident.to_string();
        let tokens = f.to_token_stream();
        let decisions = explain_scramble(Default::default(), tokens.clone()).expect("a function");
        let scrambled = decisions.iter().any(|d| d.outcome.is_scrambled());
        let not_a_float = decisions
            .iter()
            .any(|d| d.outcome.reason_kind() == Some(ReasonKind::NotAFloat));
        let sites = chain_sites(&accumulator(Default::default(), tokens).to_string());
        let reorderable = sites.iter().filter(|running| !**running).count();
        if not_a_float {
            // A sum of float structs: both leave it to the runtime's type check, which
            // counts and reorders floats only.
            assert!(!scrambled, "{name}");
        } else {
            assert_eq!(
                scrambled,
                reorderable > 0,
                "{name}: scrambled {scrambled}, chain sites (running?) {sites:?}"
            );
        }
        checked.push((name, scrambled));
    }
    let scrambled: Vec<&str> = checked
        .iter()
        .filter(|c| c.1)
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(
        scrambled,
        [
            "column_sums",
            "cluster_sums",
            "gradient",
            "sums_and_count",
            "weighted_rows"
        ],
        "{checked:?}"
    );
    assert!(checked.len() >= 10, "{checked:?}");
}
