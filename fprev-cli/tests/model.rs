//! `fprev model`, run as users run it: built-in sums and sh/awk peers whose order over
//! the length is known.

mod common;
use common::{fprev, scratch, stderr, stdout};

/// A text-protocol peer in sh and awk that sums each line in order, in f64. One awk per
/// line, since mawk reads ahead of what it has answered.
const IN_ORDER: &str = "while read -r l; do echo \"$l\" | awk '{ \
    a = 0; for (i = 1; i <= NF; i++) a += $i; printf \"%.17g\\n\", a }'; done";

/// The first half in order, the second half from its last value back: no family's order.
const HALF_REVERSED: &str = "while read -r l; do echo \"$l\" | awk '{ \
    h = int(NF / 2); a = 0; for (i = 1; i <= h; i++) a += $i; \
    b = 0; for (i = NF; i > h; i--) b += $i; \
    printf \"%.17g\\n\", (h == 0) ? b : a + b }'; done";

#[test]
fn a_builtin_sum_fits_its_model() {
    let o = fprev(&["model", "unrolled4", "--sizes", "1..64", "--dtype", "f64"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(
        out.lines().next(),
        Some("fprev-model/1 unrolled lanes=4 combine=pairwise type=f64"),
        "{out}"
    );
    assert!(out.contains("proved at 8 sizes it did not see"), "{out}");
}

#[test]
fn a_program_fits_and_its_code_is_written_to_a_file() {
    let path = scratch("model", "sum.rs");
    let path_text = path.to_string_lossy().into_owned();
    let o = fprev(&[
        "model", "--exec", IN_ORDER, "--sizes", "1..24", "--dtype", "f64", "--reach", "2",
        "--proofs", "4", "--emit", "rust", "--out", &path_text,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("fprev-model/1 sequential type=f64\n"));
    let code = std::fs::read_to_string(&path).unwrap();
    assert!(code.contains("pub fn sum(x: &[f64]) -> f64"), "{code}");
}

#[test]
fn an_order_no_family_has_is_refused_with_the_sizes_that_disagree() {
    let o = fprev(&[
        "model",
        "--exec",
        HALF_REVERSED,
        "--sizes",
        "1..16",
        "--dtype",
        "f64",
        "--reach",
        "2",
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("no order model reproduces"), "{err}");
    assert!(err.contains("sequential: disagrees at n = "), "{err}");
}

#[test]
fn bad_arguments_are_refused() {
    let o = fprev(&["model", "iter-sum", "--sizes", "5..1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--sizes"), "{}", stderr(&o));
    let o = fprev(&["model", "no-such-sum", "--sizes", "1..4"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no built-in sum named"),
        "{}",
        stderr(&o)
    );
    let o = fprev(&["model", "iter-sum", "--sizes", "1..4", "--threads", "2"]);
    assert!(!o.status.success());
}
