//! Finding and rewriting accumulation sites in a function body.
//!
//! Three kinds of site (see `fprev::chains::SiteKind`):
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

use std::collections::{BTreeSet, HashMap, HashSet};

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, Pat, Stmt};

/// What kind of site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Variable,
    Place,
    Iterator,
}

/// One site found in the body.
pub struct Site {
    pub kind: Kind,
    pub span: Span,
    pub text: String,
}

fn text_of(t: &impl ToTokens) -> String {
    tidy(&t.to_token_stream().to_string())
}

/// `a [i] . sum ()` -> `a[i].sum()`: the token string with the spaces rustfmt would drop.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let prev = out.chars().last().unwrap_or(' ');
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let glue_before = matches!(next, '[' | '(')
                && (prev.is_alphanumeric() || matches!(prev, '_' | ')' | ']' | '>'))
                || matches!(next, ']' | ')' | ',' | '.' | ';' | '?' | ':' if next != ':' || chars.get(i + 2) == Some(&':'));
            let glue_after =
                matches!(prev, '[' | '(' | '.' | '&' | '!') || (prev == ':' && out.ends_with("::"));
            if glue_before || glue_after {
                continue;
            }
        }
        out.push(c);
    }
    out
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
        Expr::Index(i) => pure_place(&i.expr) && pure_value(&i.index),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => pure_place(&u.expr),
        Expr::Paren(p) => pure_place(&p.expr),
        _ => false,
    }
}

fn pure_value(e: &Expr) -> bool {
    match e {
        Expr::Lit(_) | Expr::Path(_) => true,
        Expr::Field(f) => pure_value(&f.base),
        Expr::Binary(b) => !is_assign_op(&b.op) && pure_value(&b.left) && pure_value(&b.right),
        Expr::Unary(u) => pure_value(&u.expr),
        Expr::Paren(p) => pure_value(&p.expr),
        Expr::Cast(c) => pure_value(&c.expr),
        Expr::Index(i) => pure_value(&i.expr) && pure_value(&i.index),
        _ => false,
    }
}

fn is_assign_op(op: &BinOp) -> bool {
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

/// `x = x + e`, `x = e + x` or `x = x - e`: the right side extends the left.
fn extends(lhs: &Expr, rhs: &Expr) -> bool {
    let l = lhs.to_token_stream().to_string();
    match rhs {
        Expr::Binary(b) => match b.op {
            BinOp::Add(_) => {
                b.left.to_token_stream().to_string() == l
                    || b.right.to_token_stream().to_string() == l
            }
            BinOp::Sub(_) => b.left.to_token_stream().to_string() == l,
            _ => false,
        },
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

/// First pass: the accumulator variables, in source order, each with its site.
pub struct Collector {
    pub sites: Vec<Site>,
    pub vars: HashMap<String, usize>,
    pub errors: Vec<syn::Error>,
}

impl Collector {
    pub fn new() -> Collector {
        Collector {
            sites: Vec::new(),
            vars: HashMap::new(),
            errors: Vec::new(),
        }
    }

    fn add_var(&mut self, name: String, node: &impl ToTokens) {
        if !self.vars.contains_key(&name) {
            self.vars.insert(name, self.sites.len());
            self.sites.push(Site {
                kind: Kind::Variable,
                span: node.span(),
                text: text_of(node),
            });
        }
    }
}

impl VisitMut for Collector {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        if c.capture.is_none() {
            visit_mut::visit_expr_closure_mut(self, c);
        }
    }
    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}

    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        if let Some(pos) = l.attrs.iter().position(is_acc_attr) {
            let attr = l.attrs.remove(pos);
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                self.errors.push(syn::Error::new_spanned(
                    &attr,
                    "#[acc] takes no arguments: write `#[acc] let mut s = 0.0;`",
                ));
            }
            match &l.pat {
                Pat::Ident(i) => self.add_var(i.ident.to_string(), &*l),
                Pat::Type(t) if matches!(&*t.pat, Pat::Ident(_)) => {
                    if let Pat::Ident(i) = &*t.pat {
                        self.add_var(i.ident.to_string(), &*l)
                    }
                }
                other => self.errors.push(syn::Error::new_spanned(
                    other,
                    "#[acc] marks one variable: bind a single name, such as `#[acc] let mut s = 0.0;`",
                )),
            }
        }
        visit_mut::visit_local_mut(self, l);
    }

    fn visit_attribute_mut(&mut self, a: &mut syn::Attribute) {
        if is_acc_attr(a) {
            self.errors.push(syn::Error::new_spanned(
                &*a,
                "#[acc] marks an accumulator `let` inside an #[accumulator] fn: put it on a `let` statement",
            ));
        }
    }

    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        visit_mut::visit_stmt_mut(self, s);
        // Reported above; removed so rustc does not add its own errors about it.
        if let Stmt::Expr(e, _) = s {
            if let Some(attrs) = expr_attrs_mut(e) {
                attrs.retain(|a| !is_acc_attr(a));
            }
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        visit_mut::visit_expr_mut(self, e);
        match e {
            Expr::Binary(b) if matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)) => {
                if let Some(name) = ident_of(&b.left) {
                    self.add_var(name, &*b);
                }
            }
            Expr::Assign(a) if extends(&a.left, &a.right) => {
                if let Some(name) = ident_of(&a.left) {
                    self.add_var(name, &*a);
                }
            }
            _ => {}
        }
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

