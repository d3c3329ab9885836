//! Which loops and parallel-iterator chains can be scrambled without changing what the
//! code means, only the order it visits items in.

use std::collections::HashSet;

use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{Expr, ExprMethodCall, Label};

/// Iterable forms of a `for` loop that are finite and can be collected and reordered:
/// `a..b`, `a..=b`, `&v`, `&mut v`, `.iter()`, `.iter_mut()`, `.chunks(k)` (and the
/// `_mut` / `_exact` forms), optionally followed by `.rev()`, `.step_by(k)`,
/// `.enumerate()`.
pub(crate) fn supported_iterable(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(p) => supported_iterable(&p.expr),
        Expr::Group(g) => supported_iterable(&g.expr),
        Expr::Range(r) => r.start.is_some() && r.end.is_some(),
        Expr::Reference(_) => true,
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            match (name.as_str(), m.args.len()) {
                ("rev" | "enumerate", 0) | ("step_by", 1) => supported_iterable(&m.receiver),
                ("iter" | "iter_mut", 0) => true,
                ("chunks" | "chunks_mut" | "chunks_exact" | "chunks_exact_mut", 1) => true,
                _ => false,
            }
        }
        _ => false,
    }
}

/// What `for` loops can iterate over, for error messages.
pub(crate) const SUPPORTED: &str = "`a..b`, `a..=b`, `&v`, `&mut v`, `v.iter()`, `v.iter_mut()`, `v.chunks(k)`, each optionally followed by `.rev()`, `.step_by(k)` or `.enumerate()`";

/// Whether a loop body leaves the loop early (`break` out of it, `return`, `?`, or a
/// labelled `break`/`continue` to an enclosing loop): the items it visits depend on
/// their order, so such loops keep their order unless forced.
pub(crate) fn exits_early(label: Option<&Label>, body: &syn::Block) -> bool {
    let mut finder = Exits {
        depth: 0,
        own: label.map(|l| l.name.ident.to_string()),
        inner: HashSet::new(),
        found: false,
        own_breaks: None,
    };
    finder.visit_block(body);
    finder.found
}

/// For a `loop`: whether it can own a reduction, i.e. it leaves only through its own
/// `break`s (at least one, none with a value) and never to outside itself.
pub(crate) fn loop_ends_by_plain_breaks(label: Option<&Label>, body: &syn::Block) -> bool {
    let mut finder = Exits {
        depth: 0,
        own: label.map(|l| l.name.ident.to_string()),
        inner: HashSet::new(),
        found: false,
        own_breaks: Some((0, false)),
    };
    finder.visit_block(body);
    let (breaks, valued) = finder.own_breaks.unwrap_or((0, true));
    !finder.found && breaks > 0 && !valued
}

struct Exits {
    depth: usize,
    own: Option<String>,
    inner: HashSet<String>,
    found: bool,
    /// For a `loop`: its own breaks (count, any with a value); `None` for `for`/`while`,
    /// where a `break` counts as an early exit.
    own_breaks: Option<(usize, bool)>,
}

impl Exits {
    /// A `break` that leaves the analysed loop itself.
    fn own_break(&mut self, b: &syn::ExprBreak) {
        match &mut self.own_breaks {
            Some((n, valued)) => {
                *n += 1;
                *valued |= b.expr.is_some();
            }
            None => self.found = true,
        }
    }
}

impl Exits {
    fn nested(&mut self, label: Option<&Label>, f: impl FnOnce(&mut Self)) {
        if let Some(l) = label {
            self.inner.insert(l.name.ident.to_string());
        }
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }
}

impl<'ast> Visit<'ast> for Exits {
    fn visit_expr_break(&mut self, b: &'ast syn::ExprBreak) {
        match &b.label {
            None if self.depth == 0 => self.own_break(b),
            None => {}
            Some(l) => {
                let name = l.ident.to_string();
                if self.own.as_deref() == Some(name.as_str()) && !self.inner.contains(&name) {
                    self.own_break(b);
                } else if !self.inner.contains(&name) {
                    self.found = true;
                }
            }
        }
        visit::visit_expr_break(self, b);
    }
    fn visit_expr_continue(&mut self, c: &'ast syn::ExprContinue) {
        if let Some(l) = &c.label {
            let name = l.ident.to_string();
            if !self.inner.contains(&name) && self.own.as_deref() != Some(name.as_str()) {
                self.found = true;
            }
        }
    }
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found = true;
    }
    fn visit_expr_try(&mut self, _: &'ast syn::ExprTry) {
        self.found = true;
    }
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.nested(f.label.as_ref(), |s| s.visit_block(&f.body));
    }
    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        self.visit_expr(&w.cond);
        self.nested(w.label.as_ref(), |s| s.visit_block(&w.body));
    }
    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.nested(l.label.as_ref(), |s| s.visit_block(&l.body));
    }
    fn visit_expr_block(&mut self, b: &'ast syn::ExprBlock) {
        // A labelled block can be left with `break 'label`; that stays inside the body.
        if let Some(l) = &b.label {
            self.inner.insert(l.name.ident.to_string());
        }
        visit::visit_expr_block(self, b);
    }
}

