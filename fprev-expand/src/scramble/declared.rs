//! What a function's `let` statements say about its accumulators' types, from their
//! tokens: `let mut left = Vec2::zero();` declares `left` a `Vec2`, which the runtime
//! does not reassociate (it reduces `f32`, `f64`, `f16` and `bf16` only), so the loop
//! that adds to it is left alone as "not a float", by the macro and by `cargo fprev scan`
//! alike, rather than listed as scrambled and then run as written.
//!
//! Read from tokens, not syntax trees: the macro passes most statements through
//! unparsed. Only what the declaration says for sure counts: a float literal or a float
//! type makes a float; a type, struct literal or constructor whose name is capitalized
//! and is neither a generic parameter of the function nor `Self`, nor named as type
//! parameters usually are (`F`, `T`, `Ix`, `Float`: an impl's parameters are not in the
//! function's signature), makes a non-float; an
//! alias (`type Real = f64`) named in a type is taken for a non-float unless the value is
//! a float literal. Anything else is unknown and decided by the runtime per type.

use std::collections::{BTreeMap, HashSet};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// What one declaration says.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Says {
    Float,
    NotFloat(String),
    Unknown,
}

/// Traits and variants whose name starts a path but names no type of the value.
const NOT_TYPES: &[&str] = &[
    "Default", "Zero", "One", "From", "Into", "Sum", "Add", "Num", "Float", "Some", "Ok", "Self",
];

/// The variables of `body` every `let` of which declares a non-float type, with that
/// type's name; `generics`: the function's type parameters (a `T` may be a float).
pub(crate) fn not_floats(
    body: TokenStream,
    generics: &HashSet<String>,
) -> BTreeMap<String, String> {
    let mut says: BTreeMap<String, Vec<Says>> = BTreeMap::new();
    walk(body, generics, &mut says);
    says.into_iter()
        .filter_map(|(name, all)| match all.first() {
            Some(Says::NotFloat(ty)) if all.iter().all(|s| matches!(s, Says::NotFloat(_))) => {
                Some((name, ty.clone()))
            }
            _ => None,
        })
        .collect()
}

fn walk(ts: TokenStream, generics: &HashSet<String>, says: &mut BTreeMap<String, Vec<Says>>) {
    let toks: Vec<TokenTree> = ts.into_iter().collect();
    let mut k = 0;
    while k < toks.len() {
        if let TokenTree::Group(g) = &toks[k] {
            walk(g.stream(), generics, says);
        }
        if matches!(&toks[k], TokenTree::Ident(i) if i == "let") {
            let mut j = k + 1;
            if matches!(toks.get(j), Some(TokenTree::Ident(i)) if i == "mut") {
                j += 1;
            }
            if let Some(TokenTree::Ident(name)) = toks.get(j) {
                let rest = &toks[j + 1..];
                says.entry(name.to_string())
                    .or_default()
                    .push(declaration(rest, generics));
            }
        }
        k += 1;
    }
}

/// What `: TYPE = INIT` or `= INIT` (the tokens after the name) says.
fn declaration(rest: &[TokenTree], generics: &HashSet<String>) -> Says {
    match rest.first() {
        Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Alone => {
            let end = rest
                .iter()
                .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '=' || p.as_char() == ';'))
                .unwrap_or(rest.len());
            let init = initializer(rest.get(end + 1..).unwrap_or(&[]), generics);
            if init == Says::Float {
                return Says::Float;
            }
            named_type(&rest[1..end], generics)
        }
        Some(TokenTree::Punct(p)) if p.as_char() == '=' && p.spacing() == Spacing::Alone => {
            initializer(&rest[1..], generics)
        }
        _ => Says::Unknown,
    }
}

/// The type a type's tokens name: the last path segment before any `<`.
fn named_type(ty: &[TokenTree], generics: &HashSet<String>) -> Says {
    let mut last = None;
    for t in ty {
        match t {
            TokenTree::Ident(i) => last = Some(i.to_string()),
            TokenTree::Punct(p) if p.as_char() == '<' => break,
            TokenTree::Punct(p) if p.as_char() == ':' || p.as_char() == '&' => {}
            _ => return Says::Unknown,
        }
    }
    match last {
        Some(name) => by_name(&name, generics),
        None => Says::Unknown,
    }
}

