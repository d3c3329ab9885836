//! The exact allreduce: element-wise sums across ranks that are correctly rounded, so
//! their bits depend on nothing but the values (Collange, Defour, Graillat and Iakymchuk's
//! reproducible summation, carried across processes).
//!
//! Each rank turns each of its values into an [`Accumulator`](crate::exact::Accumulator)
//! image of fixed size; an MPI user-defined operation merges images exactly, in whatever
//! order and grouping the library's algorithm chooses; every rank rounds each merged
//! element once. Messages go out in chunks of [`CHUNK`] elements, so memory stays bounded
//! whatever the slice's length.

use std::os::raw::{c_int, c_void};

use ::mpi::collective::{SystemOperation, UnsafeUserOperation};
use ::mpi::datatype::UserDatatype;
use ::mpi::traits::{Communicator, CommunicatorCollectives, Equivalence};

use super::{MpiError, MpiFloat};
use crate::exact::accumulator::WORDS;
use crate::exact::{Accumulator, Format};

/// Elements per collective call: 1024 images are about 1.1 MB.
const CHUNK: usize = 1024;

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
/// Where a plain `MPI_Allreduce(MPI_SUM)` is one pass over 8 bytes per `f64`, this moves
/// an accumulator image of about 1.1 KB per element: it is for the sums whose bits must
/// not change (losses, checksums, tests), not for bulk gradients.
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
        Format::F64
    } else {
        Format::F32
    };
    // SAFETY: `merge_images` reads and writes `*len` images in each buffer, and is only
    // used with buffers of `Image`.
    let op = unsafe { UnsafeUserOperation::commutative(merge_images) };
    let mut send = vec![Image([0; WORDS]); CHUNK.min(values.len())];
    let mut recv = send.clone();
    let mut acc = Accumulator::new();
    for chunk in values.chunks_mut(CHUNK) {
        let (send, recv) = (&mut send[..chunk.len()], &mut recv[..chunk.len()]);
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
    Ok(())
}
