//! Puts `#[fprev::scramble(chains)]` (scrambled under `cargo fprev test`, counting its
//! chains under `cargo fprev chains`) on every function of a source file whose body
//! accumulates, as a user would by hand, without moving a line: the attribute goes on the line of the
//! function's first token (its visibility or `fn`), so every file:line a test failure,
//! a panic or a site report prints is the original file's.
//!
//! Which functions: every function with a body (free functions, inherent and trait
//! methods, trait-provided methods) that accumulates syntactically (`+=`, `-=`,
//! `x = x + ..`, `x = x - ..`, `.sum(`, `.sum::<`, `.fold(`, a rayon source with `.reduce(`
//! or `.reduce_with(`, whose items `#[scramble]` visits in scrambled orders); not `const fn`, not test code
//! (`#[test]`, `#[cfg(test)]` items), not inside a macro, not one already annotated.
//! Whether each of its loops and chains is then scrambled, and why not, is the macro's
//! own decision at compile time; [`explain_where`] asks the macro's own code what it
//! will be, for `cargo fprev scan`.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use syn::parse::discouraged::Speculative;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The attribute put on the functions: scrambled for `cargo fprev test`, and with the
/// chain-counting body beside it, so that `cargo fprev chains` runs the same build.
const ATTRIBUTE: &str = "#[fprev::scramble(chains)] ";

/// One annotated function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotated {
    /// 1-based line of the function's first token (where the attribute went).
    pub line: usize,
    /// 1-based line of its closing brace.
    pub end_line: usize,
    /// The function's name (`Type::method` inside an impl).
    pub name: String,
    /// Why the function keeps its scrambled body only, its chains uncounted
    /// (`fprev_expand::without_chains`); `None` when it counts them.
    pub without_chains: Option<&'static str>,
}

/// What annotating one file did.
#[derive(Debug, Default)]
pub struct FileResult {
    /// The new text, when a function was annotated.
    pub text: Option<String>,
    pub annotated: Vec<Annotated>,
    /// The file as a whole did not parse (syntax `syn` no longer reads, such as an
    /// edition-2015 `&Fn(T) -> T`): it was read item by item, and the items that do not
    /// parse were left alone. The first error.
    pub partial: Option<syn::Error>,
}

/// Annotates `src` (a whole `.rs` file). A file that does not parse is an error: the
/// caller reports it and leaves the file alone.
#[cfg(test)]
pub fn annotate(src: &str) -> Result<FileResult, syn::Error> {
    annotate_where(src, |_| true)
}

/// Annotates `src`, keeping only the functions `keep` accepts (by their lines). A file
/// that does not lex is an error; one that lexes but does not parse as a whole is read
/// item by item ([`FileResult::partial`]).
pub fn annotate_where(
    src: &str,
    keep: impl Fn(&Annotated) -> bool,
) -> Result<FileResult, syn::Error> {
    let (found, partial) = find(src, true)?;
    let mut inserts: Vec<(usize, Annotated)> = Vec::new();
    for f in found {
        let Some(offset) = byte_offset(src, f.line, f.column) else {
            continue;
        };
        let a = Annotated {
            line: f.line,
            end_line: f.end_line,
            name: f.name,
            without_chains: fprev_expand::without_chains(&f.item.unwrap_or_default()),
        };
        if keep(&a) {
            inserts.push((offset, a));
        }
    }
    inserts.sort_by_key(|(o, _)| *o);
    inserts.dedup_by_key(|(o, _)| *o);
    if inserts.is_empty() {
        return Ok(FileResult {
            partial,
            ..FileResult::default()
        });
    }
    let mut text = String::with_capacity(src.len() + inserts.len() * 20);
    let mut last = 0;
    for (offset, _) in &inserts {
        text.push_str(&src[last..*offset]);
        text.push_str(ATTRIBUTE);
        last = *offset;
    }
    text.push_str(&src[last..]);
    Ok(FileResult {
        text: Some(text),
        annotated: inserts.into_iter().map(|(_, a)| a).collect(),
        partial,
    })
}

