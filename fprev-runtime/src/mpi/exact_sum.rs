//! The exact allreduce: element-wise sums across ranks that are correctly rounded, so
//! their bits depend on nothing but the values (Collange, Defour, Graillat and Iakymchuk's
//! reproducible summation, carried across processes).
//!
//! Two paths, both exact, so they give the same bits:
//!
//! - The digits ([`super::window`]): one `MPI_MAX` of a 16-bit key per element (its
//!   values' largest exponent), then one `MPI_SUM` on `i64` of each value cut to a
//!   fixed-point digit under that exponent, which is exact integer addition. The sum of
//!   the digits bounds the exact sum within a sixteenth of its last place (at 8 ranks),
//!   which decides the rounding of most elements; the others send the next digits (with
//!   a count of the values that have bits below them) until it is decided. No user code
//!   inside MPI.
//! - The general path, for infinities, NaNs and elements still undecided after three
//!   digits: each value becomes an [`Accumulator`] image of fixed size, and an MPI
//!   user-defined operation merges the images exactly.
//!
//! Either way every rank rounds each element once. Work goes in chunks (of
//! [`DIGIT_CHUNK`] and [`IMAGE_CHUNK`] elements), so memory stays bounded whatever the
//! slice's length; every rank takes the same path for an element, since the choice is
//! made from reduced values.

use std::os::raw::{c_int, c_void};

use ::mpi::collective::{SystemOperation, UnsafeUserOperation};
use ::mpi::datatype::UserDatatype;
use ::mpi::traits::{Communicator, CommunicatorCollectives, Equivalence};

use super::window::{self, Start, MAX_DIGITS};
use super::{MpiError, MpiFloat};
use crate::exact::accumulator::WORDS;
use crate::exact::{Accumulator, RoundingFormat};

/// Elements per collective call on the general path: 1024 images are about 1.1 MB.
const IMAGE_CHUNK: usize = 1024;
/// Elements per digit chunk: 64 Ki elements are 128 KB of keys and 512 KB of digits.
const DIGIT_CHUNK: usize = 1 << 16;

/// One accumulator's fixed-size image ([`Accumulator::to_words`]), as an MPI datatype.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Image(pub(crate) [i64; WORDS]);

// SAFETY: `Image` is `repr(transparent)` over `WORDS` contiguous `i64`s, which is what
// the datatype describes.
unsafe impl Equivalence for Image {
    type Out = UserDatatype;
    fn equivalent_datatype() -> UserDatatype {
        UserDatatype::contiguous(WORDS as ::mpi::Count, &i64::equivalent_datatype())
    }
}

/// The MPI user function: `inout[k] = in[k] + inout[k]`, exactly, for every image `k`.
///
/// # Safety
/// MPI calls it with two buffers of `*len` elements of the datatype of [`Image`].
unsafe extern "C" fn merge_images(
    input: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _datatype: *mut ::mpi::ffi::MPI_Datatype,
) {
    // SAFETY: MPI passes `*len` elements of `Image` in each buffer (the contract above);
    // they do not overlap, and a length below zero never occurs (taken as 0).
    let (input, inout) = unsafe {
        let n = usize::try_from(*len).unwrap_or(0);
        (
            std::slice::from_raw_parts(input as *const Image, n),
            std::slice::from_raw_parts_mut(inout as *mut Image, n),
        )
    };
    for (a, b) in input.iter().zip(inout) {
        Accumulator::merge_words(&mut b.0, &a.0);
    }
}

/// The three element-wise allreduces the exact sum is made of. MPI runs them
/// ([`OnComm`]); the tests run them on simulated ranks, combining in random trees.
pub(crate) trait Reductions {
    /// Ranks taking part.
    fn ranks(&self) -> usize;
    /// `recv[i]` = the largest `send[i]` over the ranks.
    fn max_u16(&self, send: &[u16], recv: &mut [u16]);
    /// `recv[i]` = the sum of `send[i]` over the ranks (it never overflows here).
    fn sum_i64(&self, send: &[i64], recv: &mut [i64]);
    /// `recv[i]` = the exact merge of `send[i]` over the ranks.
    fn merge(&self, send: &[Image], recv: &mut [Image]);
}

