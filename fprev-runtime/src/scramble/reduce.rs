//! Reassociated reductions: a float reduction keeps its loop order, only the order in
//! which its terms are *combined* changes.
//!
//! This is what `#[fprev::scramble]` does by default. A `for` loop declares nothing about
//! the order of its iterations, so reordering them can change what a program means (a
//! prefix sum, a recurrence, a two-pointer walk). The association of a float reduction
//! (`s += e` where nothing else reads `s`) is different: a compiler with fast-math, a SIMD
//! library, a BLAS or a thread pool may combine its terms in another shape, and the
//! result then differs by rounding only. [`Shape`] lists the shapes fprev draws from:
//! the orders real libraries use.
//!
//! ```
//! use fprev_runtime::scramble::reduce::{combine, Shape};
//! use fprev_runtime::scramble::rng::stream;
//!
//! let terms = [1e8f32, 1.0, -1e8, 1.0];
//! let seq = combine(Shape::Sequential, &terms, &mut stream(0, 0, 0));
//! let lanes = combine(Shape::Lanes { lanes: 2, pairwise: false }, &terms, &mut stream(0, 0, 0));
//! assert_eq!((seq, lanes), (1.0, 2.0)); // ((1e8+1)-1e8)+1 vs (1e8-1e8)+(1+1)
//! ```

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

use half::{bf16, f16};

use super::rng::{self, below, ScrambleRng};
use super::state::{self, CallSite, LOOPS, SHAPES, VARY_CALL};
use super::Shuffle;
use crate::float::ProbeFloat;
use crate::wrap::Wrap;

/// How a reduction's terms (its initial value first) are combined.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One accumulator, terms in loop order: what the plain code does.
    Sequential,
    /// One accumulator, terms in a permuted order (buffered).
    Permuted(Shuffle),
    /// `lanes` accumulators, term `i` into lane `i % lanes` (SIMD, ndarray, NumPy's
    /// inner loop), the lanes then combined in order or pairwise.
    Lanes {
        /// Number of lanes, 2..=32.
        lanes: u8,
        /// Combine the lanes pairwise (a tree) rather than one after another.
        pairwise: bool,
    },
    /// Blocks of `block` terms summed in order, block sums added to a running total
    /// (BLAS `kc` blocking).
    Blocked {
        /// Terms per block.
        block: u32,
    },
    /// Pairwise summation in a binary counter (NumPy-like, O(log n) state).
    Pairwise,
    /// A rayon-like split over `threads` contiguous parts, each summed in order, the
    /// parts combined as the join tree does (buffered).
    Threads {
        /// Number of parts, 1..=64.
        threads: u8,
    },
    /// A random binary tree over the terms in order (buffered).
    RandomTree,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Shape::Sequential => f.write_str("sequential"),
            Shape::Permuted(s) => write!(f, "{s}-permuted"),
            Shape::Lanes { lanes, pairwise } => {
                let how = if pairwise { "pairwise" } else { "in order" };
                write!(f, "{lanes} lanes, combined {how}")
            }
            Shape::Blocked { block } => write!(f, "blocks of {block}"),
            Shape::Pairwise => f.write_str("pairwise"),
            Shape::Threads { threads } => write!(f, "{threads}-way split"),
            Shape::RandomTree => f.write_str("random tree"),
        }
    }
}

impl Shape {
    /// Draws a shape: with `mix`, uniformly among the kinds above (parameters drawn too);
    /// otherwise the `shuffle`-permuted sequential order ([`Shuffle::Identity`]: the plain
    /// sequential order).
    pub fn draw(mix: bool, shuffle: Shuffle, rng: &mut ScrambleRng) -> Shape {
        if !mix {
            return match shuffle {
                Shuffle::Identity => Shape::Sequential,
                s => Shape::Permuted(s),
            };
        }
        match below(rng, 6) {
            0 => Shape::Permuted(Shuffle::FisherYates),
            1 => Shape::Lanes {
                lanes: 2 + below(rng, 31) as u8,
                pairwise: below(rng, 2) == 1,
            },
            2 => Shape::Blocked {
                block: 1 << (2 + below(rng, 8)),
            },
            3 => Shape::Pairwise,
            4 => Shape::Threads {
                threads: 2 + below(rng, 15) as u8,
            },
            _ => Shape::RandomTree,
        }
    }

    fn code(self) -> usize {
        match self {
            Shape::Sequential => 1,
            Shape::Permuted(s) => 2 + s as usize,
            Shape::Lanes { lanes, pairwise } => 16 + 2 * lanes as usize + pairwise as usize,
            Shape::Blocked { block } => 128 + block as usize,
            Shape::Pairwise => 8,
            Shape::Threads { threads } => 1 << 20 | threads as usize,
            Shape::RandomTree => 9,
        }
    }
}

