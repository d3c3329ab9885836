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
//!
//! [`explain_scramble`] runs the same rewriter and returns what it decided, loop by loop
//! and chain by chain, with the reasons the expansion registers.

use proc_macro2::TokenStream;

mod accumulator;
#[cfg(test)]
mod cases;
#[cfg(test)]
mod classifiers_agree;
mod respan;
mod runs;
mod scramble;
mod syntax;

pub use scramble::{Construct, Decision, Outcome, ReasonKind};

/// `#[scramble(args)] item`: the rewritten function, or, when the attribute is misused,
/// the user's item (per-loop markers removed) followed by the errors, so that an IDE
/// still sees the function. With the `off` feature the item as written.
///
/// ```
/// use quote::quote;
///
/// let out = fprev_expand::scramble(quote!(), quote!(struct NotAFunction;));
/// // The struct, then the error that says where the attribute goes.
/// assert!(out.to_string().starts_with("struct NotAFunction"));
/// assert_eq!(out.to_string().contains("compile_error"), !cfg!(feature = "off"));
/// ```
pub fn scramble(args: TokenStream, item: TokenStream) -> TokenStream {
    scramble::scramble(args, item.clone()).unwrap_or_else(|e| scramble::with_error(item, e))
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

/// Why `#[scramble(chains)]` gives `item` its scrambled body only, without the
/// chain-counting one beside it; `None` when both bodies fit. A tool that counts chains
/// through `#[scramble(chains)]` (`cargo fprev chains`) names these functions, since
/// their chains go uncounted.
///
/// ```
/// use quote::quote;
///
/// let counted = quote!(fn total(v: &[f64]) -> f64 { v.iter().sum() });
/// assert_eq!(fprev_expand::without_chains(&counted), None);
/// let opaque = quote!(fn evens(v: &[f64]) -> impl Iterator<Item = f64> + '_ {
///     v.iter().step_by(2).copied()
/// });
/// assert!(fprev_expand::without_chains(&opaque).is_some_and(|why| why.contains("impl Trait")));
/// ```
pub fn without_chains(item: &TokenStream) -> Option<&'static str> {
    scramble::with_chains::why_not(item)
}

/// What `#[scramble(args)]` decides for each loop, iterator reduction and rayon chain of
/// `item`: the attribute's own rewriter runs (the code is generated, then dropped) and
/// its record of every site and every loop left alone comes back, in the order the
/// rewriter met them (outer loops before the loops inside them; an iterator chain's
/// inner reductions before the outer one). The `off` feature is not consulted: these
/// are the decisions of the attribute switched on. Errors are the attribute's (not a
/// function, a `const fn`, a misplaced marker), or the parse error of an item that is
/// not valid Rust (which the attribute leaves to rustc to report).
///
/// A function in which nothing is scrambled or left alone gives one decision about the
/// [`Construct::Function`] itself. Loops that accumulate nothing are not listed.
///
/// ```
/// use fprev_expand::{explain_scramble, Construct, Outcome};
/// use quote::quote;
///
/// let decisions = explain_scramble(
///     quote!(),
///     quote! {
///         fn prefix(v: &mut [f64]) -> f64 {
///             let mut s = 0.0;
///             for x in v.iter_mut() {
///                 s += *x;
///                 *x = s;
///             }
///             v.iter().map(|x| x * x).sum()
///         }
///     },
/// )
/// .expect("a function");
/// let seen: Vec<(Construct, bool)> = decisions
///     .iter()
///     .map(|d| (d.construct, d.outcome.is_scrambled()))
///     .collect();
/// assert_eq!(
///     seen,
///     [(Construct::ForLoop, false), (Construct::IterReduction, true)]
/// );
/// assert_eq!(
///     decisions[0].outcome.reason(),
///     Some("order-carrying: reads `s` besides adding to `s`")
/// );
/// ```
pub fn explain_scramble(args: TokenStream, item: TokenStream) -> syn::Result<Vec<Decision>> {
    let mut record = Vec::new();
    scramble::recorded(args, item.clone(), &mut record)?;
    if record.is_empty() {
        // The rewriter records at least the function itself: it never ran, so the item
        // did not parse.
        syn::parse2::<syn::Item>(item)?;
    }
    Ok(record)
}
