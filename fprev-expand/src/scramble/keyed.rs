//! Keyed reductions: accumulations into many elements of one place at once
//! (`acc[j] += x[i][j]` inside `for i`, `centroids[label[i]][j] += ..`, a scatter sum
//! `hist[bin[i]] += w[i]`, a gradient `*g_j -= d * x[i][j]` through
//! `g.iter_mut().enumerate()`). Each element is a sum over the loop; the runtime keeps a
//! reduction per element, keyed by the values of the place's indices, and writes each
//! element back after the loop by indexing the place again with its key.
//!
//! Legal because the classifier's rules still hold for the place's root: nothing in the
//! loop reads any element except by its own update, no term reads the root, and the
//! loop does not leave early. Keying by value makes two spellings of one element
//! (`c[i]`, `c[j]` with `i == j`, or `*g_j` and `g[p]` with `j == p`) one element.

use quote::quote;
use syn::{Expr, Pat};

use super::places::{borrows_without_code, key_of, mentions_in, root_of, strip, Form};

/// The index expressions of a place, outermost first: `(label[i], j)` of
/// `centroids[label[i]][j]`; empty for a place without an index.
pub(crate) fn indices(place: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    collect(place, &mut out);
    out
}

fn collect<'a>(place: &'a Expr, out: &mut Vec<&'a Expr>) {
    match place {
        Expr::Paren(p) => collect(&p.expr, out),
        Expr::Group(g) => collect(&g.expr, out),
        Expr::Field(f) => collect(&f.base, out),
        Expr::Unary(u) => collect(&u.expr, out),
        Expr::Index(i) => {
            collect(&i.expr, out);
            out.push(&i.index);
        }
        _ => {}
    }
}

/// `place` with its index expressions, outermost first, replaced by `with(n)` for the
/// n-th: the write-back `acc[__k.0] = v` of `acc[j]`, or the template that tells whether
/// two spellings are places of one array (`acc[_]`).
pub(crate) fn replace_indices(place: &Expr, with: &dyn Fn(usize) -> Expr) -> Expr {
    let mut place = place.clone();
    let mut n = 0;
    replace(&mut place, with, &mut n);
    place
}

fn replace(place: &mut Expr, with: &dyn Fn(usize) -> Expr, n: &mut usize) {
    match place {
        Expr::Paren(p) => replace(&mut p.expr, with, n),
        Expr::Group(g) => replace(&mut g.expr, with, n),
        Expr::Field(f) => replace(&mut f.base, with, n),
        Expr::Unary(u) => replace(&mut u.expr, with, n),
        Expr::Index(i) => {
            replace(&mut i.expr, with, n);
            *i.index = with(*n);
            *n += 1;
        }
        _ => {}
    }
}

/// The template of an indexed place (`acc[_]` of `acc[j]`): places of one root with one
/// template are elements of one array.
pub(crate) fn template(place: &Expr) -> String {
    key_of(&replace_indices(place, &|_| Expr::Verbatim(quote!(_))))
}

/// A loop that binds an element of a place and its index:
/// `for (j, g_j) in g.iter_mut().enumerate()`.
pub(crate) struct ElementLoop {
    /// The index variable (`j`).
    pub index: syn::Ident,
    /// The element variable (`g_j`).
    pub element: syn::Ident,
    /// The array (`g`).
    pub array: Expr,
    /// The element as a place of the array (`g[j]`).
    pub place: Expr,
}