/// Salt of the per-site streams, so that they never coincide with a per-call stream.
const PER_SITE: u64 = 0x7065_722d_7369_7465;

/// Buffered shapes hold at most this many terms; a longer reduction is combined in
/// chunks of this size (each in the drawn shape), the chunk results added in order, so
/// memory stays bounded whatever the trip count.
pub const BUFFER_CAP: usize = 1 << 20;

fn opt_add<F: ProbeFloat>(acc: Option<F>, t: F) -> F {
    match acc {
        Some(a) => a.add(t),
        None => t,
    }
}

/// Combines `terms` (non-empty) in `shape`; buffered shapes draw from `rng`.
///
/// ```
/// use fprev_runtime::scramble::reduce::{combine, Shape};
/// use fprev_runtime::scramble::rng::stream;
/// let x = [1.0f64, 2.0, 3.0, 4.0];
/// assert_eq!(combine(Shape::Pairwise, &x, &mut stream(1, 2, 3)), 10.0);
/// ```
pub fn combine<F: ProbeFloat>(shape: Shape, terms: &[F], rng: &mut ScrambleRng) -> F {
    let mut c = Combiner::new(shape);
    let mut terms = terms.to_vec();
    for chunk in terms.chunks_mut(c.cap) {
        c.absorb(chunk, rng);
    }
    c.finish().unwrap_or(F::ZERO)
}

/// Terms are appended to a chunk of this many (a store, no dependent addition per term)
/// and each full chunk is combined by a tight loop of its shape: block sizes and the
/// pairwise counter's levels are powers of two that divide it, so chunking changes no
/// shape.
const CHUNK: usize = 1024;

/// Permuted shapes shuffle at most this many terms at once (512 KiB of f64, within the
/// caches close to the core), so a long reduction is permuted block by block.
const PERMUTE_CAP: usize = 1 << 16;

/// Streaming state of one reduction in one shape.
struct Combiner<F: ProbeFloat> {
    shape: Shape,
    /// Terms per call of [`absorb`](Self::absorb): [`CHUNK`] for streaming shapes, the
    /// shape's cap for buffered ones.
    cap: usize,
    /// Terms combined so far (the global index of `buf[0]`).
    done: usize,
    acc: Option<F>,
    lanes: [Option<F>; 32],
    stack: Vec<(u32, F)>,
}

impl<F: ProbeFloat> Combiner<F> {
    fn new(shape: Shape) -> Self {
        let cap = match shape {
            Shape::Permuted(_) => PERMUTE_CAP,
            Shape::Threads { .. } | Shape::RandomTree => BUFFER_CAP,
            _ => CHUNK,
        };
        Combiner {
            shape,
            cap,
            done: 0,
            acc: None,
            lanes: [None; 32],
            stack: Vec::new(),
        }
    }

    /// Takes the next terms, at most `self.cap` of them, and whole `cap`-sized runs
    /// except at the end of the reduction (so blocks and the pairwise counter stay
    /// aligned). Buffered shapes reorder the slice in place.
    fn absorb(&mut self, terms: &mut [F], rng: &mut ScrambleRng) {
        if self.cap == CHUNK {
            self.process(terms, rng);
        } else {
            self.process_buffered(terms, rng);
        }
    }

    /// Combines the terms of a buffered shape (permuted, thread split, random tree).
    fn process_buffered(&mut self, buf: &mut [F], rng: &mut ScrambleRng) {
        if buf.is_empty() {
            return;
        }
        let chunk = match self.shape {
            Shape::Permuted(s) => {
                rng::shuffle(s, buf, rng);
                sequential(buf)
            }
            Shape::Threads { threads } => split(buf, threads as usize),
            _ => random_tree(buf, rng),
        };
        self.acc = Some(opt_add(self.acc, chunk));
        self.done += buf.len();
    }

