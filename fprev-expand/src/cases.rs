//! Seeded draws for the property tests of both attributes: a failing case prints its
//! seed, and `FPREV_SEED=<seed> FPREV_PROPTEST_CASES=1` reruns it alone.

/// SplitMix64: a few lines, no dependency, enough to draw statements.
pub(crate) struct SplitMix(pub u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn pick<'a>(&mut self, options: &[&'a str]) -> &'a str {
        options[self.below(options.len())]
    }
}

/// The first seed and the number of cases: `FPREV_SEED` (default 1) and
/// `FPREV_PROPTEST_CASES` (default 400), read by the runtime's readers of both.
pub(crate) fn cases() -> (u64, u64) {
    let cases = fprev_runtime::scramble::proptest_cases(400);
    let first = fprev_runtime::scramble::property_seed(1);
    (first, cases)
}
