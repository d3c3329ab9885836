//! What `#[scramble]` decided about each loop, iterator reduction and rayon chain of a
//! function, as data. The rewriter writes this record while it generates code, at the
//! same calls that add a site or a loop left alone to the expansion's tables, so the
//! record cannot say something the expansion does not do.

use std::fmt;

use proc_macro2::Span;

/// One decision of `#[scramble]` about one construct of a function.
///
/// ```
/// use fprev_expand::{explain_scramble, Construct, Outcome};
/// use quote::quote;
///
/// let decisions = explain_scramble(
///     quote!(),
///     quote! {
///         fn total(v: &[f64]) -> f64 {
///             let mut s = 0.0;
///             for x in v {
///                 s += x;
///             }
///             s
///         }
///     },
/// )
/// .expect("a function");
/// assert_eq!(decisions.len(), 1);
/// assert_eq!(decisions[0].construct, Construct::ForLoop);
/// assert_eq!(decisions[0].outcome.place(), Some("s"));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct Decision {
    /// Where the expansion's own record points, as the runtime's site table and
    /// `fprev::scramble::sites()` report it: a loop reduction's first update of its
    /// place (the `s` of `s += x`), the keyword of a loop left alone or scrambled whole,
    /// the method name of `.sum()`, `.fold(..)` and of a rayon chain's source, the
    /// function's name. Built with proc-macro2's `span-locations` feature (as
    /// `cargo fprev` is), `span.start()` gives its line and column.
    pub span: Span,
    /// What was looked at.
    pub construct: Construct,
    /// What the attribute does with it.
    pub outcome: Outcome,
}

/// The kind of construct a [`Decision`] is about.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Construct {
    /// A `for` loop and an accumulation inside it: a reduction it owns, or one it leaves
    /// alone.
    ForLoop,
    /// A `while` loop and an accumulation inside it.
    WhileLoop,
    /// A `loop` and an accumulation inside it.
    Loop,
    /// A `for` loop whose iterations are visited in a scrambled order as a whole
    /// (`#[scramble(loop)]` on it, or `loops` / `outer` on the function).
    DeclaredLoop,
    /// `.sum()` or `.fold(init, |a, t| ..)` on a temporary iterator chain.
    IterReduction,
    /// A rayon chain from `par_iter()`, `par_iter_mut()`, `par_chunks(k)` or
    /// `(a..b).into_par_iter()`: its items visited in a scrambled order.
    ParChain,
    /// A rayon `.sum()` whose chain keeps positions (`zip`, `enumerate`): the chain runs
    /// as written, the sum's terms are reassociated.
    ParSum,
    /// The function as a whole, when nothing in it is scrambled or left alone.
    Function,
}

impl Construct {
    /// A stable name in `snake_case` (`for_loop`, `iter_reduction`, ...), as
    /// `cargo fprev scan --json` writes it.
    ///
    /// ```
    /// assert_eq!(fprev_expand::Construct::IterReduction.as_str(), "iter_reduction");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Construct::ForLoop => "for_loop",
            Construct::WhileLoop => "while_loop",
            Construct::Loop => "loop",
            Construct::DeclaredLoop => "declared_loop",
            Construct::IterReduction => "iter_reduction",
            Construct::ParChain => "par_chain",
            Construct::ParSum => "par_sum",
            Construct::Function => "function",
        }
    }
}

/// In words, as a report reads (`for loop`, `iterator reduction`, ...).
impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Construct::ForLoop => "for loop",
            Construct::WhileLoop => "while loop",
            Construct::Loop => "loop",
            Construct::DeclaredLoop => "declared loop",
            Construct::IterReduction => "iterator reduction",
            Construct::ParChain => "rayon chain",
            Construct::ParSum => "rayon sum",
            Construct::Function => "function",
        })
    }
}

