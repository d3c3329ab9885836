//! The pinned generator, unbiased bounded draws and the hand-written shuffles.
//!
//! rand's own `shuffle` has changed its draws between minor versions, which would silently
//! invalidate replay tokens; everything here is written out so that a token keeps its
//! meaning for as long as [`ALGORITHM_VERSION`](super::ALGORITHM_VERSION) does.

use rand_core::{RngCore, SeedableRng};

use super::Shuffle;
use crate::random::splitmix64;

/// The generator behind every scrambled order: ChaCha with 8 rounds from `rand_chacha`
/// 0.9, keyed by (seed, call site) and positioned on the stream of one invocation.
pub type ScrambleRng = rand_chacha::ChaCha8Rng;

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

/// The bounded draw of every scrambled order (one algorithm for the whole runtime).
pub use crate::random::below;

/// The generator's output read 64 bits at a time (little-endian words of its byte
/// stream), refilled 32 words at once: far fewer calls than one `next_u64` per draw.
///
/// Each refill takes exactly 256 bytes of the stream and whatever is left unread when a
/// shuffle ends is dropped; both are part of the pinned draws.
struct Words<'a> {
    rng: &'a mut ScrambleRng,
    buf: [u64; 32],
    pos: usize,
}

impl<'a> Words<'a> {
    fn new(rng: &'a mut ScrambleRng) -> Self {
        Words {
            rng,
            buf: [0; 32],
            pos: 32,
        }
    }

    #[inline(always)]
    fn next_u64(&mut self) -> u64 {
        if self.pos >= 32 {
            self.refill();
        }
        let w = self.buf[self.pos % 32];
        self.pos += 1;
        w
    }

    /// Out of line: the draw loop stays small, and one call per 32 words costs nothing.
    /// (The words are the stream's bytes read little-endian, as rand 0.9's `fill` on
    /// `u64`s reads them.)
    #[inline(never)]
    fn refill(&mut self) {
        let mut bytes = [0u8; 256];
        self.rng.fill_bytes(&mut bytes);
        for (w, b) in self.buf.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
        }
        self.pos = 0;
    }
}

/// Splits one 64-bit draw into `K` draws below `bounds` by successive multiplications;
/// also returns the low word left over, which decides rejection.
#[inline(always)]
fn split<const K: usize>(mut low: u64, bounds: &[u64; K]) -> ([usize; K], u64) {
    let mut out = [0usize; K];
    for (o, &b) in out.iter_mut().zip(bounds) {
        let m = u128::from(low) * u128::from(b);
        *o = (m >> 64) as usize;
        low = m as u64;
    }
    (out, low)
}

/// Uniform draws in `0..bounds[k]` for every `k` from one 64-bit draw, unbiased
/// (Brackett-Rozinsky and Lemire's batched extension of the multiply-and-reject method):
/// a draw whose low word is below `2^64 mod product` is rejected and the next one used.
/// The product of the bounds must fit in a `u64`.
#[inline(always)]
fn below_batch<const K: usize>(rng: &mut Words<'_>, bounds: [u64; K]) -> [usize; K] {
    let word = rng.next_u64();
    let (out, low) = split(word, &bounds);
    let product: u64 = bounds.iter().product();
    if low < rejection_bound(product) {
        // Only the accepted word crosses the call: an array merged from both paths would
        // go through memory and stall the fast path on store forwarding.
        return split(accepted::<K>(rng, bounds[0], word, low, product), &bounds).0;
    }
    out
}

/// The slow path of [`below_batch`] (bounds `b, b-1, ..., b-K+1`): from `word`, whose
/// low word is `low`, the first draw that is not rejected.
#[cold]
#[inline(never)]
fn accepted<const K: usize>(
    rng: &mut Words<'_>,
    b: u64,
    mut word: u64,
    mut low: u64,
    product: u64,
) -> u64 {
    let bounds: [u64; K] = std::array::from_fn(|k| b - k as u64);
    let threshold = match rejection_bound(product) {
        exact if exact < product => exact,
        _ => product.wrapping_neg() % product,
    };
    while low < threshold {
        word = rng.next_u64();
        low = split(word, &bounds).1;
    }
    word
}

