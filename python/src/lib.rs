//! The Rust half of the `fprev` Python package: a thin layer that converts Python
//! arguments, runs the engine (`fprev_runtime::Reveal`, `ops::ElementReveal`) with the GIL
//! released, and converts the result. The public API, its docs and the framework glue
//! are in Python (`python/fprev/`); the functions here are private (`fprev._fprev`).

mod buffer;
mod dtype;
mod errors;
mod exact;
mod model;
mod scaled;
mod sweep;
mod target;
mod tree;

use fprev_runtime::fused::{AccumulatorCut, AccumulatorJoin, Alignment, Rounding};
use fprev_runtime::ops::{Batched, ElementOrders, ElementReveal, ReductionShape};
use fprev_runtime::reveal::{check_memory, Algorithm, BinaryNodes, FittedFused, MeasuredCount};
use fprev_runtime::target::Products;
use fprev_runtime::{Reveal, RevealError, RevealReport, SumTree};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use buffer::Flat;
use dtype::{dispatch, Dtype};
use target::{PyDot, PyReduction, PyTarget};
use tree::Tree;

fn algorithm(name: &str) -> PyResult<Algorithm> {
    match name {
        "fprev" => Ok(Algorithm::FPRev),
        "basic" => Ok(Algorithm::Basic),
        "naive" => Ok(Algorithm::Naive),
        other => Err(PyValueError::new_err(format!(
            "unknown algorithm {other:?}: expected \"fprev\", \"basic\" or \"naive\""
        ))),
    }
}

/// Refuses, before the caller allocates its buffer, a size whose revelation would not
/// fit the engine's default memory budget.
#[pyfunction]
fn check_size(n: usize, dtype: &str, algorithm_name: &str) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    check_memory(
        n,
        algorithm(algorithm_name)?,
        dtype.width().max(4),
        fprev_runtime::reveal::DEFAULT_MAX_MEMORY,
    )
    .map_err(errors::to_py)
}

/// What a revelation returns to Python: the callable's own exception first (when it
/// raised, that is why the engine stopped), then the engine's error, else the tree and
/// its report.
fn answer<'py>(
    py: Python<'py>,
    result: Result<RevealReport, RevealError>,
    failure: &mut target::Failure,
    calls: u64,
) -> PyResult<(Tree, Bound<'py, PyDict>)> {
    if let Some(e) = failure.take(py) {
        return Err(e);
    }
    let report = result.map_err(|e| failure.chain(py, errors::to_py(e)))?;
    let dict = report_dict(py, &report, calls)?;
    Ok((Tree { tree: report.tree }, dict))
}

fn report_dict<'py>(py: Python<'py>, r: &RevealReport, calls: u64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("probes", r.probes)?;
    d.set_item("batches", r.batches)?;
    d.set_item("calls", calls)?;
    d.set_item("replays", r.replays)?;
    d.set_item("mask", r.scale.mask)?;
    d.set_item("unit", r.scale.unit)?;
    d.set_item("windowed", r.windowed)?;
    d.set_item("recognized", r.recognized.clone())?;
    let arithmetic = r
        .arithmetic()
        .map(|a| arithmetic_dict(py, &a))
        .transpose()?;
    d.set_item("arithmetic", arithmetic)?;
    Ok(d)
}

/// A measured count as `{"value", "min", "max"}` (`max` None: no upper bound).
fn count_dict<'py>(py: Python<'py>, c: MeasuredCount) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("value", c.value)?;
    d.set_item("min", c.min)?;
    d.set_item("max", c.max)?;
    Ok(d)
}

