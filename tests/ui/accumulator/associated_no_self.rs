// An associated function that does not name `Self` cannot be told apart from a free one
// by the attribute: its registration names it by a path from the module, which rustc
// does not find: the fix is `reveal(.., path = "V::total")`. (With a free `total` in the
// module the bare name finds that one instead; revealing the registration then fails
// with `RevealError::NotTheRegisteredFunction`: tests/registry.rs, `twins`.)
struct V;

impl V {
    #[fprev::accumulator(reveal(op = "sum", sizes = [8]))]
    fn total(x: &[f64]) -> f64 {
        x.iter().sum()
    }
}

fn main() {
    let _ = V::total(&[]);
}
