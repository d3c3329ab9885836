//! Loops: the reductions a loop owns, each with a reducer set up before the loop and
//! written back after it, and whole-loop scrambling where declared.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Ident};

use super::{keyed_on, LoopRewriter, Reducer};
use crate::scramble::args::{self, Marker, OrderFreeLoops};
use crate::scramble::classify::LoopPlan;
use crate::scramble::decision::Construct;
use crate::scramble::keyed;
use crate::scramble::places;
use crate::scramble::reorderable;

/// The code a loop's reducers put around it, and the reducers to forget after it.
#[derive(Default)]
struct AroundLoop {
    setup: Vec<TokenStream>,
    finish: Vec<TokenStream>,
    /// Place keys whose reducer is this loop's.
    owned: Vec<String>,
    /// Templates of the keyed reductions this loop owns.
    templates: Vec<String>,
}

impl LoopRewriter<'_> {
    /// `for` and `while` loops: reductions they own, then (for `for`) whole-loop
    /// scrambling where declared.
    pub(super) fn a_loop(&mut self, e: &mut Expr) {
        let (attrs, span, construct) = match e {
            Expr::ForLoop(f) => (&mut f.attrs, f.for_token.span, Construct::ForLoop),
            Expr::While(w) => (&mut w.attrs, w.while_token.span, Construct::WhileLoop),
            Expr::Loop(l) => (&mut l.attrs, l.loop_token.span, Construct::Loop),
            _ => return,
        };
        let marker = match args::take_markers(attrs) {
            Ok(m) => m,
            Err(err) => {
                self.error(err);
                None
            }
        };
        if marker == Some(Marker::Skip) {
            // Keeps its order and owns no reduction; updates of places that an
            // enclosing loop owns are still that loop's.
            self.with_depth(|s| visit_mut::visit_expr_mut(s, e));
            return;
        }
        let element_key = self.enter_element_loop(e);
        let claimed: HashSet<String> = self.active.keys().cloned().collect();
        let Some(plan) = crate::scramble::plan::plan_of(e, &claimed, &self.not_floats) else {
            return;
        };
        for (kind, reason) in &plan.left_alone {
            self.left_alone(span, "loop", construct, *kind, reason);
        }
        // Whole-loop scrambling, where declared.
        if let Expr::ForLoop(f) = e {
            self.declared_loop(f, marker);
        }
        // Reductions: a reducer per owned place, alive around the loop.
        let mut around = AroundLoop::default();
        self.single_reducers(&plan, span, construct, &mut around);
        self.keyed_reducers(&plan, span, construct, &mut around);
        match e {
            Expr::ForLoop(f) => {
                self.visit_expr_mut(&mut f.expr);
                self.with_depth(|s| s.visit_block_mut(&mut f.body));
            }
            Expr::While(w) => {
                self.visit_expr_mut(&mut w.cond);
                self.with_depth(|s| s.visit_block_mut(&mut w.body));
            }
            Expr::Loop(l) => self.with_depth(|s| s.visit_block_mut(&mut l.body)),
            _ => {}
        }
        for key in around.owned {
            self.active.remove(&key);
        }
        for t in around.templates {
            self.keyed_templates.remove(&t);
        }
        if let Some((key, before)) = element_key {
            match before {
                Some(b) => self.active.insert(key, b),
                None => self.active.remove(&key),
            };
        }
        let AroundLoop { setup, finish, .. } = around;
        if !setup.is_empty() {
            let the_loop = e.clone();
            // Marked as the macro's (located at the loop): a block after `if c { .. }` on
            // one line is not the user's missing `else` (clippy `possible_missing_else`).
            let span = Span::mixed_site().located_at(span);
            *e = Expr::Verbatim(quote_spanned! {span=>
                {
                    #(#setup)*
                    #the_loop;
                    #(#finish)*
                }
            });
        }
    }

    /// `#[scramble(loop)]` / `force` on the loop, or `loops` / `outer` on the fn: the
    /// loop visits its items in a scrambled order (collected first, so only finite
    /// iterables of the supported forms).
    fn declared_loop(&mut self, f: &mut syn::ExprForLoop, marker: Option<Marker>) {
        let supported = reorderable::supported_iterable(&f.expr);
        let marked = marker == Some(Marker::Loop);
        if marked && !supported {
            self.error(syn::Error::new_spanned(
                &f.expr,
                format!(
                    "#[scramble(loop)]: cannot scramble a loop over this iterable (it is collected first, so it must be finite and of a known form); supported: {}. Collect it into a Vec and loop over `&v`, or remove the marker",
                    reorderable::SUPPORTED
                ),
            ));
            return;
        }
        let by_fn = match self.args.loops {
            Some(OrderFreeLoops::All) => true,
            Some(OrderFreeLoops::Outer) => self.depth == 0,
            None => false,
        };
        let forced = marked || self.args.force;
        let eligible = marked
            || (by_fn
                && supported
                && (forced || !reorderable::exits_early(f.label.as_ref(), &f.body)));
        if !eligible {
            return;
        }
        let span = f.for_token.span;
        let site = self.site(span, "loop", "Loop", Construct::DeclaredLoop, None);
        let krate = &self.args.krate;
        let iterable = f.expr.clone();
        *f.expr = Expr::Verbatim(quote_spanned! {span=>
            #krate::__private::scramble::Scrambler::maybe_shuffled(
                #krate::__private::scramble::loops(#site),
                #iterable,
            )
        });
    }

    /// What a loop owns, around it: the element loop it is, if any, over an array whose
    /// keyed reduction an enclosing loop owns (its element's updates are that
    /// reduction's, keyed by the loop's index): the element's key and the reducer it
    /// replaced, to restore after the loop.
    fn enter_element_loop(&mut self, e: &Expr) -> Option<(String, Option<Reducer>)> {
        let Expr::ForLoop(f) = e else {
            return None;
        };
        let el = keyed::element_loop(f)?;
        let r = self.keyed_templates.get(&keyed::template(&el.place))?;
        let key = format!("*{}", el.element);
        let before = self
            .active
            .insert(key.clone(), Reducer::Keyed(r.clone(), Some(el.index)));
        Some((key, before))
    }

    /// The next reducer variable, `__fprev_reductionN` (hygienic: the user cannot name
    /// it).
    fn new_reducer(&mut self) -> Ident {
        let r = Ident::new(
            &format!("__fprev_reduction{}", self.next_reducer),
            Span::mixed_site(),
        );
        self.next_reducer += 1;
        r
    }

    /// A reducer for each single place the loop owns (`s`, `c[i * n + j]`).
    fn single_reducers(
        &mut self,
        plan: &LoopPlan,
        span: Span,
        construct: Construct,
        around: &mut AroundLoop,
    ) {
        let krate = self.args.krate.clone();
        for (key, place) in &plan.reductions {
            let r = self.new_reducer();
            let site = self.site_in(
                place.span(),
                "reduction",
                "Reduction",
                construct,
                Some(key.as_str()),
            );
            let simple = places::borrows_without_code(place);
            if simple {
                // One call per loop entry and exit, no branch: the place can be
                // borrowed without running any code.
                around.setup.push(quote_spanned! {span=>
                    let mut #r = #krate::__private::scramble::reduction_at(#site, &mut #place);
                });
                around
                    .finish
                    .push(quote_spanned! {span=> #r.write(&mut #place); });
            } else {
                // An indexed place is evaluated only when on, as the loop body would.
                around.setup.push(quote_spanned! {span=>
                    let mut #r = #krate::__private::scramble::reduction(#site);
                    if #r.on() { #r.init(&mut #place); }
                });
                around.finish.push(quote_spanned! {span=>
                    if #r.on() { #r.write(&mut #place); }
                });
            }
            self.active.insert(key.clone(), Reducer::Single(r, simple));
            around.owned.push(key.clone());
        }
    }

    /// A keyed reducer for each array the loop updates element by element.
    fn keyed_reducers(
        &mut self,
        plan: &LoopPlan,
        span: Span,
        construct: Construct,
        around: &mut AroundLoop,
    ) {
        let krate = self.args.krate.clone();
        for k in &plan.keyed {
            let r = self.new_reducer();
            let label = places::key_of(&k.place);
            let site = self.site_in(k.span, "reduction", "Reduction", construct, Some(&label));
            // Whether it is on, in an immutable local: a loop-invariant branch the
            // optimizer can take out of the loop, so that the loop as written (often
            // vectorised across elements) runs when scrambling is off.
            let on = keyed_on(&r);
            around.setup.push(quote_spanned! {span=>
                let mut #r = #krate::__private::scramble::keyed_reduction(#site);
                let #on = #r.on();
            });
            // The write-back indexes the place again with each element's key.
            let (key, value) = (
                Ident::new("__fprev_key", Span::mixed_site()),
                Ident::new("__fprev_value", Span::mixed_site()),
            );
            let back = keyed::replace_indices(&k.place, &|n| {
                let n = syn::Index::from(n);
                Expr::Verbatim(quote!(#key.#n))
            });
            around.finish.push(quote_spanned! {span=>
                #r.write(|#key, #value| #back = #value);
            });
            for key in &k.keys {
                if !key.starts_with('*') {
                    self.active
                        .insert(key.clone(), Reducer::Keyed(r.clone(), None));
                    around.owned.push(key.clone());
                }
            }
            self.keyed_templates.insert(k.template.clone(), r);
            around.templates.push(k.template.clone());
        }
    }
}