/// The arithmetic measured at fused nodes (`RevealReport::arithmetic`) as a dict with
/// the Rust names, so Python callers read the same fields the CLI's summary prints.
fn arithmetic_dict<'py>(py: Python<'py>, a: &FittedFused) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(
        "alignment",
        match a.alignment {
            Alignment::OperandExponents => "operand-exponents",
            Alignment::ProductExponent => "product-exponent",
        },
    )?;
    d.set_item("alignment_decided", a.alignment_decided)?;
    d.set_item("frac", a.frac)?;
    d.set_item("frac_range", (a.frac, a.frac_max))?;
    d.set_item("frac_out", a.frac_out)?;
    d.set_item("frac_out_range", a.frac_out_range)?;
    d.set_item("frac_out_rounded", a.frac_out_rounded)?;
    d.set_item("inputs", a.inputs)?;
    let s = a.structure;
    d.set_item("nfma", s.map(|s| count_dict(py, s.nfma)).transpose()?)?;
    d.set_item(
        "c",
        s.and_then(|s| s.accumulator).map(|j| match j {
            AccumulatorJoin::Aligned => "aligned",
            AccumulatorJoin::Late => "late",
        }),
    )?;
    d.set_item(
        "promotion",
        s.and_then(|s| s.promotion)
            .map(|p| count_dict(py, p))
            .transpose()?,
    )?;
    d.set_item("unpromoted_from", s.map(|s| s.unpromoted_from))?;
    d.set_item("align_rounding", rounding_name(a.align_rounding))?;
    d.set_item("align_rounding_decided", a.align_rounding_decided)?;
    d.set_item(
        "binary",
        match a.binary {
            BinaryNodes::Rounded => "rounded",
            BinaryNodes::Fused => "fused",
            BinaryNodes::LeafPairs => "leaf-pairs",
            BinaryNodes::AfterFused => "after-fused",
        },
    )?;
    let cut = PyDict::new(py);
    match a.accumulator_cut {
        AccumulatorCut::WithProducts => cut.set_item("kind", "with-products")?,
        AccumulatorCut::TwoStage {
            block_frac,
            acc_frac,
            rounding,
            halves,
            acc_reach,
        } => {
            cut.set_item("kind", "two-stage")?;
            cut.set_item("halves", halves)?;
            cut.set_item("acc_reach", acc_reach)?;
            cut.set_item("acc_reach_decided", a.acc_reach_decided)?;
            cut.set_item("block_frac", block_frac)?;
            cut.set_item("acc_frac", acc_frac)?;
            cut.set_item("rounding", rounding_name(rounding))?;
            cut.set_item("rounding_decided", a.accumulator_cut_rounding_decided)?;
            if let Some([block, acc]) = a.accumulator_cut_ranges {
                cut.set_item("block_frac_range", block)?;
                cut.set_item("acc_frac_range", acc)?;
            }
        }
    }
    d.set_item("accumulator_cut", cut)?;
    d.set_item("candidates", a.candidates)?;
    d.set_item("text", a.to_string())?;
    Ok(d)
}

fn rounding_name(r: Rounding) -> &'static str {
    match r {
        Rounding::TowardZero => "toward-zero",
        Rounding::NearestEven => "nearest-even",
        Rounding::TowardNegative => "toward-negative",
    }
}

/// The engine's settings for one reveal of `n` values.
fn engine(
    n: usize,
    algorithm_name: &str,
    hint: Option<Tree>,
    verify: bool,
    seed: u64,
    accept_flat: bool,
) -> PyResult<Reveal> {
    let mut config = Reveal::new(n)
        .algorithm(algorithm(algorithm_name)?)
        .verify(verify)
        .seed(seed)
        .accept_flat(accept_flat);
    if let Some(h) = hint {
        config = config.hint(h.tree);
    }
    Ok(config)
}

/// Reveals `call(*args)`, a sum of the `n` items of `buffer` (a writable contiguous
/// array of `dtype`), accumulated in `acc`. Returns `(Tree, report)`.
#[pyfunction]
#[pyo3(signature = (call, args, buffer, n, dtype, acc, algorithm_name, hint, verify, seed, accept_flat))]
#[allow(clippy::too_many_arguments)]
fn reveal<'py>(
    py: Python<'py>,
    call: Py<PyAny>,
    args: Py<PyTuple>,
    buffer: &Bound<'py, PyAny>,
    n: usize,
    dtype: &str,
    acc: &str,
    algorithm_name: &str,
    hint: Option<Tree>,
    verify: bool,
    seed: u64,
    accept_flat: bool,
) -> PyResult<(Tree, Bound<'py, PyDict>)> {
    let (input, acc) = (Dtype::parse(dtype)?, Dtype::parse(acc)?);
    let buffer = Flat::writable(buffer, &[n], input)?;
    let config = engine(n, algorithm_name, hint, verify, seed, accept_flat)?;
    dispatch!(input, acc, |I, T| {
        let mut target = PyTarget::<I, T>::new(call, args, buffer);
        let result = py.detach(|| config.run_target(&mut target));
        answer(py, result, &mut target.failure, target.calls)
    })
}

