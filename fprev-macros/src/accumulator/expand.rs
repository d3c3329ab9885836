//! Code generation for `#[accumulator]`: the rewritten function, its sites and frame,
//! and the registration.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::visit_mut::VisitMut;

use super::args::Op;
use super::sites::{frame_ident, var_counter, Collector, Kind, Rewriter, Scope};
use super::validate::{Plan, Registration};

/// Rewrite `item` according to `plan`. Returns the errors found in the body (`#[acc]`
/// misuse) beside the code, so the item is always emitted.
pub fn expand(plan: &Plan, mut item: syn::ItemFn) -> (TokenStream, Option<syn::Error>) {
    let krate = &plan.krate;
    let mut collector = Collector::new();
    collector.visit_block_mut(&mut item.block);
    collector.finish();
    for name in super::sites::running(&item.block, &collector.vars) {
        collector.sites[collector.vars[&name]].running = true;
    }
    let errors = collector.errors.into_iter().reduce(|mut a, b| {
        a.combine(b);
        a
    });
    let statics = syn::Ident::new("__FPREV_SITES", Span::call_site());
    let mut rw = Rewriter {
        krate,
        sites: collector.sites,
        vars: collector.vars,
        statics: statics.clone(),
        scopes: vec![Scope::new(None)],
        captured: collector.captured,
        exits: super::exits::visible(&item),
        returns: false,
        frames: 0,
    };
    rw.visit_block_mut(&mut item.block);
    let sites = rw.sites;
    let root = rw.scopes.pop().expect("the function's frame");

    let fn_name = item.sig.ident.to_string();
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
            let at = crate::respan::respan(krate, s.span);
            let (line, column) = (
                quote_spanned!(s.span=> #at::__private::core::line!()),
                quote_spanned!(s.span=> #at::__private::core::column!()),
            );
            let running = s.running.then(|| quote!(.running_value()));
            quote! {
                #krate::__private::chains::Site::new(
                    #krate::__private::core::concat!(#krate::__private::core::module_path!(), "::", #fn_name),
                    #krate::__private::core::file!(), #line, #column, #text,
                    #krate::__private::chains::SiteKind::#kind,
                ) #running
            }
        });
        prelude.extend(quote! {
            #[allow(non_upper_case_globals)]
            static #statics: [#krate::__private::chains::Site; #n] = [#(#entries),*];
        });
        if sites.iter().any(|s| s.kind == Kind::Iterator) {
            prelude.extend(quote! {
                #[allow(unused_imports)]
                use #krate::__private::chains::{ViaIterator as _, ViaOther as _};
            });
        }
    }
    // The function's frame: merged at its exits, written out, when they are all visible
    // (and then also when empty, if a `return` was rewritten to merge it), else on drop.
    let merge_at_exits = rw.exits.is_some() && (!root.is_empty() || rw.returns);
    if !root.is_empty() || merge_at_exits {
        prelude.extend(frame_decl(krate, &statics, &root, 0, !merge_at_exits));
    }
    // The registration goes inside the body: valid wherever a function is (a `const _`
    // beside an associated function is not), and there its path from the module still
    // names a free function.
    if let Some(r) = &plan.registration {
        prelude.extend(register(krate, &item.sig.ident, r));
        prelude.extend(quote! {
            static __FPREV_ARRIVAL: #krate::__private::registry::Arrival =
                #krate::__private::registry::Arrival::new();
            __FPREV_ARRIVAL.arrive();
        });
    }
    if prelude.is_empty() {
        return (quote!(#item), errors);
    }
    // Emitted as tokens, not parsed back (that was a second parse of the whole body):
    // outer attributes and the signature, then the body with its inner attributes
    // first, the prelude, and the statements.
    let syn::ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = &item;
    let (outer, inner): (Vec<&syn::Attribute>, Vec<&syn::Attribute>) = attrs
        .iter()
        .partition(|a| matches!(a.style, syn::AttrStyle::Outer));
    let stmts = &block.stmts;
    let stmts = match (&rw.exits, merge_at_exits) {
        (Some(ret), true) => exit_with(krate, ret, quote!({ #(#stmts)* })),
        _ => quote!(#(#stmts)*),
    };
    let mut body = proc_macro2::Group::new(
        proc_macro2::Delimiter::Brace,
        quote!(#(#inner)* #prelude #stmts),
    );
    body.set_span(block.brace_token.span.join());
    (quote!(#(#outer)* #vis #sig #body), errors)
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

/// A frame's counters: a struct of its own (`__FprevFrame<n>`) holding the counters
/// only this frame uses, in the local `__fprev_frame`, and a local of its own for each
/// counter a closure uses (see [`Scope`]), merged into its site when dropped. The frame
/// is merged at the function's exits, written out (see [`exits`](super::exits)), or,
/// with `on_drop`, when it drops (also on `?` and panic).
///
/// One frame rather than a local per site: the borrow checker traces every local that
/// needs dropping through the whole function, and a 2,000-line function with 195
/// counters took 2.6x its plain compile time with a local per counter.
pub fn frame_decl(
    krate: &TokenStream,
    statics: &syn::Ident,
    scope: &Scope,
    n: usize,
    on_drop: bool,
) -> TokenStream {
    let chains = quote!(#krate::__private::chains);
    let new = |k: usize, kind: Kind| match kind {
        Kind::Place => quote!(#chains::PlaceChain::new(&#statics, #k)),
        _ => quote!(#chains::VarChain::new(&#statics, #k)),
    };
    let (f, ty) = (
        frame_ident(),
        syn::Ident::new(&format!("__FprevFrame{n}"), Span::mixed_site()),
    );
    let fields = scope.members.iter().map(|&(_, kind)| match kind {
        Kind::Place => quote!(#chains::PlaceChain),
        _ => quote!(#chains::VarChain),
    });
    let slots = (0..scope.members.len()).map(syn::Index::from);
    let values = scope.members.iter().map(|&(k, kind)| new(k, kind));
    // On the struct itself, not through a wrapper: `frame.0.add(.., frame.1.c)` then
    // borrows two fields, where a `DerefMut` would borrow the whole frame twice.
    let on_drop = on_drop.then(|| {
        quote! {
            impl #krate::__private::core::ops::Drop for #ty {
                #[inline]
                fn drop(&mut self) {
                    #chains::Finish::finish(self);
                }
            }
        }
    });
    let captured = scope.captured.iter().map(|&k| {
        let (v, new) = (var_counter(k), new(k, Kind::Variable));
        quote! {
            #[allow(unused_mut, unused_variables)]
            let mut #v = #chains::OnDrop(#new);
        }
    });
    quote! {
        #[allow(non_camel_case_types)]
        struct #ty(#(#fields),*);
        impl #chains::Finish for #ty {
            #[inline]
            fn finish(&mut self) {
                #(#chains::Finish::finish(&mut self.#slots);)*
            }
        }
        #on_drop
        #[allow(unused_mut, unused_variables)]
        let mut #f = #ty(#(#values),*);
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
