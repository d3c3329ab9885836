//! Code generation for `#[accumulator]`: the rewritten function, its sites and frame,
//! and the registration.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::parse::Parser;
use syn::visit_mut::VisitMut;
use syn::Stmt;

use super::args::Op;
use super::sites::{frame_ident, var_counter, Collector, Kind, Rewriter, Scope};
use super::validate::{Plan, Registration};

/// A run of the body's statements: parsed (and rewritten), or passed through as
/// tokens (see [`chunks`](super::chunks)).
pub enum Piece {
    Parsed(Vec<Stmt>),
    Verbatim(Vec<proc_macro2::TokenTree>),
}

/// A rewritten body: what goes before the statements (the sites' table, the frame, the
/// registration), the statements, and the errors found in them (`#[acc]` misuse).
pub struct Rewritten {
    pub prelude: TokenStream,
    pub stmts: TokenStream,
    pub errors: Option<syn::Error>,
}

/// Rewrite `item` according to `plan`. Returns the errors found in the body (`#[acc]`
/// misuse) beside the code, so the item is always emitted.
pub fn expand(plan: &Plan, item: syn::ItemFn) -> (TokenStream, Option<syn::Error>) {
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
    // Emitted as tokens, not parsed back (that was a second parse of the whole body):
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
/// [`chunks::may_hold_a_site`](super::chunks::may_hold_a_site)); those that name an
/// accumulator are parsed here, once the accumulators are known (a `let` that declares
/// one restarts its chain, a closure that reads one captures its counter).
pub fn rewrite_body(
    plan: &Plan,
    sig: &syn::Signature,
    mut pieces: Vec<Piece>,
) -> Option<Rewritten> {
    let krate = &plan.krate;
    let mut collector = Collector::new();
    for (i, piece) in pieces.iter_mut().enumerate() {
        if let Piece::Parsed(stmts) = piece {
            collector.position = (i, 0);
            for s in stmts {
                collector.visit_stmt_mut(s);
            }
        }
    }
    // Runs passed as tokens that name an accumulator are parsed after all, and visited
    // in their place (by position).
    let floats = collector.float_vars();
    if !floats.is_empty() {
        for (i, piece) in pieces.iter_mut().enumerate() {
            if let Piece::Verbatim(run) = piece {
                if super::chunks::names_any(run, &floats) {
                    let tokens = run.iter().cloned().collect();
                    let mut stmts = syn::Block::parse_within.parse2(tokens).ok()?;
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
    let parsed = || {
        pieces.iter().flat_map(|p| match p {
            Piece::Parsed(stmts) => stmts.as_slice(),
            Piece::Verbatim(_) => &[],
        })
    };
    let running = super::sites::running(parsed(), &collector.vars);
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
    let exits = super::exits::visible(sig, parsed());
    let mut rw = Rewriter {
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
    let sites = rw.sites;
    let root = rw.scopes.pop().expect("the function's frame");

    let fn_name = sig.ident.to_string();
    let mut prelude = TokenStream::new();
    if !sites.is_empty() {
        let n = sites.len();
        let entries = sites.iter().map(|s| {
            let kind = match s.kind {
                Kind::Variable => quote!(Variable),
                Kind::Place => quote!(Place),
                Kind::Iterator => quote!(Iterator),
            };
            let text = &s.text;
            // `Site::here` takes its file, line and column from where it is called: the
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
        prelude.extend(quote! {
            const __FPREV_FN: &str = #krate::__private::core::concat!(
                #krate::__private::core::module_path!(), "::", #fn_name
            );
            #[allow(non_upper_case_globals)]
            static #statics: [#krate::__private::chains::Site; #n] = [#(#entries),*];
        });
        if sites.iter().any(|s| s.kind == Kind::Iterator) {
            prelude.extend(quote! {
                #[allow(unused_imports)]
                use #krate::__private::chains::ViaOther as _;
            });
        }
    }
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

/// The statements that leave the function with `value` when its frame is merged at
/// its exits (the end of the body and each `return`): `value` bound to the return type
/// `ret` first, as the plain code computes it, then the frame merged, then the value.
pub fn exit_with(krate: &TokenStream, ret: &TokenStream, value: TokenStream) -> TokenStream {
    let (f, v) = (
        frame_ident(),
        quote_spanned!(Span::mixed_site()=> __fprev_ret),
    );
    quote! {
        #[allow(unused_variables)]
        let #v: #ret = #value;
        #[allow(unreachable_code)]
        #krate::__private::chains::Finish::finish(&mut #f);
        #v
    }
}

/// A frame's counters: the counters only this frame uses in one `Frame`, in the local
/// `__fprev_frame`, and a frame of its own for each counter a closure uses (see
/// [`Scope`]), merged into its site when dropped. The frame is merged at the function's
/// exits, written out (see [`exits`](super::exits)), or, with `on_drop`, when it drops
/// (also on `?` and panic).
///
/// One local rather than one per site: the borrow checker traces every local that
/// needs dropping through the whole function, and a 2,000-line function with 195
/// counters took 2.6x its plain compile time with a local per counter. One value built
/// by one call rather than a struct with a field per counter: a call per counter to
/// build it and another to merge it cost that function 0.25 G compiler instructions.
pub fn frame_decl(
    krate: &TokenStream,
    statics: &syn::Ident,
    scope: &Scope,
    on_drop: bool,
) -> TokenStream {
    let chains = quote!(#krate::__private::chains);
    let f = frame_ident();
    let (vars, places) = (&scope.vars, &scope.places);
    // An empty frame (a function whose `return`s merge it, with no site of its own)
    // names no table: the function has none.
    let table = if vars.is_empty() && places.is_empty() {
        quote!(&[])
    } else {
        quote!(&#statics)
    };
    let frame = quote!(#chains::Frame::new(#table, &[#(#vars),*], &[#(#places),*]));
    let frame = if on_drop {
        quote!(#chains::OnDrop(#frame))
    } else {
        frame
    };
    let captured = scope.captured.iter().map(|&k| {
        let v = var_counter(k);
        quote! {
            #[allow(unused_mut, unused_variables)]
            let mut #v = #chains::OnDrop(#chains::Frame::new(&#statics, &[#k], &[]));
        }
    });
    quote! {
        #[allow(unused_mut, unused_variables)]
        let mut #f = #frame;
        #(#captured)*
    }
}

fn register(krate: &TokenStream, ident: &syn::Ident, r: &Registration) -> TokenStream {
    let (adapter, op) = match r.op {
        Op::Sum => (quote!(sum), quote!(Sum)),
        Op::Dot => (quote!(dot), quote!(Dot)),
        Op::Gemv => (quote!(gemv), quote!(Gemv)),
        Op::Gemm => (quote!(gemm), quote!(Gemm)),
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
