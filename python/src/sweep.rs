//! `fprev.sweep`: one callable per size, revealed by the engine's sweep
//! (`fprev_runtime::Reveal::try_sweep`), which proves each size's tree against the
//! previous size's before it searches.
//!
//! The engine runs with the GIL released and asks for each size's target in turn; the
//! Python `make(size)` is called then, under the GIL, and its callable is probed through
//! the same reused buffer as `fprev.reveal`'s. An exception raised by `make` or by a
//! callable is kept and raised once the engine has returned, with a note naming the size.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fprev_runtime::model::{OrderModel, SweepModel};
use fprev_runtime::sweep::{Sweep as Engine, SweepError};
use fprev_runtime::target::{ProbeBatch, ProbeSets, Target, TargetError};
use fprev_runtime::ProbeFloat;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::buffer::Flat;
use crate::errors;
use crate::target::{Failure, PyTarget};
use crate::tree::Tree;

/// Trees of one target across sizes: where its summation order changes.
///
/// >>> import fprev, numpy as np
/// >>> s = fprev.sweep(lambda size: np.sum, [1, 2, 3], 64)
/// >>> s.breakpoints
/// []
#[pyclass(module = "fprev", name = "Sweep", frozen)]
pub struct PySweep {
    sweep: Engine,
    label: String,
}

#[pymethods]
impl PySweep {
    /// ``{size: Tree}`` for every swept size.
    #[getter]
    fn trees(&self) -> BTreeMap<usize, Tree> {
        self.sweep
            .points()
            .iter()
            .map(|p| {
                (
                    p.size,
                    Tree {
                        tree: p.tree.clone(),
                    },
                )
            })
            .collect()
    }

    /// The sizes whose tree differs from the previous size's.
    #[getter]
    fn breakpoints(&self) -> Vec<usize> {
        self.sweep.breakpoints()
    }

    /// The sizes whose tree was proved to be the previous size's (no search ran).
    #[getter]
    fn proved(&self) -> Vec<usize> {
        self.sweep
            .points()
            .iter()
            .filter(|p| p.from_previous)
            .map(|p| p.size)
            .collect()
    }

    /// Probes answered over the sweep (for plain callables, calls made).
    #[getter]
    fn probes(&self) -> u64 {
        self.sweep.probes()
    }

    /// Calls on seeded random inputs over the sweep (the replay checks).
    #[getter]
    fn replays(&self) -> u64 {
        self.sweep.replays()
    }

    /// The number of values summed at every size.
    #[getter]
    fn n(&self) -> usize {
        self.sweep.n()
    }

    /// The runs of sizes that share one tree, in words:
    /// ``"M = 1..3: 256 in order; M = 4..8: ..."``; ``label`` names the size (default:
    /// the sweep's own label).
    #[pyo3(signature = (label=None))]
    fn ranges(&self, label: Option<&str>) -> String {
        self.sweep.describe(label.unwrap_or(&self.label))
    }

    /// ``[(first, last, Tree), ...]``: the same runs, with their trees.
    fn range_trees(&self) -> Vec<(usize, usize, Tree)> {
        self.sweep
            .ranges()
            .into_iter()
            .map(|r| (r.first, r.last, Tree { tree: r.tree }))
            .collect()
    }

    /// A picture of the ranges as SVG text: the sizes as a strip of cells coloured by
    /// their tree, breakpoints in red, the searched sizes marked, one band per range with
    /// its tree in words; ``label`` names the size (default: the sweep's own label),
    /// ``title`` is a caption above it.
    ///
    /// >>> import fprev, numpy as np
    /// >>> s = fprev.sweep(lambda size: np.sum, [1, 2, 3], 64, label="M")
    /// >>> svg = s.svg(title="np.sum")
    /// >>> svg.startswith("<svg") and "no breakpoint" in svg
    /// True
    #[pyo3(signature = (label=None, title=None))]
    fn svg(&self, label: Option<&str>, title: Option<&str>) -> String {
        let mut picture = fprev_runtime::picture::Picture::new();
        if let Some(title) = title {
            picture = picture.title(title);
        }
        self.sweep.picture(label.unwrap_or(&self.label), &picture)
    }

