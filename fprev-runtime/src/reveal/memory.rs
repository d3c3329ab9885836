//! What a revelation of `n` values costs in memory, checked before anything is allocated.
//!
//! Every buffer the engine sizes by `n` is counted here with overflow-safe arithmetic and
//! compared with the budget ([`Reveal::max_memory`](super::Reveal::max_memory)); the
//! buffers themselves are reserved fallibly, so a size the allocator refuses is a
//! [`RevealError::OutOfMemory`] naming what needed the memory, never an abort.
//!
//! [`check_memory`] is the one budget check: a [`Reveal`](super::Reveal) calls it when it
//! starts (and an [`ElementReveal`](crate::ops::ElementReveal) through the `Reveal` of each
//! tree), and callers that must refuse before building inputs (the CLI) call the same.

use super::error::RevealError;
use super::Algorithm;

/// The memory budget of a revelation unless [`Reveal::max_memory`](super::Reveal::max_memory)
/// says otherwise: 8 GiB.
pub const DEFAULT_MAX_MEMORY: u64 = 8 << 30;

/// Bytes the engine keeps per leaf, whatever the algorithm: the arena (parents, sizes,
/// smallest and largest leaves, leaf-set hashes, children, for up to `2n` nodes), the
/// prober's background and one row of probes with their answers and keys. Measured at
/// about 170 bytes per leaf for a search (peak resident size from n = 30 000 to 120 000,
/// f32, without guesses; 77 for a proved guess); rounded up.
const PER_LEAF: u64 = 192;

/// Bytes a revelation of `n` values of `elem` bytes each needs, saturating at `u64::MAX`.
pub(crate) fn needed(n: usize, algorithm: Algorithm, elem: usize) -> u64 {
    let n = n as u64;
    let linear = n.saturating_mul(PER_LEAF + elem as u64);
    match algorithm {
        // every pair's answer, then a sorted copy: 2 x 12 bytes per pair
        Algorithm::Basic => {
            let pairs = n.saturating_mul(n.saturating_sub(1)) / 2;
            linear.saturating_add(pairs.saturating_mul(24))
        }
        _ => linear,
    }
}

/// Checks, before anything is allocated, that revealing `n` values of `elem_bytes` bytes
/// each with `algorithm` fits in `budget` bytes (what
/// [`Reveal::max_memory`](super::Reveal::max_memory) enforces when
/// the revelation starts): callers that must refuse early, before building inputs or
/// starting a program, ask here.
///
/// ```
/// use fprev::reveal::{check_memory, Algorithm, DEFAULT_MAX_MEMORY};
/// assert!(check_memory(1 << 16, Algorithm::FPRev, 4, DEFAULT_MAX_MEMORY).is_ok());
/// assert!(check_memory(100_000_000, Algorithm::FPRev, 4, DEFAULT_MAX_MEMORY).is_err());
/// ```
pub fn check_memory(
    n: usize,
    algorithm: Algorithm,
    elem_bytes: usize,
    budget: u64,
) -> Result<(), RevealError> {
    let bytes = needed(n, algorithm, elem_bytes);
    if bytes > budget {
        return Err(RevealError::OutOfMemory {
            n,
            what: format!("revealing with {algorithm:?}"),
            bytes,
            budget: Some(budget),
        });
    }
    Ok(())
}

/// Make room for `extra` more elements in `v`, or say which buffer could not grow.
pub(crate) fn reserve<T>(
    v: &mut Vec<T>,
    extra: usize,
    n: usize,
    what: &str,
) -> Result<(), RevealError> {
    v.try_reserve(extra).map_err(|_| RevealError::OutOfMemory {
        n,
        what: what.to_string(),
        bytes: (extra as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        budget: None,
    })
}

/// A vector with room for `len` elements, fallibly.
pub(crate) fn with_capacity<T>(len: usize, n: usize, what: &str) -> Result<Vec<T>, RevealError> {
    let mut v = Vec::new();
    reserve(&mut v, len, n, what)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_saturate_and_refuse() {
        assert_eq!(needed(usize::MAX, Algorithm::Basic, 8), u64::MAX);
        let e = check_memory(100_000_000, Algorithm::FPRev, 4, DEFAULT_MAX_MEMORY).unwrap_err();
        assert!(e.to_string().contains("--max-memory"), "{e}");
        assert!(check_memory(1 << 16, Algorithm::FPRev, 4, DEFAULT_MAX_MEMORY).is_ok());
        // Basic keeps every pair: n = 100 000 is 120 GB of pairs
        assert!(check_memory(100_000, Algorithm::Basic, 4, DEFAULT_MAX_MEMORY).is_err());
    }

    #[test]
    fn failed_reservation_is_typed() {
        let mut v: Vec<u64> = Vec::new();
        let e = reserve(&mut v, usize::MAX / 4, 7, "a test buffer").unwrap_err();
        assert!(
            matches!(
                e,
                RevealError::OutOfMemory {
                    n: 7,
                    budget: None,
                    ..
                }
            ),
            "{e}"
        );
    }
}
