//! Why an MPI target or the exact allreduce refused its arguments.

/// A refused argument of [`allreduce_target`](super::allreduce_target),
/// [`reduce_target`](super::reduce_target) or
/// [`exact_allreduce_sum`](super::exact_allreduce_sum): the collective is never entered,
/// so no rank is left waiting in it because of this rank.
///
/// ```
/// use fprev::mpi::MpiError;
/// let e = MpiError::ElementOutOfRange { element: 4, count: 4 };
/// assert!(e.to_string().contains("--element"));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MpiError {
    /// The message has no element: a collective of zero values has no order.
    EmptyMessage,
    /// The probed element is not in the message.
    ElementOutOfRange {
        /// The element asked for.
        element: usize,
        /// Elements in the message.
        count: usize,
    },
    /// More elements than MPI counts (a C `int`) can describe in one call.
    TooLarge {
        /// Elements asked for.
        count: usize,
    },
    /// A method of the driving rank (0) was called on another rank, or the reverse.
    WrongRank {
        /// What was called.
        method: &'static str,
        /// This process's rank.
        rank: usize,
    },
    /// The ranks passed slices of different lengths to
    /// [`exact_allreduce_sum`](super::exact_allreduce_sum).
    UnequalLengths {
        /// This rank's length.
        len: usize,
        /// The shortest length of any rank.
        shortest: u64,
        /// The longest length of any rank.
        longest: u64,
    },
    /// A probe whose length is not the number of ranks.
    WrongLength {
        /// The number of ranks (the leaves of the tree).
        ranks: usize,
        /// The length given.
        got: usize,
    },
}

impl std::fmt::Display for MpiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MpiError::EmptyMessage => f.write_str("--count 0: the message has no element"),
            MpiError::ElementOutOfRange { element, count } => write!(
                f,
                "--element {element} is not in a message of {count} elements (--count): \
                 elements are numbered from 0"
            ),
            MpiError::TooLarge { count } => write!(
                f,
                "{count} elements: more than one MPI call can count (at most {})",
                i32::MAX
            ),
            MpiError::WrongRank { method, rank } => write!(
                f,
                "{method} called on rank {rank}: rank 0 drives the probes (Target::call, \
                 finish), every other rank calls serve"
            ),
            MpiError::UnequalLengths {
                len,
                shortest,
                longest,
            } => write!(
                f,
                "exact_allreduce_sum on slices of different lengths (from {shortest} to \
                 {longest}, {len} on this rank): every rank must pass the same length"
            ),
            MpiError::WrongLength { ranks, got } => write!(
                f,
                "a probe of {got} values for {ranks} ranks: one value per rank"
            ),
        }
    }
}

impl std::error::Error for MpiError {}
