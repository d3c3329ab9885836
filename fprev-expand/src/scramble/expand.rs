//! Code generation: the function with its reductions, declared loops and rayon chains
//! rewritten. Nothing is duplicated: a loop body is emitted once, so items inside it stay
//! unique and the expansion grows linearly with the function.

use std::collections::{BTreeMap, HashSet};

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Ident, Item, ItemFn};

use super::args::{self, Marker, OrderFreeLoops, ScrambleArgs};
use super::classify;
use super::decision::{Construct, Decision, Outcome, ReasonKind};
use super::keyed;
use super::places::{self, Form};
use super::reorderable::{self, ParSource};
use crate::respan::respan;
use crate::runs::Piece;

/// Rewrites `func`'s body in place, its decisions appended to `record`; marker errors
/// are combined and returned.
pub(crate) fn rewrite_fn(
    args: &ScrambleArgs,
    func: &mut ItemFn,
    record: &mut Vec<Decision>,
) -> syn::Result<()> {
    let mut rewriter = LoopRewriter::new(args, &func.sig.ident);
    rewriter.declarations(&func.sig, func.block.to_token_stream());
    rewriter.visit_block_mut(&mut func.block);
    let mut stmts = rewriter.finish(func.sig.ident.span(), record)?;
    stmts.append(&mut func.block.stmts);
    func.block.stmts = stmts;
    Ok(())
}

/// The body of function `name` given as runs of statements in order (see [`Piece`]):
/// the statements that go before it (see [`LoopRewriter::finish`]) and the body, its parsed
/// runs rewritten as [`rewrite_fn`] rewrites them, with one rewriter for the whole
/// function so that sites are numbered as there; the decisions appended to `record`.
pub(crate) fn rewrite_runs(
    args: &ScrambleArgs,
    sig: &syn::Signature,
    pieces: Vec<Piece>,
    record: &mut Vec<Decision>,
) -> syn::Result<(Vec<syn::Stmt>, TokenStream)> {
    let name = &sig.ident;
    let mut rewriter = LoopRewriter::new(args, name);
    let mut body = TokenStream::new();
    for piece in &pieces {
        match piece {
            Piece::Parsed(stmts) => stmts.iter().for_each(|s| s.to_tokens(&mut body)),
            Piece::Verbatim(run) => body.extend(run.clone()),
        }
    }
    rewriter.declarations(sig, body);
    let mut rewritten = TokenStream::new();
    for piece in pieces {
        match piece {
            Piece::Parsed(mut stmts) => {
                for stmt in &mut stmts {
                    rewriter.visit_stmt_mut(stmt);
                }
                for stmt in &stmts {
                    stmt.to_tokens(&mut rewritten);
                }
            }
            Piece::Verbatim(run) => rewritten.extend(run),
        }
    }
    let prelude = rewriter.finish(name.span(), record)?;
    Ok((prelude, rewritten))
}

/// The immutable local that says whether the keyed reduction `r` is on.
fn keyed_on(r: &Ident) -> Ident {
    Ident::new(&format!("{r}_on"), Span::mixed_site())
}

fn sites_ident() -> Ident {
    Ident::new("__FPREV_SCRAMBLE_SITES", Span::call_site())
}

/// The reducer of a place owned by an enclosing loop.
#[derive(Clone)]
enum Reducer {
    /// One place (`s`, `c[i*n+j]`): the reducer variable, and whether the place borrows
    /// without running code.
    Single(Ident, bool),
    /// Many elements of one array ([`keyed`](super::keyed)): the reducer variable, and
    /// for the element of an element loop (`*g_j`), the loop's index variable (`j`),
    /// which is then the element's key.
    Keyed(Ident, Option<Ident>),
}

struct LoopRewriter<'a> {
    args: &'a ScrambleArgs,
    fn_name: String,
    /// Number of enclosing `for` loops.
    depth: usize,
    /// `CallSite` constructors, indexed by site number.
    sites: Vec<TokenStream>,
    /// `LeftAlone` constructors.
    left: Vec<TokenStream>,
    /// Reductions owned by enclosing loops: place key -> its reducer.
    active: BTreeMap<String, Reducer>,
    /// The function's type parameters.
    generics: HashSet<String>,
    /// Variables the function declares with a non-float type, with the type's name.
    not_floats: BTreeMap<String, String>,
    /// Keyed reductions owned by enclosing loops: template (`g[_]`) -> reducer variable,
    /// for the element loops over them (`for (j, g_j) in g.iter_mut().enumerate()`).
    keyed_templates: BTreeMap<String, Ident>,
    next_reducer: usize,
    uses_par: bool,
    /// An iterator reduction was rewritten: its dispatch traits are imported once.
    uses_iter: bool,
    /// A rayon sum was reassociated: its dispatch traits are imported once.
    uses_par_sum: bool,
    /// Every site and loop left alone, as data, in the order they were met.
    decisions: Vec<Decision>,
    errors: syn::Result<()>,
}