/// Reveals a sum through a callable that answers `lanes` sums at once: `call(*args)`
/// reads `input` (`lanes x n` items of `dtype`) and writes each row's sum into `output`
/// (`lanes x 1` float64), every row summed as the one-row function would. Probes go one
/// per row, so a row of probes costs `n / lanes` calls; replays put one input in every
/// row. Returns `(Tree, report)` as `reveal` does (`calls` counts calls of `call`).
#[pyfunction]
#[pyo3(signature = (call, args, input, output, lanes, n, dtype, acc, algorithm_name, hint, verify, seed, accept_flat))]
#[allow(clippy::too_many_arguments)]
fn reveal_lanes<'py>(
    py: Python<'py>,
    call: Py<PyAny>,
    args: Py<PyTuple>,
    input: &Bound<'py, PyAny>,
    output: &Bound<'py, PyAny>,
    lanes: usize,
    n: usize,
    dtype: &str,
    acc: &str,
    algorithm_name: &str,
    hint: Option<Tree>,
    verify: bool,
    seed: u64,
    accept_flat: bool,
) -> PyResult<(Tree, Bound<'py, PyDict>)> {
    let (in_type, acc) = (Dtype::parse(dtype)?, Dtype::parse(acc)?);
    let input = Flat::writable(input, &[lanes, n], in_type)?;
    let output = Flat::writable(output, &[lanes, 1], Dtype::F64)?;
    let config = engine(n, algorithm_name, hint, verify, seed, accept_flat)?;
    let shape = ReductionShape {
        lanes,
        k: n,
        outputs: 1,
    };
    dispatch!(in_type, acc, |I, T| {
        let op = PyReduction::<I, T>::new(call, args, input, output, shape);
        let mut target = Batched::new(op, 0);
        let result = py.detach(|| config.run_target(&mut target));
        let calls = target.calls();
        let mut op = target.into_inner();
        answer(py, result, &mut op.failure, calls)
    })
}

/// Reveals a dot product `call(*args)` of the `n` items of `a` and of `b` (writable
/// contiguous arrays of `dtype`), accumulated in `acc`, with every probe value split
/// into a factor in each operand: for operands whose range cannot hold a mask that
/// swamps `n` units (FP8). Returns `(Tree, report)`.
#[pyfunction]
#[pyo3(signature = (call, args, a, b, n, dtype, acc, algorithm_name, hint, verify, seed, accept_flat))]
#[allow(clippy::too_many_arguments)]
fn reveal_products<'py>(
    py: Python<'py>,
    call: Py<PyAny>,
    args: Py<PyTuple>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    n: usize,
    dtype: &str,
    acc: &str,
    algorithm_name: &str,
    hint: Option<Tree>,
    verify: bool,
    seed: u64,
    accept_flat: bool,
) -> PyResult<(Tree, Bound<'py, PyDict>)> {
    let (input, acc) = (Dtype::parse(dtype)?, Dtype::parse(acc)?);
    let (a, b) = (
        Flat::writable(a, &[n], input)?,
        Flat::writable(b, &[n], input)?,
    );
    let config = engine(n, algorithm_name, hint, verify, seed, accept_flat)?;
    dispatch!(input, acc, |I, T| {
        let mut dot = PyDot::<I, T>::new(call, args, a, b);
        let result =
            py.detach(|| config.run_target(Products::new(|x: &[I], y: &[I]| dot.answer(x, y))));
        answer(py, result, &mut dot.failure, dot.calls)
    })
}

