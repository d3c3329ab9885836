//! Giving generated paths the span of the user's code they stand for.

use proc_macro2::{Group, Span, TokenStream, TokenTree};

/// `tokens` with every span set to `span`. A `line!()` / `column!()` invocation reports
/// where its whole path starts, so a path like `fprev::__private::core::line!()` must
/// start at the site's span, not at the attribute's; a span of the user's code also
/// resolves names in the user's edition. So a leading `::` is dropped: in an
/// edition-2015 crate `::fprev` names the crate root, which holds no `fprev` unless the
/// crate says `extern crate fprev;`, while `fprev` alone is found in the extern prelude
/// in every edition.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    let mut tokens: Vec<TokenTree> = tokens.clone().into_iter().collect();
    let leading_colons = matches!(
        &tokens[..],
        [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(_), ..]
            if a.as_char() == ':' && b.as_char() == ':'
    );
    if leading_colons {
        tokens.drain(..2);
    }
    respan_exact(&tokens.into_iter().collect(), span)
}

fn respan_exact(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), respan_exact(&g.stream(), span));
                out.set_span(span);
                TokenTree::Group(out)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}