/// Whether `m` is an iterator reduction to reassociate: `.sum()` (turbofish allowed) or
/// `.fold(init, f)` with `f` an additive closure (`|a, t| a + e`, `|a, t| e + a`,
/// `|a, t| a - e`, `e` free of `a`) or `Add::add`, on a temporary receiver (a call, a
/// method call, a macro, or a parenthesised range): a named variable may be a
/// non-iterator with a `sum(&self)` of its own. Rayon chains are left to
/// [`par_chain_source`].
pub(crate) fn iterator_reduction(m: &ExprMethodCall) -> bool {
    if !temporary(&m.receiver) || on_par_chain(&m.receiver) {
        return false;
    }
    match (m.method.to_string().as_str(), m.args.len()) {
        ("sum", 0) => true,
        ("fold", 2) => additive(&m.args[1]),
        _ => false,
    }
}

/// Whether `m` is a tuple fold on a temporary iterator: `.fold((i0, i1, ..), |(a, b, ..),
/// item| (a + e0, b + e1, ..))`, two to four components, each result `a_k + e`, `e + a_k`
/// or `a_k - e` of its own accumulator with no `e` reading any of them (nor the block's
/// statements before the result): independent sums carried in one accumulator.
pub(crate) fn tuple_fold(m: &ExprMethodCall) -> bool {
    if m.method != "fold"
        || m.args.len() != 2
        || !temporary(&m.receiver)
        || on_par_chain(&m.receiver)
    {
        return false;
    }
    let Expr::Tuple(init) = strip_parens(&m.args[0]) else {
        return false;
    };
    let Expr::Closure(c) = &m.args[1] else {
        return false;
    };
    if c.inputs.len() != 2 {
        return false;
    }
    let syn::Pat::Tuple(accs) = strip_type(&c.inputs[0]) else {
        return false;
    };
    let n = accs.elems.len();
    if !(2..=4).contains(&n) || init.elems.len() != n {
        return false;
    }
    let mut names = Vec::new();
    for p in &accs.elems {
        match strip_type(p) {
            syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
                names.push(i.ident.to_string())
            }
            _ => return false,
        }
    }
    let Some(body) = final_expr(&c.body, &names) else {
        return false;
    };
    let Expr::Tuple(out) = strip_parens(body) else {
        return false;
    };
    out.elems.len() == n
        && out
            .elems
            .iter()
            .zip(&names)
            .all(|(e, acc)| additive_update(e, acc, &names))
}

/// The closure body's final expression, when the statements before it name none of
/// `accs` and do not leave the closure.
fn final_expr<'a>(body: &'a Expr, accs: &[String]) -> Option<&'a Expr> {
    let mut body = body;
    while let Expr::Block(b) = body {
        let (syn::Stmt::Expr(last, None), lets) = b.block.stmts.split_last()? else {
            return None;
        };
        if b.label.is_some() || !lets.iter().all(|st| accs.iter().all(|a| plain_stmt(st, a))) {
            return None;
        }
        body = last;
    }
    Some(body)
}

fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        Expr::Group(g) => strip_parens(&g.expr),
        _ => e,
    }
}

/// Whether `e` is `acc + t`, `t + acc` or `acc - t` with `t` reading none of `accs`.
fn additive_update(e: &Expr, acc: &str, accs: &[String]) -> bool {
    let Expr::Binary(b) = strip_parens(e) else {
        return false;
    };
    let is_acc = |e: &Expr| matches!(strip_parens(e), Expr::Path(p) if p.path.is_ident(acc));
    let free = |e: &Expr| accs.iter().all(|a| super::places::mentions_in(e, a) == 0);
    match b.op {
        syn::BinOp::Add(_) => {
            (is_acc(&b.left) && free(&b.right)) || (is_acc(&b.right) && free(&b.left))
        }
        syn::BinOp::Sub(_) => is_acc(&b.left) && free(&b.right),
        _ => false,
    }
}

