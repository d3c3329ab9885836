//! A communicator whose ranks are permuted from a seed: run a distributed computation
//! on it to see how much its result depends on which process holds which data.

use ::mpi::topology::{Color, SimpleCommunicator};
use ::mpi::traits::{Communicator, Root};

use crate::scramble::config::{vars, ReplayToken};
use crate::scramble::rng::{permutation, stream};
use crate::scramble::Shuffle;

/// The scramble site of rank permutations: their draws never coincide with a reduction's.
const SITE: u64 = 0x6d70_695f_7261_6e6b;

/// A communicator with the ranks of another one permuted from a seed.
///
/// Process `p` of the parent gets rank [`rank_of`](Self::rank_of)`(p)`. A computation
/// that hands out work by rank (rank `r` holds shard `r`, the root of a reduction is
/// rank 0) then runs with the shards placed differently, and a collective's algorithm
/// combines them in another order: a result whose bits change from one seed to another
/// depends on rank placement. The seed is shown as a [`ReplayToken`]; `FPREV_SEED` set
/// to it gives the same permutation again ([`scrambled_from_env`]).
///
/// ```no_run
/// use fprev::mpi::rsmpi::traits::Communicator;
///
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let s = fprev::mpi::scrambled(&world, 7);
/// let me = world.rank() as usize;
/// assert_eq!(s.rank_of(me), Some(s.comm().rank() as usize));
/// if world.rank() == 0 {
///     eprintln!("ranks {} (FPREV_SEED={})", s.describe(), s.token());
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ScrambledComm {
    comm: SimpleCommunicator,
    token: ReplayToken,
    ranks: Vec<usize>,
}

/// The communicator `comm` with its ranks permuted from `seed` (a [`ReplayToken`]'s
/// seed). Collective: every process of `comm` calls it with the same seed.
///
/// ```no_run
/// use fprev::mpi::rsmpi::traits::Communicator;
///
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let scrambled = fprev::mpi::scrambled(&world, 42);
/// // shard `r` of the data now lives on another process than with `world`
/// let shard = scrambled.comm().rank();
/// println!("process {} holds shard {shard} ({})", world.rank(), scrambled.token());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scrambled<C: Communicator>(comm: &C, seed: u64) -> ScrambledComm {
    let size = usize::try_from(comm.size()).unwrap_or(1);
    let ranks = permutation(Shuffle::FisherYates, size, &mut stream(seed, SITE, 0));
    let me = usize::try_from(comm.rank()).unwrap_or(0);
    // the key orders the new ranks; one colour keeps every process
    let key = i32::try_from(ranks[me]).unwrap_or(i32::MAX);
    let comm = comm
        .split_by_color_with_key(Color::with_value(0), key)
        .unwrap_or_else(|| unreachable!("a process with a colour is in the new communicator"));
    ScrambledComm {
        comm,
        token: ReplayToken::new(seed),
        ranks,
    }
}

/// [`scrambled`] with the seed of `FPREV_SEED` (a replay token or a number), or a fresh
/// one drawn on rank 0 and shared, which rank 0 prints on stderr as a replay command.
/// Collective, as [`scrambled`] is.
///
/// ```no_run
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let scrambled = fprev::mpi::scrambled_from_env(&universe.world())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scrambled_from_env<C: Communicator>(
    comm: &C,
) -> Result<ScrambledComm, crate::scramble::TokenError> {
    let mut seed = match crate::scramble::config::seed_var() {
        Some((_, token)) => token?.seed,
        None => crate::scramble::config::random_seed(),
    };
    // every rank must draw the same permutation: rank 0's seed wins
    comm.process_at_rank(0).broadcast_into(&mut seed);
    let s = scrambled(comm, seed);
    if comm.rank() == 0 {
        eprintln!(
            "fprev: ranks permuted ({}); replay: {}={}",
            s.describe(),
            vars::FPREV_SEED,
            s.token
        );
    }
    Ok(s)
}

impl ScrambledComm {
    /// The permuted communicator: pass it wherever the parent was used.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// The token that gives this permutation again (`FPREV_SEED`).
    pub fn token(&self) -> ReplayToken {
        self.token
    }

    /// The rank in the permuted communicator of the parent's rank `parent`.
    pub fn rank_of(&self, parent: usize) -> Option<usize> {
        self.ranks.get(parent).copied()
    }

    /// The permutation in words: `0->3 1->0 ...` (parent rank -> new rank).
    pub fn describe(&self) -> String {
        let pairs: Vec<String> = self
            .ranks
            .iter()
            .enumerate()
            .map(|(p, r)| format!("{p}->{r}"))
            .collect();
        pairs.join(" ")
    }
}
