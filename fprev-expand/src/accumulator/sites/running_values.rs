//! Running values: accumulations whose order is what the code means.
//!
//! `s += x; out[i] = s;` is a prefix sum, `while s < limit { s += x }` a running test,
//! `for i in .. { g[p] -= d; ..g.. }` an update of a place the loop also reads: the order
//! of the additions is the code's meaning, not a rounding choice a compiler or a library
//! might make, so the report ranks such sites below reorderable reductions.
//!
//! The verdict is `#[scramble]`'s own ([`plan_of`]): a variable or place that
//! some loop leaves alone as *order-carrying* (it reads the running value, or a term
//! reads it) is a running value here, so the two attributes never disagree about which
//! accumulation may be reassociated. A variable or place declared inside the loop is a
//! fresh reduction per iteration (the `acc` of a matrix product, read after its inner
//! loop). Besides, a counted variable that a loop sets by an expression that reads it
//! without extending it (an `#[acc]` recurrence `t = t * decay + x`, which `#[scramble]`
//! does not take for an accumulation at all) is a running value.

use std::collections::{HashMap, HashSet};

use syn::visit::{self, Visit};
use syn::Expr;

use super::{extends, ident_of};
use crate::scramble::plan::plan_of;

/// The keys ([`key_of`](crate::scramble::places::key_of): a variable's name, a place's tokens without spaces,
/// `g[p]`) of the accumulations of `stmts` whose order is their meaning: those some loop
/// leaves alone as order-carrying, and the recurrences among the counted variables
/// `vars`.
pub fn running<'a>(
    stmts: impl IntoIterator<Item = &'a syn::Stmt> + Clone,
    vars: &HashMap<String, usize>,
) -> HashSet<String> {
    let mut carried = Carried::default();
    for s in stmts.clone() {
        carried.visit_stmt(s);
    }
    let mut loops = RunningLoops {
        vars,
        found: carried.found,
    };
    for s in stmts {
        loops.visit_stmt(s);
    }
    loops.found
}

/// Walks the loops as `#[scramble]` does, outermost first: a key an enclosing loop owns
/// as a reduction is that loop's, not analysed again inside.
#[derive(Default)]
struct Carried {
    claimed: Vec<String>,
    found: HashSet<String>,
}

impl<'ast> Visit<'ast> for Carried {
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_expr(&mut self, e: &'ast Expr) {
        let claimed: HashSet<String> = self.claimed.iter().cloned().collect();
        let Some(plan) = plan_of(e, &claimed, &Default::default()) else {
            visit::visit_expr(self, e);
            return;
        };
        let owned = plan.owned_keys();
        self.found.extend(plan.order_carrying);
        let depth = self.claimed.len();
        self.claimed.extend(owned);
        visit::visit_expr(self, e);
        self.claimed.truncate(depth);
    }
}

struct RunningLoops<'a> {
    vars: &'a HashMap<String, usize>,
    found: HashSet<String>,
}

impl RunningLoops<'_> {
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

impl<'ast> Visit<'ast> for RunningLoops<'_> {
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
                // `s = s + e`, and a vector rebuilt from itself (`m = x.iter().zip(m.iter())
                // ..`), read themselves once for their update.
                let extra =
                    extends(&a.left, &a.right) || crate::scramble::keyed::rebuild_of(e).is_some();
                (n, 1 + usize::from(extra))
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
        // A vector rebuilt from itself reads itself for its update only; read besides,
        // it is a running value.
        assert!(found(quote!({
            for r in x {
                s = r.iter().zip(s.iter()).map(|(&e, &a)| e + a).collect();
            }
        }))
        .is_empty());
        // (`#[scramble]` names its elements, `s[j]`, order-carrying too.)
        assert!(found(quote!({
            for r in x {
                s = r.iter().zip(s.iter()).map(|(&e, &a)| e + a).collect();
                out.push(s.clone());
            }
        }))
        .contains(&"s".to_string()));
    }

    #[test]
    fn places_read_in_their_loop_are_running_values() {
        use quote::quote;
        // A gradient update: every `g[j]` is an order-free sum over `i`, the element
        // loop's `iter_mut` reads no element, so nothing here is a running value (a
        // keyed reduction of `#[scramble]`).
        assert!(found(quote!({
            for i in 0..n {
                for (j, g_j) in g.iter_mut().enumerate() {
                    *g_j -= d * x[j];
                }
                g[p] -= d;
            }
        }))
        .is_empty());
        // SMO-style: a `while` whose condition reads the gradient it updates: the order
        // of the updates decides when the loop stops, so it is their meaning.
        assert_eq!(
            found(quote!({
                while g[p] < limit {
                    for (j, g_j) in g.iter_mut().enumerate() {
                        *g_j -= d * x[j];
                    }
                    g[p] -= d;
                }
            })),
            ["*g_j", "g[p]"]
        );
        // SMO as smartcore's SVR writes it: the element loop updates a field of each
        // support vector, and the `while` reads them (`self.sv[i].grad[0]`, `self` as a
        // whole) to choose the next step.
        assert_eq!(
            found(quote!({
                while self.gmax > tol {
                    let g = self.sv[i].grad[0];
                    for v in self.sv.iter_mut() {
                        v.grad[0] -= k[v.index] * g;
                    }
                    self.find_min_max_gradient();
                }
            })),
            ["v.grad[0]"]
        );
        // Read besides its updates (`g.iter()`): running values.
        assert_eq!(
            found(quote!({
                for i in 0..n {
                    for (j, g_j) in g.iter_mut().enumerate() {
                        *g_j -= d * x[j];
                    }
                    g[p] -= d;
                    best = g.iter().sum::<f64>();
                }
            })),
            ["*g_j", "g[p]"]
        );
        assert_eq!(
            found(quote!({
                for k in 0..n {
                    self.x += v[k];
                    if self.x > 1.0 {
                        hits += 1;
                    }
                }
            })),
            ["self.x"]
        );
        // Lanes are not read: not running values.
        assert!(found(quote!({
            for k in 0..n {
                acc[0] += v[2 * k];
                acc[1] += v[2 * k + 1];
            }
        }))
        .is_empty());
        // A vector declared in the outer loop is fresh in each of its rounds.
        assert!(found(quote!({
            for r in 0..n {
                let mut z = w.clone();
                for i in 0..m {
                    z[i] -= y[i];
                }
                out[r] = z[0];
            }
        }))
        .is_empty());
    }
}
