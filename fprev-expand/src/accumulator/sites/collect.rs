//! First pass: find the accumulator variables (and `#[acc]` misuse).

use std::collections::{HashMap, HashSet};

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, Pat, Stmt};

use super::{
    expr_attrs_mut, extends, ident_of, is_acc_attr, text_of, ChainSite, ChainSiteKind, ClosureNames,
};
use crate::syntax::integer_term;

/// First pass: the accumulator variables, in source order, each with its site.
pub struct Collector {
    pub sites: Vec<ChainSite>,
    pub vars: HashMap<String, usize>,
    pub errors: Vec<syn::Error>,
    /// Variables some update of which adds a term that is not an integer by its syntax,
    /// or that `#[acc]` marks: the others are integer counters ([`Self::finish`]).
    maybe_float: HashSet<String>,
    /// Names some closure uses without declaring them: the counters of such variables
    /// are captured by a closure, so they cannot live in a frame's tuple (which an
    /// edition-2018 closure would capture whole).
    pub captured: HashSet<String>,
    /// Where in the body the visit is: the run of statements (see
    /// [`crate::runs`]) and a count within it. Runs may be visited out
    /// of order; each variable's site is its first update in the body all the same.
    pub position: (usize, usize),
    /// The position of each site's update.
    positions: Vec<(usize, usize)>,
    /// Variables that are vectors rebuilt from themselves, each element a sum
    /// ([`rebuild_of`](crate::scramble::keyed::rebuild_of)): their chain is their
    /// elements'.
    pub vectors: HashSet<String>,
}

impl Collector {
    pub fn new() -> Collector {
        Collector {
            sites: Vec::new(),
            vars: HashMap::new(),
            errors: Vec::new(),
            maybe_float: HashSet::new(),
            captured: HashSet::new(),
            position: (0, 0),
            positions: Vec::new(),
            vectors: HashSet::new(),
        }
    }

    /// Variables some update of which may add a float (see [`Self::finish`]).
    pub fn float_vars(&self) -> HashMap<String, usize> {
        self.vars
            .iter()
            .filter(|(name, _)| self.maybe_float.contains(*name))
            .map(|(name, &k)| (name.clone(), k))
            .collect()
    }

    /// Drops the variables whose every update adds an integer (`count += 1`,
    /// `n += k as usize`): no float adds an integer, so they are never float chains, and
    /// a counter per update in a long function costs its build more than anything else.
    /// `#[acc]` keeps a variable whatever its terms. The sites kept are numbered in the
    /// order of their first update in the body.
    pub fn finish(&mut self) {
        let keep: Vec<bool> = {
            let mut by_site = vec![true; self.sites.len()];
            for (name, &k) in &self.vars {
                by_site[k] = self.maybe_float.contains(name);
            }
            by_site
        };
        let mut kept: Vec<(usize, ChainSite)> = std::mem::take(&mut self.sites)
            .into_iter()
            .enumerate()
            .filter(|&(k, _)| keep[k])
            .collect();
        kept.sort_by_key(|&(k, _)| self.positions[k]);
        let mut new_index = vec![usize::MAX; keep.len()];
        for (new, &(old, _)) in kept.iter().enumerate() {
            new_index[old] = new;
        }
        self.sites = kept.into_iter().map(|(_, site)| site).collect();
        self.vars.retain(|_, k| keep[*k]);
        for k in self.vars.values_mut() {
            *k = new_index[*k];
        }
    }

    fn add_var(&mut self, name: String, node: &impl ToTokens) {
        self.position.1 += 1;
        let site = || ChainSite {
            kind: ChainSiteKind::Variable,
            span: node.span(),
            text: text_of(node),
            running: false,
        };
        match self.vars.get(&name) {
            None => {
                self.vars.insert(name, self.sites.len());
                self.sites.push(site());
                self.positions.push(self.position);
            }
            // Seen first in a run visited later (see `position`).
            Some(&k) if self.position < self.positions[k] => {
                self.sites[k] = site();
                self.positions[k] = self.position;
            }
            Some(_) => {}
        }
    }
}

impl VisitMut for Collector {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    skip_constant_contexts!();
    fn visit_expr_closure_mut(&mut self, c: &mut syn::ExprClosure) {
        if c.capture.is_none() {
            let names = ClosureNames::of(c);
            self.captured
                .extend(names.mentioned.difference(&names.declared).cloned());
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
                Pat::Ident(i) => {
                    self.maybe_float.insert(i.ident.to_string());
                    self.add_var(i.ident.to_string(), &*l)
                }
                Pat::Type(t) if matches!(&*t.pat, Pat::Ident(_)) => {
                    if let Pat::Ident(i) = &*t.pat {
                        self.maybe_float.insert(i.ident.to_string());
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
        if let Expr::Assign(a) = e {
            if let Some(name) = ident_of(&a.left) {
                if crate::scramble::keyed::rebuild_of(e).is_some() {
                    self.maybe_float.insert(name.clone());
                    self.vectors.insert(name.clone());
                    self.add_var(name, &*e);
                    return;
                }
            }
        }
        match e {
            Expr::Binary(b) if matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)) => {
                if let Some(name) = ident_of(&b.left) {
                    if !integer_term(&b.right) {
                        self.maybe_float.insert(name.clone());
                    }
                    self.add_var(name, &*b);
                }
            }
            Expr::Assign(a) if extends(&a.left, &a.right) => {
                if let Some(name) = ident_of(&a.left) {
                    // `s = s + e` or `s = e + s`: the term is the other side.
                    let integer = match &*a.right {
                        Expr::Binary(b) if ident_of(&b.left).as_ref() == Some(&name) => {
                            integer_term(&b.right)
                        }
                        Expr::Binary(b) => integer_term(&b.left),
                        _ => false,
                    };
                    if !integer {
                        self.maybe_float.insert(name.clone());
                    }
                    self.add_var(name, &*a);
                }
            }
            _ => {}
        }
    }
}
