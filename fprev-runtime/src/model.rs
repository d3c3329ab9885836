//! Orders as functions of `n`: a summation algorithm with its parameters, that gives a
//! library's tree at every size, learned from trees revealed at a few sizes.
//!
//! A revealed [`SumTree`] is the order at one size. Porting code to another language, or
//! checking that a new library version still adds the same way, needs the order at every
//! size: an [`OrderModel`] is a small program over `n` (lanes, blocks, windows, halvings,
//! cascade levels) from a family of known algorithms. [`fit`] reveals a target at chosen
//! sizes, picks the simplest model that reproduces every revealed tree, then **proves it
//! at sizes it did not fit** (up to 10 times the largest), and refuses with a typed error
//! when no model holds everywhere it looked. [`OrderModel::emit`] writes the model as one
//! self-contained function in Rust, C or Python that adds in exactly that order.
//!
//! ```
//! use fprev::model::{self, Lang, OrderModel};
//! use fprev::target::FnTarget;
//! // NumPy's pairwise sum, as fprev's reference code computes it
//! let m = model::fit(|_n| FnTarget(fprev::orders::numpy_pairwise::<f32>), 1..=300)?;
//! assert_eq!(m.to_string(), "fprev-model/1 numpy-pairwise lanes=8 block=128 type=f32");
//! assert_eq!(m.tree(5000), fprev::SumTree::numpy_pairwise(5000));
//! assert!(m.evidence().is_some_and(|e| e.proved.len() >= 8));
//! // the spec reads back
//! let again: OrderModel = m.to_string().parse()?;
//! assert_eq!(again.shape(), m.shape());
//! assert!(m.emit(Lang::Rust).contains("pub fn sum(x: &[f32]) -> f32"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod emit;
mod family;
mod fit;
mod spec;
mod sweep_model;

pub use emit::Lang;
pub use fit::{fit, fit_sizes, fit_trees, fit_with, FitConfig};
pub use sweep_model::{describe_sweep, fit_sweep, ModelPiece, SweepModel, MAX_PIECES};
// Defined beside the float types, so that a sweep can name the type its model adds in
// without importing the model module, which reads sweeps.
pub use crate::float::sum_type::SumType;

use crate::float::ProbeFloat;
use crate::reveal::RevealError;
use crate::tree::SumTree;

/// How an algorithm combines partial sums (lanes of an unrolled loop).
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Combine {
    /// `((p0 + p1) + p2) + ...`
    InOrder,
    /// Split in halves (the lower half rounded down), each combined the same way.
    Pairwise,
    /// Folded in half, `(p0 + p[L/2]) + (p1 + p[L/2+1]) + ...`, the pairs in order
    /// (ndarray's `unrolled_fold`); an even number of parts.
    Folded,
}

/// A family of summation algorithms and its parameters: the program that gives the tree
/// at every `n`.
///
/// ```
/// use fprev::model::ModelShape;
/// let s = ModelShape::Unrolled { lanes: 4, combine: fprev::model::Combine::InOrder };
/// assert_eq!(s.tree(10).to_string(), "((((((0+4)+(1+5))+(2+6))+(3+7))+8)+9)");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelShape {
    /// One accumulator in input order (`Iterator::sum`, a plain loop).
    Sequential,
    /// One accumulator from the last input to the first.
    Reverse,
    /// A loop unrolled into `lanes` accumulators (lane `k` adds `x[k]`, `x[k + lanes]`,
    /// ... over whole chunks), the lanes combined, then the remaining values in order.
    Unrolled {
        /// Accumulators.
        lanes: usize,
        /// How the lanes are combined.
        combine: Combine,
    },
    /// NumPy's pairwise sum (`pairwise_sum` in `loops_utils.h.src`; NumPy: 8 lanes,
    /// block 128): under `lanes` values in order; up to `block` values in `lanes` strided
    /// lanes combined pairwise, the remainder after; above, halves rounded down to a
    /// multiple of `lanes`.
    NumpyPairwise {
        /// Strided accumulators of a block.
        lanes: usize,
        /// The largest run summed without halving.
        block: usize,
    },
    /// XLA's CPU tree reduction (`jax.numpy.sum`): windows of `window` values in order,
    /// padded evenly on both sides, reduced level by level until one window is left.
    XlaWindows {
        /// Values per window (XLA: 32).
        window: usize,
    },
    /// rayon's `par_iter().sum()` when no job is stolen: the range halved while a split
    /// count that starts at `threads` and halves per split is non-zero (so `threads` and
    /// every count up to the next power of two give one tree), pieces in order, halves
    /// added left to right.
    RayonHalving {
        /// The pool's thread count.
        threads: usize,
    },
    /// PyTorch's CPU `sum` with one thread (ATen `SumKernel.cpp`, `cascade_sum`):
    /// vectors of `width` lanes (`load = 2`: a float16/bfloat16 vector of `2 * width`
    /// loaded as two float vectors and added), grouped in rows of `ilp` vectors, summed
    /// into a cascade of `levels` accumulators carried up every `2^p` rows
    /// (`p = max(4, ceil(log2(rows)) / levels)`); leftover vectors into the first
    /// partial, partials added in order, then the scalar tail in order, then the lanes in
    /// order. Under `width * load` values: the same cascade over single values.
    TorchCascade {
        /// Lanes of a float vector (8 with AVX2, also on AVX-512 machines).
        width: usize,
        /// Input vectors per float vector: 1 (float32), 2 (float16, bfloat16).
        load: usize,
        /// Vectors per row (ATen: 4).
        ilp: usize,
        /// Cascade levels (ATen: 4).
        levels: usize,
    },
}

