//! What a site is in the source: where it is, and the kind of expression that accumulates.

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

/// Where an accumulation site is and what it accumulates: what a [`Site`](super::Site)
/// is built with, and what its counts ([`SiteChains`](super::SiteChains)) name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SiteSource {
    /// `module::path::function`.
    pub function: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Line of the site.
    pub line: u32,
    /// Column of the site.
    pub column: u32,
    /// The site's source text.
    pub expr: &'static str,
    /// What kind of site it is.
    pub kind: AccumulationKind,
}
