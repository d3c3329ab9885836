//! Which runs of statements `#[accumulator]` must parse, told from their tokens alone
//! (see [`crate::runs`]).
//!
//! Parsing the body is most of what the macro costs in a user's debug build, and
//! visiting it and printing it back most of the rest. A run is parsed when its tokens
//! hold an update (`+=`, `-=`, an assignment other than a `let`'s), `sum`, `fold` or
//! `acc`, an exit the frame must see (`return`, `?`) or a macro call (which may hide
//! either), at any depth ([`may_hold_a_site`]); once the accumulators are known, so is
//! every run that names one ([`names_any`]: its `let` restarts a chain, its closure
//! captures a counter). The others come back token for token.

use std::collections::HashMap;

use proc_macro2::{Delimiter, Spacing, TokenTree};

/// Whether tokens may hold something the rewriter changes or must see, at any depth: an
/// update (`+=` or `-=` of anything but an integer literal, which no float adds;
/// `a = .. a ..`, an assignment whose left side's names, outside its indexes, come back
/// on its right, as in `s = s + e` and `c[i] = c[i] + e`), `sum`, `fold` (iterator
/// sites), `acc` (`#[acc]`), `return`, `?`, or a macro call (`name!`), which may hide an
/// exit. A superset is only slower.
pub(crate) fn may_hold_a_site(trees: &[TokenTree]) -> bool {
    // A `let` (or `if let`, `while let`) whose `=` is still to come.
    let mut in_let = false;
    // Where the statement (or the expression after a block) that holds `i` starts.
    let mut start = 0;
    for (i, t) in trees.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| &trees[j]);
        match t {
            TokenTree::Ident(id) => {
                let name = id.to_string();
                match name.as_str() {
                    "sum" | "fold" | "acc" | "return" => return true,
                    "let" => in_let = true,
                    _ => {}
                }
            }
            TokenTree::Punct(p) => match p.as_char() {
                '?' => return true,
                '!' if p.spacing() == Spacing::Alone
                    && matches!(prev, Some(TokenTree::Ident(_))) =>
                {
                    return true
                }
                ';' => {
                    in_let = false;
                    start = i + 1;
                }
                '=' if p.spacing() == Spacing::Alone => match prev {
                    // The end of `+=`, `-=` (updates), or of `==`, `<=`, `*=`, `..=` ...
                    Some(TokenTree::Punct(q)) if q.spacing() == Spacing::Joint => {
                        if matches!(q.as_char(), '+' | '-') && !integer_literal(&trees[i + 1..]) {
                            return true;
                        }
                    }
                    _ if in_let => in_let = false,
                    _ => {
                        if comes_back(&trees[start..i], &trees[i + 1..]) {
                            return true;
                        }
                    }
                },
                _ => {}
            },
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                if may_hold_a_site(&inner) {
                    return true;
                }
                if g.delimiter() == Delimiter::Brace {
                    start = i + 1;
                }
            }
            TokenTree::Literal(_) => {}
        }
    }
    false
}

/// Whether `rest` (what follows `+=`) is one integer literal (`1`, `2usize`) and then
/// the end of the statement: the term [`crate::syntax::integer_term`] would find.
fn integer_literal(rest: &[TokenTree]) -> bool {
    match rest {
        [TokenTree::Literal(l)] => crate::syntax::integer_literal(&syn::Lit::new(l.clone())),
        [TokenTree::Literal(l), TokenTree::Punct(end), ..] if end.as_char() == ';' => {
            crate::syntax::integer_literal(&syn::Lit::new(l.clone()))
        }
        _ => false,
    }
}

/// Whether an assignment may be an update `x = x + e`, `x = e + x` or `x = x - e`
/// (the rewriter's rule, parentheses looked through): its right side (up to the end of
/// the statement) has a binary `+` or `-` outside any group, and a name of its left
/// side, outside its indexes (`c` of `c[i]`; `self` and `acc` of `self.acc`), appears on
/// its right side at any depth.
fn comes_back(left: &[TokenTree], right: &[TokenTree]) -> bool {
    let end = right
        .iter()
        .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
        .unwrap_or(right.len());
    let mut right = right[..end].to_vec();
    while let [TokenTree::Group(g)] = right.as_slice() {
        if g.delimiter() != Delimiter::Parenthesis {
            break;
        }
        right = g.stream().into_iter().collect();
    }
    // A vector rebuilt from itself (`m = x.iter().zip(m.iter()).map(..).collect()`)
    // adds inside its closure, which is a group.
    if !has_binary_add_or_sub(&right) && !calls_collect(&right) {
        return false;
    }
    let mut names = Vec::new();
    collect_names(left, &mut names);
    !names.is_empty()
        && right
            .iter()
            .any(|t| crate::runs::names(t, &|n| names.iter().any(|m| m == n)))
}

