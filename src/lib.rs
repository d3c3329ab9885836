//! fprev makes floating-point non-reproducibility visible, explainable and fixable.
//!
//! See the README for the tour; this crate re-exports [`fprev_runtime`] and the macros.

extern crate self as fprev;

pub use fprev_macros::{accumulator, scramble};
pub use fprev_runtime::*;
pub use half;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
