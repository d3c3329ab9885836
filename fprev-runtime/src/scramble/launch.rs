//! A CPU model of a GPU kernel launch with scrambled block and thread indices.
//!
//! As in Defour's interposer: at grid level the host draws one permutation of the block
//! ids per launch; at block level each block draws its own permutation of thread ids. A
//! kernel reads its indices through [`ThreadCtx`], so when scheduling is scrambled block
//! `b` of the hardware order computes as logical block `blocks[b]`. Blocks run on rayon;
//! the threads of a block run one after another in hardware order.
//!
//! The mapping (seed, launch counter, grid, block) → permutations is the pure pair
//! [`block_permutation`] / [`thread_permutation`], so a GPU backend can upload exactly the
//! permutations this model uses.

use std::panic::Location;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;

use super::rng;
use super::session;
use super::state::{self, SCHEDULE};
use super::{entropy, Shuffle};

/// Grid or block extent / index, as CUDA's `dim3`; linear ids run x fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// Fastest-varying extent.
    pub x: u32,
    /// Middle extent.
    pub y: u32,
    /// Slowest-varying extent.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// Number of ids in this extent.
    pub const fn count(self) -> usize {
        self.x as usize * self.y as usize * self.z as usize
    }

    /// The index with linear id `id` inside this extent.
    pub const fn index(self, id: usize) -> Dim3 {
        let x = self.x as usize;
        let xy = x * self.y as usize;
        Dim3 {
            x: (id % x) as u32,
            y: ((id / x) % self.y as usize) as u32,
            z: (id / xy) as u32,
        }
    }

    /// Linear id of `index` inside this extent.
    pub const fn linear(self, index: Dim3) -> usize {
        (index.z as usize * self.y as usize + index.y as usize) * self.x as usize + index.x as usize
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}

/// What a kernel sees of the launch: its (possibly permuted) indices and the extents.
#[derive(Clone, Copy, Debug)]
pub struct ThreadCtx {
    block: Dim3,
    thread: Dim3,
    grid_dim: Dim3,
    block_dim: Dim3,
}

impl ThreadCtx {
    /// Block index (`blockIdx`), permuted per launch when scheduling is scrambled.
    pub fn block_idx(&self) -> Dim3 {
        self.block
    }
    /// Thread index inside the block (`threadIdx`), permuted per block when scrambled.
    pub fn thread_idx(&self) -> Dim3 {
        self.thread
    }
    /// Grid extent (`gridDim`).
    pub fn grid_dim(&self) -> Dim3 {
        self.grid_dim
    }
    /// Block extent (`blockDim`).
    pub fn block_dim(&self) -> Dim3 {
        self.block_dim
    }
    /// `blockIdx.x * blockDim.x + threadIdx.x`, the usual 1-D global id.
    pub fn global_x(&self) -> usize {
        self.block.x as usize * self.block_dim.x as usize + self.thread.x as usize
    }
}

const GRID_SITE: u64 = crate::random::splitmix64(0x6772_6964); // "grid"
const BLOCK_SITE: u64 = crate::random::splitmix64(0x0062_6c6f_636b); // "block"

/// The block permutation of launch number `launch` in the run with `seed`:
/// `p[hw]` is the logical linear block id run by hardware block `hw`.
pub fn block_permutation(shuffle: Shuffle, seed: u64, launch: u64, grid: Dim3) -> Vec<u32> {
    let mut p: Vec<u32> = (0..grid.count() as u32).collect();
    rng::shuffle(shuffle, &mut p, &mut rng::stream(seed, GRID_SITE, launch));
    p
}

/// The thread permutation of logical block `block_id` in launch number `launch`:
/// `p[hw]` is the logical linear thread id run by hardware thread `hw`.
pub fn thread_permutation(
    shuffle: Shuffle,
    seed: u64,
    launch: u64,
    block_id: u32,
    block: Dim3,
) -> Vec<u32> {
    let mut p: Vec<u32> = (0..block.count() as u32).collect();
    let site = BLOCK_SITE ^ crate::random::splitmix64(launch);
    rng::shuffle(
        shuffle,
        &mut p,
        &mut rng::stream(seed, site, u64::from(block_id)),
    );
    p
}

