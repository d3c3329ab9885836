//! `fprev.OrderModel`'s engine half: an order model (`fprev_runtime::model`) parsed from
//! its spec, its trees, sums and emitted code, and the fit's building blocks (the sizes
//! to reveal, the model that fits revealed trees, the sizes to prove it at). The fit's
//! loop and the framework glue are in Python (`fprev/_model.py`), which reveals with
//! `fprev.reveal`, `fprev.torch.reveal` or `fprev.jax.reveal`.

use fprev_runtime::model::{self, FitConfig, Lang, ModelError, OrderModel};
use fprev_runtime::SumTree;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::buffer::Flat;
use crate::tree::Tree;

fn value_error(e: ModelError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// An order model as the engine holds it; `fprev.OrderModel` wraps it.
#[pyclass(module = "fprev._fprev", name = "OrderModelCore", frozen)]
pub struct OrderModelCore {
    model: OrderModel,
}

#[pymethods]
impl OrderModelCore {
    /// Read a spec (`"fprev-model/1 numpy-pairwise lanes=8 block=128 type=f32"`).
    #[staticmethod]
    fn parse(spec: &str) -> PyResult<OrderModelCore> {
        let model = OrderModel::parse(spec).map_err(value_error)?;
        Ok(OrderModelCore { model })
    }

    /// The tree at `n` values.
    fn tree(&self, py: Python<'_>, n: usize) -> PyResult<Tree> {
        if n >= u32::MAX as usize / 4 {
            return Err(PyValueError::new_err(format!(
                "n = {n}: more values than a tree indexes"
            )));
        }
        let model = &self.model;
        Ok(Tree {
            tree: py.detach(|| model.tree(n)),
        })
    }

    /// The sum of `x` (any float array, read exactly) in the model's order and type.
    fn sum(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<f64> {
        let flat = Flat::readable(py, x)?;
        let values = flat.to_f64();
        let model = &self.model;
        Ok(py.detach(|| match model.sum_type() {
            model::SumType::F64 => model.sum(&values),
            _ => {
                let narrow: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                f64::from(model.sum(&narrow))
            }
        }))
    }

    fn describe(&self) -> String {
        self.model.describe()
    }

    fn emit(&self, lang: &str) -> PyResult<String> {
        let lang: Lang = lang.parse().map_err(PyValueError::new_err)?;
        Ok(self.model.emit(lang))
    }

    fn __str__(&self) -> String {
        self.model.to_string()
    }
}

/// The sizes a fit reveals out of `sizes`.
#[pyfunction]
pub fn model_fit_sizes(sizes: Vec<usize>) -> PyResult<Vec<usize>> {
    model::fit_sizes(sizes).map_err(value_error)
}

/// The spec of the simplest model of the revealed trees, adding in `sum_type`
/// (`"f32"`, `"f64"`), or `None` and the error's text when none fits.
#[pyfunction]
pub fn model_fit_trees(
    py: Python<'_>,
    trees: Vec<(usize, Tree)>,
    sum_type: &str,
) -> PyResult<(Option<String>, String)> {
    let trees: Vec<(usize, SumTree)> = trees.into_iter().map(|(n, t)| (n, t.tree)).collect();
    let sum_type = match sum_type {
        "f32" => model::SumType::F32,
        "f64" => model::SumType::F64,
        other => {
            return Err(PyValueError::new_err(format!(
                "sum type {other:?}: f32 or f64"
            )))
        }
    };
    Ok(py.detach(|| match model::fit_trees(&trees) {
        Ok(shape) => (
            Some(OrderModel::new(shape, sum_type).to_string()),
            String::new(),
        ),
        Err(e) => (None, e.to_string()),
    }))
}

/// The sizes to prove a model at, in round `round`.
#[pyfunction]
pub fn model_proof_sizes(
    given: Vec<usize>,
    fitted: Vec<usize>,
    proofs: usize,
    reach: usize,
    seed: u64,
    round: usize,
) -> Vec<usize> {
    let (mut given, mut fitted) = (given, fitted);
    given.sort_unstable();
    given.dedup();
    fitted.sort_unstable();
    FitConfig::default()
        .proofs(proofs)
        .reach(reach)
        .seed(seed)
        .proof_sizes(&given, &fitted, round)
}
