//! Second pass: rewrite every site, with a frame per function and per closure.

use std::collections::{HashMap, HashSet};

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, Stmt};

use crate::syntax::integer_term;

use super::frame::{exit_with, frame_decl, var_counter, Counter, Scope};
use super::{
    bound_names, extends, ident_of, is_assign_op, iterator_site, pure_place, text_of, ChainSite,
    ChainSiteKind, ClosureNames,
};

/// Defour's rule for an expression, as a constant plus the chain counters of the
/// accumulator variables it adds.
struct Chain {
    constant: u64,
    vars: Vec<(usize, String)>,
}

impl Chain {
    /// A value that brings no chain (`0.0`, `x[i]`).
    fn is_zero(&self) -> bool {
        self.constant == 0 && self.vars.is_empty()
    }
}

/// Second pass: rewrite every site.
pub struct SiteRewriter<'a> {
    pub krate: &'a TokenStream,
    pub sites: Vec<ChainSite>,
    pub vars: HashMap<String, usize>,
    pub statics: syn::Ident,
    /// The function's frame first, then the closures being visited.
    pub scopes: Vec<Scope>,
    /// Names some closure uses without declaring them (the collector's).
    pub captured: HashSet<String>,
    /// The function's return type when every exit of it is visible (see
    /// [`exits`](super::super::exits)): its `return`s then merge the frame.
    pub exits: Option<TokenStream>,
    /// Some `return` was rewritten to merge the function's frame.
    pub returns: bool,
    /// The variable sites some generated code names so far, in source order.
    pub touched: HashSet<usize>,
    /// How many blocks deep the statements being rewritten are (0: the function's).
    pub depth: usize,
    /// The keys of the running values (see [`running`](fn@super::running)): a place site
    /// whose place is one of them is marked so.
    pub running: HashSet<String>,
    /// The variables that are vectors rebuilt from themselves (the collector's).
    pub vectors: HashSet<String>,
}

