//! First pass: find the accumulator variables (and `#[acc]` misuse).

use std::collections::HashMap;

use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{BinOp, Expr, Pat, Stmt};

use super::{expr_attrs_mut, extends, ident_of, is_acc_attr, text_of, Kind, Site};

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
                running: false,
            });
        }
    }
}

impl VisitMut for Collector {
    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
    skip_constant_contexts!();
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
