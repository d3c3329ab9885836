//! The shuffles' draws, pinned: replay tokens promise that a seed gives the same orders
//! for as long as `ALGORITHM_VERSION` stays, so any change to how the permutations
//! consume the ChaCha stream (batching, rejection, buffering) must fail here.
//!
//! Each row hashes two consecutive permutations from one stream and the generator's next
//! word afterwards (so the number of bytes a shuffle consumes is pinned too). The rows
//! were recorded with the implementation of `ALGORITHM_VERSION` 1; on a mismatch the test
//! prints the table it computed.

use fprev_runtime::scramble::rng::{shuffle_with, stream, ScrambleRng};
use fprev_runtime::scramble::{permutation, shuffle, Shuffle};
use rand::RngCore;

/// 64-bit FNV-1a, fed one 64-bit word at a time.
struct Fnv(u64);

impl Fnv {
    fn word(&mut self, w: u64) {
        for b in w.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// (seed, site, invocation) of the streams, and how many 32-bit words are drawn before
/// the shuffles start (so they also start in the middle of the generator's buffer).
const STREAMS: [(u64, u64, u64, usize); 3] = [(0, 0, 0, 0), (1, 2, 3, 1), (0xDEAD_BEEF, 42, 7, 3)];

/// Sizes around every change of batch width: 4 draws per word below 2^16, 3 below 2^21,
/// 2 above, and the rejection-heavy bounds just under 2^16.
const SIZES: [usize; 14] = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    1000,
    65535,
    65536,
    65537,
    (1 << 20) + 3,
    (1 << 21) + 5,
];

const SHUFFLES: [Shuffle; 2] = [Shuffle::FisherYates, Shuffle::Sattolo];

fn start(s: (u64, u64, u64, usize)) -> ScrambleRng {
    let mut rng = stream(s.0, s.1, s.2);
    for _ in 0..s.3 {
        rng.next_u32();
    }
    rng
}

/// The pinned hash of one row, checking on the way that every entry point (an index
/// vector, a `u32` slice in place, a bare swap callback) applies the same swaps.
fn row_hash(s: (u64, u64, u64, usize), n: usize, sh: Shuffle) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let mut rng = start(s);
    let mut rng_u32 = start(s);
    let mut rng_with = start(s);
    for _ in 0..2 {
        let p = permutation(sh, n, &mut rng);
        let mut q: Vec<u32> = (0..n as u32).collect();
        shuffle(sh, &mut q, &mut rng_u32);
        let mut r: Vec<u64> = (0..n as u64).collect();
        shuffle_with(sh, n, &mut rng_with, |i, j| r.swap(i, j));
        assert!(
            p.iter().zip(&q).all(|(&a, &b)| a == b as usize),
            "u32 slice, n = {n}"
        );
        assert!(
            p.iter().zip(&r).all(|(&a, &b)| a as u64 == b),
            "callback, n = {n}"
        );
        for &i in &p {
            h.word(i as u64);
        }
    }
    let next = rng.next_u64();
    assert_eq!(
        next,
        rng_u32.next_u64(),
        "u32 slice consumed differently, n = {n}"
    );
    assert_eq!(
        next,
        rng_with.next_u64(),
        "callback consumed differently, n = {n}"
    );
    h.word(next);
    h.0
}

/// `[fisher-yates, sattolo]` hashes for each stream and size, in the order of [`STREAMS`]
/// and [`SIZES`].
const PINNED: [[[u64; 2]; 14]; 3] = [
    // Stream (0, 0, 0), no words drawn first.
    [
        [0xcbcd911336f7b782, 0xcbcd911336f7b782],
        [0x4dcefc73a6f33d42, 0x4dcefc73a6f33d42],
        [0x9a7101b59cae771b, 0xd8d73f457726ef1b],
        [0x65e8c835c183bd5b, 0x489fd7792e954efb],
        [0x57ef639a25f74c3b, 0xfbbc8bfe871bb13b],
        [0x28528bdc895208fb, 0xd207ec56ea2fd3fb],
        [0x310ebb836c8104db, 0xc07668233a1e13fb],
        [0xd3044b96521cd6fb, 0xcc40f1f28ec8631b],
        [0x2f0455173a79f4b7, 0x68eb7747b3db1fe7],
        [0x91db23e1fc1f7cca, 0x88e6bcb7cc4a0cb4],
        [0xa2fbc8129048baa6, 0x8a5232913a82b2fa],
        [0x4dd80ab00489f320, 0x10f0f834841c0d32],
        [0x6c9ba1046d9b86e8, 0x4ff45570b885c5dc],
        [0x2a794bfec7dc1e36, 0x08a0545c63b0569e],
    ],
    // Stream (1, 2, 3), one word drawn first.
    [
        [0xa57475edbc4c6aa0, 0xa57475edbc4c6aa0],
        [0xf4675a87a24740e0, 0xf4675a87a24740e0],
        [0x00d123b58b77a882, 0x24764c243bf539a2],
        [0xc0eb021c85295542, 0xf7bbc42a9c6e1402],
        [0x6a9b25d509c5b642, 0x093558f8ac767a42],
        [0xf4c8f724885dd762, 0x645db833fb492062],
        [0xeba68ef8a56ce0c2, 0x2ddbd3e720bd8ba2],
        [0x6595ed190af3ad82, 0x7ef810c87ead42c2],
        [0xb013de989f68fb61, 0x29f05e59eea9a99d],
        [0xeca549cabb7f4837, 0xf6698820641fae7e],
        [0xe934784b0cfc34a8, 0x89633e6f2727cb77],
        [0x2e732dd3d9dc94be, 0x1bb984482d98d0ec],
        [0xd8e36c46d4fc2805, 0x3ea00dc644774cb9],
        [0x5ddf91e942dc89e9, 0xabdd2108e86247d6],
    ],
    // Stream (0xDEAD_BEEF, 42, 7), three words drawn first.
    [
        [0xc7543c82066ada27, 0xc7543c82066ada27],
        [0xf42feee5c2d915e7, 0xf42feee5c2d915e7],
        [0x5cb0ee692395f76f, 0x9b172bf8fe0e6f6f],
        [0xabe30fc2ad772e8f, 0xfc97ef223de3f68f],
        [0x52c6d302d1d5ae6f, 0xd37a69a408819def],
        [0x58823a091a437cef, 0xe31fdde921bffd6f],
        [0x1965b382a0bcd3cf, 0x6d23127333aaf2ef],
        [0x4b214bd6a2ee214f, 0x366d8c83bce40f0f],
        [0xb341c90117d4e84f, 0x531ecf7eddbcf063],
        [0x1e5b5b61b70857bd, 0x3a5dff94bcbc346d],
        [0x9271b503758ddbb1, 0xb194613367da2d51],
        [0x0a67f4e0fa6d2b55, 0xa4df11de50f547d1],
        [0xc514a86d1cac6405, 0x002c09792dc3cc9a],
        [0x785cee95ebf6cdcc, 0xd341ad58a825afae],
    ],
];

#[test]
fn permutations_match_the_recorded_draws() {
    let got = STREAMS.map(|s| SIZES.map(|n| SHUFFLES.map(|sh| row_hash(s, n, sh))));
    if got != PINNED {
        let mut table = String::new();
        for (s, sizes) in STREAMS.iter().zip(&got) {
            table += &format!("    // Stream {s:?}.\n    [\n");
            for [fy, sattolo] in sizes {
                table += &format!("        [0x{fy:016x}, 0x{sattolo:016x}],\n");
            }
            table += "    ],\n";
        }
        panic!("the shuffles draw differently from the pinned table; computed:\n{table}");
    }
}
