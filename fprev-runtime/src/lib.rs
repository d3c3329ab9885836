//! Runtime of [fprev](https://docs.rs/fprev): everything the `fprev` facade re-exports.
//!
//! One module per concept: summation trees ([`tree`]), the float types probes are made of
//! ([`float`]), black-box targets ([`target`]), the revelation algorithms ([`reveal`](mod@reveal)),
//! operation adapters ([`ops`]), scrambled iteration ([`scramble`]), the schedule-entropy
//! amplifier ([`amplify`](mod@amplify)), accumulation-chain counting ([`chains`]), registered functions
//! ([`registry`]), orders across sizes ([`sweep`](mod@sweep)), orders as functions of n
//! ([`model`]), exact arithmetic ([`exact`]) and the GPU backend ([`cuda`]).

pub mod amplify;
mod at_exit;
pub mod chains;
pub mod cuda;
pub mod exact;
pub mod float;
pub mod fused;
pub mod model;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod ops;
pub mod orders;
pub mod picture;
mod random;
pub mod registry;
pub mod reveal;
pub mod scramble;
pub mod sweep;
// The code of `target` lives in `black_box.rs` and `black_box/`, named for what they hold:
// tools and ignore rules take a folder named `target` for build output. The public path
// stays `fprev::target`, which users and issues name.
mod black_box;
pub mod target {
    //! Black-box targets: whatever accumulation fprev probes.
    //!
    //! The revelation engine asks for *batches* of independent probes that share one
    //! background input (a unit or a zero at every position) and differ only in where `+M`
    //! and `-M` go. A plain `f(&[T]) -> T` answers them one call at a time from one reused
    //! buffer; a thread-safe function answers them in parallel; a matrix product can answer
    //! one probe per output row in a single call (see [`crate::ops`]).

    pub use crate::black_box::*;
}
pub mod tree;
mod wrap;

pub use float::ProbeFloat;
pub use reveal::{reveal, Algorithm, Reveal, RevealError, RevealReport};
pub use target::Target;
pub use tree::{SumTree, TreeDiff, TreeStats};
// Re-exports added by the other modules go below this line (one line each).
pub use amplify::{amplify, AmplifyConfig, AmplifyReport, Floats, Stage};
pub use chains::Tracked;
pub use cuda::CudaError;
pub use registry::{check_registered, check_registered_allow_empty, registered};
pub use scramble::{launch, Dim3, ReplayToken, ScrambleConfig, Shuffle, ThreadCtx};
pub use sweep::{sweep, sweep_lengths, Sweep, SweepError};
