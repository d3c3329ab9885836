//! The exact allreduce: element-wise sums across ranks that are correctly rounded, so
//! their bits depend on nothing but the values (Collange, Defour, Graillat and Iakymchuk's
//! reproducible summation, carried across processes).
//!
//! Two paths, both exact, so they give the same bits:
//!
//! - The window ([`super::window`]): one `MPI_MAX` of two 16-bit keys per element (where
//!   its values' bits start and end), then each element's values as one to three signed
//!   digits of a fixed-point window just as wide as those bits, summed by `MPI_SUM` on
//!   `i64`, which is exact integer addition. No user code inside MPI.
//! - The general path, for a chunk where some element needs more digits (values spread
//!   over more than about 2^127 at 8 ranks), infinities or NaNs: each value becomes an
//!   [`Accumulator`](crate::exact::Accumulator) image of fixed size, and an MPI
//!   user-defined operation merges the images exactly.
//!
//! Either way every rank rounds each element once. Work goes in chunks (of
//! [`WINDOW_CHUNK`] and [`IMAGE_CHUNK`] elements), so memory stays bounded whatever the
//! slice's length; every rank takes the same path for a chunk, since the choice is made
//! from reduced values.

use std::os::raw::{c_int, c_void};

use ::mpi::collective::{SystemOperation, UnsafeUserOperation};
use ::mpi::datatype::UserDatatype;
use ::mpi::traits::{Communicator, CommunicatorCollectives, Equivalence};

use super::window::{self, WindowPlan};
use super::{MpiError, MpiFloat};
use crate::exact::accumulator::WORDS;
use crate::exact::{Accumulator, RoundingFormat};

/// Elements per collective call on the general path: 1024 images are about 1.1 MB.
const IMAGE_CHUNK: usize = 1024;
/// Elements per window chunk: 64 Ki elements are at most 1.5 MB of digits.
const WINDOW_CHUNK: usize = 1 << 13;

/// One accumulator's fixed-size image ([`Accumulator::to_words`]), as an MPI datatype.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Image([i64; WORDS]);

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

/// Replaces `values`, on every rank of `comm`, by the element-wise sum over all ranks,
/// computed exactly and rounded once (to nearest, ties to even): the same bits on every
/// rank, for every rank count, rank placement, message size and allreduce algorithm.
///
/// `T` is `f64` or `f32` (an f32 sum is rounded once to f32, never through f64).
/// Collective: every rank calls it with a slice of the same length; when the lengths
/// differ every rank gets [`MpiError::UnequalLengths`] and nothing is changed. IEEE
/// special values behave as in [`exact::sum`](crate::exact::sum).
///
/// Where a plain `MPI_Allreduce(MPI_SUM)` moves 8 bytes per `f64`, this moves 4 bytes of
/// keys and 8 per digit (two allreduces): 12 when an element's values share one binade,
/// 20 when they lie within about 2^67 of each other, 28 within about 2^127 (at 8 ranks;
/// digits hold fewer bits for more ranks), and about 1.1 KB
/// (an accumulator image, merged by a user-defined operation) for a chunk where they do
/// not. Up to 1023 ranks take the first path; more ranks always take the second.
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
    let format = if T::FORMAT.precision == 53 {
        RoundingFormat::F64
    } else {
        RoundingFormat::F32
    };
    let ranks = usize::try_from(comm.size()).unwrap_or(usize::MAX);
    let b = window::digit_bits(ranks);
    let mut scratch = ChunkBuffers::default();
    for chunk in values.chunks_mut(WINDOW_CHUNK) {
        if ranks > window::MAX_RANKS || !window_chunk(comm, chunk, format, b, &mut scratch) {
            for part in chunk.chunks_mut(IMAGE_CHUNK) {
                image_chunk(comm, part, format, &mut scratch);
            }
        }
    }
    Ok(())
}

/// Buffers reused from chunk to chunk.
#[derive(Default)]
struct ChunkBuffers {
    keys: Vec<u16>,
    largest: Vec<u16>,
    plans: Vec<WindowPlan>,
    digits: Vec<i64>,
    sums: Vec<i64>,
    send: Vec<Image>,
    recv: Vec<Image>,
}

/// The window path on one chunk, digits of `b` bits; `false` (with `chunk` unchanged)
/// when some element needs the general path, which every rank learns from the same
/// reduced keys.
fn window_chunk<T: MpiFloat>(
    comm: &impl Communicator,
    chunk: &mut [T],
    format: RoundingFormat,
    b: i32,
    s: &mut ChunkBuffers,
) -> bool {
    let n = chunk.len();
    s.keys.clear();
    s.keys
        .extend(chunk.iter().flat_map(|v| window::key(v.to_f64())));
    s.largest.resize(2 * n, 0);
    comm.all_reduce_into(&s.keys[..], &mut s.largest[..], SystemOperation::max());
    s.plans.clear();
    let mut total = 0;
    for k in s.largest.chunks_exact(2) {
        let plan = window::plan([k[0], k[1]], b);
        match plan {
            WindowPlan::General => return false,
            WindowPlan::Window { digits, .. } => total += digits,
            WindowPlan::Zero(_) => {}
        }
        s.plans.push(plan);
    }
    // every element's digits, one after the other, as its plan says
    s.digits.clear();
    s.digits.resize(total, 0);
    let mut at = 0;
    for (v, plan) in chunk.iter().zip(&s.plans) {
        if let WindowPlan::Window { base, digits } = *plan {
            window::place(v.to_f64(), base, b, &mut s.digits[at..at + digits]);
            at += digits;
        }
    }
    s.sums.resize(total, 0);
    if total > 0 {
        comm.all_reduce_into(&s.digits[..], &mut s.sums[..], SystemOperation::sum());
    }
    let mut at = 0;
    for (v, plan) in chunk.iter_mut().zip(&s.plans) {
        let sum = match *plan {
            WindowPlan::Zero(z) => z,
            WindowPlan::Window { base, digits } => {
                at += digits;
                window::round(&s.sums[at - digits..at], base, b, format)
            }
            // not in a chunk that got here
            WindowPlan::General => continue,
        };
        // exact in T: rounded to T's format
        *v = T::from_f64_round(sum);
    }
    true
}

/// The general path on at most [`IMAGE_CHUNK`] elements: accumulator images merged by
/// the user-defined operation.
fn image_chunk<T: MpiFloat>(
    comm: &impl Communicator,
    chunk: &mut [T],
    format: RoundingFormat,
    s: &mut ChunkBuffers,
) {
    // SAFETY: `merge_images` reads and writes `*len` images in each buffer, and is only
    // used with buffers of `Image`.
    let op = unsafe { UnsafeUserOperation::commutative(merge_images) };
    let mut acc = Accumulator::new();
    s.send.resize(chunk.len(), Image([0; WORDS]));
    s.recv.resize(chunk.len(), Image([0; WORDS]));
    let (send, recv) = (&mut s.send[..chunk.len()], &mut s.recv[..chunk.len()]);
    for (image, v) in send.iter_mut().zip(chunk.iter()) {
        acc.clear();
        acc.add(v.to_f64());
        acc.to_words(&mut image.0);
    }
    comm.all_reduce_into(&send[..], &mut recv[..], &op);
    for (v, image) in chunk.iter_mut().zip(recv.iter()) {
        // exact in T: rounded to T's format
        *v = T::from_f64_round(Accumulator::from_words(&image.0).round_to(format));
    }
}
