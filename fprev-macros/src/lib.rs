//! Procedural macros of fprev. Use them through the `fprev` crate (`#[fprev::scramble]`,
//! `#[fprev::accumulator]`); expansions refer only to `::fprev::__private`.

use proc_macro::TokenStream;

/// Placeholder until the scramble issue lands: emits the item unchanged.
#[proc_macro_attribute]
pub fn scramble(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// Placeholder until the accumulator issue lands: emits the item unchanged.
#[proc_macro_attribute]
pub fn accumulator(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
