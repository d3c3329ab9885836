//! The type-erased engine behind a [`RunningReduction`](super::RunningReduction): the
//! float kind of a generic `T`, the shape's combiner for that kind, and the per-reduction
//! state ([`On`]) that stores terms a chunk at a time and is kept for reuse on its thread.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use half::{bf16, f16};

use super::super::super::call_site::CallSite;
use super::super::super::context;
use super::super::super::entropy;
use super::super::super::rng;
use super::super::super::session;
use super::super::super::state::{self, LOOPS, SHAPES, VARY_CALL};
use super::super::stream::{SiteStream, Stream};
use super::super::{CombineShape, Combiner, CHUNK, PER_SITE};

/// The float format behind a generic `T`, by type name (decided per monomorphized type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FloatKind {
    F32,
    F64,
    F16,
    BF16,
}

pub(super) fn kind_of<T>() -> Option<FloatKind> {
    FloatKind::named(std::any::type_name::<T>(), std::mem::size_of::<T>())
}

impl FloatKind {
    /// The kind of the type with this name and size. Not generic: the string
    /// comparisons are compiled here, optimized, not in every (often unoptimized) test
    /// build that starts a reduction.
    pub(super) fn named(name: &str, size: usize) -> Option<FloatKind> {
        match (name, size) {
            ("f32", 4) => Some(FloatKind::F32),
            ("f64", 8) => Some(FloatKind::F64),
            ("half::binary16::f16", 2) => Some(FloatKind::F16),
            ("half::bfloat::bf16", 2) => Some(FloatKind::BF16),
            _ => None,
        }
    }

    /// Bytes per value.
    pub(super) fn size(self) -> usize {
        match self {
            FloatKind::F32 => 4,
            FloatKind::F64 => 8,
            FloatKind::F16 | FloatKind::BF16 => 2,
        }
    }
}

// One lives per running reduction, already inside a `Box`: boxing each variant again
// would only add an indirection to every chunk.
#[allow(clippy::large_enum_variant)]
pub(super) enum Active {
    F32(Combiner<f32>),
    F64(Combiner<f64>),
    F16(Combiner<f16>),
    BF16(Combiner<bf16>),
}

macro_rules! each_kind {
    ($on:expr, $c:ident => $body:expr) => {
        match $on {
            Active::F32($c) => $body,
            Active::F64($c) => $body,
            Active::F16($c) => $body,
            Active::BF16($c) => $body,
        }
    };
}

impl Active {
    pub(super) fn new(kind: FloatKind, shape: CombineShape) -> Active {
        match kind {
            FloatKind::F32 => Active::F32(Combiner::new(shape)),
            FloatKind::F64 => Active::F64(Combiner::new(shape)),
            FloatKind::F16 => Active::F16(Combiner::new(shape)),
            FloatKind::BF16 => Active::BF16(Combiner::new(shape)),
        }
    }

    /// Starts over in `shape` for terms of `kind`, keeping what can be kept.
    pub(super) fn restart(&mut self, kind: FloatKind, shape: CombineShape) {
        match (&mut *self, kind) {
            (Active::F32(c), FloatKind::F32) => c.reset(shape),
            (Active::F64(c), FloatKind::F64) => c.reset(shape),
            (Active::F16(c), FloatKind::F16) => c.reset(shape),
            (Active::BF16(c), FloatKind::BF16) => c.reset(shape),
            _ => *self = Active::new(kind, shape),
        }
    }

    /// Bytes per term.
    pub(super) fn term_size(&self) -> usize {
        match self {
            Active::F32(_) => FloatKind::F32.size(),
            Active::F64(_) => FloatKind::F64.size(),
            Active::F16(_) => FloatKind::F16.size(),
            Active::BF16(_) => FloatKind::BF16.size(),
        }
    }
}

