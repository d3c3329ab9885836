//! `fprev sweep --exec`, run as users run it, against sh and awk peers whose order
//! depends on the value swept.

use fprev::SumTree;

mod common;
use common::{fprev, scratch, stderr, stdout};

/// A text-protocol peer in sh and awk that sums each line in f64: in order for values
/// below 4, in two halves (each in order, then added) from 4 on. One awk per line, since
/// mawk reads ahead of what it has answered.
const BATCHED: &str = "while read -r l; do echo \"$l\" | awk -v m={} '{ \
    h = (m < 4) ? NF : int(NF / 2); a = 0; for (i = 1; i <= h; i++) a += $i; \
    b = 0; for (i = h + 1; i <= NF; i++) b += $i; \
    printf \"%.17g\\n\", (h == NF) ? a : a + b }'; done";

fn halves(n: usize) -> SumTree {
    let block = |from: usize, to: usize| {
        let mut text = from.to_string();
        for i in from + 1..to {
            text = format!("({text}+{i})");
        }
        text
    };
    format!("({}+{})", block(0, n / 2), block(n / 2, n))
        .parse()
        .expect("a tree")
}

/// `--format text` lines `LABEL = FIRST..LAST: TREE` (or `LABEL = V: TREE`) as
/// `(first, last, tree)`.
fn text_ranges(out: &str, label: &str) -> Vec<(usize, usize, String)> {
    out.lines()
        .map(|line| {
            let (span, tree) = line
                .strip_prefix(&format!("{label} = "))
                .and_then(|l| l.split_once(": "))
                .unwrap_or_else(|| panic!("{out}"));
            let (first, last) = span.split_once("..").unwrap_or((span, span));
            let number = |v: &str| v.parse::<usize>().unwrap_or_else(|_| panic!("{out}"));
            (number(first), number(last), tree.to_string())
        })
        .collect()
}