/// What `#[scramble]` decides in each function of one file that [`annotate_where`]
/// would annotate.
#[derive(Debug, Default)]
pub struct Explained {
    /// Each function, with the macro's decisions or the error it would report.
    pub functions: Vec<(Annotated, Result<Vec<fprev_expand::Decision>, syn::Error>)>,
    /// As [`FileResult::partial`].
    pub partial: Option<syn::Error>,
}

/// The functions of `src` that [`annotate_where`] would annotate with the same `keep`,
/// each with what `#[fprev::scramble]` decides in it, by the macro's own code
/// (`fprev_expand::explain_scramble`). Spans carry the file's lines and columns.
pub fn explain_where(
    src: &str,
    keep: impl Fn(&Annotated) -> bool,
) -> Result<Explained, syn::Error> {
    let (mut found, partial) = find(src, true)?;
    found.sort_by_key(|f| (f.line, f.column));
    found.dedup_by_key(|f| (f.line, f.column));
    let mut functions = Vec::new();
    for f in found {
        let item = f.item.unwrap_or_default();
        let a = Annotated {
            line: f.line,
            end_line: f.end_line,
            name: f.name,
            without_chains: fprev_expand::without_chains(&item),
        };
        if !keep(&a) {
            continue;
        }
        functions.push((a, fprev_expand::explain_scramble(TokenStream::new(), item)));
    }
    Ok(Explained { functions, partial })
}

/// The functions of `src` that accumulate, and the first parse error of a file read
/// item by item. With `explain`, each keeps its item's tokens.
fn find(src: &str, explain: bool) -> Result<(Vec<FoundFunction>, Option<syn::Error>), syn::Error> {
    let mut finder = Finder {
        at: Vec::new(),
        scope: Vec::new(),
        explain,
    };
    let partial = match syn::parse_file(src) {
        Ok(file) => {
            finder.visit_file(&file);
            None
        }
        Err(e) => {
            let tokens: TokenStream = src
                .parse()
                .map_err(|l: proc_macro2::LexError| syn::Error::new(l.span(), l))?;
            finder.items_one_by_one(tokens);
            Some(e)
        }
    };
    Ok((finder.at, partial))
}