    /// The order model that gives the tree at every swept length (a sweep over lengths,
    /// :func:`fprev.sweep_lengths`): an :class:`fprev.OrderModel`, fitted at the lengths
    /// :func:`fprev.model` would reveal and around each breakpoint, proved at the rest.
    ///
    /// Raises :class:`fprev.ModelError` when no one model does (the message names the
    /// closest, or says the lengths read as a handful of runs: :meth:`model_pieces`), or
    /// for a sweep over another parameter than the length.
    ///
    /// >>> import fprev, numpy as np
    /// >>> s = fprev.sweep_lengths(lambda n: np.sum, range(1, 300))
    /// >>> str(s.model())
    /// 'fprev-model/1 numpy-pairwise lanes=8 block=128 type=f32'
    fn model(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.sweep.model() {
            Ok(SweepModel::One(m)) => order_model(py, &m),
            Ok(SweepModel::Pieces(p)) => Err(model_error(
                py,
                &format!(
                    "no one order model gives every length; {} runs of lengths do, each with \
                     its model (Sweep.model_pieces()): {}",
                    p.len(),
                    p.iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )),
            Ok(_) => Err(model_error(py, "no order model")),
            Err(e) => Err(model_error(py, &e.to_string())),
        }
    }

    /// ``[(first, last, OrderModel), ...]``: the runs of swept lengths each given by one
    /// order model, in length order (one run when one model gives every length, at most
    /// 8). Raises :class:`fprev.ModelError` as :meth:`model` does when there is no such
    /// handful.
    fn model_pieces(&self, py: Python<'_>) -> PyResult<Vec<(usize, usize, Py<PyAny>)>> {
        match self.sweep.model() {
            Ok(SweepModel::One(m)) => {
                let e = m.evidence().cloned().unwrap_or_default();
                let all = e.fitted.iter().chain(&e.proved);
                let first = all.clone().min().copied().unwrap_or(0);
                let last = all.max().copied().unwrap_or(0);
                Ok(vec![(first, last, order_model(py, &m)?)])
            }
            Ok(SweepModel::Pieces(p)) => p
                .iter()
                .map(|p| Ok((p.first, p.last, order_model(py, &p.model)?)))
                .collect(),
            Ok(_) => Err(model_error(py, "no order model")),
            Err(e) => Err(model_error(py, &e.to_string())),
        }
    }

    /// In words: for a sweep over lengths, its order model (spec and algorithm) or its
    /// handful of runs with their models, else why none and the ranges, one a line; for
    /// another sweep, :meth:`ranges`. ``label`` names the size (default: the sweep's
    /// own). ``str(sweep)`` is this.
    ///
    /// >>> import fprev, numpy as np
    /// >>> print(fprev.sweep_lengths(lambda n: np.sum, range(1, 300)).summary().splitlines()[0])
    /// n = 1..299: one order model, fprev-model/1 numpy-pairwise lanes=8 block=128 type=f32
    #[pyo3(signature = (label=None))]
    fn summary(&self, label: Option<&str>) -> String {
        let label = label.unwrap_or(&self.label);
        if self.sweep.over_lengths() {
            fprev_runtime::model::describe_sweep(&self.sweep, label)
                .trim_end()
                .to_string()
        } else {
            self.sweep.describe(label)
        }
    }

    fn __str__(&self) -> String {
        self.summary(None)
    }

    fn __repr__(&self) -> String {
        let points = self.sweep.points();
        format!(
            "<fprev.Sweep: {} sizes from {} to {}, n = {}, {} range(s)>",
            points.len(),
            points.first().map_or(0, |p| p.size),
            points.last().map_or(0, |p| p.size),
            self.sweep.n(),
            self.sweep.ranges().len()
        )
    }
}

/// `fprev.OrderModel(spec, fitted, proved)` of an engine model.
fn order_model(py: Python<'_>, m: &OrderModel) -> PyResult<Py<PyAny>> {
    let e = m.evidence().cloned().unwrap_or_default();
    Ok(py
        .import("fprev._model")?
        .getattr("OrderModel")?
        .call1((m.to_string(), e.fitted, e.proved))?
        .unbind())
}

/// `fprev.ModelError(message, disagreeing)`, the closest models read from the message as
/// `fprev.model`'s errors are.
fn model_error(py: Python<'_>, message: &str) -> PyErr {
    let made = py.import("fprev._model").and_then(|m| {
        let disagreeing = m.call_method1("_disagreeing", (message,))?;
        m.getattr("ModelError")?.call1((message, disagreeing))
    });
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A size's target, handing what went wrong in Python to the sweep when it is done.
struct SizeTarget<I, T> {
    target: PyTarget<I, T>,
    outcome: Arc<Mutex<FirstFailure>>,
}

/// What the sizes' targets left behind: the first Python exception and its size (the
/// size being revealed is kept here as the sweep goes).
#[derive(Default)]
struct FirstFailure {
    failure: Option<(usize, Failure)>,
    size: usize,
}

impl<I, T> Drop for SizeTarget<I, T> {
    fn drop(&mut self) {
        // a poisoned lock means a panic elsewhere already ended the sweep
        if let Ok(mut out) = self.outcome.lock() {
            if out.failure.is_none() && self.target.failure.error.is_some() {
                let size = out.size;
                out.failure = Some((size, std::mem::take(&mut self.target.failure)));
            }
        }
    }
}

impl<I: ProbeFloat, T: ProbeFloat> Target<T> for SizeTarget<I, T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        self.target.call(x)
    }

