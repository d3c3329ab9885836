//! Iterator reductions (`.sum()`, `.fold(..)`) and rayon chains: their dispatch through
//! the runtime, or the reason they are left alone.

use quote::{quote, quote_spanned, ToTokens};
use syn::{Expr, Ident};

use super::LoopRewriter;
use crate::scramble::decision::{Construct, ReasonKind};
use crate::scramble::reorderable::{self, ParSource};

impl LoopRewriter<'_> {
    /// `.sum()` / `.fold(init, additive closure)` on a temporary iterator.
    pub(super) fn iterator_reduction(&mut self, e: &mut Expr) {
        let Expr::MethodCall(m) = e else { return };
        if reorderable::non_additive_fold(m) {
            if reorderable::max_min_fold(m) {
                self.left_alone(
                    m.method.span(),
                    "fold",
                    Construct::IterReduction,
                    ReasonKind::NotASum,
                    "not a sum (max/min): the fold's closure keeps the largest or smallest value, which no order changes",
                );
            } else {
                self.left_alone(
                    m.method.span(),
                    "fold",
                    Construct::IterReduction,
                    ReasonKind::OrderCarrying,
                    "order-carrying: the fold's closure reads its accumulator besides the final `acc + term` (or leaves early)",
                );
            }
        }
        let tuple = reorderable::tuple_fold(m);
        if !tuple && !reorderable::iterator_reduction(m) {
            return;
        }
        if let Some(ty) = self.iterator_not_a_float(m) {
            let reason = crate::scramble::classify::not_a_float(&format!(".{}(..)", m.method), &ty);
            self.left_alone(
                m.method.span(),
                "sum",
                Construct::IterReduction,
                ReasonKind::NotAFloat,
                &reason,
            );
            return;
        }
        let span = m.method.span();
        let site = self.site_in(span, "sum", "IterReduction", Construct::IterReduction, None);
        let krate = &self.args.krate;
        let mut recv = (*m.receiver).clone();
        while let Expr::Paren(p) = recv {
            recv = *p.expr;
        }
        self.uses_iter = true;
        // A tuple fold's receiver reduces each float component apart.
        let dispatch = Ident::new(
            if tuple {
                "__fprev_reduce_tuple"
            } else {
                "__fprev_reduce"
            },
            span,
        );
        *m.receiver = Expr::Verbatim(quote_spanned! {span=>
            #krate::__private::scramble::Wrap(#recv).#dispatch(#site)
        });
    }

    /// The non-float type an iterator reduction says it sums (`.sum::<Vec2>()`,
    /// `.fold(Vec2::zero(), ..)`), if it says so.
    fn iterator_not_a_float(&self, m: &syn::ExprMethodCall) -> Option<String> {
        if m.method == "sum" {
            let turbofish = m.turbofish.as_ref()?;
            let Some(syn::GenericArgument::Type(ty)) = turbofish.args.first() else {
                return None;
            };
            let tokens: Vec<proc_macro2::TokenTree> = quote!(: #ty = x).into_iter().collect();
            crate::scramble::declared::not_floats(
                quote!(let __fprev_sum #(#tokens)*;),
                &self.generics,
            )
            .into_values()
            .next()
        } else {
            let init: Vec<proc_macro2::TokenTree> =
                m.args.first()?.to_token_stream().into_iter().collect();
            crate::scramble::declared::initializer_says_not_float(&init, &self.generics)
        }
    }

    /// A rayon `.sum()` whose chain keeps positions (`zip`, `enumerate`): the chain runs
    /// as written, the sum's terms are reassociated.
    pub(super) fn par_sum(&mut self, e: &mut Expr) {
        let Expr::MethodCall(m) = e else { return };
        if !reorderable::par_sum(m) {
            return;
        }
        let span = m.method.span();
        let site = self.site_in(span, "sum", "IterReduction", Construct::ParSum, None);
        let krate = &self.args.krate;
        let recv = &m.receiver;
        self.uses_par_sum = true;
        *m.receiver = Expr::Verbatim(quote_spanned! {span=>
            #krate::__private::scramble::Wrap(#recv).__fprev_par_sum(#site)
        });
    }

    /// Whether `e` ends a rayon chain whose source was rewritten to visit its items in a
    /// scrambled order.
    pub(super) fn par_chain(&mut self, e: &mut Expr) -> bool {
        let Expr::MethodCall(call) = e else {
            return false;
        };
        let Some((source, kind)) = reorderable::par_chain_source(call) else {
            return false;
        };
        let span = source.method.span();
        let name = match kind {
            ParSource::ParIter => "__fprev_par_iter",
            ParSource::ParIterMut => "__fprev_par_iter_mut",
            ParSource::ParChunks => "__fprev_par_chunks",
            ParSource::RangeIntoParIter => "__fprev_into_par_iter",
        };
        let site = self.site(span, "par", "Parallel", Construct::ParChain, None);
        source.args.insert(0, Expr::Verbatim(site));
        source.method = Ident::new(name, span);
        self.uses_par = true;
        true
    }
}
