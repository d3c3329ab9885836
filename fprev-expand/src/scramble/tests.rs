//! The statement-by-statement path against the whole-item one, and the off-path
//! guarantees, without compiling the expansions.

use proc_macro2::TokenStream;
use quote::quote;

use super::args::ScrambleArgs;
use super::snapshot_tests;

fn both_ways(item: &TokenStream, context: &str) -> Option<TokenStream> {
    snapshot_tests::both_ways(&TokenStream::new(), item, context)
}

fn args() -> ScrambleArgs {
    ScrambleArgs::parse(TokenStream::new()).expect("no arguments")
}

#[test]
fn markers_only_are_stripped_otherwise_tokens_are_kept() {
    let plain = quote! {
        fn f(v: &[f32]) -> f32 { let mut s = 0.0; for x in v { s += x; } s }
    };
    assert_eq!(
        super::strip_markers(plain.clone()).to_string(),
        plain.to_string()
    );
    let marked = quote! {
        fn f(v: &[f32]) -> f32 { let mut s = 0.0; #[scramble(skip)] for x in v { s += x; } s }
    };
    assert_eq!(super::strip_markers(marked).to_string(), plain.to_string());
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn loops_that_exit_early_are_left_alone() {
    let item = quote! {
        fn find(v: &[f32]) -> Option<usize> {
            for i in 0..v.len() { if v[i] < 0.0 { return Some(i); } }
            None
        }
    };
    let out = super::scramble(quote!(), item.clone()).unwrap().to_string();
    assert!(
        !out.contains("maybe_shuffled") && !out.contains("Reduction"),
        "{out}"
    );
    assert!(out.contains("nothing to scramble"), "{out}");
    let declared = super::scramble(quote!(loops), item.clone())
        .unwrap()
        .to_string();
    assert!(!declared.contains("maybe_shuffled"), "{declared}");
    let forced = super::scramble(quote!(loops, force), item)
        .unwrap()
        .to_string();
    assert!(forced.contains("maybe_shuffled"), "{forced}");
}

#[test]
#[cfg(feature = "off")]
fn off_returns_the_item_token_for_token() {
    let item = quote! {
        #[inline] pub fn f(v: &[f32]) -> f32 { let mut s = 0.0; for x in v.iter() { s += x; } s }
    };
    let out = super::scramble(quote!(all, shuffle = "sattolo"), item.clone()).unwrap();
    assert_eq!(out.to_string(), item.to_string());
}

#[test]
fn untouched_runs_come_back_token_for_token() {
    // Odd spacing and all.
    let item = quote! {
        fn f(x: &[f64]) -> f64 {
            let   scale=2.0 ;
            let mut s = 0.0;
            for v in x { s += v * scale; }
            s
        }
    };
    let out = super::by_statements(&args(), &item, &mut Vec::new())
        .expect("splits")
        .expect("rewrites");
    assert!(out.to_string().contains("let scale = 2.0 ;"), "{out}");
    assert!(out.to_string().contains("reduction_at"), "{out}");
}

#[test]
fn statement_by_statement_is_the_whole_rewrite() {
    let item = quote! {
        fn f(x: &[f64], y: &mut [f64], n: usize) -> f64 {
            let mut total = 0.0;
            let mut count = 0;
            for i in 0..n {
                y[i] = 2.0 * x[i];
                if y[i] < 0.0 { count += 1; }
            }
            let q: f64 = x.iter().map(|v| v * 3.0).sum();
            'rows: for r in 0..n {
                let mut inner = 0.0;
                for c in 0..n { inner += x[r] * y[c]; }
                total += inner;
                if inner > 1e9 { break 'rows; }
            }
            let f = y.iter().fold(0.0, |a, v| a + v);
            fn helper(v: &[f64]) -> f64 { v.iter().sum() }
            match count { 0 => total + q + f, _ => helper(x) }
        }
    };
    assert!(both_ways(&item, "a function of every statement kind").is_some());
}

#[test]
fn inner_attributes_stay_first() {
    let item = quote! {
        fn f(x: &[f64]) -> f64 {
            #![allow(unused_mut)]
            #![allow(clippy::all)]
            let   unused = 1;
            let mut s = 0.0;
            for v in x { s += v; }
            s
        }
    };
    let statements = both_ways(&item, "inner attributes").expect("splits");
    let body = statements.to_string();
    let start = body.find('{').expect("a body");
    assert!(
        body[start..].starts_with("{ # ! [allow (unused_mut)] # ! [allow (clippy :: all)]"),
        "{body}"
    );
}

#[test]
fn unexpected_shapes_decline() {
    // A declaration, a `const fn`, a run that does not parse: the whole item is
    // parsed instead (and the errors said there).
    for item in [
        quote!(
            fn f(x: &[f64]) -> f64;
        ),
        quote!(
            const fn f() -> f64 {
                let mut s = 0.0;
                for _ in 0..3 {
                    s += 1.0;
                }
                s
            }
        ),
        quote!(
            fn f() {
                for x in { 1..3 } {}
            }
        ),
        quote!(
            struct S {
                a: f64,
            }
        ),
    ] {
        assert!(
            super::by_statements(&args(), &item, &mut Vec::new()).is_none(),
            "{item}"
        );
    }
}

/// Whether `#[scramble(chains)]` gave `item` the counting body beside the scrambled one.
fn has_both_bodies(item: TokenStream) -> bool {
    let out = super::scramble(quote!(chains), item).expect("expands");
    let text = out.to_string();
    text.contains("counting ()") && text.contains("__FPREV_SITES")
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn chains_go_beside_the_scrambled_body_where_two_bodies_fit() {
    assert!(has_both_bodies(quote! {
        fn f(v: &[f32]) -> f32 { let mut s = 0.0; for x in v { s += x; } s }
    }));
    // A method, generic, with an early return and a per-loop marker (the counting body
    // gets the item without it).
    assert!(has_both_bodies(quote! {
        fn f<T: Copy>(&self, v: &[f64], _t: T) -> f64 {
            if v.is_empty() { return 0.0; }
            let mut s = 0.0;
            #[scramble(skip)]
            for x in v { s += x; }
            s
        }
    }));
    let scrambled_only = [
        quote!(
            async fn f(v: &[f32]) -> f32 {
                v.iter().sum()
            }
        ),
        quote!(
            fn f(v: &[f32]) -> impl Fn(f32) -> f32 {
                let s: f32 = v.iter().sum();
                move |x| x * s
            }
        ),
        quote!(
            fn f(v: &[f32]) -> f32 {
                struct A;
                impl A {
                    fn g() {}
                }
                v.iter().sum()
            }
        ),
        quote!(
            fn f(v: &[f32]) -> f32 {
                #[no_mangle]
                extern "C" fn g() {}
                v.iter().sum()
            }
        ),
        // Nothing to count.
        quote!(
            fn f(v: &[u32]) -> usize {
                v.len()
            }
        ),
    ];
    for item in scrambled_only {
        let why = super::with_chains::why_not(&item);
        assert!(!has_both_bodies(item.clone()), "{item}");
        assert_eq!(
            super::scramble(quote!(chains), item.clone())
                .unwrap()
                .to_string(),
            super::scramble(quote!(), item.clone()).unwrap().to_string(),
            "{item}: the scrambled expansion, as without `chains`"
        );
        if item.to_string().contains("usize") {
            assert_eq!(why, None, "two bodies would fit: it has nothing to count");
        } else {
            assert!(why.is_some(), "{item}");
        }
    }
}
