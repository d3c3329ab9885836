//! Statement-by-statement rewriting: only the statements that can hold a site are
//! parsed.
//!
//! The body is cut into runs of whole statements (see [`crate::runs`]): most
//! statements of a long function hold no loop, iterator reduction or rayon chain, and
//! the rewriter changes nothing in them. A run that mentions none
//! of the names a site needs ([`may_hold_a_site`]) is passed through token for token;
//! the others are parsed and rewritten as [`super::expand::rewrite_fn`] would rewrite
//! them, with one rewriter for the whole function, so sites are numbered as before.
//! Anything unexpected (a run that does not parse, a signature that is not a plain
//! function's) declines, and the whole item is parsed at once.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::Parser;
use syn::visit_mut::VisitMut;

use super::args::Args;
use super::decision::Decision;
use super::expand::Rewriter;
use crate::runs::{runs, split_inner_attributes, Body};

/// The rewritten item, its decisions appended to `record`, or `None` to have the whole
/// item parsed instead (nothing recorded then).
pub(crate) fn rewrite(
    args: &Args,
    item: &TokenStream,
    record: &mut Vec<Decision>,
) -> Option<syn::Result<TokenStream>> {
    let Body { head, body, func } = Body::split(item)?;
    if func.sig.constness.is_some() {
        return None;
    }
    let mut rewriter = Rewriter::new(args, &func.sig.ident);
    let mut rewritten = TokenStream::new();
    // Inner attributes (`#![allow(..)]`) stay first in the block, before the prelude.
    let (inner_attributes, statements) = split_inner_attributes(body.stream());
    for run in runs(statements) {
        if !may_hold_a_site(&run) {
            rewritten.extend(run);
            continue;
        }
        let mut stmts = syn::Block::parse_within
            .parse2(run.into_iter().collect())
            .ok()?;
        for stmt in &mut stmts {
            rewriter.visit_stmt_mut(stmt);
        }
        for stmt in &stmts {
            stmt.to_tokens(&mut rewritten);
        }
    }
    let prelude = match rewriter.finish(func.sig.ident.span(), record) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let mut stream = inner_attributes;
    for stmt in &prelude {
        stmt.to_tokens(&mut stream);
    }
    stream.extend(rewritten);
    Some(Ok(Body::assemble(&head, &body, stream)))
}

/// Whether tokens mention a name that every site the rewriter makes needs: a loop
/// keyword (reductions, declared loops and their markers), `sum` or `fold` (iterator
/// reductions), or a rayon source (`par_iter`, `into_par_iter`, ...). Inside groups
/// too; macro arguments count (a superset is only slower).
pub(crate) fn may_hold_a_site(trees: &[TokenTree]) -> bool {
    trees.iter().any(names_a_site)
}

fn names_a_site(tree: &TokenTree) -> bool {
    crate::runs::names(tree, &|name| {
        matches!(name, "for" | "while" | "loop" | "sum" | "fold")
            || name.starts_with("par_")
            || name.starts_with("into_par")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    use crate::scramble::tests::rewrite_both_ways;

    fn both_ways(item: &TokenStream, context: &str) -> Option<TokenStream> {
        rewrite_both_ways(&TokenStream::new(), item, context)
    }

    fn args() -> Args {
        Args::parse(TokenStream::new()).expect("no arguments")
    }

    #[test]
    fn only_runs_that_name_a_site_are_parsed() {
        let trees = |t: TokenStream| t.into_iter().collect::<Vec<_>>();
        assert!(may_hold_a_site(&trees(
            quote!(let q: f64 = v.iter().map(|x| x * 2.0).sum();)
        )));
        assert!(may_hold_a_site(&trees(
            quote!(let t = { let f = |v: &[f64]| v.par_iter(); f };)
        )));
        assert!(may_hold_a_site(&trees(quote!(if ok {
            loop {
                break;
            }
        }))));
        assert!(!may_hold_a_site(&trees(
            quote!(let y = a * x + b; out[i] = y.max(0.0);)
        )));
        // Untouched runs come back token for token, odd spacing and all.
        let item = quote! {
            fn f(x: &[f64]) -> f64 {
                let   scale=2.0 ;
                let mut s = 0.0;
                for v in x { s += v * scale; }
                s
            }
        };
        let out = rewrite(&args(), &item, &mut Vec::new())
            .expect("splits")
            .expect("rewrites");
        assert!(out.to_string().contains("let scale = 2.0 ;"), "{out}");
        assert!(out.to_string().contains("reduction_at"), "{out}");
    }

    #[test]
    fn statement_by_statement_is_the_whole_rewrite() {
        let item = quote! {
            fn f(x: &[f64], y: &mut [f64], n: usize) -> f64 {
                let mut total = 0.0;
                let mut count = 0;
                for i in 0..n {
                    y[i] = 2.0 * x[i];
                    if y[i] < 0.0 { count += 1; }
                }
                let q: f64 = x.iter().map(|v| v * 3.0).sum();
                'rows: for r in 0..n {
                    let mut inner = 0.0;
                    for c in 0..n { inner += x[r] * y[c]; }
                    total += inner;
                    if inner > 1e9 { break 'rows; }
                }
                let f = y.iter().fold(0.0, |a, v| a + v);
                fn helper(v: &[f64]) -> f64 { v.iter().sum() }
                match count { 0 => total + q + f, _ => helper(x) }
            }
        };
        assert!(both_ways(&item, "a function of every statement kind").is_some());
    }

    #[test]
    fn inner_attributes_stay_first() {
        let item = quote! {
            fn f(x: &[f64]) -> f64 {
                #![allow(unused_mut)]
                #![allow(clippy::all)]
                let   unused = 1;
                let mut s = 0.0;
                for v in x { s += v; }
                s
            }
        };
        let lazy = both_ways(&item, "inner attributes").expect("splits");
        let body = lazy.to_string();
        let start = body.find('{').expect("a body");
        assert!(
            body[start..].starts_with("{ # ! [allow (unused_mut)] # ! [allow (clippy :: all)]"),
            "{body}"
        );
    }

    #[test]
    fn unexpected_shapes_decline() {
        // A declaration, a `const fn`, a run that does not parse: the whole item is
        // parsed instead (and the errors said there).
        for item in [
            quote!(
                fn f(x: &[f64]) -> f64;
            ),
            quote!(
                const fn f() -> f64 {
                    let mut s = 0.0;
                    for _ in 0..3 {
                        s += 1.0;
                    }
                    s
                }
            ),
            quote!(
                fn f() {
                    for x in { 1..3 } {}
                }
            ),
            quote!(
                struct S {
                    a: f64,
                }
            ),
        ] {
            assert!(rewrite(&args(), &item, &mut Vec::new()).is_none(), "{item}");
        }
    }
}
