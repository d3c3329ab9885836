//! Code generation: the function with its loops and rayon chains rewritten.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, ExprForLoop, Ident, Item, ItemFn};

use super::args::{self, Args, Loops, Marker};
use super::validate::{self, ParSource};

/// `#[scramble(args)] item`: the rewritten function, or the errors to show beside the
/// user's item. With the `off` feature the item comes back token for token (only the
/// per-loop markers, which rustc would reject on statements, are removed).
pub(crate) fn scramble(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if cfg!(feature = "off") {
        return Ok(super::strip_markers(item));
    }
    let parsed_args = Args::parse(args);
    let Ok(parsed) = syn::parse2::<Item>(item.clone()) else {
        // Not valid Rust: leave it to rustc to say so.
        return Ok(item);
    };
    let mut func = match parsed {
        Item::Fn(f) => f,
        other => return Err(not_a_fn(&other)),
    };
    let args = parsed_args?;
    if let Some(c) = func.sig.constness {
        return Err(syn::Error::new_spanned(
            c,
            "#[scramble] cannot rewrite a `const fn`: scrambled loops call the runtime; remove `const` or the attribute",
        ));
    }
    rewrite_fn(&args, &mut func)?;
    Ok(quote!(#func))
}

fn not_a_fn(item: &Item) -> syn::Error {
    let msg =
        "#[scramble] applies to functions: put it on each `fn` whose loops should be scrambled";
    let spanned =
        |kw: &dyn quote::ToTokens, name: &Ident| syn::Error::new_spanned(quote!(#kw #name), msg);
    match item {
        Item::Struct(s) => spanned(&s.struct_token, &s.ident),
        Item::Enum(e) => spanned(&e.enum_token, &e.ident),
        Item::Impl(i) => syn::Error::new(
            i.impl_token.span,
            "#[scramble] applies to functions, not impl blocks: put it on the methods inside whose loops should be scrambled",
        ),
        Item::Mod(m) => spanned(&m.mod_token, &m.ident),
        Item::Trait(t) => spanned(&t.trait_token, &t.ident),
        Item::Verbatim(v) if v.to_string().contains("fn") => syn::Error::new_spanned(
            v,
            "#[scramble] needs a function body to rewrite: put it on the implementation, not on a declaration",
        ),
        other => syn::Error::new_spanned(other, msg),
    }
}

/// Rewrites `func`'s body in place; marker errors are combined and returned.
pub(crate) fn rewrite_fn(args: &Args, func: &mut ItemFn) -> syn::Result<()> {
    let mut rewriter = Rewriter {
        args,
        fn_name: func.sig.ident.to_string(),
        loops_on: true,
        report: true,
        depth: 0,
        next_site: 0,
        uses_par: false,
        errors: Ok(()),
    };
    rewriter.visit_block_mut(&mut func.block);
    rewriter.errors?;
    if rewriter.uses_par {
        let krate = &args.krate;
        func.block.stmts.insert(
            0,
            syn::parse_quote! {
                #[allow(unused_imports)]
                use #krate::__private::scramble::{ParChunks as _, ParMut as _, ParRange as _, ParRef as _};
            },
        );
    }
    Ok(())
}

struct Rewriter<'a> {
    args: &'a Args,
    fn_name: String,
    /// False while generating the unscrambled copy of a loop: inner `for` loops stay
    /// as written there (rayon chains are still rewritten, they check their own level).
    loops_on: bool,
    /// False in that copy too, so that marker errors are reported once.
    report: bool,
    /// Number of enclosing `for` loops.
    depth: usize,
    next_site: usize,
    uses_par: bool,
    errors: syn::Result<()>,
}

impl Rewriter<'_> {
    fn error(&mut self, e: syn::Error) {
        if self.report {
            args::combine(&mut self.errors, e);
        }
    }

    /// A `&'static CallSite` expression for a site at `span`.
    fn site(&mut self, span: Span, kind: &str) -> TokenStream {
        let krate = &self.args.krate;
        let label = format!("{}#{}{}", self.fn_name, kind, self.next_site);
        self.next_site += 1;
        let shuffle = match &self.args.shuffle {
            Some((name, _)) => {
                let variant = args::SHUFFLES
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or("FisherYates", |(_, v)| v);
                let variant = Ident::new(variant, span);
                quote_spanned!(span=> ::core::option::Option::Some(#krate::__private::scramble::Shuffle::#variant))
            }
            None => quote_spanned!(span=> ::core::option::Option::None),
        };
        quote_spanned! {span=>
            {
                static __FPREV_SITE: #krate::__private::scramble::CallSite =
                    #krate::__private::scramble::CallSite::new(
                        ::core::concat!(::core::module_path!(), "::", #label),
                        ::core::file!(),
                        ::core::line!(),
                        ::core::column!(),
                        #shuffle,
                    );
                &__FPREV_SITE
            }
        }
    }

    fn with_depth(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    fn for_loop(&mut self, e: &mut Expr) {
        let Expr::ForLoop(f) = e else { return };
        let marker = match args::take_markers(&mut f.attrs) {
            Ok(m) => m,
            Err(err) => {
                self.error(err);
                None
            }
        };
        let supported = validate::supported_iterable(&f.expr);
        if marker == Some(Marker::Force) && !supported {
            self.error(syn::Error::new_spanned(
                &f.expr,
                format!(
                    "#[scramble(force)]: cannot scramble a loop over this iterable; supported: {}. Collect it into a Vec and loop over `&v`, or remove the marker",
                    validate::SUPPORTED
                ),
            ));
        }
        let eligible = self.loops_on
            && marker != Some(Marker::Skip)
            && (self.args.loops == Loops::All || self.depth == 0);
        let forced = self.args.force || marker == Some(Marker::Force);
        let rewrite =
            eligible && supported && (forced || !validate::exits_early(f.label.as_ref(), &f.body));
        self.visit_expr_mut(&mut f.expr);
        if !rewrite {
            self.with_depth(|s| s.visit_block_mut(&mut f.body));
            return;
        }
        let attrs = std::mem::take(&mut f.attrs);
        let mut off: ExprForLoop = f.clone();
        let (loops_on, report) = (self.loops_on, self.report);
        self.loops_on = false;
        self.report = false;
        self.with_depth(|s| s.visit_block_mut(&mut off.body));
        self.loops_on = loops_on;
        self.report = report;
        self.with_depth(|s| s.visit_block_mut(&mut f.body));

        let span = f.for_token.span;
        let site = self.site(span, "loop");
        let krate = &self.args.krate;
        let scrambler = Ident::new("__fprev_scrambler", Span::mixed_site());
        let ExprForLoop {
            label,
            pat,
            expr,
            body,
            ..
        } = &*f;
        *e = Expr::Verbatim(quote_spanned! {span=>
            #(#attrs)*
            match #krate::__private::scramble::loops(#site) {
                ::core::option::Option::None => #off,
                ::core::option::Option::Some(#scrambler) => #label for #pat in #scrambler.shuffled(#expr) #body
            }
        });
    }

    fn par_chain(&mut self, e: &mut Expr) {
        let Expr::MethodCall(call) = e else { return };
        let Some((source, kind)) = validate::par_chain_source(call) else {
            return;
        };
        let span = source.method.span();
        let (name, kind_label) = match kind {
            ParSource::ParIter => ("__fprev_par_iter", "par_iter"),
            ParSource::ParIterMut => ("__fprev_par_iter_mut", "par_iter_mut"),
            ParSource::ParChunks => ("__fprev_par_chunks", "par_chunks"),
            ParSource::RangeIntoParIter => ("__fprev_into_par_iter", "into_par_iter"),
        };
        source
            .args
            .insert(0, Expr::Verbatim(self.site(span, kind_label)));
        source.method = Ident::new(name, span);
        self.uses_par = true;
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::ForLoop(_) => self.for_loop(e),
            Expr::MethodCall(_) => {
                visit_mut::visit_expr_mut(self, e);
                self.par_chain(e);
            }
            _ => visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_expr_while_mut(&mut self, w: &mut syn::ExprWhile) {
        self.visit_expr_mut(&mut w.cond);
        self.with_depth(|s| s.visit_block_mut(&mut w.body));
    }

    fn visit_expr_loop_mut(&mut self, l: &mut syn::ExprLoop) {
        self.with_depth(|s| s.visit_block_mut(&mut l.body));
    }

    // Nested items are not part of this function: they take their own attribute.
    fn visit_item_mut(&mut self, _: &mut Item) {}
}
