//! Whether every exit of the function is visible, so that its frame of counters can be
//! merged into the sites by a call written at each exit instead of by a `Drop`.
//!
//! A local that needs dropping makes every call in the function an unwinding edge with
//! a cleanup block, which the compiler builds and checks for every call: in a long
//! function with no other such local, the frame's `Drop` would be a large share of its
//! build. The exits are the body's end and its `return`s; they are all visible unless
//! the function is `async`, uses `?` (outside its closures), or invokes a macro that
//! could hide a `return` or a `?` (anything but the standard formatting, assertion and
//! `vec!` macros, and those when their arguments hold a `return` or a `?`). The
//! written-out merge also needs a type to bind the result to: not `impl Trait`, not
//! `!`. A call that unwinds then merges nothing, where a `Drop` would have merged its
//! counts.

use proc_macro2::{TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::visit::{self, Visit};

/// Macros whose expansion never returns from, or `?`s out of, the function that uses
/// them (given arguments that do not).
const TRANSPARENT_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "concat",
    "cfg",
    "column",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];

/// The function's return type (`()` when it has none) when every exit of a function
/// with signature `sig` and the statements `body` is visible.
pub fn visible<'a>(
    sig: &syn::Signature,
    body: impl IntoIterator<Item = &'a syn::Stmt>,
) -> Option<TokenStream> {
    if sig.asyncness.is_some() {
        return None;
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => quote!(()),
        syn::ReturnType::Type(_, t) if matches!(**t, syn::Type::Never(_)) => return None,
        syn::ReturnType::Type(_, t) => {
            let t = t.to_token_stream();
            if names(&t, &["impl"]) {
                return None;
            }
            t
        }
    };
    let mut scan = ExitScan { visible: true };
    for s in body {
        scan.visit_stmt(s);
    }
    scan.visible.then_some(ret)
}

/// Whether `tokens` hold one of `idents`, or a `?`, at any depth.
fn names(tokens: &TokenStream, idents: &[&str]) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => idents.iter().any(|w| i == w),
        TokenTree::Punct(p) => p.as_char() == '?',
        TokenTree::Group(g) => names(&g.stream(), idents),
        TokenTree::Literal(_) => false,
    })
}

/// Looks for what hides an exit, outside closures, `async` blocks and nested items
/// (whose `return` and `?` leave them, not the function).
struct ExitScan {
    visible: bool,
}

impl<'a> Visit<'a> for ExitScan {
    fn visit_expr_try(&mut self, _: &'a syn::ExprTry) {
        self.visible = false;
    }
    fn visit_expr_try_block(&mut self, _: &'a syn::ExprTryBlock) {
        self.visible = false;
    }
    fn visit_macro(&mut self, m: &'a syn::Macro) {
        let known = m
            .path
            .segments
            .last()
            .is_some_and(|s| TRANSPARENT_MACROS.iter().any(|k| s.ident == k));
        if !known || names(&m.tokens, &["return"]) {
            self.visible = false;
        }
    }
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'a syn::Item) {}
    fn visit_block(&mut self, b: &'a syn::Block) {
        if self.visible {
            visit::visit_block(self, b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(f: TokenStream) -> Option<String> {
        let f: syn::ItemFn = syn::parse2(f).unwrap();
        visible(&f.sig, &f.block.stmts).map(|t| t.to_string())
    }

    #[test]
    fn exits_seen_or_not() {
        assert_eq!(
            of(quote!(
                fn f(x: &[f64]) -> f64 {
                    let mut s = 0.0;
                    for v in x {
                        if *v < 0.0 {
                            return s;
                        }
                        s += v;
                    }
                    s
                }
            ))
            .as_deref(),
            Some("f64")
        );
        assert_eq!(
            of(quote!(
                fn f() {
                    println!("{:?}", 1);
                }
            ))
            .as_deref(),
            Some("()")
        );
        // A closure's `?` and an item's `return` leave them, not the function.
        assert!(of(quote!(
            fn f() -> f64 {
                let g = || -> Option<f64> { Some(1.0)? };
                fn h() -> u8 {
                    return 1;
                }
                0.0
            }
        ))
        .is_some());
        assert_eq!(
            of(quote!(
                fn f() -> Result<f64, E> {
                    let x = g()?;
                    Ok(x)
                }
            )),
            None
        );
        assert_eq!(
            of(quote!(
                fn f() -> f64 {
                    ensure!(true);
                    0.0
                }
            )),
            None
        );
        assert_eq!(
            of(quote!(
                fn f() -> f64 {
                    assert!({ return 1.0 });
                    0.0
                }
            )),
            None
        );
        assert_eq!(
            of(quote!(
                fn f() -> Vec<f64> {
                    vec![g()?; 3]
                }
            )),
            None
        );
        assert_eq!(
            of(quote!(
                async fn f() -> f64 {
                    0.0
                }
            )),
            None
        );
        assert_eq!(
            of(quote!(
                fn f() -> impl Iterator<Item = f64> {
                    std::iter::empty()
                }
            )),
            None
        );
        assert_eq!(
            of(quote!(
                fn f() -> ! {
                    loop {}
                }
            )),
            None
        );
    }
}