    /// Combines the terms of a streaming shape into its state.
    fn process(&mut self, buf: &[F], _rng: &mut ScrambleRng) {
        let n = buf.len();
        match self.shape {
            Shape::Sequential => {
                let mut acc = self.acc;
                for &t in buf {
                    acc = Some(opt_add(acc, t));
                }
                self.acc = acc;
            }
            Shape::Lanes { lanes, .. } => {
                let k = lanes as usize;
                // The first term of each lane starts it (no `0.0 +`, which would turn a
                // `-0.0` term into `+0.0`); after that, plain adds.
                let mut rest = buf;
                while self.done < k && !rest.is_empty() {
                    self.lanes[self.done] = Some(rest[0]);
                    self.done += 1;
                    rest = &rest[1..];
                }
                let mut l = [F::ZERO; 32];
                for (dst, src) in l.iter_mut().zip(&self.lanes[..k]) {
                    *dst = src.unwrap_or(F::ZERO);
                }
                let mut lane = self.done % k;
                for &t in rest {
                    l[lane] = l[lane].add(t);
                    lane += 1;
                    if lane == k {
                        lane = 0;
                    }
                }
                for (dst, &src) in self.lanes[..k].iter_mut().zip(&l) {
                    if dst.is_some() {
                        *dst = Some(src);
                    }
                }
                self.done += rest.len();
                return;
            }
            Shape::Blocked { block } => {
                // Only the reduction's last call can end inside a block, so each call
                // starts on a block boundary: `block` divides `CHUNK`.
                let b = block as usize;
                let mut acc = self.acc;
                for blk in buf.chunks(b) {
                    let v = sequential(blk);
                    if blk.len() == b {
                        acc = Some(opt_add(acc, v));
                    } else {
                        self.lanes[0] = Some(v);
                    }
                }
                self.acc = acc;
            }
            Shape::Pairwise => {
                if n == CHUNK && self.done % CHUNK == 0 {
                    // An aligned full chunk is one complete subtree of the counter.
                    self.push_node((CHUNK.trailing_zeros(), halving(buf)));
                } else {
                    for &t in buf {
                        self.push_node((0, t));
                    }
                }
            }
            _ => unreachable!("buffered shapes go through process_buffered"),
        }
        self.done += n;
    }

    fn push_node(&mut self, mut node: (u32, F)) {
        while let Some(&(level, v)) = self.stack.last() {
            if level != node.0 {
                break;
            }
            self.stack.pop();
            node = (level + 1, v.add(node.1));
        }
        self.stack.push(node);
    }

    fn finish(mut self) -> Option<F> {
        match self.shape {
            Shape::Lanes { lanes, pairwise } => {
                let used: Vec<F> = self.lanes[..lanes as usize]
                    .iter()
                    .flatten()
                    .copied()
                    .collect();
                if used.is_empty() {
                    None
                } else if pairwise {
                    Some(split(&used, used.len()))
                } else {
                    Some(sequential(&used))
                }
            }
            Shape::Blocked { .. } => match self.lanes[0] {
                Some(b) => Some(opt_add(self.acc, b)),
                None => self.acc,
            },
            Shape::Pairwise => {
                let mut acc: Option<F> = None;
                while let Some((_, v)) = self.stack.pop() {
                    acc = Some(match acc {
                        Some(a) => v.add(a),
                        None => v,
                    });
                }
                acc
            }
            _ => self.acc,
        }
    }
}

/// Pairwise over a power-of-two chunk, bottom up: the binary counter's complete subtree
/// (the same tree as halving recursively).
fn halving<F: ProbeFloat>(x: &[F]) -> F {
    debug_assert!(x.len().is_power_of_two() && x.len() <= CHUNK);
    let mut v = [F::ZERO; CHUNK];
    let n = x.len();
    for i in 0..n / 2 {
        v[i] = x[2 * i].add(x[2 * i + 1]);
    }
    let mut m = n / 2;
    while m > 1 {
        for i in 0..m / 2 {
            v[i] = v[2 * i].add(v[2 * i + 1]);
        }
        m /= 2;
    }
    if n == 1 {
        x[0]
    } else {
        v[0]
    }
}

fn sequential<F: ProbeFloat>(x: &[F]) -> F {
    let mut it = x.iter().copied();
    let first = it.next().unwrap_or(F::ZERO);
    it.fold(first, |a, b| a.add(b))
}

/// The halving split of rayon's join: `parts` contiguous pieces, each summed in order.
fn split<F: ProbeFloat>(x: &[F], parts: usize) -> F {
    if parts <= 1 || x.len() <= 1 {
        return sequential(x);
    }
    let mid = x.len() / 2;
    let (l, r) = x.split_at(mid);
    let lp = parts / 2;
    split(l, lp.max(1)).add(split(r, parts - lp))
}

