//! A sweep over lengths read as order models: the families tried at every swept length,
//! one model when one holds at all of them, else a handful of runs of lengths, each with
//! its model.
//!
//! A sweep lists ranges of lengths whose order only grew; a library whose split points
//! move with the length (PyTorch's cascade, NumPy's halving) then has one range per
//! breakpoint (`torch.sum` over 1..2048: 257). The same trees read as one algorithm with
//! its parameters say what the ranges cannot: the order at every length.

use super::fit::{candidates, chosen_sizes, no_fit};
use super::{Evidence, ModelError, ModelShape, OrderModel};
use crate::sweep::Sweep;
use crate::tree::SumTree;

// `Sweep::model` is defined here rather than in sweep.rs: the model reads sweeps, and a
// sweep that called into the model would make the two modules import each other.
impl Sweep {
    /// A sweep over lengths as order models ([`fit_sweep`]): one model
    /// when one gives the tree at every swept length, else a handful of runs of lengths
    /// each with its model, else [`ModelError::NoFit`] (then [`Sweep::ranges`] is what
    /// is known).
    ///
    /// ```
    /// use fprev::model::SweepModel;
    /// use fprev::target::FnTarget;
    /// let sweep = fprev::sweep_lengths(1..=200, |_| FnTarget(|x: &[f32]| x.iter().sum::<f32>()))?;
    /// let SweepModel::One(m) = sweep.model()? else { panic!("one model") };
    /// assert_eq!(m.to_string(), "fprev-model/1 sequential type=f32");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn model(&self) -> Result<SweepModel, ModelError> {
        fit_sweep(self)
    }
}

/// The most runs of lengths a sweep is read as ([`SweepModel::Pieces`]); more, and the
/// sweep is left as its ranges.
pub const MAX_PIECES: usize = 8;

/// A sweep over lengths as order models ([`fit_sweep`], [`Sweep::model`]).
///
/// ```
/// use fprev::model::SweepModel;
/// use fprev::target::FnTarget;
/// let sweep = fprev::sweep_lengths(1..=300, |_| FnTarget(fprev::orders::numpy_pairwise::<f32>))?;
/// let SweepModel::One(m) = sweep.model()? else { panic!("one model") };
/// assert_eq!(m.to_string(), "fprev-model/1 numpy-pairwise lanes=8 block=128 type=f32");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepModel {
    /// One model gives the tree at every swept length. Its [`Evidence`]: fitted at the
    /// lengths [`fit`](super::fit) would reveal, the breakpoints and the lengths before
    /// them; proved at every other swept length.
    One(OrderModel),
    /// Consecutive runs of swept lengths, each given by one model (at most
    /// [`MAX_PIECES`]), in length order.
    Pieces(Vec<ModelPiece>),
}

impl SweepModel {
    /// In words, one line per model and an indented line with its algorithm, each length
    /// named `label`: the one model with its evidence (`n = 1..300: one order model,
    /// SPEC`), or each run of lengths with its model.
    ///
    /// ```
    /// use fprev::target::FnTarget;
    /// let sweep = fprev::sweep_lengths(1..=40, |_| FnTarget(|x: &[f64]| x.iter().sum::<f64>()))?;
    /// let text = sweep.model()?.describe("n");
    /// assert!(text.starts_with("n = 1..40: one order model, fprev-model/1 sequential type=f64\n  one accumulator"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn describe(&self, label: &str) -> String {
        match self {
            SweepModel::One(m) => {
                let e = m.evidence().cloned().unwrap_or_default();
                let all = e.fitted.iter().chain(&e.proved);
                let first = all.clone().min().copied().unwrap_or(0);
                let last = all.max().copied().unwrap_or(0);
                format!(
                    "{label} = {first}..{last}: one order model, {m}\n  {}\n",
                    m.describe()
                )
            }
            SweepModel::Pieces(pieces) => pieces
                .iter()
                .map(|p| format!("{label} = {p}\n  {}\n", p.model.shape().describe()))
                .collect(),
        }
    }
}