impl ModelShape {
    /// The tree at `n` inputs (the empty tree for `n = 0`).
    ///
    /// ```
    /// use fprev::{model::ModelShape, SumTree};
    /// let s = ModelShape::NumpyPairwise { lanes: 8, block: 128 };
    /// assert_eq!(s.tree(1000), SumTree::numpy_pairwise(1000));
    /// ```
    pub fn tree(&self, n: usize) -> SumTree {
        let mut a = family::TreeAdder::new(n);
        family::run(self, n, &mut a);
        a.finish()
    }

    /// The sum of `x` in this order, without building the tree (`+0` for no values).
    ///
    /// ```
    /// use fprev::model::ModelShape;
    /// let x: Vec<f32> = (0..1000).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    /// let s = ModelShape::XlaWindows { window: 32 };
    /// assert_eq!(s.sum(&x), fprev::orders::xla_tree_reduction(&x));
    /// ```
    pub fn sum<T: ProbeFloat>(&self, x: &[T]) -> T {
        family::run(self, x.len(), &mut family::ValueAdder(x)).unwrap_or(T::ZERO)
    }

    /// The algorithm in words, with its parameters.
    ///
    /// ```
    /// use fprev::model::ModelShape;
    /// assert_eq!(
    ///     ModelShape::XlaWindows { window: 32 }.describe(),
    ///     "XLA's tree reduction: windows of 32 values in order, padded evenly on both \
    ///      sides, reduced the same way until 32 or fewer are left, summed in order"
    /// );
    /// ```
    pub fn describe(&self) -> String {
        match *self {
            ModelShape::Sequential => "one accumulator, in input order".into(),
            ModelShape::Reverse => "one accumulator, from the last input to the first".into(),
            ModelShape::Unrolled { lanes, combine } => format!(
                "a loop unrolled into {lanes} accumulators (accumulator k adds x[k], \
                 x[k+{lanes}], ... over whole chunks of {lanes}), combined {}, then the \
                 remaining values in order",
                combine_words(combine)
            ),
            ModelShape::NumpyPairwise { lanes, block } => format!(
                "NumPy's pairwise sum: under {lanes} values in order; up to {block} values \
                 in {lanes} strided lanes combined pairwise, the remainder added after; \
                 above {block}, split in halves rounded down to a multiple of {lanes}"
            ),
            ModelShape::XlaWindows { window } => format!(
                "XLA's tree reduction: windows of {window} values in order, padded evenly \
                 on both sides, reduced the same way until {window} or fewer are left, \
                 summed in order"
            ),
            ModelShape::RayonHalving { threads } => format!(
                "rayon's par_iter().sum() on {threads} thread{} without stealing: halved \
                 {} time{} (len/2 on the left), each piece in order, halves added left \
                 to right",
                if threads == 1 { "" } else { "s" },
                halvings(threads),
                if halvings(threads) == 1 { "" } else { "s" },
            ),
            ModelShape::TorchCascade {
                width,
                load,
                ilp,
                levels,
            } => format!(
                "PyTorch's cascade sum (one thread): from {} values on, vectors of {width} \
                 lanes{}, in rows of {ilp} vectors summed into {levels} cascade levels \
                 carried up every 2^max(4, ceil(log2(rows))/{levels}) rows, leftover vectors \
                 into the first partial, the {ilp} partials added in order, then the scalar \
                 tail in order, then the {width} lanes in order; fewer values: the same \
                 cascade over single values",
                width * load,
                if load == 1 {
                    String::new()
                } else {
                    format!(" ({load} input vectors added lane by lane on loading)")
                },
            ),
        }
    }
}

