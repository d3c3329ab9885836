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

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Expr, Pat};

use super::decision::ReasonKind;
use super::places::{
    count_path, count_self_field, count_tokens, index_idents, key_of, mentions_in, root_of,
    update_of,
};
use crate::syntax::{integer_term, is_assign_op};

/// What one loop's analysis found.
#[derive(Default)]
pub(crate) struct LoopPlan {
    /// Places whose updates this loop owns (keys), with their place expressions.
    pub reductions: BTreeMap<String, Expr>,
    /// Keyed reductions this loop owns: many elements of one array at once.
    pub keyed: Vec<KeyedPlan>,
    /// Accumulations left alone, with the kind of reason and the reason
    /// ("order-carrying: reads `s` besides adding to `s`").
    pub left_alone: Vec<(ReasonKind, String)>,
    /// The keys of those left alone because the loop reads their running value: their
    /// order is what the code means (`#[accumulator]` ranks them as running values).
    pub order_carrying: BTreeSet<String>,
}

/// A keyed reduction a loop owns (see [`keyed`](super::keyed)): the places of one root
/// that share a template, each element a sum over the loop.
pub(crate) struct KeyedPlan {
    /// The places' keys as spelled in the updates (`acc[j]`; `*g_j` for an element
    /// loop's element), in order.
    pub keys: Vec<String>,
    /// The first place, as an array element (`acc[j]`, `g[j]` for `*g_j`): the
    /// write-back indexes it again with each element's key.
    pub place: Expr,
    /// The place's template (`acc[_]`).
    pub template: String,
    /// The first update's place as written, where the site is reported.
    pub span: Span,
}

impl LoopPlan {
    /// Every key the loop owns, single and keyed (what enclosing loops claim).
    pub(crate) fn owned_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.reductions.keys().cloned().collect();
        for k in &self.keyed {
            keys.extend(k.keys.iter().cloned());
        }
        keys
    }
}

/// Analyses loop `body` (and a `while` loop's `cond`); `pat` and `iterable` are a `for`
/// loop's, `exits` whether it leaves early; keys in `claimed` belong to an enclosing
/// loop.
pub(crate) fn plan(
    pat: Option<&Pat>,
    iterable: Option<&Expr>,
    cond: Option<&Expr>,
    body: &syn::Block,
    exits: bool,
    claimed: &HashSet<String>,
    not_floats: &BTreeMap<String, String>,
) -> LoopPlan {
    let mut scan = LoopScan::default();
    if let Some(p) = pat {
        scan.visit_pat(p);
    }
    if let Some(c) = cond {
        scan.visit_expr(c);
    }
    scan.visit_block(body);
    let range_var = super::keyed::range_var(pat, iterable);
    let by_key = places(&scan);
    // root -> (keys, mentions by the updates of all its keys, and by the element loops
    // over it)
    let mut roots: BTreeMap<&str, (Vec<&str>, usize)> = BTreeMap::new();
    for (key, p) in &by_key {
        let r = roots.entry(p.root.as_str()).or_default();
        r.0.push(key.as_str());
        r.1 += p.update_mentions;
    }
    for (root, r) in roots.iter_mut() {
        // An element loop's iterable is an update's mention of the array only when the
        // loop does nothing else with its elements (`*v *= 2.0` scales them all).
        let only_updated = scan.element_vars.get(*root).is_none_or(|vars| {
            vars.iter().all(|v| {
                scan.mentions.get(v).copied().unwrap_or(0)
                    <= scan.element_update_mentions.get(v).copied().unwrap_or(0)
            })
        });
        if only_updated {
            r.1 += scan.element_loop_mentions.get(*root).copied().unwrap_or(0);
        }
    }
    let mut plan = LoopPlan::default();
    for (root, (keys, root_updates)) in &roots {
        let keys: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|k| !claimed.contains(*k) && !scan.bound.contains(*root))
            .collect();
        let mut free = Vec::new();
        for key in keys.iter().copied() {
            let p = &by_key[key];
            let carried = order_carried(key, p, &scan, *root_updates);
            match carried {
                Some(r) => {
                    plan.order_carrying.insert(key.to_string());
                    plan.left_alone.push(r);
                }
                None if p.part => plan.left_alone.push(element_part(key, root, p)),
                None => free.push(key),
            }
        }
        if free.is_empty() {
            continue;
        }
        decide(
            &mut plan,
            root,
            &free,
            &by_key,
            &scan,
            exits,
            not_floats,
            range_var.as_deref(),
        );
    }
    plan
}

