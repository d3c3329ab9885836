//! Statement-by-statement rewriting: only the statements that can hold a site are
//! parsed.
//!
//! A proc macro is built without optimizations in a user's debug build, and parsing a
//! function body with `syn` is most of what `#[scramble]` costs there: a 2,000-line
//! function took 0.1 s to parse. Most statements of a long function hold no loop,
//! iterator reduction or rayon chain, and the rewriter changes nothing in them. So the
//! body is cut, on its token stream, into runs of whole statements: at each top-level
//! `;`, and after the body of a statement that starts a loop. A run that mentions none
//! of the names a site needs ([`may_hold_a_site`]) is passed through token for token;
//! the others are parsed and rewritten as [`super::expand::rewrite_fn`] would rewrite
//! them, with one rewriter for the whole function, so sites are numbered as before.
//! Anything unexpected (a run that does not parse, a signature that is not a plain
//! function's) declines, and the whole item is parsed at once.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::Parser;
use syn::visit_mut::VisitMut;
use syn::Item;

use super::args::Args;
use super::expand::Rewriter;

/// The rewritten item, or `None` to have the whole item parsed instead.
pub(crate) fn rewrite(args: &Args, item: &TokenStream) -> Option<syn::Result<TokenStream>> {
    let trees: Vec<TokenTree> = item.clone().into_iter().collect();
    let (TokenTree::Group(body), head) = trees.split_last()? else {
        return None;
    };
    if body.delimiter() != Delimiter::Brace {
        return None;
    }
    // The signature alone, with an empty body: cheap to parse.
    let mut signature: TokenStream = head.iter().cloned().collect();
    signature.extend([TokenTree::Group(Group::new(
        Delimiter::Brace,
        TokenStream::new(),
    ))]);
    let Ok(Item::Fn(func)) = syn::parse2::<Item>(signature) else {
        return None;
    };
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
        let mut stmts = syn::Block::parse_within.parse2(run).ok()?;
        for stmt in &mut stmts {
            rewriter.visit_stmt_mut(stmt);
        }
        for stmt in &stmts {
            stmt.to_tokens(&mut rewritten);
        }
    }
    let prelude = match rewriter.finish(func.sig.ident.span()) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    let mut stream = inner_attributes;
    for stmt in &prelude {
        stmt.to_tokens(&mut stream);
    }
    stream.extend(rewritten);
    let mut new_body = Group::new(Delimiter::Brace, stream);
    new_body.set_span(body.span());
    let mut out: TokenStream = head.iter().cloned().collect();
    out.extend([TokenTree::Group(new_body)]);
    Some(Ok(out))
}

/// A block's leading inner attributes (`#![..]`, each a `#`, a `!` and a bracketed
/// group), and the rest.
fn split_inner_attributes(body: TokenStream) -> (TokenStream, TokenStream) {
    let trees: Vec<TokenTree> = body.into_iter().collect();
    let mut i = 0;
    while let [TokenTree::Punct(hash), TokenTree::Punct(bang), TokenTree::Group(g), ..] =
        &trees[i..]
    {
        if hash.as_char() != '#' || bang.as_char() != '!' || g.delimiter() != Delimiter::Bracket {
            break;
        }
        i += 3;
    }
    let rest = trees[i..].iter().cloned().collect();
    (trees[..i].iter().cloned().collect(), rest)
}

/// The body cut into runs of whole statements: after each top-level `;`, and after
/// the first top-level `{ .. }` of a run that starts (past outer attributes and a
/// label) with `for`, `while` or `loop`, which is that loop's body, since a loop's
/// header cannot end in a block (a run cut wrongly would not parse, and the whole
/// item would be parsed instead).
fn runs(body: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut run: Vec<TokenTree> = Vec::new();
    for tree in body {
        let ends = match &tree {
            TokenTree::Punct(p) => p.as_char() == ';',
            TokenTree::Group(g) => g.delimiter() == Delimiter::Brace && starts_a_loop(&run),
            _ => false,
        };
        run.push(tree);
        if ends {
            out.push(run.drain(..).collect());
        }
    }
    if !run.is_empty() {
        out.push(run.into_iter().collect());
    }
    out
}

/// Whether a run's first token, past outer attributes (`#[..]`) and a label (`'a:`),
/// is `for`, `while` or `loop`.
fn starts_a_loop(run: &[TokenTree]) -> bool {
    let mut i = 0;
    while let (Some(TokenTree::Punct(p)), Some(TokenTree::Group(g))) = (run.get(i), run.get(i + 1))
    {
        if p.as_char() != '#' || g.delimiter() != Delimiter::Bracket {
            break;
        }
        i += 2;
    }
    if let (Some(TokenTree::Punct(q)), Some(TokenTree::Ident(_)), Some(TokenTree::Punct(c))) =
        (run.get(i), run.get(i + 1), run.get(i + 2))
    {
        if q.as_char() == '\'' && c.as_char() == ':' {
            i += 3;
        }
    }
    matches!(run.get(i), Some(TokenTree::Ident(k)) if k == "for" || k == "while" || k == "loop")
}

/// Whether tokens mention a name that every site the rewriter makes needs: a loop
/// keyword (reductions, declared loops and their markers), `sum` or `fold` (iterator
/// reductions), or a rayon source (`par_iter`, `into_par_iter`, ...). Inside groups
/// too; macro arguments count (a superset is only slower).
pub(crate) fn may_hold_a_site(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => {
            let name = i.to_string();
            matches!(name.as_str(), "for" | "while" | "loop" | "sum" | "fold")
                || name.starts_with("par_")
                || name.starts_with("into_par")
        }
        TokenTree::Group(g) => may_hold_a_site(&g.stream()),
        _ => false,
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
    fn runs_end_at_semicolons_and_loop_bodies() {
        let body = quote! {
            let a = 1;
            #[allow(unused)] 'outer: for i in 0..3 { s += x[i]; }
            while k < n { k += 1; }
            if c { d } else { e }
            let f = [0; 3];
            g
        };
        let runs: Vec<String> = runs(body).iter().map(|r| r.to_string()).collect();
        assert_eq!(
            runs,
            [
                "let a = 1 ;",
                "# [allow (unused)] 'outer : for i in 0 .. 3 { s += x [i] ; }",
                "while k < n { k += 1 ; }",
                "if c { d } else { e } let f = [0 ; 3] ;",
                "g",
            ]
        );
    }

    #[test]
    fn only_runs_that_name_a_site_are_parsed() {
        assert!(may_hold_a_site(
            &quote!(let q: f64 = v.iter().map(|x| x * 2.0).sum();)
        ));
        assert!(may_hold_a_site(
            &quote!(let t = { let f = |v: &[f64]| v.par_iter(); f };)
        ));
        assert!(may_hold_a_site(&quote!(if ok {
            loop {
                break;
            }
        })));
        assert!(!may_hold_a_site(
            &quote!(let y = a * x + b; out[i] = y.max(0.0);)
        ));
        // Untouched runs come back token for token, odd spacing and all.
        let item = quote! {
            fn f(x: &[f64]) -> f64 {
                let   scale=2.0 ;
                let mut s = 0.0;
                for v in x { s += v * scale; }
                s
            }
        };
        let out = rewrite(&args(), &item).expect("splits").expect("rewrites");
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
            assert!(rewrite(&args(), &item).is_none(), "{item}");
        }
    }
}
