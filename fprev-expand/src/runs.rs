//! A function body cut into runs of whole statements, on its token stream, so that an
//! attribute parses only the statements that can hold a site.
//!
//! A proc macro is built without optimizations in a user's debug build, and parsing a
//! function body with `syn` (and printing it back) is most of what an attribute costs
//! there, in proportion to the body's length. Most statements of a long function hold no
//! site, and a rewriter changes nothing in them. So the body is cut at each top-level
//! `;`, and after the body of a statement that starts a loop ([`runs`]); each attribute
//! says which runs it must parse (its `prefilter`: `#[scramble]` a loop keyword, `sum`,
//! `fold` or a rayon source among their tokens, `#[accumulator]` an update, an exit or a
//! name it counts), and [`pieces`] parses those and passes the others through token for
//! token.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::{Item, Stmt};

/// A function item taken apart: the tokens before its body, the body, and the item
/// parsed with an empty body (cheap: the signature and the attributes only).
pub(crate) struct Body {
    pub head: Vec<TokenTree>,
    pub body: Group,
    pub func: syn::ItemFn,
}

impl Body {
    /// `None` when `item` is not a function with a body.
    pub(crate) fn split(item: &TokenStream) -> Option<Body> {
        let trees: Vec<TokenTree> = item.clone().into_iter().collect();
        let (TokenTree::Group(body), head) = trees.split_last()? else {
            return None;
        };
        if body.delimiter() != Delimiter::Brace {
            return None;
        }
        let mut signature: TokenStream = head.iter().cloned().collect();
        signature.extend([TokenTree::Group(Group::new(
            Delimiter::Brace,
            TokenStream::new(),
        ))]);
        let Ok(Item::Fn(func)) = syn::parse2::<Item>(signature) else {
            return None;
        };
        Some(Body {
            head: head.to_vec(),
            body: body.clone(),
            func,
        })
    }

    /// The item again, with `stream` as its body (spanned as the old body).
    pub(crate) fn assemble(head: &[TokenTree], body: &Group, stream: TokenStream) -> TokenStream {
        let mut new_body = Group::new(Delimiter::Brace, stream);
        new_body.set_span(body.span());
        let mut out: TokenStream = head.iter().cloned().collect();
        out.extend([TokenTree::Group(new_body)]);
        out
    }
}

/// A run of a body's statements: parsed (to be rewritten), or passed through as tokens.
pub(crate) enum Piece {
    Parsed(Vec<Stmt>),
    Verbatim(Vec<TokenTree>),
}

/// A run's statements, or `None` when they do not parse on their own.
pub(crate) fn parse_run(run: &[TokenTree]) -> Option<Vec<Stmt>> {
    syn::Block::parse_within
        .parse2(run.iter().cloned().collect())
        .ok()
}

/// The body's `statements` cut into [`runs`], each parsed when `parse` says that it may
/// hold a site and passed through as tokens otherwise; `None` when a run to parse does not
/// parse on its own (the whole item is then parsed instead).
pub(crate) fn pieces(
    statements: Vec<TokenTree>,
    parse: impl Fn(&[TokenTree]) -> bool,
) -> Option<Vec<Piece>> {
    let mut pieces = Vec::new();
    for run in runs(statements) {
        pieces.push(if parse(&run) {
            let tokens = run.into_iter().collect();
            Piece::Parsed(syn::Block::parse_within.parse2(tokens).ok()?)
        } else {
            Piece::Verbatim(run)
        });
    }
    Some(pieces)
}

/// A block's leading inner attributes (`#![..]`, each a `#`, a `!` and a bracketed
/// group), and the rest.
pub(crate) fn split_inner_attributes(body: TokenStream) -> (TokenStream, Vec<TokenTree>) {
    let mut trees: Vec<TokenTree> = body.into_iter().collect();
    let mut i = 0;
    while let [TokenTree::Punct(hash), TokenTree::Punct(bang), TokenTree::Group(g), ..] =
        &trees[i..]
    {
        if hash.as_char() != '#' || bang.as_char() != '!' || g.delimiter() != Delimiter::Bracket {
            break;
        }
        i += 3;
    }
    let rest = trees.split_off(i);
    (trees.into_iter().collect(), rest)
}