/// The byte offset of a (1-based line, 0-based column in characters) position.
fn byte_offset(src: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line == 1 {
        0
    } else {
        src.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let rest = &src[start..];
    let within = rest
        .char_indices()
        .nth(column)
        .map_or(rest.len(), |(i, _)| i);
    Some(start + within)
}

/// A function to annotate.
struct FoundFunction {
    /// Where its first token is (1-based line, 0-based column in characters).
    line: usize,
    column: usize,
    end_line: usize,
    name: String,
    /// Its signature and body, as the attribute would receive them, when explaining.
    item: Option<TokenStream>,
}

struct Finder {
    at: Vec<FoundFunction>,
    /// Names of the enclosing impls, for reports.
    scope: Vec<String>,
    /// Keep each function's tokens.
    explain: bool,
}

impl Finder {
    fn consider(
        &mut self,
        attrs: &[syn::Attribute],
        first: proc_macro2::Span,
        sig: &syn::Signature,
        body: &syn::Block,
    ) {
        if sig.constness.is_some() || is_test(attrs) || is_annotated(attrs) {
            return;
        }
        if !accumulates(body.stmts.iter().map(quote::ToTokens::to_token_stream)) {
            return;
        }
        let start = first.start();
        let name = match self.scope.last() {
            Some(ty) => format!("{ty}::{}", sig.ident),
            None => sig.ident.to_string(),
        };
        let end = body.brace_token.span.close().end().line;
        // The attribute would also receive the function's other attributes and its
        // visibility, which change none of its decisions.
        let item = self.explain.then(|| quote::quote!(#sig #body));
        self.at.push(FoundFunction {
            line: start.line,
            column: start.column,
            end_line: end,
            name,
            item,
        });
    }
}

impl Finder {
    /// Reads `tokens` as a sequence of items (or impl/trait members), skipping one token
    /// at a time past whatever does not parse and looking inside the braces it skips, so
    /// that one unreadable signature costs only its own function.
    fn items_one_by_one(&mut self, tokens: TokenStream) {
        let parser = |input: ParseStream| -> syn::Result<()> {
            let mut test_attr = false;
            while !input.is_empty() {
                let fork = input.fork();
                if let Ok(item) = fork.parse::<syn::Item>() {
                    input.advance_to(&fork);
                    self.visit_item(&item);
                    test_attr = false;
                    continue;
                }
                let fork = input.fork();
                if let Ok(syn::ImplItem::Fn(f)) = fork.parse::<syn::ImplItem>() {
                    input.advance_to(&fork);
                    self.consider(&f.attrs, impl_fn_first(&f), &f.sig, &f.block);
                    test_attr = false;
                    continue;
                }
                match input.parse::<TokenTree>()? {
                    TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket => {
                        let text = g.stream().to_string().replace(' ', "");
                        test_attr |= text == "test"
                            || text == "cfg(test)"
                            || text.starts_with("cfg(all(test")
                            || text.ends_with("::test");
                    }
                    TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => {
                        if !test_attr {
                            self.items_one_by_one(g.stream());
                        }
                        test_attr = false;
                    }
                    TokenTree::Punct(p) if p.as_char() == ';' => test_attr = false,
                    _ => {}
                }
            }
            Ok(())
        };
        // Every error is recovered from above; only running out of tokens ends it.
        let _ = parser.parse2(tokens);
    }
}

/// The first token of an impl method: its visibility, or `default`, or its signature.
fn impl_fn_first(f: &syn::ImplItemFn) -> proc_macro2::Span {
    match (&f.vis, &f.defaultness) {
        (syn::Visibility::Inherited, Some(d)) => d.span(),
        (v, _) => first_span(v, &f.sig),
    }
}

/// The span of an item's first token after its attributes: its visibility when it has
/// one, else its signature.
fn first_span(vis: &syn::Visibility, sig: &syn::Signature) -> proc_macro2::Span {
    match vis {
        syn::Visibility::Inherited => sig.span(),
        v => v.span(),
    }
}

impl<'ast> Visit<'ast> for Finder {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.consider(&f.attrs, first_span(&f.vis, &f.sig), &f.sig, &f.block);
        // Functions nested in a body are part of it; the macro leaves them alone.
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test(&i.attrs) {
            return;
        }
        let ty = &i.self_ty;
        self.scope.push(
            quote::ToTokens::to_token_stream(ty)
                .to_string()
                .replace(' ', ""),
        );
        for item in &i.items {
            if let syn::ImplItem::Fn(f) = item {
                self.consider(&f.attrs, impl_fn_first(f), &f.sig, &f.block);
            }
        }
        self.scope.pop();
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        if is_test(&t.attrs) {
            return;
        }
        self.scope.push(t.ident.to_string());
        for item in &t.items {
            if let syn::TraitItem::Fn(f) = item {
                if let Some(body) = &f.default {
                    self.consider(&f.attrs, f.sig.span(), &f.sig, body);
                }
            }
        }
        self.scope.pop();
    }
}

/// `#[test]`, `#[cfg(test)]`, `#[cfg(all(test, ..))]`, `#[tokio::test]` and the like.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let path = a.path();
        if path.segments.last().is_some_and(|s| s.ident == "test") {
            return true;
        }
        if path.is_ident("cfg") {
            let text = quote::ToTokens::to_token_stream(&a.meta)
                .to_string()
                .replace(' ', "");
            return text == "cfg(test)" || text.starts_with("cfg(all(test");
        }
        false
    })
}

