//! Code generation: the function with its reductions, declared loops and rayon chains
//! rewritten. Nothing is duplicated: a loop body is emitted once, so items inside it stay
//! unique and the expansion grows linearly with the function.

use std::collections::{BTreeMap, HashSet};

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Ident, Item, ItemFn};

use super::args::{self, ScrambleArgs};
use super::decision::{Construct, Decision, Outcome, ReasonKind};
use crate::respan::respan;
use crate::runs::Piece;

mod iterators;
mod loops;
mod updates;

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
