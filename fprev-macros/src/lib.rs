//! Procedural macros of fprev. Use them through the `fprev` crate (`#[fprev::scramble]`,
//! `#[fprev::accumulator]`); expansions refer only to `::fprev::__private`.

use proc_macro::TokenStream;

mod scramble;

/// Scrambles the iteration order of a function's loops when fprev's scrambling is on.
///
/// See the `fprev::scramble` attribute's documentation in the facade crate (re-exported
/// there with examples). Summary of what it rewrites, inside the function body:
///
/// - `for` loops over `a..b`, `a..=b`, `&v`, `&mut v`, `v.iter()`, `v.iter_mut()`,
///   `v.chunks(k)` (optionally `.rev()`, `.step_by(k)`, `.enumerate()`); loops that leave
///   early (`break`, `return`, `?`, labelled exits) are left alone unless forced;
/// - rayon chains from `par_iter()`, `par_iter_mut()`, `par_chunks(k)`,
///   `(a..b).into_par_iter()` through position-independent adapters to a
///   position-independent consumer (`sum`, `reduce`, `for_each`, ...).
///
/// Options: `outer` | `all` (default), `force`, `shuffle = "fisher-yates" | "sattolo" |
/// "identity"`, `crate = "path"`. Per loop: `#[scramble(skip)]`, `#[scramble(force)]`.
#[proc_macro_attribute]
pub fn scramble(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    scramble::expand::scramble(args.into(), item.clone())
        .unwrap_or_else(|e| scramble::with_error(item, e))
        .into()
}

/// Placeholder until the accumulator issue lands: emits the item unchanged.
#[proc_macro_attribute]
pub fn accumulator(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
