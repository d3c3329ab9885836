//! The summation order of every output element of a k-reduction, grouped by tree.

mod options;
mod orders;
mod recorder;
mod rounds;

pub use options::{ElementCoverage, ElementReveal};
pub use orders::{Element, ElementOrders, OrderGroup};