fn is_annotated(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "scramble" || s.ident == "accumulator")
    })
}

/// Whether the statements accumulate syntactically (see the module docs). Macro
/// invocations' tokens count too: `assert!(..)` holds none of these forms.
fn accumulates(stmts: impl Iterator<Item = TokenStream>) -> bool {
    let mut flat = Vec::new();
    for s in stmts {
        flatten(s, &mut flat);
    }
    flat.windows(3).enumerate().any(|(k, w)| match w {
        [Tok::Punct('+', Spacing::Joint), Tok::Punct('=', _), _]
        | [Tok::Punct('-', Spacing::Joint), Tok::Punct('=', _), _] => {
            // not `-=>`-like sequences, which do not exist; `+=` and `-=` are joint pairs
            !matches!(
                flat.get(k.wrapping_sub(1)),
                Some(Tok::Punct('=', Spacing::Joint))
            )
        }
        [Tok::Punct('.', _), Tok::Ident(m), Tok::Open(Delimiter::Parenthesis)] => {
            m == "sum"
                || m == "fold"
                // `v.par_iter().map(..).reduce(|| 0.0, |a, b| a + b)`: a rayon reduction
                // with no other accumulation in the function.
                || ((m == "reduce" || m == "reduce_with") && rayon_source(&flat[..k]))
        }
        [Tok::Punct('.', _), Tok::Ident(m), Tok::Punct(':', Spacing::Joint)] => m == "sum",
        [Tok::Ident(a), Tok::Punct('=', Spacing::Alone), _] if rebuilds(a, &flat[k + 2..]) => {
            !matches!(
                flat.get(k.wrapping_sub(1)),
                Some(Tok::Punct('.' | ':' | '<' | '>' | '!' | '=', _))
            )
        }
        [Tok::Ident(a), Tok::Punct('=', Spacing::Alone), Tok::Ident(b)] => {
            a == b
                && matches!(flat.get(k + 3), Some(Tok::Punct('+' | '-', _)))
                && !matches!(
                    flat.get(k.wrapping_sub(1)),
                    Some(Tok::Punct('.' | ':' | '<' | '>' | '!' | '=', _))
                )
        }
        _ => false,
    })
}

/// Whether the statement from `rest` (the tokens after `a =`, up to its `;`) rebuilds
/// `a` from itself: `a = x.iter().zip(a.iter()).map(..).collect()`.
fn rebuilds(a: &str, rest: &[Tok]) -> bool {
    let mut depth = 0usize;
    let end = rest
        .iter()
        .position(|t| match t {
            Tok::Open(_) => {
                depth += 1;
                false
            }
            Tok::Close => {
                depth = depth.saturating_sub(1);
                false
            }
            Tok::Punct(';', _) => depth == 0,
            _ => false,
        })
        .unwrap_or(rest.len());
    let stmt = &rest[..end];
    let method = |name: &str| {
        stmt.windows(2)
            .any(|w| matches!(w, [Tok::Punct('.', _), Tok::Ident(m)] if m == name))
    };
    method("zip") && method("collect") && stmt.iter().any(|t| matches!(t, Tok::Ident(i) if i == a))
}

/// Whether the tokens hold a rayon source (`.par_iter(`, `.par_iter_mut(`,
/// `.par_chunks(`, `.into_par_iter(`), as `#[scramble]` rewrites them.
fn rayon_source(flat: &[Tok]) -> bool {
    flat.windows(3).any(|w| {
        matches!(w, [Tok::Punct('.', _), Tok::Ident(m), Tok::Open(Delimiter::Parenthesis)]
            if matches!(m.as_str(), "par_iter" | "par_iter_mut" | "par_chunks" | "into_par_iter"))
    })
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char, Spacing),
    Open(Delimiter),
    Close,
    Literal,
}