/// [`Reductions`] by `MPI_Allreduce` on a communicator.
struct OnComm<'c, C>(&'c C);

impl<C: Communicator> Reductions for OnComm<'_, C> {
    fn ranks(&self) -> usize {
        usize::try_from(self.0.size()).unwrap_or(usize::MAX)
    }
    fn max_u16(&self, send: &[u16], recv: &mut [u16]) {
        self.0.all_reduce_into(send, recv, SystemOperation::max());
    }
    fn sum_i64(&self, send: &[i64], recv: &mut [i64]) {
        self.0.all_reduce_into(send, recv, SystemOperation::sum());
    }
    fn merge(&self, send: &[Image], recv: &mut [Image]) {
        // SAFETY: `merge_images` reads and writes `*len` images in each buffer, and is
        // only used with buffers of `Image`.
        let op = unsafe { UnsafeUserOperation::commutative(merge_images) };
        self.0.all_reduce_into(send, recv, &op);
    }
}

/// Replaces `values`, on every rank of `comm`, by the element-wise sum over all ranks,
/// computed exactly and rounded once (to nearest, ties to even): the same bits on every
/// rank, for every rank count, rank placement, message size and allreduce algorithm.
///
/// `T` is `f64` or `f32` (an f32 sum is rounded once to f32, never through f64).
/// Collective: every rank calls it with a slice of the same length; when the lengths
/// differ every rank gets [`MpiError::UnequalLengths`] and nothing is changed. IEEE
/// special values behave as in [`exact::sum`](crate::exact::sum).
///
/// Where a plain `MPI_Allreduce(MPI_SUM)` moves 8 bytes per `f64`, this moves 2 bytes of
/// key and 8 of digit per element (two allreduces), plus 16 more for the elements whose
/// rounding the first digit leaves open (about one in ten or twenty for sums of values
/// with random bits at 8 ranks; fewer with fewer ranks, almost none for `f32`). An element
/// that holds an infinity or a NaN, or whose sum cancels more than about 120 bits and
/// still has bits below, moves an accumulator image of about 1.1 KB, merged by a
/// user-defined operation. Up to 1023 ranks take the digits; more ranks always take the
/// images.
///
/// ```no_run
/// use fprev::mpi::rsmpi::traits::Communicator;
///
/// let universe = fprev::mpi::rsmpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let mut loss = [0.1 * f64::from(world.rank() + 1), 1e16];
/// fprev::mpi::exact_allreduce_sum(&world, &mut loss)?;
/// // loss[0] is the correctly rounded sum of 0.1, 0.2, ...: the same on every launch
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn exact_allreduce_sum<T: MpiFloat>(
    comm: &impl Communicator,
    values: &mut [T],
) -> Result<(), MpiError> {
    // one small collective first: unequal lengths would otherwise hang or corrupt
    let len = values.len() as u64;
    let mut widest = [0u64; 2];
    comm.all_reduce_into(
        &[len, u64::MAX - len][..],
        &mut widest[..],
        SystemOperation::max(),
    );
    let (longest, shortest) = (widest[0], u64::MAX - widest[1]);
    if longest != shortest {
        return Err(MpiError::UnequalLengths {
            len: values.len(),
            shortest,
            longest,
        });
    }
    reduce_exact(&OnComm(comm), values);
    Ok(())
}

