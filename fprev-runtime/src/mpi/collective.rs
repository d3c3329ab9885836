//! Collectives as targets: the leaves are the ranks, and each probe runs the real
//! `MPI_Allreduce` or `MPI_Reduce` once.
//!
//! Rank 0 drives: for every input it broadcasts a command word and the input (one value
//! per rank); rank `r` puts value `r` at the probed element of its message, the rest of
//! its message being fixed random values (they set the message size, which the library's
//! algorithm choice depends on), and all ranks enter the collective. The answer is the
//! probed element of the result on rank 0. A stop word ends the other ranks' loop.

use ::mpi::collective::SystemOperation;
use ::mpi::traits::{Communicator, CommunicatorCollectives, Root};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{MpiError, MpiFloat};
use crate::black_box::{Target, TargetError};
use crate::ops::{Reduction, ReductionShape};

/// Which collective a [`CollectiveTarget`] runs.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collective {
    /// `MPI_Allreduce` with `MPI_SUM`; the answer is rank 0's copy of the result.
    Allreduce,
    /// `MPI_Reduce` with `MPI_SUM` to rank 0.
    Reduce,
}

/// Command words broadcast by rank 0.
const STOP: u64 = 0;
const RUN: u64 = 1;
/// Every element probed at once: a `count x ranks` matrix follows.
const RUN_ALL: u64 = 2;

/// A collective reduction as a [`Target`] whose leaves are the ranks of a communicator.
///
/// Made by [`allreduce_target`] or [`reduce_target`] on every rank (it is collective:
/// every rank must make it, with the same arguments). Rank 0 is the driver: it passes
/// the target to [`Reveal::run_target`](crate::reveal::Reveal::run_target) (or calls it
/// directly) and then calls [`finish`](Self::finish); every other rank calls
/// [`serve`](Self::serve), which returns once rank 0 has finished. Dropping the driver
/// without `finish` finishes too, so the other ranks are never left waiting.
///
/// It is also a [`Reduction`] with one lane per element of the message (`k` = ranks),
/// so [`ElementReveal`](crate::ops::ElementReveal) on rank 0 groups the elements by the
/// order they are summed in (ring and Rabenseifner allreduces start each segment's chain
/// at another rank); see [`allreduce_target`].
pub struct CollectiveTarget<'c, C: Communicator, T: MpiFloat> {
    comm: &'c C,
    collective: Collective,
    element: usize,
    rank: usize,
    ranks: usize,
    send: Vec<T>,
    recv: Vec<T>,
    probe: Vec<T>,
    /// Every element's values across the ranks, element after element (`RUN_ALL`).
    matrix: Vec<T>,
    finished: bool,
}

/// A target that reveals the order in which `MPI_Allreduce(MPI_SUM)` adds the ranks'
/// values, for element `element` of a `count`-element message of `T` (`f32` or `f64`).
///
/// Collective: call it on every rank of `comm`, with the same arguments. `seed` draws
/// each rank's other elements. Revealing a library's order needs nothing else than
/// [`Reveal`](crate::reveal::Reveal) on rank 0:
///
/// ```no_run
/// use fprev::mpi::rsmpi::traits::Communicator;
///
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let mut target = fprev::mpi::allreduce_target::<_, f64>(&world, 1, 0, 7)?;
/// if world.rank() == 0 {
///     let report = fprev::Reveal::new(world.size() as usize).run_target(&mut target)?;
///     println!("{}", report.tree);
///     target.finish()?;
/// } else {
///     target.serve()?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn allreduce_target<C: Communicator, T: MpiFloat>(
    comm: &C,
    count: usize,
    element: usize,
    seed: u64,
) -> Result<CollectiveTarget<'_, C, T>, MpiError> {
    CollectiveTarget::new(comm, Collective::Allreduce, count, element, seed)
}