/// Defour's rule for an expression, as a constant plus the chain counters of the
/// accumulator variables it adds.
struct Chain {
    constant: u64,
    vars: Vec<(usize, String)>,
}

/// The counters of one frame: the function's, or a closure's own (so that a closure
/// keeps its `Fn`/`Sync`-ness: it never captures the function's frame for variables and
/// places of its own).
pub struct Scope {
    /// The frame's local variable.
    pub ident: syn::Ident,
    /// The frame's struct.
    pub ty: syn::Ident,
    /// Names declared inside (None: the function, which owns every other name).
    declared: Option<HashSet<String>>,
    /// Variable sites counted in this frame.
    pub vars: BTreeSet<usize>,
    /// Place sites counted in this frame.
    pub places: BTreeSet<usize>,
}

impl Scope {
    pub fn new(n: usize, declared: Option<HashSet<String>>) -> Scope {
        let (ident, ty) = if n == 0 {
            ("__fprev".to_string(), "__FprevFrame".to_string())
        } else {
            (format!("__fprev{n}"), format!("__FprevFrame{n}"))
        };
        Scope {
            ident: syn::Ident::new(&ident, Span::mixed_site()),
            ty: syn::Ident::new(&ty, Span::call_site()),
            declared,
            vars: BTreeSet::new(),
            places: BTreeSet::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.places.is_empty()
    }
}

/// Every name bound by a pattern inside a closure (parameters, `let`s, arms, loops).
struct Declared(HashSet<String>);

impl VisitMut for Declared {
    fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        visit_mut::visit_pat_ident_mut(self, p);
    }
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Second pass: rewrite every site.
pub struct Rewriter<'a> {
    pub krate: &'a TokenStream,
    pub sites: Vec<Site>,
    pub vars: HashMap<String, usize>,
    pub statics: syn::Ident,
    /// The function's frame first, then the closures being visited.
    pub scopes: Vec<Scope>,
    /// Frames made so far (names closure frames apart).
    pub frames: usize,
}

