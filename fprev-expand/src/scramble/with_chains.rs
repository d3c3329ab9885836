//! `#[scramble(chains)]`: the function compiled with two bodies, the scrambled one and
//! `#[accumulator]`'s chain-counting one, chosen once per process (`FPREV_CHAINS=1`
//! counts). One build then serves both `cargo fprev test` and `cargo fprev chains`.
//!
//! The bodies are the two attributes' own expansions of the same item, so each reads the
//! function exactly as its attribute alone would. A function whose body cannot be
//! written twice ([`why_not`]) keeps the scrambled body only.

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use syn::Path;

use crate::runs::{names, split_inner_attributes, Body};

/// The scrambled expansion `scrambled` of `item`, with the chain-counting body beside it
/// when the function allows two bodies and has a site to count.
pub(crate) fn alongside(scrambled: TokenStream, item: TokenStream, krate: &Path) -> TokenStream {
    if why_not(&item).is_some() {
        return scrambled;
    }
    let Some(s) = Body::split(&scrambled) else {
        return scrambled;
    };
    let krate_text = quote!(#krate).to_string();
    let counted =
        crate::accumulator::accumulator(quote!(crate = #krate_text), super::strip_markers(item));
    // An expansion with errors has them before the item: it does not split, and the
    // function keeps its scrambled body only (the counting body's errors are not the
    // user's to fix).
    let Some(c) = Body::split(&counted) else {
        return scrambled;
    };
    let has_sites = c
        .body
        .stream()
        .into_iter()
        .any(|t| names(&t, &|n| n == "__FPREV_SITES"));
    if !has_sites {
        return scrambled;
    }
    let (inner, scrambled_body) = split_inner_attributes(s.body.stream());
    let (_, counted_body) = split_inner_attributes(c.body.stream());
    let scrambled_body: TokenStream = scrambled_body.into_iter().collect();
    let counted_body: TokenStream = counted_body.into_iter().collect();
    let stream = quote! {
        #inner
        if #krate::__private::chains::counting() { #counted_body } else { #scrambled_body }
    };
    Body::assemble(&s.head, &s.body, stream)
}

/// Why `item` cannot carry two bodies, or `None` when it can.
pub(crate) fn why_not(item: &TokenStream) -> Option<&'static str> {
    let Some(Body { body, func, .. }) = Body::split(item) else {
        return Some("not a function with a body");
    };
    if func.sig.asyncness.is_some() {
        return Some("an `async fn`: its future would hold both bodies' state");
    }
    if func.sig.constness.is_some() {
        return Some("a `const fn`");
    }
    let output = match &func.sig.output {
        syn::ReturnType::Default => TokenStream::new(),
        syn::ReturnType::Type(_, ty) => quote!(#ty),
    };
    if output.into_iter().any(|t| names(&t, &|n| n == "impl")) {
        return Some("returns `impl Trait`: the two bodies would return two types");
    }
    let once_only = |n: &str| matches!(n, "impl" | "no_mangle" | "export_name" | "macro_export");
    if body
        .stream()
        .into_iter()
        .any(|t: TokenTree| names(&t, &once_only))
    {
        return Some(
            "its body declares an item that may exist once only (an `impl`, \
             `#[no_mangle]`, `#[export_name]` or `#[macro_export]`)",
        );
    }
    None
}