static LAUNCHES: AtomicU64 = AtomicU64::new(0);
static LAUNCH_EPOCH: AtomicU64 = AtomicU64::new(u64::MAX);

/// Launch number within the current run (restarts with each configuration).
fn next_launch() -> u64 {
    let epoch = state::EPOCH.load(Ordering::Acquire);
    if LAUNCH_EPOCH.swap(epoch, Ordering::AcqRel) != epoch {
        LAUNCHES.store(0, Ordering::Relaxed);
    }
    LAUNCHES.fetch_add(1, Ordering::Relaxed)
}

/// Runs `kernel` once per (block, thread) of a `grid` × `block` launch. Blocks run in
/// parallel on rayon. When scheduling is scrambled ([`Level::Schedule`] or
/// [`Level::All`]), block ids are a fresh permutation per launch and thread ids a fresh
/// permutation per block.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use fprev_runtime::scramble::launch;
///
/// let hits: Vec<AtomicU32> = (0..32).map(|_| AtomicU32::new(0)).collect();
/// launch(4u32, 8u32, |ctx| {
///     hits[ctx.global_x()].fetch_add(1, Ordering::Relaxed);
/// });
/// assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
/// ```
///
/// [`Level::Schedule`]: super::Level::Schedule
/// [`Level::All`]: super::Level::All
#[track_caller]
pub fn launch<F>(grid: impl Into<Dim3>, block: impl Into<Dim3>, kernel: F)
where
    F: Fn(&ThreadCtx) + Sync,
{
    let (grid_dim, block_dim) = (grid.into(), block.into());
    let site = Location::caller();
    let st = session::state();
    let scrambled = (st & SCHEDULE != 0).then(|| {
        let cfg = session::current_config();
        (
            cfg.shuffle.unwrap_or(Shuffle::FisherYates),
            cfg.seed,
            next_launch(),
        )
    });
    let blocks = scrambled.map(|(shuffle, seed, n)| block_permutation(shuffle, seed, n, grid_dim));
    let recording = entropy::is_recording();
    let started: Vec<AtomicU32> = if recording {
        (0..grid_dim.count()).map(|_| AtomicU32::new(0)).collect()
    } else {
        Vec::new()
    };
    let ticket = AtomicUsize::new(0);
    (0..grid_dim.count()).into_par_iter().for_each(|hw| {
        let logical = blocks.as_ref().map_or(hw as u32, |p| p[hw]);
        if recording {
            started[ticket.fetch_add(1, Ordering::Relaxed)].store(logical, Ordering::Relaxed);
        }
        let threads = scrambled
            .map(|(shuffle, seed, n)| thread_permutation(shuffle, seed, n, logical, block_dim));
        let block_idx = grid_dim.index(logical as usize);
        for t in 0..block_dim.count() {
            let tid = threads.as_ref().map_or(t, |p| p[t] as usize);
            kernel(&ThreadCtx {
                block: block_idx,
                thread: block_dim.index(tid),
                grid_dim,
                block_dim,
            });
        }
    });
    if recording {
        let order: Vec<usize> = started
            .iter()
            .map(|a| a.load(Ordering::Relaxed) as usize)
            .collect();
        entropy::record(format!("launch@{}:{}", site.file(), site.line()), &order);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim3_round_trips() {
        let d = Dim3::new(3, 4, 5);
        for id in 0..d.count() {
            assert_eq!(d.linear(d.index(id)), id);
        }
    }

    #[test]
    fn permutations_are_pure() {
        let g = Dim3::new(16, 1, 1);
        let a = block_permutation(Shuffle::FisherYates, 9, 2, g);
        assert_eq!(a, block_permutation(Shuffle::FisherYates, 9, 2, g));
        assert_ne!(a, block_permutation(Shuffle::FisherYates, 9, 3, g));
        let t = thread_permutation(Shuffle::Sattolo, 9, 2, 5, Dim3::new(8, 2, 1));
        assert!(t.iter().enumerate().all(|(i, &x)| x as usize != i));
    }
}