/// A target that reveals the order in which `MPI_Reduce(MPI_SUM)` to rank 0 adds the
/// ranks' values; used as [`allreduce_target`] is.
///
/// ```no_run
/// use fprev::mpi::rsmpi::traits::Communicator;
///
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let mut target = fprev::mpi::reduce_target::<_, f32>(&world, 1024, 0, 7)?;
/// if world.rank() == 0 {
///     let tree = fprev::Reveal::new(world.size() as usize).run_target(&mut target)?.tree;
///     println!("{}", tree.describe());
///     target.finish()?;
/// } else {
///     target.serve()?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn reduce_target<C: Communicator, T: MpiFloat>(
    comm: &C,
    count: usize,
    element: usize,
    seed: u64,
) -> Result<CollectiveTarget<'_, C, T>, MpiError> {
    CollectiveTarget::new(comm, Collective::Reduce, count, element, seed)
}

impl<'c, C: Communicator, T: MpiFloat> CollectiveTarget<'c, C, T> {
    fn new(
        comm: &'c C,
        collective: Collective,
        count: usize,
        element: usize,
        seed: u64,
    ) -> Result<Self, MpiError> {
        if count == 0 {
            return Err(MpiError::EmptyMessage);
        }
        if element >= count {
            return Err(MpiError::ElementOutOfRange { element, count });
        }
        if i32::try_from(count).is_err() {
            return Err(MpiError::TooLarge { count });
        }
        // rank and size of a valid communicator are never negative
        let rank = usize::try_from(comm.rank()).unwrap_or(0);
        let ranks = usize::try_from(comm.size()).unwrap_or(1);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(rank as u64);
        // uniform in [-1, 1) on 53 bits, then rounded to T
        let send = (0..count)
            .map(|_| T::from_f64_round((rng.next_u64() >> 11) as f64 * 2f64.powi(-52) - 1.0))
            .collect();
        Ok(CollectiveTarget {
            comm,
            collective,
            element,
            rank,
            ranks,
            send,
            recv: vec![T::ZERO; count],
            probe: vec![T::ZERO; ranks],
            matrix: Vec::new(),
            finished: false,
        })
    }

    /// Which collective this target runs.
    pub fn collective(&self) -> Collective {
        self.collective
    }

    /// Whether this rank drives the probes (rank 0) rather than [`serve`](Self::serve)s.
    pub fn is_driver(&self) -> bool {
        self.rank == 0
    }

    /// On every rank but 0: take part in each probe rank 0 sends, until it finishes.
    ///
    /// Refused on rank 0, which drives instead ([`MpiError::WrongRank`]).
    pub fn serve(mut self) -> Result<(), MpiError> {
        if self.is_driver() {
            return Err(MpiError::WrongRank {
                method: "serve",
                rank: self.rank,
            });
        }
        let root = self.comm.process_at_rank(0);
        loop {
            let mut command = STOP;
            root.broadcast_into(&mut command);
            match command {
                RUN => {
                    root.broadcast_into(&mut self.probe[..]);
                    self.run();
                }
                RUN_ALL => {
                    self.matrix.resize(self.send.len() * self.ranks, T::ZERO);
                    root.broadcast_into(&mut self.matrix[..]);
                    self.run_all();
                }
                _ => return Ok(()),
            }
        }
    }

    /// On rank 0: tell the other ranks that no probe follows, so their
    /// [`serve`](Self::serve) returns. Called by `Drop` when forgotten.
    pub fn finish(mut self) -> Result<(), MpiError> {
        if !self.is_driver() {
            return Err(MpiError::WrongRank {
                method: "finish",
                rank: self.rank,
            });
        }
        self.stop();
        Ok(())
    }

    fn stop(&mut self) {
        if self.is_driver() && !self.finished {
            self.finished = true;
            let mut command = STOP;
            self.comm.process_at_rank(0).broadcast_into(&mut command);
        }
    }

    /// Put this rank's probe value in its message and run the collective once.
    fn run(&mut self) {
        self.send[self.element] = self.probe[self.rank];
        self.enter();
    }

