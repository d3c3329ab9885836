//! Snapshots of what `#[scramble]` expands to. Review changes with `cargo insta review`
//! (or `INSTA_UPDATE=always cargo test -p fprev-expand` and read the diff).

use proc_macro2::TokenStream;
use quote::quote;

/// The expansion of `item`, checked to be the one of both paths, as prettyplease prints
/// it.
fn expand(args: TokenStream, item: TokenStream) -> String {
    both_ways(&args, &item, "a snapshot");
    let out = super::scramble(args, item).expect("expands");
    let file: syn::File = syn::parse2(out).expect("the expansion parses as items");
    prettyplease::unparse(&file)
}

/// Tokens re-parsed and printed again, so that two streams compare by their syntax, not
/// by how their tokens were grouped.
fn normalized(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => quote!(#file).to_string(),
        Err(_) => tokens.to_string(),
    }
}

/// The statement-by-statement rewrite of `item`, checked to give what the whole-item
/// rewrite gives; `None` when it declines (then only the whole-item path runs).
pub(super) fn both_ways(
    args: &TokenStream,
    item: &TokenStream,
    context: &str,
) -> Option<TokenStream> {
    let parsed = super::args::ScrambleArgs::parse(args.clone()).expect("valid arguments");
    let (mut statements_record, mut whole_record) = (Vec::new(), Vec::new());
    let statements = super::by_statements(&parsed, item, &mut statements_record)?
        .unwrap_or_else(|e| panic!("{context}: {e}\n{item}"));
    let whole = super::whole(
        super::args::ScrambleArgs::parse(args.clone()),
        item.clone(),
        &mut whole_record,
    )
    .unwrap_or_else(|e| panic!("{context}: {e}\n{item}"));
    assert_eq!(
        normalized(&statements),
        normalized(&whole),
        "{context}: the two paths differ on\n{item}"
    );
    let seen = |record: &[super::Decision]| -> Vec<String> {
        record
            .iter()
            .map(|d| format!("{:?} {:?} {:?}", d.span.start(), d.construct, d.outcome))
            .collect()
    };
    assert_eq!(
        seen(&statements_record),
        seen(&whole_record),
        "{context}: the two paths decide differently on\n{item}"
    );
    Some(statements)
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn loops() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn dot(a: &[f32], b: &[f32]) -> f32 {
                let mut s = 0.0;
                for i in 0..a.len() {
                    s += a[i] * b[i];
                }
                s
            }
        },
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn nested_par_markers() {
    insta::assert_snapshot!(expand(
        quote!(shuffle = "sattolo", crate = "my_fprev"),
        quote! {
            fn total(rows: &[Vec<f32>]) -> f32 {
                let mut s = 0.0;
                for row in rows.iter() {
                    #[scramble(skip)]
                    for x in row.iter() {
                        s += x;
                    }
                }
                s + rows.par_iter().map(|r| r[0]).sum::<f32>()
            }
        },
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn fold_block_par_zip() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn stats(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
                let ss = a.iter().fold(0.0, |acc, x| {
                    let d = x - 1.0;
                    acc + d * d
                });
                let kept = a.iter().fold(0.0, |acc, x| {
                    let t = acc * 0.5;
                    acc + t * x
                });
                (ss, kept, a.par_iter().zip(b.par_iter()).map(|(x, y)| x * y).sum())
            }
        },
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn keyed_element_loop_tuple_fold_not_a_float() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn fit(x: &[Vec<f64>], y: &[f64], label: &[usize], p: usize) -> Vec<f64> {
                let mut sums = vec![vec![0.0; p]; 4];
                let mut g = vec![0.0; p + 1];
                let mut left = Vec2::zero();
                for i in 0..x.len() {
                    for j in 0..p {
                        sums[label[i]][j] += x[i][j];
                    }
                    for (j, g_j) in g.iter_mut().enumerate().take(p) {
                        *g_j -= y[i] * x[i][j];
                    }
                    g[p] = g[p] - y[i];
                    left += Vec2::new(x[i][0], y[i]);
                }
                let (a, n) = x.iter().fold((0.0, 0), |(a, n), r| (a + r[0], n + 1));
                g
            }
        },
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn rebuilt_vector() {
    insta::assert_snapshot!(expand(
        quote!(),
        quote! {
            fn weighted(x: &[Vec<f64>], w: &[f64]) -> Vec<f64> {
                let mut mean = vec![0.0; x[0].len()];
                for (row, &wi) in x.iter().zip(w) {
                    mean = row.iter().zip(mean.iter()).map(|(&e, &s)| e * wi + s).collect();
                }
                mean
            }
        },
    ));
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn with_chains() {
    insta::assert_snapshot!(expand(
        quote!(chains),
        quote! {
            fn dot(a: &[f32], b: &[f32]) -> f32 {
                #![allow(clippy::needless_range_loop)]
                let mut s = 0.0;
                for i in 0..a.len() {
                    s += a[i] * b[i];
                }
                s
            }
        },
    ));
}