/// A sweep over lengths in words, each length named `label`: its order model or
/// handful of runs with their models ([`SweepModel::describe`]); without one, why (the
/// closest model and the lengths it disagrees at) and the ranges, one a line.
///
/// ```
/// use fprev::target::FnTarget;
/// // the first half in order, the second reversed: no family has it
/// let odd = |x: &[f64]| {
///     let (a, b) = x.split_at(x.len() / 2);
///     fprev::orders::sequential(a) + fprev::orders::reverse(b)
/// };
/// let sweep = fprev::sweep_lengths(1..=40, |_| FnTarget(odd))?;
/// let text = fprev::model::describe_sweep(&sweep, "n");
/// assert!(text.starts_with("no order model gives every length, nor 8 or fewer runs of them; closest: "));
/// assert!(text.ends_with(&format!("{}\n", sweep.ranges().last().unwrap())));
/// # Ok::<(), fprev::SweepError>(())
/// ```
pub fn describe_sweep(sweep: &Sweep, label: &str) -> String {
    match fit_sweep(sweep) {
        Ok(m) => m.describe(label),
        Err(e) => {
            let mut text = format!("{}; the ranges:\n", unmodelled(&e));
            for r in sweep.ranges() {
                text.push_str(&format!("{label} = {r}\n"));
            }
            text
        }
    }
}

/// Why a sweep is left as its ranges, in one line: the closest model and the first
/// lengths it disagrees at.
fn unmodelled(e: &ModelError) -> String {
    match e {
        ModelError::NoFit { closest, .. } => {
            let closest = closest
                .first()
                .map(|(m, bad)| {
                    let shown: Vec<String> = bad.iter().take(8).map(|n| n.to_string()).collect();
                    let more = if bad.len() > 8 { ", ..." } else { "" };
                    format!(
                        "; closest: {m}, which disagrees at {}{more}",
                        shown.join(", ")
                    )
                })
                .unwrap_or_default();
            format!("no order model gives every length, nor {MAX_PIECES} or fewer runs of them{closest}")
        }
        other => format!("no order model: {other}"),
    }
}

/// A run of consecutive swept lengths that one model gives.
///
/// ```
/// let m = fprev::model::OrderModel::parse("fprev-model/1 sequential type=f32")?;
/// let p = fprev::model::ModelPiece { first: 1, last: 63, sizes: 63, model: m };
/// assert_eq!(p.to_string(), "1..63: fprev-model/1 sequential type=f32");
/// # Ok::<(), fprev::model::ModelError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelPiece {
    /// The first length of the run.
    pub first: usize,
    /// The last length of the run.
    pub last: usize,
    /// How many swept lengths the run holds.
    pub sizes: usize,
    /// The model whose tree is the revealed one at every length of the run.
    pub model: OrderModel,
}

impl std::fmt::Display for ModelPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.first == self.last {
            write!(f, "{}: {}", self.first, self.model)
        } else {
            write!(f, "{}..{}: {}", self.first, self.last, self.model)
        }
    }
}

