//! `#[accumulator]`: parse the arguments ([`args`]), check them against the function
//! ([`registration`]), then rewrite its accumulation sites ([`sites`]) and generate the frame
//! and the registration ([`expand`]).
//!
//! [`accumulator`] is where the two ways of reading the body part: statement by statement
//! ([`by_statements`]: only the runs of statements that its [`prefilter`] keeps are
//! parsed) or the whole item at once ([`whole`], for everything the first declines).
//! Both feed the same [`expand::rewrite_body`], so they give the same expansion.

mod args;
mod exits;
mod expand;
mod prefilter;
mod registration;
mod sites;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod snapshot_tests;

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit_mut::VisitMut;

use crate::runs::{pieces, split_inner_attributes, Body};

/// The whole attribute: never fails to emit the user's item.
pub fn accumulator(args: TokenStream, item: TokenStream) -> TokenStream {
    if cfg!(feature = "off") && !names_acc(&item) && Body::split(&item).is_some() {
        // A function with nothing to strip: as written, its body unparsed.
        return item;
    }
    if !cfg!(feature = "off") {
        if let Some((code, errors)) = by_statements(args.clone(), &item) {
            let errors = errors.map(syn::Error::into_compile_error);
            return quote!(#errors #code);
        }
    }
    whole(args, item)
}

/// The rewritten item and the errors found in its body, with only the runs of statements
/// that may hold a site, an exit or a name the rewriter counts parsed (see
/// [`prefilter`]); the others come back token for token. `None` to have the whole item
/// parsed instead: anything unexpected (a run that does not parse, a signature that is
/// not a plain function's, an argument error to report) declines.
fn by_statements(
    args: TokenStream,
    item: &TokenStream,
) -> Option<(TokenStream, Option<syn::Error>)> {
    let Body { head, body, func } = Body::split(item)?;
    let plan = args::parse(args)
        .and_then(|a| registration::validate(a, &func))
        .ok()?;
    // `func` has no body: a registration whose body names `Self` has an error to report.
    if plan.registration.is_some() && registration::names_self(body.stream()).is_some() {
        return None;
    }
    let (inner, statements) = split_inner_attributes(body.stream());
    let pieces = pieces(statements, prefilter::may_hold_a_site)?;
    let expand::Rewritten {
        prelude,
        stmts,
        errors,
    } = expand::rewrite_body(&plan, &func.sig, pieces)?;
    let mut stream = inner;
    stream.extend(prelude);
    stream.extend(stmts);
    Some((Body::assemble(&head, &body, stream), errors))
}

/// The attribute with the whole item parsed at once: what [`by_statements`] must give,
/// and where it declines (argument errors, declarations, runs that do not parse on their
/// own).
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
    let parsed = args::parse(args).and_then(|a| registration::validate(a, &func));
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
    struct StripAcc;
    impl VisitMut for StripAcc {
        fn visit_local_mut(&mut self, l: &mut syn::Local) {
            l.attrs.retain(|a| !a.path().is_ident("acc"));
            syn::visit_mut::visit_local_mut(self, l);
        }
        fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    }
    StripAcc.visit_block_mut(&mut func.block);
    func
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registration_whose_body_names_self_is_left_to_the_whole_item() {
        // The signature alone does not show the `Self` that validation must report.
        let args = quote!(reveal(op = "sum", sizes = [8]));
        let item = quote!(
            fn m(x: &[f64]) -> f64 {
                Self::total(x)
            }
        );
        assert!(by_statements(args.clone(), &item).is_none());
        let item = quote!(
            fn m(x: &[f64]) -> f64 {
                total(x)
            }
        );
        assert!(by_statements(args, &item).is_some());
    }
}
