//! Host side of scrambled kernel launches: the per-launch block permutation uploaded to
//! the device, and the seed of the per-block thread shuffles the prelude draws.
//!
//! Pure Rust, compiled with or without the `cuda` feature, so the permutations can be
//! inspected and tested anywhere.

/// Name and version of the launch-scrambling algorithm: part of every replay token, so
/// never change what it draws without bumping it.
pub const SCRAMBLE_ALGORITHM: &str = "fprev-cuda-scramble-v2";

/// The buffers and flags one scrambled launch passes to a kernel written with the
/// prelude's `FPREV_SCRAMBLE_PARAMS`.
///
/// ```
/// let plan = fprev::cuda::LaunchPlan::identity(4);
/// assert_eq!(plan.block_perm, vec![0, 1, 2, 3]);
/// assert_eq!(plan.flags, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// Launch counter this plan was drawn for (0 for the identity).
    pub launch: u64,
    /// `block_perm[hardware block] = logical block`, uploaded as `fprev_block_perm`.
    pub block_perm: Vec<u32>,
    /// `fprev_thread_seed`: keys each block's thread shuffle.
    pub thread_seed: u64,
    /// `fprev_flags`: bit 0 scrambles thread ids.
    pub flags: u32,
}

impl LaunchPlan {
    /// No scrambling: logical ids equal hardware ids.
    pub fn identity(blocks: usize) -> LaunchPlan {
        LaunchPlan {
            launch: 0,
            block_perm: (0..blocks as u32).collect(),
            thread_seed: 0,
            flags: 0,
        }
    }

    /// The logical thread id hardware thread `t` of hardware block `b` plays, as the
    /// prelude computes it for a block of `threads` threads.
    ///
    /// ```
    /// let mut s = fprev::cuda::LaunchScramble::new(7);
    /// let plan = s.next_launch(4);
    /// let mut seen: Vec<u32> = (0..32).map(|t| plan.logical_thread(0, t, 32)).collect();
    /// seen.sort();
    /// assert_eq!(seen, (0..32).collect::<Vec<u32>>());
    /// ```
    pub fn logical_thread(&self, b: usize, t: usize, threads: usize) -> u32 {
        if self.flags & 1 == 0 {
            return t as u32;
        }
        device_thread_permutation(self.thread_seed, self.block_perm[b], threads)[t]
    }
}

/// Draws the plans of successive scrambled launches from one seed.
///
/// Launch `k` of seed `s` is always the same permutation, so a launch that exposed a
/// different result replays from the token `fprev-cuda-scramble-v2:s:k`.
///
/// ```
/// use fprev::cuda::LaunchScramble;
/// let mut a = LaunchScramble::new(42);
/// let mut b = LaunchScramble::new(42);
/// assert_eq!(a.next_launch(64), b.next_launch(64));
/// let p = a.next_launch(64);
/// let mut sorted = p.block_perm.clone();
/// sorted.sort();
/// assert_eq!(sorted, (0..64).collect::<Vec<u32>>());
/// ```
#[derive(Clone, Debug)]
pub struct LaunchScramble {
    seed: u64,
    launches: u64,
}

impl LaunchScramble {
    /// A fresh launch counter for `seed`.
    pub fn new(seed: u64) -> LaunchScramble {
        LaunchScramble { seed, launches: 0 }
    }