/// The exact element-wise sum of `values` over the ranks of `r`, rounded once, into
/// `values` (every rank passes the same length).
pub(crate) fn reduce_exact<T: MpiFloat>(r: &impl Reductions, values: &mut [T]) {
    let format = if T::FORMAT.precision == 53 {
        RoundingFormat::F64
    } else {
        RoundingFormat::F32
    };
    let mut scratch = ChunkBuffers::default();
    let ranks = r.ranks();
    if ranks > window::MAX_RANKS {
        for start in (0..values.len()).step_by(IMAGE_CHUNK) {
            scratch.general.clear();
            scratch
                .general
                .extend(start..(start + IMAGE_CHUNK).min(values.len()));
            general(r, values, format, &mut scratch);
        }
        return;
    }
    digits(r, values, format, window::digit_bits(ranks), &mut scratch);
}

/// An element whose rounding its digits so far leave open.
#[derive(Clone, Copy)]
struct Pending {
    /// Its index in the slice.
    index: usize,
    /// This rank's value of it.
    value: f64,
    /// Where its first digit was cut.
    low: i32,
    /// Its summed digits, the first one first.
    digits: [i64; MAX_DIGITS],
}

/// Buffers reused from chunk to chunk.
#[derive(Default)]
struct ChunkBuffers {
    keys: Vec<u16>,
    largest: Vec<u16>,
    digits: Vec<i64>,
    sums: Vec<i64>,
    /// The previous chunk's elements that wait for their second digit.
    pending: Vec<Pending>,
    /// Elements that wait for their third digit.
    deeper: Vec<Pending>,
    /// Indices of the elements for the accumulator images.
    general: Vec<usize>,
    send: Vec<Image>,
    recv: Vec<Image>,
}

/// The digit path, digits of `b` bits, [`DIGIT_CHUNK`] elements at a time. The second
/// digits of one chunk's undecided elements travel in the next chunk's `MPI_SUM`, so a
/// chunk costs two collectives; the elements it leaves undecided go through
/// [`general`].
fn digits<T: MpiFloat>(
    r: &impl Reductions,
    values: &mut [T],
    format: RoundingFormat,
    b: i32,
    s: &mut ChunkBuffers,
) {
    let ranks = r.ranks() as i64;
    s.pending.clear();
    let mut start = 0;
    loop {
        let end = (start + DIGIT_CHUNK).min(values.len());
        let n = end - start;
        if n == 0 && s.pending.is_empty() {
            break;
        }
        let chunk = &values[start..end];
        s.keys.clear();
        s.keys.extend(chunk.iter().map(|v| window::key(v.to_f64())));
        s.largest.resize(n, 0);
        if n > 0 {
            r.max_u16(&s.keys, &mut s.largest);
        }
        s.digits.clear();
        // every element's digit, also where it is not read: no branch
        s.digits.extend(
            chunk
                .iter()
                .zip(&s.largest)
                .map(|(v, &k)| window::first_digit(v.to_f64(), window::cut(k, b))),
        );
        for p in &s.pending {
            s.digits.extend(window::refine(p.value, p.low - b, b));
        }
        s.sums.resize(s.digits.len(), 0);
        r.sum_i64(&s.digits, &mut s.sums);
        // the previous chunk's undecided elements, with two digits
        s.general.clear();
        s.deeper.clear();
        for (j, p) in s.pending.iter().enumerate() {
            let (digit, flags) = (s.sums[n + 2 * j], s.sums[n + 2 * j + 1]);
            let lowest_first = [digit, p.digits[0]];
            match window::resolve_refined(&lowest_first, p.low - b, b, flags, format) {
                // exact in T: rounded to T's format
                Some(sum) => values[p.index] = T::from_f64_round(sum),
                None => s.deeper.push(Pending {
                    digits: [p.digits[0], digit, 0],
                    ..*p
                }),
            }
        }
        // this chunk's elements, with one digit
        s.pending.clear();
        for (i, (&k, &d)) in s.largest.iter().zip(&s.sums[..n]).enumerate() {
            let index = start + i;
            match window::start(k, b) {
                Start::Cut(low) => match window::resolve_first(d, low, ranks, b, format) {
                    Some(sum) => values[index] = T::from_f64_round(sum),
                    None => s.pending.push(Pending {
                        index,
                        value: values[index].to_f64(),
                        low,
                        digits: [d, 0, 0],
                    }),
                },
                Start::NegativeZero => values[index] = T::from_f64_round(-0.0),
                Start::General => s.general.push(index),
            }
        }
        third_digits(r, values, format, b, s);
        general(r, values, format, s);
        start = end;
    }
}

