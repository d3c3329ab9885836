//! The pinned generator, unbiased bounded draws and the hand-written shuffles.
//!
//! rand's own `shuffle` has changed its draws between minor versions, which would silently
//! invalidate replay tokens; everything here is written out so that a token keeps its
//! meaning for as long as [`ALGORITHM_VERSION`](super::ALGORITHM_VERSION) does.

use rand::{RngCore, SeedableRng};

use super::Shuffle;

/// The generator behind every scrambled order: ChaCha with 8 rounds from `rand_chacha`
/// 0.9, keyed by (seed, call site) and positioned on the stream of one invocation.
pub type ScrambleRng = rand_chacha::ChaCha8Rng;

/// SplitMix64's finalizer: a bijective mix used to derive keys and run seeds.
pub(crate) const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random stream of one invocation of one call site in the run with `seed`.
///
/// The 256-bit key is expanded from `seed` and `site` with SplitMix64; the ChaCha stream
/// number is the invocation counter, so invocations never share draws.
pub fn stream(seed: u64, site: u64, invocation: u64) -> ScrambleRng {
    let mut key = [0u8; 32];
    let mut state = seed ^ splitmix64(site);
    for word in key.chunks_exact_mut(8) {
        state = splitmix64(state);
        word.copy_from_slice(&state.to_le_bytes());
    }
    let mut rng = ScrambleRng::from_seed(key);
    rng.set_stream(invocation);
    rng
}

/// A uniform draw in `0..n` (`n >= 1`), unbiased: Lemire's multiply-and-reject on 32-bit
/// draws when `n` fits in 32 bits, on 64-bit draws otherwise.
#[inline]
pub fn below(rng: &mut ScrambleRng, n: usize) -> usize {
    debug_assert!(n >= 1);
    if n <= u32::MAX as usize {
        below_u32(rng, n as u32) as usize
    } else {
        below_u64(rng, n as u64) as usize
    }
}

#[inline]
fn below_u32(rng: &mut ScrambleRng, n: u32) -> u32 {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    if (m as u32) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
        }
    }
    (m >> 32) as u32
}

#[inline]
fn below_u64(rng: &mut ScrambleRng, n: u64) -> u64 {
    let mut m = u128::from(rng.next_u64()) * u128::from(n);
    if (m as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u64) < threshold {
            m = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (m >> 64) as u64
}

/// The generator's output read 64 bits at a time (little-endian words of its byte
/// stream), refilled 32 words at once: far fewer calls than one `next_u64` per draw.
struct Words<'a> {
    rng: &'a mut ScrambleRng,
    buf: [u8; 256],
    pos: usize,
}

impl<'a> Words<'a> {
    fn new(rng: &'a mut ScrambleRng) -> Self {
        Words {
            rng,
            buf: [0; 256],
            pos: 256,
        }
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        if self.pos == 256 {
            self.rng.fill_bytes(&mut self.buf);
            self.pos = 0;
        }
        let w = u64::from_le_bytes(
            self.buf[self.pos..self.pos + 8]
                .try_into()
                .expect("8 bytes"),
        );
        self.pos += 8;
        w
    }
}

/// Uniform draws in `0..bounds[k]` for every `k` from one 64-bit draw, unbiased
/// (Brackett-Rozinsky and Lemire's batched extension of the multiply-and-reject method).
/// The product of the bounds must fit in a `u64`.
#[inline]
fn below_batch<const K: usize>(rng: &mut Words<'_>, bounds: [u64; K]) -> [usize; K] {
    let mut out = [0usize; K];
    let mut draw = |mut low: u64| {
        for (o, &b) in out.iter_mut().zip(&bounds) {
            let m = u128::from(low) * u128::from(b);
            *o = (m >> 64) as usize;
            low = m as u64;
        }
        low
    };
    let mut low = draw(rng.next_u64());
    let product: u64 = bounds.iter().product();
    if low < product {
        let threshold = product.wrapping_neg() % product;
        while low < threshold {
            low = draw(rng.next_u64());
        }
    }
    out
}