/// What the loop does with the places of `root` that no enclosing loop claims and that
/// carry no order (`free`): one reduction, a keyed reduction over one array, or left
/// alone with the reason; pushed to `plan`.
#[allow(clippy::too_many_arguments)]
fn decide(
    plan: &mut LoopPlan,
    root: &str,
    free: &[&str],
    by_key: &BTreeMap<String, PlaceUpdates>,
    scan: &LoopScan,
    exits: bool,
    not_floats: &BTreeMap<String, String>,
    range_var: Option<&str>,
) {
    let ps: Vec<&PlaceUpdates> = free.iter().map(|k| &by_key[*k]).collect();
    let reasons: Vec<Option<(ReasonKind, String)>> = free
        .iter()
        .zip(&ps)
        .map(|(k, p)| left_alone_reason(k, p, exits, not_floats))
        .collect();
    let template = super::keyed::template(&ps[0].place);
    let one_array = ps.iter().all(|p| {
        !super::keyed::indices(&p.place).is_empty() && super::keyed::template(&p.place) == template
    });
    if free.len() > 1 && !one_array {
        // `acc[0] += x; acc.sum += y`: places of one root that are not elements of
        // one array; which may be one place is not known here.
        for key in free {
            plan.left_alone.push((
                ReasonKind::SeveralPlaces,
                format!(
                    "several places of `{root}` are added to (`{}`), which may be one place: `{key}` keeps its order",
                    free.join("`, `")
                ),
            ));
        }
        return;
    }
    if reasons.iter().any(Option::is_some) {
        for (key, r) in free.iter().zip(reasons) {
            let r = r.unwrap_or_else(|| several_with_reason(root, key, free));
            plan.left_alone.push(r);
        }
        return;
    }
    let p = ps[0];
    let changes = changing_index(p, scan);
    let rebuilt = ps.iter().any(|p| p.rebuilt);
    if free.len() == 1 && changes.is_none() && !rebuilt {
        plan.reductions.insert(free[0].to_string(), p.place.clone());
    } else if free.len() == 1 && !rebuilt && super::keyed::one_term_per_element(&p.place, range_var)
    {
        let id = changes.unwrap_or_default();
        plan.left_alone.push((
            ReasonKind::IndexChanges,
            format!(
                "the index of `{}` changes in the loop (`{id}`): each element takes one term",
                free[0]
            ),
        ));
    } else {
        plan.keyed.push(KeyedPlan {
            keys: free.iter().map(|k| k.to_string()).collect(),
            place: p.place.clone(),
            template,
            span: p.span,
        });
    }
}

/// The reason of an update of a part of an element loop's element, which carries no
/// order here: a sum per element over this loop, not rewritten.
fn element_part(key: &str, root: &str, p: &PlaceUpdates) -> (ReasonKind, String) {
    let element = p.element.as_deref().unwrap_or("the element");
    let what = if key == format!("*{element}") {
        format!("`{key}` is an element of `{root}` bound by an inner loop without its position")
    } else {
        format!("`{key}` is part of `{element}`, an element of `{root}` bound by an inner loop")
    };
    (
        ReasonKind::ElementPart,
        format!("{what}: a sum per element that #[scramble] does not rewrite; it keeps its order"),
    )
}

/// The reason of a place that passes every check but shares its root with one that
/// does not.
fn several_with_reason(root: &str, key: &str, keys: &[&str]) -> (ReasonKind, String) {
    (
        ReasonKind::SeveralPlaces,
        format!(
            "several places of `{root}` are added to (`{}`), and another is left alone: `{key}` keeps its order",
            keys.join("`, `")
        ),
    )
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
    /// The element variable, for the element of an element loop (`g_j` of `*g_j`).
    element: Option<String>,
    /// The first update's place as written.
    span: Span,
    /// Some update rebuilds the whole vector ([`keyed::rebuild_of`](super::keyed::rebuild_of)).
    rebuilt: bool,
    /// A part of an element loop's element (`v.acc` of `for v in xs.iter_mut()`).
    part: bool,
}