/// A random binary tree over the terms in order: each range splits at a uniform point
/// of its middle half (depth O(log n)); ranges of up to 16 terms are summed in order, so
/// a draw is paid per 8 terms or so, not per term.
fn random_tree<F: ProbeFloat>(x: &[F], rng: &mut ScrambleRng) -> F {
    match x.len() {
        0 => F::ZERO,
        n if n <= 16 => sequential(x),
        n => {
            let m = n / 4 + below(rng, n / 2 + 1);
            let (l, r) = x.split_at(m.clamp(1, n - 1));
            random_tree(l, rng).add(random_tree(r, rng))
        }
    }
}

/// The float format behind a generic `T`, by type name (decided per monomorphized type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    F32,
    F64,
    F16,
    BF16,
}

fn kind_of<T>() -> Option<Kind> {
    let size = std::mem::size_of::<T>();
    match (std::any::type_name::<T>(), size) {
        ("f32", 4) => Some(Kind::F32),
        ("f64", 8) => Some(Kind::F64),
        ("half::binary16::f16", 2) => Some(Kind::F16),
        ("half::bfloat::bf16", 2) => Some(Kind::BF16),
        _ => None,
    }
}

/// Reads a `T` that [`kind_of`] identified as `F`.
///
/// # Safety
/// `T` and `F` must be the same type.
unsafe fn cast<T, F>(x: &T) -> F {
    // SAFETY: same type, per the caller.
    unsafe { std::mem::transmute_copy::<T, F>(x) }
}

// One lives per running reduction, already inside a `Box`: boxing each variant again
// would only add an indirection to every chunk.
#[allow(clippy::large_enum_variant)]
enum Active {
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

/// The type-erased part of a running reduction (the shape's combiner and the random
/// stream). Its methods are not generic, so they are compiled once, here, rather than
/// in every crate that instantiates `Reduction<T>`: a user's crate pays for a thin
/// generic shell only.
struct Engine {
    active: Active,
    rng: ScrambleRng,
}

/// A combined value of one of the float kinds.
enum Value {
    F32(f32),
    F64(f64),
    F16(f16),
    BF16(bf16),
}

impl Engine {
    #[cold]
    #[inline(never)]
    fn start(site: &'static CallSite, kind: Kind) -> Option<Engine> {
        let st = state::state();
        if st & LOOPS == 0 || !site.enabled() {
            return None;
        }
        site.mark_reached();
        let mut rng = if st & VARY_CALL != 0 {
            let (key, invocation) = super::context::next_key(site.id());
            rng::stream(state::seed(), key, invocation)
        } else {
            // One platform per seed: the same stream at every call, in every thread and
            // test, so the shape and every draw it makes depend only on the seed, the
            // site and the number of terms.
            rng::stream(state::seed(), site.id() ^ PER_SITE, 0)
        };
        let shuffle = site.shuffle.unwrap_or(state::decode_shuffle(st));
        let shape = Shape::draw(st & SHAPES != 0, shuffle, &mut rng);
        if super::entropy::is_recording() {
            super::entropy::record(site.describe(), &[shape.code()]);
        }
        let active = match kind {
            Kind::F32 => Active::F32(Combiner::new(shape)),
            Kind::F64 => Active::F64(Combiner::new(shape)),
            Kind::F16 => Active::F16(Combiner::new(shape)),
            Kind::BF16 => Active::BF16(Combiner::new(shape)),
        };
        Some(Engine { active, rng })
    }

    fn cap(&self) -> usize {
        each_kind!(&self.active, c => c.cap)
    }

    /// Hands `len` terms at `ptr` to the combiner.
    ///
    /// # Safety
    /// `ptr` points to `len` initialised values of this engine's float type, borrowed
    /// only for this call.
    #[inline(never)]
    unsafe fn absorb(&mut self, ptr: *mut u8, len: usize) {
        let rng = &mut self.rng;
        // SAFETY: per the caller.
        unsafe {
            each_kind!(&mut self.active, c => c.absorb(std::slice::from_raw_parts_mut(ptr.cast(), len), rng));
        }
    }

