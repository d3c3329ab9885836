//! Compile-time errors of `#[fprev::scramble]` (regenerate with `TRYBUILD=overwrite`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/scramble/*.rs");
}