/// The type-erased part of a running reduction (the shape's combiner and the random
/// stream). Its methods are not generic, so they are compiled once, here, rather than
/// in every crate that instantiates `RunningReduction<T>`: a user's crate pays for a thin
/// generic shell only.
pub(super) struct Engine {
    active: Active,
    stream: Stream,
}

/// A combined value of one of the float kinds.
pub(super) enum Value {
    F32(f32),
    F64(f64),
    F16(f16),
    BF16(bf16),
}

/// What a site draws when [`FPREV_SITES`](super::super::vars::FPREV_SITES) leaves it out
/// (no shape has this code).
pub(super) const DISABLED: u32 = 0xFF_FFFF;

impl Engine {
    /// The state of a new reduction at `site` over terms of `kind`, or `None` when it
    /// runs as written.
    #[cold]
    #[inline(never)]
    pub(super) fn start(site: &'static CallSite, kind: FloatKind, small: bool) -> Option<Box<On>> {
        let st = session::state();
        if st & LOOPS == 0 {
            return None;
        }
        if st & VARY_CALL != 0 {
            return Self::per_call(site, kind, st, small);
        }
        let (shape, stream) = Self::per_site(site, st)?;
        site.mark_reached();
        if entropy::is_recording() {
            entropy::record(site.describe(), &[shape.code()]);
        }
        if shape == CombineShape::Sequential {
            // The order as written: the loop itself gives it, bit for bit, at its own
            // speed (`FPREV_SCRAMBLE=identity`, which `cargo fprev test` runs first to
            // learn which tests reach a site).
            return None;
        }
        Some(On::start(kind, shape, Some(stream), small))
    }

    /// [`start`](Self::start) when every call draws its own shape ([`VARY_CALL`]).
    pub(super) fn per_call(
        site: &'static CallSite,
        kind: FloatKind,
        st: u8,
        small: bool,
    ) -> Option<Box<On>> {
        if !site.enabled() {
            return None;
        }
        site.mark_reached();
        let (key, invocation) = context::next_key(site.id());
        let mut rng = rng::stream(state::seed(), key, invocation);
        let shuffle = site.shuffle.unwrap_or(state::decode_shuffle(st));
        let shape = CombineShape::draw(st & SHAPES != 0, shuffle, &mut rng);
        if entropy::is_recording() {
            entropy::record(site.describe(), &[shape.code()]);
        }
        if shape == CombineShape::Sequential {
            return None;
        }
        let mut on = On::start(kind, shape, None, small);
        on.engine.stream.set(rng);
        Some(on)
    }

    /// The shape of `site` in the current configuration and the stream it goes on with.
    ///
    /// One platform per seed: the same stream at every call, in every thread and test,
    /// so the shape and every draw it makes depend only on the seed, the site and the
    /// number of terms. The shape is drawn once per configuration and filed in the site;
    /// the stream is re-created, past the shape's draws, only if the combining draws.
    pub(super) fn per_site(site: &'static CallSite, st: u8) -> Option<(CombineShape, SiteStream)> {
        let epoch = state::epoch();
        let code = match site.drawn(epoch) {
            Some(code) => code,
            None => Self::draw_for_site(site, epoch),
        };
        if code == DISABLED {
            return None;
        }
        let shape = CombineShape::from_code(code as usize)?;
        let stream = SiteStream {
            seed: state::seed(),
            key: site.id() ^ PER_SITE,
            mix: st & SHAPES != 0,
            shuffle: site.shuffle.unwrap_or(state::decode_shuffle(st)),
        };
        Some((shape, stream))
    }

    /// Draws the shape of `site` for the configuration of `epoch` and files it.
    #[cold]
    #[inline(never)]
    pub(super) fn draw_for_site(site: &'static CallSite, epoch: u64) -> u32 {
        let code = if site.enabled() {
            let st = session::state();
            let shuffle = site.shuffle.unwrap_or(state::decode_shuffle(st));
            let mut rng = rng::stream(state::seed(), site.id() ^ PER_SITE, 0);
            CombineShape::draw(st & SHAPES != 0, shuffle, &mut rng).code() as u32
        } else {
            DISABLED
        };
        site.file_drawn(epoch, code);
        code
    }