/// Names a type parameter usually has (`F`, `T`, `Ix`, `Float`, `Scalar`): the impl's
/// parameters are not in the function's signature, so such a name may be a float.
fn looks_generic(name: &str) -> bool {
    name.len() < 3
        || name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        || matches!(
            name,
            "Float"
                | "Real"
                | "Scalar"
                | "Elem"
                | "Element"
                | "Num"
                | "Field"
                | "Value"
                | "Item"
                | "Output"
                | "Target"
        )
}

fn by_name(name: &str, generics: &HashSet<String>) -> Says {
    if matches!(name, "f32" | "f64" | "f16" | "bf16") {
        Says::Float
    } else if name.starts_with(|c: char| c.is_ascii_uppercase())
        && !generics.contains(name)
        && !NOT_TYPES.contains(&name)
        && !looks_generic(name)
    {
        Says::NotFloat(name.to_string())
    } else {
        Says::Unknown
    }
}

/// What an initializer's first tokens say: a float literal, or `Type { .. }`,
/// `Type(..)`, `Type::f(..)`, `path::Type::CONST`.
pub(crate) fn initializer_says_not_float(
    init: &[TokenTree],
    generics: &HashSet<String>,
) -> Option<String> {
    match initializer(init, generics) {
        Says::NotFloat(ty) => Some(ty),
        _ => None,
    }
}

fn initializer(init: &[TokenTree], generics: &HashSet<String>) -> Says {
    let mut toks = init.iter().peekable();
    if matches!(toks.peek(), Some(TokenTree::Punct(p)) if p.as_char() == '-') {
        toks.next();
    }
    match toks.next() {
        Some(TokenTree::Literal(l)) => {
            let l = l.to_string();
            if l.contains('.') || l.ends_with("f32") || l.ends_with("f64") {
                Says::Float
            } else {
                Says::Unknown
            }
        }
        Some(TokenTree::Ident(first)) => {
            // The path's segments, then what follows it.
            let mut segments = vec![first.to_string()];
            let mut next = toks.next();
            loop {
                match (next, toks.peek()) {
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                        if a.as_char() == ':' && b.as_char() == ':' =>
                    {
                        toks.next();
                        match toks.next() {
                            Some(TokenTree::Ident(i)) => segments.push(i.to_string()),
                            _ => return Says::Unknown,
                        }
                        next = toks.next();
                    }
                    _ => break,
                }
            }
            let braced =
                matches!(next, Some(TokenTree::Group(g)) if g.delimiter() != Delimiter::Bracket);
            // `Type { .. }`, `Type(..)`: the last segment; `Type::f(..)`, `Type::C`:
            // the one before it.
            let ty = if segments.len() == 1 {
                if !braced {
                    return Says::Unknown;
                }
                &segments[0]
            } else {
                &segments[segments.len() - 2]
            };
            by_name(ty, generics)
        }
        _ => Says::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nf(src: &str) -> Vec<(String, String)> {
        let generics: HashSet<String> = ["T".to_string()].into();
        not_floats(src.parse().expect("lexes"), &generics)
            .into_iter()
            .collect()
    }

    #[test]
    fn declarations_that_say_not_a_float() {
        let got = nf(
            "let mut left = Vec2::zero(); let mut r = Vec2 { x: 0.0, y: 0.0 }; \
             let mut c: na::Vector3<f64> = na::Vector3::zeros(); let mut z = Complex(0.0, 0.0); \
             { let mut w = glam::DVec2::ZERO; }",
        );
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["c", "left", "r", "w", "z"]);
        assert_eq!(got[0].1, "Vector3");
        assert_eq!(got[1].1, "Vec2");
    }

    #[test]
    fn floats_generics_and_the_unknown_are_not_listed() {
        assert!(nf(
            "let mut s = 0.0; let mut t: f32 = 0.0; let mut u = T::zero(); \
             let mut v = Default::default(); let mut w: Real = 0.0; let mut x = f(); \
             let mut y = Self::new(); let mut n = 0; let mut q = -1.5e3;"
        )
        .is_empty());
        // One declaration of a name is a float: the name is not listed.
        assert!(nf("let mut s = Vec2::zero(); let mut s = 0.0;").is_empty());
    }
}
