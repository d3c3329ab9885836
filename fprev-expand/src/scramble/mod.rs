//! `#[scramble]`: rewrite a function's loops and rayon chains to visit their items in a
//! scrambled order when fprev's scrambling is switched on at run time.
//!
//! Stages: [`args`] parses the options and the per-loop markers, [`chunks`] cuts the
//! body into runs of statements and parses only those that can hold a site, [`classify`] decides
//! which accumulations are float reductions whose terms may be reassociated,
//! [`validate`] which loops and chains keep their meaning when reordered, [`plan`] runs
//! both on one loop (for both attributes), [`expand`]
//! generates code and records each decision ([`decision`]).

mod args;
mod chunks;
pub(crate) mod classify;
pub(crate) mod decision;
pub(crate) mod expand;
pub(crate) mod plan;
mod validate;

pub use decision::{Construct, Decision, Outcome, ReasonKind};

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit_mut::{self, VisitMut};

/// The user's item with the per-loop `#[scramble(...)]` markers removed, token for token
/// otherwise (the original stream is returned when it has no markers).
pub(crate) fn strip_markers(item: TokenStream) -> TokenStream {
    let Ok(mut func) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        return item;
    };
    struct Strip(bool);
    impl VisitMut for Strip {
        fn visit_expr_for_loop_mut(&mut self, f: &mut syn::ExprForLoop) {
            let before = f.attrs.len();
            f.attrs.retain(|a| !args::is_marker(a));
            self.0 |= f.attrs.len() != before;
            visit_mut::visit_expr_for_loop_mut(self, f);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    let mut strip = Strip(false);
    strip.visit_block_mut(&mut func.block);
    if strip.0 {
        func.into_token_stream()
    } else {
        item
    }
}

/// The user's item (markers stripped, so rustc does not add noise) followed by `error`.
pub(crate) fn with_error(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut out = strip_markers(item);
    out.extend(error.into_compile_error());
    out
}
#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
