//! Expansion snapshots (`FPREV_BLESS=1 cargo test -p fprev-expand` rewrites them; review
//! the diff) and the off-path guarantees, without compiling the expansions.

use proc_macro2::TokenStream;
use quote::quote;

use super::expand;

/// A readable rendering of a token stream: one statement per line, blocks indented.
fn render(tokens: &TokenStream) -> String {
    let mut out = String::new();
    let mut indent = 0usize;
    let mut line = String::new();
    let flush = |out: &mut String, line: &mut String, indent: usize| {
        let t = line.trim();
        if !t.is_empty() {
            out.push_str(&"    ".repeat(indent));
            out.push_str(t);
            out.push('\n');
        }
        line.clear();
    };
    for word in tokens.to_string().split(' ') {
        match word {
            "{" => {
                line.push_str(" {");
                flush(&mut out, &mut line, indent);
                indent += 1;
            }
            "}" => {
                flush(&mut out, &mut line, indent);
                indent = indent.saturating_sub(1);
                line.push('}');
            }
            ";" | "," if line.is_empty() && out.ends_with("}\n") => {
                out.pop();
                out.push_str(word);
                out.push('\n');
            }
            ";" => {
                line.push(';');
                flush(&mut out, &mut line, indent);
            }
            _ => {
                if line.ends_with('}') {
                    flush(&mut out, &mut line, indent);
                }
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
            }
        }
    }
    flush(&mut out, &mut line, indent);
    out
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
pub(super) fn rewrite_both_ways(
    args: &TokenStream,
    item: &TokenStream,
    context: &str,
) -> Option<TokenStream> {
    let parsed = super::args::Args::parse(args.clone()).expect("valid arguments");
    let (mut lazy_record, mut whole_record) = (Vec::new(), Vec::new());
    let lazy = super::chunks::rewrite(&parsed, item, &mut lazy_record)?
        .unwrap_or_else(|e| panic!("{context}: {e}\n{item}"));
    let whole = expand::whole(
        super::args::Args::parse(args.clone()),
        item.clone(),
        &mut whole_record,
    )
    .unwrap_or_else(|e| panic!("{context}: {e}\n{item}"));
    assert_eq!(
        normalized(&lazy),
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
        seen(&lazy_record),
        seen(&whole_record),
        "{context}: the two paths decide differently on\n{item}"
    );
    Some(lazy)
}

fn check_snapshot(name: &str, args: TokenStream, item: TokenStream) {
    rewrite_both_ways(&args, &item, name);
    let expanded = expand::scramble(args, item).expect("expands");
    let got = render(&expanded);
    let path = format!(
        "{}/src/scramble/snapshots/{name}.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("FPREV_BLESS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        got == want,
        "expansion of {name} changed; rerun with FPREV_BLESS=1 and review\n--- got\n{got}"
    );
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn snapshot_loops() {
    check_snapshot(
        "loops",
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
    );
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn snapshot_nested_par_and_markers() {
    check_snapshot(
        "nested_par_markers",
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
    );
}

#[test]
#[cfg_attr(feature = "off", ignore = "expansions are the identity with `off`")]
fn snapshot_fold_block_and_rayon_zip() {
    check_snapshot(
        "fold_block_par_zip",
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
    );
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
    let out = expand::scramble(quote!(), item.clone())
        .unwrap()
        .to_string();
    assert!(
        !out.contains("maybe_shuffled") && !out.contains("Reduction"),
        "{out}"
    );
    assert!(out.contains("nothing to scramble"), "{out}");
    let declared = expand::scramble(quote!(loops), item.clone())
        .unwrap()
        .to_string();
    assert!(!declared.contains("maybe_shuffled"), "{declared}");
    let forced = expand::scramble(quote!(loops, force), item)
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
    let out = expand::scramble(quote!(all, shuffle = "sattolo"), item.clone()).unwrap();
    assert_eq!(out.to_string(), item.to_string());
}