/// An upper bound of the rejection threshold `2^64 mod p`, equal to it where `p` is so
/// large that the low word often falls below `p`: then the slow path, with its branch
/// miss and 64-bit division, is taken only to reject (about one batch in nine for a
/// 2^16-element shuffle, instead of one in five). Below 2^58 the bound is `p` itself;
/// a bound below `p` is always the threshold.
#[inline(always)]
fn rejection_bound(p: u64) -> u64 {
    if p >= 1 << 63 {
        // 2^64 = p + (2^64 - p) with 2^64 - p < p (the bound p when p = 2^63).
        p.wrapping_neg()
    } else if p >= 1 << 58 {
        // For p < 2^63 the quotient q = 2^64 / p is at most 64, so its f64 estimate is
        // off by at most one. 2^64 - q p is the threshold when q is right; when q is off
        // by one it is at least p (or wraps to at least 2^64 - p > p), and p is returned.
        // The estimate x is in (2, 64]: adding 2^52 - 1/2 lands in [2^52, 2^53), where
        // doubles are the integers, so the sum is 2^52 + floor(x) (or one less on a tie)
        // and its bits minus those of 2^52 are that integer; cheaper than a saturating
        // float-to-int conversion. (p < 2^63, so `p as i64` is exact.)
        let x = 18_446_744_073_709_551_616.0 / p as i64 as f64;
        let q = (x + 4_503_599_627_370_495.5)
            .to_bits()
            .wrapping_sub(4_503_599_627_370_496f64.to_bits());
        q.wrapping_mul(p).wrapping_neg().min(p)
    } else {
        p
    }
}

/// How many positions, from `i` down, draw from one 64-bit word, `b` being the bound of
/// position `i`: four while the bounds are below 2^16, three below 2^21, two below 2^32.
#[inline(always)]
fn width(i: usize, b: u64) -> usize {
    if i >= 4 && b < 1 << 16 {
        4
    } else if i >= 3 && b < 1 << 21 {
        3
    } else if i >= 2 && b <= u64::from(u32::MAX) {
        2
    } else {
        1
    }
}

/// Targets drawn ahead of their swaps, indexed by position modulo its length.
const RING: usize = 64;

/// Positions between drawing a target (and prefetching it) and swapping with it, for
/// slices too large for the cache.
const PREFETCH_DISTANCE: usize = 32;
const _: () = assert!(PREFETCH_DISTANCE < RING);

/// Slices of at least this many bytes (more than a core's L2 cache on most machines)
/// are shuffled with prefetching; on smaller ones the extra work costs more than the
/// misses it hides.
const PREFETCH_ABOVE: usize = 2 << 20;

/// Where a shuffle stands: the next position to draw for (positions run from `top`
/// down to 1), and `extra`, 1 for Fisher-Yates (position `i` draws in `0..=i`) or 0 for
/// Sattolo (`0..i`). Kept apart from the ring of targets and from the stream, whose
/// addresses are taken, so that it lives in registers.
struct Positions {
    i: usize,
    top: usize,
    extra: usize,
}

/// Draws and swaps while the batch width stays `K`. With `D > 0`, the target of
/// position `p` is prefetched when drawn and swapped `D` positions later: targets depend
/// only on the stream, not on the contents, so the swaps and their order are the same as
/// drawing each target just before its swap.
#[inline(always)]
fn run<const K: usize, const D: usize>(
    at: &mut Positions,
    rng: &mut Words<'_>,
    ring: &mut [usize; RING],
    swap: &mut impl FnMut(usize, usize),
    prefetch: &mut impl FnMut(usize),
) {
    while at.i >= 1 && width(at.i, (at.i + at.extra) as u64) == K {
        let b = (at.i + at.extra) as u64;
        let j = below_batch::<K>(rng, std::array::from_fn(|k| b - k as u64));
        for (k, &j) in j.iter().enumerate() {
            let p = at.i - k;
            if D == 0 {
                swap(p, j);
            } else {
                prefetch(j);
                ring[p % RING] = j;
                let q = p + D;
                if q <= at.top {
                    swap(q, ring[q % RING]);
                }
            }
        }
        at.i -= K;
    }
}

/// [`shuffle_with`], prefetching each target `D` positions ahead (`D = 0`: none).
#[inline(always)]
fn shuffle_ahead<const D: usize>(
    shuffle: Shuffle,
    n: usize,
    rng: &mut ScrambleRng,
    mut swap: impl FnMut(usize, usize),
    mut prefetch: impl FnMut(usize),
) {
    let extra = match shuffle {
        Shuffle::Identity => return,
        Shuffle::FisherYates => 1,
        Shuffle::Sattolo => 0,
    };
    if n < 2 {
        return;
    }
    let mut at = Positions {
        i: n - 1,
        top: n - 1,
        extra,
    };
    let (rng, ring) = (&mut Words::new(rng), &mut [0; RING]);
    let (swap, prefetch) = (&mut swap, &mut prefetch);
    while at.i >= 1 {
        match width(at.i, (at.i + extra) as u64) {
            4 => run::<4, D>(&mut at, rng, ring, swap, prefetch),
            3 => run::<3, D>(&mut at, rng, ring, swap, prefetch),
            2 => run::<2, D>(&mut at, rng, ring, swap, prefetch),
            _ => run::<1, D>(&mut at, rng, ring, swap, prefetch),
        }
    }
    // The last `D` swaps, whose targets are drawn.
    for q in (1..=D.min(at.top)).rev() {
        swap(q, ring[q % RING]);
    }
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
    swap: impl FnMut(usize, usize),
) {
    shuffle_ahead::<0>(shuffle, n, rng, swap, |_| {});
}

