//! The analysis of one loop as both attributes run it: the loop's early exits
//! ([`reorderable`]) and then its accumulations ([`classify::plan`]).

use std::collections::{BTreeMap, HashSet};

use syn::Expr;

use super::classify::{self, LoopPlan};
use super::reorderable;

/// [`classify::plan`] for the loop `e`; `not_floats`: the variables the function declares
/// with a non-float type ([`declared`](super::declared)) (`for`, `while` or `loop`; `None` for anything else), with
/// its early exits found as `#[scramble]` finds them. One analysis for both attributes:
/// `#[scramble]` reassociates the reductions it owns, `#[accumulator]` tags the
/// order-carrying ones.
pub(crate) fn plan_of(
    e: &Expr,
    claimed: &HashSet<String>,
    not_floats: &BTreeMap<String, String>,
) -> Option<LoopPlan> {
    Some(match e {
        Expr::ForLoop(f) => {
            let exits = reorderable::exits_early(f.label.as_ref(), &f.body);
            classify::plan(
                Some(&f.pat),
                Some(&f.expr),
                None,
                &f.body,
                exits,
                claimed,
                not_floats,
            )
        }
        Expr::While(w) => {
            let exits = reorderable::exits_early(w.label.as_ref(), &w.body);
            classify::plan(
                None,
                None,
                Some(&w.cond),
                &w.body,
                exits,
                claimed,
                not_floats,
            )
        }
        Expr::Loop(l) => {
            // A `loop` owns reductions only when it ends by plain `break`s: its value
            // is then `()`, and the write-back after it always runs.
            let exits = !reorderable::loop_ends_by_plain_breaks(l.label.as_ref(), &l.body);
            classify::plan(None, None, None, &l.body, exits, claimed, not_floats)
        }
        _ => return None,
    })
}