/// Whether a fold's closure is a maximum or a minimum (`|m, x| m.max(x)`,
/// `f64::max`, `|m, &x| if x > m { x } else { m }`): not a sum, whatever its order.
pub(crate) fn max_min_fold(m: &ExprMethodCall) -> bool {
    if m.method != "fold" || m.args.len() != 2 {
        return false;
    }
    let is_max_min =
        |name: &str| matches!(name, "max" | "min" | "fmax" | "fmin" | "max_by" | "min_by");
    match &m.args[1] {
        Expr::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| is_max_min(&s.ident.to_string())),
        Expr::Closure(c) => {
            let mut body = &*c.body;
            while let Expr::Block(b) = body {
                match b.block.stmts.last() {
                    Some(syn::Stmt::Expr(last, None)) => body = last,
                    _ => return false,
                }
            }
            match strip_parens(body) {
                Expr::MethodCall(mc) => is_max_min(&mc.method.to_string()),
                Expr::Call(call) => matches!(&*call.func, Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| is_max_min(&s.ident.to_string()))),
                Expr::If(i) => matches!(&*i.cond, Expr::Binary(b)
                    if matches!(b.op, syn::BinOp::Lt(_) | syn::BinOp::Le(_) | syn::BinOp::Gt(_) | syn::BinOp::Ge(_))),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `m` is a `.fold(init, f)` on a temporary iterator that is not reassociated
/// because `f` is not additive (its accumulator is read besides the final addition, or
/// it leaves early): listed as left alone.
pub(crate) fn non_additive_fold(m: &ExprMethodCall) -> bool {
    m.method == "fold"
        && m.args.len() == 2
        && matches!(m.args[1], Expr::Closure(_))
        && temporary(&m.receiver)
        && !on_par_chain(&m.receiver)
        && !additive(&m.args[1])
        && !tuple_fold(m)
}

/// Whether `m` is a rayon `.sum()` (turbofish allowed) to reassociate in place: its
/// chain keeps positions (`zip`, `enumerate`, ...), so [`par_chain_source`] cannot
/// scramble the source; the items stay paired and in order, only the association of
/// the sum changes.
pub(crate) fn par_sum(m: &ExprMethodCall) -> bool {
    m.method == "sum" && m.args.is_empty() && on_par_chain(&m.receiver)
}

fn temporary(e: &Expr) -> bool {
    match e {
        Expr::MethodCall(_) | Expr::Call(_) | Expr::Macro(_) => true,
        Expr::Paren(p) => matches!(
            &*p.expr,
            Expr::Range(_) | Expr::MethodCall(_) | Expr::Call(_)
        ),
        Expr::Group(g) => temporary(&g.expr),
        _ => false,
    }
}

fn on_par_chain(e: &Expr) -> bool {
    let mut cur = e;
    while let Expr::MethodCall(m) = cur {
        let name = m.method.to_string();
        if name.starts_with("par_")
            || name.starts_with("into_par")
            || name == "par_bridge"
            || name.starts_with("__fprev_")
        {
            return true;
        }
        cur = &m.receiver;
    }
    false
}

fn additive(f: &Expr) -> bool {
    match f {
        Expr::Path(p) => crate::syntax::adds_by_path(p),
        Expr::Closure(c) => {
            if c.inputs.len() != 2 {
                return false;
            }
            let syn::Pat::Ident(acc) = strip_type(&c.inputs[0]) else {
                return false;
            };
            let acc = acc.ident.to_string();
            let mut body = &*c.body;
            while let Expr::Block(b) = body {
                // `{ let t = f(x); acc + t }`: statements that neither read `acc`,
                // rebind its name nor leave the closure early, then the update.
                let Some((syn::Stmt::Expr(last, None), lets)) = b.block.stmts.split_last() else {
                    return false;
                };
                if b.label.is_some() || !lets.iter().all(|st| plain_stmt(st, &acc)) {
                    return false;
                }
                body = last;
            }
            while let Expr::Paren(p) = body {
                body = &p.expr;
            }
            let Expr::Binary(b) = body else { return false };
            let is_acc = |e: &Expr| {
                super::places::root_of(e).as_deref() == Some(acc.as_str())
                    && matches!(e, Expr::Path(_))
            };
            let mentions = |e: &Expr| super::places::mentions_in(e, &acc) > 0;
            match b.op {
                syn::BinOp::Add(_) => {
                    (is_acc(&b.left) && !mentions(&b.right))
                        || (is_acc(&b.right) && !mentions(&b.left))
                }
                syn::BinOp::Sub(_) => is_acc(&b.left) && !mentions(&b.right),
                _ => false,
            }
        }
        _ => false,
    }
}

/// A statement of a fold closure's block that the term may follow: no token of it is
/// the accumulator's name `acc` (so it neither reads `acc` nor shadows it), and it does
/// not leave the closure (`return`, `?`).
fn plain_stmt(st: &syn::Stmt, acc: &str) -> bool {
    struct Leaves(bool);
    impl<'ast> Visit<'ast> for Leaves {
        fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
            self.0 = true;
        }
        fn visit_expr_try(&mut self, _: &'ast syn::ExprTry) {
            self.0 = true;
        }
        // A nested closure's or `async` block's `return` and `?` are its own.
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut leaves = Leaves(false);
    leaves.visit_stmt(st);
    let mut named = false;
    crate::syntax::token_mentions(st.to_token_stream(), &mut |n| named |= n == acc);
    !leaves.0 && !named
}

fn strip_type(p: &syn::Pat) -> &syn::Pat {
    match p {
        syn::Pat::Type(t) => strip_type(&t.pat),
        other => other,
    }
}

/// Rayon sources the rewrite replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParSource {
    ParIter,
    ParIterMut,
    ParChunks,
    /// `(a..b).into_par_iter()`.
    RangeIntoParIter,
}

/// Adapters that keep a chain's result independent of item positions.
const INTERMEDIATE: &[&str] = &[
    "map",
    "map_with",
    "map_init",
    "filter",
    "filter_map",
    "flat_map",
    "flat_map_iter",
    "flatten",
    "copied",
    "cloned",
    "inspect",
    "fold",
    "fold_with",
    "with_min_len",
    "with_max_len",
    "update",
];

/// Consumers whose result depends on the items but not on their positions (unlike
/// `collect`, `enumerate` or `zip`, which keep their order).
const TERMINAL: &[&str] = &[
    "sum",
    "product",
    "reduce",
    "reduce_with",
    "for_each",
    "for_each_with",
    "for_each_init",
    "count",
    "min",
    "max",
    "min_by",
    "max_by",
    "min_by_key",
    "max_by_key",
    "any",
    "all",
    "find_any",
    "find_map_any",
];

/// If `call` ends a rayon chain that can be scrambled, the source call at its bottom.
pub(crate) fn par_chain_source(
    call: &mut ExprMethodCall,
) -> Option<(&mut ExprMethodCall, ParSource)> {
    if !TERMINAL.contains(&call.method.to_string().as_str()) {
        return None;
    }
    let mut cur: &mut Expr = &mut call.receiver;
    loop {
        let Expr::MethodCall(m) = cur else {
            return None;
        };
        let name = m.method.to_string();
        let source = match (name.as_str(), m.args.len()) {
            ("par_iter", 0) => Some(ParSource::ParIter),
            ("par_iter_mut", 0) => Some(ParSource::ParIterMut),
            ("par_chunks", 1) => Some(ParSource::ParChunks),
            ("into_par_iter", 0) if is_range(&m.receiver) => Some(ParSource::RangeIntoParIter),
            _ => None,
        };
        if let Some(source) = source {
            return Some((m, source));
        }
        if !INTERMEDIATE.contains(&name.as_str()) {
            return None;
        }
        cur = &mut m.receiver;
    }
}

fn is_range(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(p) => is_range(&p.expr),
        Expr::Group(g) => is_range(&g.expr),
        Expr::Range(r) => r.start.is_some() && r.end.is_some(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn iterables() {
        for e in [
            parse_quote!(0..n),
            parse_quote!((0..=n).rev().step_by(2)),
            parse_quote!(&v),
            parse_quote!(v.iter().enumerate()),
            parse_quote!(v.chunks(4)),
        ] {
            assert!(supported_iterable(&e), "{}", quote::quote!(#e));
        }
        for e in [
            parse_quote!(0..),
            parse_quote!(it),
            parse_quote!(v.iter().zip(w.iter())),
        ] {
            assert!(!supported_iterable(&e), "{}", quote::quote!(#e));
        }
    }

    #[test]
    fn tuple_folds_are_independent_sums() {
        let m = |e: Expr| {
            let Expr::MethodCall(m) = e else { panic!() };
            m
        };
        for e in [
            parse_quote!(v
                .iter()
                .fold((0., 0., 0.), |(a, b, c), (x, y, z)| (a + x, b + y, c + z))),
            parse_quote!(v.iter().fold((0.0, 0), |(s, n), x| (s + x * x, n + 1))),
            parse_quote!(v.iter().fold((0.0, 0.0), |(s, t): (f64, f64), x| {
                let d = x - 1.0;
                (d + s, t - d * d)
            })),
        ] {
            let m = m(e);
            assert!(
                tuple_fold(&m) && !non_additive_fold(&m),
                "{}",
                quote::quote!(#m)
            );
        }
        for e in [
            // a component reads another accumulator, components swapped, a product
            parse_quote!(v.iter().fold((0., 0.), |(a, b), x| (a + x, b + a * x))),
            parse_quote!(v.iter().fold((0., 0.), |(a, b), x| (b + x, a + x))),
            parse_quote!(v.iter().fold((1., 0.), |(a, b), x| (a * x, b + x))),
            parse_quote!(v.iter().fold(t, |(a, b), x| (a + x, b + x))),
            parse_quote!(it.fold((0., 0.), |(a, b), x| (a + x, b + x))),
        ] {
            let m = m(e);
            assert!(!tuple_fold(&m), "{}", quote::quote!(#m));
        }
    }

    #[test]
    fn max_min_folds_are_not_sums() {
        let m = |e: Expr| {
            let Expr::MethodCall(m) = e else { panic!() };
            m
        };
        for e in [
            parse_quote!(v.iter().fold(f64::MIN, |m, x| m.max(*x))),
            parse_quote!(v.iter().fold(f64::MAX, |m, &x| f64::min(m, x))),
            parse_quote!(v.iter().fold(0.0, |m, &x| if x > m { x } else { m })),
        ] {
            let m = m(e);
            assert!(
                non_additive_fold(&m) && max_min_fold(&m),
                "{}",
                quote::quote!(#m)
            );
        }
        assert!(!max_min_fold(&m(parse_quote!(v
            .iter()
            .fold(0.0, |s, x| s * 0.5 + x)))));
    }

    #[test]
    fn additive_folds() {
        let fold = |e: Expr| {
            let Expr::MethodCall(m) = e else { panic!() };
            iterator_reduction(&m)
        };
        assert!(fold(parse_quote!(v.iter().fold(0.0, |s, x| s + x.abs()))));
        assert!(fold(parse_quote!(v
            .iter()
            .fold(0.0, |s, t| s + t.1 / (t.0 as f64 - x)))));
        assert!(fold(parse_quote!(v.iter().fold(0.0, std::ops::Add::add))));
        assert!(fold(parse_quote!(v.iter().copied().fold(0.0, f64::add))));
        assert!(fold(parse_quote!(v.iter().fold(0.0, <f64 as Add>::add))));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, f64::mul))));
        assert!(fold(parse_quote!((0..n).sum::<f64>())));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |s, x| s + s * x))));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |s, x| s * x))));
        assert!(!fold(parse_quote!(it.sum::<f64>())));
        assert!(!fold(parse_quote!(v.par_iter().map(f).sum::<f64>())));
        // A block body: statements free of the accumulator, then the update.
        assert!(fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            let t = f(x);
            let u = t * t;
            acc + u
        }))));
        assert!(fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            let t = x
                .iter()
                .map(|y| {
                    return y * 2.0;
                })
                .sum::<f64>();
            t + acc
        }))));
        // The accumulator read, shadowed, or the closure left early: not a reduction.
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            let t = x * acc;
            acc + t
        }))));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            let acc = 1.0;
            acc + x
        }))));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            if *x < 0.0 {
                return acc;
            }
            acc + x
        }))));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            let t = g(x)?;
            acc + t
        }))));
        assert!(!fold(parse_quote!(v.iter().fold(0.0, |acc, x| {
            println!("{acc}");
            acc + x
        }))));
    }

    #[test]
    fn early_exits() {
        let exits = |b: syn::Block| exits_early(None, &b);
        assert!(exits(parse_quote!({
            if x {
                break;
            }
        })));
        assert!(exits(parse_quote!({
            f()?;
        })));
        assert!(exits(parse_quote!({
            return;
        })));
        assert!(!exits(parse_quote!({
            loop {
                break;
            }
        })));
        assert!(!exits(parse_quote!({
            let f = || return 1;
            continue;
        })));
        assert!(exits(parse_quote!({
            for j in 0..3 {
                break 'outer;
            }
        })));
        assert!(!exits(parse_quote!({
            'inner: for j in 0..3 {
                break 'inner;
            }
        })));
        let owns = |b: syn::Block| loop_ends_by_plain_breaks(None, &b);
        assert!(owns(parse_quote!({
            if x {
                break;
            }
        })));
        assert!(!owns(parse_quote!({
            if x {
                break 5;
            }
        })));
        assert!(!owns(parse_quote!({
            f()?;
            break;
        })));
        assert!(!owns(parse_quote!({
            s += 1.0;
        })));
    }
}