/// If `f` is `for (j, e) in P.iter_mut().enumerate()` (plain bindings, `P` a variable or
/// a field of one; `.take(n)` before `enumerate`, `.take(n)` and `.skip(n)` after it keep
/// `j` the element's position), the element loop: `*e` is the place `P[j]`.
pub(crate) fn element_loop(f: &syn::ExprForLoop) -> Option<ElementLoop> {
    let Pat::Tuple(t) = &*f.pat else {
        return None;
    };
    if t.elems.len() != 2 {
        return None;
    }
    let plain = |p: &Pat| match p {
        Pat::Ident(i) if i.by_ref.is_none() && i.mutability.is_none() && i.subpat.is_none() => {
            Some(i.ident.clone())
        }
        _ => None,
    };
    let (index, element) = (plain(&t.elems[0])?, plain(&t.elems[1])?);
    // From the outside in: take/skip after enumerate, enumerate, take before it, iter_mut.
    let mut e = &*f.expr;
    let mut enumerated = false;
    let array = loop {
        let Expr::MethodCall(m) = e else { return None };
        if m.turbofish.is_some() {
            return None;
        }
        match (m.method.to_string().as_str(), m.args.len(), enumerated) {
            ("take" | "skip", 1, false) => {}
            ("enumerate", 0, false) => enumerated = true,
            ("take", 1, true) => {}
            ("iter_mut", 0, true) => break &*m.receiver,
            _ => return None,
        }
        e = &m.receiver;
    };
    if !borrows_without_code(array) {
        return None;
    }
    let place: Expr = syn::parse_quote!(#array[#index]);
    Some(ElementLoop {
        index,
        element,
        array: array.clone(),
        place,
    })
}

/// If `f` binds the elements of a place one at a time by mutable reference without
/// their position (`for v in xs.iter_mut()`, `for v in &mut xs`, `.take(n)`/`.skip(n)`
/// after `iter_mut`, `for (a, v) in a.iter().zip(xs.iter_mut())` on either side of the
/// `zip`, or an [`element_loop`]), its element variable and the array. An update of a
/// part of the element (`v.acc += t`, `v.grad[0] -= t`, `*v += t` without a position)
/// adds to an element of the array, which an enclosing loop must count as an update of
/// the array.
pub(crate) fn element_part_loop(f: &syn::ExprForLoop) -> Option<(syn::Ident, &Expr)> {
    let plain = |p: &Pat| match p {
        Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => Some(i.ident.clone()),
        _ => None,
    };
    let (element, array) = match (&*f.pat, &*f.expr) {
        (Pat::Tuple(t), Expr::MethodCall(m))
            if m.method == "zip" && m.args.len() == 1 && t.elems.len() == 2 =>
        {
            match (
                mut_source(&m.receiver, false),
                mut_source(&m.args[0], false),
            ) {
                (None, Some(array)) => (plain(&t.elems[1])?, array),
                (Some(array), None) => (plain(&t.elems[0])?, array),
                _ => return None,
            }
        }
        (Pat::Ident(_), e) => (plain(&f.pat)?, mut_source(e, true)?),
        (Pat::Tuple(t), e) if t.elems.len() == 2 => (plain(&t.elems[1])?, mut_source(e, true)?),
        _ => return None,
    };
    borrows_without_code(array).then_some((element, array))
}

/// The array `e` borrows element by element (`xs` of `xs.iter_mut()` or `&mut xs`,
/// through `.take(n)`/`.skip(n)` after `iter_mut`, and `.enumerate()` when
/// `enumerate`).
fn mut_source(e: &Expr, enumerate: bool) -> Option<&Expr> {
    match e {
        Expr::Reference(r) if r.mutability.is_some() => Some(&r.expr),
        Expr::MethodCall(m) if m.turbofish.is_none() => {
            match (m.method.to_string().as_str(), m.args.len()) {
                ("take" | "skip", 1) => mut_source(&m.receiver, enumerate),
                ("enumerate", 0) if enumerate => mut_source(&m.receiver, enumerate),
                ("iter_mut", 0) => Some(&m.receiver),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `e` is `*name` (the update of an element loop's element).
pub(crate) fn deref_of(e: &Expr) -> Option<&syn::Ident> {
    let Expr::Unary(u) = e else { return None };
    if !matches!(u.op, syn::UnOp::Deref(_)) {
        return None;
    }
    match &*u.expr {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    }
}

/// Whether `place` is `root[v]` with `v` the loop's own variable over a range
/// (`for i in a..b { y[i] += .. }`): each element takes one term in the loop, so there
/// is nothing to reorder (it is left alone as an index that changes in the loop).
pub(crate) fn one_term_per_element(place: &Expr, range_var: Option<&str>) -> bool {
    let Some(v) = range_var else { return false };
    let idx = indices(place);
    idx.len() == 1 && matches!(idx[0], Expr::Path(p) if p.path.get_ident().is_some_and(|i| i == v))
}

/// The variable of a `for` loop over a range (`i` of `for i in 0..n`).
pub(crate) fn range_var(pat: Option<&Pat>, iterable: Option<&Expr>) -> Option<String> {
    let (Some(Pat::Ident(p)), Some(Expr::Range(_))) = (pat, iterable) else {
        return None;
    };
    Some(p.ident.to_string())
}

/// A vector rebuilt from itself in a loop, each element a sum over the loop:
/// `mean = x.iter().zip(mean.iter()).map(|(&e, &s)| e * w + s).collect()` (either side
/// of the `zip`; `&s` with `s` in the closure, or `s` with `*s`).
pub(crate) struct Rebuild<'a> {
    /// The vector (`mean`).
    pub target: &'a Expr,
    /// The vector's element as a place (`mean[j]`), keyed by its position.
    pub place: Expr,
    /// How the closure adds its term.
    pub form: Form,
    /// The accumulator as the closure reads it (`s`, `*s`).
    pub acc: &'a Expr,
    /// The term (`e * w`).
    pub term: &'a Expr,
    /// The `zip` call (its receiver and argument keep their order).
    pub zip: &'a syn::ExprMethodCall,
    /// The closure's parameter pattern and the statements before its result.
    pub closure: &'a syn::ExprClosure,
    /// The `collect` call (its turbofish is kept).
    pub collect: &'a syn::ExprMethodCall,
}

/// If `e` is a vector rebuilt from itself by an additive closure, the rebuild.
pub(crate) fn rebuild_of(e: &Expr) -> Option<Rebuild<'_>> {
    let Expr::Assign(a) = e else { return None };
    let target = &*a.left;
    if !borrows_without_code(target) {
        return None;
    }
    let key = key_of(target);
    let (collect, closure, zip) = zip_map_collect(&a.right)?;
    // Which side of the zip is the vector itself.
    let is_self = |e: &Expr| match strip(e) {
        Expr::MethodCall(m) => {
            m.method == "iter" && m.args.is_empty() && key_of(&m.receiver) == key
        }
        Expr::Reference(r) => r.mutability.is_none() && key_of(&r.expr) == key,
        _ => false,
    };
    let side = match (is_self(&zip.receiver), is_self(&zip.args[0])) {
        (false, true) => 1,
        (true, false) => 0,
        _ => return None,
    };
    let (name, by_ref) = element_param(closure, side)?;
    let body = closure_result(closure, &name)?;
    let Expr::Binary(b) = strip(body) else {
        return None;
    };
    let is_acc = |e: &Expr| match strip(e) {
        Expr::Path(p) => by_ref && p.path.is_ident(&name),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
            !by_ref && matches!(&*u.expr, Expr::Path(p) if p.path.is_ident(&name))
        }
        _ => false,
    };
    let root = root_of(target)?;
    let free = |e: &Expr| mentions_in(e, &name) == 0 && mentions_in(e, &root) == 0;
    let (form, acc, term) = match b.op {
        syn::BinOp::Add(_) if is_acc(&b.left) && free(&b.right) => {
            (Form::AddRight, &*b.left, &*b.right)
        }
        syn::BinOp::Add(_) if is_acc(&b.right) && free(&b.left) => {
            (Form::AddLeft, &*b.right, &*b.left)
        }
        syn::BinOp::Sub(_) if is_acc(&b.left) && free(&b.right) => {
            (Form::SubRight, &*b.left, &*b.right)
        }
        _ => return None,
    };
    let place: Expr = syn::parse_quote!(#target[j]);
    Some(Rebuild {
        target,
        place,
        form,
        acc,
        term,
        zip,
        closure,
        collect,
    })
}

/// `x.iter().zip(y).map(|(..)| ..).collect()`, as its `collect` call, the closure and the
/// `zip` call.
fn zip_map_collect(
    e: &Expr,
) -> Option<(
    &syn::ExprMethodCall,
    &syn::ExprClosure,
    &syn::ExprMethodCall,
)> {
    let Expr::MethodCall(collect) = strip(e) else {
        return None;
    };
    if collect.method != "collect" || !collect.args.is_empty() {
        return None;
    }
    let Expr::MethodCall(map) = strip(&collect.receiver) else {
        return None;
    };
    let (Some(Expr::Closure(closure)), 1) = (map.args.first(), map.args.len()) else {
        return None;
    };
    if map.method != "map" || closure.inputs.len() != 1 {
        return None;
    }
    let Expr::MethodCall(zip) = strip(&map.receiver) else {
        return None;
    };
    if zip.method != "zip" || zip.args.len() != 1 {
        return None;
    }
    Some((collect, closure, zip))
}

/// The name of the closure's parameter for the vector's own element (`side` of the
/// zipped pair), and whether it is bound by reference (`&s`, read as `s`) or not (`s`,
/// read as `*s`).
fn element_param(closure: &syn::ExprClosure, side: usize) -> Option<(String, bool)> {
    let Pat::Tuple(t) = &closure.inputs[0] else {
        return None;
    };
    if t.elems.len() != 2 {
        return None;
    }
    // `&s` read as `s`, or `s` read as `*s`.
    let param = match &t.elems[side] {
        Pat::Reference(r) => match &*r.pat {
            Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
                (i.ident.to_string(), true)
            }
            _ => return None,
        },
        Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => (i.ident.to_string(), false),
        _ => return None,
    };
    Some(param)
}

/// The closure's result expression, through blocks whose statements before it do not
/// name `name`; `None` for a labelled block or one whose statements do.
fn closure_result<'a>(closure: &'a syn::ExprClosure, name: &str) -> Option<&'a Expr> {
    let mut body = &*closure.body;
    while let Expr::Block(b) = body {
        let (syn::Stmt::Expr(last, None), lets) = b.block.stmts.split_last()? else {
            return None;
        };
        let named = lets.iter().any(|st| {
            let mut n = false;
            crate::syntax::token_mentions(quote!(#st), &mut |m| n |= m == name);
            n
        });
        if b.label.is_some() || named {
            return None;
        }
        body = last;
    }
    Some(body)
}

#[cfg(test)]
mod rebuild_tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn rebuilt_vectors() {
        for e in [
            parse_quote!(
                mean = x
                    .iter()
                    .zip(mean.iter())
                    .map(|(&e, &s)| e * w + s)
                    .collect()
            ),
            parse_quote!(
                mean = mean
                    .iter()
                    .zip(&x)
                    .map(|(s, e)| *s - e * w)
                    .collect::<Vec<_>>()
            ),
            parse_quote!(
                mean = x
                    .iter()
                    .zip(mean.iter())
                    .map(|(&e, &s)| {
                        let t = e * w;
                        s + t
                    })
                    .collect()
            ),
        ] {
            let e: Expr = e;
            let r = rebuild_of(&e).expect("a rebuild");
            assert_eq!(key_of(&r.place), "mean[j]");
        }
        // A vector held in a field (what `#[accumulator]` counts as a place site).
        let field: Expr = parse_quote!(
            self.mean = x
                .iter()
                .zip(self.mean.iter())
                .map(|(&e, &s)| e * w + s)
                .collect()
        );
        let r = rebuild_of(&field).expect("a rebuild");
        assert_eq!(key_of(&r.place), "self.mean[j]");
        for e in [
            // reads its accumulator in the term, multiplies, is not a collect
            parse_quote!(
                mean = x
                    .iter()
                    .zip(mean.iter())
                    .map(|(&e, &s)| e * s + s)
                    .collect()
            ),
            parse_quote!(mean = x.iter().zip(mean.iter()).map(|(&e, &s)| e * s).collect()),
            parse_quote!(mean = x.iter().zip(mean.iter()).map(|(&e, &s)| e + s).sum()),
            parse_quote!(mean = x.iter().zip(other.iter()).map(|(&e, &s)| e + s).collect()),
            parse_quote!(mean = x.iter().zip(mean.iter()).map(|(&e, s)| e + s).collect()),
        ] {
            let e: Expr = e;
            assert!(rebuild_of(&e).is_none(), "{}", quote!(#e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn indices_and_templates() {
        let p: Expr = parse_quote!(centroids[label[i]][j]);
        let idx: Vec<String> = indices(&p).iter().map(|e| key_of(e)).collect();
        assert_eq!(idx, ["label[i]", "j"]);
        assert_eq!(template(&p), "centroids[_][_]");
        let back = replace_indices(&p, &|n| {
            let n = syn::Index::from(n);
            parse_quote!(__k.#n)
        });
        assert_eq!(key_of(&back), "centroids[__k.0][__k.1]");
        assert_eq!(template(&parse_quote!(self.g[p])), "self.g[_]");
    }

    #[test]
    fn element_loops() {
        let f: syn::ExprForLoop = parse_quote!(for (j, g_j) in g.iter_mut().enumerate() {});
        let e = element_loop(&f).expect("an element loop");
        assert_eq!(
            (e.index.to_string(), e.element.to_string()),
            ("j".into(), "g_j".into())
        );
        assert_eq!(key_of(&e.place), "g[j]");
        for f in [
            parse_quote!(for (j, g_j) in g.iter_mut().enumerate().take(p) {}),
            parse_quote!(for (j, g_j) in self.g.iter_mut().take(p).enumerate().skip(1) {}),
        ] {
            let f: syn::ExprForLoop = f;
            assert!(element_loop(&f).is_some());
        }
        for f in [
            parse_quote!(for (j, g_j) in g.iter().enumerate() {}),
            parse_quote!(for (j, g_j) in g().iter_mut().enumerate() {}),
            parse_quote!(for (mut j, g_j) in g.iter_mut().enumerate() {}),
            parse_quote!(for (j, g_j) in g.iter_mut().skip(1).enumerate() {}),
            parse_quote!(for g_j in g.iter_mut() {}),
        ] {
            let f: syn::ExprForLoop = f;
            assert!(element_loop(&f).is_none());
        }
    }
}