/// The scanned updates gathered per place (key).
fn places(scan: &LoopScan) -> BTreeMap<String, PlaceUpdates> {
    let mut by_key: BTreeMap<String, PlaceUpdates> = BTreeMap::new();
    for u in &scan.updates {
        let entry = by_key.entry(u.key.clone()).or_insert_with(|| PlaceUpdates {
            root: u.root.clone(),
            place: u.place.clone(),
            update_mentions: 0,
            bad_term: None,
            integers: true,
            element: u.element.clone(),
            span: u.span,
            rebuilt: false,
            part: false,
        });
        entry.rebuilt |= u.rebuilt;
        entry.part |= u.part;
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
    scan: &LoopScan,
    root_updates: usize,
) -> Option<(ReasonKind, String)> {
    let root = &p.root;
    // An element loop's element read besides its own updates (`y[j] = *g_j`).
    let element_read = p
        .element
        .as_ref()
        .filter(|e| {
            scan.mentions.get(*e).copied().unwrap_or(0)
                > scan.element_update_mentions.get(*e).copied().unwrap_or(0)
        })
        .map(|e| {
            (
                ReasonKind::OrderCarrying,
                format!("order-carrying: reads `{e}` besides adding to `{key}`"),
            )
        });
    if let Some(r) = &p.bad_term {
        Some((ReasonKind::OrderCarrying, format!("order-carrying: {r}")))
    } else if element_read.is_some() && !p.part {
        // The element itself is read: the most precise reason. (A part's element is
        // often read for another field, `k[v.index]`: the array's reads say more.)
        element_read
    } else if scan.mentions.get(root).copied().unwrap_or(0) > root_updates {
        Some((
            ReasonKind::OrderCarrying,
            format!("order-carrying: reads `{root}` besides adding to `{key}`"),
        ))
    } else if root.starts_with("self.") && scan.mentions.get("self").is_some_and(|&n| n > 0) {
        // `self` as a whole (a method call on it, `&mut self` passed on) may read or
        // write any of its fields.
        Some((
            ReasonKind::OrderCarrying,
            format!("order-carrying: reads `self` besides adding to `{key}`"),
        ))
    } else {
        element_read
    }
}

/// Why a place whose order is not its meaning is still left alone, if it is (a place
/// whose index changes in the loop is a keyed reduction, not left alone).
fn left_alone_reason(
    key: &str,
    p: &PlaceUpdates,
    exits: bool,
    not_floats: &BTreeMap<String, String>,
) -> Option<(ReasonKind, String)> {
    let root = &p.root;
    if p.integers {
        Some((
            ReasonKind::IntegerAccumulator,
            format!(
                "integer accumulator: every term added to `{key}` is an integer, which any order adds the same"
            ),
        ))
    } else if let Some(ty) = not_floats.get(root).filter(|_| key == root) {
        Some((ReasonKind::NotAFloat, not_a_float(key, ty)))
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
    } else if !index_idents(&p.place, &mut Vec::new()) {
        Some((
            ReasonKind::IndexCallsCode,
            format!("the index of `{key}` calls code"),
        ))
    } else {
        None
    }
}

/// The reason of an accumulator declared with type `ty`, which is not a float.
pub(crate) fn not_a_float(key: &str, ty: &str) -> String {
    format!(
        "not a float: `{key}` is a `{ty}`, and fprev reassociates f32, f64, f16 and bf16 only: it runs as written"
    )
}

/// A variable the index of `p`'s place reads that is bound or written in the loop.
fn changing_index(p: &PlaceUpdates, scan: &LoopScan) -> Option<String> {
    let mut idents = Vec::new();
    index_idents(&p.place, &mut idents);
    idents
        .into_iter()
        .find(|i| scan.bound.contains(i) || scan.written.contains(i))
}

struct ClassifiedLoop {
    key: String,
    root: String,
    place: Expr,
    mentions: usize,
    term_reads_root: bool,
    integer_term: bool,
    element: Option<String>,
    span: Span,
    rebuilt: bool,
    /// An update of a part of an element loop's element (see
    /// [`element_part_loop`](super::keyed::element_part_loop)).
    part: bool,
}

/// Mentions, bindings, writes and updates inside one loop.
#[derive(Default)]
struct LoopScan {
    updates: Vec<ClassifiedLoop>,
    mentions: BTreeMap<String, usize>,
    bound: HashSet<String>,
    written: HashSet<String>,
    /// Inside a closure, `async` block: updates there count as plain mentions.
    opaque: usize,
    /// The element loops being visited: element variable, the root of the array and the
    /// element as a place of it (`g_j`, `g`, `g[j]`; no place for a loop that does not
    /// bind the element's position).
    elements: Vec<(String, String, Option<Expr>)>,
    /// Mentions of a root by the iterables of element loops over it.
    element_loop_mentions: BTreeMap<String, usize>,
    /// The element variables of the element loops over each root.
    element_vars: BTreeMap<String, Vec<String>>,
    /// Mentions of an element variable by its own updates.
    element_update_mentions: BTreeMap<String, usize>,
}

impl LoopScan {
    /// `root` is written in the loop; a field of `self` writes `self` too (an index that
    /// reads `self.k` reads `self`).
    fn write(&mut self, root: String) {
        if root.starts_with("self.") {
            self.written.insert("self".to_string());
        }
        self.written.insert(root);
    }

    /// An update `*e op= t` of the element `e` of an element loop being visited, as an
    /// update of the array's place (`g[j]`), its mentions of `e` counted apart.
    fn element_update(&mut self, e: &Expr) -> Option<ClassifiedLoop> {
        let u = update_of(e)?;
        let whole = super::keyed::deref_of(u.place).map(|id| id.to_string());
        let id = whole.clone().or_else(|| root_of(u.place))?;
        let (_, root, place) = self.elements.iter().rev().find(|(el, ..)| *el == id)?;
        let (root, place) = match (whole, place) {
            (Some(_), Some(place)) => (root.clone(), place.clone()),
            _ => return Some(self.part_update(e, &u, &id, root.clone())),
        };
        let before = self.mentions.get(&id).copied().unwrap_or(0);
        visit::visit_expr(self, e);
        let after = self.mentions.get(&id).copied().unwrap_or(0);
        let in_term = mentions_in(u.term, &id) + mentions_in(u.term, &root);
        *self.element_update_mentions.entry(id.clone()).or_default() += after - before;
        Some(ClassifiedLoop {
            key: u.key.clone(),
            root,
            place,
            mentions: 0,
            term_reads_root: in_term > 0,
            integer_term: integer_term(u.term),
            element: Some(id),
            span: u.place.span(),
            rebuilt: false,
            part: false,
        })
    }

    /// The update `e` of a part of element `id` of the array `root` (`v.acc += t`): its
    /// place's mention of `id` counted as the update's own, any other mention of `id`
    /// (in the term too) as a read of the element.
    fn part_update(
        &mut self,
        e: &Expr,
        u: &super::places::Update<'_>,
        id: &str,
        root: String,
    ) -> ClassifiedLoop {
        visit::visit_expr(self, e);
        *self
            .element_update_mentions
            .entry(id.to_string())
            .or_default() += 1;
        ClassifiedLoop {
            key: u.key.clone(),
            root: root.clone(),
            place: u.place.clone(),
            mentions: 0,
            term_reads_root: mentions_in(u.term, &root) > 0,
            integer_term: integer_term(u.term),
            element: Some(id.to_string()),
            span: u.place.span(),
            rebuilt: false,
            part: true,
        }
    }
}

impl<'ast> Visit<'ast> for LoopScan {
    fn visit_item(&mut self, _: &'ast syn::Item) {}

    fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
        if !count_self_field(f, &mut self.mentions) {
            visit::visit_expr_field(self, f);
        }
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        count_path(p, &mut self.mentions);
        visit::visit_expr_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        count_tokens(m.tokens.clone(), &mut self.mentions);
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
                self.write(root);
            }
        }
        visit::visit_expr_reference(self, r);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let Some(root) = root_of(&m.receiver) {
            self.write(root);
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
            self.write(root);
        }
        if self.opaque == 0 {
            if let Expr::ForLoop(f) = e {
                let element = match super::keyed::element_loop(f) {
                    Some(el) => root_of(&el.place)
                        .map(|root| (el.element, root, el.array.clone(), Some(el.place))),
                    None => super::keyed::element_part_loop(f).and_then(|(element, array)| {
                        root_of(array).map(|root| (element, root, array.clone(), None))
                    }),
                };
                if let Some((element, root, array, place)) = element {
                    *self.element_loop_mentions.entry(root.clone()).or_default() +=
                        mentions_in(&array, &root);
                    self.element_vars
                        .entry(root.clone())
                        .or_default()
                        .push(element.to_string());
                    self.elements.push((element.to_string(), root, place));
                    visit::visit_expr(self, e);
                    self.elements.pop();
                    return;
                }
            }
            if let Some(found) = self.element_update(e) {
                self.updates.push(found);
                return;
            }
            if let Some(rb) = super::keyed::rebuild_of(e) {
                if let Some(root) = root_of(rb.target) {
                    let before = self.mentions.get(&root).copied().unwrap_or(0);
                    visit::visit_expr(self, e);
                    let after = self.mentions.get(&root).copied().unwrap_or(0);
                    self.updates.push(ClassifiedLoop {
                        key: key_of(&rb.place),
                        root,
                        place: rb.place.clone(),
                        mentions: after - before,
                        term_reads_root: false,
                        integer_term: false,
                        element: None,
                        span: rb.target.span(),
                        rebuilt: true,
                        part: false,
                    });
                    return;
                }
            }
            if let Some(u) = update_of(e) {
                let before = self.mentions.get(&u.root).copied().unwrap_or(0);
                visit::visit_expr(self, e);
                let after = self.mentions.get(&u.root).copied().unwrap_or(0);
                let mut in_term = mentions_in(u.term, &u.root);
                if u.root.starts_with("self.") {
                    in_term += mentions_in(u.term, "self");
                }
                self.updates.push(ClassifiedLoop {
                    key: u.key.clone(),
                    root: u.root.clone(),
                    place: u.place.clone(),
                    mentions: after - before - in_term,
                    term_reads_root: in_term > 0,
                    integer_term: integer_term(u.term),
                    element: None,
                    span: u.place.span(),
                    rebuilt: false,
                    part: false,
                });
                return;
            }
        }
        visit::visit_expr(self, e);
    }
}

#[cfg(test)]
mod tests;
