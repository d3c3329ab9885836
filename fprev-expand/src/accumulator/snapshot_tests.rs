//! Snapshots of what `#[accumulator]` expands to. Review changes with `cargo insta review`
//! (or `INSTA_UPDATE=always cargo test -p fprev-expand` and read the diff).

use quote::quote;

fn expand(args: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
    let out = both_ways(args, item, "a snapshot");
    let file: syn::File = syn::parse2(out).expect("the expansion parses as items");
    prettyplease::unparse(&file)
}

/// The expansion, checked to be the one of the whole-item path (the statement-by-
/// statement path reads only some statements; it must not change what comes out).
pub(super) fn both_ways(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
    context: &str,
) -> proc_macro2::TokenStream {
    let out = super::accumulator(args.clone(), item.clone());
    let whole = super::whole(args, item.clone());
    let normalized = |t: &proc_macro2::TokenStream| match syn::parse2::<syn::File>(t.clone()) {
        Ok(file) => quote!(#file).to_string(),
        Err(_) => t.to_string(),
    };
    assert_eq!(
        normalized(&out),
        normalized(&whole),
        "{context}: the two paths differ on\n{item}"
    );
    out
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn dot_loop() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn dot(a: &[f64], b: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..a.len() {
                    s += a[i] * b[i];
                }
                s
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn every_site_kind() {
    insta::assert_snapshot!(expand(
        quote!(crate = "my_fprev"),
        quote! {
            fn mixed(c: &mut [f32], x: &[f32]) -> f32 {
                #[acc]
                let mut t = 1.0;
                let mut s = 0.0;
                for i in 0..x.len() {
                    c[i % 4] += x[i];
                    s = s + x[i];
                    t = t * 0.5 + s;
                }
                let u: f32 = x.iter().map(|v| v * 2.0).sum();
                let w = x.iter().fold(0.0, |a, b| a + b);
                s + t + u + w
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn closure_frame() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn rows(m: &[Vec<f64>]) -> Vec<f64> {
                m.par_iter()
                    .map(|row| {
                        let mut s = 0.0;
                        for v in row {
                            s += v;
                        }
                        s
                    })
                    .collect()
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn registration() {
    insta::assert_snapshot!(expand(
        quote!(reveal(op = "dot", sizes = [8, 100], dtype = f32)),
        quote! {
            pub fn dot<T: Copy>(a: &[T], b: &[T]) -> T {
                a[0]
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn errors_keep_the_item() {
    insta::assert_snapshot!(expand(
        quote!(reveal(op = "dot", sizes = [8])),
        quote! {
            fn total(x: &[f32]) -> f32 {
                x[0]
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn off_is_token_for_token() {
    let item = quote! {
        fn dot(a: &[f64], b: &[f64]) -> f64 {
            let mut s = 0.0;
            for i in 0..a.len() { s += a[i] * b[i]; }
            s
        }
    };
    let func = syn::parse2(item.clone()).unwrap();
    assert_eq!(super::off(item.clone(), func).to_string(), item.to_string());

    let marked = quote! {
        fn total(x: &[f64]) -> f64 { #[acc] let mut s = 0.0; for v in x { s += v; } s }
    };
    let func = syn::parse2(marked.clone()).unwrap();
    assert_eq!(
        super::off(marked, func).to_string(),
        quote! { fn total(x: &[f64]) -> f64 { let mut s = 0.0; for v in x { s += v; } s } }
            .to_string()
    );
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn valid_forms_left_valid() {
    // A `#[cfg]` let takes its counter update along; constant contexts are not entered;
    // `(n).sum()` on a named value is not a site; a place goes through `IndexMut` once.
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn forms(c: &mut Grow, n: Bag) -> f64 {
                #[cfg(feature = "x")]
                let mut s = 0.0;
                let a = [0.0; { let mut k = 0; k += 1; k }];
                let b = const { let mut k = 1; k += 1; k };
                c[b] += (n).sum() + a[0];
                c[0] = c[0] + 1.0;
                0.0
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn registration_by_path() {
    // An associated function: registered by the path given, from inside its body.
    insta::assert_snapshot!(expand(
        quote!(reveal(
            op = "sum",
            sizes = [4],
            path = "<Data as Stats>::mean"
        )),
        quote! {
            fn mean(x: &[f64]) -> f64 {
                x.iter().sum::<f64>() / Self::len_of(x)
            }
        }
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn inner_attributes_stay_first_in_the_body() {
    // The body is emitted as tokens (not parsed back): its inner attributes go before
    // the prelude, the outer ones before the signature.
    let out = super::accumulator(
        quote!(),
        quote! {
            #[inline]
            fn total(x: &[f64]) -> f64 {
                #![allow(unused_mut)]
                let mut s = 0.0;
                for v in x { s += v; }
                s
            }
        },
    )
    .to_string();
    assert!(out.starts_with("# [inline] fn total"), "{out}");
    let body = &out[out.find('{').expect("a body")..];
    assert!(body.starts_with("{ # ! [allow (unused_mut)]"), "{out}");
    assert!(body.contains("Frame :: new"), "{out}");
}