/// What `#[scramble]` does with a construct.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Rewritten: scrambled when scrambling is switched on at run time.
    Scrambled {
        /// A loop reduction's place, as the macro keys it (its tokens without spaces:
        /// `s`, `c[i*n+j]`, `self.acc`); `None` for the other constructs.
        place: Option<String>,
        /// The site's label within the function (`total#reduction0`); the runtime
        /// prefixes it with the module path (`FPREV_SITES` and `cargo fprev blame`
        /// name sites so).
        site: String,
    },
    /// Runs as written.
    LeftAlone {
        /// The kind of reason, for counting and filtering.
        kind: ReasonKind,
        /// The reason: the very string the expansion registers for
        /// `fprev::scramble::sites()` ("order-carrying: reads `s` besides adding to
        /// `s`").
        reason: String,
    },
}

/// Why a construct is left alone, in kinds: each reason string the attribute writes
/// is made with its kind, at the same place.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReasonKind {
    /// The running value is read besides being added to (a prefix sum, a recurrence, a
    /// print), a term reads it, or a fold's closure reads its accumulator: reordering
    /// would change what the code means.
    OrderCarrying,
    /// Several places of one variable are added to (`acc[0]`, `acc[1]`): lanes, or one
    /// place under two spellings, which the attribute cannot tell apart.
    SeveralPlaces,
    /// Every term is an integer, which any order adds to the same value.
    IntegerAccumulator,
    /// The loop leaves early (`return`, `?`, a break to an outer loop, a `loop` that does
    /// not end by plain `break`s): the value is not written back after it.
    LeavesEarly,
    /// The place's index changes inside the loop (`c[i]` with `i` bound or written
    /// there).
    IndexChanges,
    /// The place's index calls code, which must not run more or fewer times.
    IndexCallsCode,
    /// The place's root is named like a static or a constant (`TOTAL`).
    LooksConstant,
    /// The function holds no float reduction, declared loop or rayon chain.
    NothingFound,
    /// Not a sum: a fold that keeps a maximum or a minimum, which no order changes.
    NotASum,
    /// Not a float: the accumulator is declared with another type (`Vec2::zero()`,
    /// `.sum::<Vec2>()`), which the runtime never reassociates.
    NotAFloat,
    /// A part of an element loop's element (`v.acc` of `for v in xs.iter_mut()`): a sum
    /// per element over the enclosing loop, through a form the attribute does not
    /// rewrite.
    ElementPart,
}

impl ReasonKind {
    /// A stable name in `snake_case` (`order_carrying`, ...), as
    /// `cargo fprev scan --json` writes it.
    ///
    /// ```
    /// assert_eq!(fprev_expand::ReasonKind::LeavesEarly.as_str(), "leaves_early");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonKind::OrderCarrying => "order_carrying",
            ReasonKind::SeveralPlaces => "several_places",
            ReasonKind::IntegerAccumulator => "integer_accumulator",
            ReasonKind::LeavesEarly => "leaves_early",
            ReasonKind::IndexChanges => "index_changes",
            ReasonKind::IndexCallsCode => "index_calls_code",
            ReasonKind::LooksConstant => "looks_constant",
            ReasonKind::NothingFound => "nothing_found",
            ReasonKind::NotASum => "not_a_sum",
            ReasonKind::NotAFloat => "not_a_float",
            ReasonKind::ElementPart => "element_part",
        }
    }
}

/// In words, as a report reads (`order-carrying`, `integer accumulator`, ...).
impl fmt::Display for ReasonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReasonKind::OrderCarrying => "order-carrying",
            ReasonKind::SeveralPlaces => "several places",
            ReasonKind::IntegerAccumulator => "integer accumulator",
            ReasonKind::LeavesEarly => "leaves early",
            ReasonKind::IndexChanges => "index changes in the loop",
            ReasonKind::IndexCallsCode => "index calls code",
            ReasonKind::LooksConstant => "static or constant",
            ReasonKind::NothingFound => "nothing to scramble",
            ReasonKind::NotASum => "not a sum",
            ReasonKind::NotAFloat => "not a float",
            ReasonKind::ElementPart => "part of an element",
        })
    }
}

