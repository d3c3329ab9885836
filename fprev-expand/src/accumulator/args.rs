//! Parsing `#[accumulator(...)]` arguments: `crate = "path"` and
//! `reveal(op = "...", sizes = [..], dtype = ...)`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;

/// Custom keywords of the argument list.
mod kw {
    syn::custom_keyword!(reveal);
    syn::custom_keyword!(op);
    syn::custom_keyword!(sizes);
    syn::custom_keyword!(dtype);
    syn::custom_keyword!(path);
}

/// The operation a registration probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbedOp {
    Sum,
    Dot,
    Gemv,
    Gemm,
}

impl ProbedOp {
    pub const NAMES: &'static str = "\"sum\", \"dot\", \"gemv\" or \"gemm\"";

    fn parse(s: &str) -> Option<ProbedOp> {
        Some(match s {
            "sum" => ProbedOp::Sum,
            "dot" => ProbedOp::Dot,
            "gemv" => ProbedOp::Gemv,
            "gemm" => ProbedOp::Gemm,
            _ => return None,
        })
    }

    /// Number of parameters the registered function takes.
    pub fn arity(self) -> usize {
        match self {
            ProbedOp::Sum => 1,
            ProbedOp::Dot => 2,
            ProbedOp::Gemv => 4,
            ProbedOp::Gemm => 5,
        }
    }

    /// The signature it needs, for error messages.
    pub fn signature(self) -> &'static str {
        match self {
            ProbedOp::Sum => "fn(&[T]) -> T",
            ProbedOp::Dot => "fn(&[T], &[T]) -> T",
            ProbedOp::Gemv => "fn(m: usize, n: usize, a: &[T], x: &[T]) -> Vec<T>",
            ProbedOp::Gemm => "fn(m: usize, n: usize, k: usize, a: &[T], b: &[T]) -> Vec<T>",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProbedOp::Sum => "sum",
            ProbedOp::Dot => "dot",
            ProbedOp::Gemv => "gemv",
            ProbedOp::Gemm => "gemm",
        }
    }
}

/// `reveal(...)`.
#[derive(Debug)]
pub struct RevealClause {
    pub span: Span,
    pub op: Option<(ProbedOp, Span)>,
    pub sizes: Option<(Vec<syn::LitInt>, Span)>,
    pub dtype: Option<syn::Ident>,
    /// `path = "Type::method"`: the function as named from its module (an associated
    /// function, which the attribute cannot name by itself).
    pub path: Option<(syn::ExprPath, Span)>,
}

/// Everything between the attribute's parentheses.
#[derive(Debug, Default)]
pub struct AccumulatorArgs {
    pub krate: Option<syn::Path>,
    pub reveal: Option<RevealClause>,
}

/// Parse the arguments; every problem found is reported, combined.
pub fn parse(tokens: TokenStream) -> syn::Result<AccumulatorArgs> {
    let mut args = AccumulatorArgs::default();
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            let s: syn::LitStr = meta.value()?.parse()?;
            args.krate = Some(s.parse().map_err(|_| {
                syn::Error::new(s.span(), "expected a path, such as `crate = \"my_fprev\"`")
            })?);
            Ok(())
        } else if meta.path.is_ident("reveal") {
            let mut r = RevealClause {
                span: meta.path.span(),
                op: None,
                sizes: None,
                dtype: None,
                path: None,
            };
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident("op") {
                    let s: syn::LitStr = inner.value()?.parse()?;
                    match ProbedOp::parse(&s.value()) {
                        Some(op) => r.op = Some((op, s.span())),
                        None => push(syn::Error::new(
                            s.span(),
                            format!("unknown op `{}`: use {}", s.value(), ProbedOp::NAMES),
                        )),
                    }
                    Ok(())
                } else if inner.path.is_ident("sizes") {
                    let arr: syn::ExprArray = inner.value()?.parse()?;
                    let mut sizes = Vec::new();
                    for e in &arr.elems {
                        match e {
                            syn::Expr::Lit(syn::ExprLit {
                                lit: syn::Lit::Int(i),
                                ..
                            }) => sizes.push(i.clone()),
                            other => push(syn::Error::new_spanned(
                                other,
                                "sizes must be integer literals, such as `sizes = [16, 1000]`",
                            )),
                        }
                    }
                    r.sizes = Some((sizes, arr.span()));
                    Ok(())
                } else if inner.path.is_ident("path") {
                    let s: syn::LitStr = inner.value()?.parse()?;
                    match s.parse::<syn::ExprPath>() {
                        Ok(p) => r.path = Some((p, s.span())),
                        Err(_) => push(syn::Error::new(
                            s.span(),
                            "expected the function's path, such as `path = \"MyType::total\"` \
                             or `path = \"<MyType as Stats>::mean\"`",
                        )),
                    }
                    Ok(())
                } else if inner.path.is_ident("dtype") {
                    r.dtype = Some(inner.value()?.parse()?);
                    Ok(())
                } else {
                    Err(inner.error(
                        "unknown reveal option: use `op = \"...\"`, `sizes = [..]`, `dtype = f32` or `path = \"Type::f\"`",
                    ))
                }
            })?;
            args.reveal = Some(r);
            Ok(())
        } else {
            Err(meta.error(
                "unknown #[accumulator] option: use `reveal(op = \"sum\", sizes = [..])` or `crate = \"...\"`",
            ))
        }
    });
    if let Err(e) = parser.parse2(tokens) {
        push(e);
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn parses_reveal() {
        let a = parse(quote!(reveal(op = "dot", sizes = [4, 8], dtype = f32))).unwrap();
        let r = a.reveal.unwrap();
        assert_eq!(r.op.unwrap().0, ProbedOp::Dot);
        assert_eq!(r.sizes.unwrap().0.len(), 2);
        assert_eq!(r.dtype.unwrap().to_string(), "f32");
    }

    #[test]
    fn combines_errors() {
        let e = parse(quote!(reveal(op = "mean", sizes = [n]))).unwrap_err();
        assert_eq!(e.into_iter().count(), 2);
    }

    #[test]
    fn crate_override() {
        let a = parse(quote!(crate = "my_fprev")).unwrap();
        assert!(a.krate.is_some());
    }
}