    /// Put this rank's column of the matrix in its message and run the collective once.
    fn run_all(&mut self) {
        for (v, row) in self
            .send
            .iter_mut()
            .zip(self.matrix.chunks_exact(self.ranks))
        {
            *v = row[self.rank];
        }
        self.enter();
    }

    fn enter(&mut self) {
        let sum = SystemOperation::sum();
        match self.collective {
            Collective::Allreduce => {
                self.comm
                    .all_reduce_into(&self.send[..], &mut self.recv[..], sum)
            }
            Collective::Reduce => {
                let root = self.comm.process_at_rank(0);
                if self.is_driver() {
                    root.reduce_into_root(&self.send[..], &mut self.recv[..], sum);
                } else {
                    root.reduce_into(&self.send[..], sum);
                }
            }
        }
    }
}

impl<C: Communicator, T: MpiFloat> Target<T> for CollectiveTarget<'_, C, T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.check_driver("Target::call")?;
        if x.len() != self.ranks {
            let e = MpiError::WrongLength {
                ranks: self.ranks,
                got: x.len(),
            };
            return Err(TargetError::new(e.to_string()));
        }
        let root = self.comm.process_at_rank(0);
        let mut command = RUN;
        root.broadcast_into(&mut command);
        self.probe.copy_from_slice(x);
        root.broadcast_into(&mut self.probe[..]);
        self.run();
        Ok(self.recv[self.element])
    }
}

/// Every element at once: lane `j` holds element `j`'s values on ranks `0..P`, and
/// output `j` is element `j` of the result on rank 0. Only rank 0 evaluates.
///
/// ```no_run
/// use fprev::mpi::rsmpi::traits::Communicator;
///
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let mut target = fprev::mpi::allreduce_target::<_, f64>(&world, 64, 0, 7)?;
/// if world.rank() == 0 {
///     let orders = fprev::ops::ElementReveal::new().run(&mut target)?;
///     print!("{orders}");
///     target.finish()?;
/// } else {
///     target.serve()?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl<C: Communicator, T: MpiFloat> Reduction<T> for CollectiveTarget<'_, C, T> {
    type Input = T;

    fn shape(&self) -> ReductionShape {
        ReductionShape {
            lanes: self.send.len(),
            k: self.ranks,
            outputs: 1,
        }
    }

    fn eval(&mut self, input: &[T], out: &mut [T]) -> Result<(), TargetError> {
        self.check_driver("Reduction::eval")?;
        let count = self.send.len();
        if input.len() != count * self.ranks || out.len() != count {
            return Err(TargetError::new(format!(
                "{} inputs and {} outputs for {count} elements of {} ranks: count x ranks \
                 inputs, one output per element",
                input.len(),
                out.len(),
                self.ranks
            )));
        }
        let root = self.comm.process_at_rank(0);
        let mut command = RUN_ALL;
        root.broadcast_into(&mut command);
        self.matrix.clear();
        self.matrix.extend_from_slice(input);
        root.broadcast_into(&mut self.matrix[..]);
        self.run_all();
        out.copy_from_slice(&self.recv);
        Ok(())
    }
}

impl<C: Communicator, T: MpiFloat> CollectiveTarget<'_, C, T> {
    /// Refuse a driver's call on another rank, or after [`finish`](Self::finish).
    fn check_driver(&self, method: &'static str) -> Result<(), TargetError> {
        if !self.is_driver() {
            let e = MpiError::WrongRank {
                method,
                rank: self.rank,
            };
            return Err(TargetError::new(e.to_string()));
        }
        if self.finished {
            return Err(TargetError::new(
                "the collective target was finished: the other ranks stopped serving",
            ));
        }
        Ok(())
    }
}

impl<C: Communicator, T: MpiFloat> Drop for CollectiveTarget<'_, C, T> {
    fn drop(&mut self) {
        self.stop();
    }
}
