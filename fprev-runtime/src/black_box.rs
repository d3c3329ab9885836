//! The items of the public module [`crate::target`] (black-box targets, their probes and
//! operands), whose documentation is there: this file and its folder are named for what
//! they hold, as a folder named `target` is taken for build output by tools and ignore
//! rules.

mod functions;
mod operands;
mod probe;
mod products;
mod target_trait;

pub(crate) use functions::caught;
pub use functions::{FnTarget, SyncFnTarget, PARALLEL_MIN_WORK};
pub use operands::{exponent_sums, random_operands, split_product, DrawnOperands};
pub(crate) use operands::{split_values, OperandSplit};
pub use probe::{Probe, ProbeBatch, ProbeSets};
pub use products::Products;
pub use target_trait::{Target, TargetError};
