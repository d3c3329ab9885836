//! Shards: `FPREV_SHARD=k/N` splits one campaign's runs over N processes or machines.
//!
//! Run `j` of shard `k` of `N` is run number `(k - 1) + N * j` of the campaign, so the
//! shards of one campaign seed run disjoint run numbers and N shards of R runs each run
//! exactly the runs one unsharded process with N x R runs would. A run's seed depends only
//! on the campaign seed, its stage and its run number, so its replay token replays it on
//! any machine, without `FPREV_SHARD`.

use std::fmt;
use std::str::FromStr;

/// The largest run number a stage can reach (run numbers are 32-bit in run seeds).
pub(crate) const MAX_RUN_NUMBER: u64 = u32::MAX as u64;

/// Shard `index` of `count` (1-based), as `FPREV_SHARD=index/count` writes it.
///
/// ```
/// use fprev_runtime::amplify::Shard;
///
/// let s: Shard = "2/3".parse().unwrap();
/// assert_eq!((s.index(), s.count()), (2, 3));
/// assert_eq!(s.run_number(0), Some(1)); // shard 2 runs 1, 4, 7, ...
/// assert_eq!(s.run_number(2), Some(7));
/// assert!("4/3".parse::<Shard>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    /// The whole campaign: shard 1 of 1.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Shard `index` of `count`, 1-based.
    ///
    /// ```
    /// use fprev_runtime::amplify::{Shard, ShardError};
    /// assert!(Shard::new(1, 2).is_ok());
    /// assert_eq!(Shard::new(0, 2), Err(ShardError::IndexOutOfRange { index: 0, count: 2 }));
    /// ```
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError::ZeroCount);
        }
        if index == 0 || index > count {
            return Err(ShardError::IndexOutOfRange { index, count });
        }
        Ok(Shard { index, count })
    }

    /// This shard's number, 1-based.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// How many shards the campaign is split into.
    pub const fn count(self) -> u32 {
        self.count
    }

    /// The campaign run number of this shard's `j`-th run of a stage, or `None` past the
    /// last run number a stage can have.
    pub fn run_number(self, j: u64) -> Option<u64> {
        let n = u64::from(self.index - 1).checked_add(u64::from(self.count).checked_mul(j)?)?;
        (n <= MAX_RUN_NUMBER).then_some(n)
    }
}

impl Default for Shard {
    fn default() -> Self {
        Shard::WHOLE
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a string is not a shard.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardError {
    /// Not `k/N` with two whole numbers.
    Malformed(String),
    /// N is 0.
    ZeroCount,
    /// k is not in `1..=N` (shards are numbered from 1).
    IndexOutOfRange {
        /// The k given.
        index: u32,
        /// The N given.
        count: u32,
    },
}

impl fmt::Display for ShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardError::Malformed(s) => write!(
                f,
                "{s:?} is not a shard: expected k/N with whole numbers, 1 <= k <= N (e.g. 1/4)"
            ),
            ShardError::ZeroCount => write!(f, "the shard count N of k/N must be at least 1"),
            ShardError::IndexOutOfRange { index, count } => write!(
                f,
                "shard {index}/{count} does not exist: shards are numbered 1 to {count} (k/N is 1-based)"
            ),
        }
    }
}

impl std::error::Error for ShardError {}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let malformed = || ShardError::Malformed(s.to_string());
        let (k, n) = s.trim().split_once('/').ok_or_else(malformed)?;
        let k: u32 = k.trim().parse().map_err(|_| malformed())?;
        let n: u32 = n.trim().parse().map_err(|_| malformed())?;
        Shard::new(k, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_run_numbers() {
        let shards: Vec<Shard> = (1..=3).map(|k| Shard::new(k, 3).unwrap()).collect();
        let mut all: Vec<u64> = shards
            .iter()
            .flat_map(|s| (0..5).map(|j| s.run_number(j).unwrap()))
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..15).collect::<Vec<_>>());
        assert_eq!(
            Shard::WHOLE.run_number(MAX_RUN_NUMBER),
            Some(MAX_RUN_NUMBER)
        );
        assert_eq!(Shard::WHOLE.run_number(MAX_RUN_NUMBER + 1), None);
        assert_eq!(shards[2].run_number(u64::MAX), None);
    }

    #[test]
    fn bad_shards_are_typed_errors() {
        assert_eq!(
            "0/2".parse::<Shard>(),
            Err(ShardError::IndexOutOfRange { index: 0, count: 2 })
        );
        assert_eq!("1/0".parse::<Shard>(), Err(ShardError::ZeroCount));
        for bad in ["", "1", "a/b", "1/2/3", "-1/2", "1.5/2"] {
            assert!(
                matches!(bad.parse::<Shard>(), Err(ShardError::Malformed(_))),
                "{bad}"
            );
        }
        assert_eq!(
            " 2 / 4 ".parse::<Shard>().map(|s| s.to_string()),
            Ok("2/4".to_string())
        );
    }
}
