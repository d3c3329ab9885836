//! Why a revelation failed: typed, and worded to say what the target probably is.

use crate::black_box::Probe;

/// Why a summation tree could not be revealed.
///
/// Every variant says which probe answered what and what that likely means; none of them
/// is ever replaced by a silently wrong tree.
///
/// ```
/// let e = fprev::reveal(8, |x: &[f32]| x.iter().cloned().fold(f32::MIN, f32::max)).unwrap_err();
/// assert!(matches!(e, fprev::RevealError::OutOfRange { .. }));
/// println!("{e}");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub enum RevealError {
    /// `n` is zero, or otherwise unusable.
    InvalidSize {
        /// The size asked for.
        n: usize,
        /// Why it is unusable.
        reason: String,
    },
    /// The revelation would need more memory than its budget allows, or an allocation
    /// sized by `n` failed: refused before anything of that size is touched.
    OutOfMemory {
        /// The size asked for.
        n: usize,
        /// What needed the memory.
        what: String,
        /// How many bytes it needed (saturated at `u64::MAX`).
        bytes: u64,
        /// The budget it exceeded; `None` when the allocation itself failed.
        budget: Option<u64>,
    },
    /// A sum of one value did not return that value.
    SingleInput {
        /// The value passed.
        input: f64,
        /// What the target returned.
        answer: f64,
    },
    /// Every answer, to the probes and to a random check input alike, was the same value.
    ConstantAnswers {
        /// The size.
        n: usize,
        /// The one value every call returned.
        value: f64,
    },
    /// Every probe lost all its units (answered 0) while a random input gives another sum.
    DataDependent {
        /// The size.
        n: usize,
        /// What the target returned on the random check input.
        random: f64,
    },
    /// No mask and unit of this type can swamp a sum of `n` units.
    ///
    /// For a product target past its products' reach (more than 256 FP8 E4M3 products
    /// into f32) fprev first tries a window: the first products revealed with the others
    /// zero, a block-FMA chain read off them and proved over all `n`; `tried` says why
    /// that failed.
    ///
    /// ```
    /// use fprev::float::{ProbeFloat, F8E4M3};
    /// // f32 additions in pairs: no chain of fused blocks to carry over
    /// let tree = fprev::SumTree::pairwise(512);
    /// let dot = move |a: &[F8E4M3], b: &[F8E4M3]| -> f32 {
    ///     let p: Vec<f32> = a.iter().zip(b).map(|(x, y)| (x.to_f64() * y.to_f64()) as f32).collect();
    ///     tree.replay(&p)
    /// };
    /// let e = fprev::Reveal::new(512).run_target(fprev::target::Products::new(dot)).unwrap_err();
    /// assert!(matches!(e, fprev::RevealError::TooLarge { tried: Some(_), .. }));
    /// ```
    TooLarge {
        /// The size asked for.
        n: usize,
        /// The float type.
        dtype: &'static str,
        /// The largest size this type supports.
        max: usize,
        /// Whether the masks were already spread over both operands of a product (a
        /// product target): the product's range, not one operand's, ran out.
        spread: bool,
        /// What was tried beyond one mask's reach and why it failed (a product target:
        /// a block-FMA chain read off the first `max` products, proved over all `n`).
        tried: Option<String>,
    },
    /// A probe returned NaN or an infinity.
    NonFinite {
        /// The probe.
        probe: Probe,
        /// What it returned.
        value: f64,
    },
    /// A probe returned a value that is not a whole number of units.
    NotInteger {
        /// The probe.
        probe: Probe,
        /// What it returned.
        value: f64,
        /// The unit.
        unit: f64,
    },
    /// A probe returned a count outside `[0, units - 2]`.
    OutOfRange {
        /// The probe.
        probe: Probe,
        /// What it returned, in units.
        value: f64,
        /// The largest valid count.
        max: usize,
    },
    /// The probe answers cannot come from one summation tree.
    Inconsistent {
        /// Which answers disagree.
        detail: String,
    },
    /// The same probe was answered twice differently.
    Nondeterministic {
        /// The probe.
        probe: Probe,
        /// First answer, in lost units.
        first: u64,
        /// Second answer, in lost units.
        second: u64,
    },
    /// Every probe kept all `n - 2` units: the result does not depend on order.
    OrderIndependent {
        /// The size.
        n: usize,
        /// The next wider accumulator to reveal in (`"f32"` for f16 and bf16 sums,
        /// `"f64"` for f32 ones; `None` for f64): a library that accumulates narrow
        /// values in a wider format (PyTorch sums float16 in float32 on the CPU) rounds
        /// once at the end, which looks exactly like an order-independent sum.
        wider: Option<&'static str>,
    },
    /// The probes found a tree of 16-bit (or narrower) values that the target's random
    /// inputs follow when it is summed in `wider` and rounded once to `operands`, and
    /// not in `operands` itself: the target accumulates in a wider register (PyTorch's
    /// float16 sums on the CPU do, in f32). Reveal it in that format, whose replays
    /// compare the register's sums.
    WiderAccumulator {
        /// The tree the probes found (canonical text, clipped).
        tree: String,
        /// The values' format (`"f16"`, `"bf16"`, ...).
        operands: &'static str,
        /// The register's format (`"f32"`).
        wider: &'static str,
    },
    /// The revealed tree does not reproduce the target's bits on random inputs.
    NotPlainSummation {
        /// The tree that failed (canonical text, clipped).
        tree: String,
        /// Seed of the random input that showed it.
        input_seed: u64,
        /// The target's bits.
        target_bits: u64,
        /// The replay's bits.
        tree_bits: u64,
    },
    /// The tree has fused nodes that truncate (every unit under them lost), and no
    /// block-FMA model of them (alignment width `frac`, result width `frac_out`) replays
    /// the target on random inputs: the target is not a fixed-order fused summation.
    FusedUnverified {
        /// The tree that failed (canonical text, clipped).
        tree: String,
        /// Seed of the random input no model reproduced.
        input_seed: u64,
        /// The target's answer to it.
        target: f64,
        /// Whether a model of the tree reproduces every answer once the f32 inputs are
        /// cut to TF32's 10 fraction bits: the target reads TF32 operands.
        reads_tf32: bool,
    },
    /// The target's fused adders keep so many bits below their largest term that the
    /// widest masks this format allows cannot swamp a partial sum of units: two
    /// different trees would answer the probes alike.
    Indistinguishable {
        /// The alignment width the replays fitted, and what the masks allow.
        detail: String,
    },
    /// Counts could not be made exact even with windows of zeros.
    PrecisionTooLow {
        /// Where it happened.
        detail: String,
    },
    /// The target itself failed (panicked, crashed, timed out).
    Target {
        /// The probe being answered, when known.
        probe: Option<Probe>,
        /// The target's message.
        message: String,
    },
    /// The naive search found no tree, or several, that match the target.
    Naive {
        /// What happened.
        detail: String,
    },
    /// A function registered with `#[accumulator(reveal(..))]` was never entered while
    /// its registration was revealed: the registration names another function. An
    /// associated function that names neither `self` nor `Self` is registered by its
    /// bare name, which then finds a free function of the same name in its module.
    NotTheRegisteredFunction {
        /// The registration's name (`module::function`).
        name: String,
    },
}