impl Rewriter<'_> {
    /// The frame that counts variable `name` (site `k`), recording that it does.
    fn var_frame(&mut self, k: usize, name: &str) -> syn::Ident {
        let i = (0..self.scopes.len())
            .rev()
            .find(|&i| {
                self.scopes[i]
                    .declared
                    .as_ref()
                    .is_none_or(|d| d.contains(name))
            })
            .unwrap_or(0);
        self.scopes[i].vars.insert(k);
        self.scopes[i].ident.clone()
    }

    fn chain(&self, e: &Expr) -> Chain {
        match e {
            Expr::Binary(b) if matches!(b.op, BinOp::Add(_) | BinOp::Sub(_)) => {
                let (l, r) = (self.chain(&b.left), self.chain(&b.right));
                Chain {
                    constant: l.constant + r.constant + 1,
                    vars: [l.vars, r.vars].concat(),
                }
            }
            Expr::Paren(p) => self.chain(&p.expr),
            Expr::Group(g) => self.chain(&g.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => self.chain(&u.expr),
            Expr::Cast(c) => self.chain(&c.expr),
            _ => match ident_of(e).and_then(|n| self.vars.get(&n).map(|&k| (k, n))) {
                Some(v) => Chain {
                    constant: 0,
                    vars: vec![v],
                },
                None => Chain {
                    constant: 0,
                    vars: Vec::new(),
                },
            },
        }
    }

    fn chain_tokens(&mut self, c: &Chain) -> TokenStream {
        let constant = c.constant;
        let terms: Vec<TokenStream> = c
            .vars
            .iter()
            .map(|(k, name)| {
                let f = self.var_frame(*k, name);
                let c = format_ident!("c{}", k);
                quote!(#f.#c)
            })
            .collect();
        quote!(#constant #( + #terms )*)
    }

    fn is_float(&self, place: TokenStream) -> TokenStream {
        let k = self.krate;
        quote!(#k::__private::chains::is_float(::core::ptr::addr_of!(#place)))
    }

    /// The update of variable `k` after `name = rhs` (or `let name = rhs`).
    fn assign_update(&mut self, k: usize, name: &str, rhs: Option<&Expr>) -> TokenStream {
        let f = self.var_frame(k, name);
        let (c, s) = (format_ident!("c{}", k), format_ident!("s{}", k));
        let chain = match rhs {
            Some(r) => self.chain(r),
            None => Chain {
                constant: 0,
                vars: Vec::new(),
            },
        };
        let t = self.chain_tokens(&chain);
        if let Some(pos) = chain.vars.iter().position(|v| v.0 == k) {
            // `s = s + e`: the chain grows by the rest.
            let mut rest = chain;
            rest.vars.remove(pos);
            let t = self.chain_tokens(&rest);
            quote!(#f.#c += #t;)
        } else {
            quote!(#f.#s.restart(&mut #f.#c, #t);)
        }
    }

    fn new_site(&mut self, kind: Kind, node: &impl ToTokens) -> usize {
        self.sites.push(Site {
            kind,
            span: node.span(),
            text: text_of(node),
        });
        self.sites.len() - 1
    }

    fn rewrite_variable(&mut self, e: &Expr, k: usize, name_expr: &Expr) -> Expr {
        let name = ident_of(name_expr).unwrap_or_default();
        let f = self.var_frame(k, &name);
        let c = format_ident!("c{}", k);
        let update = match e {
            Expr::Binary(b) if matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)) => {
                let t = self.chain_tokens(&self.chain(&b.right));
                quote!(#f.#c += 1 + #t;)
            }
            Expr::Binary(_) => {
                // *=, /=, %= ...: Defour's rule resets the chain.
                let s = format_ident!("s{}", k);
                quote!(#f.#s.restart(&mut #f.#c, 0);)
            }
            Expr::Assign(a) => self.assign_update(k, &name, Some(&a.right)),
            _ => return e.clone(),
        };
        let check = self.is_float(name_expr.to_token_stream());
        syn::parse_quote_spanned! {e.span()=>
            { #e; if #check { #update } }
        }
    }

    fn rewrite_place(&mut self, e: &Expr, place: &Expr) -> Expr {
        let k = self.new_site(Kind::Place, e);
        let scope = self.scopes.last_mut().expect("the function's frame");
        scope.places.insert(k);
        let (f, krate) = (scope.ident.clone(), self.krate);
        let (p, s) = (format_ident!("p{}", k), format_ident!("s{}", k));
        let ptr = quote_spanned!(Span::mixed_site()=> __fprev_place);
        syn::parse_quote_spanned! {e.span()=>
            {
                let #ptr = ::core::ptr::addr_of!(#place);
                if #krate::__private::chains::is_float(#ptr) {
                    #f.#p.add(&mut #f.#s, #ptr);
                }
                #e
            }
        }
    }

    fn rewrite_iterator(&mut self, m: &mut syn::ExprMethodCall) {
        let k = self.new_site(Kind::Iterator, &*m);
        let krate = self.krate;
        let statics = &self.statics;
        let recv = &m.receiver;
        m.receiver = syn::parse_quote_spanned! {recv.span()=>
            {
                #[allow(unused_imports)]
                use #krate::__private::chains::{ViaIterator as _, ViaOther as _};
                #krate::__private::chains::Wrap(::core::option::Option::Some(#recv))
                    .__fprev_count(&#statics[#k])
            }
        };
    }
}

/// `.sum()` on a temporary, or `.fold(init, |a, b| a + e)`.
fn iterator_site(m: &syn::ExprMethodCall) -> bool {
    let temporary = matches!(
        &*m.receiver,
        Expr::MethodCall(_) | Expr::Call(_) | Expr::Paren(_)
    );
    if !temporary {
        return false;
    }
    if m.method == "sum" && m.args.is_empty() {
        return true;
    }
    if m.method != "fold" || m.args.len() != 2 {
        return false;
    }
    let Expr::Closure(c) = &m.args[1] else {
        return false;
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

impl VisitMut for Rewriter<'_> {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        if c.capture.is_some() {
            return;
        }
        let mut declared = Declared(HashSet::new());
        declared.visit_expr_closure_mut(&mut c.clone());
        self.frames += 1;
        self.scopes.push(Scope::new(self.frames, Some(declared.0)));
        visit_mut::visit_expr_closure_mut(self, c);
        let scope = self.scopes.pop().expect("pushed above");
        if !scope.is_empty() {
            let decl = super::expand::frame_decl(self.krate, &self.statics, &self.sites, &scope);
            let body = &c.body;
            *c.body = syn::parse_quote_spanned! {body.span()=> { #decl #body } };
        }
    }
    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        let stmts = std::mem::take(&mut b.stmts);
        for mut stmt in stmts {
            self.visit_stmt_mut(&mut stmt);
            let mut after = Vec::new();
            if let Stmt::Local(l) = &stmt {
                if let Some(init) = &l.init {
                    let mut names = Vec::new();
                    bound_names(&l.pat, &mut names);
                    let single = names.len() == 1;
                    for (name, span) in names {
                        if let Some(&k) = self.vars.get(&name) {
                            let ident = syn::Ident::new(&name, span);
                            let rhs = if single { Some(&*init.expr) } else { None };
                            let update = self.assign_update(k, &name, rhs);
                            let check = self.is_float(quote!(#ident));
                            after.push(syn::parse_quote!(if #check { #update }));
                        }
                    }
                }
            }
            b.stmts.push(stmt);
            b.stmts.extend(after);
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        visit_mut::visit_expr_mut(self, e);
        let target = match e {
            Expr::Binary(b) if is_assign_op(&b.op) => Some((*b.left).clone()),
            Expr::Assign(a) => Some((*a.left).clone()),
            _ => None,
        };
        if let Some(lhs) = target {
            let additive = match e {
                Expr::Binary(b) => matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)),
                Expr::Assign(a) => extends(&a.left, &a.right),
                _ => false,
            };
            if let Some(&k) = ident_of(&lhs).and_then(|n| self.vars.get(&n)) {
                let is_var_op = matches!(e, Expr::Assign(_))
                    || matches!(e, Expr::Binary(b) if matches!(b.op,
                        BinOp::AddAssign(_) | BinOp::SubAssign(_) | BinOp::MulAssign(_)
                        | BinOp::DivAssign(_) | BinOp::RemAssign(_)));
                if is_var_op {
                    *e = self.rewrite_variable(e, k, &lhs);
                }
            } else if additive && ident_of(&lhs).is_none() && pure_place(&lhs) {
                *e = self.rewrite_place(e, &lhs);
            }
            return;
        }
        if let Expr::MethodCall(m) = e {
            if iterator_site(m) {
                self.rewrite_iterator(m);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tidy() {
        assert_eq!(super::tidy("s += a [i] * b [i]"), "s += a[i] * b[i]");
        assert_eq!(
            super::tidy("row . iter () . map (| x | x * 2.0) . sum :: < f64 > ()"),
            "row.iter().map(| x | x * 2.0).sum::< f64 >()"
        );
    }
}