/// The model families over a sweep's lengths: [`SweepModel::One`] when one model's tree
/// is the revealed one at every swept length, else [`SweepModel::Pieces`] when at most
/// [`MAX_PIECES`] runs of lengths each have one; else [`ModelError::NoFit`] with each
/// family's closest model and the lengths it disagrees at. A sweep over another
/// parameter than the length ([`fprev::sweep`](crate::sweep())) is a
/// [`ModelError::Sizes`]. Nothing is revealed: the sweep's trees are the evidence.
///
/// ```
/// use fprev::model::{self, Combine, ModelShape, SweepModel};
/// use fprev::target::FnTarget;
/// // a 4-lane loop below 64 values, one accumulator from 64 on
/// let four = ModelShape::Unrolled { lanes: 4, combine: Combine::InOrder };
/// let kernel = |n: usize| {
///     FnTarget(move |x: &[f64]| if n < 64 { four.sum(x) } else { x.iter().sum::<f64>() })
/// };
/// let sweep = fprev::sweep_lengths(1..=100, kernel)?;
/// let SweepModel::Pieces(p) = model::fit_sweep(&sweep)? else { panic!("two pieces") };
/// assert_eq!(p.len(), 2);
/// assert_eq!((p[1].first, p[1].last), (64, 100));
/// assert_eq!(p[1].model.to_string(), "fprev-model/1 sequential type=f64");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn fit_sweep(sweep: &Sweep) -> Result<SweepModel, ModelError> {
    if !sweep.over_lengths() {
        return Err(ModelError::Sizes(format!(
            "this sweep keeps n = {} and changes another parameter: order models are \
             functions of the length (sweep lengths with fprev::sweep_lengths)",
            sweep.n()
        )));
    }
    let points: Vec<(usize, &SumTree)> = sweep.points().iter().map(|p| (p.size, &p.tree)).collect();
    let sizes: Vec<usize> = points.iter().map(|(n, _)| *n).collect();
    let tree_at = |n: usize| points[sizes.binary_search(&n).unwrap_or_default()].1;
    // the lengths a fit reveals, and on both sides of every breakpoint
    let mut fit_at = chosen_sizes(&sizes);
    for b in sweep.breakpoints() {
        let i = sizes.binary_search(&b).unwrap_or_default();
        fit_at.extend(&sizes[i.saturating_sub(1)..=i]);
    }
    let shapes = candidates();
    loop {
        fit_at.sort_unstable();
        fit_at.dedup();
        let Some(shape) = shapes
            .iter()
            .find(|s| fit_at.iter().all(|&n| s.tree(n) == *tree_at(n)))
        else {
            break;
        };
        // a failure joins the fitted lengths and the next model is tried: the first
        // model (simplest first) whose tree is the revealed one everywhere
        let failed: Vec<usize> = sizes
            .iter()
            .copied()
            .filter(|n| fit_at.binary_search(n).is_err())
            .filter(|&n| shape.tree(n) != *tree_at(n))
            .take(4)
            .collect();
        if failed.is_empty() {
            let proved = sizes
                .iter()
                .copied()
                .filter(|n| fit_at.binary_search(n).is_err())
                .collect();
            let model = OrderModel::new(*shape, sweep.sum_type());
            return Ok(SweepModel::One(model.with_evidence(Evidence {
                fitted: fit_at,
                proved,
            })));
        }
        fit_at.extend(failed);
    }
    match pieces(&shapes, &points, sweep) {
        Some(p) => Ok(SweepModel::Pieces(p)),
        None => {
            let seen: Vec<(usize, SumTree)> =
                fit_at.iter().map(|&n| (n, tree_at(n).clone())).collect();
            Err(no_fit(&shapes, &seen.iter().collect::<Vec<_>>()))
        }
    }
}

/// The swept lengths cut into runs, each the longest run from its first length that one
/// model gives (the simplest such model); `None` when a length has no model or more
/// than [`MAX_PIECES`] runs are needed.
fn pieces(
    shapes: &[ModelShape],
    points: &[(usize, &SumTree)],
    sweep: &Sweep,
) -> Option<Vec<ModelPiece>> {
    let mut out: Vec<ModelPiece> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        if out.len() == MAX_PIECES {
            return None;
        }
        let mut best: Option<(ModelShape, usize)> = None;
        for s in shapes {
            let end = points[i..]
                .iter()
                .position(|(n, t)| s.tree(*n) != **t)
                .map_or(points.len(), |k| i + k);
            if end > best.map_or(i, |(_, e)| e) {
                best = Some((*s, end));
            }
        }
        let (shape, end) = best?;
        let run: Vec<usize> = points[i..end].iter().map(|(n, _)| *n).collect();
        out.push(ModelPiece {
            first: run[0],
            last: run[run.len() - 1],
            sizes: run.len(),
            model: OrderModel::new(shape, sweep.sum_type()).with_evidence(Evidence {
                fitted: run,
                proved: Vec::new(),
            }),
        });
        i = end;
    }
    Some(out)
}

#[cfg(test)]
mod tests;
