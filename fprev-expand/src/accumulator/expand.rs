//! Code generation for `#[accumulator]`: the rewritten function, its sites and frame,
//! and the registration.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::visit_mut::VisitMut;
use syn::Stmt;

use super::args::ProbedOp;
use super::registration::{RegistrationPlan, ValidRegistration};
use super::sites::{
    exit_with, frame_decl, ChainSite, ChainSiteKind, Collector, Scope, SiteRewriter,
};
use crate::runs::{parse_run, Piece};

/// A rewritten body: what goes before the statements (the sites' table, the frame, the
/// registration), the statements, and the errors found in them (`#[acc]` misuse).
pub struct Rewritten {
    pub prelude: TokenStream,
    pub stmts: TokenStream,
    pub errors: Option<syn::Error>,
}

/// Rewrite `item` according to `plan`. Returns the errors found in the body (`#[acc]`
/// misuse) beside the code, so the item is always emitted.
pub fn expand(plan: &RegistrationPlan, item: syn::ItemFn) -> (TokenStream, Option<syn::Error>) {
    let syn::ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = item;
    let span = block.brace_token.span.join();
    let Some(Rewritten {
        prelude,
        stmts,
        errors,
    }) = rewrite_body(plan, &sig, vec![Piece::Parsed(block.stmts)])
    else {
        unreachable!("a parsed body has no run left to parse")
    };
    // Emitted as tokens, not parsed back (that would be a second parse of the whole body):
    // outer attributes and the signature, then the body with its inner attributes
    // first, the prelude, and the statements.
    let (outer, inner): (Vec<&syn::Attribute>, Vec<&syn::Attribute>) = attrs
        .iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Outer));
    let mut body = proc_macro2::Group::new(
        proc_macro2::Delimiter::Brace,
        quote!(#(#inner)* #prelude #stmts),
    );
    body.set_span(span);
    (quote!(#(#outer)* #vis #sig #body), errors)
}

/// Rewrite the body of the function with signature `sig`, given as runs of statements
/// in order: `None` when a run passed as tokens names an accumulator (so it must be
/// rewritten) and does not parse on its own.
///
/// The runs passed as tokens must hold no site, exit or macro (see
/// [`prefilter::may_hold_a_site`](super::prefilter::may_hold_a_site)); those that name
/// an accumulator are parsed here, once the accumulators are known (a `let` that
/// declares one restarts its chain, a closure that reads one captures its counter).
pub fn rewrite_body(
    plan: &RegistrationPlan,
    sig: &syn::Signature,
    mut pieces: Vec<Piece>,
) -> Option<Rewritten> {
    let krate = &plan.krate;
    let mut collector = collect(&mut pieces)?;
    let running = super::sites::running(parsed(&pieces), &collector.vars);
    for name in &running {
        if let Some(&k) = collector.vars.get(name) {
            collector.sites[k].running = true;
        }
    }
    let errors = collector.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    });
    let statics = syn::Ident::new("__FPREV_SITES", Span::call_site());
    let exits = super::exits::visible(sig, parsed(&pieces));
    let mut rw = SiteRewriter {
        krate,
        sites: collector.sites,
        vars: collector.vars,
        statics: statics.clone(),
        scopes: vec![Scope::new(None, exits.is_none())],
        captured: collector.captured,
        exits,
        returns: false,
        touched: HashSet::new(),
        depth: 0,
        running,
        vectors: collector.vectors,
    };
    let mut stmts = TokenStream::new();
    for piece in pieces {
        match piece {
            Piece::Parsed(run) => {
                for s in rw.rewrite_stmts(run) {
                    s.to_tokens(&mut stmts);
                }
            }
            Piece::Verbatim(run) => stmts.extend(run),
        }
    }
    let root = rw.scopes.pop().expect("the function's frame");
    let mut prelude = site_table(
        krate,
        &sig.ident,
        &rw.sites,
        &statics,
        !rw.vectors.is_empty(),
    );
    // The function's frame: merged at its exits, written out, when they are all visible
    // (and then also when empty, if a `return` was rewritten to merge it), else on drop.
    let merge_at_exits = rw.exits.is_some() && (!root.is_empty() || rw.returns);
    if !root.is_empty() || merge_at_exits {
        prelude.extend(frame_decl(krate, &statics, &root, !merge_at_exits));
    }
    // The registration goes inside the body: valid wherever a function is (a `const _`
    // beside an associated function is not), and there its path from the module still
    // names a free function.
    if let Some(r) = &plan.registration {
        prelude.extend(register(krate, &sig.ident, r));
        prelude.extend(quote! {
            static __FPREV_ARRIVAL: #krate::__private::registry::Arrival =
                #krate::__private::registry::Arrival::new();
            __FPREV_ARRIVAL.arrive();
        });
    }
    let stmts = match (&rw.exits, merge_at_exits) {
        (Some(ret), true) => exit_with(krate, ret, quote!({ #stmts })),
        _ => stmts,
    };
    Some(Rewritten {
        prelude,
        stmts,
        errors,
    })
}

/// The statements of the runs parsed so far, in order.
fn parsed(pieces: &[Piece]) -> impl Iterator<Item = &Stmt> + Clone {
    pieces.iter().flat_map(|p| match p {
        Piece::Parsed(stmts) => stmts.as_slice(),
        Piece::Verbatim(_) => &[],
    })
}

/// The first pass over the body: its accumulators and their sites. Runs passed as tokens
/// that name an accumulator are parsed after all, and visited in their place (by
/// position); `None` when one of them does not parse on its own.
fn collect(pieces: &mut [Piece]) -> Option<Collector> {
    let mut collector = Collector::new();
    for (i, piece) in pieces.iter_mut().enumerate() {
        if let Piece::Parsed(stmts) = piece {
            collector.position = (i, 0);
            for s in stmts {
                collector.visit_stmt_mut(s);
            }
        }
    }
    let floats = collector.float_vars();
    if !floats.is_empty() {
        for (i, piece) in pieces.iter_mut().enumerate() {
            if let Piece::Verbatim(run) = piece {
                if super::prefilter::names_any(run, &floats) {
                    let mut stmts = parse_run(run)?;
                    collector.position = (i, 0);
                    for s in &mut stmts {
                        collector.visit_stmt_mut(s);
                    }
                    *piece = Piece::Parsed(stmts);
                }
            }
        }
    }
    collector.finish();
    Some(collector)
}

/// The function's table of sites, `statics`, and what generated code needs beside it
/// (the function's path, the fallback trait of iterator sites and rebuilt vectors);
/// nothing when the function has no site.
fn site_table(
    krate: &TokenStream,
    fn_ident: &syn::Ident,
    sites: &[ChainSite],
    statics: &syn::Ident,
    vectors: bool,
) -> TokenStream {
    let mut table = TokenStream::new();
    if sites.is_empty() {
        return table;
    }
    let fn_name = fn_ident.to_string();
    let n = sites.len();
    let entries = sites.iter().map(|s| {
        let kind = match s.kind {
            ChainSiteKind::Variable => quote!(Variable),
            ChainSiteKind::Place => quote!(Place),
            ChainSiteKind::Iterator => quote!(Iterator),
        };
        let text = &s.text;
        // `Site::here` (the runtime's) takes its file, line and column from where it is called: the
        // whole call is spanned at the site (a path from the user's code, see
        // [`crate::respan`]).
        let at = crate::respan::respan(krate, s.span);
        let running = s.running.then(|| quote!(.running_value()));
        quote_spanned! {s.span=>
            #at::__private::chains::Site::here(
                __FPREV_FN, #text, #at::__private::chains::SiteKind::#kind,
            ) #running
        }
    });
    table.extend(quote! {
        const __FPREV_FN: &str = #krate::__private::core::concat!(
            #krate::__private::core::module_path!(), "::", #fn_name
        );
        #[allow(non_upper_case_globals)]
        static #statics: [#krate::__private::chains::Site; #n] = [#(#entries),*];
    });
    if vectors || sites.iter().any(|s| s.kind == ChainSiteKind::Iterator) {
        table.extend(quote! {
            #[allow(unused_imports)]
            use #krate::__private::chains::ViaOther as _;
        });
    }
    table
}

fn register(krate: &TokenStream, ident: &syn::Ident, r: &ValidRegistration) -> TokenStream {
    let (adapter, op) = match r.op {
        ProbedOp::Sum => (quote!(sum), quote!(Sum)),
        ProbedOp::Dot => (quote!(dot), quote!(Dot)),
        ProbedOp::Gemv => (quote!(gemv), quote!(Gemv)),
        ProbedOp::Gemm => (quote!(gemm), quote!(Gemm)),
    };
    let f = &r.function;
    let name = ident.to_string();
    let sizes = &r.sizes;
    let turbofish = r.dtype.as_ref().map(|d| quote!(::<#d>));
    // The only use of the function: a wrong signature is one error, on its name.
    let adapter = quote_spanned! {ident.span()=>
        #krate::__private::registry::#adapter #turbofish (#f)
    };
    quote! {
        const _: () = {
            use #krate::__private::registry::Adapter as _;
            fn __fprev_adapter() -> impl #krate::__private::registry::Adapter {
                #adapter
            }
            fn __fprev_reveal(
                n: usize,
                seed: u64,
            ) -> #krate::__private::core::result::Result<#krate::SumTree, #krate::RevealError> {
                #krate::__private::registry::reveal_entered(
                    &__fprev_adapter(),
                    &__FPREV_ARRIVAL,
                    #krate::__private::core::concat!(#krate::__private::core::module_path!(), "::", #name),
                    n,
                    seed,
                )
            }
            fn __fprev_dtype() -> &'static str {
                __fprev_adapter().dtype()
            }
            #krate::__private::inventory::submit! {
                #krate::__private::registry::Registration::new(
                    #krate::__private::core::concat!(#krate::__private::core::module_path!(), "::", #name),
                    #krate::__private::core::file!(),
                    #krate::__private::core::line!(),
                    #krate::__private::registry::Op::#op,
                    &[#(#sizes),*],
                    __fprev_dtype,
                    __fprev_reveal,
                )
            }
        };
    }
}
