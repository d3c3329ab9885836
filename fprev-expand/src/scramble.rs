//! `#[scramble]`: rewrite a function's loops and rayon chains to visit their items in a
//! scrambled order when fprev's scrambling is switched on at run time.
//!
//! Stages: [`args`] parses the options and the per-loop markers, [`classify`] decides
//! which accumulations are float reductions whose terms may be reassociated,
//! [`reorderable`] which loops and chains keep their meaning when reordered, [`plan`] runs
//! both on one loop (for both attributes), and [`expand`] generates code and records
//! each decision ([`decision`]). With `chains`, [`with_chains`] puts `#[accumulator]`'s
//! counting body beside the scrambled one.
//!
//! [`recorded`] is where the two ways of reading the body part: statement by statement
//! ([`by_statements`]: only the runs of statements that its [`prefilter`] keeps are
//! parsed) or the whole item at once ([`whole`], for everything the first declines).
//! Both rewrite with the same [`expand`] code, so they give the same expansion.

mod args;
pub(crate) mod classify;
pub(crate) mod decision;
pub(crate) mod declared;
mod expand;
pub(crate) mod keyed;
pub(crate) mod places;
pub(crate) mod plan;
mod prefilter;
pub(crate) mod reorderable;
pub(crate) mod with_chains;

pub use decision::{Construct, Decision, Outcome, ReasonKind};

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::visit_mut::{self, VisitMut};
use syn::{Ident, Item};

use crate::runs::{pieces, split_inner_attributes, Body};
use args::ScrambleArgs;

/// `#[scramble(args)] item`: the rewritten function, or the errors to show beside the
/// user's item. With the `off` feature the item comes back token for token (only the
/// per-loop markers, which rustc would reject on statements, are removed).
pub(crate) fn scramble(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if cfg!(feature = "off") {
        return Ok(strip_markers(item));
    }
    let chains = ScrambleArgs::parse(args.clone())
        .ok()
        .filter(|a| a.chains)
        .map(|a| a.krate);
    let scrambled = recorded(args, item.clone(), &mut Vec::new())?;
    Ok(match chains {
        Some(krate) => with_chains::alongside(scrambled, item, &krate),
        None => scrambled,
    })
}

/// [`scramble`] as if the `off` feature were not set, its decisions appended to
/// `record` (none when the item is not valid Rust).
pub(crate) fn recorded(
    args: TokenStream,
    item: TokenStream,
    record: &mut Vec<Decision>,
) -> syn::Result<TokenStream> {
    let parsed_args = ScrambleArgs::parse(args);
    if let Ok(args) = &parsed_args {
        if let Some(out) = by_statements(args, &item, record) {
            return out;
        }
    }
    whole(parsed_args, item, record)
}

/// [`recorded`] with only the runs of statements that may hold a site parsed (see
/// [`prefilter`]); the others come back token for token. `None` to have the whole item
/// parsed instead (nothing recorded then): anything unexpected (a run that does not
/// parse, a signature that is not a plain function's) declines.
fn by_statements(
    args: &ScrambleArgs,
    item: &TokenStream,
    record: &mut Vec<Decision>,
) -> Option<syn::Result<TokenStream>> {
    let Body { head, body, func } = Body::split(item)?;
    if func.sig.constness.is_some() {
        return None;
    }
    // Inner attributes (`#![allow(..)]`) stay first in the block, before the prelude.
    let (inner_attributes, statements) = split_inner_attributes(body.stream());
    let pieces = pieces(statements, prefilter::may_hold_a_site)?;
    let (prelude, rewritten) = match expand::rewrite_runs(args, &func.sig, pieces, record) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let mut stream = inner_attributes;
    for stmt in &prelude {
        stmt.to_tokens(&mut stream);
    }
    stream.extend(rewritten);
    Some(Ok(Body::assemble(&head, &body, stream)))
}

/// [`scramble`] with the whole item parsed at once: the path for everything the
/// statement-by-statement path declines (argument errors, items that are not functions,
/// bodies it cannot split).
fn whole(
    parsed_args: syn::Result<ScrambleArgs>,
    item: TokenStream,
    record: &mut Vec<Decision>,
) -> syn::Result<TokenStream> {
    let Ok(parsed) = syn::parse2::<Item>(item.clone()) else {
        // Not valid Rust: leave it to rustc to say so.
        return Ok(item);
    };
    let mut func = match parsed {
        Item::Fn(f) => f,
        other => return Err(not_a_fn(&other)),
    };
    let args = parsed_args?;
    if let Some(c) = func.sig.constness {
        return Err(syn::Error::new_spanned(
            c,
            "#[scramble] cannot rewrite a `const fn`: scrambled reductions call the runtime; remove `const` or the attribute",
        ));
    }
    expand::rewrite_fn(&args, &mut func, record)?;
    Ok(quote!(#func))
}

fn not_a_fn(item: &Item) -> syn::Error {
    let msg =
        "#[scramble] applies to functions: put it on each `fn` whose reductions should be scrambled";
    let spanned =
        |kw: &dyn quote::ToTokens, name: &Ident| syn::Error::new_spanned(quote!(#kw #name), msg);
    match item {
        Item::Struct(s) => spanned(&s.struct_token, &s.ident),
        Item::Enum(e) => spanned(&e.enum_token, &e.ident),
        Item::Impl(i) => syn::Error::new(
            i.impl_token.span,
            "#[scramble] applies to functions, not impl blocks: put it on the methods inside whose reductions should be scrambled",
        ),
        Item::Mod(m) => spanned(&m.mod_token, &m.ident),
        Item::Trait(t) => spanned(&t.trait_token, &t.ident),
        Item::Verbatim(v) if v.to_string().contains("fn") => syn::Error::new_spanned(
            v,
            "#[scramble] needs a function body to rewrite: put it on the implementation, not on a declaration",
        ),
        other => syn::Error::new_spanned(other, msg),
    }
}

/// The user's item with the per-loop `#[scramble(...)]` markers removed, token for token
/// otherwise (the original stream is returned when it has no markers).
pub(crate) fn strip_markers(item: TokenStream) -> TokenStream {
    let Ok(mut func) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        return item;
    };
    struct StripMarkers(bool);
    impl VisitMut for StripMarkers {
        fn visit_expr_for_loop_mut(&mut self, f: &mut syn::ExprForLoop) {
            let before = f.attrs.len();
            f.attrs.retain(|a| !args::is_marker(a));
            self.0 |= f.attrs.len() != before;
            visit_mut::visit_expr_for_loop_mut(self, f);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    let mut strip = StripMarkers(false);
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
mod snapshot_tests;
#[cfg(test)]
mod tests;
