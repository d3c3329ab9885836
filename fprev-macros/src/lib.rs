//! Procedural macros of fprev. Use them through the `fprev` crate (`#[fprev::scramble]`,
//! `#[fprev::accumulator]`); expansions refer only to `::fprev::__private`.

use proc_macro::TokenStream;

mod scramble;

/// Scrambles the order in which a function's loops visit their items when fprev's
/// scrambling is switched on at run time (`FPREV_SCRAMBLE=fisher-yates`,
/// `fprev::scramble::with_config`, or the amplifier), so that order-dependent
/// floating-point results show up in tests. Off, the function runs as written.
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
/// let in_order: f32 = v.iter().sum();
/// assert_eq!(with_config(&ScrambleConfig::off(), || total(&v)), in_order);
/// let on = ScrambleConfig::off().shuffle(Some(Shuffle::FisherYates)).seed(7);
/// let scrambled = with_config(&on, || total(&v));
/// assert_eq!(with_config(&on, || total(&v)).to_bits(), scrambled.to_bits()); // replayable
/// ```
///
/// # What it rewrites
///
/// - `for` loops over `a..b`, `a..=b`, `&v`, `&mut v`, `v.iter()`, `v.iter_mut()`,
///   `v.chunks(k)` (and `_mut`/`_exact`), optionally followed by `.rev()`, `.step_by(k)`
///   or `.enumerate()` (indices stay paired with their items). Loops that leave early
///   (`break` out of the loop, `return`, `?`, labelled `break`/`continue` to an enclosing
///   loop) keep their order: which items they visit depends on it.
/// - rayon chains starting at `par_iter()`, `par_iter_mut()`, `par_chunks(k)` or
///   `(a..b).into_par_iter()`, going through position-independent adapters (`map`,
///   `filter`, `fold`, ...) and ending in a position-independent consumer (`sum`,
///   `product`, `reduce`, `for_each`, `min`/`max`, `count`, `any`/`all`, ...). Chains that
///   `collect`, `enumerate` or `zip` are left alone: reordering them would change what
///   they compute, not only how they round.
/// - Closures in the body are rewritten too; nested `fn` items are not.
///
/// # What it expands to
///
/// Each rewritten loop becomes a check of one relaxed atomic and two copies of the loop:
///
/// ```text
/// match ::fprev::__private::scramble::loops({ static SITE: CallSite = ...; &SITE }) {
///     None => for x in v.iter() { s += x; },            // exactly as written
///     Some(scrambler) => for x in scrambler.shuffled(v.iter()) { s += x; },
/// }
/// ```
///
/// `shuffled` collects the items and permutes them with the configured shuffle, on a
/// ChaCha8 stream keyed by (run seed, this loop, invocation number). A rayon source
/// becomes `v.__fprev_par_iter(&SITE)`, which returns rayon's `Either` of the original
/// iterator and the permuted items. With the `off` feature of `fprev` the function is
/// emitted token for token (per-loop markers, below, are removed).
///
/// # Options
///
/// - `#[scramble(outer)]`: only loops not nested in another loop; `all` is the default.
/// - `#[scramble(force)]`: also loops that leave early.
/// - `#[scramble(shuffle = "sattolo")]`: this function's shuffle (`"fisher-yates"`,
///   `"sattolo"`, `"identity"`), when scrambling is on.
/// - `#[scramble(crate = "my_fprev")]`: path of a renamed `fprev` dependency.
/// - On one loop: `#[scramble(skip)]` keeps its order, `#[scramble(force)]` scrambles it
///   despite early exits.
///
/// # Kernels
///
/// A kernel for the CPU launch model takes `&fprev::ThreadCtx` and reads its indices
/// through it; the launch permutes them when the schedule is scrambled, and the
/// attribute scrambles the kernel's own loops:
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
    let item = proc_macro2::TokenStream::from(item);
    scramble::expand::scramble(args.into(), item.clone())
        .unwrap_or_else(|e| scramble::with_error(item, e))
        .into()
}

/// Placeholder until the accumulator issue lands: emits the item unchanged.
#[proc_macro_attribute]
pub fn accumulator(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
