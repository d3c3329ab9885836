//! MPI collectives: reveal the order in which `MPI_Allreduce` and `MPI_Reduce` add the
//! ranks' values, and sum across ranks exactly so that the order stops mattering.
//!
//! The communication library picks a reduction algorithm at run time, from the message
//! size, the rank count and the topology, so the same program can add its ranks'
//! contributions in different orders (and give different bits) from one run to the next.
//!
//! - [`allreduce_target`] and [`reduce_target`]: a [`Target`](crate::target::Target) whose
//!   leaves are the ranks. Rank 0 drives [`Reveal`](crate::reveal::Reveal) with it; every other
//!   rank calls [`CollectiveTarget::serve`], contributing its value of each probe to the
//!   real collective. `fprev reveal mpi-allreduce` (the `fprev-cli` package, built with
//!   its `mpi` feature) launches the ranks under `mpirun` and does this for you.
//! - [`exact_allreduce_sum`]: an element-wise allreduce whose result is the exact sum
//!   rounded once, the same bits for every rank count, algorithm and rank placement.
//! - [`scrambled`] and [`scrambled_from_env`]: the ranks of a communicator permuted from
//!   a seed shown as a replay token, to test how much a result depends on placement.
//!
//! Only with the `mpi` cargo feature, which needs an MPI library (Open MPI or MPICH) and
//! libclang at build time. The `mpi` crate is re-exported as [`rsmpi`], so that code can
//! name the version fprev was built with.

mod collective;
mod error;
mod exact_sum;
mod scrambled;
mod window;

pub use ::mpi as rsmpi;
pub use collective::{allreduce_target, reduce_target, Collective, CollectiveTarget};
pub use error::MpiError;
pub use exact_sum::exact_allreduce_sum;
pub use scrambled::{scrambled, scrambled_from_env, ScrambledComm};

/// A float type that travels through MPI and is probed by fprev: `f32` and `f64`.
///
/// Sealed: these are the two types MPI's built-in `MPI_SUM` adds natively, and the two
/// that the exact accumulators round to.
pub trait MpiFloat: crate::float::ProbeFloat + rsmpi::traits::Equivalence + sealed::Sealed {}

impl MpiFloat for f32 {}
impl MpiFloat for f64 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}
