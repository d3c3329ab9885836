#![doc = include_str!("../README.md")]
// The README (these docs) shows `#[test]` functions the way users write them in their
// test files; as doctests they compile but do not run, which is all they need to do.
#![allow(clippy::test_attr_in_doctest)]

extern crate self as fprev;

pub use fprev_macros::{accumulator, scramble};
pub use fprev_runtime::*;
pub use half;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