    fn input_format(&self) -> Option<fprev_runtime::float::FloatFormat> {
        self.target.input_format()
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        self.target.probe_batch(batch, out)
    }

    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        self.target.probe_sets(sets, out)
    }
}

/// Where each size's callable reads its values.
pub enum Buffers {
    /// One buffer of `n` values for every size: `make(size)` returns the callable, given
    /// `view` (a read-only view of `buffer`).
    Shared {
        buffer: Py<PyAny>,
        view: Py<PyAny>,
        n: usize,
    },
    /// A sweep over lengths: `make(n)` returns `(callable, buffer, view)`, the buffer
    /// holding `n` values.
    PerLength,
}

/// Runs the sweep over `sizes` (lengths with [`Buffers::PerLength`]).
pub fn run<I: ProbeFloat, T: ProbeFloat>(
    py: Python<'_>,
    make: Py<PyAny>,
    sizes: Vec<usize>,
    buffers: Buffers,
    input: crate::dtype::Dtype,
    config: fprev_runtime::Reveal,
    label: String,
) -> PyResult<PySweep> {
    let outcome = Arc::new(Mutex::new(FirstFailure::default()));
    let make_error: Arc<Mutex<Option<(usize, PyErr)>>> = Arc::default();
    let target = |size: usize| {
        if let Ok(mut out) = outcome.lock() {
            out.size = size;
        }
        Python::attach(|py| {
            let built = make
                .bind(py)
                .call1((size,))
                .and_then(|made| match &buffers {
                    Buffers::Shared { buffer, view, n } => {
                        let flat = Flat::writable(buffer.bind(py), &[*n], input)?;
                        Ok((made.unbind(), flat, view.clone_ref(py)))
                    }
                    Buffers::PerLength => {
                        let (call, buffer, view): (Py<PyAny>, Bound<'_, PyAny>, Py<PyAny>) =
                            made.extract()?;
                        let flat = Flat::writable(&buffer, &[size], input)?;
                        Ok((call, flat, view))
                    }
                });
            match built {
                Ok((call, flat, view)) => {
                    let args =
                        PyTuple::new(py, [view]).map_err(|e| TargetError::new(e.to_string()))?;
                    Ok(SizeTarget {
                        target: PyTarget::<I, T>::new(call, args.unbind(), flat),
                        outcome: outcome.clone(),
                    })
                }
                Err(e) => {
                    let message = format!("make({size}) raised {e}");
                    if let Ok(mut kept) = make_error.lock() {
                        kept.get_or_insert((size, e));
                    }
                    Err(TargetError::new(message))
                }
            }
        })
    };
    let result = py.detach(|| match buffers {
        Buffers::Shared { .. } => config.try_sweep(sizes, target),
        Buffers::PerLength => config.try_sweep_lengths(sizes, target),
    });
    if let Some((size, e)) = make_error.lock().ok().and_then(|mut k| k.take()) {
        return Err(noted(py, e, &format!("raised by make({size})")));
    }
    let kept = outcome.lock().ok().and_then(|mut o| o.failure.take());
    if let Some((size, mut failure)) = kept {
        if let Some(e) = failure.take(py) {
            return Err(noted(py, e, &format!("at size {size} of the sweep")));
        }
    }
    match result {
        Ok(sweep) => Ok(PySweep { sweep, label }),
        Err(SweepError::At { size, error }) => Err(errors::to_py_at(error, size)),
        Err(SweepError::Size(error)) => Err(errors::to_py(error)),
        Err(other) => Err(PyValueError::new_err(other.to_string())),
    }
}

/// `e` (the user's own exception, its message untouched) with `note` added, on Python
/// 3.11+ where exceptions take notes.
fn noted(py: Python<'_>, e: PyErr, note: &str) -> PyErr {
    let value = e.value(py);
    if value.hasattr("add_note").unwrap_or(false) {
        let _ = value.call_method1("add_note", (note.to_string(),));
    }
    e
}