/// The third digits of the elements in `s.deeper` (rare: a sum within `F * 2^L_2` of a
/// rounding boundary, as a tie with bits far below it, or one that cancels); those
/// still undecided join `s.general`.
fn third_digits<T: MpiFloat>(
    r: &impl Reductions,
    values: &mut [T],
    format: RoundingFormat,
    b: i32,
    s: &mut ChunkBuffers,
) {
    if s.deeper.is_empty() {
        return;
    }
    s.digits.clear();
    for p in &s.deeper {
        s.digits.extend(window::refine(p.value, p.low - 2 * b, b));
    }
    s.sums.resize(s.digits.len(), 0);
    r.sum_i64(&s.digits, &mut s.sums);
    for (j, p) in s.deeper.iter().enumerate() {
        let (digit, flags) = (s.sums[2 * j], s.sums[2 * j + 1]);
        let lowest_first = [digit, p.digits[1], p.digits[0]];
        match window::resolve_refined(&lowest_first, p.low - 2 * b, b, flags, format) {
            // exact in T: rounded to T's format
            Some(sum) => values[p.index] = T::from_f64_round(sum),
            None => s.general.push(p.index),
        }
    }
}

/// The general path on the elements of `values` listed in `s.general` (the same list
/// on every rank): accumulator images merged by the user-defined operation, at most
/// [`IMAGE_CHUNK`] elements per call.
fn general<T: MpiFloat>(
    r: &impl Reductions,
    values: &mut [T],
    format: RoundingFormat,
    s: &mut ChunkBuffers,
) {
    let mut acc = Accumulator::new();
    for part in s.general.chunks(IMAGE_CHUNK) {
        s.send.resize(part.len(), Image([0; WORDS]));
        s.recv.resize(part.len(), Image([0; WORDS]));
        for (image, &i) in s.send.iter_mut().zip(part) {
            acc.clear();
            acc.add(values[i].to_f64());
            acc.to_words(&mut image.0);
        }
        r.merge(&s.send, &mut s.recv);
        for (&i, image) in part.iter().zip(&s.recv) {
            // exact in T: rounded to T's format
            values[i] = T::from_f64_round(Accumulator::from_words(&image.0).round_to(format));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Barrier, Mutex};

    /// Ranks simulated by threads. Every collective gathers each rank's buffer, and the
    /// last rank to arrive combines them in a random tree (random pairs, either operand
    /// first), as an MPI library may; every rank gets the one result.
    struct Table {
        ranks: usize,
        barrier: Barrier,
        parts: Mutex<Vec<Vec<i64>>>,
        result: Mutex<Vec<i64>>,
        rng: Mutex<ChaCha8Rng>,
        /// An `i64` digit sum overflowed: the headroom argument failed.
        overflowed: AtomicBool,
    }

    struct SimulatedRank<'t> {
        table: &'t Table,
        rank: usize,
    }

    impl SimulatedRank<'_> {
        /// `combine(into, from)` on one element of `width` words; `false` on overflow.
        fn exchange(
            &self,
            mine: Vec<i64>,
            width: usize,
            combine: fn(&mut [i64], &[i64]) -> bool,
        ) -> Vec<i64> {
            let t = self.table;
            t.parts.lock().expect("parts")[self.rank] = mine;
            if t.barrier.wait().is_leader() {
                let mut parts = std::mem::replace(
                    &mut *t.parts.lock().expect("parts"),
                    vec![Vec::new(); t.ranks],
                );
                let mut rng = t.rng.lock().expect("rng");
                while parts.len() > 1 {
                    let from = parts.swap_remove(rng.random_range(0..parts.len()));
                    let j = rng.random_range(0..parts.len());
                    for (into, from) in parts[j].chunks_mut(width).zip(from.chunks(width)) {
                        if !combine(into, from) {
                            t.overflowed.store(true, Ordering::Relaxed);
                        }
                    }
                }
                *t.result.lock().expect("result") = parts.pop().unwrap_or_default();
            }
            t.barrier.wait();
            let out = t.result.lock().expect("result").clone();
            t.barrier.wait();
            out
        }
    }

    impl Reductions for SimulatedRank<'_> {
        fn ranks(&self) -> usize {
            self.table.ranks
        }
        fn max_u16(&self, send: &[u16], recv: &mut [u16]) {
            let mine = send.iter().map(|&k| i64::from(k)).collect();
            let out = self.exchange(mine, 1, |a, b| {
                a[0] = a[0].max(b[0]);
                true
            });
            for (r, o) in recv.iter_mut().zip(out) {
                *r = o as u16;
            }
        }
        fn sum_i64(&self, send: &[i64], recv: &mut [i64]) {
            let out = self.exchange(send.to_vec(), 1, |a, b| match a[0].checked_add(b[0]) {
                Some(s) => {
                    a[0] = s;
                    true
                }
                None => false,
            });
            recv.copy_from_slice(&out);
        }
        fn merge(&self, send: &[Image], recv: &mut [Image]) {
            let mine = send.iter().flat_map(|i| i.0).collect();
            let out = self.exchange(mine, WORDS, |a, b| {
                let (Ok(into), Ok(from)) = (
                    <&mut [i64; WORDS]>::try_from(a),
                    <&[i64; WORDS]>::try_from(b),
                ) else {
                    return false;
                };
                Accumulator::merge_words(into, from);
                true
            });
            for (r, o) in recv.iter_mut().zip(out.chunks_exact(WORDS)) {
                r.0.copy_from_slice(o);
            }
        }
    }

    /// `reduce_exact` on every rank's values (`values[rank]`), the ranks simulated by
    /// threads; every rank's result, and whether a digit sum overflowed.
    fn simulate<T: MpiFloat>(values: &[Vec<T>], seed: u64) -> (Vec<Vec<T>>, bool) {
        let ranks = values.len();
        let table = Table {
            ranks,
            barrier: Barrier::new(ranks),
            parts: Mutex::new(vec![Vec::new(); ranks]),
            result: Mutex::new(Vec::new()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            overflowed: AtomicBool::new(false),
        };
        let results = std::thread::scope(|s| {
            let handles: Vec<_> = values
                .iter()
                .enumerate()
                .map(|(rank, mine)| {
                    let table = &table;
                    std::thread::Builder::new()
                        .stack_size(1 << 20)
                        .spawn_scoped(s, move || {
                            let mut v = mine.clone();
                            reduce_exact(&SimulatedRank { table, rank }, &mut v);
                            v
                        })
                        .expect("a thread per rank")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank"))
                .collect()
        });
        (results, table.overflowed.load(Ordering::Relaxed))
    }

    /// One element's values over `ranks` ranks, of kind `kind` (see the match).
    fn column(rng: &mut ChaCha8Rng, ranks: usize, kind: usize) -> Vec<f64> {
        let sign = |negative: bool, v: f64| if negative { -v } else { v };
        let mut v: Vec<f64> = (0..ranks)
            .map(|_| match kind {
                // the bench's values: random bits over 2^-40..2^40
                0 => rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-40..=40)),
                // any finite float, subnormals included
                1 => loop {
                    let x = f64::from_bits(rng.random());
                    if x.is_finite() {
                        break x;
                    }
                },
                // subnormals and the smallest normals
                2 => sign(
                    rng.random_bool(0.5),
                    f64::from_bits(rng.random_range(0..(1u64 << 53) + (1 << 52))),
                ),
                // near the largest float: sums that overflow or cancel
                3 => sign(
                    rng.random_bool(0.5),
                    f64::MAX - f64::from(rng.random_range(0..4u8)) * 2f64.powi(971),
                ),
                // small integers: exact sums
                4 => f64::from(rng.random_range(-1000..1000i32)),
                // zeros of both signs
                5 => sign(rng.random_bool(0.5), 0.0),
                // 1 with bits at a tie's distance below: ties and near ties
                6 => sign(
                    rng.random_bool(0.5),
                    2f64.powi(-53 * rng.random_range(0..3)),
                ),
                // values spread over 2^-600..2^600
                _ => rng.random_range(-1.0..1.0) * 2f64.powi(rng.random_range(-600..=600)),
            })
            .collect();
        match rng.random_range(0..8) {
            // cancellation: the last values undo the first ones, leaving zero or what
            // else there is (sometimes a tiny value)
            0 if ranks >= 2 => {
                let half = ranks / 2;
                for i in 0..half {
                    v[ranks - 1 - i] = -v[i];
                }
                if ranks % 2 == 1 && rng.random_bool(0.5) {
                    v[half] = sign(
                        rng.random_bool(0.5),
                        2f64.powi(rng.random_range(-1074..-1000)),
                    );
                }
            }
            // an infinity or a NaN somewhere
            1 => {
                let at = rng.random_range(0..ranks);
                v[at] = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN][rng.random_range(0..3)];
            }
            // every value -0.0
            2 if kind == 5 => v.iter_mut().for_each(|x| *x = -0.0),
            _ => {}
        }
        v
    }

    /// Every rank's exact sums over `count` elements of mixed kinds, against
    /// `exact::sum` (or `sum_f32`) of each element's values.
    fn check<T: MpiFloat>(ranks: usize, count: usize, seed: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let columns: Vec<Vec<f64>> = (0..count)
            .map(|e| {
                let c = column(&mut rng, ranks, e % 8);
                // as T holds them (f32: rounded once, then exact in f64)
                c.into_iter()
                    .map(|x| T::from_f64_round(x).to_f64())
                    .collect()
            })
            .collect();
        let values: Vec<Vec<T>> = (0..ranks)
            .map(|r| columns.iter().map(|c| T::from_f64_round(c[r])).collect())
            .collect();
        let (results, overflowed) = simulate(&values, seed);
        assert!(
            !overflowed,
            "seed {seed:#x}, {ranks} ranks: a digit sum overflowed"
        );
        for (e, c) in columns.iter().enumerate() {
            let want = if T::FORMAT.precision == 53 {
                crate::exact::sum(c)
            } else {
                let narrow: Vec<f32> = c.iter().map(|&x| x as f32).collect();
                f64::from(crate::exact::sum_f32(&narrow))
            };
            for (rank, got) in results.iter().enumerate() {
                let got = got[e].to_f64();
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "seed {seed:#x}, {ranks} ranks, element {e} (kind {}), rank {rank}: \
                     {got:e}, exact {want:e}, values {c:?}",
                    e % 8
                );
            }
        }
    }

    #[test]
    fn simulated_ranks_sum_exactly_in_any_tree() {
        let seed = 0x3300;
        println!("seed {seed:#x}");
        for (i, (ranks, count)) in [
            (1, 400),
            (2, 400),
            (3, 400),
            (7, 400),
            (8, 800),
            (16, 400),
            (61, 200),
            (1023, 24),
            (1024, 8),
        ]
        .into_iter()
        .enumerate()
        {
            check::<f64>(ranks, count, seed + i as u64);
            check::<f32>(ranks, count.min(200), seed + 100 + i as u64);
        }
    }

    #[test]
    fn simulated_ranks_over_several_chunks() {
        let seed = 0x3301;
        println!("seed {seed:#x}");
        check::<f64>(3, 2 * DIGIT_CHUNK + 100, seed);
    }
}
