//! Compile-time errors of `#[fprev::scramble]` (regenerate with `TRYBUILD=overwrite`).

#![cfg(not(feature = "off"))] // needs scrambling compiled in; see scramble_off.rs

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/scramble/*.rs");
}