    #[inline(never)]
    fn finish(self) -> Option<Value> {
        match self.active {
            Active::F32(c) => c.finish().map(Value::F32),
            Active::F64(c) => c.finish().map(Value::F64),
            Active::F16(c) => c.finish().map(Value::F16),
            Active::BF16(c) => c.finish().map(Value::BF16),
        }
    }
}

struct On<T> {
    engine: Engine,
    /// Terms not yet handed to the engine, and how many it takes at once.
    terms: Vec<T>,
    cap: usize,
    /// `-0.0` in `T`.
    zero: T,
}

/// Not public API. One execution of a reduction site: off (the code runs as written)
/// unless reductions are scrambled and the accumulator is a float.
///
/// Terms are appended to a chunk of `T` (one store each, no dispatch) and handed to the
/// shape's combiner a chunk at a time.
///
/// The handle has no drop glue (the state is a `ManuallyDrop` box, freed by
/// [`write`](Self::write)): a reducer alive across a loop adds no unwind path to each
/// call in the loop body (a function with hundreds of reductions borrow-checks and
/// compiles several times faster than with a dropping handle). A panic between `begin` and `write` while
/// scrambling is on leaks the buffered terms of that reduction (a few KiB at most).
pub struct Reduction<T> {
    on: std::mem::ManuallyDrop<Option<Box<On<T>>>>,
}

impl<T> Reduction<T> {
    /// Starts a reduction. Its accumulator type `T` is inferred from the calls that
    /// follow (`init(&mut place)`): the place is not evaluated here.
    #[inline]
    pub fn begin(site: &'static CallSite) -> Self {
        if state::fast_state() & LOOPS == 0 {
            return Reduction {
                on: std::mem::ManuallyDrop::new(None),
            };
        }
        Reduction {
            on: std::mem::ManuallyDrop::new(Self::start(site)),
        }
    }

    /// [`begin`](Self::begin) for site `index` of a function's site table. Generated code
    /// passes the table and a constant index rather than `&table[index]`: the caller then
    /// has no bounds check and no temporaries per site, which in a function with hundreds
    /// of reductions is a good part of its borrow-checking time. The table is indexed
    /// only when reductions are scrambled.
    #[inline]
    pub fn begin_in<const N: usize>(sites: &'static [CallSite; N], index: usize) -> Self {
        if state::fast_state() & LOOPS == 0 {
            return Reduction {
                on: std::mem::ManuallyDrop::new(None),
            };
        }
        Reduction {
            on: std::mem::ManuallyDrop::new(Self::start(&sites[index])),
        }
    }

    /// [`begin_in`](Self::begin_in) then [`init`](Self::init), as
    /// [`begin_at`](Self::begin_at).
    #[inline]
    pub fn begin_at_in<const N: usize>(
        sites: &'static [CallSite; N],
        index: usize,
        place: &mut T,
    ) -> Self {
        let mut r = Self::begin_in(sites, index);
        r.init(place);
        r
    }

    /// [`begin`](Self::begin) then [`init`](Self::init), for a place that can be
    /// borrowed without running code (a variable or a field of one): one call per loop
    /// entry, no branch in the caller.
    #[inline]
    pub fn begin_at(site: &'static CallSite, place: &mut T) -> Self {
        let mut r = Self::begin(site);
        r.init(place);
        r
    }

    fn start(site: &'static CallSite) -> Option<Box<On<T>>> {
        let kind = kind_of::<T>()?;
        let engine = Engine::start(site, kind)?;
        // SAFETY (each arm): `kind_of` chose the kind from `T`'s type, so `T` is that
        // float type and the bit copy is a value of it.
        let zero = unsafe {
            match kind {
                Kind::F32 => cast(&-0.0f32),
                Kind::F64 => cast(&-0.0f64),
                Kind::F16 => cast(&f16::NEG_ZERO),
                Kind::BF16 => cast(&bf16::NEG_ZERO),
            }
        };
        let cap = engine.cap();
        Some(Box::new(On {
            engine,
            terms: Vec::with_capacity(CHUNK.min(cap)),
            cap,
            zero,
        }))
    }

    /// Whether terms go to the reduction (true) or the code runs as written (false).
    #[inline(always)]
    pub fn on(&self) -> bool {
        self.on.is_some()
    }

    #[inline]
    pub(super) fn push(&mut self, t: T) {
        let Some(on) = self.on.as_deref_mut() else {
            return;
        };
        on.terms.push(t);
        if on.terms.len() == on.cap {
            drain(on);
        }
    }

    /// `-0.0` in `T` (the additive identity that keeps every term's sign); only called
    /// while on.
    #[inline]
    fn neg_zero(&self) -> T {
        match self.on.as_deref() {
            // SAFETY: a float (on), copied bit for bit.
            Some(on) => unsafe { std::ptr::read(&on.zero) },
            None => unreachable!("fprev: a reduction's term is only formed while it is on"),
        }
    }

    /// The accumulator's value before the loop: the first term. The place is taken as
    /// `&mut`, through the same `IndexMut` the update itself would call.
    #[inline]
    pub fn init(&mut self, place: &mut T) {
        if self.on() {
            // SAFETY: a float `T` (on), copied bit for bit.
            self.push(unsafe { std::ptr::read(&*place) });
        }
    }

