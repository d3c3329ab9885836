#![doc = include_str!("../README.md")]

extern crate self as fprev;

pub use fprev_macros::{accumulator, scramble};
pub use fprev_runtime::*;
pub use half;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
