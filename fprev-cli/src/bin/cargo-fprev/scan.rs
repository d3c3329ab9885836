//! `cargo fprev scan`: it reads the selected sources and reports each function `cargo fprev test` would annotate, with
//! what `#[fprev::scramble]` decides for each of its loops and chains, as a table for
//! people and as one JSON document (its schema is in docs/cargo-fprev.md).

use std::collections::BTreeMap;
use std::process::ExitCode;

use fprev_expand::{Construct, Decision, Outcome, ReasonKind};
use serde_json::{json, Value};

use crate::annotate;
use crate::annotated_copy::{note_partial, note_unparsed, select};
use crate::cargo_flags::SourceArgs;
use crate::cli_output::{write_stdout, CargoFprevError};

// `cargo fprev scan`'s flags (no doc comment: clap would read it as the subcommand's
// about, which the `Scan` variant's doc gives).
#[derive(clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print one JSON document (schema: docs/cargo-fprev.md) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `cargo fprev scan`: reads the sources of the selected packages, writes nothing and
/// builds nothing.
pub fn scan(a: &ScanArgs) -> Result<ExitCode, CargoFprevError> {
    let sel = select(&a.source)?;
    let mut functions = Vec::new();
    for p in sel.annotated_packages() {
        for (rel, rel_text, src) in sel.sources(p) {
            match annotate::explain_where(&src, |f| sel.keeps(&rel_text, f)) {
                Ok(r) => {
                    if let Some(e) = &r.partial {
                        note_partial(&rel, e);
                    }
                    for (f, decided) in r.functions {
                        functions.push(Function::new(&p.name, &rel_text, f.line, &f.name, decided));
                    }
                }
                Err(e) => note_unparsed(&rel, &e),
            }
        }
    }
    if functions.is_empty() {
        return Err(sel.nothing_found());
    }
    let text = if a.json {
        serde_json::to_string_pretty(&to_json(&functions)).unwrap_or_default() + "\n"
    } else {
        to_text(&functions)
    };
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// One function of the report.
pub struct Function {
    pub package: String,
    /// Its file, relative to the workspace root, with `/` separators.
    pub file: String,
    /// The line of its first token.
    pub line: usize,
    /// Its name (`Type::method` inside an impl).
    pub name: String,
    /// The macro's decisions in source order, or the error it would report instead.
    pub decisions: Result<Vec<LocatedDecision>, String>,
}

/// One decision, located.
pub struct LocatedDecision {
    pub line: usize,
    /// 1-based, in characters, as rustc's messages count.
    pub column: usize,
    pub construct: Construct,
    pub outcome: Outcome,
}

impl Function {
    /// A function and the macro's answer for it, its decisions in source order.
    pub fn new(
        package: &str,
        file: &str,
        line: usize,
        name: &str,
        decided: Result<Vec<Decision>, syn::Error>,
    ) -> Function {
        let decisions = decided
            .map(|list| {
                let mut rows: Vec<LocatedDecision> = list
                    .into_iter()
                    .map(|d| {
                        let at = d.span.start();
                        LocatedDecision {
                            line: at.line,
                            column: at.column + 1,
                            construct: d.construct,
                            outcome: d.outcome,
                        }
                    })
                    .collect();
                // The record follows the rewriter (an outer loop's reductions before the
                // loops inside it); a report reads top to bottom. Stable: decisions at one
                // place keep the macro's order.
                rows.sort_by_key(|r| (r.line, r.column));
                rows
            })
            .map_err(|e| e.to_string());
        Function {
            package: package.to_string(),
            file: file.to_string(),
            line,
            name: name.to_string(),
            decisions,
        }
    }
}

/// Sites scrambled, decisions left alone by kind of reason, functions the macro would
/// reject.
#[derive(Default)]
struct Totals {
    scrambled: usize,
    left_alone: BTreeMap<ReasonKind, usize>,
    errors: usize,
}

fn totals(functions: &[Function]) -> Totals {
    let mut t = Totals::default();
    for f in functions {
        let Ok(rows) = &f.decisions else {
            t.errors += 1;
            continue;
        };
        for r in rows {
            match r.outcome.reason_kind() {
                Some(kind) => *t.left_alone.entry(kind).or_default() += 1,
                None => t.scrambled += 1,
            }
        }
    }
    t
}

/// What a row says after its outcome: the construct, and the place or the reason.
fn what(r: &LocatedDecision) -> String {
    match &r.outcome {
        Outcome::Scrambled { place, site } => match place {
            Some(p) => format!("{}: reduction into `{p}` ({site})", r.construct),
            None => match r.construct {
                Construct::DeclaredLoop => format!("declared loop: iteration order ({site})"),
                Construct::ParChain => format!("rayon chain: item order ({site})"),
                other => format!("{other} ({site})"),
            },
        },
        Outcome::LeftAlone { reason, .. } => match r.construct {
            // The function's own decision already reads as a whole sentence.
            Construct::Function => reason.clone(),
            other => format!("{other}: {reason}"),
        },
        _ => format!("{}", r.construct),
    }
}

fn outcome_word(o: &Outcome) -> &'static str {
    if o.is_scrambled() {
        "scrambled"
    } else {
        "left alone"
    }
}