impl SiteRewriter<'_> {
    /// The counter of variable `name` (site `k`) in the frame that owns it, recording
    /// that it is used.
    fn var_frame(&mut self, k: usize, name: &str) -> Counter {
        self.touched.insert(k);
        let i = (0..self.scopes.len())
            .rev()
            .find(|&i| {
                self.scopes[i]
                    .declared
                    .as_ref()
                    .is_none_or(|d| d.contains(name))
            })
            .unwrap_or(0);
        // A use from a nested closure is always one the collector saw (the closure
        // names the variable and does not declare it); a local of its own is correct
        // whatever the closure's edition.
        if self.captured.contains(name) || i + 1 < self.scopes.len() {
            self.scopes[i].captured.insert(k);
            let v = var_counter(k);
            return Counter {
                frame: quote!(#v.0),
                slot: proc_macro2::Literal::usize_unsuffixed(0),
                owner: Some(k),
            };
        }
        self.scopes[i].member(k, ChainSiteKind::Variable)
    }

    fn chain(&self, e: &Expr) -> Chain {
        match e {
            Expr::Binary(b) if matches!(b.op, BinOp::Add(_) | BinOp::Sub(_)) => {
                let (l, r) = (self.chain(&b.left), self.chain(&b.right));
                Chain {
                    constant: l.constant + r.constant + 1,
                    vars: [l.vars, r.vars].concat(),
                }
            }
            Expr::Paren(p) => self.chain(&p.expr),
            Expr::Group(g) => self.chain(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => self.chain(&u.expr),
            Expr::Cast(c) => self.chain(&c.expr),
            _ => match ident_of(e).and_then(|n| self.vars.get(&n).map(|&k| (k, n))) {
                Some(v) => Chain {
                    constant: 0,
                    vars: vec![v],
                },
                None => Chain {
                    constant: 0,
                    vars: Vec::new(),
                },
            },
        }
    }

    /// The chains a value adds in, for a frame call on the frame `frame` (a
    /// [`Counter::owner`]): a constant (the
    /// additions written, plus the running chains of accumulators kept in other
    /// frames), and the slots of `frame` whose running chains it adds in, which the
    /// frame reads itself (`add_chains`, `restart_chains`): a read in the arguments
    /// would be a call, a temporary and an overflow check each, which a function dense
    /// in sites pays for in its build time.
    fn chain_args(&mut self, c: &Chain, frame: Option<usize>) -> (TokenStream, Vec<Literal>) {
        let constant = c.constant;
        let mut slots = Vec::new();
        let mut others = Vec::new();
        for (k, name) in &c.vars {
            let counter = self.var_frame(*k, name);
            if counter.owner == frame {
                slots.push(counter.slot);
            } else {
                let (f, slot) = (counter.frame, counter.slot);
                others.push(quote!(#f.c(#slot)));
            }
        }
        (quote!(#constant #( + #others )*), slots)
    }

    /// The update of variable `k` after `name = rhs` (or `let name = rhs`).
    /// `var`: the variable as the user wrote it (its span resolves it).
    fn assign_update(
        &mut self,
        k: usize,
        name: &str,
        var: &TokenStream,
        rhs: Option<&Expr>,
    ) -> TokenStream {
        let Counter { frame, slot, owner } = self.var_frame(k, name);
        let chain = match rhs {
            Some(r) => self.chain(r),
            None => Chain {
                constant: 0,
                vars: Vec::new(),
            },
        };
        let var = self.addr_of(name, var);
        if let Some(pos) = chain.vars.iter().position(|v| v.0 == k) {
            // `s = s + e`: the chain grows by the rest.
            let mut rest = chain;
            rest.vars.remove(pos);
            match self.chain_args(&rest, owner) {
                (t, slots) if slots.is_empty() => quote!(#frame.grow(#slot, #var, #t);),
                (t, slots) => quote!(#frame.grow_chains(#slot, #var, #t, &[#(#slots),*]);),
            }
        } else {
            match self.chain_args(&chain, owner) {
                (t, slots) if slots.is_empty() => quote!(#frame.restart_at(#slot, #var, #t);),
                (t, slots) => quote!(#frame.restart_chains(#slot, #var, #t, &[#(#slots),*]);),
            }
        }
    }

    /// `&raw const name`: the accumulator's address, which tells its type, without a
    /// borrow (and without the expansion of `addr_of!` per site). A rebuilt vector's
    /// chain is its elements': the address of its first (a `Vec`'s; anything else
    /// counts as no float).
    fn addr_of(&self, name: &str, var: &TokenStream) -> TokenStream {
        if self.vectors.contains(name) {
            let krate = self.krate;
            return quote!(#krate::__private::chains::Wrap(&#var).__fprev_element());
        }
        quote!(&raw const #var)
    }

    fn new_site(&mut self, kind: ChainSiteKind, node: &impl ToTokens) -> usize {
        self.sites.push(ChainSite {
            kind,
            span: node.span(),
            text: text_of(node),
            running: false,
        });
        self.sites.len() - 1
    }

    fn rewrite_variable(&mut self, e: &Expr, k: usize, name_expr: &Expr) -> Expr {
        let name = ident_of(name_expr).unwrap_or_default();
        let Counter { frame, slot, owner } = self.var_frame(k, &name);
        // One call per site, after the user's own statement: generated code is kept as
        // tokens (no parsing back), and a function dense in sites builds several times
        // faster than with a branch and a probe per operand.
        let update = match e {
            Expr::Binary(b) if matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)) => {
                // The right side first, as the plain code evaluates it, looked at before
                // the addition (which moves it when it is not `Copy`).
                // The term goes through the call and comes back (a borrow of it would be
                // one more loan for the borrow checker to follow through the function);
                // the accumulator is read after the term, as `s += e` reads it.
                let chain = self.chain(&b.right);
                let (lhs, op, rhs) = (&b.left, &b.op, &b.right);
                let r = quote_spanned!(Span::mixed_site()=> __fprev_rhs);
                let add = match self.chain_args(&chain, owner) {
                    (t, slots) if slots.is_empty() => {
                        quote!(#frame.add(#slot, #r, &#name_expr, #t))
                    }
                    (t, slots) => {
                        quote!(#frame.add_chains(#slot, #r, &#name_expr, #t, &[#(#slots),*]))
                    }
                };
                return Expr::Verbatim(quote_spanned! {generated(e)=>
                    {
                        let #r = #rhs;
                        #lhs #op #add;
                    }
                });
            }
            Expr::Binary(_) => {
                // *=, /=, %= ...: Defour's rule resets the chain.
                let var = self.addr_of(&name, &name_expr.to_token_stream());
                quote!(#frame.restart_at(#slot, #var, 0);)
            }
            // `m = x.iter().zip(m.iter()).map(|(&e, &s)| e * w + s).collect()`: each
            // element's chain grows by its one addition.
            Expr::Assign(_)
                if self.vectors.contains(&name)
                    && crate::scramble::keyed::rebuild_of(e).is_some() =>
            {
                let var = self.addr_of(&name, &name_expr.to_token_stream());
                quote!(#frame.grow(#slot, #var, 1);)
            }
            Expr::Assign(a) => {
                self.assign_update(k, &name, &name_expr.to_token_stream(), Some(&a.right))
            }
            _ => return e.clone(),
        };
        Expr::Verbatim(quote_spanned! {generated(e)=>
            { #e; #update }
        })
    }

    /// `place += e` (or `-=`, or `place = place + e`) as the plain code evaluates it: the
    /// right side first, then the place once, through `IndexMut` where it is indexed (never
    /// an extra `Index::index`), then the update (`add_to`: in the frame, after it looks).
    fn rewrite_place(&mut self, e: &Expr, place: &Expr) -> Expr {
        let k = self.new_site(ChainSiteKind::Place, e);
        self.sites[k].running = self
            .running
            .contains(&crate::scramble::places::key_of(place));
        let scope = self.scopes.last_mut().expect("the function's frame");
        let Counter { frame, slot, .. } = scope.member(k, ChainSiteKind::Place);
        let r = quote_spanned!(Span::mixed_site()=> __fprev_rhs);
        let rhs_and_update = match e {
            // The frame looks at the term and the place's value, then adds: the place is
            // evaluated once, after the term, as the plain statement does.
            Expr::Binary(b) => {
                let method = match b.op {
                    BinOp::SubAssign(_) => quote!(sub_from),
                    _ => quote!(add_to),
                };
                let rhs = &b.right;
                quote! {
                    let #r = #rhs;
                    #frame.#method(#slot, #r, &mut #place);
                }
            }
            // `place = place + e`: the term is not apart from the sum. The frame looks
            // at the place's value before it sets it.
            Expr::Assign(a) => {
                let rhs = &a.right;
                quote! {
                    let #r = #rhs;
                    #frame.assign_sum(#slot, #r, &mut #place);
                }
            }
            _ => return e.clone(),
        };
        Expr::Verbatim(quote_spanned! {generated(e)=>
            { #rhs_and_update }
        })
    }

    /// `self.mean = x.iter().zip(self.mean.iter()).map(..).collect()`: a vector held in
    /// a place (a field: [`rebuild_of`](crate::scramble::keyed::rebuild_of) takes no
    /// index), rebuilt from itself, whose chain grows by one per rebuild. `key` is its
    /// element's (`self.mean[j]`), as `#[scramble]` names it.
    fn rewrite_rebuilt_place(&mut self, e: &Expr, place: &Expr, key: &str) -> Expr {
        let Expr::Assign(a) = e else {
            return e.clone();
        };
        let k = self.new_site(ChainSiteKind::Place, e);
        self.sites[k].running = self.running.contains(key);
        let scope = self.scopes.last_mut().expect("the function's frame");
        let Counter { frame, slot, .. } = scope.member(k, ChainSiteKind::Place);
        let krate = self.krate;
        let r = quote_spanned!(Span::mixed_site()=> __fprev_rhs);
        let rhs = &a.right;
        Expr::Verbatim(quote_spanned! {generated(e)=>
            {
                let #r = #rhs;
                #frame.rebuild(
                    #slot,
                    #krate::__private::chains::Wrap(&#place).__fprev_element(),
                    #r,
                    &mut #place,
                );
            }
        })
    }

    /// A block's statements rewritten: each visited, and each `let` of an accumulator
    /// followed by the update of its counter.
    pub fn rewrite_stmts(&mut self, stmts: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(stmts.len());
        for mut stmt in stmts {
            self.visit_stmt_mut(&mut stmt);
            let mut after = Vec::new();
            if let Stmt::Local(l) = &stmt {
                // A `#[cfg(..)] let` takes its counter update with it.
                let cfgs: Vec<&syn::Attribute> = l
                    .attrs
                    .iter()
                    .filter(|a| a.path().is_ident("cfg") || a.path().is_ident("cfg_attr"))
                    .collect();
                if let Some(init) = &l.init {
                    let mut names = Vec::new();
                    bound_names(&l.pat, &mut names);
                    let single = names.len() == 1;
                    for (name, span) in names {
                        if let Some(&k) = self.vars.get(&name) {
                            let rhs = if single { Some(&*init.expr) } else { None };
                            // The first `let` of an accumulator in the function's own
                            // block, before any code counts it, runs once per call on a
                            // counter still empty: a chain restarted at 0 changes nothing
                            // there (`let mut s = 0.0;`, the common case, costs no call).
                            let fresh = self.depth == 0 && !self.touched.contains(&k);
                            if fresh && rhs.is_none_or(|r| self.chain(r).is_zero()) {
                                continue;
                            }
                            let ident = syn::Ident::new(&name, span);
                            let update =
                                self.assign_update(k, &name, &ident.to_token_stream(), rhs);
                            after.push(syn::parse_quote!(#(#cfgs)* { #update }));
                        }
                    }
                }
            }
            out.push(stmt);
            out.extend(after);
        }
        out
    }

    fn rewrite_iterator(&mut self, m: &mut syn::ExprMethodCall) {
        let k = self.new_site(ChainSiteKind::Iterator, &*m);
        let krate = self.krate;
        let statics = &self.statics;
        let recv = &m.receiver;
        // The fallback's trait is imported once, at the top of the body.
        *m.receiver = Expr::Verbatim(quote_spanned! {recv.span()=>
            #krate::__private::chains::Wrap(#recv).__fprev_count(&#statics, #k)
        });
    }
}

impl VisitMut for SiteRewriter<'_> {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    skip_constant_contexts!();
    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        if c.capture.is_some() {
            return;
        }
        self.scopes
            .push(Scope::new(Some(ClosureNames::of(c).declared), true));
        visit_mut::visit_expr_closure_mut(self, c);
        let scope = self.scopes.pop().expect("pushed above");
        if !scope.is_empty() {
            let decl = frame_decl(self.krate, &self.statics, &scope, true);
            let body = &c.body;
            *c.body = Expr::Verbatim(quote_spanned! {body.span()=> { #decl #body } });
        }
    }
    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let stmts = std::mem::take(&mut b.stmts);
        self.depth += 1;
        b.stmts = self.rewrite_stmts(stmts);
        self.depth -= 1;
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        visit_mut::visit_expr_mut(self, e);
        if let Expr::Return(r) = e {
            if self.scopes.len() == 1 {
                if let Some(ret) = &self.exits {
                    self.returns = true;
                    *e = Expr::Verbatim(merge_on_return(self.krate, r, ret));
                }
            }
            return;
        }
        let target = match e {
            Expr::Binary(b) if is_assign_op(&b.op) => Some((*b.left).clone()),
            Expr::Assign(a) => Some((*a.left).clone()),
            _ => None,
        };
        if let Some(lhs) = target {
            let additive = match e {
                Expr::Binary(b) => matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)),
                Expr::Assign(a) => extends(&a.left, &a.right),
                _ => false,
            };
            if let Some(&k) = ident_of(&lhs).and_then(|n| self.vars.get(&n)) {
                let is_var_op = matches!(e, Expr::Assign(_))
                    || matches!(e, Expr::Binary(b) if matches!(b.op,
                        BinOp::AddAssign(_) | BinOp::SubAssign(_) | BinOp::MulAssign(_)
                        | BinOp::DivAssign(_) | BinOp::RemAssign(_)));
                if is_var_op {
                    *e = self.rewrite_variable(e, k, &lhs);
                }
            } else if additive
                && ident_of(&lhs).is_none()
                && !matches!(lhs, Expr::Path(_))
                && pure_place(&lhs)
                && !matches!(e, Expr::Binary(b) if integer_term(&b.right))
            {
                *e = self.rewrite_place(e, &lhs);
            } else if ident_of(&lhs).is_none() {
                if let Some(rb) = crate::scramble::keyed::rebuild_of(e) {
                    let key = crate::scramble::places::key_of(&rb.place);
                    *e = self.rewrite_rebuilt_place(e, &lhs, &key);
                }
            }
            return;
        }
        if let Expr::MethodCall(m) = e {
            if iterator_site(m) {
                self.rewrite_iterator(m);
            }
        }
    }
}

/// `return e` as `return { let r: R = e; finish(frame); r }` (`return` as
/// `return ()`): the value first, as the plain code computes it, then the function's
/// frame merged into its sites.
fn merge_on_return(krate: &TokenStream, r: &syn::ExprReturn, ret: &TokenStream) -> TokenStream {
    let (attrs, keyword) = (&r.attrs, &r.return_token);
    let value = r
        .expr
        .as_ref()
        .map_or_else(|| quote!(()), |e| e.to_token_stream());
    let exit = exit_with(krate, ret, value);
    quote_spanned! {r.span()=> #(#attrs)* #keyword { #exit } }
}

/// The span of the code that replaces `e`: at `e` for diagnostics, but marked as the
/// macro's, so lints about how user code is laid out (clippy's `possible_missing_else`
/// on `if c { .. } s += v;` written on one line, now `if c { .. } { .. }`) skip it.
fn generated(e: &Expr) -> Span {
    Span::mixed_site().located_at(e.span())
}