impl std::fmt::Display for RevealError {
    // Over 100 lines because it is one arm per variant, each its message and the fix it
    // suggests: the messages read best side by side, so the match stays whole rather
    // than split across helpers.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevealError::InvalidSize { n, reason } => {
                write!(f, "cannot reveal a sum of {n} values: {reason}")
            }
            RevealError::OutOfMemory {
                n,
                what,
                bytes,
                budget,
            } => {
                write!(f, "cannot reveal a sum of {n} values: {what} needs {bytes} bytes")?;
                match budget {
                    Some(b) => write!(
                        f,
                        ", over the memory budget of {b} bytes (raise it with Reveal::max_memory, or --max-memory on the command line)"
                    ),
                    None => f.write_str(" and the allocation failed (free memory, or lower n)"),
                }
            }
            RevealError::SingleInput { input, answer } => write!(
                f,
                "a sum of one value must return it, but the target answered {answer} to the input [{input}] (not a plain summation, or not of length-1 input)"
            ),
            RevealError::ConstantAnswers { n, value } => write!(
                f,
                "every answer was {value}, to the probes and to a random check input alike, for n = {n}: the target does not depend on its input (a constant, or a program that answers without reading its input?)"
            ),
            RevealError::DataDependent { n, random } => write!(
                f,
                "every probe answered 0 (all units lost) but a random check input summed to {random}, for n = {n}: the order depends on the data (sorting by value or magnitude before summing?), a data-dependent order suspected, which no single tree describes"
            ),
            RevealError::TooLarge {
                n,
                dtype,
                max,
                spread: false,
                ..
            } => write!(
                f,
                "{n} summands are too many for {dtype}: no mask M can swamp {n} units (at most {max} here; a product spreads the mask over both operands: --op dot on the command line, fprev::target::Products or fprev::ops::Batched in Rust)"
            ),
            RevealError::TooLarge {
                n,
                dtype,
                max,
                spread: true,
                tried: None,
            } => write!(
                f,
                "{n} products are too many for {dtype} operands: the masks were already spread over both operands, and even the product's range (the square of one operand's) holds no mask M that swamps {n} units in the accumulator's precision (at most {max} here); reveal a prefix of at most {max} products, or a wider operand type"
            ),
            RevealError::TooLarge {
                n,
                dtype,
                max,
                spread: true,
                tried: Some(tried),
            } => write!(
                f,
                "{n} products of {dtype} operands are beyond one mask's reach (masks spread over both operands swamp at most {max} units in any tree); windows were tried and failed: {tried}. Reveal at most {max} products, or a wider operand type"
            ),
            RevealError::NonFinite { probe, value } => write!(
                f,
                "probe {probe} returned {value}: the target produced NaN/inf on finite input (overflow of M, or a NaN source in the target)"
            ),
            RevealError::NotInteger { probe, value, unit } => write!(
                f,
                "probe {probe} returned {value}, which is not a whole number of units ({unit}): not a plain summation (scaling, a mean, compensated or fused multiply-add arithmetic?)"
            ),
            RevealError::OutOfRange { probe, value, max } => write!(
                f,
                "probe {probe} returned {value} units, outside [0, {max}]: not a summation of its inputs (max/min, a norm, a different length?)"
            ),
            RevealError::Inconsistent { detail } => write!(
                f,
                "inconsistent probe answers: {detail} (a compensated or otherwise non-tree summation, or an order that changes between calls)"
            ),
            RevealError::Nondeterministic {
                probe,
                first,
                second,
            } => write!(
                f,
                "nondeterministic target: probe {probe} answered {first} and later {second} (the order changes between calls: threads, work stealing, atomics)"
            ),
            RevealError::OrderIndependent { n, wider } => {
                write!(
                    f,
                    "order-independent summation: every probe returned n-2 units for n = {n}; the target sums exactly or correctly rounded (or in a much wider accumulator), which is one {n}-way fused node; use Reveal::accept_flat(true) to get that node as the tree"
                )?;
                if let Some(w) = wider {
                    let python = if *w == "f32" { "float32" } else { "float64" };
                    write!(
                        f,
                        ". If it accumulates in a wider format than its values and rounds once at the end, reveal it in that format: try acc_dtype=\"{python}\" in Python, --acc-dtype {w} on the command line, or in Rust a target answering in {w} whose Target::input_format names the values' format"
                    )?;
                }
                Ok(())
            }
            RevealError::WiderAccumulator {
                tree,
                operands,
                wider,
            } => write!(
                f,
                "the target accumulates its {operands} values in {wider}: the probes found the tree {tree}, which reproduces the target's random inputs when summed in {wider} and rounded once to {operands}, and not when summed in {operands}; reveal it in that format: acc_dtype=\"{python}\" in Python, --acc-dtype {wider} on the command line, or in Rust a target answering in {wider} whose Target::input_format names {operands}",
                python = if *wider == "f32" { "float32" } else { "float64" }
            ),
            RevealError::NotPlainSummation {
                tree,
                input_seed,
                target_bits,
                tree_bits,
            } => write!(
                f,
                "the revealed tree {tree} does not reproduce the target on random input {input_seed} (target {target_bits:#x}, tree {tree_bits:#x}): the target is not a plain summation in this type (compensated/Kahan, a wider accumulator, FMA, or a data-dependent order)"
            ),
            RevealError::FusedUnverified {
                tree,
                input_seed,
                target,
                reads_tf32: true,
            } => write!(
                f,
                "the probes found the tree {tree}, whose multi-way nodes truncate like a fused adder's, and no model of f32 inputs gives the target's {target} on random input {input_seed}, but one does once every input is cut to TF32's 10 fraction bits: the target reads TF32 operands: try `--dtype tf32` (fprev::float::Tf32 operands in Rust, dtype=\"tf32\" in Python)"
            ),
            RevealError::FusedUnverified {
                tree,
                input_seed,
                target,
                ..
            } => write!(
                f,
                "the probes found the tree {tree}, whose multi-way nodes truncate like a fused adder's, but no modelled arithmetic reproduces it: no block-FMA model of those nodes (products aligned by their own exponent or by their operands' exponent sum, any alignment width, result width, or rounding of the binary nodes) gives the target's {target} on random input {input_seed}; the order is what the probes measured, the nodes' arithmetic is one fprev does not model (or the order depends on the values)"
            ),
            RevealError::Indistinguishable { detail } => write!(
                f,
                "cannot tell trees apart: {detail}; spread the masks over both operands of a product (`--op dot`, fprev::target::Products) or reveal in a format with more exponent range"
            ),
            RevealError::PrecisionTooLow { detail } => write!(f, "precision too low: {detail}"),
            RevealError::Target { probe, message } => match probe {
                Some(p) => write!(f, "the target failed on probe {p}: {message}"),
                None => write!(f, "the target failed: {message}"),
            },
            RevealError::Naive { detail } => write!(f, "naive search: {detail}"),
            RevealError::NotTheRegisteredFunction { name } => write!(
                f,
                "`{name}` was never entered while its registration was revealed: the registration names another function (an associated function registered by its bare name finds a free function of that name); name it with `reveal(.., path = \"Type::function\")`"
            ),
        }
    }
}

impl std::error::Error for RevealError {}

/// A tree's (or any) text cut to 200 bytes for an error message: a tree of `n` leaves
/// is about `6n` characters, too long to read in one line.
pub(crate) fn clip(mut text: String) -> String {
    if text.len() > 200 {
        text.truncate(200);
        text.push_str("...");
    }
    text
}
