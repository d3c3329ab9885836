//! `#[accumulator]`: parse the arguments ([`args`]), check them against the function
//! ([`validate`]), rewrite its accumulation sites ([`sites`]) and generate the frame and
//! registration ([`expand`]).

mod args;
mod chunks;
mod exits;
mod expand;
mod sites;
mod validate;

#[cfg(test)]
mod snapshot_tests;

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit_mut::VisitMut;

/// The whole attribute: never fails to emit the user's item.
pub fn accumulator(args: TokenStream, item: TokenStream) -> TokenStream {
    if cfg!(feature = "off") && !names_acc(&item) && crate::runs::Body::split(&item).is_some() {
        // A function with nothing to strip: as written, its body unparsed.
        return item;
    }
    if !cfg!(feature = "off") {
        if let Some((code, errors)) = chunks::expand(args.clone(), &item) {
            let errors = errors.map(syn::Error::into_compile_error);
            return quote!(#errors #code);
        }
    }
    whole(args, item)
}

/// The attribute with the whole item parsed at once: what the statement-by-statement
/// path ([`chunks`]) must give, and where it declines (argument errors, declarations,
/// runs that do not parse on their own).
fn whole(args: TokenStream, item: TokenStream) -> TokenStream {
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            // A declaration without a body (`fn f(&self) -> f64;` in a trait) parses as
            // a trait item: it is a function, only one with nothing to rewrite.
            let e = match syn::parse2::<syn::TraitItemFn>(item.clone()) {
                Ok(decl) if decl.default.is_none() => syn::Error::new_spanned(
                    &decl.sig,
                    "#[accumulator] needs a function body to rewrite: put it on the implementation of this method, not on its declaration",
                ),
                _ => syn::Error::new_spanned(
                    &item,
                    "#[accumulator] goes on a function (`fn`, free or in an `impl`)",
                ),
            }
            .into_compile_error();
            return quote!(#e #item);
        }
    };
    if cfg!(feature = "off") {
        return off(item, func);
    }
    let parsed = args::parse(args).and_then(|a| validate::validate(a, &func));
    match parsed {
        Ok(plan) => {
            let (code, errors) = expand::expand(&plan, func);
            let errors = errors.map(syn::Error::into_compile_error);
            quote!(#errors #code)
        }
        Err(e) => {
            let e = e.into_compile_error();
            let clean = strip_acc(func);
            quote!(#e #clean)
        }
    }
}

/// Whether `item` names `acc` anywhere (an `#[acc]` to strip or to read).
fn names_acc(item: &TokenStream) -> bool {
    item.clone()
        .into_iter()
        .any(|t| crate::runs::names(&t, &|n| n == "acc"))
}

/// With the `off` feature: the item token for token, except that inner `#[acc]`
/// attributes (which are not valid Rust on their own) are removed.
fn off(item: TokenStream, func: syn::ItemFn) -> TokenStream {
    if !names_acc(&item) {
        return item;
    }
    let clean = strip_acc(func);
    quote!(#clean)
}

fn strip_acc(mut func: syn::ItemFn) -> syn::ItemFn {
    struct Strip;
    impl VisitMut for Strip {
        fn visit_local_mut(&mut self, l: &mut syn::Local) {
            l.attrs.retain(|a| !a.path().is_ident("acc"));
            syn::visit_mut::visit_local_mut(self, l);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    Strip.visit_block_mut(&mut func.block);
    func
}
