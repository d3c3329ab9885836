//! Finding and rewriting accumulation sites in a function body.
//!
//! Three kinds of site (see `fprev::chains::AccumulationKind`):
//! - variables (`s += e`, `s -= e`, `s = s + e`, `s = e + s`, `s = s - e`, or a
//!   `#[acc] let s`): a `u64` chain counter per variable in the frame, updated by
//!   Defour's rule at every assignment to the variable;
//! - places (`c[i] += e`, `*out += e`, `self.acc += e`): chains per address (a small
//!   direct-mapped table in the frame);
//! - `.sum()` and `.fold(init, |a, b| a + b)` on a temporary iterator: a counting
//!   iterator.
//!
//! A closure counts the variables it declares and the places it adds into in a frame of
//! its own, built at the top of its body, so it never captures the function's frame for
//! them and stays `Fn + Sync` where it was (rayon). Not entered: nested items, `move`
//! closures and `async` blocks (their captures would move the frame), macro invocations
//! (opaque tokens).

/// The `VisitMut` methods that keep a visitor out of constant contexts (inline
/// `const {}`, array and repeat lengths, const generic arguments, types): they are
/// evaluated at compile time, so nothing there is a site. Shared by the collector and the
/// rewriter, which must agree on what they enter.
macro_rules! skip_constant_contexts {
    () => {
        fn visit_expr_const_mut(&mut self, _: &mut syn::ExprConst) {}
        fn visit_type_mut(&mut self, _: &mut syn::Type) {}
        fn visit_expr_repeat_mut(&mut self, r: &mut syn::ExprRepeat) {
            self.visit_expr_mut(&mut r.expr);
        }
        fn visit_generic_argument_mut(&mut self, a: &mut syn::GenericArgument) {
            if !matches!(a, syn::GenericArgument::Const(_)) {
                syn::visit_mut::visit_generic_argument_mut(self, a);
            }
        }
    };
}

mod collect;
mod frame;
mod rewrite;
mod running_values;

pub use collect::Collector;
pub use frame::{exit_with, frame_decl, Scope};
pub use rewrite::SiteRewriter;

pub use running_values::running;
use std::collections::HashSet;

use proc_macro2::Span;
use quote::ToTokens;
use syn::{BinOp, Expr, Pat, Stmt};

pub(crate) use crate::syntax::is_assign_op;
use crate::syntax::pure_value;

/// What kind of site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainSiteKind {
    Variable,
    Place,
    Iterator,
}

/// One site found in the body.
pub struct ChainSite {
    pub kind: ChainSiteKind,
    pub span: Span,
    pub text: String,
    /// A variable or place whose order is its meaning (see [`running`](fn@running)).
    pub running: bool,
}

fn text_of(t: &impl ToTokens) -> String {
    tidy(&t.to_token_stream().to_string())
}

