//! Updates inside a loop that owns their place: each term goes to the place's reducer
//! (single or keyed), and a rebuilt vector's elements to its keyed reducer.

use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Ident};

use super::{keyed_on, LoopRewriter, Reducer};
use crate::scramble::keyed;
use crate::scramble::places::{self, Form};

impl LoopRewriter<'_> {
    /// An update of a place owned by an enclosing loop's reducer.
    pub(super) fn update(&mut self, e: &mut Expr) -> bool {
        if self.active.is_empty() {
            return false;
        }
        let Some(u) = places::update_of(e) else {
            return false;
        };
        let (r, simple) = match self.active.get(&u.key).cloned() {
            Some(Reducer::Single(r, simple)) => (r, simple),
            Some(Reducer::Keyed(r, index)) => return self.keyed_update(e, r, index),
            None => return false,
        };
        let form = u.form;
        // Rewrite nested sites in the term first (an iterator sum inside it, say).
        let mut term = u.term.clone();
        self.visit_expr_mut(&mut term);
        let span = e.span();
        let method = match form {
            Form::AddAssign => "add_assign",
            Form::SubAssign => "sub_assign",
            Form::AddRight => "add_right",
            Form::AddLeft => "add_left",
            Form::SubRight => "sub_right",
        };
        let method = Ident::new(method, span);
        // The original update, its term rewritten the same way.
        let mut original = e.clone();
        match &mut original {
            Expr::Binary(b) => *b.right = term.clone(),
            Expr::Assign(a) => {
                if let Expr::Binary(b) = &mut *a.right {
                    match form {
                        Form::AddLeft => *b.left = term.clone(),
                        _ => *b.right = term.clone(),
                    }
                } else if let Expr::Paren(p) = &mut *a.right {
                    if let Expr::Binary(b) = &mut *p.expr {
                        match form {
                            Form::AddLeft => *b.left = term.clone(),
                            _ => *b.right = term.clone(),
                        }
                    }
                }
            }
            _ => {}
        }
        // The user's own parentheses around the term would become a call argument's
        // (`unused_parens`); the original update keeps them.
        let mut arg = &term;
        while let Expr::Paren(p) = arg {
            arg = &p.expr;
        }
        *e = match (form, &original) {
            // A single call: the place takes the term when off (same `AddAssign`), the
            // reduction when on.
            (Form::AddAssign | Form::SubAssign, _) if simple => {
                let place = u.place;
                let method = Ident::new(&format!("{method}_at"), span);
                Expr::Verbatim(quote_spanned! {span=> #r.#method(&mut #place, #arg) })
            }
            // `P = P + e` becomes `P = r.add_right_to(P, e)`: the same reads, the same
            // `Add` when off and the same write, in the same order; when on the term goes
            // to the reduction and `P` keeps its value.
            (Form::AddRight | Form::AddLeft | Form::SubRight, Expr::Assign(a)) => {
                let mut rhs = &*a.right;
                while let Expr::Paren(p) = rhs {
                    rhs = &p.expr;
                }
                match rhs {
                    Expr::Binary(b) => {
                        let lhs = &a.left;
                        let method = Ident::new(&format!("{method}_to"), span);
                        let (first, second) = match form {
                            Form::AddLeft => (arg, &*b.right),
                            _ => (&*b.left, arg),
                        };
                        Expr::Verbatim(quote_spanned! {span=>
                            #lhs = #r.#method(#first, #second)
                        })
                    }
                    _ => Expr::Verbatim(quote_spanned! {span=>
                        if #r.on() { #r.#method(#arg) } else { #original }
                    }),
                }
            }
            _ => Expr::Verbatim(quote_spanned! {span=>
                if #r.on() { #r.#method(#arg) } else { #original }
            }),
        };
        true
    }

    /// An update of an element of a keyed reduction owned by an enclosing loop
    /// (`acc[j] += t` becomes `r.add_assign_at((j,), &mut acc[j], t)`); `index`: the
    /// element loop's index for `*g_j` (the key), else the key is the place's indices.
    fn keyed_update(&mut self, e: &mut Expr, r: Ident, index: Option<Ident>) -> bool {
        let Some(u) = places::update_of(e) else {
            return false;
        };
        let (form, place) = (u.form, u.place.clone());
        let mut term = u.term.clone();
        self.visit_expr_mut(&mut term);
        let span = e.span();
        let key = match index {
            Some(j) => quote_spanned!(span=> (#j,)),
            None => {
                let idx = keyed::indices(&place);
                quote_spanned!(span=> (#(#idx,)*))
            }
        };
        let mut arg = &term;
        while let Expr::Paren(p) = arg {
            arg = &p.expr;
        }
        let on = keyed_on(&r);
        let original = match form {
            Form::AddAssign => quote_spanned!(span=> #place += #term),
            Form::SubAssign => quote_spanned!(span=> #place -= #term),
            Form::AddRight => quote_spanned!(span=> #place = #place + #term),
            Form::AddLeft => quote_spanned!(span=> #place = #term + #place),
            Form::SubRight => quote_spanned!(span=> #place = #place - #term),
        };
        let call = match form {
            Form::AddAssign => {
                quote_spanned! {span=> #r.add_assign_at(#key, &mut #place, #arg) }
            }
            Form::SubAssign => {
                quote_spanned! {span=> #r.sub_assign_at(#key, &mut #place, #arg) }
            }
            // `P = P + e` becomes `P = r.add_right_to(key, P, e)`, as for one place.
            Form::AddRight => {
                quote_spanned! {span=> #place = #r.add_right_to(#key, #place, #arg) }
            }
            Form::AddLeft => {
                quote_spanned! {span=> #place = #r.add_left_to(#key, #arg, #place) }
            }
            Form::SubRight => {
                quote_spanned! {span=> #place = #r.sub_right_to(#key, #place, #arg) }
            }
        };
        *e = Expr::Verbatim(quote_spanned! {span=> if #on { #call } else { #original } });
        true
    }

    /// A vector rebuilt from itself whose keyed reduction an enclosing loop owns:
    /// `v = a.iter().zip(v.iter()).map(|(&e, &s)| t + s).collect()` becomes
    /// `v = a.iter().zip(v.iter()).enumerate().map(|(j, (&e, &s))| r.add_left_to((j,), t,
    /// s)).collect()`: the same `Add` when off, the term to element `j`'s reduction when
    /// on (the element keeps its value until the write-back after the loop).
    pub(super) fn rebuild(&mut self, e: &mut Expr) -> bool {
        let Some(rb) = keyed::rebuild_of(e) else {
            return false;
        };
        let Some(Reducer::Keyed(r, _)) = self.active.get(&places::key_of(&rb.place)).cloned()
        else {
            return false;
        };
        let span = e.span();
        let j = Ident::new("__fprev_j", Span::mixed_site());
        let (target, zip, collect) = (rb.target, rb.zip, rb.collect);
        let (acc, mut term) = (rb.acc, rb.term.clone());
        self.visit_expr_mut(&mut term);
        let pat = &rb.closure.inputs[0];
        let mut lets = Vec::new();
        let mut body = &*rb.closure.body;
        while let Expr::Block(b) = body {
            if let Some((syn::Stmt::Expr(last, None), before)) = b.block.stmts.split_last() {
                lets.extend(before.iter().cloned());
                body = last;
            } else {
                break;
            }
        }
        let call = match rb.form {
            Form::AddLeft => quote_spanned!(span=> #r.add_left_to((#j,), #term, #acc)),
            Form::SubRight => quote_spanned!(span=> #r.sub_right_to((#j,), #acc, #term)),
            _ => quote_spanned!(span=> #r.add_right_to((#j,), #acc, #term)),
        };
        let turbofish = &collect.turbofish;
        let rewritten = quote_spanned! {span=>
            #target = #zip.enumerate().map(|(#j, #pat)| { #(#lets)* #call }).collect #turbofish ()
        };
        *e = Expr::Verbatim(rewritten);
        true
    }
}