fn combine_words(c: Combine) -> &'static str {
    match c {
        Combine::InOrder => "in order",
        Combine::Pairwise => "pairwise",
        Combine::Folded => "folded in half (k with k + lanes/2), the pairs in order",
    }
}

/// Halvings of rayon's splitter from `threads`: the count halves to zero.
fn halvings(threads: usize) -> u32 {
    usize::BITS - threads.leading_zeros()
}

/// Where a fitted model was checked: the sizes whose revealed trees chose it, and the
/// sizes it was proved at without having seen them.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Evidence {
    /// Sizes revealed and fitted.
    pub fitted: Vec<usize>,
    /// Sizes the fit did not see, where the target's tree was proved to be the model's.
    pub proved: Vec<usize>,
}

/// A summation order as a function of `n`: a [`ModelShape`], the type it adds in, and,
/// for a model [`fit`] returned, its [`Evidence`].
///
/// Its [`Display`](std::fmt::Display) form is a portable one-line spec that
/// [`parse`](Self::parse) reads back (with the `serde` feature, it is also the serde
/// form): `fprev-model/1 FAMILY KEY=VALUE ... type=f32|f64`.
///
/// ```
/// use fprev::model::OrderModel;
/// let m = OrderModel::parse("fprev-model/1 unrolled lanes=4 combine=in-order type=f64")?;
/// assert_eq!(m.tree(9).to_string(), "(((((0+4)+(1+5))+(2+6))+(3+7))+8)");
/// assert!(m.describe().starts_with("a loop unrolled into 4 accumulators"));
/// # Ok::<(), fprev::model::ModelError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderModel {
    shape: ModelShape,
    sum_type: SumType,
    evidence: Option<Evidence>,
}

impl OrderModel {
    /// A model of `shape` adding in `sum_type`, with no evidence.
    ///
    /// ```
    /// use fprev::model::{ModelShape, OrderModel, SumType};
    /// let m = OrderModel::new(ModelShape::Sequential, SumType::F32);
    /// assert_eq!(m.to_string(), "fprev-model/1 sequential type=f32");
    /// ```
    pub fn new(shape: ModelShape, sum_type: SumType) -> OrderModel {
        OrderModel {
            shape,
            sum_type,
            evidence: None,
        }
    }

    /// Read a spec written by [`Display`](std::fmt::Display).
    ///
    /// ```
    /// let e = fprev::model::OrderModel::parse("fprev-model/1 numpy-pairwise lanes=0 block=128 type=f32");
    /// assert!(e.unwrap_err().to_string().contains("lanes"));
    /// ```
    pub fn parse(spec: &str) -> Result<OrderModel, ModelError> {
        spec::parse(spec)
    }

    /// The algorithm and its parameters.
    pub fn shape(&self) -> ModelShape {
        self.shape
    }

    /// The type the order adds in.
    pub fn sum_type(&self) -> SumType {
        self.sum_type
    }

    /// Where a fitted model was revealed and proved; `None` for a parsed or built one.
    pub fn evidence(&self) -> Option<&Evidence> {
        self.evidence.as_ref()
    }

    /// The tree at `n` inputs.
    ///
    /// ```
    /// let m = fprev::model::OrderModel::parse("fprev-model/1 rayon-halving threads=1 type=f32")?;
    /// assert_eq!(m.tree(4).to_string(), "((0+1)+(2+3))");
    /// # Ok::<(), fprev::model::ModelError>(())
    /// ```
    pub fn tree(&self, n: usize) -> SumTree {
        self.shape.tree(n)
    }

    /// The sum of `x` in the model's order ([`ModelShape::sum`]).
    ///
    /// ```
    /// let m = fprev::model::OrderModel::parse("fprev-model/1 sequential type=f32")?;
    /// assert_eq!(m.sum(&[1e8f32, 1.0, -1e8]), 0.0);
    /// # Ok::<(), fprev::model::ModelError>(())
    /// ```
    pub fn sum<T: ProbeFloat>(&self, x: &[T]) -> T {
        self.shape.sum(x)
    }

