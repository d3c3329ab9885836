//! The expansions of fprev's attributes, `#[scramble]` and `#[accumulator]`, as plain
//! functions from tokens to tokens.
//!
//! A proc-macro crate can export only its macros, so the code that reads a function and
//! decides what to rewrite lives here: `fprev-macros` is a thin shell that calls it, and
//! tools that must say what the attributes would do (`cargo fprev scan`) call the same
//! code instead of keeping a copy of it. Users write `#[fprev::scramble]` and
//! `#[fprev::accumulator]`; this crate is for tools.
//!
//! ```
//! use quote::quote;
//!
//! let out = fprev_expand::scramble(
//!     quote!(),
//!     quote! {
//!         fn total(v: &[f64]) -> f64 {
//!             let mut s = 0.0;
//!             for x in v {
//!                 s += x;
//!             }
//!             s
//!         }
//!     },
//! );
//! // The loop's updates go through a reduction (with `off`: the item as written).
//! assert_eq!(out.to_string().contains("reduction_at"), !cfg!(feature = "off"));
//! ```

use proc_macro2::TokenStream;

mod accumulator;
#[cfg(test)]
mod cases;
mod respan;
mod runs;
mod scramble;
mod syntax;

/// `#[scramble(args)] item`: the rewritten function, or, when the attribute is misused,
/// the user's item (per-loop markers removed) followed by the errors, so that an IDE
/// still sees the function. With the `off` feature the item as written.
///
/// ```
/// use quote::quote;
///
/// let out = fprev_expand::scramble(quote!(), quote!(struct NotAFunction;));
/// assert!(out.to_string().contains("compile_error"));
/// ```
pub fn scramble(args: TokenStream, item: TokenStream) -> TokenStream {
    scramble::expand::scramble(args, item.clone()).unwrap_or_else(|e| scramble::with_error(item, e))
}

/// `#[accumulator(args)] item`: the function with its accumulation sites counting their
/// chains (and registered, with `reveal(..)`); never fails to emit the user's item. With
/// the `off` feature the item as written, inner `#[acc]` markers removed.
///
/// ```
/// use quote::quote;
///
/// let out = fprev_expand::accumulator(
///     quote!(),
///     quote! {
///         fn total(v: &[f64]) -> f64 {
///             v.iter().sum()
///         }
///     },
/// );
/// assert_eq!(out.to_string().contains("__FPREV_SITES"), !cfg!(feature = "off"));
/// ```
pub fn accumulator(args: TokenStream, item: TokenStream) -> TokenStream {
    accumulator::accumulator(args, item)
}
