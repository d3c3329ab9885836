//! `fprev.exact`: exact sums and dot products, and the accumulator whose state travels
//! between processes (pickled, sent, stored) and merges in any order to the same bits.

use fprev_runtime::exact::{Accumulator, LengthMismatch};
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::buffer::{self, Flat};

create_exception!(
    fprev,
    StateError,
    PyValueError,
    "Bytes that are not an exact accumulator's state: cut short, padded, of another format\nversion, or not in the canonical form `Accumulator.to_bytes` writes."
);

/// What `value()` rounds to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueDtype {
    F64,
    F32,
}

impl ValueDtype {
    /// `dtype` as NumPy names it (`"float64"`, `np.float32`, `np.dtype("f4")`, ...).
    fn parse(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<ValueDtype> {
        let name: String = py
            .import("numpy")?
            .getattr("dtype")?
            .call1((dtype,))
            .and_then(|d| d.getattr("name")?.extract())
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "dtype must be float64 or float32, got {}",
                    dtype.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))
            })?;
        match name.as_str() {
            "float64" => Ok(ValueDtype::F64),
            "float32" => Ok(ValueDtype::F32),
            other => Err(PyValueError::new_err(format!(
                "an exact accumulator rounds to float64 or float32, not {other}"
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ValueDtype::F64 => "float64",
            ValueDtype::F32 => "float32",
        }
    }
}

/// The exact sum of `x`'s items, read chunk by chunk, into `acc`.
fn add_array(py: Python<'_>, acc: &mut Accumulator, x: &Bound<'_, PyAny>) -> PyResult<()> {
    let x = Flat::readable(py, x)?;
    let mut chunk = Vec::new();
    for start in (0..x.len).step_by(buffer::CHUNK) {
        x.read_chunk(start, &mut chunk);
        py.detach(|| acc.add_slice(&chunk));
    }
    Ok(())
}

/// The exact dot product of `a` and `b`, read chunk by chunk, into `acc`.
fn add_dot_arrays(
    py: Python<'_>,
    acc: &mut Accumulator,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let (a, b) = (Flat::readable(py, a)?, Flat::readable(py, b)?);
    if a.len != b.len {
        let e = LengthMismatch {
            left: a.len,
            right: b.len,
        };
        return Err(PyValueError::new_err(e.to_string()));
    }
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for start in (0..a.len).step_by(buffer::CHUNK) {
        a.read_chunk(start, &mut x);
        b.read_chunk(start, &mut y);
        py.detach(|| acc.add_dot(&x, &y));
    }
    Ok(())
}

/// The exact sum of the items of `x`, correctly rounded to float64, read in chunks (no
/// float64 copy of the array).
#[pyfunction]
pub fn exact_sum(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<f64> {
    let mut acc = Accumulator::new();
    add_array(py, &mut acc, x)?;
    Ok(acc.finish())
}

/// The exact dot product of `a` and `b`, correctly rounded to float64, read in chunks.
#[pyfunction]
pub fn exact_dot(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<f64> {
    let mut acc = Accumulator::new();
    add_dot_arrays(py, &mut acc, a, b)?;
    Ok(acc.finish())
}

/// An exact, order-independent sum whose state travels between processes.
///
/// Each process adds its part of the data; the partial states meet (pickled, sent,
/// stored as `to_bytes()`) and merge in any order and grouping; `value()` is then the
/// exact sum of all the data rounded once to `dtype` (float64 or float32): the same bits
/// however the data was partitioned, and the most accurate result the type holds.
///
/// >>> import numpy as np, pickle, fprev
/// >>> x = np.array([1e16, 1.0, -1e16, 1.0, 1.0])
/// >>> left, right = fprev.exact.Accumulator(), fprev.exact.Accumulator()
/// >>> left.add(x[:2]); right.add(x[2:])
/// >>> right = pickle.loads(pickle.dumps(right))  # as if from another process
/// >>> left.merge(right)
/// >>> left.value(), float(np.sum(x))
/// (3.0, 2.0)
#[pyclass(module = "fprev.exact", name = "Accumulator")]
pub struct PyAccumulator {
    acc: Accumulator,
    rounding: ValueDtype,
}

#[pymethods]
impl PyAccumulator {
    #[new]
    #[pyo3(signature = (dtype = None))]
    fn new(py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyAccumulator> {
        let rounding = match dtype {
            None => ValueDtype::F64,
            Some(d) => ValueDtype::parse(py, d)?,
        };
        Ok(PyAccumulator {
            acc: Accumulator::new(),
            rounding,
        })
    }

    /// The type `value()` rounds to: `"float64"` or `"float32"`.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.rounding.name()
    }

    /// Adds every item of the array `x` exactly (float64, float32, float16 and bfloat16
    /// are read as they are; other arrays are converted to float64 first).
    fn add(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        add_array(py, &mut self.acc, x)
    }

    /// Adds the exact dot product of the arrays `a` and `b` (`ValueError` when their
    /// lengths differ).
    fn add_dot(
        &mut self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        add_dot_arrays(py, &mut self.acc, a, b)
    }

    /// Adds what `other` holds, exactly: an `Accumulator` or the bytes of one
    /// (`to_bytes()`); `StateError` for bytes that are not a state. The result of any
    /// number of merges does not depend on their order.
    fn merge(&mut self, other: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(other) = other.cast::<PyAccumulator>() {
            let other = other.borrow();
            self.acc.merge(&other.acc);
            return Ok(());
        }
        if let Ok(bytes) = other.cast::<PyBytes>() {
            return self
                .acc
                .merge_bytes(bytes.as_bytes())
                .map_err(|e| StateError::new_err(e.to_string()));
        }
        Err(PyTypeError::new_err(format!(
            "merge takes an Accumulator or its bytes, not {}",
            other.get_type().name()?
        )))
    }

    /// The exact sum of everything added and merged, rounded once to `dtype` (to
    /// nearest, ties to even), as a Python float.
    fn value(&self) -> f64 {
        match self.rounding {
            ValueDtype::F64 => self.acc.finish(),
            ValueDtype::F32 => f64::from(self.acc.finish_f32()),
        }
    }

    /// The state as bytes (the versioned, canonical format of docs/exact.md): equal
    /// exact values give equal bytes. `dtype` is not part of them.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.acc.to_bytes())
    }

    /// The accumulator whose state `to_bytes()` wrote; `StateError` when `data` is not
    /// such a state.
    #[staticmethod]
    #[pyo3(signature = (data, dtype = None))]
    fn from_bytes(
        py: Python<'_>,
        data: &[u8],
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyAccumulator> {
        let mut acc = PyAccumulator::new(py, dtype)?;
        acc.acc = Accumulator::from_bytes(data).map_err(|e| StateError::new_err(e.to_string()))?;
        Ok(acc)
    }

    /// A copy (merging into it leaves this one as it is).
    fn copy(&self) -> PyAccumulator {
        PyAccumulator {
            acc: self.acc.clone(),
            rounding: self.rounding,
        }
    }

    /// Pickling goes through `to_bytes()`: `(Accumulator, (dtype,), state)`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.borrow();
        (
            slf.get_type(),
            (this.rounding.name(),),
            PyBytes::new(py, &this.acc.to_bytes()),
        )
            .into_pyobject(py)
    }

    fn __setstate__(&mut self, state: &[u8]) -> PyResult<()> {
        self.acc =
            Accumulator::from_bytes(state).map_err(|e| StateError::new_err(e.to_string()))?;
        Ok(())
    }

    /// Equal when they hold the same exact value and flags and round to the same type.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyAccumulator>().is_ok_and(|o| {
            let o = o.borrow();
            o.rounding == self.rounding && o.acc.to_bytes() == self.acc.to_bytes()
        })
    }

    fn __repr__(&self) -> String {
        let v = self.value();
        // as Python writes floats
        let value = match v {
            _ if v.is_nan() => "nan".to_string(),
            f64::INFINITY => "inf".to_string(),
            f64::NEG_INFINITY => "-inf".to_string(),
            _ => format!("{v:?}"),
        };
        format!(
            "Accumulator(dtype='{}', value={value})",
            self.rounding.name()
        )
    }
}

/// Adds the class, its error and the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyAccumulator>()?;
    m.add("StateError", m.py().get_type::<StateError>())?;
    m.add_function(wrap_pyfunction!(exact_sum, m)?)?;
    m.add_function(wrap_pyfunction!(exact_dot, m)?)?;
    Ok(())
}
