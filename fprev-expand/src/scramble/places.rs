//! Places and their updates, as the classifier and the keyed reductions read them: the
//! key and root variable of a place (`s`, `c[i * n + j]`, `self.acc`, `*out`), an update's
//! form and term, and how often an expression mentions a variable.
//!
//! Below both [`classify`](super::classify) and [`keyed`](super::keyed): each reads
//! places the same way without importing the other.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{BinOp, Expr};

use crate::syntax::pure_value;

/// How an update adds its term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// `P += e`
    AddAssign,
    /// `P -= e`
    SubAssign,
    /// `P = P + e`
    AddRight,
    /// `P = e + P`
    AddLeft,
    /// `P = P - e`
    SubRight,
}

/// An update expression: its place's key, root and form, and the term.
pub(crate) struct Update<'a> {
    pub key: String,
    pub root: String,
    pub form: Form,
    pub place: &'a Expr,
    pub term: &'a Expr,
}

/// The key of a place expression: its tokens without spaces (a variable's name without
/// printing tokens: this runs for every assignment of every loop).
pub(crate) fn key_of(place: &Expr) -> String {
    if let Expr::Path(p) = place {
        if let (None, Some(id)) = (&p.qself, p.path.get_ident()) {
            return id.to_string();
        }
    }
    place
        .to_token_stream()
        .to_string()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

/// `e` without the parentheses and invisible groups around it.
pub(crate) fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        _ => e,
    }
}

/// The root variable of a place: `s`, `c` of `c[i]`, `out` of `*out`; a field of `self`
/// is a root of its own (`self.gradient` of `self.gradient[j]`: the borrow checker
/// keeps `self`'s fields apart, and a bare `self` in the loop counts as a read of every
/// one of them); `None` for anything else (calls, method calls, paths with `::`).
pub(crate) fn root_of(place: &Expr) -> Option<String> {
    match strip(place) {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            seg.arguments.is_none().then(|| seg.ident.to_string())
        }
        Expr::Field(f) => self_field(f).or_else(|| root_of(&f.base)),
        Expr::Index(i) => root_of(&i.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => root_of(&u.expr),
        _ => None,
    }
}

/// `self.name` for a field access whose base is `self` itself.
fn self_field(f: &syn::ExprField) -> Option<String> {
    match (strip(&f.base), &f.member) {
        (Expr::Path(p), syn::Member::Named(name)) if p.path.is_ident("self") => {
            Some(format!("self.{name}"))
        }
        _ => None,
    }
}

/// Whether `&mut place` runs no code of the user's: a variable or a field of one
/// (`s`, `self.acc`, `acc.sum.0`), no index, no explicit deref.
pub(crate) fn borrows_without_code(place: &Expr) -> bool {
    match strip(place) {
        Expr::Path(p) => p.qself.is_none() && p.path.get_ident().is_some(),
        Expr::Field(f) => borrows_without_code(&f.base),
        _ => false,
    }
}

/// Identifiers an index expression reads, or `None` when it calls anything.
pub(crate) fn index_idents(place: &Expr, out: &mut Vec<String>) -> bool {
    match strip(place) {
        Expr::Path(_) => true,
        Expr::Field(f) => index_idents(&f.base, out),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => index_idents(&u.expr, out),
        Expr::Index(i) => index_idents(&i.expr, out) && pure_value(&i.index, out),
        _ => false,
    }
}

/// If `e` is an update of a place, the update.
pub(crate) fn update_of(e: &Expr) -> Option<Update<'_>> {
    let (place, form, term) = match e {
        Expr::Binary(b) => match b.op {
            BinOp::AddAssign(_) => (&*b.left, Form::AddAssign, &*b.right),
            BinOp::SubAssign(_) => (&*b.left, Form::SubAssign, &*b.right),
            _ => return None,
        },
        Expr::Assign(a) => {
            let Expr::Binary(b) = strip(&a.right) else {
                return None;
            };
            if !matches!(b.op, BinOp::Add(_) | BinOp::Sub(_)) {
                return None;
            }
            // Printing places to compare them is the slow part: only when the roots
            // match.
            let root = root_of(&a.left)?;
            let same_root = |e: &Expr| root_of(e).as_deref() == Some(root.as_str());
            if !same_root(&b.left) && !same_root(&b.right) {
                return None;
            }
            let key = key_of(&a.left);
            match b.op {
                BinOp::Add(_) if key_of(&b.left) == key => (&*a.left, Form::AddRight, &*b.right),
                BinOp::Add(_) if key_of(&b.right) == key => (&*a.left, Form::AddLeft, &*b.left),
                BinOp::Sub(_) if key_of(&b.left) == key => (&*a.left, Form::SubRight, &*b.right),
                _ => return None,
            }
        }
        _ => return None,
    };
    let root = root_of(place)?;
    Some(Update {
        key: key_of(place),
        root,
        form,
        place,
        term,
    })
}

/// Counts a mention of `f` when it is a field of `self` (`self.gradient`: a mention of
/// that field, not of `self` as a whole); whether it was one.
pub(crate) fn count_self_field(f: &syn::ExprField, out: &mut BTreeMap<String, usize>) -> bool {
    match self_field(f) {
        Some(name) => {
            *out.entry(name).or_default() += 1;
            true
        }
        None => false,
    }
}

/// Counts a mention of a variable named by a one-segment path.
pub(crate) fn count_path(p: &syn::ExprPath, out: &mut BTreeMap<String, usize>) {
    if let Some(id) = p.path.get_ident() {
        *out.entry(id.to_string()).or_default() += 1;
    }
}

/// Counts the names a macro's tokens mention (its arguments are not parsed).
pub(crate) fn count_tokens(tokens: TokenStream, out: &mut BTreeMap<String, usize>) {
    crate::syntax::token_mentions(tokens, &mut |name| *out.entry(name).or_default() += 1);
}

/// How often `e` mentions the variable `root` (paths, fields of `self` and macro tokens;
/// items inside it are not entered).
pub(crate) fn mentions_in(e: &Expr, root: &str) -> usize {
    let mut m = Mentions::default();
    m.visit_expr(e);
    m.0.get(root).copied().unwrap_or(0)
}

/// The mention counts of [`mentions_in`].
#[derive(Default)]
struct Mentions(BTreeMap<String, usize>);

impl<'ast> Visit<'ast> for Mentions {
    fn visit_item(&mut self, _: &'ast syn::Item) {}

    fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
        if !count_self_field(f, &mut self.0) {
            visit::visit_expr_field(self, f);
        }
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        count_path(p, &mut self.0);
        visit::visit_expr_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        count_tokens(m.tokens.clone(), &mut self.0);
    }
}
