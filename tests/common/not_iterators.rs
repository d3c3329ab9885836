//! `.sum()` receivers that are not iterators, for the dispatch tests of both attributes:
//! the rewrite must hand them back so that their own `sum` runs, bit for bit.

/// A collection with a `sum(&self)` of its own that adds pairwise. It iterates
/// (`&Pairwise: IntoIterator`) but is no iterator itself.
pub struct Pairwise(pub Vec<f64>);

impl Pairwise {
    pub fn sum(&self) -> f64 {
        fn tree(x: &[f64]) -> f64 {
            match x.len() {
                0 => 0.0,
                1 => x[0],
                n => tree(&x[..n / 2]) + tree(&x[n / 2..]),
            }
        }
        tree(&self.0)
    }
}

impl<'a> IntoIterator for &'a Pairwise {
    type Item = &'a f64;
    type IntoIter = std::slice::Iter<'a, f64>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A collection whose `sum` consumes it and adds from the back.
pub struct Consumed(pub Vec<f64>);

impl Consumed {
    pub fn sum(self) -> f64 {
        self.0.into_iter().rev().fold(0.0, |a, b| a + b)
    }
}
