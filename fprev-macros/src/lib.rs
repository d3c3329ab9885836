//! Procedural macros of fprev. Use them through the `fprev` crate (`#[fprev::scramble]`,
//! `#[fprev::accumulator]`); expansions refer only to `::fprev::__private`.
//!
//! The expansions themselves live in `fprev-expand`, a library crate: a proc-macro crate
//! can export only macros, and `cargo fprev scan` reports the attributes' own decisions.

use proc_macro::TokenStream;

/// Makes a function's float reductions show their order dependence in tests: when
/// fprev's scrambling is switched on at run time (`FPREV_SCRAMBLE=shapes`,
/// `fprev::scramble::with_config`, or the amplifier), every reduction's terms are combined
/// in a shape drawn from a seed (lanes, blocks, pairwise, thread splits, random trees,
/// permuted orders) while the loops themselves keep their order. Off, the function runs
/// as written.
///
/// ```
/// use fprev::scramble::{with_config, ScrambleConfig, Shuffle};
///
/// #[fprev::scramble]
/// fn total(v: &[f32]) -> f32 {
///     let mut s = 0.0;
///     for x in v.iter() {
///         s += x;
///     }
///     s
/// }
///
/// let v: Vec<f32> = (0..1000).map(|i| 1.0 / (i as f32 + 1.0)).collect();
/// let in_order: f32 = v.iter().fold(0.0, |a, b| a + b);
/// assert_eq!(with_config(&ScrambleConfig::off(), || total(&v)), in_order);
/// let on = ScrambleConfig::off().shuffle(Some(Shuffle::FisherYates)).shapes(true).seed(7);
/// let scrambled = with_config(&on, || total(&v));
/// assert_eq!(with_config(&on, || total(&v)).to_bits(), scrambled.to_bits()); // replayable
/// assert!((scrambled - in_order).abs() < 1e-4); // rounding, never another meaning
/// ```
///
/// # What it rewrites
///
/// A `for` loop declares nothing about the order of its iterations: reordering one can
/// change what a program means (prefix sums, recurrences, two-pointer walks, pushes). So
/// by default only what may legally be reordered is: the *association* of float
/// reductions, as a compiler, SIMD library, BLAS or thread pool may change it.
///
/// - **Loop reductions.** A `for` or `while` loop (or a `loop` ending by plain `break`s)
///   owns a reduction into a place (`s`,
///   `c[i * n + j]`, `self.acc`, `*out`) when every mention of the place's root inside
///   the loop is an update `P += e`, `P -= e`, `P = P + e`, `P = e + P` or `P = P - e` of
///   that place, no term reads it, its index changes nothing in the loop and calls
///   nothing, and the loop does not leave early to outside itself. The loop runs in its
///   order; the terms (the initial value first) are combined in the drawn shape and the
///   result is written back after the loop. Nested loops feed the outermost loop that
///   owns the place. Whether a place is a float (`f32`, `f64`, `f16`, `bf16`) is decided
///   per monomorphized type: integers, strings and user types run as written.
/// - **Iterator reductions.** `.sum()` and `.fold(init, |a, t| a + e)` (also `e + a`,
///   `a - e`, and `Add::add`) on a temporary iterator chain: `zip`, `map`, `take`,
///   `filter`, `enumerate`, anything.
/// - **Declared loops.** `#[scramble(loop)]` on a loop, or `loops` / `outer` on the
///   function (the analogue of an OpenMP `parallel for`), scrambles whole iteration
///   orders of the supported iterable forms (`a..b`, `&v`, `v.iter()`, `v.chunks(k)`, ...,
///   collected first): at the user's word, early exits included.
/// - **rayon chains** starting at `par_iter()`, `par_iter_mut()`, `par_chunks(k)` or
///   `(a..b).into_par_iter()`, going through position-independent adapters and ending in
///   a position-independent consumer (`sum`, `reduce`, `for_each`, `min`, ...). Chains
///   that `collect`, `enumerate` or `zip` are left alone.
///
/// Everything else runs as written, and says so: `fprev::scramble::sites()` lists each
/// site with its scrambled executions, and each loop left alone with its reason
/// ("order-carrying: reads `s` besides adding to `s`").
///
/// # What it expands to
///
/// Nothing is duplicated: the loop body is emitted once.
///
/// ```text
/// static __FPREV_SCRAMBLE_SITES: [CallSite; 1] = [/* dot#reduction0 at file:line */];
/// inventory::submit! { FnSites::new(&__FPREV_SCRAMBLE_SITES, &[/* loops left alone */]) }
/// let mut s = 0.0;
/// {
///     let mut r = RunningReduction::begin_at(&__FPREV_SCRAMBLE_SITES[0], &mut s); // one atomic load
///     for i in 0..a.len() {
///         r.add_assign_at(&mut s, a[i] * b[i]); // `s += ..` when off, a term when on
///     }
///     r.write(&mut s); // the combined value, when on
/// }
/// ```
///
/// An indexed place (`c[i * n + j] += e`) is evaluated only when on around the loop
/// (`if r.on() { r.init(&mut c[..]) }`), and its update keeps the user's own statement in
/// the off branch. A reduction's draws come from a ChaCha8 stream keyed by (run seed,
/// site): one seed is one consistent platform, the same shape at every call, so a value
/// computed twice gives the same bits twice (`FPREV_VARY=call` keys them by call too, as
/// declared loops and rayon chains always are), and `FPREV_SEED=<token> cargo test name`
/// replays the same bits alone or within the whole suite. With the `off` feature of
/// `fprev` the function is emitted token for token (per-loop markers are removed).
///
/// # Options
///
/// - `#[scramble(loops)]`: also scramble the iteration order of every loop of a
///   supported form that does not exit early; `outer`: only loops not nested in another.
/// - `#[scramble(force)]`: with `loops`/`outer`, loops that exit early too.
/// - `#[scramble(shuffle = "sattolo")]`: this function's shuffle (`"fisher-yates"`,
///   `"sattolo"`, `"identity"`), when scrambling is on.
/// - `#[scramble(crate = "my_fprev")]`: path of a renamed `fprev` dependency.
/// - `#[scramble(chains)]`: also compile the body `#[fprev::accumulator]` would give,
///   which a process started with `FPREV_CHAINS=1` runs instead (it counts the chains
///   and runs as written): one build for scrambled runs and chain reports, as
///   `cargo fprev` uses it. An `async fn`, one returning `impl Trait` or one declaring an
///   `impl` in its body keeps the scrambled body only.
/// - On one loop: `#[scramble(skip)]` keeps its order and owns no reduction;
///   `#[scramble(loop)]` (or `force`) declares its iterations order-free.
///
/// # Kernels
///
/// A kernel for the CPU launch model takes `&fprev::ThreadCtx` and reads its indices
/// through it; the launch permutes them when the schedule is scrambled, and the attribute
/// reassociates the kernel's own reductions:
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use fprev::ThreadCtx;
///
/// #[fprev::scramble]
/// fn add_rows(ctx: &ThreadCtx, m: &[f32], cols: usize, out: &[AtomicU32]) {
///     let row = ctx.global_x();
///     let mut s = 0.0f32;
///     for k in 0..cols {
///         s += m[row * cols + k];
///     }
///     out[row].store(s.to_bits(), Ordering::Relaxed);
/// }
///
/// let m = vec![1.0f32; 8 * 4];
/// let out: Vec<AtomicU32> = (0..8).map(|_| AtomicU32::new(0)).collect();
/// fprev::launch(2u32, 4u32, |ctx| add_rows(ctx, &m, 4, &out));
/// assert!(out.iter().all(|x| f32::from_bits(x.load(Ordering::Relaxed)) == 4.0));
/// ```
///
/// It only applies to functions with a body:
///
#[cfg_attr(not(feature = "off"), doc = "```compile_fail")]
#[cfg_attr(feature = "off", doc = "```ignore")]
/// #[fprev::scramble]
/// struct NotAFunction;
/// ```
#[proc_macro_attribute]
pub fn scramble(args: TokenStream, item: TokenStream) -> TokenStream {
    fprev_expand::scramble(args.into(), item.into()).into()
}