#[test]
fn a_sweep_prints_the_ranges_of_one_order() {
    let o = fprev(&[
        "sweep", "--exec", BATCHED, "--values", "1..6", "--n", "16", "--dtype", "f64", "--label",
        "M",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "M = 1..3: 16 in order\n\
         M = 4..6: 2 blocks of 8, combined in order; each block 8 in order\n"
    );
    // values 2, 3, 5 and 6 kept the order of the value before
    assert!(
        stderr(&o).contains("swept 6 values") && stderr(&o).contains("4 proved"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn text_and_json_formats_carry_the_trees() {
    let o = fprev(&[
        "sweep", "--exec", BATCHED, "--values", "2,4", "--n", "8", "--dtype", "f64", "--format",
        "text",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "value = 2: {}\nvalue = 4: {}\n",
            SumTree::sequential(8),
            halves(8)
        )
    );
    let o = fprev(&[
        "sweep", "--exec", BATCHED, "--values", "3..4", "--n", "8", "--dtype", "f64", "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json = stdout(&o);
    let want = format!(
        "{{\"n\":8,\"breakpoints\":[4],\"ranges\":[{{\"first\":3,\"last\":3,\"sizes\":1,\"tree\":{}}},{{\"first\":4,\"last\":4,\"sizes\":1,\"tree\":{}}}]}}\n",
        SumTree::sequential(8).to_json(),
        halves(8).to_json()
    );
    assert_eq!(json, want);
}

#[test]
fn svg_writes_a_picture_of_the_ranges() {
    let path = scratch("sweep", "ranges.svg");
    let _ = std::fs::remove_file(&path);
    let file = path.to_str().expect("a UTF-8 path");
    let o = fprev(&[
        "sweep", "--exec", BATCHED, "--values", "1..6", "--n", "16", "--dtype", "f64", "--label",
        "M", "--svg", file,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the summary is still printed
    assert!(
        stdout(&o).starts_with("M = 1..3: 16 in order\n"),
        "{}",
        stdout(&o)
    );
    let svg = std::fs::read_to_string(&path).expect("the picture");
    std::fs::remove_file(&path).expect("remove the picture");
    assert!(
        svg.starts_with("<svg") && svg.ends_with("</svg>\n"),
        "{svg}"
    );
    for text in [
        "breakpoint at M = 4",
        ">M = 1..3 (3 values)</text>",
        ">M = 4..6 (3 values)</text>",
        ">16 in order</text>",
        ">2 blocks of 8, combined in order; each block 8 in order</text>",
        "searched (2 of 6)",
    ] {
        assert!(svg.contains(text), "{text} missing from {svg}");
    }
    // a file that cannot be written is named
    let o = fprev(&[
        "sweep",
        "--exec",
        BATCHED,
        "--values",
        "1..2",
        "--n",
        "8",
        "--dtype",
        "f64",
        "--svg",
        "/nonexistent-dir/ranges.svg",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--svg /nonexistent-dir/ranges.svg: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["--exec", "cat", "--values", "1..3", "--n", "8"],
            "has no {}",
        ),
        (
            &["--exec", "cat {}", "--values", "3..1", "--n", "8"],
            "is empty",
        ),
        (
            &["--exec", "cat {}", "--values", "1,x", "--n", "8"],
            "\"x\" is not a whole number",
        ),
        (
            &["--exec", "cat {}", "--values", "1..99999", "--n", "8"],
            "more than 4096 values",
        ),
        (
            &["--exec", "cat {}", "--values", "1", "--n", "0"],
            "nothing to sum",
        ),
        (
            &[
                "--exec",
                "cat {}",
                "--values",
                "1",
                "--n",
                "8",
                "--dtype",
                "f32",
                "--acc-dtype",
                "f16",
            ],
            "cannot hold",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["sweep"];
        all.extend_from_slice(args);
        let o = fprev(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

#[test]
fn a_program_that_fails_at_one_value_is_named_with_that_value() {
    // sums in order, but exits at once for value 3
    let cmd = "test {} -eq 3 && exit 7; while read -r l; do echo \"$l\" | \
        awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf \"%.17g\\n\", s }'; done";
    let o = fprev(&[
        "sweep", "--exec", cmd, "--values", "1..5", "--n", "8", "--dtype", "f64", "--label",
        "rows", "--grace", "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("at rows = 3: "), "{}", stderr(&o));
    assert!(stderr(&o).contains("exited"), "{}", stderr(&o));
}

#[test]
fn a_built_in_product_is_swept_over_its_rows_and_agrees_with_reveal() {
    let o = fprev(&[
        "sweep",
        "matrixmultiply-gemm",
        "--values",
        "1..5",
        "--n",
        "64",
        "--cols",
        "4",
        "--format",
        "text",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut sizes = 0;
    // each range's last value, revealed on its own
    for (first, last, tree) in text_ranges(&out, "rows") {
        sizes += last - first + 1;
        let r = fprev(&[
            "reveal",
            "matrixmultiply-gemm",
            "--rows",
            &last.to_string(),
            "--n",
            "64",
            "--cols",
            "4",
        ]);
        assert!(r.status.success(), "{}", stderr(&r));
        assert_eq!(stdout(&r).trim(), tree, "rows = {last}");
    }
    assert_eq!(sizes, 5, "{out}");
    let o = fprev(&[
        "sweep",
        "nalgebra-matmul",
        "--values",
        "1,2,4",
        "--n",
        "32",
        "--cols",
        "4",
        "--label",
        "M",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("M = 1"), "{}", stdout(&o));
}

#[test]
fn built_in_sweeps_refuse_what_they_cannot_sweep() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["iter-sum", "--values", "1..3", "--n", "8"],
            "no parameter to sweep",
        ),
        (
            &["no-such", "--values", "1", "--n", "8"],
            "no built-in target \"no-such\"",
        ),
        (&["--values", "1", "--n", "8"], "name a built-in target"),
        (
            &[
                "matrixmultiply-gemm",
                "--values",
                "1",
                "--n",
                "8",
                "--dtype",
                "f16",
            ],
            "pass --dtype f32 or f64",
        ),
        (
            &["rayon-sum", "--values", "1", "--n", "8", "--cols", "2"],
            "--cols applies",
        ),
        (
            &["rayon-sum", "--values", "0", "--n", "8"],
            "a pool of 0 threads",
        ),
        (
            &["rayon-sum", "--values", "100000", "--n", "8"],
            "a pool of 100000 threads: at most 1024",
        ),
        (
            &[
                "--exec", "cat {}", "--values", "1", "--n", "8", "--cols", "2",
            ],
            "--cols applies",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["sweep"];
        all.extend_from_slice(args);
        let o = fprev(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn lengths_sweep_n_of_a_program_and_k_of_a_product() {
    // the peer sums its n values in two halves from n = 4 on: an odd n grows the even
    // n before it by one value (its halves cut to n - 1 are n - 1's halves), an even n
    // moves the split
    let o = fprev(&[
        "sweep",
        "--exec",
        BATCHED,
        "--values",
        "4..10",
        "--lengths",
        "--dtype",
        "f64",
        "--format",
        "text",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let ranges: Vec<&str> = out.lines().collect();
    let want: Vec<String> = [(4, 5), (6, 7), (8, 9)]
        .iter()
        .map(|&(first, last)| format!("n = {first}..{last}: {}", halves(last)))
        .chain(std::iter::once(format!("n = 10: {}", halves(10))))
        .collect();
    assert_eq!(ranges, want, "{out}");
    assert!(stderr(&o).contains("length = the value"), "{}", stderr(&o));

    // k of a built-in product: each range's tree is what `fprev reveal` gives at its
    // last k
    let o = fprev(&[
        "sweep",
        "matrixmultiply-gemm",
        "--values",
        "12,16,24,40",
        "--lengths",
        "--rows",
        "2",
        "--format",
        "text",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut sizes = 0;
    for (_, last, tree) in text_ranges(&out, "k") {
        let last = last.to_string();
        sizes += 1;
        let r = fprev(&[
            "reveal",
            "matrixmultiply-gemm",
            "--rows",
            "2",
            "--n",
            &last,
            "--cols",
            "1",
        ]);
        assert!(r.status.success(), "{}", stderr(&r));
        assert_eq!(stdout(&r).trim(), tree, "k = {last}");
    }
    assert!(sizes >= 1, "{out}");

    for (args, says) in [
        (
            &["rayon-sum", "--values", "8,16", "--lengths"][..],
            "--lengths sweeps k",
        ),
        (
            &[
                "matrixmultiply-gemm",
                "--values",
                "8",
                "--lengths",
                "--n",
                "8",
            ][..],
            "--n",
        ),
        (
            &["matrixmultiply-gemm", "--values", "8", "--rows", "2"][..],
            "--lengths",
        ),
    ] {
        let mut all = vec!["sweep"];
        all.extend_from_slice(args);
        let o = fprev(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// A text-protocol peer in sh and awk that sums its n values in f64 in two halves, the
/// first in order, the second from its last value back: no order model has it. (`{}`,
/// the length, is a comment: a sweep needs it.)
const HALF_REVERSED: &str = "while read -r l; do echo \"$l\" | awk '{ \
    h = int(NF / 2); a = 0; for (i = 1; i <= h; i++) a += $i; \
    b = 0; for (i = NF; i > h; i--) b += $i; \
    printf \"%.17g\\n\", (h == 0) ? b : a + b }'; done # n = {}";

#[test]
fn a_sweep_over_lengths_reads_as_order_models() {
    // in order below 4 values, two halves from 4 on: rayon's halving on one thread
    // from 5 values on, one run before it
    let o = fprev(&[
        "sweep",
        "--exec",
        BATCHED,
        "--values",
        "1..12",
        "--lengths",
        "--dtype",
        "f64",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("n = 1..4: fprev-model/1 "), "{out}");
    assert_eq!(
        lines[2],
        "n = 5..12: fprev-model/1 rayon-halving threads=1 type=f64"
    );
    assert!(
        lines[3].starts_with("  rayon's par_iter().sum() on 1 thread"),
        "{out}"
    );

    // one model over every length, the ranges too with --ranges
    let o = fprev(&[
        "sweep",
        "--exec",
        BATCHED,
        "--values",
        "4..12",
        "--lengths",
        "--dtype",
        "f64",
        "--ranges",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(
            "n = 4..12: one order model, fprev-model/1 rayon-halving threads=1 type=f64\n  "
        ),
        "{out}"
    );
    assert!(
        out.contains("\nn = 4..5: pairwise over 5\nn = 6..7: "),
        "{out}"
    );
    let o = fprev(&[
        "sweep",
        "--exec",
        BATCHED,
        "--values",
        "4..12",
        "--lengths",
        "--dtype",
        "f64",
        "--format",
        "json",
    ]);
    assert!(
        stdout(&o).contains(
            ",\"model\":\"fprev-model/1 rayon-halving threads=1 type=f64\",\"pieces\":[]}"
        ),
        "{}",
        stdout(&o)
    );

    // no model: why, then the ranges as before
    let o = fprev(&[
        "sweep",
        "--exec",
        HALF_REVERSED,
        "--values",
        "1..12",
        "--lengths",
        "--dtype",
        "f64",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with(
            "no order model gives every length, nor 8 or fewer runs of them; closest: "
        ),
        "{out}"
    );
    assert!(
        out.lines().nth(1).is_some_and(|l| l.starts_with("n = 1..")),
        "{out}"
    );
    let o = fprev(&[
        "sweep",
        "--exec",
        HALF_REVERSED,
        "--values",
        "1..12",
        "--lengths",
        "--dtype",
        "f64",
        "--format",
        "json",
    ]);
    assert!(
        stdout(&o).contains(",\"model\":null,\"pieces\":[]}"),
        "{}",
        stdout(&o)
    );
}