fn flatten(ts: TokenStream, out: &mut Vec<Tok>) {
    for tt in ts {
        match tt {
            TokenTree::Ident(i) => out.push(Tok::Ident(i.to_string())),
            TokenTree::Punct(p) => out.push(Tok::Punct(p.as_char(), p.spacing())),
            TokenTree::Literal(_) => out.push(Tok::Literal),
            TokenTree::Group(g) => {
                out.push(Tok::Open(g.delimiter()));
                flatten(g.stream(), out);
                out.push(Tok::Close);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str) -> (String, Vec<(usize, String)>) {
        let r = annotate(src).expect("parses");
        let list = r
            .annotated
            .iter()
            .map(|a| (a.line, a.name.clone()))
            .collect();
        (r.text.unwrap_or_else(|| src.to_string()), list)
    }

    #[test]
    fn functions_that_cannot_count_chains_are_named_with_the_reason() {
        let src = "\
fn total(v: &[f64]) -> f64 { v.iter().sum() }
fn scaler(v: &[f64]) -> impl Fn(f64) -> f64 { let s: f64 = v.iter().sum(); move |x| x * s }
async fn later(v: &[f64]) -> f64 { v.iter().sum() }
";
        let r = annotate(src).expect("parses");
        let seen: Vec<(&str, bool)> = r
            .annotated
            .iter()
            .map(|a| (a.name.as_str(), a.without_chains.is_some()))
            .collect();
        assert_eq!(seen, [("total", false), ("scaler", true), ("later", true)]);
        assert!(r.annotated[1]
            .without_chains
            .is_some_and(|why| why.contains("impl Trait")));
    }

    #[test]
    fn accumulating_functions_get_the_attribute_on_their_own_line() {
        let src = "\
/// Docs.
#[inline]
pub fn total(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v { s += x; }
    s
}

fn plain(v: &[f64]) -> f64 { v[0] * 2.0 }

pub(crate) unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn fold_it(v: &[f64]) -> f64 { v.iter().fold(0.0, |a, b| a + b) }
fn rebind(v: &[f64]) -> f64 { let mut t = 0.0; for x in v { t = t + x; } t }
fn turbofish(v: &[f64]) -> f64 { v.iter().sum::<f64>() }
const fn never(x: u32) -> u32 { let mut y = x; y += 1; y }
fn par_sum(v: &[f64]) -> f64 { v.par_iter().map(|x| x * x).sum() }
fn par_reduce(v: &[f64]) -> f64 { v.par_iter().map(|x| x * x).reduce(|| 0.0, |a, b| a + b) }
fn not_rayon(v: Option<u8>) -> u8 { v.reduce(1) }
fn rebuilt(x: &[Vec<f64>]) -> Vec<f64> { let mut m = vec![0.0; 2]; for r in x { m = r.iter().zip(m.iter()).map(|(&e, &s)| e + s).collect(); } m }
fn copied(x: &[f64]) -> Vec<f64> { let m: Vec<f64> = x.iter().zip(x).map(|(a, b)| a * b).collect(); m }
";
        let (text, list) = run(src);
        assert_eq!(
            list,
            vec![
                (3, "total".to_string()),
                (11, "dot".to_string()),
                (15, "fold_it".to_string()),
                (16, "rebind".to_string()),
                (17, "turbofish".to_string()),
                (19, "par_sum".to_string()),
                (20, "par_reduce".to_string()),
                (22, "rebuilt".to_string()),
            ]
        );
        assert_eq!(text.lines().count(), src.lines().count(), "no line moved");
        assert!(text.contains("#[inline]\n#[fprev::scramble(chains)] pub fn total"));
        assert!(text.contains("#[fprev::scramble(chains)] pub(crate) unsafe fn dot"));
        assert!(text.contains("\nfn plain"));
        assert!(text.contains("\nconst fn never"));
        syn::parse_file(&text).expect("the annotated file parses");
    }

    #[test]
    fn methods_traits_and_tests() {
        let src = "\
struct M(Vec<f64>);
impl M {
    pub fn norm(&self) -> f64 { let mut s = 0.0; for x in &self.0 { s += x * x; } s.sqrt() }
    fn first(&self) -> f64 { self.0[0] }
}
trait Summed {
    fn items(&self) -> &[f64];
    fn total(&self) -> f64 { self.items().iter().sum() }
}
#[cfg(test)]
mod tests {
    fn helper(v: &[f64]) -> f64 { v.iter().sum() }
    #[test]
    fn t() { let mut s = 0.0; s += 1.0; assert_eq!(s, 1.0); }
}
#[test]
fn top_level_test() { let mut s = 0.0; s += 1.0; }
mod inner {
    #[fprev::scramble]
    fn already(v: &[f64]) -> f64 { v.iter().sum() }
    fn found(v: &[f64]) -> f64 { v.iter().sum() }
}
";
        let (text, list) = run(src);
        assert_eq!(
            list,
            vec![
                (3, "M::norm".to_string()),
                (8, "Summed::total".to_string()),
                (21, "found".to_string()),
            ]
        );
        assert!(text.contains("    #[fprev::scramble(chains)] pub fn norm"));
        assert!(text.contains("    #[fprev::scramble(chains)] fn total(&self)"));
        assert_eq!(text.matches("#[fprev::scramble(chains)]").count(), 3);
        syn::parse_file(&text).expect("parses");
    }

    #[test]
    fn non_ascii_columns_and_comparisons() {
        // A multi-byte character before the item on its line, and `==`/`<=` forms that
        // are no updates.
        let src = "/* é */ fn f(v: &[f64]) -> f64 { let mut s = 0.0; for x in v { s += x; } s }\n\
                   fn g(a: f64, b: f64) -> bool { a == b || a <= b }\n\
                   fn h(a: &mut Vec<f64>) { a.push(1.0); let n = a.len() + 1; let _ = n; }\n";
        let (text, list) = run(src);
        assert_eq!(list, vec![(1, "f".to_string())]);
        assert!(
            text.starts_with("/* é */ #[fprev::scramble(chains)] fn f"),
            "{text}"
        );
    }

    #[test]
    fn a_file_that_does_not_lex_is_an_error() {
        assert!(annotate("fn broken( {").is_err());
    }

    #[test]
    fn a_file_syn_cannot_read_whole_is_read_item_by_item() {
        // Edition 2015's bare `&Fn(T) -> T` in one method's signature: that method is
        // left alone, its neighbours (in the same impl) and the free function are not.
        let src = "\
#![allow(dead_code)]
struct V(Vec<f64>);
impl V {
    fn apply(mut self, f: &Fn(f64) -> f64) -> Self { for v in &mut self.0 { *v = f(*v); } self }
    pub fn sum(&self) -> f64 { let mut s = 0.0; for x in &self.0 { s += x; } s }
}
fn dot(a: &[f64], b: &[f64]) -> f64 { a.iter().zip(b).map(|(x, y)| x * y).sum() }
#[cfg(test)]
mod tests {
    fn helper(v: &[f64]) -> f64 { v.iter().sum() }
    fn broken(f: &Fn(f64) -> f64) -> f64 { let mut s = 0.0; s += f(1.0); s }
}
";
        let r = annotate(src).expect("lexes");
        assert!(r.partial.is_some(), "the whole file does not parse");
        let names: Vec<(usize, String)> = r
            .annotated
            .iter()
            .map(|a| (a.line, a.name.clone()))
            .collect();
        assert_eq!(names, vec![(5, "sum".to_string()), (7, "dot".to_string())]);
        let text = r.text.expect("annotated");
        assert!(
            text.contains("    #[fprev::scramble(chains)] pub fn sum(&self)"),
            "{text}"
        );
        assert!(
            text.contains("\n#[fprev::scramble(chains)] fn dot("),
            "{text}"
        );
        assert_eq!(text.lines().count(), src.lines().count());
    }
}
