//! Scrambled iteration: visit loop items, parallel chunks and kernel indices in a random
//! but replayable order, so that order-dependent floating-point results show up in tests.
//!
//! This is Defour's *scheduling-entropy amplification* done in software: the legal
//! orders of a computation are explored on purpose instead of waiting for the scheduler
//! to stumble on them. The pieces:
//!
//! - [`Shuffle`] and the hand-written permutations in [`rng`], drawn from a pinned
//!   [`ScrambleRng`] (ChaCha8) with unbiased bounded draws;
//! - [`ScrambleConfig`]: whether scrambling is on, with which shuffle and seed, read from
//!   the `FPREV_*` variables listed in [`vars`];
//! - [`ReplayToken`]: algorithm version + seed, printed with every randomized finding;
//! - [`launch()`]: a CPU model of a GPU kernel launch whose block and thread indices are
//!   permuted per launch;
//! - [`entropy`]: records the orders actually executed, to measure how many distinct
//!   orders a campaign covered.
//!
//! - [`reduce`]: reassociated float reductions, the default of `#[fprev::scramble]`:
//!   loops keep their order, a reduction's terms are combined in a drawn [`CombineShape`];
//! - [`sites()`] and [`Coverage`]: which sites were compiled in and reached, and which
//!   loops were left alone and why.
//!
//! The `#[fprev::scramble]` attribute rewrites a function's reductions (and declared
//! loops and rayon chains) to go through the hidden [`private`] module. A reduction draws
//! from a stream keyed by (run seed, site): one seed is one consistent other platform
//! ([`Vary`]). A declared loop or rayon chain draws from (run seed, thread context, site,
//! invocation within that context). Either way one seed replays a run alone or inside a
//! whole test suite.
//!
//! ```
//! use fprev_runtime::scramble::{with_config, ScrambleConfig, Shuffle};
//!
//! let plain: f32 = (0..1000).map(|i| 1.0 / (i as f32 + 1.0)).sum();
//! let off = with_config(&ScrambleConfig::off(), || plain);
//! assert_eq!(off.to_bits(), plain.to_bits());
//! ```

pub(crate) mod call_site;
pub mod config;
mod context;
pub mod entropy;
pub mod launch;
#[doc(hidden)]
pub mod private;
mod reached_by;
pub mod reduce;
mod replay;
pub mod rng;
mod scrambler;
pub(crate) mod session;
mod sites;
pub(crate) mod state;

pub use call_site::{CallSite, SiteKind};
#[doc(hidden)]
pub use config::{fuzz_cases, property_seed, proptest_cases};
pub use config::{vars, Level, ReplayToken, ScrambleConfig, TokenError, Vary, ALGORITHM_VERSION};
pub use launch::{launch, Dim3, ThreadCtx};
pub use reduce::CombineShape;
pub use rng::{permutation, shuffle, ScrambleRng};
pub use session::{current_config, with_config};
pub use sites::{sites, Coverage, LeftAlone, SiteReport};

/// The shuffle algorithm. It is part of the replay token: a variant never changes what
/// it draws without a bump of [`ALGORITHM_VERSION`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shuffle {
    /// Fisher-Yates (Durstenfeld's in-place form): uniform over all `n!` orders.
    FisherYates,
    /// Sattolo's variant: uniform over the `(n-1)!` orders that form a single cycle, so no
    /// index keeps its place. It is *not* uniform over all permutations: the identity,
    /// for one, is never drawn.
    Sattolo,
    /// The identity order, through the scrambled code path (to measure its overhead and
    /// to check that the path itself changes nothing).
    Identity,
}

impl Shuffle {
    /// The name used by `FPREV_SCRAMBLE` and `#[scramble(shuffle = "...")]`.
    pub const fn name(self) -> &'static str {
        match self {
            Shuffle::FisherYates => "fisher-yates",
            Shuffle::Sattolo => "sattolo",
            Shuffle::Identity => "identity",
        }
    }

    /// Parses a name produced by [`Shuffle::name`].
    pub fn from_name(name: &str) -> Option<Shuffle> {
        match name {
            "fisher-yates" => Some(Shuffle::FisherYates),
            "sattolo" => Some(Shuffle::Sattolo),
            "identity" => Some(Shuffle::Identity),
            _ => None,
        }
    }
}

impl std::fmt::Display for Shuffle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
