//! Not public API. Used by generated code.
//!
//! Macro expansions refer only to `::fprev::__private::...`; each runtime module that
//! generated code needs exposes its own hidden `private` module, re-exported here.

/// Not public API. Used by generated code: the few `core` items expansions name, through
/// the facade, so that they resolve in edition-2015 crates too (where `::core` names the
/// crate root). Items only, never the `core` crate itself: rustc would then name every
/// `core` item in the user's diagnostics through this path.
pub mod core {
    pub use ::core::{column, concat, file, line, module_path};
    /// Not public API.
    pub mod option {
        pub use ::core::option::Option;
    }
    /// Not public API.
    pub mod result {
        pub use ::core::result::Result;
    }
    /// Not public API.
    pub mod ops {
        pub use ::core::ops::Drop;
    }
    /// Not public API.
    pub mod ptr {
        pub use ::core::ptr::addr_of;
    }
}
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