impl<'a> LoopRewriter<'a> {
    /// A rewriter for the body of function `name`.
    fn new(args: &'a ScrambleArgs, name: &Ident) -> Self {
        LoopRewriter {
            args,
            fn_name: name.to_string(),
            depth: 0,
            sites: Vec::new(),
            left: Vec::new(),
            active: BTreeMap::new(),
            keyed_templates: BTreeMap::new(),
            generics: HashSet::new(),
            not_floats: BTreeMap::new(),
            next_reducer: 0,
            uses_par: false,
            uses_iter: false,
            uses_par_sum: false,
            decisions: Vec::new(),
            errors: Ok(()),
        }
    }

    /// The statements that go before the rewritten body (the imports its dispatch
    /// needs, the site table and its registration), or the markers' errors; the
    /// decisions go to `record`. `span`: the function's name, where a function with
    /// nothing to scramble is reported.
    fn finish(mut self, span: Span, record: &mut Vec<Decision>) -> syn::Result<Vec<syn::Stmt>> {
        std::mem::replace(&mut self.errors, Ok(()))?;
        let mut rewriter = self;
        let args = rewriter.args;
        let krate = &args.krate;
        let mut prelude: Vec<syn::Stmt> = Vec::new();
        if rewriter.uses_par {
            prelude.push(syn::parse_quote! {
                #[allow(unused_imports)]
                use #krate::__private::scramble::{ParChunks as _, ParMut as _, ParRange as _, ParRef as _};
            });
        }
        if rewriter.uses_iter {
            prelude.push(syn::parse_quote! {
                #[allow(unused_imports)]
                use #krate::__private::scramble::ViaValue as _;
            });
        }
        if rewriter.uses_par_sum {
            prelude.push(syn::parse_quote! {
                #[allow(unused_imports)]
                use #krate::__private::scramble::ViaParValue as _;
            });
        }
        if rewriter.sites.is_empty() && rewriter.left.is_empty() {
            const NOTHING: &str =
                "no float reduction, declared loop or rayon chain found: nothing to scramble";
            rewriter.decisions.push(Decision {
                span,
                construct: Construct::Function,
                outcome: Outcome::LeftAlone {
                    kind: ReasonKind::NothingFound,
                    reason: NOTHING.to_string(),
                },
            });
            let label = format!("{}#fn", rewriter.fn_name);
            let at = respan(&krate.to_token_stream(), span);
            rewriter.left.push(quote_spanned! {span=>
                #krate::__private::scramble::LeftAlone::new(
                    #krate::__private::core::concat!(#krate::__private::core::module_path!(), "::", #label),
                    #at::__private::core::file!(), #at::__private::core::line!(),
                    #NOTHING,
                )
            });
        }
        record.append(&mut rewriter.decisions);
        let (sites, left) = (&rewriter.sites, &rewriter.left);
        let (ns, nl) = (sites.len(), left.len());
        let sites_ident = sites_ident();
        // Emitted as tokens, not parsed back into syntax trees: the table has a row per
        // site, and parsing it again would cost as much as parsing the user's function.
        prelude.push(syn::Stmt::Item(Item::Verbatim(quote! {
            static #sites_ident: [#krate::__private::scramble::CallSite; #ns] = [#(#sites),*];
        })));
        prelude.push(syn::Stmt::Item(Item::Verbatim(quote! {
            #krate::__private::inventory::submit! {
                #krate::__private::scramble::FnSites::new(&#sites_ident, {
                    static LEFT: [#krate::__private::scramble::LeftAlone; #nl] = [#(#left),*];
                    &LEFT
                })
            }
        })));
        Ok(prelude)
    }
}