/// Count the accumulation chains of a function, and optionally register it so that
/// `cargo test` pins its summation order.
///
/// # Chain counting
///
/// Every accumulation site in the body is rewritten to count, per call, how many additions
/// were chained into the accumulated value since a non-additive expression last set it
/// (Defour's accumulator identification): `s += e`, `s -= e`, `s = s + e`, `s = e + s`,
/// `s = s - e` into a variable, `c[i] += e`-style places, `.sum()` and
/// `.fold(init, |a, b| a + b)` on an iterator chain. Only `f32`, `f64`, `f16` and `bf16`
/// values are counted (decided per monomorphized type); integers, strings and user types
/// behave exactly as written. `fprev::chains::report()` lists the sites;
/// `FPREV_CHAINS=1` prints them at exit. An inner `#[acc]` on a `let` marks a variable as
/// an accumulator even when it is only assigned (`#[acc] let mut s = 0.0;`).
///
/// ```
/// #[fprev::accumulator]
/// fn dot(a: &[f64], b: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for i in 0..a.len() {
///         s += a[i] * b[i];
///     }
///     s
/// }
/// # assert_eq!(dot(&[1.0; 4], &[2.0; 4]), 8.0);
/// ```
///
/// expands to (paths shortened; `__fprev` is hygienic):
///
/// ```text
/// fn dot(a: &[f64], b: &[f64]) -> f64 {
///     const __FPREV_FN: &str = concat!(module_path!(), "::", "dot");
///     // spanned at `s += a[i] * b[i]`: `here` (`#[track_caller]`) reads its file,
///     // line and column from there
///     static __FPREV_SITES: [Site; 1] =
///         [Site::here(__FPREV_FN, "s += a[i] * b[i]", SiteKind::Variable)];
///     // the counters: variable slot 0 counts site 0; no place slot
///     let mut __fprev_frame = Frame::new(&__FPREV_SITES, &[0usize], &[]);
///     let __fprev_ret: f64 = {
///         // the first `let` of `s`: its counter is still empty, no call
///         let mut s = 0.0;
///         for i in 0..a.len() {
///             {
///                 let __fprev_rhs = a[i] * b[i];
///                 // counted when `s` is a float: the chain grows by one, and the term
///                 // and the sum are looked at (whole numbers below 2^p: an exact
///                 // counter); the term goes through the call and comes back
///                 s += __fprev_frame.add(0, __fprev_rhs, &s, 0u64);
///             };
///         }
///         s
///     };
///     Finish::finish(&mut __fprev_frame); // merged into the site: at the end, and
///     __fprev_ret                         // at every `return` likewise
/// }
/// ```
///
/// The counters are plain values while the function runs, held in one local per frame
/// (one value, updated by slot),
/// and are merged into the sites' atomics once per call, at its exits: written out at the
/// end of the body and at each `return`, or, where the function uses `?`, is `async`,
/// returns `impl Trait` or invokes a macro that could hide a `return` (anything but the
/// standard formatting, assertion and `vec!` macros), when the frame drops (which also
/// merges a call that panics). A local that needs dropping makes every call in the
/// function an unwinding edge: written-out merges keep a long function's build cheaper.
/// A closure captures the counter of each variable it captures, as it captures the
/// variable: such a counter is a local of its own, merged on drop, so an
/// edition-2015/2018 closure, which captures whole locals, borrows nothing more. What a
/// closure declares it counts in a frame of its own, so a `Fn + Sync` closure (rayon)
/// stays one.
///
/// ```edition2018
/// #[fprev::accumulator]
/// fn two_closures(x: &[f64]) -> (f64, f64) {
///     let (mut a, mut b) = (0.0, 0.0);
///     let mut add_a = |v: f64| a += v;
///     let mut add_b = |v: f64| b += v;
///     for &v in x {
///         add_a(v);
///         add_b(2.0 * v);
///     }
///     let mut c = 0.0;
///     for &v in x {
///         c += v;
///     }
///     (a + c, b)
/// }
/// # assert_eq!(two_closures(&[1.0, 2.0]), (6.0, 6.0));
/// ```
///
/// Not rewritten: nested items, `move` closures, `async` blocks and macro invocations.
///
/// # Registration
///
/// `#[accumulator(reveal(op = "sum" | "dot" | "gemv" | "gemm", sizes = [..], dtype = f32))]`
/// also registers the function (see `fprev::registry` for the signature each op needs);
/// `fprev::check_registered()` then reveals and pins its order. `dtype` is needed only
/// for a function generic over its float type. An associated function (in an `impl`, or
/// a provided `trait` method) is named by its path from the module:
/// `reveal(.., path = "MyType::total")` or `path = "<MyType as Stats>::mean"`; one that
/// names `Self` without it is an error that says so, and a registration whose name finds
/// another function (a free function named like the associated one) fails when revealed
/// (`RevealError::NotTheRegisteredFunction`): the annotated body marks each entry.
/// `crate = "path"` names the `fprev` crate when it is renamed.
///
/// ```compile_fail
/// // A dot product takes two slices: the wrong signature is a compile error.
/// #[fprev::accumulator(reveal(op = "dot", sizes = [8]))]
/// fn total(x: &[f32]) -> f32 {
///     x.iter().sum()
/// }
/// ```
///
/// With the `off` feature the function is emitted as written (only `#[acc]` markers are
/// removed) and nothing is registered.
#[proc_macro_attribute]
pub fn accumulator(args: TokenStream, item: TokenStream) -> TokenStream {
    fprev_expand::accumulator(args.into(), item.into()).into()
}