impl Outcome {
    /// Whether the construct is rewritten.
    ///
    /// ```
    /// use fprev_expand::{Outcome, ReasonKind};
    ///
    /// let left = Outcome::LeftAlone { kind: ReasonKind::OrderCarrying, reason: "why".into() };
    /// assert!(!left.is_scrambled());
    /// ```
    pub fn is_scrambled(&self) -> bool {
        matches!(self, Outcome::Scrambled { .. })
    }

    /// A scrambled loop reduction's place.
    ///
    /// ```
    /// let o = fprev_expand::Outcome::Scrambled { place: Some("s".into()), site: "f#reduction0".into() };
    /// assert_eq!(o.place(), Some("s"));
    /// ```
    pub fn place(&self) -> Option<&str> {
        match self {
            Outcome::Scrambled { place, .. } => place.as_deref(),
            Outcome::LeftAlone { .. } => None,
        }
    }

    /// Why the construct is left alone.
    ///
    /// ```
    /// use fprev_expand::{Outcome, ReasonKind};
    ///
    /// let left = Outcome::LeftAlone { kind: ReasonKind::OrderCarrying, reason: "why".into() };
    /// assert_eq!(left.reason(), Some("why"));
    /// ```
    pub fn reason(&self) -> Option<&str> {
        match self {
            Outcome::Scrambled { .. } => None,
            Outcome::LeftAlone { reason, .. } => Some(reason),
        }
    }

    /// The kind of reason a construct is left alone for.
    ///
    /// ```
    /// use fprev_expand::{Outcome, ReasonKind};
    ///
    /// let left = Outcome::LeftAlone { kind: ReasonKind::LeavesEarly, reason: "why".into() };
    /// assert_eq!(left.reason_kind(), Some(ReasonKind::LeavesEarly));
    /// ```
    pub fn reason_kind(&self) -> Option<ReasonKind> {
        match self {
            Outcome::Scrambled { .. } => None,
            Outcome::LeftAlone { kind, .. } => Some(*kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;

    use super::{Construct, Outcome, ReasonKind};
    use crate::explain_scramble;

    /// (line, 0-based column, construct, outcome) of each decision on `src`, a function;
    /// lines count from 1 at the first line of `src`.
    fn explain(src: &str) -> Vec<(usize, usize, Construct, Outcome)> {
        let item: TokenStream = src.parse().expect("lexes");
        explain_scramble(TokenStream::new(), item)
            .expect("explains")
            .into_iter()
            .map(|d| {
                let at = d.span.start();
                (at.line, at.column, d.construct, d.outcome)
            })
            .collect()
    }

    fn scrambled(place: Option<&str>, site: &str) -> Outcome {
        Outcome::Scrambled {
            place: place.map(str::to_string),
            site: site.to_string(),
        }
    }

    fn left(kind: ReasonKind, reason: &str) -> Outcome {
        Outcome::LeftAlone {
            kind,
            reason: reason.to_string(),
        }
    }

    #[test]
    fn a_reduction_loop_is_scrambled_at_its_update() {
        let src = "\
fn total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v {
        s += x;
    }
    s
}";
        assert_eq!(
            explain(src),
            [(
                4,
                8,
                Construct::ForLoop,
                scrambled(Some("s"), "total#reduction0")
            )]
        );
    }

    #[test]
    fn an_order_carrying_loop_is_left_alone_at_its_keyword_with_its_reason() {
        let src = "\
fn prefix(v: &mut [f64]) {
    let mut s = 0.0;
    let mut i = 0;
    while i < v.len() {
        s += v[i];
        v[i] = s;
        i += 1;
    }
}";
        // `i` is read by the condition and the indices: order-carrying too, before
        // being an integer.
        assert_eq!(
            explain(src),
            [
                (
                    4,
                    4,
                    Construct::WhileLoop,
                    left(
                        ReasonKind::OrderCarrying,
                        "order-carrying: reads `i` besides adding to `i`"
                    )
                ),
                (
                    4,
                    4,
                    Construct::WhileLoop,
                    left(
                        ReasonKind::OrderCarrying,
                        "order-carrying: reads `s` besides adding to `s`"
                    )
                ),
            ]
        );
    }

