//! Syntax questions both attributes ask of a function body: which binary operators
//! assign, and which expressions can be evaluated again without side effects.

use proc_macro2::{TokenStream, TokenTree};
use syn::{BinOp, Expr};

/// `+=`, `-=`, ... : the operators that assign to their left side.
pub(crate) fn is_assign_op(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// Whether `e` is made of literals, paths, fields, indexes, casts and non-assigning
/// operators only (no calls, no side effects); the single-name paths it reads are pushed
/// to `reads`.
pub(crate) fn pure_value(e: &Expr, reads: &mut Vec<String>) -> bool {
    match e {
        Expr::Lit(_) => true,
        Expr::Path(p) => {
            if let Some(id) = p.path.get_ident() {
                reads.push(id.to_string());
            }
            true
        }
        Expr::Field(f) => pure_value(&f.base, reads),
        Expr::Binary(b) => {
            !is_assign_op(&b.op) && pure_value(&b.left, reads) && pure_value(&b.right, reads)
        }
        Expr::Unary(u) => pure_value(&u.expr, reads),
        Expr::Paren(p) => pure_value(&p.expr, reads),
        Expr::Group(g) => pure_value(&g.expr, reads),
        Expr::Cast(c) => pure_value(&c.expr, reads),
        Expr::Index(i) => pure_value(&i.expr, reads) && pure_value(&i.index, reads),
        _ => false,
    }
}

/// The names a token stream mentions, each once per mention: identifiers, and the
/// variables a format string captures (`"{s}"`, `"{s:.3}"`), as macros like `println!`
/// read them.
pub(crate) fn token_mentions(tokens: TokenStream, out: &mut dyn FnMut(String)) {
    for t in tokens {
        match t {
            TokenTree::Ident(i) => out(i.to_string()),
            TokenTree::Group(g) => token_mentions(g.stream(), out),
            TokenTree::Literal(l) => captured_names(&l.to_string(), out),
            TokenTree::Punct(_) => {}
        }
    }
}

/// The identifiers inside `{...}` of a string literal's text (`{{` escapes skipped).
fn captured_names(lit: &str, out: &mut dyn FnMut(String)) {
    if !lit.ends_with('"') {
        return;
    }
    let mut rest = lit;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        if let Some(r) = rest.strip_prefix('{') {
            rest = r;
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
            out(name);
        }
    }
}

/// A path naming `Add::add`: `Add::add`, `ops::Add::add`, `<T as Add>::add`, `f64::add`.
pub(crate) fn adds_by_path(p: &syn::ExprPath) -> bool {
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let [.., ty, method] = segs.as_slice() else {
        return false;
    };
    let via_trait = match &p.qself {
        Some(q) => q.position > 0 && segs[q.position - 1] == "Add",
        None => ty == "Add" || matches!(ty.as_str(), "f32" | "f64" | "f16" | "bf16"),
    };
    method == "add" && via_trait
}

/// Whether a term is an integer by its syntax alone: an integer literal (`1`, `-2`,
/// `3usize`, not `1f64`) or a cast to an integer type (`k as usize`). No float type adds
/// an integer (`f64 += 1` does not compile), so a place whose every term is one of these
/// is not a float accumulation whatever its type: both attributes leave it alone at
/// compile time rather than giving it a reducer or a chain counter that would only find
/// at run time that it is not a float.
pub(crate) fn integer_term(term: &Expr) -> bool {
    match term {
        Expr::Lit(syn::ExprLit { lit, .. }) => integer_literal(lit),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => integer_term(&u.expr),
        Expr::Cast(c) => match &*c.ty {
            syn::Type::Path(t) if t.qself.is_none() => t
                .path
                .get_ident()
                .is_some_and(|id| INTEGERS.contains(&id.to_string().as_str())),
            _ => false,
        },
        Expr::Paren(p) => integer_term(&p.expr),
        Expr::Group(g) => integer_term(&g.expr),
        _ => false,
    }
}

/// The integer types, by name.
const INTEGERS: [&str; 12] = [
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
];

/// Whether a literal is an integer one (`1`, `0x10`, `3usize`; not `1f64` or `1.0`).
pub(crate) fn integer_literal(lit: &syn::Lit) -> bool {
    match lit {
        syn::Lit::Int(i) => i.suffix().is_empty() || INTEGERS.contains(&i.suffix()),
        _ => false,
    }
}