/// Runs the swaps of `shuffle` on `n` positions, calling `swap(i, j)` for each; every
/// container that applies the same swaps ends up in the same order.
///
/// Fisher-Yates swaps position `i` (from `n-1` down to 1) with a uniform `j` in `0..=i`;
/// Sattolo draws `j` in `0..i`, which closes everything into one cycle. The draws for
/// four consecutive positions come from one 64-bit word while their bounds are below
/// 2^16, for three below 2^21, for two below 2^32.
#[inline]
pub fn shuffle_with(
    shuffle: Shuffle,
    n: usize,
    rng: &mut ScrambleRng,
    mut swap: impl FnMut(usize, usize),
) {
    let extra = match shuffle {
        Shuffle::Identity => return,
        Shuffle::FisherYates => 1,
        Shuffle::Sattolo => 0,
    };
    let rng = &mut Words::new(rng);
    // Position i draws in 0..i + extra.
    let mut i = n.saturating_sub(1);
    while i >= 1 {
        let b = (i + extra) as u64;
        if i >= 4 && b < 1 << 16 {
            let j = below_batch(rng, [b, b - 1, b - 2, b - 3]);
            swap(i, j[0]);
            swap(i - 1, j[1]);
            swap(i - 2, j[2]);
            swap(i - 3, j[3]);
            i -= 4;
        } else if i >= 3 && b < 1 << 21 {
            let j = below_batch(rng, [b, b - 1, b - 2]);
            swap(i, j[0]);
            swap(i - 1, j[1]);
            swap(i - 2, j[2]);
            i -= 3;
        } else if i >= 2 && b <= u64::from(u32::MAX) {
            let j = below_batch(rng, [b, b - 1]);
            swap(i, j[0]);
            swap(i - 1, j[1]);
            i -= 2;
        } else {
            swap(i, below_batch(rng, [b])[0]);
            i -= 1;
        }
    }
}

/// Shuffles `items` in place.
///
/// ```
/// use fprev_runtime::scramble::{rng::stream, shuffle, Shuffle};
///
/// let mut v: Vec<u32> = (0..10).collect();
/// shuffle(Shuffle::Sattolo, &mut v, &mut stream(7, 0, 0));
/// assert!(v.iter().enumerate().all(|(i, &x)| x as usize != i)); // a single cycle
/// ```
pub fn shuffle<T>(shuffle: Shuffle, items: &mut [T], rng: &mut ScrambleRng) {
    shuffle_with(shuffle, items.len(), rng, |i, j| items.swap(i, j));
}

/// A permutation of `0..n` drawn with `shuffle`: `p[k]` is the index visited `k`-th.
///
/// ```
/// use fprev_runtime::scramble::{permutation, rng::stream, Shuffle};
///
/// let p = permutation(Shuffle::FisherYates, 5, &mut stream(1, 2, 3));
/// let mut sorted = p.clone();
/// sorted.sort();
/// assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
/// assert_eq!(p, permutation(Shuffle::FisherYates, 5, &mut stream(1, 2, 3)));
/// ```
pub fn permutation(shuffle: Shuffle, n: usize, rng: &mut ScrambleRng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    self::shuffle(shuffle, &mut p, rng);
    p
}

/// 64-bit FNV-1a over a sequence of indices: how recorded orders are compared.
pub(crate) fn order_hash(order: impl IntoIterator<Item = usize>) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for i in order {
        for b in (i as u64).to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// 64-bit FNV-1a of a string, usable in constants (call-site ids).
pub(crate) const fn str_hash(mut h: u64, s: &str) -> u64 {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_range_and_hits_every_value() {
        let mut rng = stream(1, 2, 3);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[below(&mut rng, 7)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        assert_eq!(below(&mut rng, 1), 0);
        assert!(below(&mut rng, u32::MAX as usize + 10) < u32::MAX as usize + 10);
    }

    #[test]
    fn batched_draws_are_in_range_and_spread() {
        let mut rng = stream(4, 5, 6);
        let mut rng = Words::new(&mut rng);
        let mut seen = [[0u32; 7]; 2];
        for _ in 0..7000 {
            let [a, b] = below_batch(&mut rng, [7, 6]);
            assert!(a < 7 && b < 6);
            seen[0][a] += 1;
            seen[1][b] += 1;
        }
        assert!(seen[0].iter().all(|&c| c > 800), "{seen:?}");
        assert!(seen[1][..6].iter().all(|&c| c > 950), "{seen:?}");
    }

    #[test]
    fn streams_differ_by_seed_site_and_invocation() {
        let a = stream(1, 2, 3).next_u64();
        assert_eq!(a, stream(1, 2, 3).next_u64());
        assert_ne!(a, stream(0, 2, 3).next_u64());
        assert_ne!(a, stream(1, 0, 3).next_u64());
        assert_ne!(a, stream(1, 2, 0).next_u64());
    }
}
