//! Procedural macros of fprev. Use them through the `fprev` crate (`#[fprev::scramble]`,
//! `#[fprev::accumulator]`); expansions refer only to `::fprev::__private`.

use proc_macro::TokenStream;

mod accumulator;

/// Placeholder until the scramble issue lands: emits the item unchanged.
#[proc_macro_attribute]
pub fn scramble(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
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
///     static __FPREV_SITES: [Site; 1] = [Site::new(
///         concat!(module_path!(), "::", "dot"), file!(), 4u32, 9u32,
///         "s += a[i] * b[i]", SiteKind::Variable)];
///     struct __FprevFrame { c0: u64, s0: ChainStats }
///     impl Drop for __FprevFrame {
///         fn drop(&mut self) { self.s0.finish(&mut self.c0, &__FPREV_SITES[0]); }
///     }
///     let mut __fprev = __FprevFrame { c0: 0, s0: ChainStats::default() };
///     let mut s = 0.0;
///     if is_float(addr_of!(s)) { __fprev.s0.restart(&mut __fprev.c0, 0u64); }
///     for i in 0..a.len() {
///         { s += a[i] * b[i]; if is_float(addr_of!(s)) { __fprev.c0 += 1 + 0u64; } }
///     }
///     s
/// }
/// ```
///
/// The counters are plain locals while the function runs and are merged into the site's
/// atomics once, when the frame drops (returns, early returns, `?` and unwinding alike).
/// A closure gets a frame of its own for what it declares, so a `Fn + Sync` closure
/// (rayon) stays one. Not rewritten: nested items, `move` closures, `async` blocks and
/// macro invocations.
///
/// # Registration
///
/// `#[accumulator(reveal(op = "sum" | "dot" | "gemv" | "gemm", sizes = [..], dtype = f32))]`
/// also registers the function (see `fprev::registry` for the signature each op needs);
/// `fprev::check_registered()` then reveals and pins its order. `dtype` is needed only
/// for a function generic over its float type. `crate = "path"` names the `fprev` crate
/// when it is renamed.
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
    accumulator::accumulator(args.into(), item.into()).into()
}