/// Reveals, for every size of `sizes` (strictly increasing), the callable `make(size)`
/// summing the `n` items of `buffer` (it is called with `view`, a read-only view of
/// it), each size first proved against the previous size's tree. Returns a `Sweep`.
#[pyfunction]
#[pyo3(name = "sweep", signature = (make, sizes, buffer, view, n, dtype, acc, algorithm_name, verify, seed, accept_flat, label))]
#[allow(clippy::too_many_arguments)]
fn sweep_sizes(
    py: Python<'_>,
    make: Py<PyAny>,
    sizes: Vec<usize>,
    buffer: Py<PyAny>,
    view: Py<PyAny>,
    n: usize,
    dtype: &str,
    acc: &str,
    algorithm_name: &str,
    verify: bool,
    seed: u64,
    accept_flat: bool,
    label: String,
) -> PyResult<sweep::PySweep> {
    let (input, acc) = (Dtype::parse(dtype)?, Dtype::parse(acc)?);
    // the buffer's shape and dtype are checked here, before any size runs
    Flat::writable(buffer.bind(py), &[n], input)?;
    let config = engine(n, algorithm_name, None, verify, seed, accept_flat)?;
    let buffers = sweep::Buffers::Shared { buffer, view, n };
    dispatch!(input, acc, |I, T| {
        sweep::run::<I, T>(py, make, sizes, buffers, input, config, label)
    })
}

/// `fprev.sweep_lengths`: `make(n)` returns `(callable, buffer, view)` for `n` values.
#[pyfunction]
#[pyo3(signature = (make, lengths, dtype, acc, algorithm_name, verify, seed, accept_flat, label))]
#[allow(clippy::too_many_arguments)]
fn sweep_lengths(
    py: Python<'_>,
    make: Py<PyAny>,
    lengths: Vec<usize>,
    dtype: &str,
    acc: &str,
    algorithm_name: &str,
    verify: bool,
    seed: u64,
    accept_flat: bool,
    label: String,
) -> PyResult<sweep::PySweep> {
    let (input, acc) = (Dtype::parse(dtype)?, Dtype::parse(acc)?);
    let config = engine(1, algorithm_name, None, verify, seed, accept_flat)?;
    dispatch!(input, acc, |I, T| {
        sweep::run::<I, T>(
            py,
            make,
            lengths,
            sweep::Buffers::PerLength,
            input,
            config,
            label,
        )
    })
}

/// The orders of every output element of a k-reduction (a matrix product), grouped.
///
/// >>> import fprev, numpy as np
/// >>> o = fprev.reveal_matmul(np.matmul, 4, 3, 8)
/// >>> o.uniform, len(o.groups)
/// (True, 1)
#[pyclass(module = "fprev", name = "Orders", frozen)]
pub struct Orders {
    orders: ElementOrders,
}

#[pymethods]
impl Orders {
    /// Whether every output element sums in one order.
    #[getter]
    fn uniform(&self) -> bool {
        self.orders.is_uniform()
    }

    /// The one tree every element shares (`ValueError` when they differ).
    #[getter]
    fn tree(&self) -> PyResult<Tree> {
        if !self.orders.is_uniform() {
            return Err(PyValueError::new_err(format!(
                "the elements sum in {} orders; see .groups",
                self.orders.groups.len()
            )));
        }
        Ok(Tree {
            tree: self.orders.groups[0].tree.clone(),
        })
    }

    /// `[(tree, [(row, column), ...]), ...]`, the largest group first.
    #[getter]
    fn groups(&self) -> Vec<(Tree, Vec<(usize, usize)>)> {
        self.orders
            .groups
            .iter()
            .map(|g| {
                let elements = g.elements.iter().map(|e| (e.lane, e.output)).collect();
                (
                    Tree {
                        tree: g.tree.clone(),
                    },
                    elements,
                )
            })
            .collect()
    }

    /// The arithmetic measured at each group's fused nodes, in the order of `groups`:
    /// a dict as `report=True`'s `"arithmetic"` gives it for one reveal, or `None` for
    /// a group of plain additions (or one found with `verify=False`).
    #[getter]
    fn arithmetic<'py>(&self, py: Python<'py>) -> PyResult<Vec<Option<Bound<'py, PyDict>>>> {
        self.orders
            .groups
            .iter()
            .map(|g| {
                g.arithmetic
                    .as_ref()
                    .map(|a| arithmetic_dict(py, a))
                    .transpose()
            })
            .collect()
    }

    /// Elements left unrevealed (normally none).
    #[getter]
    fn unresolved(&self) -> Vec<(usize, usize)> {
        self.orders
            .unresolved
            .iter()
            .map(|e| (e.lane, e.output))
            .collect()
    }

    /// Calls of the operation.
    #[getter]
    fn calls(&self) -> u64 {
        self.orders.calls
    }

    /// Probes answered.
    #[getter]
    fn probes(&self) -> u64 {
        self.orders.probes
    }

    fn __str__(&self) -> String {
        self.orders.to_string()
    }

    fn __repr__(&self) -> String {
        let s = self.orders.shape;
        format!(
            "<fprev.Orders: {} group(s) over {} x {} elements, k = {}>",
            self.orders.groups.len(),
            s.lanes,
            s.outputs,
            s.k
        )
    }
}