    #[test]
    fn an_integer_counter_is_left_alone_beside_a_float_reduction() {
        let src = "\
fn stats(v: &[f64]) -> (f64, usize) {
    let (mut s, mut n) = (0.0, 0);
    for x in v {
        s += x;
        n += 1;
    }
    (s, n)
}";
        assert_eq!(
            explain(src),
            [
                (
                    3,
                    4,
                    Construct::ForLoop,
                    left(
                        ReasonKind::IntegerAccumulator,
                        "integer accumulator: every term added to `n` is an integer, which any order adds the same"
                    )
                ),
                (
                    4,
                    8,
                    Construct::ForLoop,
                    scrambled(Some("s"), "stats#reduction0")
                ),
            ]
        );
    }

    #[test]
    fn iterator_sums_are_scrambled_and_non_additive_folds_left_alone() {
        let src = "\
fn f(v: &[f64]) -> f64 {
    let a: f64 = v.iter().map(|x| x * x).sum();
    let b = v.iter().fold(0.0, |acc, x| acc * 0.5 + x);
    let c = v.iter().fold(0.0, |acc, x| acc + x);
    a + b + c
}";
        assert_eq!(
            explain(src),
            [
                (2, 41, Construct::IterReduction, scrambled(None, "f#sum0")),
                (
                    3,
                    21,
                    Construct::IterReduction,
                    left(
                        ReasonKind::OrderCarrying,
                        "order-carrying: the fold's closure reads its accumulator besides the final `acc + term` (or leaves early)"
                    )
                ),
                (4, 21, Construct::IterReduction, scrambled(None, "f#sum1")),
            ]
        );
    }

    #[test]
    fn nested_loops_feed_the_loop_that_owns_the_place() {
        // `s` is owned by the outermost loop, through the inner ones; `c[i*n+j]` by the
        // `k` loop alone (the outer ones read `c` besides adding to it).
        let src = "\
fn g(a: &[f64], b: &[f64], c: &mut [f64], n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                c[i * n + j] += a[i * n + k] * b[k * n + j];
            }
            s += c[i * n + j];
        }
    }
    s
}";
        let reads_c = || {
            left(
                ReasonKind::OrderCarrying,
                "order-carrying: reads `c` besides adding to `c[i*n+j]`",
            )
        };
        assert_eq!(
            explain(src),
            [
                (3, 4, Construct::ForLoop, reads_c()),
                (
                    8,
                    12,
                    Construct::ForLoop,
                    scrambled(Some("s"), "g#reduction0")
                ),
                (4, 8, Construct::ForLoop, reads_c()),
                (
                    6,
                    16,
                    Construct::ForLoop,
                    scrambled(Some("c[i*n+j]"), "g#reduction1")
                ),
            ]
        );
    }

    #[test]
    fn a_function_with_nothing_to_scramble_says_so_at_its_name() {
        let src = "fn count(v: &[u8]) -> usize {\n    let mut n = v.len();\n    n += 1;\n    n\n}";
        assert_eq!(
            explain(src),
            [(
                1,
                3,
                Construct::Function,
                left(
                    ReasonKind::NothingFound,
                    "no float reduction, declared loop or rayon chain found: nothing to scramble"
                )
            )]
        );
    }

    #[test]
    fn each_reason_comes_with_its_kind() {
        for (body, kind, start) in [
            (
                "for x in v { s += x; if x.is_nan() { return 0.0; } }",
                ReasonKind::LeavesEarly,
                "leaves early",
            ),
            (
                "for x in v { s += x; println!(\"{s}\"); }",
                ReasonKind::OrderCarrying,
                "order-carrying: reads `s`",
            ),
            (
                "for x in v { s += s * x; }",
                ReasonKind::OrderCarrying,
                "order-carrying: a term reads `s`",
            ),
            (
                "for i in 0..v.len() { c[i] += v[i]; }",
                ReasonKind::IndexChanges,
                "the index of `c[i]` changes in the loop (`i`): each element takes one term",
            ),
            (
                "for x in v { c[pick()] += x; }",
                ReasonKind::IndexCallsCode,
                "the index of `c[pick()]` calls code",
            ),
            (
                "for x in v { c[0] += x; c.total += 2.0 * x; }",
                ReasonKind::SeveralPlaces,
                "several places of `c` are added to (`c.total`, `c[0]`)",
            ),
            (
                "for x in v { TOTAL += x; }",
                ReasonKind::LooksConstant,
                "`TOTAL` looks like a static or constant",
            ),
        ] {
            let src =
                format!("fn f(v: &[f64], c: &mut [f64]) -> f64 {{ let mut s = 0.0; {body} s }}");
            let got = explain(&src);
            let found = got
                .iter()
                .find_map(|(.., o)| o.reason_kind().zip(o.reason()))
                .unwrap_or_else(|| panic!("{body}: nothing left alone: {got:?}"));
            assert_eq!(found.0, kind, "{body}: {got:?}");
            assert!(found.1.starts_with(start), "{body}: {got:?}");
        }
    }

    #[test]
    fn declared_loops_and_rayon_chains() {
        let src = "\
fn h(v: &[f64], rows: &[Vec<f64>]) -> f64 {
    #[scramble(loop)]
    for r in rows.iter() {
        let _ = r;
    }
    let p: f64 = v.par_iter().map(|x| x * 2.0).sum();
    let q: f64 = v.par_iter().zip(v).map(|(a, b)| a * b).sum();
    p + q
}";
        let seen: Vec<(usize, Construct, Outcome)> = explain(src)
            .into_iter()
            .map(|(l, _, c, o)| (l, c, o))
            .collect();
        assert_eq!(
            seen,
            [
                (3, Construct::DeclaredLoop, scrambled(None, "h#loop0")),
                (6, Construct::ParChain, scrambled(None, "h#par1")),
                (7, Construct::ParSum, scrambled(None, "h#sum2")),
            ]
        );
    }

    #[test]
    fn errors_are_the_attributes() {
        for (src, words) in [
            ("struct S;", "applies to functions"),
            ("const fn f() -> f64 { 0.0 }", "const fn"),
            ("fn f( { }", "expected"),
        ] {
            let item: TokenStream = match src.parse() {
                Ok(t) => t,
                // Does not lex: nothing to explain either.
                Err(_) => continue,
            };
            let e = explain_scramble(TokenStream::new(), item).expect_err(src);
            assert!(e.to_string().contains(words), "{src}: {e}");
        }
        // A bad marker is the attribute's error too.
        let item: TokenStream = "fn f(v: &[f64]) { #[scramble(sideways)] for x in v {} }"
            .parse()
            .expect("lexes");
        assert!(explain_scramble(TokenStream::new(), item).is_err());
    }

    #[test]
    #[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
    fn the_record_matches_the_expansions_tables() {
        // As many scrambled decisions as the site table has rows, as many left alone as
        // the loops-left-alone table.
        for src in [
            "fn a(v: &[f64]) -> f64 { let mut s = 0.0; let mut n = 0; for x in v { s += x; n += 1; } s + v.iter().sum::<f64>() }",
            "fn b(v: &mut [f64]) { let mut s = 0.0; for x in v.iter_mut() { s += *x; *x = s; } }",
            "fn c(v: &[u8]) -> usize { v.len() }",
            "fn d(v: &[f64]) -> f64 { v.iter().fold(1.0, |a, x| a * x) + v.par_iter().sum::<f64>() }",
        ] {
            let item: TokenStream = src.parse().expect("lexes");
            let record = explain_scramble(TokenStream::new(), item.clone()).expect("explains");
            let out = crate::scramble(TokenStream::new(), item).to_string();
            let on = record.iter().filter(|d| d.outcome.is_scrambled()).count();
            assert_eq!(on, out.matches("CallSite :: with_kind").count(), "{src}");
            assert_eq!(
                record.len() - on,
                out.matches("LeftAlone :: new").count(),
                "{src}"
            );
        }
    }
}