    /// Hands `len` terms at `ptr` to the combiner.
    ///
    /// # Safety
    /// `ptr` points to `len` initialised values of this engine's float type, borrowed
    /// only for this call.
    #[inline(never)]
    unsafe fn absorb(&mut self, ptr: *mut u8, len: usize) {
        let stream = &mut self.stream;
        // SAFETY: per the caller.
        unsafe {
            each_kind!(&mut self.active, c => c.absorb(std::slice::from_raw_parts_mut(ptr.cast(), len), stream));
        }
    }

    pub(super) fn finish(&mut self) -> Option<Value> {
        match &mut self.active {
            Active::F32(c) => c.finish().map(Value::F32),
            Active::F64(c) => c.finish().map(Value::F64),
            Active::F16(c) => c.finish().map(Value::F16),
            Active::BF16(c) => c.finish().map(Value::BF16),
        }
    }
}

/// The state of a running reduction, boxed. Non-generic: the terms are kept as raw
/// words, so one box serves every float kind and is reused from reduction to reduction
/// ([`SPARE`]).
pub(super) struct On {
    pub(super) engine: Engine,
    /// Terms not yet handed to the engine, stored as the engine's float type from the
    /// start of these words (`u64`s, so every kind is aligned). Only the first `len`
    /// terms are initialised: growing the words writes nothing.
    pub(super) words: Vec<MaybeUninit<u64>>,
    /// Terms stored.
    pub(super) len: usize,
    /// When `len` reaches it, [`full`](On::full) runs: the lesser of `cap` and the
    /// terms the words hold.
    pub(super) room: usize,
    /// Terms the engine takes at once.
    pub(super) cap: usize,
    /// `-0.0` of the engine's float type, stored at the start of this word.
    pub(super) zero: u64,
    /// Bytes per term (the engine's float type).
    pub(super) size: usize,
    /// Bytes of the words beyond [`CHUNK`] counted in [`KEPT_BEYOND_CHUNK`].
    pub(super) kept: usize,
}

/// Bytes of words beyond [`CHUNK`] that finished states keep, over every thread: a keyed
/// reduction's long elements (`g[j] -= ..` over 52,181 rows and 95 columns) then find
/// their words grown and touched at the next call, instead of growing them again page by
/// page; past [`KEEP_BEYOND_CHUNK`] a finished state gives its words back.
static KEPT_BEYOND_CHUNK: AtomicUsize = AtomicUsize::new(0);

/// At most this many bytes of words beyond the first [`CHUNK`] of each state are kept,
/// summed over the whole process.
pub(super) const KEEP_BEYOND_CHUNK: usize = 64 << 20;

/// `n` words, uninitialised.
fn uninit_words(n: usize) -> Vec<MaybeUninit<u64>> {
    let mut words = Vec::with_capacity(n);
    // SAFETY: the capacity is `n`, and a `MaybeUninit` needs no initialisation.
    unsafe { words.set_len(n) };
    words
}

impl Drop for On {
    fn drop(&mut self) {
        if self.kept > 0 {
            KEPT_BEYOND_CHUNK.fetch_sub(self.kept, Ordering::Relaxed);
        }
    }
}

thread_local! {
    /// States of finished reductions, ready for the next ones on this thread. Kept as
    /// the boxes that `RunningReduction` holds, so taking one moves a pointer.
    #[allow(clippy::vec_box)]
    static SPARE: RefCell<Vec<Box<On>>> = const { RefCell::new(Vec::new()) };
    /// More finished states, for the elements of keyed reductions, which start many at
    /// once, call after call (`g[j] -= ..` over 95 columns): reused, their words are
    /// already grown and touched, where new ones grew from a few words each time.
    #[allow(clippy::vec_box)]
    static SMALL_SPARE: RefCell<Vec<Box<On>>> = const { RefCell::new(Vec::new()) };
}