/// Reveals a k-reduction: `call(*args)` reads `input` (`lanes x k` items of `dtype`) and
/// writes `lanes x outputs` float64 results into `output`.
///
/// `second`, when given, is the writable `k x outputs` array behind the callable's `B`
/// (all ones): operands too narrow for one-operand masks (FP8) then spread each probe
/// over a row of `input` and a column of `second`.
///
/// `verify` checks every tree as `reveal` does (sampled probes again, seeded random
/// inputs); off, only each element's own checks run.
#[pyfunction]
#[pyo3(signature = (call, args, input, output, lanes, k, outputs, dtype, acc, algorithm_name, seed, second=None, verify=true))]
#[allow(clippy::too_many_arguments)]
fn reveal_reduction(
    py: Python<'_>,
    call: Py<PyAny>,
    args: Py<PyTuple>,
    input: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
    lanes: usize,
    k: usize,
    outputs: usize,
    dtype: &str,
    acc: &str,
    algorithm_name: &str,
    seed: u64,
    second: Option<&Bound<'_, PyAny>>,
    verify: bool,
) -> PyResult<Orders> {
    let (in_type, acc) = (Dtype::parse(dtype)?, Dtype::parse(acc)?);
    let input = Flat::writable(input, &[lanes, k], in_type)?;
    let output = Flat::writable(output, &[lanes, outputs], Dtype::F64)?;
    let second = second
        .map(|b| Flat::writable(b, &[k, outputs], in_type))
        .transpose()?;
    let config = ElementReveal::new()
        .algorithm(algorithm(algorithm_name)?)
        .seed(seed)
        .verify(verify);
    let shape = ReductionShape { lanes, k, outputs };
    dispatch!(in_type, acc, |I, T| {
        let mut op = PyReduction::<I, T>::new(call, args, input, output, shape);
        if let Some(second) = second {
            op = op.with_second(second);
        }
        let result = py.detach(|| config.run::<T, _>(&mut op));
        if let Some(e) = op.failure.take(py) {
            return Err(e);
        }
        Ok(Orders {
            orders: result.map_err(errors::to_py)?,
        })
    })
}

/// The tree in `text`, for hints given as text.
fn parse_tree(text: &str) -> PyResult<SumTree> {
    text.parse()
        .map_err(|e| PyValueError::new_err(format!("not a summation tree: {e}")))
}

/// `hint` as a Tree: a Tree or its text.
#[pyfunction]
fn as_tree(hint: &Bound<'_, PyAny>) -> PyResult<Tree> {
    if let Ok(t) = hint.extract::<Tree>() {
        return Ok(t);
    }
    let text: String = hint.extract()?;
    Ok(Tree {
        tree: parse_tree(&text)?,
    })
}

#[pymodule]
fn _fprev(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tree>()?;
    m.add_class::<tree::Diff>()?;
    m.add_class::<Orders>()?;
    m.add_class::<sweep::PySweep>()?;
    m.add_class::<model::OrderModelCore>()?;
    m.add_function(wrap_pyfunction!(model::model_fit_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(model::model_fit_trees, m)?)?;
    m.add_function(wrap_pyfunction!(model::model_proof_sizes, m)?)?;
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(check_size, m)?)?;
    m.add_function(wrap_pyfunction!(reveal, m)?)?;
    m.add_function(wrap_pyfunction!(reveal_lanes, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_lengths, m)?)?;
    m.add_function(wrap_pyfunction!(reveal_reduction, m)?)?;
    m.add_function(wrap_pyfunction!(reveal_products, m)?)?;
    m.add_function(wrap_pyfunction!(scaled::reveal_scaled_dot, m)?)?;
    m.add_function(wrap_pyfunction!(scaled::format_codes, m)?)?;
    m.add_function(wrap_pyfunction!(scaled::format_round, m)?)?;
    exact::register(m)?;
    m.add_function(wrap_pyfunction!(as_tree, m)?)?;
    Ok(())
}