impl LoopRewriter<'_> {
    /// Reads what the function `sig` with body tokens `body` declares: its type
    /// parameters, and the variables it declares with a non-float type.
    fn declarations(&mut self, sig: &syn::Signature, body: TokenStream) {
        self.generics = sig
            .generics
            .type_params()
            .map(|t| t.ident.to_string())
            .collect();
        self.not_floats = super::declared::not_floats(body, &self.generics);
    }

    fn error(&mut self, e: syn::Error) {
        args::combine(&mut self.errors, e);
    }

    /// A `&'static CallSite` expression for a new site of `kind` at `span`, recorded as
    /// the decision to scramble `construct` (a reduction into `place`).
    fn site(
        &mut self,
        span: Span,
        kind: &str,
        variant: &str,
        construct: Construct,
        place: Option<&str>,
    ) -> TokenStream {
        let krate = &self.args.krate;
        let index = self.sites.len();
        let label = format!("{}#{}{}", self.fn_name, kind, index);
        let shuffle = match &self.args.shuffle {
            Some((name, _)) => {
                let variant = args::SHUFFLES
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or("FisherYates", |(_, v)| v);
                let variant = Ident::new(variant, span);
                quote_spanned!(span=> #krate::__private::core::option::Option::Some(#krate::__private::scramble::Shuffle::#variant))
            }
            None => quote_spanned!(span=> #krate::__private::core::option::Option::None),
        };
        let kind = Ident::new(variant, span);
        let at = respan(&krate.to_token_stream(), span);
        self.sites.push(quote_spanned! {span=>
            #krate::__private::scramble::CallSite::with_kind(
                #krate::__private::core::concat!(#krate::__private::core::module_path!(), "::", #label),
                #at::__private::core::file!(),
                #at::__private::core::line!(),
                #at::__private::core::column!(),
                #shuffle,
                #krate::__private::scramble::SiteKind::#kind,
            )
        });
        self.decisions.push(Decision {
            span,
            construct,
            outcome: Outcome::Scrambled {
                place: place.map(str::to_string),
                site: label,
            },
        });
        let sites = sites_ident();
        quote_spanned!(span=> &#sites[#index])
    }

    /// A new site of `kind` at `span` as two arguments, the function's table and the
    /// site's index (`&table[index]` would cost the caller a bounds check and
    /// temporaries per site).
    fn site_in(
        &mut self,
        span: Span,
        kind: &str,
        variant: &str,
        construct: Construct,
        place: Option<&str>,
    ) -> TokenStream {
        let index = self.sites.len();
        self.site(span, kind, variant, construct, place);
        let sites = sites_ident();
        quote_spanned!(span=> &#sites, #index)
    }

    /// Registers `construct` at `span` as left alone for `reason`, of `kind` (`what`
    /// names it in the label).
    fn left_alone(
        &mut self,
        span: Span,
        what: &str,
        construct: Construct,
        kind: ReasonKind,
        reason: &str,
    ) {
        self.decisions.push(Decision {
            span,
            construct,
            outcome: Outcome::LeftAlone {
                kind,
                reason: reason.to_string(),
            },
        });
        let krate = &self.args.krate;
        let label = format!("{}#{}", self.fn_name, what);
        let at = respan(&krate.to_token_stream(), span);
        self.left.push(quote_spanned! {span=>
            #krate::__private::scramble::LeftAlone::new(
                #krate::__private::core::concat!(#krate::__private::core::module_path!(), "::", #label),
                #at::__private::core::file!(), #at::__private::core::line!(), #reason,
            )
        });
    }

    fn with_depth(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    /// `for` and `while` loops: reductions they own, then (for `for`) whole-loop
    /// scrambling where declared.
    fn a_loop(&mut self, e: &mut Expr) {
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
        // An element loop over an array whose keyed reduction an enclosing loop owns: its
        // element's updates are that reduction's, keyed by the loop's index.
        let mut element_key = None;
        if let Expr::ForLoop(f) = &*e {
            if let Some(el) = keyed::element_loop(f) {
                if let Some(r) = self.keyed_templates.get(&keyed::template(&el.place)) {
                    let key = format!("*{}", el.element);
                    let before = self
                        .active
                        .insert(key.clone(), Reducer::Keyed(r.clone(), Some(el.index)));
                    element_key = Some((key, before));
                }
            }
        }
        let claimed: HashSet<String> = self.active.keys().cloned().collect();
        let Some(plan) = super::plan::plan_of(e, &claimed, &self.not_floats) else {
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
        let krate = self.args.krate.clone();
        let mut setup = Vec::new();
        let mut finish = Vec::new();
        let mut owned = Vec::new();
        for (key, place) in &plan.reductions {
            let r = Ident::new(
                &format!("__fprev_reduction{}", self.next_reducer),
                Span::mixed_site(),
            );
            self.next_reducer += 1;
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
                setup.push(quote_spanned! {span=>
                    let mut #r = #krate::__private::scramble::reduction_at(#site, &mut #place);
                });
                finish.push(quote_spanned! {span=> #r.write(&mut #place); });
            } else {
                // An indexed place is evaluated only when on, as the loop body would.
                setup.push(quote_spanned! {span=>
                    let mut #r = #krate::__private::scramble::reduction(#site);
                    if #r.on() { #r.init(&mut #place); }
                });
                finish.push(quote_spanned! {span=>
                    if #r.on() { #r.write(&mut #place); }
                });
            }
            self.active.insert(key.clone(), Reducer::Single(r, simple));
            owned.push(key.clone());
        }
        let mut templates = Vec::new();
        for k in &plan.keyed {
            let r = Ident::new(
                &format!("__fprev_reduction{}", self.next_reducer),
                Span::mixed_site(),
            );
            self.next_reducer += 1;
            let label = places::key_of(&k.place);
            let site = self.site_in(k.span, "reduction", "Reduction", construct, Some(&label));
            // Whether it is on, in an immutable local: a loop-invariant branch the
            // optimizer can take out of the loop, so that the loop as written (often
            // vectorised across elements) runs when scrambling is off.
            let on = keyed_on(&r);
            setup.push(quote_spanned! {span=>
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
            finish.push(quote_spanned! {span=>
                #r.write(|#key, #value| #back = #value);
            });
            for key in &k.keys {
                if !key.starts_with('*') {
                    self.active
                        .insert(key.clone(), Reducer::Keyed(r.clone(), None));
                    owned.push(key.clone());
                }
            }
            self.keyed_templates.insert(k.template.clone(), r);
            templates.push(k.template.clone());
        }
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
        for key in owned {
            self.active.remove(&key);
        }
        for t in templates {
            self.keyed_templates.remove(&t);
        }
        if let Some((key, before)) = element_key {
            match before {
                Some(b) => self.active.insert(key, b),
                None => self.active.remove(&key),
            };
        }
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

    /// An update of a place owned by an enclosing loop's reducer.
    fn update(&mut self, e: &mut Expr) -> bool {
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
    fn rebuild(&mut self, e: &mut Expr) -> bool {
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

    /// `.sum()` / `.fold(init, additive closure)` on a temporary iterator.
    fn iterator_reduction(&mut self, e: &mut Expr) {
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
            let reason = classify::not_a_float(&format!(".{}(..)", m.method), &ty);
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
            super::declared::not_floats(quote!(let __fprev_sum #(#tokens)*;), &self.generics)
                .into_values()
                .next()
        } else {
            let init: Vec<proc_macro2::TokenTree> =
                m.args.first()?.to_token_stream().into_iter().collect();
            super::declared::initializer_says_not_float(&init, &self.generics)
        }
    }

    /// A rayon `.sum()` whose chain keeps positions (`zip`, `enumerate`): the chain runs
    /// as written, the sum's terms are reassociated.
    fn par_sum(&mut self, e: &mut Expr) {
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
    fn par_chain(&mut self, e: &mut Expr) -> bool {
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

impl VisitMut for LoopRewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => self.a_loop(e),
            Expr::Binary(_) | Expr::Assign(_) => {
                if !self.rebuild(e) && !self.update(e) {
                    visit_mut::visit_expr_mut(self, e);
                }
            }
            Expr::MethodCall(_) => {
                visit_mut::visit_expr_mut(self, e);
                if !self.par_chain(e) {
                    self.par_sum(e);
                }
                self.iterator_reduction(e);
            }
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    // Updates inside closures and `async` blocks are not the loop's (the classifier
    // counted them as reads), so reducers do not reach in there.
    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        let active = std::mem::take(&mut self.active);
        let templates = std::mem::take(&mut self.keyed_templates);
        visit_mut::visit_expr_closure_mut(self, c);
        self.active = active;
        self.keyed_templates = templates;
    }

    fn visit_expr_async_mut(&mut self, a: &mut syn::ExprAsync) {
        let active = std::mem::take(&mut self.active);
        let templates = std::mem::take(&mut self.keyed_templates);
        visit_mut::visit_expr_async_mut(self, a);
        self.active = active;
        self.keyed_templates = templates;
    }

    // Nested items are not part of this function: they take their own attribute.
    fn visit_item_mut(&mut self, _: &mut Item) {}
}
