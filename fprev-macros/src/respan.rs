//! Giving generated paths the span of the user's code they stand for.

use proc_macro2::{Group, Span, TokenStream, TokenTree};

/// `tokens` with every span set to `span`. A `line!()` / `column!()` invocation reports
/// where its whole path starts, so a path like `::fprev::__private::core::line!()` must
/// start at the site's span, not at the attribute's.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), respan(&g.stream(), span));
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