    /// Start at launch `launch` (to replay one launch from its token).
    pub fn at_launch(seed: u64, launch: u64) -> LaunchScramble {
        LaunchScramble {
            seed,
            launches: launch,
        }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Launches drawn so far.
    pub fn launches(&self) -> u64 {
        self.launches
    }

    /// The plan of the next launch over `blocks` blocks, block and thread ids scrambled.
    pub fn next_launch(&mut self, blocks: usize) -> LaunchPlan {
        let launch = self.launches;
        self.launches += 1;
        LaunchPlan {
            launch,
            block_perm: launch_permutation(self.seed, launch, blocks),
            thread_seed: thread_seed(self.seed, launch),
            flags: 1,
        }
    }

    /// Replay token of launch `launch`: algorithm, seed and launch counter.
    pub fn token(&self, launch: u64) -> String {
        format!("{SCRAMBLE_ALGORITHM}:{}:{launch}", self.seed)
    }
}

/// Uniform permutation of `0..blocks` for launch `launch` of `seed`: exactly the CPU
/// launch model's block order ([`crate::scramble::launch::block_permutation`] with
/// Fisher-Yates), so a schedule found on the CPU model replays on the GPU and back.
/// Thread orders are drawn on the device (a SplitMix64 Fisher-Yates in shared memory,
/// mirrored by [`device_thread_permutation`]): they are a separate stream from the CPU
/// model's thread permutations.
fn launch_permutation(seed: u64, launch: u64, blocks: usize) -> Vec<u32> {
    crate::scramble::launch::block_permutation(
        crate::scramble::Shuffle::FisherYates,
        seed,
        launch,
        crate::scramble::Dim3::new(blocks as u32, 1, 1),
    )
}

/// The key of launch `launch`'s per-block thread shuffles.
fn thread_seed(seed: u64, launch: u64) -> u64 {
    let mut s = seed ^ launch.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    splitmix64(&mut s)
}

/// SplitMix64 as a generator: advance the state, return the scramble module's finalizer
/// of the old state (the device prelude computes exactly this).
fn splitmix64(state: &mut u64) -> u64 {
    let out = crate::random::splitmix64(*state);
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    out
}

/// The thread permutation the prelude's `fprev_scramble_begin` draws in shared memory for
/// logical block `block` of `threads` threads: `perm[hardware thread] = logical thread`.
///
/// A bit-exact mirror of the CUDA code (SplitMix64 keyed by
/// `thread_seed ^ block * 0xD1B54A32D192ED03`, Fisher-Yates from the top, bounded draws by
/// the high half of a 64x64 product); the GPU tests compare the two.
///
/// ```
/// let p = fprev::cuda::device_thread_permutation(99, 3, 256);
/// let mut s = p.clone();
/// s.sort();
/// assert_eq!(s, (0..256).collect::<Vec<u32>>());
/// assert_ne!(p, s);
/// ```
pub fn device_thread_permutation(thread_seed: u64, block: u32, threads: usize) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..threads as u32).collect();
    let mut state = thread_seed ^ (block as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    for i in (1..threads).rev() {
        let j = ((splitmix64(&mut state) as u128 * (i as u128 + 1)) >> 64) as usize;
        perm.swap(i, j);
    }
    perm
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_differ_and_replay() {
        let mut s = LaunchScramble::new(1);
        let a = s.next_launch(128);
        let b = s.next_launch(128);
        assert_ne!(a.block_perm, b.block_perm);
        assert_ne!(a.thread_seed, b.thread_seed);
        let again = LaunchScramble::at_launch(1, 1).next_launch(128);
        assert_eq!(again, b);
        assert_eq!(s.token(1), "fprev-cuda-scramble-v2:1:1");
    }

    #[test]
    fn every_block_position_is_reached() {
        // Over many launches each logical block lands on hardware block 0: the shuffle
        // is not stuck (a cheap uniformity smoke test).
        let mut s = LaunchScramble::new(5);
        let mut seen = [false; 8];
        for _ in 0..200 {
            seen[s.next_launch(8).block_perm[0] as usize] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }

    #[test]
    fn pinned_draws() {
        // The first launch of seed 0 over 8 blocks: a change here breaks every replay
        // token, so it needs a new SCRAMBLE_ALGORITHM version.
        let p = LaunchScramble::new(0).next_launch(8);
        assert_eq!(p.block_perm, vec![4, 1, 5, 6, 0, 7, 3, 2]);
        assert_eq!(p.thread_seed, 0xe220_a839_7b1d_cdaf);
        assert_eq!(
            device_thread_permutation(p.thread_seed, 0, 8),
            vec![7, 1, 0, 6, 3, 2, 4, 5]
        );
        assert_eq!(device_thread_permutation(0, 0, 1), vec![0]);
        assert_eq!(device_thread_permutation(0, 0, 0), Vec::<u32>::new());
    }
}