    /// `place += e`: the term is `-0.0 + e` through the same `AddAssign` (exact).
    #[inline]
    pub fn add_assign<R>(&mut self, e: R)
    where
        T: AddAssign<R>,
    {
        let mut t = self.neg_zero();
        t += e;
        self.push(t);
    }

    /// `place -= e`: the term is `-0.0 - e` (exact).
    #[inline]
    pub fn sub_assign<R>(&mut self, e: R)
    where
        T: SubAssign<R>,
    {
        let mut t = self.neg_zero();
        t -= e;
        self.push(t);
    }

    /// `place += e` for a place borrowed without running code: the term goes to the
    /// reduction when on, to `place` through the same `AddAssign` otherwise.
    #[inline]
    pub fn add_assign_at<R>(&mut self, place: &mut T, e: R)
    where
        T: AddAssign<R>,
    {
        if self.on() {
            self.add_assign(e);
        } else {
            *place += e;
        }
    }

    /// `place -= e`, as [`add_assign_at`](Self::add_assign_at).
    #[inline]
    pub fn sub_assign_at<R>(&mut self, place: &mut T, e: R)
    where
        T: SubAssign<R>,
    {
        if self.on() {
            self.sub_assign(e);
        } else {
            *place -= e;
        }
    }

    /// `place = place + e` as `place = r.add_right_to(place, e)`: `acc + e` when off
    /// (the same `Add`), `acc` unchanged with the term pushed when on.
    #[inline]
    pub fn add_right_to<R>(&mut self, acc: T, e: R) -> T
    where
        T: Add<R, Output = T>,
    {
        if self.on() {
            self.add_right(e);
            acc
        } else {
            acc + e
        }
    }

    /// `place = e + place`, as [`add_right_to`](Self::add_right_to).
    #[inline]
    pub fn add_left_to<R>(&mut self, e: R, acc: T) -> T
    where
        R: Add<T, Output = T>,
    {
        if self.on() {
            self.add_left(e);
            acc
        } else {
            e + acc
        }
    }

    /// `place = place - e`, as [`add_right_to`](Self::add_right_to).
    #[inline]
    pub fn sub_right_to<R>(&mut self, acc: T, e: R) -> T
    where
        T: Sub<R, Output = T>,
    {
        if self.on() {
            self.sub_right(e);
            acc
        } else {
            acc - e
        }
    }

    /// `place = place + e`.
    #[inline]
    pub fn add_right<R>(&mut self, e: R)
    where
        T: Add<R, Output = T>,
    {
        self.push(self.neg_zero() + e);
    }

    /// `place = e + place`.
    #[inline]
    pub fn add_left<R>(&mut self, e: R)
    where
        R: Add<T, Output = T>,
    {
        self.push(e + self.neg_zero());
    }

    /// `place = place - e`.
    #[inline]
    pub fn sub_right<R>(&mut self, e: R)
    where
        T: Sub<R, Output = T>,
    {
        self.push(self.neg_zero() - e);
    }

    /// Writes the combined value into the accumulator (after the loop) and frees the
    /// state.
    #[inline]
    pub fn write(&mut self, place: &mut T) {
        if let Some(v) = self.finish_in_place() {
            *place = v;
        }
    }

    /// Combines the terms and frees the state; `None` when off or no term came.
    fn finish_in_place(&mut self) -> Option<T> {
        let mut on = self.on.take()?;
        drain(&mut on);
        let On { engine, .. } = *on;
        // SAFETY (each arm): the engine's kind was chosen from `T`'s type.
        unsafe {
            Some(match engine.finish()? {
                Value::F32(v) => cast(&v),
                Value::F64(v) => cast(&v),
                Value::F16(v) => cast(&v),
                Value::BF16(v) => cast(&v),
            })
        }
    }

    /// Combines the terms without an accumulator to write to (iterator reductions).
    pub(super) fn finish(mut self) -> Option<T> {
        self.finish_in_place()
    }
}

/// Hands the buffered terms to the combiner.
#[cold]
fn drain<T>(on: &mut On<T>) {
    // SAFETY: the engine's kind was chosen from `T`'s type, so the terms are `len`
    // initialised values of that float type, borrowed only for this call.
    unsafe {
        on.engine
            .absorb(on.terms.as_mut_ptr().cast(), on.terms.len())
    };
    on.terms.clear();
}

/// Not public API. An iterator whose `sum` / `fold` are reassociated reductions when
/// reductions are scrambled (inherent methods, so they win over `Iterator`'s).
pub struct ReduceIter<I> {
    iter: I,
    site: &'static CallSite,
}

impl<I: Iterator> ReduceIter<I> {
    /// `iter.sum()`: each item becomes the term `S::sum(once(item))` (exact), the terms are
    /// combined in the drawn shape.
    pub fn sum<S: std::iter::Sum<I::Item>>(mut self) -> S {
        let r = Reduction::<S>::begin(self.site);
        if !r.on() {
            return self.iter.sum();
        }
        sum_terms(r, &mut self.iter)
    }