/// The body cut into runs of whole statements: after each top-level `;`; after the
/// first top-level `{ .. }` of a run that starts (past outer attributes and a label)
/// with `for`, `while` or `loop`, which is that loop's body, since a loop's header
/// cannot end in a block; and after a top-level `{ .. }` of a run that starts with
/// `if`, `match`, `unsafe` or a block, unless `else`, `.` or `?` follows (a block-like
/// statement goes on only through those). A run cut wrongly would not parse, and the
/// whole item would be parsed instead.
///
/// The runs stay token trees (slices of `body`, moved, not copied): in a proc macro each
/// token stream built, cloned or walked is a call into the compiler.
pub(crate) fn runs(body: Vec<TokenTree>) -> Vec<Vec<TokenTree>> {
    let mut out = Vec::new();
    let mut run: Vec<TokenTree> = Vec::new();
    let mut trees = body.into_iter().peekable();
    while let Some(tree) = trees.next() {
        let ends = match &tree {
            TokenTree::Punct(p) => p.as_char() == ';',
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                starts_a_loop(&run)
                    || (starts_a_block_statement(&run) || run.is_empty())
                        && !continues(trees.peek())
            }
            _ => false,
        };
        run.push(tree);
        if ends {
            out.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        out.push(run);
    }
    out
}

/// Whether a block-like statement goes on with `next`: `else`, a method call or a `?`.
fn continues(next: Option<&TokenTree>) -> bool {
    match next {
        Some(TokenTree::Ident(i)) => i == "else",
        Some(TokenTree::Punct(p)) => matches!(p.as_char(), '.' | '?'),
        _ => false,
    }
}

/// The run past its outer attributes (`#[..]`) and a label (`'a:`).
fn past_attributes_and_label(run: &[TokenTree]) -> &[TokenTree] {
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
    &run[i..]
}

/// Whether a run's first token, past outer attributes and a label, is `for`, `while`
/// or `loop`.
fn starts_a_loop(run: &[TokenTree]) -> bool {
    matches!(past_attributes_and_label(run).first(), Some(TokenTree::Ident(k)) if k == "for" || k == "while" || k == "loop")
}

/// Whether a run's first token, past outer attributes and a label, is `if`, `match` or
/// `unsafe`.
fn starts_a_block_statement(run: &[TokenTree]) -> bool {
    matches!(past_attributes_and_label(run).first(), Some(TokenTree::Ident(k)) if k == "if" || k == "match" || k == "unsafe")
}

/// Whether a token tree is or holds, at any depth, an identifier for which `is` holds.
pub(crate) fn names(tree: &TokenTree, is: &impl Fn(&str) -> bool) -> bool {
    match tree {
        TokenTree::Ident(i) => is(&i.to_string()),
        TokenTree::Group(g) => g.stream().into_iter().any(|t| names(&t, is)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn runs_end_at_semicolons_and_loop_bodies() {
        let body = quote! {
            let a = 1;
            #[allow(unused)] 'outer: for i in 0..3 { s += x[i]; }
            while k < n { k += 1; }
            if c { d } else if b { e } else { f }
            let f = [0; 3];
            match m { _ => v }.len();
            match m { _ => () }
            unsafe { g() }
            { let h = 1; }
            if c { d }?;
            g
        };
        let runs: Vec<String> = runs(body.into_iter().collect())
            .into_iter()
            .map(|r| r.into_iter().collect::<TokenStream>().to_string())
            .collect();
        assert_eq!(
            runs,
            [
                "let a = 1 ;",
                "# [allow (unused)] 'outer : for i in 0 .. 3 { s += x [i] ; }",
                "while k < n { k += 1 ; }",
                "if c { d } else if b { e } else { f }",
                "let f = [0 ; 3] ;",
                "match m { _ => v } . len () ;",
                "match m { _ => () }",
                "unsafe { g () }",
                "{ let h = 1 ; }",
                "if c { d } ? ;",
                "g",
            ]
        );
    }
}
