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
pub mod target;
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
