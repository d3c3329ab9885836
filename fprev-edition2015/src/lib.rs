//! An edition-2015 crate using fprev's attributes: in 2015 a path `::core::...` starts at
//! the crate root, so expansions must reach `core` through `::fprev::__private`, and the
//! paths they place at the user's code must still resolve in the macro's edition: this
//! crate has no `extern crate fprev;` (published 2015 crates such as rkm do not either),
//! so a generated `::fprev` that resolved in 2015 would find nothing at the crate root.
//! Compiling this crate is most of the test; the tests below check the behaviour too.

/// A loop reduction, an iterator reduction and two additive folds (one block-bodied), with the user's own
/// parentheses around terms and receivers (which must not turn into `unused_parens`).
#[fprev::scramble]
#[allow(clippy::assign_op_pattern)] // the `s = s + e` form is under test
pub fn three_sums(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v.iter() {
        s = s + (x * 2.0); // the `x = x + e` form, parenthesised on purpose
    }
    let t: f64 = v.iter().map(|x| x * 3.0).sum();
    let n = v.len();
    let u = (0..n).fold(0.0, |a, i| a + (v[i] * 4.0));
    let w = v.iter().fold(0.0, |a, x| {
        let d = x * 5.0;
        a + d
    });
    s + t + u + w
}

/// Chain counting in the same crate.
#[fprev::accumulator]
pub fn counted(v: &[f64]) -> f64 {
    let mut s = 0.0;
    for x in v.iter() {
        s += *x;
    }
    s
}

#[cfg(test)]
mod tests {
    // the tests name fprev in `use` paths, which in 2015 start at the crate root (or
    // here, at a module's own `extern crate`); the attributes above need neither
    extern crate fprev;
    use self::fprev::scramble::{with_config, ScrambleConfig, Shuffle};

    #[test]
    fn expansions_run_in_edition_2015() {
        let v: Vec<f64> = (0..100).map(|i| i as f64).collect();
        let plain = with_config(&ScrambleConfig::off(), || super::three_sums(&v));
        assert_eq!(plain, 14.0 * 4950.0);
        let on = ScrambleConfig::off()
            .shuffle(Some(Shuffle::FisherYates))
            .shapes(true)
            .seed(3);
        // Whole numbers: every shape gives the same exact sum.
        assert_eq!(with_config(&on, || super::three_sums(&v)), plain);
        assert_eq!(super::counted(&v), 4950.0);
        let sites = self::fprev::scramble::sites();
        assert_eq!(
            sites
                .iter()
                .filter(|s| s.label.contains("three_sums") && s.reached > 0)
                .count(),
            4,
            "{sites:?}"
        );
    }
}

/// Closures that add into the function's accumulators: before edition 2021 a closure
/// captures whole variables, so each counter must be a local of its own.
#[fprev::accumulator]
pub fn closures_2015(v: &[f64]) -> (f64, f64) {
    let mut s = 0.0;
    let mut t = 0.0;
    {
        // Two closures alive at once, each adding into its own accumulator.
        let mut add_s = |x: f64| s += x;
        let mut add_t = |x: f64| t += x * 2.0;
        for x in v {
            add_s(*x);
            add_t(*x);
        }
    }
    s += t;
    (s, t)
}

#[cfg(test)]
mod closure_tests {
    extern crate fprev;

    #[test]
    fn accumulating_closures_compile_and_count() {
        assert_eq!(super::closures_2015(&[1.0, 2.0]), (9.0, 6.0));
        let report = self::fprev::chains::report();
        assert!(report.site("closures_2015").is_some(), "{}", report);
    }
}
