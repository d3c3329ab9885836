//! What a site is in the source: the kind of expression that accumulates.

/// What kind of expression a site is.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccumulationKind {
    /// A local variable accumulated into (`s += e`, `s = s + e`, `#[acc] let s`): its
    /// chains follow Defour's rule through every assignment to it in the function.
    Variable,
    /// An indexed, field or dereferenced place (`c[i] += e`, `*out += e`): chains are
    /// kept per address (see [`PlaceChains`](super::frame::PlaceChains)).
    Place,
    /// `.sum()` or `.fold(init, |a, b| a + b)`: one chain of as many additions as items.
    Iterator,
}

impl std::fmt::Display for AccumulationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AccumulationKind::Variable => "variable",
            AccumulationKind::Place => "place",
            AccumulationKind::Iterator => "iterator",
        })
    }
}
