//! Which runs of statements `#[scramble]` must parse, told from their tokens alone (see
//! [`crate::runs`]): most statements of a long function hold no loop, iterator reduction
//! or rayon chain, and the rewriter changes nothing in them.

use proc_macro2::TokenTree;

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
    use proc_macro2::TokenStream;
    use quote::quote;

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
    }
}