/// Whether `trees` hold a `+` or `-` (not `+=`, `-=` or `->`) that follows an operand
/// (a name, a literal, a group, or `?`), outside any group.
fn has_binary_add_or_sub(trees: &[TokenTree]) -> bool {
    trees.windows(2).enumerate().any(|(i, w)| {
        let TokenTree::Punct(p) = &w[1] else {
            return false;
        };
        let operand_before = match &w[0] {
            TokenTree::Ident(_) | TokenTree::Literal(_) | TokenTree::Group(_) => true,
            TokenTree::Punct(q) => q.as_char() == '?',
        };
        let compound = p.spacing() == Spacing::Joint
            && matches!(trees.get(i + 2), Some(TokenTree::Punct(n)) if matches!(n.as_char(), '=' | '>'));
        matches!(p.as_char(), '+' | '-') && operand_before && !compound
    })
}

/// Whether `trees` call `collect`, outside any group.
fn calls_collect(trees: &[TokenTree]) -> bool {
    trees
        .iter()
        .any(|t| matches!(t, TokenTree::Ident(i) if i == "collect"))
}

fn collect_names(trees: &[TokenTree], out: &mut Vec<String>) {
    for t in trees {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) if g.delimiter() != Delimiter::Bracket => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                collect_names(&inner, out);
            }
            _ => {}
        }
    }
}

/// Whether tokens name one of `vars`, at any depth.
pub(crate) fn names_any(trees: &[TokenTree], vars: &HashMap<String, usize>) -> bool {
    trees
        .iter()
        .any(|t| crate::runs::names(t, &|n| vars.contains_key(n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::TokenStream;
    use quote::quote;

    #[test]
    fn runs_that_may_hold_a_site_are_parsed() {
        for (tokens, parsed) in [
            (quote!(s += x[i];), true),
            (quote!(count += 1;), false),
            (quote!(k += 0x10;), false),
            (
                quote!(if c {
                    k += 1
                }),
                false,
            ),
            (quote!(s += 2e3;), true),
            (
                quote!(if c {
                    k -= 2usize;
                }),
                false,
            ),
            (quote!(s += 1.0;), true),
            (quote!(s += 1f64;), true),
            (quote!(s += 1 + x;), true),
            (
                quote!(for i in 0..n {
                    y[i] = a * x[i] + b;
                }),
                false,
            ),
            (quote!(y[i] = -y[i] * 0.5;), false),
            (quote!(y[i] = y[i] * 2.0;), false),
            (quote!(y[i] = 2.0 * y[i] + b;), true),
            (quote!(s = s - -e;), true),
            (quote!(s = s--e;), true),
            (quote!(s = (e + s);), true),
            (quote!(s = f(x)? - s;), true),
            (quote!(s = t + u;), false),
            (
                quote!(m = x.iter().zip(m.iter()).map(|(&e, &s)| e + s).collect();),
                true,
            ),
            (quote!(m = x.iter().map(|e| e + 1.0).collect();), false),
            (quote!(f = |s: f64| -> f64 { s };), false),
            (quote!(self.acc = self.acc + e;), true),
            (quote!(x.iter().for_each(|v| s = s + 2.0);), true),
            (quote!(if c { d } t = t + 1.0;), true),
            (quote!(if c { t } u = 1.0;), false),
            (
                quote!(if c {
                    out[j] -= v;
                }),
                true,
            ),
            (quote!(m = m + (p - q);), true),
            (quote!(let q: f64 = v.iter().map(|x| x * 2.0).sum();), true),
            (quote!(let f = v.iter().fold(0.0, |a, b| a + b);), true),
            (quote!(#[acc] let mut s = 0.0;), true),
            (quote!(let y = g(x)?;), true),
            (
                quote!(if bad {
                    return 0.0;
                }),
                true,
            ),
            (quote!(println!("{}", x);), true),
            (quote!(let v = vec![0.0; n];), true),
            (quote!(let Some(t) = o else { panic!() };), true),
            (quote!(let y = a * x + b;), false),
            (
                quote!(let b = if a > 1.0 { a.sqrt() } else { a * a };),
                false,
            ),
            (
                quote!(if let Some(v) = o {
                    w = w - v;
                }),
                true,
            ),
            (
                quote!(if let Some(v) = o {
                    w = v;
                }),
                false,
            ),
            (
                quote!(if let Some(v) = o {
                    g(v);
                }),
                false,
            ),
            (
                quote!(while let Some(v) = it.next() {
                    k *= 2;
                }),
                false,
            ),
            (
                quote!(let ok = a == b && c <= d && e >= f && g != h;),
                false,
            ),
            (quote!(let r = 0..=n;), false),
            (quote!(let m = match k { 0 => a, _ => b };), false),
            (quote!(let idx = (count * 7 + 1) % n.max(1);), false),
        ] {
            let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
            assert_eq!(may_hold_a_site(&trees), parsed, "{tokens}");
        }
    }

    #[test]
    fn names_are_found_at_any_depth() {
        let vars: HashMap<String, usize> = [("s".to_string(), 0)].into();
        let names_any = |t: TokenStream, v| super::names_any(&t.into_iter().collect::<Vec<_>>(), v);
        assert!(names_any(quote!(let mut s = 0.0;), &vars));
        assert!(names_any(quote!(let f = |v| { g(v, s) };), &vars));
        // A field of the same name too: a superset is only slower.
        assert!(names_any(quote!(let t = x.s;), &vars));
        assert!(!names_any(quote!(let t = g(x);), &vars));
    }
}