/// States kept per thread for keyed reductions' elements: each holds [`CHUNK`] words
/// (8 KiB), so 2 MiB per thread, plus what [`KEEP_BEYOND_CHUNK`] lets all threads keep.
pub(super) const SMALL_SPARES: usize = 256;

/// Words a [`small`](On::start) state starts with.
pub(super) const SMALL_WORDS: usize = 4;

/// Spare states kept per thread: enough for reductions nested a few deep (a reduction
/// whose terms call scrambled functions), each a few KiB.
pub(super) const SPARES: usize = 4;

impl On {
    /// A state for a new reduction, reused from this thread's spares if there is one;
    /// `small`: one of many alive at once (a keyed reduction's elements), which takes
    /// its spare from [`SMALL_SPARE`] and otherwise starts with room for a few terms,
    /// growing as they come (a keyed reduction may have millions of elements).
    pub(super) fn start(
        kind: FloatKind,
        shape: CombineShape,
        stream: Option<SiteStream>,
        small: bool,
    ) -> Box<On> {
        let pool = if small { &SMALL_SPARE } else { &SPARE };
        let spare = pool
            .try_with(|s| s.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        let mut on = match spare {
            Some(mut on) => {
                on.engine.active.restart(kind, shape);
                on
            }
            None => Box::new(On {
                engine: Engine {
                    active: Active::new(kind, shape),
                    stream: Stream::none(),
                },
                words: uninit_words(if small { SMALL_WORDS } else { CHUNK }),
                len: 0,
                room: 0,
                cap: 0,
                zero: 0,
                size: 0,
                kept: 0,
            }),
        };
        on.engine.stream.restart(stream);
        let cap = each_kind!(&on.engine.active, c => c.cap);
        on.len = 0;
        on.size = kind.size();
        on.cap = cap;
        on.room = cap.min(on.words.len() * 8 / on.engine.active.term_size());
        let zero = std::ptr::addr_of_mut!(on.zero);
        // SAFETY: a `u64` is large and aligned enough for each of the float types.
        unsafe {
            match kind {
                FloatKind::F32 => zero.cast::<f32>().write(-0.0),
                FloatKind::F64 => zero.cast::<f64>().write(-0.0),
                FloatKind::F16 => zero.cast::<f16>().write(f16::NEG_ZERO),
                FloatKind::BF16 => zero.cast::<bf16>().write(bf16::NEG_ZERO),
            }
        }
        on
    }

    /// Stores the term whose bytes (a value of the engine's float type) are at `t`.
    /// Out of line and not generic, for unoptimized builds ([`UNOPTIMIZED`](super::UNOPTIMIZED)).
    pub(super) fn push_raw(&mut self, t: *const u8) {
        // SAFETY: `len < room`, so the term fits in the words, which are aligned for
        // every float type; `t` points to a value of the engine's type (per the caller).
        // One typed copy per kind: a copy of a run-time size would be a `memcpy` call.
        unsafe {
            let (words, len) = (self.words.as_mut_ptr().cast::<u64>(), self.len);
            match self.size {
                8 => *words.wrapping_add(len) = t.cast::<u64>().read_unaligned(),
                4 => *words.cast::<u32>().wrapping_add(len) = t.cast::<u32>().read_unaligned(),
                _ => *words.cast::<u16>().wrapping_add(len) = t.cast::<u16>().read_unaligned(),
            }
        }
        // `len < room`, so no overflow (the dev profile's overflow check would be a branch).
        self.len = self.len.wrapping_add(1);
        if self.len == self.room {
            self.full();
        }
    }

    /// `len` reached `room`: the engine takes a full chunk, or the words grow.
    #[cold]
    #[inline(never)]
    pub(super) fn full(&mut self) {
        if self.len == self.cap {
            self.drain();
        } else {
            let size = self.engine.active.term_size();
            self.room = (self.room * 2).min(self.cap);
            let words = (self.room * size).div_ceil(8);
            self.words.reserve_exact(words - self.words.len());
            // SAFETY: reserved, and a `MaybeUninit` needs no initialisation.
            unsafe { self.words.set_len(words) };
        }
    }

    /// Hands the stored terms to the engine.
    pub(super) fn drain(&mut self) {
        // SAFETY: `push` stored `len` values of the engine's float type at the start of
        // the words, borrowed only for this call.
        unsafe { self.engine.absorb(self.words.as_mut_ptr().cast(), self.len) };
        self.len = 0;
    }

    /// Writes `-0.0` of the engine's float type at `dst`. One typed copy per kind, as in
    /// [`push_raw`](On::push_raw): a copy of a run-time size would be a `memcpy` call.
    pub(super) fn write_zero(&self, dst: *mut u8) {
        let zero = std::ptr::addr_of!(self.zero);
        // SAFETY: `dst` has room for a value of the engine's type (per the caller), whose
        // `-0.0` is stored at the start of `zero`.
        unsafe {
            match self.size {
                8 => dst.cast::<u64>().write_unaligned(zero.read()),
                4 => dst.cast::<u32>().write_unaligned(zero.cast::<u32>().read()),
                _ => dst.cast::<u16>().write_unaligned(zero.cast::<u16>().read()),
            }
        }
    }

    /// Keeps the words beyond [`CHUNK`] while the process keeps fewer than
    /// [`KEEP_BEYOND_CHUNK`] bytes so; otherwise gives them back.
    fn keep_or_shrink(&mut self) {
        self.keep_within(&KEPT_BEYOND_CHUNK, KEEP_BEYOND_CHUNK);
    }

    /// [`keep_or_shrink`](Self::keep_or_shrink) with the count `kept` and its `budget`.
    pub(super) fn keep_within(&mut self, kept: &AtomicUsize, budget: usize) {
        let beyond = self.words.len().saturating_sub(CHUNK) * 8;
        if beyond == self.kept {
            return;
        }
        kept.fetch_sub(self.kept, Ordering::Relaxed);
        self.kept = 0;
        if beyond == 0 {
            return;
        }
        let before = kept.fetch_add(beyond, Ordering::Relaxed);
        if before.saturating_add(beyond) <= budget {
            self.kept = beyond;
            return;
        }
        kept.fetch_sub(beyond, Ordering::Relaxed);
        self.words.truncate(CHUNK);
        self.words.shrink_to_fit();
    }

    /// Combines the terms, writes the value (of the engine's float type) at `dst` if
    /// any term came, and keeps the state for a later reduction on this thread.
    #[inline(never)]
    pub(super) fn finish(mut self: Box<On>, dst: *mut u8) -> bool {
        self.drain();
        let value = self.engine.finish();
        let written = value.is_some();
        // SAFETY: `dst` has room for a value of the engine's type (per the caller).
        unsafe {
            match value {
                Some(Value::F32(v)) => dst.cast::<f32>().write_unaligned(v),
                Some(Value::F64(v)) => dst.cast::<f64>().write_unaligned(v),
                Some(Value::F16(v)) => dst.cast::<f16>().write_unaligned(v),
                Some(Value::BF16(v)) => dst.cast::<bf16>().write_unaligned(v),
                None => {}
            }
        }
        self.keep_or_shrink();
        let _ = SPARE.try_with(move |s| {
            let Ok(mut s) = s.try_borrow_mut() else {
                return;
            };
            if s.len() < SPARES {
                s.push(self);
                return;
            }
            let _ = SMALL_SPARE.try_with(move |small| {
                if let Ok(mut small) = small.try_borrow_mut() {
                    if small.len() < SMALL_SPARES {
                        small.push(self);
                    }
                }
            });
        });
        written
    }
}
