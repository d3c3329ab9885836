//! Not public API. Used by generated code.
//!
//! Macro expansions refer only to `::fprev::__private::...`; each runtime module that
//! generated code needs exposes its own hidden `private` module, re-exported here.

/// Not public API. Used by generated code: `core` through the facade, so that expansions
/// resolve it in edition-2015 crates too (where `::core` names the crate root).
pub use ::core;
/// Not public API. Used by generated code.
pub use ::inventory;
/// Not public API. Used by generated code.
pub use ::rayon;
// One line per runtime module's `private` re-export below.
/// Not public API. Used by generated code.
pub use fprev_runtime::chains::private as chains;
/// Not public API. Used by generated code.
pub use fprev_runtime::registry::private as registry;
/// Not public API. Used by generated code.
pub use fprev_runtime::scramble::private as scramble;
