//! Checking the arguments against the annotated function, before any code is generated.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;

use super::args::{AccumulatorArgs, ProbedOp, RevealClause};

/// A validated registration.
pub struct ValidRegistration {
    pub op: ProbedOp,
    pub sizes: Vec<usize>,
    /// The element type, when given (`f32`, `::fprev::half::f16`, ...).
    pub dtype: Option<TokenStream>,
    /// The function as a value: `name` or `name::<dtype>`.
    pub function: TokenStream,
}

/// What to generate.
pub struct RegistrationPlan {
    /// Path of the facade (`::fprev` unless `crate = "..."`).
    pub krate: TokenStream,
    pub registration: Option<ValidRegistration>,
}

/// Where `Self` first appears in `tokens`, if it does (then the function is an
/// associated one, which a registration cannot name by a path from its module).
pub(super) fn names_self(tokens: TokenStream) -> Option<proc_macro2::Span> {
    tokens.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Ident(i) if i == "Self" => Some(i.span()),
        proc_macro2::TokenTree::Group(g) => names_self(g.stream()),
        _ => None,
    })
}

fn dtype_tokens(krate: &TokenStream, d: &syn::Ident) -> Option<TokenStream> {
    let span = d.span();
    Some(match d.to_string().as_str() {
        "f32" => quote_spanned!(span=> f32),
        "f64" => quote_spanned!(span=> f64),
        "f16" => quote_spanned!(span=> #krate::half::f16),
        "bf16" => quote_spanned!(span=> #krate::half::bf16),
        _ => return None,
    })
}

/// Check everything; all problems are reported together.
pub fn validate(args: AccumulatorArgs, item: &syn::ItemFn) -> syn::Result<RegistrationPlan> {
    let mut errors: Vec<syn::Error> = Vec::new();
    let krate = match &args.krate {
        Some(p) => quote!(#p),
        None => quote!(::fprev),
    };
    if let Some(c) = &item.sig.constness {
        errors.push(syn::Error::new_spanned(
            c,
            "#[accumulator] cannot count inside a `const fn`: remove `const` or the attribute",
        ));
    }
    let registration = args
        .reveal
        .and_then(|r| registration(r, item, &krate, &mut errors));
    let mut it = errors.into_iter();
    match it.next() {
        None => Ok(RegistrationPlan {
            krate,
            registration,
        }),
        Some(mut first) => {
            for e in it {
                first.combine(e);
            }
            Err(first)
        }
    }
}

/// `reveal(..)` checked against the function: the registration, or `None` with the
/// problems pushed to `errors` (in the order the arguments and the signature read).
fn registration(
    r: RevealClause,
    item: &syn::ItemFn,
    krate: &TokenStream,
    errors: &mut Vec<syn::Error>,
) -> Option<ValidRegistration> {
    let sig = &item.sig;
    let op = match r.op {
        Some((op, _)) => Some(op),
        None => {
            errors.push(syn::Error::new(
                r.span,
                format!(
                    "reveal(..) needs an operation: add `op = ...` with {}",
                    ProbedOp::NAMES
                ),
            ));
            None
        }
    };
    let sizes = sizes(&r, errors);
    let dtype = match &r.dtype {
        None => None,
        Some(d) => match dtype_tokens(krate, d) {
            Some(t) => Some(t),
            None => {
                errors.push(syn::Error::new(
                    d.span(),
                    format!("unknown dtype `{d}`: use f32, f64, f16 or bf16"),
                ));
                None
            }
        },
    };
    callable(&r, item, errors);
    if let Some(op) = op {
        let n = sig.inputs.len();
        if n != op.arity() {
            let span = if sig.inputs.is_empty() {
                sig.paren_token.span.join()
            } else {
                sig.inputs.span()
            };
            errors.push(syn::Error::new(
                span,
                format!(
                    "op = \"{}\" registers `{}`, which takes {} parameter(s); this function takes {n}",
                    op.name(),
                    op.signature(),
                    op.arity()
                ),
            ));
        }
    }
    let types: Vec<&syn::TypeParam> = sig.generics.type_params().collect();
    if sig.generics.const_params().next().is_some() || types.len() > 1 {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "a registered function may be generic over its float type only: \
             register a non-generic wrapper",
        ));
    } else if types.len() == 1 && r.dtype.is_none() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "a generic registered function needs its float type: add `dtype = f32` (or f64, f16, bf16)",
        ));
    }
    let ident = &sig.ident;
    let function = match (&r.path, &dtype, types.len()) {
        (Some((p, span)), Some(d), 1) => quote_spanned!(*span=> #p::<#d>),
        (Some((p, span)), _, _) => quote_spanned!(*span=> #p),
        (None, Some(d), 1) => quote_spanned!(ident.span()=> #ident::<#d>),
        (None, _, _) => quote!(#ident),
    };
    Some(ValidRegistration {
        op: op?,
        sizes,
        dtype,
        function,
    })
}

/// The sizes to pin, each at least 1; the problems pushed to `errors`.
fn sizes(r: &RevealClause, errors: &mut Vec<syn::Error>) -> Vec<usize> {
    let mut sizes = Vec::new();
    match &r.sizes {
        None => errors.push(syn::Error::new(
            r.span,
            "reveal(..) needs the sizes to pin: add `sizes = [16, 1000]`",
        )),
        Some((lits, span)) if lits.is_empty() => errors.push(syn::Error::new(
            *span,
            "reveal(..) needs at least one size, such as `sizes = [16]`",
        )),
        Some((lits, _)) => {
            for l in lits {
                match l.base10_parse::<usize>() {
                    Ok(0) | Err(_) => errors.push(syn::Error::new(
                        l.span(),
                        "sizes must be whole numbers of at least 1",
                    )),
                    Ok(n) => sizes.push(n),
                }
            }
        }
    }
    sizes
}

/// Whether the registry can call the function by itself: not `async`, no `self`, and a
/// path to name it by when it sits in an `impl` or a `trait`; the problems pushed to
/// `errors`.
fn callable(r: &RevealClause, item: &syn::ItemFn, errors: &mut Vec<syn::Error>) {
    let sig = &item.sig;
    if let Some(a) = &sig.asyncness {
        errors.push(syn::Error::new_spanned(
            a,
            "a registered function is called to probe its order: it cannot be `async`",
        ));
    }
    if let Some(recv) = sig.receiver() {
        errors.push(syn::Error::new_spanned(
            recv,
            "a registered function cannot take `self`: register a free function that calls the method",
        ));
    } else if r.path.is_none() {
        if let Some(at) = names_self(item.to_token_stream()) {
            errors.push(syn::Error::new(
                at,
                format!(
                    "this function names `Self`, so it sits in an `impl` or a `trait`, where \
                     a registration cannot name it by itself: add its path from the module, \
                     `reveal(.., path = \"MyType::{0}\")` (or `\"<MyType as MyTrait>::{0}\"`)",
                    sig.ident
                ),
            ));
        }
    }
}