    /// The algorithm in words, with its parameters, and where a fitted model was proved.
    ///
    /// ```
    /// let m = fprev::model::OrderModel::parse("fprev-model/1 sequential type=f64")?;
    /// assert_eq!(m.describe(), "one accumulator, in input order; adds in f64");
    /// # Ok::<(), fprev::model::ModelError>(())
    /// ```
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{}; adds in {}",
            self.shape.describe(),
            self.sum_type.name()
        );
        if let Some(e) = &self.evidence {
            s.push_str(&format!(
                "; fitted at {} sizes ({})",
                e.fitted.len(),
                sizes_text(&e.fitted)
            ));
            // a run of a sweep is fitted at all its lengths: nothing was left to prove
            if !e.proved.is_empty() {
                s.push_str(&format!(
                    ", proved at {} sizes it did not see ({})",
                    e.proved.len(),
                    sizes_text(&e.proved)
                ));
            }
        }
        s
    }

    /// The model as one self-contained function of `lang`, `sum`, that adds a slice in
    /// exactly this order for every length (see [`Lang`]).
    ///
    /// ```
    /// use fprev::model::{Lang, OrderModel};
    /// let m = OrderModel::parse("fprev-model/1 sequential type=f64")?;
    /// assert!(m.emit(Lang::C).contains("double sum(const double *x, size_t n)"));
    /// assert!(m.emit(Lang::Python).contains("def sum(x):"));
    /// # Ok::<(), fprev::model::ModelError>(())
    /// ```
    pub fn emit(&self, lang: Lang) -> String {
        emit::emit(self, lang)
    }

    pub(crate) fn with_evidence(mut self, evidence: Evidence) -> OrderModel {
        self.evidence = Some(evidence);
        self
    }
}

/// Sizes as text, the middle cut when there are many.
pub(crate) fn sizes_text(sizes: &[usize]) -> String {
    let show = |s: &[usize]| {
        s.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if sizes.len() <= 12 {
        show(sizes)
    } else {
        format!(
            "{}, ..., {}",
            show(&sizes[..6]),
            show(&sizes[sizes.len() - 4..])
        )
    }
}

/// Why no model was returned.
///
/// ```
/// use fprev::target::FnTarget;
/// // an order no family has: the first half in order, the second reversed
/// let odd = |x: &[f64]| {
///     let (a, b) = x.split_at(x.len() / 2);
///     fprev::orders::sequential(a) + fprev::orders::reverse(b)
/// };
/// let e = fprev::model::fit(|_n| FnTarget(odd), 1..=64).unwrap_err();
/// assert!(matches!(e, fprev::model::ModelError::NoFit { .. }));
/// assert!(e.to_string().contains("sequential: disagrees at n = "));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub enum ModelError {
    /// The sizes to fit are unusable (none, zero, too many).
    Sizes(String),
    /// Revealing the target at size `n` failed.
    Reveal {
        /// The size.
        n: usize,
        /// Why.
        error: RevealError,
    },
    /// No model reproduces every revealed tree: for each family, the closest model and
    /// the sizes where its tree is not the target's.
    NoFit {
        /// Sizes revealed.
        fitted: Vec<usize>,
        /// `(model spec, sizes that disagree)`, closest first.
        closest: Vec<(String, Vec<usize>)>,
    },
    /// A model that fit every revealed size failed its proof at sizes it had not seen,
    /// and no other model fit them all.
    Disproved {
        /// The model's spec.
        model: String,
        /// Sizes where the target's tree is not the model's.
        sizes: Vec<usize>,
    },
    /// The target summed one input to different bits on different calls at these sizes
    /// (threads that race: rayon's work stealing, a multi-threaded reduction): its order
    /// is no one tree, so no model holds.
    Nondeterministic {
        /// Sizes where one input gave different sums.
        sizes: Vec<usize>,
    },
    /// A spec could not be read.
    Spec(String),
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::Sizes(s) => write!(f, "sizes to fit: {s}"),
            ModelError::Reveal { n, error } => write!(f, "revealing n = {n}: {error}"),
            ModelError::NoFit { fitted, closest } => {
                write!(
                    f,
                    "no order model reproduces the trees revealed at {} sizes ({}); closest:",
                    fitted.len(),
                    sizes_text(fitted)
                )?;
                for (model, sizes) in closest {
                    write!(f, "\n  {model}: disagrees at n = {}", sizes_text(sizes))?;
                }
                Ok(())
            }
            ModelError::Disproved { model, sizes } => write!(
                f,
                "{model} fits every revealed size but is not the target's order at n = {}",
                sizes_text(sizes)
            ),
            ModelError::Nondeterministic { sizes } => write!(
                f,
                "the target's order changes from call to call at n = {}: one input summed \
                 again gave other bits (threads that race, as rayon's work stealing or a \
                 multi-threaded reduction); no order model holds",
                sizes_text(sizes)
            ),
            ModelError::Spec(s) => write!(f, "order model spec: {s}"),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ModelError::Reveal { error, .. } => Some(error),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
