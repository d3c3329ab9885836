//! Which accumulations in a loop are float *reductions* whose terms may be reassociated,
//! and why the others are left alone.
//!
//! A loop `L` owns a reduction into a place `P` (a variable `s`, or `c[i * n + j]`,
//! `self.acc`, `*out`) when, inside `L` (its body, and a `while` loop's condition):
//! - every mention of `P`'s root variable is the left side of an update `P += e`,
//!   `P -= e`, `P = P + e`, `P = e + P` or `P = P - e` of that same place;
//! - no term `e` mentions the root (the running value is never read);
//! - the root is not bound inside `L` (it is declared outside), and a place's index
//!   mentions nothing bound or written inside `L`, and calls nothing;
//! - `L` does not leave early to outside itself (`return`, `?`, a labelled `break` or
//!   `continue` to an enclosing loop): the value is written back after the loop.
//!
//! Mentions inside closures, `async` blocks and macro invocations count as reads. When
//! unsure, a loop is order-carrying: it runs as written.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit::{self, Visit};
use syn::{BinOp, Expr, Pat};

use super::decision::ReasonKind;
use crate::syntax::{integer_term, is_assign_op, pure_value};

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

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        _ => e,
    }
}

/// The root variable of a place: `s`, `c` of `c[i]`, `self` of `self.acc`, `out` of
/// `*out`; `None` for anything else (calls, method calls, paths with `::`).
pub(crate) fn root_of(place: &Expr) -> Option<String> {
    match strip(place) {
        Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let seg = &p.path.segments[0];
            seg.arguments.is_none().then(|| seg.ident.to_string())
        }
        Expr::Field(f) => root_of(&f.base),
        Expr::Index(i) => root_of(&i.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => root_of(&u.expr),
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
fn index_idents(place: &Expr, out: &mut Vec<String>) -> bool {
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

/// What one loop's analysis found.
#[derive(Default)]
pub(crate) struct LoopPlan {
    /// Places whose updates this loop owns (keys), with their place expressions.
    pub reductions: BTreeMap<String, Expr>,
    /// Accumulations left alone, with the kind of reason and the reason
    /// ("order-carrying: reads `s` besides adding to `s`").
    pub left_alone: Vec<(ReasonKind, String)>,
    /// The keys of those left alone because the loop reads their running value: their
    /// order is what the code means (`#[accumulator]` ranks them as running values).
    pub order_carrying: BTreeSet<String>,
}

/// Analyses loop `body` (and a `while` loop's `cond`); `pat` is a `for` loop's pattern,
/// `exits` whether it leaves early; keys in `claimed` belong to an enclosing loop.
pub(crate) fn plan(
    pat: Option<&Pat>,
    cond: Option<&Expr>,
    body: &syn::Block,
    exits: bool,
    claimed: &HashSet<String>,
) -> LoopPlan {
    let mut scan = Scan::default();
    if let Some(p) = pat {
        scan.visit_pat(p);
    }
    if let Some(c) = cond {
        scan.visit_expr(c);
    }
    scan.visit_block(body);
    let by_key = places(&scan);
    // root -> (keys, mentions by the updates of all its keys)
    let mut roots: BTreeMap<&str, (Vec<&str>, usize)> = BTreeMap::new();
    for (key, p) in &by_key {
        let r = roots.entry(p.root.as_str()).or_default();
        r.0.push(key.as_str());
        r.1 += p.update_mentions;
    }
    let mut plan = LoopPlan::default();
    for (key, p) in &by_key {
        if claimed.contains(key) || scan.bound.contains(&p.root) {
            continue;
        }
        let (keys, root_updates) = &roots[p.root.as_str()];
        let carried = order_carried(key, p, &scan, *root_updates);
        if carried.is_some() {
            plan.order_carrying.insert(key.clone());
        }
        let reason = carried.or_else(|| left_alone_reason(key, p, keys, &scan, exits));
        match reason {
            Some(r) => plan.left_alone.push(r),
            None => {
                plan.reductions.insert(key.clone(), p.place.clone());
            }
        }
    }
    plan
}

/// What the updates of one place in a loop add up to.
struct PlaceUpdates {
    root: String,
    place: Expr,
    /// Mentions of the root by the updates themselves.
    update_mentions: usize,
    /// Why a term of an update makes the order the meaning ("a term reads `s`").
    bad_term: Option<String>,
    /// Every term is an integer by its syntax.
    integers: bool,
}

/// The scanned updates gathered per place (key).
fn places(scan: &Scan) -> BTreeMap<String, PlaceUpdates> {
    let mut by_key: BTreeMap<String, PlaceUpdates> = BTreeMap::new();
    for u in &scan.updates {
        let entry = by_key.entry(u.key.clone()).or_insert_with(|| PlaceUpdates {
            root: u.root.clone(),
            place: u.place.clone(),
            update_mentions: 0,
            bad_term: None,
            integers: true,
        });
        entry.update_mentions += u.mentions;
        if u.term_reads_root && entry.bad_term.is_none() {
            entry.bad_term = Some(format!("a term reads `{}`", u.root));
        }
        entry.integers &= u.integer_term;
    }
    by_key
}

/// Why the loop's order is place `key`'s meaning, if it is: a term reads the running
/// value, or the loop reads its root besides the `root_updates` mentions of its updates.
fn order_carried(
    key: &str,
    p: &PlaceUpdates,
    scan: &Scan,
    root_updates: usize,
) -> Option<(ReasonKind, String)> {
    let root = &p.root;
    if let Some(r) = &p.bad_term {
        Some((ReasonKind::OrderCarrying, format!("order-carrying: {r}")))
    } else if scan.mentions.get(root).copied().unwrap_or(0) > root_updates {
        Some((
            ReasonKind::OrderCarrying,
            format!("order-carrying: reads `{root}` besides adding to `{key}`"),
        ))
    } else {
        None
    }
}

/// Why a place whose order is not its meaning is still left alone, if it is; `keys`
/// are the places of its root that the loop adds to.
fn left_alone_reason(
    key: &str,
    p: &PlaceUpdates,
    keys: &[&str],
    scan: &Scan,
    exits: bool,
) -> Option<(ReasonKind, String)> {
    let root = &p.root;
    if keys.len() > 1 {
        // `acc[0] += x; acc[1] += y`: lanes, or one place under two spellings
        // (`c[i]`, `c[j]` with `i == j`); which is not known here.
        Some((
            ReasonKind::SeveralPlaces,
            format!(
                "several places of `{root}` are added to (`{}`), which may be one place: `{key}` keeps its order",
                keys.join("`, `")
            ),
        ))
    } else if p.integers {
        Some((
            ReasonKind::IntegerAccumulator,
            format!(
                "integer accumulator: every term added to `{key}` is an integer, which any order adds the same"
            ),
        ))
    } else if root
        .chars()
        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
    {
        Some((
            ReasonKind::LooksConstant,
            format!("`{root}` looks like a static or constant"),
        ))
    } else if exits {
        Some((
            ReasonKind::LeavesEarly,
            format!(
                "leaves early (return, `?`, a break to an outer loop, or a `loop` that does not end by plain `break`s): `{key}` keeps its order"
            ),
        ))
    } else {
        let mut idents = Vec::new();
        if !index_idents(&p.place, &mut idents) {
            Some((
                ReasonKind::IndexCallsCode,
                format!("the index of `{key}` calls code"),
            ))
        } else {
            idents
                .iter()
                .find(|i| scan.bound.contains(*i) || scan.written.contains(*i))
                .map(|id| {
                    (
                        ReasonKind::IndexChanges,
                        format!("the index of `{key}` changes in the loop (`{id}`)"),
                    )
                })
        }
    }
}

struct Found {
    key: String,
    root: String,
    place: Expr,
    mentions: usize,
    term_reads_root: bool,
    integer_term: bool,
}

/// Mentions, bindings, writes and updates inside one loop.
#[derive(Default)]
struct Scan {
    updates: Vec<Found>,
    mentions: BTreeMap<String, usize>,
    bound: HashSet<String>,
    written: HashSet<String>,
    /// Inside a closure, `async` block: updates there count as plain mentions.
    opaque: usize,
}

/// How often `e` mentions the variable `root` (paths and macro tokens).
pub(crate) fn mentions_in(e: &Expr, root: &str) -> usize {
    let mut s = Scan::default();
    s.visit_expr(e);
    s.mentions.get(root).copied().unwrap_or(0)
}

fn tokens_mention(tokens: TokenStream, out: &mut BTreeMap<String, usize>) {
    crate::syntax::token_mentions(tokens, &mut |name| *out.entry(name).or_default() += 1);
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_item(&mut self, _: &'ast syn::Item) {}

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(id) = p.path.get_ident() {
            *self.mentions.entry(id.to_string()).or_default() += 1;
        }
        visit::visit_expr_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        tokens_mention(m.tokens.clone(), &mut self.mentions);
    }

    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.bound.insert(p.ident.to_string());
        visit::visit_pat_ident(self, p);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        self.opaque += 1;
        visit::visit_expr_closure(self, c);
        self.opaque -= 1;
    }

    fn visit_expr_async(&mut self, a: &'ast syn::ExprAsync) {
        self.opaque += 1;
        visit::visit_expr_async(self, a);
        self.opaque -= 1;
    }

    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            if let Some(root) = root_of(&r.expr) {
                self.written.insert(root);
            }
        }
        visit::visit_expr_reference(self, r);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let Some(root) = root_of(&m.receiver) {
            self.written.insert(root);
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        let lhs = match e {
            Expr::Assign(a) => Some(&*a.left),
            Expr::Binary(b) if is_assign_op(&b.op) => Some(&*b.left),
            _ => None,
        };
        if let Some(root) = lhs.and_then(root_of) {
            self.written.insert(root);
        }
        if self.opaque == 0 {
            if let Some(u) = update_of(e) {
                let before = self.mentions.get(&u.root).copied().unwrap_or(0);
                visit::visit_expr(self, e);
                let after = self.mentions.get(&u.root).copied().unwrap_or(0);
                let in_term = mentions_in(u.term, &u.root);
                self.updates.push(Found {
                    key: u.key.clone(),
                    root: u.root.clone(),
                    place: u.place.clone(),
                    mentions: after - before - in_term,
                    term_reads_root: in_term > 0,
                    integer_term: integer_term(u.term),
                });
                return;
            }
        }
        visit::visit_expr(self, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn owned(body: syn::Block) -> (Vec<String>, Vec<String>) {
        let exits = super::super::validate::exits_early(None, &body);
        let pat: Pat = parse_quote!(i);
        let p = plan(Some(&pat), None, &body, exits, &HashSet::new());
        let reasons = p.left_alone.into_iter().map(|(_, r)| r).collect();
        (p.reductions.into_keys().collect(), reasons)
    }

    #[test]
    fn pure_reductions_are_owned() {
        assert_eq!(
            owned(parse_quote!({
                s += x[i];
            }))
            .0,
            ["s"]
        );
        assert_eq!(
            owned(parse_quote!({
                s = s + x[i] * y[i];
            }))
            .0,
            ["s"]
        );
        assert_eq!(
            owned(parse_quote!({
                s = x[i] + s;
            }))
            .0,
            ["s"]
        );
        assert_eq!(
            owned(parse_quote!({
                if x[i] > 0.0 {
                    s -= x[i];
                }
            }))
            .0,
            ["s"]
        );
        assert_eq!(
            owned(parse_quote!({
                c[r * n + k] += a[i];
            }))
            .0,
            ["c[r*n+k]"]
        );
        assert_eq!(
            owned(parse_quote!({
                self.acc += a[i];
            }))
            .0,
            ["self.acc"]
        );
        assert_eq!(
            owned(parse_quote!({
                *out += a[i];
                t += 1.0;
            }))
            .0,
            ["*out", "t"]
        );
        assert_eq!(
            owned(parse_quote!({
                for j in 0..m {
                    s += a[i * m + j];
                }
            }))
            .0,
            ["s"]
        );
    }

    #[test]
    fn integer_accumulators_are_left_alone() {
        for (body, key) in [
            (
                parse_quote!({
                    count += 1;
                }),
                "count",
            ),
            (
                parse_quote!({
                    if x[i] < 0.0 {
                        neg = neg + 1usize;
                    }
                }),
                "neg",
            ),
            (
                parse_quote!({
                    hits -= -2;
                }),
                "hits",
            ),
            (
                parse_quote!({
                    total += (x[i] as i64);
                }),
                "total",
            ),
            (
                parse_quote!({
                    c[k] += 1;
                    c[k] += i as u32;
                }),
                "c[k]",
            ),
        ] {
            let (owned, left) = owned(body);
            assert!(owned.is_empty(), "{key}: {owned:?}");
            assert_eq!(left.len(), 1, "{key}: {left:?}");
            assert!(
                left[0].starts_with("integer accumulator"),
                "{key}: {left:?}"
            );
            assert!(left[0].contains(&format!("`{key}`")), "{key}: {left:?}");
        }
        // A float literal, a float suffix, a float cast or one non-integer term: a
        // reduction as before.
        for body in [
            parse_quote!({
                s += 1.0;
            }),
            parse_quote!({
                s += 1f64;
            }),
            parse_quote!({
                s += i as f64;
            }),
            parse_quote!({
                s += 1;
                s += x[i];
            }),
            parse_quote!({
                s += T::one();
            }),
        ] {
            assert_eq!(owned(body).0, ["s"]);
        }
    }

    #[test]
    fn order_carrying_loops_are_left_alone() {
        for body in [
            parse_quote!({
                s += x[i];
                out[i] = s;
            }),
            parse_quote!({
                s += x[i];
                println!("{}", s);
            }),
            parse_quote!({
                s += x[i];
                println!("{s:.3}");
            }),
            parse_quote!({
                s = s * 0.5 + x[i];
            }),
            parse_quote!({
                s += s * x[i];
            }),
            parse_quote!({
                c[i] += x[i];
            }),
            parse_quote!({
                a[k] += a[k - 1];
            }),
            parse_quote!({
                s += x[i];
                if s > 1.0 {
                    return;
                }
            }),
            parse_quote!({
                s += x[i];
                f(&mut s);
            }),
            parse_quote!({
                let g = || s += 1.0;
                g();
            }),
            parse_quote!({
                c[j] += x[i];
                j += 1;
            }),
            parse_quote!({
                c[idx()] += x[i];
            }),
            parse_quote!({
                TOTAL += x[i];
            }),
            parse_quote!({
                s += x[i];
                s.push(1.0);
            }),
        ] {
            let (owned, why) = owned(body);
            assert!(owned.is_empty(), "{owned:?}");
            let _ = why;
        }
        let (_, why) = owned(parse_quote!({
            s += x[i];
            out[i] = s;
        }));
        assert_eq!(why, ["order-carrying: reads `s` besides adding to `s`"]);
    }

    #[test]
    fn lanes_are_left_alone_without_being_called_order_carrying() {
        let body: syn::Block = parse_quote!({
            acc[0] += x[2 * i];
            acc[1] += x[2 * i + 1];
        });
        let p = plan(None, None, &body, false, &HashSet::new());
        assert!(p.reductions.is_empty() && p.order_carrying.is_empty());
        assert_eq!(
            p.left_alone[0].1,
            "several places of `acc` are added to (`acc[0]`, `acc[1]`), which may be one place: `acc[0]` keeps its order"
        );
        let read: syn::Block = parse_quote!({
            acc[0] += x[i];
            acc[1] += acc[0];
        });
        let p = plan(None, None, &read, false, &HashSet::new());
        assert_eq!(
            p.order_carrying.into_iter().collect::<Vec<_>>(),
            ["acc[0]", "acc[1]"]
        );
    }

    #[test]
    fn variables_declared_inside_belong_to_the_inner_loop() {
        let (o, why) = owned(parse_quote!({
            let mut p = 0.0;
            for x in r {
                p += x;
            }
            s += p;
        }));
        assert_eq!((o, why.len()), (vec!["s".to_string()], 0));
    }
}
