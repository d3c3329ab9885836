//! Compile errors of `#[fprev::accumulator]` misuse. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui_accumulator` and review them.
// Counting and registration are compiled out with the `off` feature.
#![cfg(not(feature = "off"))]

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/accumulator/*.rs");
}