    /// `iter.fold(init, f)` where the macro checked that `f` is `|a, t| a + e`,
    /// `|a, t| e + a`, `|a, t| a - e` (with `e` free of `a`) or `Add::add`: the term of
    /// an item is `f(-0.0, item)`, exactly `e` (or `-e`).
    pub fn fold<B, F: FnMut(B, I::Item) -> B>(mut self, init: B, mut f: F) -> B {
        let r = Reduction::<B>::begin(self.site);
        if !r.on() {
            return self.iter.fold(init, f);
        }
        fold_terms(r, init, &mut self.iter, &mut f)
    }
}

/// The one method of an iterator that a scrambled iterator reduction calls, object-safe:
/// the loop that forms and combines the terms ([`sum_terms`], [`fold_terms`]) is then
/// compiled once per item type, not once per iterator type (every `map` closure is a type
/// of its own), which kept `#[scramble]` on a function dense in `.sum()`s slow to build.
trait Pull<A> {
    fn pull(&mut self) -> Option<A>;
}

impl<I: Iterator> Pull<I::Item> for I {
    fn pull(&mut self) -> Option<I::Item> {
        self.next()
    }
}

/// The scrambled half of [`ReduceIter::sum`], `r` on.
fn sum_terms<S: std::iter::Sum<A>, A>(mut r: Reduction<S>, items: &mut dyn Pull<A>) -> S {
    let mut any = false;
    while let Some(item) = items.pull() {
        any = true;
        r.push(S::sum(std::iter::once(item)));
    }
    match (any, r.finish()) {
        (true, Some(v)) => v,
        _ => S::sum(std::iter::empty::<A>()),
    }
}

/// The scrambled half of [`ReduceIter::fold`], `r` on.
fn fold_terms<B, A>(
    mut r: Reduction<B>,
    init: B,
    items: &mut dyn Pull<A>,
    f: &mut dyn FnMut(B, A) -> B,
) -> B {
    r.push(init);
    while let Some(item) = items.pull() {
        let t = f(r.neg_zero(), item);
        r.push(t);
    }
    match r.finish() {
        Some(v) => v,
        None => unreachable!("fprev: a fold reduction has its initial value"),
    }
}

impl<I: Iterator> Iterator for ReduceIter<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        self.iter.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}

/// `.sum()` / `.fold(..)` receivers: an iterator becomes a [`ReduceIter`], anything else
/// is handed back untouched ([`ViaValue`]); see [`Wrap`].
impl<I: Iterator> Wrap<I> {
    /// Not public API.
    /// Site `index` of the function's table `sites` (a table and a constant, so the
    /// caller pays no bounds check per site).
    #[inline(always)]
    pub fn __fprev_reduce<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> ReduceIter<I> {
        ReduceIter {
            iter: self.0,
            site: &sites[index],
        }
    }
}

/// Not public API. The fallback case of [`Wrap`]: not an iterator, returned as is.
pub trait ViaValue {
    /// The receiver.
    type Out;
    /// Not public API.
    fn __fprev_reduce<const N: usize>(
        self,
        sites: &'static [CallSite; N],
        index: usize,
    ) -> Self::Out;
}