/// Asks the cache for `*p` ahead of its use; no-op where there is no stable prefetch.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of every x86_64 target, and a prefetch never faults or
    // changes memory, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Shuffles `items` in place: the same swaps as [`shuffle_with`], with each target
/// prefetched a few positions before its swap when the slice is too large for the
/// caches close to the core.
///
/// ```
/// use fprev_runtime::scramble::{rng::stream, shuffle, Shuffle};
///
/// let mut v: Vec<u32> = (0..10).collect();
/// shuffle(Shuffle::Sattolo, &mut v, &mut stream(7, 0, 0));
/// assert!(v.iter().enumerate().all(|(i, &x)| x as usize != i)); // a single cycle
/// ```
pub fn shuffle<T>(shuffle: Shuffle, items: &mut [T], rng: &mut ScrambleRng) {
    let (n, base, bytes) = (items.len(), items.as_ptr(), std::mem::size_of_val(items));
    let swap = |i: usize, j: usize| items.swap(i, j);
    if bytes >= PREFETCH_ABOVE {
        shuffle_ahead::<PREFETCH_DISTANCE>(shuffle, n, rng, swap, |j| {
            prefetch(base.wrapping_add(j))
        });
    } else {
        shuffle_ahead::<0>(shuffle, n, rng, swap, |_| {});
    }
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
    fn prefetching_ahead_applies_the_same_swaps() {
        for n in [0, 1, 2, 3, 5, 31, 32, 33, 34, 64, 65, 100, 1000, 70_000] {
            for shuffle in [Shuffle::FisherYates, Shuffle::Sattolo] {
                let (mut plain, mut ahead) = (stream(8, n as u64, 1), stream(8, n as u64, 1));
                let mut p: Vec<usize> = (0..n).collect();
                let mut q = p.clone();
                shuffle_with(shuffle, n, &mut plain, |i, j| p.swap(i, j));
                shuffle_ahead::<PREFETCH_DISTANCE>(
                    shuffle,
                    n,
                    &mut ahead,
                    |i, j| q.swap(i, j),
                    |_| {},
                );
                assert_eq!(p, q, "n = {n}, {shuffle:?}");
                assert_eq!(plain.next_u64(), ahead.next_u64());
            }
        }
    }

    #[test]
    fn rejection_bound_is_the_threshold_or_above() {
        let exact = |p: u64| ((1u128 << 64) % u128::from(p)) as u64;
        let quads = (4..1u64 << 16).map(|b| b * (b - 1) * (b - 2) * (b - 3));
        for p in quads.filter(|&p| p >= 1 << 58) {
            // Where the shortcut matters, it is exact: the slow path only rejects.
            assert_eq!(rejection_bound(p), exact(p), "p = {p}");
        }
        let mut others: Vec<u64> = (3..1u64 << 21).map(|b| b * (b - 1) * (b - 2)).collect();
        others.extend((0..64).flat_map(|s| [1u64 << s, (1u64 << s) - 1, (1u64 << s) + 1]));
        others.push(u64::MAX);
        for p in others.into_iter().filter(|&p| p >= 1) {
            let bound = rejection_bound(p);
            assert!(exact(p) <= bound && bound <= p, "p = {p}: bound {bound}");
            assert!(bound == p || bound == exact(p), "p = {p}: bound {bound}");
        }
    }

    #[test]
    fn words_are_what_rand_0_9_fill_gave() {
        // The refill reads fill_bytes little-endian; rand 0.9's `fill` on u64s did the
        // same, and the pinned draws depend on it.
        use rand::Rng;
        let (mut a, mut b) = (stream(1, 2, 3), stream(1, 2, 3));
        let mut words = Words::new(&mut a);
        let mut expect = [0u64; 96];
        for chunk in expect.chunks_mut(32) {
            b.fill(chunk);
        }
        for e in expect {
            assert_eq!(words.next_u64(), e);
        }
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
