//! Running values: accumulator variables read inside the loop that builds them.
//!
//! `s += x; out[i] = s;` is a prefix sum, `while s < limit { s += x }` a running test:
//! the order of the additions is what the code means, not a rounding choice the
//! compiler or a library might make, so the report ranks such sites below reorderable
//! reductions. A variable is a running value when, inside a loop (its condition
//! included) that updates it and that it is declared outside of, its name appears more
//! often than the updates themselves account for (`s` on the left of `s += e`, and the
//! `s` of `s = s + e`). A variable declared inside the loop (the `acc` of a matrix
//! product, read after its inner loop) is a fresh reduction per iteration.

use std::collections::{HashMap, HashSet};

use syn::visit::{self, Visit};
use syn::Expr;

use super::{extends, ident_of};

/// The accumulator variables (of `vars`) read inside a loop (of the statements
/// `stmts`) that updates them.
pub fn running<'a>(
    stmts: impl IntoIterator<Item = &'a syn::Stmt>,
    vars: &HashMap<String, usize>,
) -> HashSet<String> {
    let mut loops = Loops {
        vars,
        found: HashSet::new(),
    };
    for s in stmts {
        loops.visit_stmt(s);
    }
    loops.found
}

struct Loops<'a> {
    vars: &'a HashMap<String, usize>,
    found: HashSet<String>,
}

impl Loops<'_> {
    fn check(&mut self, parts: &[&dyn Fn(&mut Uses)]) {
        let mut uses = Uses::default();
        for p in parts {
            p(&mut uses);
        }
        for (name, own) in &uses.own {
            // A variable declared inside the loop starts over every iteration: the loop
            // carries nothing through it (`let mut acc = 0.0;` of a matrix product).
            let fresh = uses.declared.contains(name);
            let all = uses.all.get(name).copied().unwrap_or(0);
            if self.vars.contains_key(name) && !fresh && all > *own {
                self.found.insert(name.clone());
            }
        }
    }
}

impl<'ast> Visit<'ast> for Loops<'_> {
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.check(&[&|u: &mut Uses| u.visit_block(&f.body)]);
        visit::visit_expr_for_loop(self, f);
    }
    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        self.check(&[&|u: &mut Uses| u.visit_expr(&w.cond), &|u: &mut Uses| {
            u.visit_block(&w.body)
        }]);
        visit::visit_expr_while(self, w);
    }
    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.check(&[&|u: &mut Uses| u.visit_block(&l.body)]);
        visit::visit_expr_loop(self, l);
    }
}

/// Every appearance of a one-segment name (`all`) and those that updates account for
/// (`own`, one entry per updated name).
#[derive(Default)]
struct Uses {
    all: HashMap<String, usize>,
    own: HashMap<String, usize>,
    declared: HashSet<String>,
}

impl<'ast> Visit<'ast> for Uses {
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_local(&mut self, l: &'ast syn::Local) {
        let mut names = Vec::new();
        super::bound_names(&l.pat, &mut names);
        self.declared.extend(names.into_iter().map(|(n, _)| n));
        visit::visit_local(self, l);
    }
    fn visit_expr(&mut self, e: &'ast Expr) {
        if let Some(name) = ident_of(e) {
            *self.all.entry(name).or_default() += 1;
        }
        let own = match e {
            Expr::Binary(b) if super::is_assign_op(&b.op) => ident_of(&b.left).map(|n| (n, 1)),
            Expr::Assign(a) => ident_of(&a.left).map(|n| {
                let extra = usize::from(extends(&a.left, &a.right));
                (n, 1 + extra)
            }),
            _ => None,
        };
        if let Some((name, k)) = own {
            *self.own.entry(name).or_default() += k;
        }
        // `ident_of` sees through parentheses: count `(s)` once.
        if !matches!(e, Expr::Paren(p) if ident_of(&p.expr).is_some()) {
            visit::visit_expr(self, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(body: proc_macro2::TokenStream) -> Vec<String> {
        let block: syn::Block = syn::parse2(body).unwrap();
        let vars = ["s", "t"].iter().enumerate();
        let vars = vars.map(|(k, n)| (n.to_string(), k)).collect();
        let mut v: Vec<String> = running(&block.stmts, &vars).into_iter().collect();
        v.sort();
        v
    }

    #[test]
    fn prefix_sums_and_running_tests_are_running_values() {
        use quote::quote;
        assert!(found(quote!({
            for x in v {
                s += x;
            }
            s
        }))
        .is_empty());
        assert!(found(quote!({
            for x in v {
                s = s + x;
                t -= x * 2.0;
            }
        }))
        .is_empty());
        assert_eq!(
            found(quote!({
                for i in 0..n {
                    s += v[i];
                    out[i] = s;
                }
            })),
            ["s"]
        );
        assert_eq!(
            found(quote!({
                while s < 9.0 {
                    s += 1.0;
                }
            })),
            ["s"]
        );
        assert_eq!(
            found(quote!({
                for x in v {
                    s += x;
                    t += s;
                }
            })),
            ["s"]
        );
        assert_eq!(
            found(quote!({
                for x in v {
                    s = s + x * s;
                }
            })),
            ["s"]
        );
    }
}