/// The table: each function's `file:line: fn name`, one indented line per decision
/// (locations aligned within a file: a long path elsewhere does not push them right),
/// then the totals.
pub fn to_text(functions: &[Function]) -> String {
    let location =
        |f: &Function, r: &LocatedDecision| format!("{}:{}:{}", f.file, r.line, r.column);
    let mut widths: BTreeMap<&str, usize> = BTreeMap::new();
    for f in functions {
        for r in f.decisions.iter().flatten() {
            let w = widths.entry(&f.file).or_default();
            *w = (*w).max(location(f, r).len());
        }
    }
    let mut out = String::new();
    for f in functions {
        let width = widths.get(f.file.as_str()).copied().unwrap_or(0);
        out.push_str(&format!("{}:{}: fn {}\n", f.file, f.line, f.name));
        match &f.decisions {
            Ok(rows) => {
                for r in rows {
                    out.push_str(&format!(
                        "  {:<width$}  {:<10}  {}\n",
                        location(f, r),
                        outcome_word(&r.outcome),
                        what(r)
                    ));
                }
            }
            Err(e) => out.push_str(&format!("  error: #[fprev::scramble] would fail: {e}\n")),
        }
    }
    let t = totals(functions);
    let left: usize = t.left_alone.values().sum();
    out.push_str(&format!(
        "{} function(s) accumulate: {} site(s) scrambled, {} left alone",
        functions.len(),
        t.scrambled,
        left
    ));
    if !t.left_alone.is_empty() {
        let kinds: Vec<String> = t
            .left_alone
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        out.push_str(&format!(" ({})", kinds.join(", ")));
    }
    if t.errors > 0 {
        out.push_str(&format!(
            "; {} function(s) the attribute would reject",
            t.errors
        ));
    }
    out.push('\n');
    out
}

/// The JSON document (docs/cargo-fprev.md, "`cargo fprev scan`").
pub fn to_json(functions: &[Function]) -> Value {
    let list: Vec<Value> = functions
        .iter()
        .map(|f| {
            let mut v = json!({
                "package": f.package,
                "file": f.file,
                "line": f.line,
                "name": f.name,
            });
            match &f.decisions {
                Ok(rows) => v["decisions"] = rows.iter().map(row_json).collect(),
                Err(e) => {
                    v["decisions"] = json!([]);
                    v["error"] = json!(e);
                }
            }
            v
        })
        .collect();
    let t = totals(functions);
    let by_reason: serde_json::Map<String, Value> = t
        .left_alone
        .iter()
        .map(|(k, n)| (k.as_str().to_string(), json!(n)))
        .collect();
    json!({
        "functions": list,
        "totals": {
            "functions": functions.len(),
            "scrambled": t.scrambled,
            "left_alone": t.left_alone.values().sum::<usize>(),
            "left_alone_by_reason": by_reason,
            "errors": t.errors,
        },
    })
}

fn row_json(r: &LocatedDecision) -> Value {
    let mut v = json!({
        "line": r.line,
        "column": r.column,
        "construct": r.construct.as_str(),
        "outcome": if r.outcome.is_scrambled() { "scrambled" } else { "left_alone" },
    });
    match &r.outcome {
        Outcome::Scrambled { place, site } => {
            if let Some(p) = place {
                v["place"] = json!(p);
            }
            v["site"] = json!(site);
        }
        Outcome::LeftAlone { kind, reason } => {
            v["reason"] = json!(reason);
            v["reason_kind"] = json!(kind.as_str());
        }
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(src: &str) -> Vec<Function> {
        let r = crate::annotate::explain_where(src, |_| true).expect("parses");
        r.functions
            .into_iter()
            .map(|(a, d)| Function::new("p", "src/lib.rs", a.line, &a.name, d))
            .collect()
    }

    #[test]
    fn the_table_aligns_decisions_under_their_function_and_counts_them() {
        let src = "\
pub fn total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}

pub fn prefix(v: &mut [f64]) -> usize {
    let (mut s, mut n) = (0.0, 0);
    for x in v.iter_mut() {
        s += *x;
        *x = s;
        n += 1;
    }
    n
}
";
        let text = to_text(&scanned(src));
        assert_eq!(
            text,
            "\
src/lib.rs:1: fn total
  src/lib.rs:4:9   scrambled   for loop: reduction into `s` (total#reduction0)
src/lib.rs:9: fn prefix
  src/lib.rs:11:5  left alone  for loop: integer accumulator: every term added to `n` is an integer, which any order adds the same
  src/lib.rs:11:5  left alone  for loop: order-carrying: reads `s` besides adding to `s`
2 function(s) accumulate: 1 site(s) scrambled, 2 left alone (order-carrying 1, integer accumulator 1)
"
        );
    }

    #[test]
    fn json_totals_add_up_and_errors_are_kept() {
        let src = "\
fn a(v: &[f64]) -> f64 { v.iter().sum::<f64>() + v.iter().fold(1.0, |p, x| p * 0.5 + x) }
fn b(v: &[f64]) -> f64 { let mut s = 0.0; #[scramble(sideways)] for x in v { s += x; } s }
fn c(v: &[u8]) -> usize { let mut n = v.len(); n += 1; n }
";
        let doc = to_json(&scanned(src));
        let fns = doc["functions"].as_array().expect("functions");
        assert_eq!(fns.len(), 3);
        assert_eq!(fns[0]["decisions"][0]["outcome"], "scrambled");
        assert_eq!(fns[0]["decisions"][0]["construct"], "iter_reduction");
        assert_eq!(fns[0]["decisions"][0]["site"], "a#sum0");
        assert_eq!(fns[0]["decisions"][1]["reason_kind"], "order_carrying");
        assert!(fns[1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("on a loop, #[scramble] takes `skip`")));
        assert_eq!(fns[2]["decisions"][0]["construct"], "function");
        assert_eq!(
            doc["totals"],
            json!({
                "functions": 3,
                "scrambled": 1,
                "left_alone": 2,
                "left_alone_by_reason": {"order_carrying": 1, "nothing_found": 1},
                "errors": 1,
            })
        );
    }
}