/// `a [i] . sum :: < f64 > ()` -> `a[i].sum::<f64>()`: the token string on one line,
/// with the spaces rustfmt would drop (around brackets, turbofish angle brackets and
/// closure parameter bars).
fn tidy(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = flat.chars().collect();
    let mut out = String::with_capacity(flat.len());
    // Depth inside `::< .. >` (where `<`/`>` are brackets, not comparisons).
    let mut angle = 0usize;
    // Inside a closure's parameter list `| .. |`.
    let mut params = false;
    for (i, &c) in chars.iter().enumerate() {
        let prev = out.chars().last().unwrap_or(' ');
        if c == ' ' {
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let glue_before = matches!(next, '[' | '(')
                && (prev.is_alphanumeric() || matches!(prev, '_' | ')' | ']' | '>'))
                || matches!(next, ']' | ')' | ',' | '.' | ';' | '?' | ':' if next != ':' || chars.get(i + 2) == Some(&':'))
                || (angle > 0 && matches!(next, '<' | '>'))
                || (params && next == '|');
            let glue_after = matches!(prev, '[' | '(' | '.' | '&' | '!')
                || (prev == '*' && unary_at_end(&out))
                || (prev == ':' && out.ends_with("::"))
                || (angle > 0 && prev == '<')
                || (params && prev == '|' && !out.ends_with("| |") && closure_opens(&out));
            if glue_before || glue_after {
                continue;
            }
        }
        match c {
            '<' if out.ends_with("::")
                || (angle > 0 && (prev.is_alphanumeric() || prev == '_')) =>
            {
                angle += 1
            }
            '>' if angle > 0 => angle -= 1,
            '|' if params => params = false,
            '|' if closure_opens(&format!("{out}|")) => params = true,
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Whether the `*` ending `s` is a dereference: it follows the start, an opening
/// bracket, a closure's parameters, a comma, `=` or another operator, rather than an
/// operand.
fn unary_at_end(s: &str) -> bool {
    let before = s[..s.len() - 1].trim_end();
    before.is_empty()
        || before.ends_with([
            '(', '[', '{', ',', '=', '|', '+', '-', '*', '/', '%', '<', '>',
        ])
}

/// Whether the `|` ending `s` opens a closure's parameters (it follows the start, an
/// opening bracket, a comma, `=` or `move`, rather than an operand).
fn closure_opens(s: &str) -> bool {
    let Some(before) = s.strip_suffix('|') else {
        return false;
    };
    let before = before.trim_end();
    before.is_empty()
        || before.ends_with(['(', '[', '{', ',', '='])
        || before.ends_with(" move")
        || before == "move"
}

/// What a closure's body names: every name bound by a pattern inside it (parameters,
/// `let`s, arms, loops, nested closures included) and every one-segment path it uses.
/// Nested items are not entered.
#[derive(Default)]
pub struct ClosureNames {
    pub declared: HashSet<String>,
    pub mentioned: HashSet<String>,
}

impl ClosureNames {
    pub fn of(c: &syn::ExprClosure) -> ClosureNames {
        let mut names = ClosureNames::default();
        syn::visit::Visit::visit_expr_closure(&mut names, c);
        names
    }
}

impl<'a> syn::visit::Visit<'a> for ClosureNames {
    fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
        self.declared.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
    fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
        if p.qself.is_none() && p.path.segments.len() == 1 {
            self.mentioned.insert(p.path.segments[0].ident.to_string());
        }
        syn::visit::visit_expr_path(self, p);
    }
    fn visit_item(&mut self, _: &'a syn::Item) {}
}

/// The identifier of a one-segment path expression (`s`), if that is what `e` is.
fn ident_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 && p.attrs.is_empty() => {
            let seg = &p.path.segments[0];
            seg.arguments.is_none().then(|| seg.ident.to_string())
        }
        Expr::Paren(p) => ident_of(&p.expr),
        _ => None,
    }
}

/// A place whose address can be taken twice without side effects: paths, fields,
/// dereferences and indexes by such expressions (arithmetic and literals included).
fn pure_place(e: &Expr) -> bool {
    match e {
        Expr::Path(_) => true,
        Expr::Field(f) => pure_place(&f.base),
        Expr::Index(i) => pure_place(&i.expr) && pure_value(&i.index, &mut Vec::new()),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => pure_place(&u.expr),
        Expr::Paren(p) => pure_place(&p.expr),
        _ => false,
    }
}

/// `x = x + e`, `x = e + x` or `x = x - e`: the right side extends the left.
fn extends(lhs: &Expr, rhs: &Expr) -> bool {
    match rhs {
        Expr::Binary(b) if matches!(b.op, BinOp::Add(_) | BinOp::Sub(_)) => {
            // Printing tokens to compare is the slow part (every assignment of the
            // function comes here): a variable is compared by name, a place only when
            // an operand starts like it.
            if let Some(name) = ident_of(lhs) {
                let same = |e: &Expr| ident_of(e).as_deref() == Some(name.as_str());
                return same(&b.left) || (matches!(b.op, BinOp::Add(_)) && same(&b.right));
            }
            let l = lhs.to_token_stream().to_string();
            let same =
                |e: &Expr| !matches!(e, Expr::Lit(_)) && e.to_token_stream().to_string() == l;
            same(&b.left) || (matches!(b.op, BinOp::Add(_)) && same(&b.right))
        }
        Expr::Paren(p) => extends(lhs, &p.expr),
        _ => false,
    }
}

fn is_acc_attr(a: &syn::Attribute) -> bool {
    a.path().is_ident("acc")
}

/// Names bound by a `let` pattern made of identifiers (tuples and types allowed).
fn bound_names(p: &Pat, out: &mut Vec<(String, Span)>) -> bool {
    match p {
        Pat::Ident(i) if i.subpat.is_none() => {
            out.push((i.ident.to_string(), i.ident.span()));
            true
        }
        Pat::Type(t) => bound_names(&t.pat, out),
        Pat::Tuple(t) => t.elems.iter().all(|p| bound_names(p, out)),
        Pat::Paren(p) => bound_names(&p.pat, out),
        Pat::Wild(_) => true,
        _ => false,
    }
}

fn expr_attrs_mut(e: &mut Expr) -> Option<&mut Vec<syn::Attribute>> {
    Some(match e {
        Expr::Assign(x) => &mut x.attrs,
        Expr::Binary(x) => &mut x.attrs,
        Expr::Block(x) => &mut x.attrs,
        Expr::Call(x) => &mut x.attrs,
        Expr::ForLoop(x) => &mut x.attrs,
        Expr::If(x) => &mut x.attrs,
        Expr::Loop(x) => &mut x.attrs,
        Expr::Macro(x) => &mut x.attrs,
        Expr::MethodCall(x) => &mut x.attrs,
        Expr::Paren(x) => &mut x.attrs,
        Expr::Path(x) => &mut x.attrs,
        Expr::Unary(x) => &mut x.attrs,
        Expr::While(x) => &mut x.attrs,
        _ => return None,
    })
}

/// `.sum()` on a temporary, or `.fold(init, |a, b| a + e)`.
fn iterator_site(m: &syn::ExprMethodCall) -> bool {
    /// A value made by a call, which `.sum()` consumes: never a place (`(n).sum()` on a
    /// named value may be an inherent `sum(&self)` that must not move it).
    fn temporary(e: &Expr) -> bool {
        match e {
            Expr::MethodCall(_) | Expr::Call(_) => true,
            Expr::Paren(p) => temporary(&p.expr),
            _ => false,
        }
    }
    if !temporary(&m.receiver) {
        return false;
    }
    if m.method == "sum" && m.args.is_empty() {
        return true;
    }
    if m.method != "fold" || m.args.len() != 2 {
        return false;
    }
    // Independent sums carried in one tuple, as `#[scramble]` reads them.
    if crate::scramble::reorderable::tuple_fold(m) {
        return true;
    }
    let c = match &m.args[1] {
        Expr::Closure(c) => c,
        // `Add::add`, `std::ops::Add::add`, `<f64 as Add>::add`, `f64::add`.
        Expr::Path(p) => return crate::syntax::adds_by_path(p),
        _ => return false,
    };
    let mut names = Vec::new();
    if c.inputs.len() != 2 || !bound_names(&c.inputs[0], &mut names) || names.len() != 1 {
        return false;
    }
    let acc = &names[0].0;
    let mut body = &*c.body;
    while let Expr::Block(b) = body {
        match b.block.stmts.as_slice() {
            [Stmt::Expr(e, None)] => body = e,
            _ => return false,
        }
    }
    match body {
        Expr::Binary(b) => match b.op {
            BinOp::Add(_) => {
                ident_of(&b.left).as_ref() == Some(acc) || ident_of(&b.right).as_ref() == Some(acc)
            }
            BinOp::Sub(_) => ident_of(&b.left).as_ref() == Some(acc),
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tidy() {
        assert_eq!(super::tidy("s += a [i] * b [i]"), "s += a[i] * b[i]");
        assert_eq!(
            super::tidy("row . iter () . map (| x | x * 2.0) . sum :: < f64 > ()"),
            "row.iter().map(|x| x * 2.0).sum::<f64>()"
        );
        assert_eq!(
            super::tidy("x . iter ()\n    . fold (0.0 , | a , b | a + b)"),
            "x.iter().fold(0.0, |a, b| a + b)"
        );
        assert_eq!(
            super::tidy("v . iter () . collect :: < Vec < f64 > > () . len () as f64"),
            "v.iter().collect::<Vec<f64>>().len() as f64"
        );
        assert_eq!(super::tidy("s += a | b"), "s += a | b");
        assert_eq!(
            super::tidy("m = m . iter () . map (| (s , e) | * s + e * * w) . collect ()"),
            "m = m.iter().map(|(s, e)| *s + e * *w).collect()"
        );
        assert_eq!(super::tidy("* out += a * b"), "*out += a * b");
        for (text, site) in [
            ("xs.iter().fold(0.0, Add::add)", true),
            ("xs.iter().fold(0.0, std::ops::Add::add)", true),
            ("xs.iter().fold(0.0, <f64 as Add>::add)", true),
            ("xs.iter().copied().fold(0.0, f64::add)", true),
            ("xs.iter().fold(0.0, Mul::mul)", false),
            ("xs.iter().fold(0.0, add)", false),
            (
                "xs.iter().fold((0.0, 0.0, 0), |(a, b, n), r| (a + r[0], b + r[1], n + 1))",
                true,
            ),
            (
                "xs.iter().fold((0.0, 0.0), |(a, b), r| (0.5 * a + r[0], b + r[1]))",
                false,
            ),
        ] {
            let m: syn::ExprMethodCall = syn::parse_str(text).unwrap();
            assert_eq!(super::iterator_site(&m), site, "{text}");
        }
        assert_eq!(
            super::tidy("s += (a < b) as i32 as f64"),
            "s += (a < b) as i32 as f64"
        );
    }
}