impl<T> ViaValue for Wrap<T> {
    type Out = T;
    #[inline(always)]
    fn __fprev_reduce<const N: usize>(self, _: &'static [CallSite; N], _: usize) -> T {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scramble::rng::stream;

    fn exact(x: &[f64]) -> f64 {
        crate::float::exact_sum_rounded(x)
    }

    #[test]
    fn every_shape_sums_every_term_once() {
        // Integers: every order gives the exact sum, so a lost or doubled term shows.
        let x: Vec<f64> = (1..=1000).map(f64::from).collect();
        let shapes = [
            Shape::Sequential,
            Shape::Permuted(Shuffle::FisherYates),
            Shape::Permuted(Shuffle::Sattolo),
            Shape::Lanes {
                lanes: 7,
                pairwise: true,
            },
            Shape::Lanes {
                lanes: 32,
                pairwise: false,
            },
            Shape::Blocked { block: 64 },
            Shape::Pairwise,
            Shape::Threads { threads: 5 },
            Shape::RandomTree,
        ];
        for shape in shapes {
            for n in [1usize, 2, 3, 31, 1000] {
                let got = combine(shape, &x[..n], &mut stream(1, 2, 3));
                assert_eq!(got, (n * (n + 1) / 2) as f64, "{shape} n = {n}");
            }
            for n in [1024usize, 3 * 1024 + 5, 70_000] {
                let x: Vec<f64> = (1..=n).map(|i| (i % 1000) as f64).collect();
                let want: f64 = (1..=n).map(|i| (i % 1000) as f64).sum();
                let got = combine(shape, &x, &mut stream(1, 2, 3));
                assert_eq!(got, want, "{shape} n = {n}");
            }
        }
    }

    #[test]
    fn drawn_shapes_differ_from_plain_by_rounding_only() {
        let x: Vec<f64> = (0..5000)
            .map(|i| ((i * 7919) % 1009) as f64 * 10f64.powi((i % 13) - 6) - 3.0)
            .collect();
        let truth = exact(&x);
        let bound = x.iter().map(|v| v.abs()).sum::<f64>() * x.len() as f64 * f64::EPSILON;
        let mut seen = std::collections::HashSet::new();
        for seed in 0..64u64 {
            let mut rng = stream(seed, 9, 0);
            let shape = Shape::draw(true, Shuffle::FisherYates, &mut rng);
            let got = combine(shape, &x, &mut rng);
            assert!(
                (got - truth).abs() <= bound,
                "seed {seed}: {shape} gave {got}"
            );
            seen.insert(got.to_bits());
        }
        assert!(
            seen.len() > 8,
            "64 drawn shapes gave {} results",
            seen.len()
        );
    }

    /// Term-by-term reference implementations of the streaming shapes.
    fn reference(shape: Shape, x: &[f64]) -> f64 {
        match shape {
            Shape::Sequential => sequential(x),
            Shape::Lanes { lanes, pairwise } => {
                let k = lanes as usize;
                let mut l: Vec<Option<f64>> = vec![None; k];
                for (i, &t) in x.iter().enumerate() {
                    l[i % k] = Some(l[i % k].map_or(t, |a| a + t));
                }
                let used: Vec<f64> = l.into_iter().flatten().collect();
                if pairwise {
                    split(&used, used.len())
                } else {
                    sequential(&used)
                }
            }
            Shape::Blocked { block } => {
                let parts: Vec<f64> = x.chunks(block as usize).map(sequential).collect();
                sequential(&parts)
            }
            Shape::Pairwise => {
                let mut stack: Vec<(u32, f64)> = Vec::new();
                for &t in x {
                    let mut node = (0, t);
                    while stack.last().is_some_and(|&(l, _)| l == node.0) {
                        let (l, v) = stack.pop().unwrap();
                        node = (l + 1, v + node.1);
                    }
                    stack.push(node);
                }
                let mut acc = stack.pop().unwrap().1;
                while let Some((_, v)) = stack.pop() {
                    acc += v;
                }
                acc
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn chunking_changes_no_shape() {
        let x: Vec<f64> = (0..70_000)
            .map(|i| ((i * 7919) % 1009) as f64 * 10f64.powi((i % 13) - 6) - 3.0)
            .collect();
        for shape in [
            Shape::Sequential,
            Shape::Lanes {
                lanes: 7,
                pairwise: true,
            },
            Shape::Lanes {
                lanes: 32,
                pairwise: false,
            },
            Shape::Blocked { block: 4 },
            Shape::Blocked { block: 512 },
            Shape::Pairwise,
        ] {
            for n in [1usize, 2, 1023, 1024, 1025, 5000, 70_000] {
                let got = combine(shape, &x[..n], &mut stream(0, 0, 0));
                assert_eq!(
                    got.to_bits(),
                    reference(shape, &x[..n]).to_bits(),
                    "{shape} n = {n}"
                );
            }
        }
    }

    #[test]
    fn long_buffered_reductions_are_chunked() {
        let x = vec![1.0f32; BUFFER_CAP + 5];
        let got = combine(Shape::RandomTree, &x, &mut stream(0, 0, 0));
        assert_eq!(got, (BUFFER_CAP + 5) as f32);
    }

    #[test]
    fn kinds_by_type() {
        assert_eq!(kind_of::<f32>(), Some(Kind::F32));
        assert_eq!(kind_of::<bf16>(), Some(Kind::BF16));
        assert_eq!(kind_of::<i32>(), None);
        assert_eq!(kind_of::<&f32>(), None);
    }
}
