//! The statement-by-statement path against the whole-item one on generated functions:
//! the same expansion, and every generated function read statement by statement. Seeded;
//! a failing case prints its seed (`FPREV_SEED=<seed> FPREV_PROPTEST_CASES=1` reruns it
//! alone).

use proc_macro2::TokenStream;

use crate::cases::{cases, SplitMix};

/// One statement of a generated function: declarations, updates of every form
/// (variables, places, iterators), restarts, reads in closures and loops, exits,
/// macros, and neutral statements the statement-by-statement path passes through.
fn statement(d: &mut SplitMix) -> String {
    let v = d.pick(&["s", "t", "u"]);
    match d.below(31) {
        29 => "let tf = y.iter().fold((0.0, 0.0), |(p, q), w| (p + w, q - w * a));".to_string(),
        30 => "for r in x.chunks(2) { m = r.iter().zip(m.iter()).map(|(&e, &z)| e * a + z).collect(); }"
            .to_string(),
        25 => "out[k % 4] = out[k % 4] + a;".to_string(),
        26 => "out[0] = -out[0] * 0.5;".to_string(),
        27 => "out[1] = a - -out[1];".to_string(),
        28 => format!("out[2] = ({v} + out[2]);"),
        22 => "let mut s = 0usize; s += 1;".to_string(),
        23 => "hist[k % 4] += 1;".to_string(),
        24 => format!("if a < 0.5 {{ {v} = {v} - 1.0; }} else {{ {v} *= 2.0; }}"),
        0 => format!("let mut {v} = 0.0;"),
        1 => format!("for i in 0..n {{ {v} += x[i] * y[i]; }}"),
        2 => format!("{v} = {v} + x[0];"),
        3 => format!("{v} *= 0.5;"),
        4 => format!("{v} = a;"),
        5 => "let q: f64 = x.iter().map(|w| w * a).sum();".to_string(),
        6 => "let f = y.iter().fold(0.0, |acc, w| acc + w);".to_string(),
        7 => "out[k % 4] += a;".to_string(),
        8 => format!("let g = |w: f64| w * {v};"),
        9 => "let h = |w: &[f64]| { let mut z = 0.0; for e in w { z += e; } z };".to_string(),
        10 => format!("if a > 9.0 {{ return {v}; }}"),
        11 => "count += 1;".to_string(),
        12 => format!("#[cfg(all())] let mut {v} = 1.0;"),
        13 => "k *= 2;".to_string(),
        14 => "println!(\"{}\", a);".to_string(),
        15 => format!("while {v} < 1.0 {{ {v} += a; out[0] = {v}; }}"),
        16 => "let b = if a > 1.0 { a.sqrt() } else { a * a - 0.25 };".to_string(),
        17 => "let c = match count % 3 { 0 => a.max(1.0), _ => a.abs() };".to_string(),
        18 => "for i in 0..n { out[i] = a * x[i]; if out[i] < 0.0 { count += 1; } }".to_string(),
        19 => format!("let (p, {v}) = (1.0, 2.0);"),
        20 => "if let Some(e) = x.first() { k += *e as usize; }".to_string(),
        _ => "let idx = (count * 7 + 1) % n.max(1);".to_string(),
    }
}

#[test]
fn statement_by_statement_equals_the_whole_rewrite_on_generated_functions() {
    let (first, cases) = cases();
    let mut taken = 0;
    for seed in first..first + cases {
        let mut d = SplitMix(seed);
        let stmts: Vec<String> = (0..2 + d.below(8)).map(|_| statement(&mut d)).collect();
        let text = format!(
            "fn f(x: &[f64], y: &[f64], out: &mut [f64], n: usize, a: f64) -> f64 {{ \
             let mut s = 0.0; let mut t = 0.0; let mut u = 0.0; let mut count = 0usize; \
             let mut k = 1usize; let mut m = vec![0.0; 2]; {} s + t + u + m[0] }}",
            stmts.join(" ")
        );
        let item: TokenStream = text
            .parse()
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let context = format!("seed {seed} (rerun with FPREV_SEED={seed} FPREV_PROPTEST_CASES=1)");
        super::snapshot_tests::both_ways(TokenStream::new(), item.clone(), &context);
        if super::by_statements(TokenStream::new(), &item).is_some() {
            taken += 1;
        }
    }
    assert_eq!(
        taken, cases,
        "every generated function goes statement by statement"
    );
}
