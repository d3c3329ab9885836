//! Python callables as the engine's targets.
//!
//! The engine runs with the GIL released; each batch of probes takes the GIL once and
//! answers every probe of the batch from one reused NumPy buffer: the two masks are
//! written, the callable is called, the two positions are put back. No array is built or
//! copied per probe. A Python exception raised by the callable is kept (traceback and
//! all) and the target reports a failure, which ends the revelation; the caller raises
//! the kept exception itself, so the user sees their own error.

use std::marker::PhantomData;

use fprev_runtime::ops::{Reduction, ReductionShape};
use fprev_runtime::target::{Probe, ProbeBatch, ProbeSets, Target, TargetError};
use fprev_runtime::ProbeFloat;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyComplex, PyFloat, PyTuple};

use crate::buffer::Flat;
use crate::dtype::bits_in;

/// What a callable did wrong, kept to be raised once the engine has returned.
#[derive(Default)]
pub struct Failure {
    /// The exception the callable (or the conversion of its answer) raised.
    pub error: Option<PyErr>,
    /// The probe it was answering, when one.
    pub probe: Option<Probe>,
    /// The exception that made an answer unreadable (its `__float__` raised): the
    /// engine's error says the answer is not a number, and chains this as its cause.
    pub cause: Option<PyErr>,
}

impl Failure {
    /// The engine's error for an answer that is not a number, its cause kept (the
    /// first one wins) to be chained to the exception raised for it.
    pub fn bad_answer(&mut self, bad: BadAnswer, probe: Option<Probe>) -> TargetError {
        if self.cause.is_none() {
            self.cause = bad.cause;
        }
        TargetError {
            message: bad.message,
            probe,
        }
    }

    /// `e` with the kept cause (when one) as its `__cause__`.
    pub fn chain(&mut self, py: Python<'_>, e: PyErr) -> PyErr {
        if let Some(cause) = self.cause.take() {
            e.set_cause(py, Some(cause));
        }
        e
    }

    /// Keep `e` (the first one wins) and say so to the engine.
    fn keep(&mut self, e: PyErr, probe: Option<Probe>) -> TargetError {
        if self.error.is_none() {
            self.error = Some(e);
            self.probe = probe;
        }
        TargetError {
            message: "the Python callable raised an exception".to_string(),
            probe,
        }
    }

    /// The kept exception, with a note saying which probe it answered (Python 3.11+).
    pub fn take(&mut self, py: Python<'_>) -> Option<PyErr> {
        let e = self.error.take()?;
        let note = match self.probe {
            Some(p) => format!("raised while fprev was answering probe {p}"),
            None => "raised while fprev was answering a check input".to_string(),
        };
        let value = e.value(py);
        if value.hasattr("add_note").unwrap_or(false) {
            let _ = value.call_method1("add_note", (note,));
        }
        Some(e)
    }
}

/// Why a callable's answer is not one real number.
pub struct BadAnswer {
    /// What was wrong, for the engine's [`TargetError`].
    pub message: String,
    /// The exception its conversion raised, when the object's own `__float__` (or
    /// `__index__`) raised one.
    pub cause: Option<PyErr>,
}

impl BadAnswer {
    fn new(message: String) -> Self {
        BadAnswer {
            message,
            cause: None,
        }
    }
}

/// Reads a callable's answer as one number: a Python float or int, a NumPy scalar or
/// 0-d array, a torch or JAX scalar (anything with `__float__` and no dimensions).
/// Complex answers are refused, whatever their type: NumPy's and torch's `__float__`
/// would keep the real part with only a warning.
pub fn scalar(answer: &Bound<'_, PyAny>) -> Result<f64, BadAnswer> {
    let py = answer.py();
    let kind = || {
        answer
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "object".to_string())
    };
    // a Python float has no shape; anything else is asked for one first, so that an
    // array of one element is not taken for its element
    if !answer.is_exact_instance_of::<PyFloat>() {
        if let Ok(shape) = answer.getattr(intern!(py, "shape")) {
            if let Ok(dims) = shape.extract::<Vec<usize>>() {
                if !dims.is_empty() {
                    return Err(BadAnswer::new(format!(
                        "the callable returned an array of shape {}, not a scalar \
                         (reduce over every element, or index the result)",
                        describe_shape(&dims)
                    )));
                }
            }
        }
        if is_complex(answer) {
            return Err(BadAnswer::new(format!(
                "the callable returned a {}, not a real number \
                 (return its real part, or abs(), if that is the sum)",
                kind()
            )));
        }
    }
    match answer.extract::<f64>() {
        Ok(v) => Ok(v),
        Err(e) => {
            let own = answer.hasattr(intern!(py, "__float__")).unwrap_or(false)
                || answer.hasattr(intern!(py, "__index__")).unwrap_or(false);
            if own {
                return Err(BadAnswer {
                    message: format!(
                        "the callable returned a {}, whose conversion to float raised {}",
                        kind(),
                        e.get_type(py)
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_else(|_| "an exception".to_string())
                    ),
                    cause: Some(e),
                });
            }
            Err(BadAnswer::new(format!(
                "the callable returned a {}, not a number \
                 (return a float, a NumPy scalar or a 0-d array)",
                kind()
            )))
        }
    }
}

/// Whether `x` is a complex number: a Python `complex`, a NumPy complex scalar or 0-d
/// array (dtype kind `c`), or a tensor that says so (`is_complex()`, torch).
fn is_complex(x: &Bound<'_, PyAny>) -> bool {
    let py = x.py();
    if x.is_instance_of::<PyComplex>() {
        return true;
    }
    let numpy_kind = x
        .getattr(intern!(py, "dtype"))
        .and_then(|d| d.getattr(intern!(py, "kind")))
        .and_then(|k| k.extract::<String>());
    if let Ok(kind) = numpy_kind {
        return kind == "c";
    }
    x.call_method0(intern!(py, "is_complex"))
        .and_then(|c| c.extract::<bool>())
        .unwrap_or(false)
}

fn describe_shape(dims: &[usize]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    if dims.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// A callable `f(*args)` summing the probe buffer, answering with a scalar.
pub struct PyTarget<I, T> {
    call: Py<PyAny>,
    args: Py<PyTuple>,
    buffer: Flat,
    /// The background now in the buffer (empty: unknown, rewrite it all).
    written: Vec<T>,
    /// Calls of the callable.
    pub calls: u64,
    /// What went wrong in Python.
    pub failure: Failure,
    _i: PhantomData<fn() -> I>,
}

impl<I: ProbeFloat, T: ProbeFloat> PyTarget<I, T> {
    /// `call(*args)` must read `buffer` (of `I` items) and return the sum.
    pub fn new(call: Py<PyAny>, args: Py<PyTuple>, buffer: Flat) -> Self {
        PyTarget {
            call,
            args,
            buffer,
            written: Vec::new(),
            calls: 0,
            failure: Failure::default(),
            _i: PhantomData,
        }
    }

    /// One call of the callable on what the buffer holds now.
    fn answer(&mut self, py: Python<'_>, probe: Option<Probe>) -> Result<T, TargetError> {
        self.calls += 1;
        let r = self
            .call
            .bind(py)
            .call1(self.args.bind(py))
            .map_err(|e| self.failure.keep(e, probe))?;
        match scalar(&r) {
            Ok(v) => Ok(T::from_f64_round(v)),
            Err(bad) => Err(self.failure.bad_answer(bad, probe)),
        }
    }

    /// Put `background` in the buffer, writing only when it changed since last time.
    fn set_background(&mut self, background: &[T]) {
        let same = self.written.len() == background.len()
            && self
                .written
                .iter()
                .zip(background)
                .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64());
        if same {
            return;
        }
        for (i, v) in background.iter().enumerate() {
            self.buffer.set_bits(i, bits_in::<I, T>(*v));
        }
        self.written.clear();
        self.written.extend_from_slice(background);
    }
}

impl<I: ProbeFloat, T: ProbeFloat> Target<T> for PyTarget<I, T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        if self.failure.error.is_some() {
            return Err(TargetError::new("the Python callable raised an exception"));
        }
        Python::attach(|py| {
            self.written.clear();
            for (i, v) in x.iter().enumerate() {
                self.buffer.set_bits(i, bits_in::<I, T>(*v));
            }
            self.answer(py, None)
        })
    }

    fn input_format(&self) -> Option<fprev_runtime::float::FloatFormat> {
        (I::FORMAT != T::FORMAT).then_some(I::FORMAT)
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        if self.failure.error.is_some() {
            return Err(TargetError::new("the Python callable raised an exception"));
        }
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                return Err(self.failure.keep(e, None));
            }
            self.set_background(batch.background);
            let plus = bits_in::<I, T>(batch.mask);
            let minus = I::from_f64_round(-batch.mask.to_f64()).to_bits_u64();
            for (k, p) in batch.probes.iter().enumerate() {
                // Ctrl-C within a long batch too (a batch can hold n probes)
                if k % 1024 == 1023 {
                    if let Err(e) = py.check_signals() {
                        return Err(self.failure.keep(e, Some(*p)));
                    }
                }
                self.buffer.set_bits(p.plus, plus);
                self.buffer.set_bits(p.minus, minus);
                let r = self.answer(py, Some(*p));
                let bg = |i: usize| bits_in::<I, T>(batch.background[i]);
                self.buffer.set_bits(p.plus, bg(p.plus));
                self.buffer.set_bits(p.minus, bg(p.minus));
                out[k] = r?;
            }
            Ok(())
        })
    }

    /// Inputs holding several probes (how a guessed tree is proved in a fraction of the
    /// calls): each set's masks written into the reused buffer, one call, put back.
    fn probe_sets(
        &mut self,
        sets: &ProbeSets<'_, T>,
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        if self.failure.error.is_some() {
            return Some(Err(TargetError::new(
                "the Python callable raised an exception",
            )));
        }
        Some(Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                return Err(self.failure.keep(e, None));
            }
            self.set_background(sets.background);
            let bg = |i: usize| bits_in::<I, T>(sets.background[i]);
            for (c, slot) in out.iter_mut().enumerate().take(sets.calls()) {
                let range = sets.call(c);
                let first = sets.probes.get(range.start).copied();
                if c % 1024 == 1023 {
                    if let Err(e) = py.check_signals() {
                        return Err(self.failure.keep(e, first));
                    }
                }
                for k in range.clone() {
                    let (p, m) = (sets.probes[k], sets.masks[k]);
                    self.buffer.set_bits(p.plus, bits_in::<I, T>(m));
                    let minus = I::from_f64_round(-m.to_f64()).to_bits_u64();
                    self.buffer.set_bits(p.minus, minus);
                }
                let r = self.answer(py, first);
                for k in range {
                    let p = sets.probes[k];
                    self.buffer.set_bits(p.plus, bg(p.plus));
                    self.buffer.set_bits(p.minus, bg(p.minus));
                }
                *slot = r?;
            }
            Ok(())
        }))
    }
}

/// A callable computing a k-reduction for many lanes at once (a matrix product): it
/// reads the `lanes x k` input buffer and writes `lanes x outputs` float64 results into
/// the output buffer.
pub struct PyReduction<I, T> {
    call: Py<PyAny>,
    args: Py<PyTuple>,
    input: Flat,
    output: Flat,
    /// The product's `B` (`k x outputs`, all ones between calls), written when probes
    /// spread over both operands (FP8).
    second: Option<Flat>,
    shape: ReductionShape,
    /// The bits now in `input` (empty: unknown, rewrite it all): a probe changes two
    /// values of a lane, so most of a call's input is already there.
    written: Vec<u64>,
    /// What went wrong in Python.
    pub failure: Failure,
    _t: PhantomData<fn() -> (I, T)>,
}

impl<I: ProbeFloat, T: ProbeFloat> PyReduction<I, T> {
    /// `call(*args)` reads `input` and fills `output` (float64).
    pub fn new(
        call: Py<PyAny>,
        args: Py<PyTuple>,
        input: Flat,
        output: Flat,
        shape: ReductionShape,
    ) -> Self {
        PyReduction {
            call,
            args,
            input,
            output,
            second: None,
            shape,
            written: Vec::new(),
            failure: Failure::default(),
            _t: PhantomData,
        }
    }

    /// The writable array behind the callable's `B`, so probes can spread over both
    /// operands.
    pub fn with_second(mut self, second: Flat) -> Self {
        self.second = Some(second);
        self
    }

    /// One call with `x` in the input and, when given, `B[l][j] = b(l, j)` (ones put
    /// back afterwards).
    fn eval_with(
        &mut self,
        x: &[I],
        b: Option<&dyn Fn(usize, usize) -> I>,
        out: &mut [T],
    ) -> Result<(), TargetError> {
        if self.failure.error.is_some() {
            return Err(TargetError::new("the Python callable raised an exception"));
        }
        let (k, cols) = (self.shape.k, self.shape.outputs);
        Python::attach(|py| {
            if let Err(e) = py.check_signals() {
                return Err(self.failure.keep(e, None));
            }
            if self.written.len() == x.len() {
                for (i, (v, w)) in x.iter().zip(self.written.iter_mut()).enumerate() {
                    let bits = v.to_bits_u64();
                    if bits != *w {
                        self.input.set_bits(i, bits);
                        *w = bits;
                    }
                }
            } else {
                self.written.clear();
                for (i, v) in x.iter().enumerate() {
                    let bits = v.to_bits_u64();
                    self.input.set_bits(i, bits);
                    self.written.push(bits);
                }
            }
            if let (Some(b), Some(second)) = (b, self.second.as_mut()) {
                for l in 0..k {
                    for j in 0..cols {
                        second.set_bits(l * cols + j, b(l, j).to_bits_u64());
                    }
                }
            }
            let called = self.call.bind(py).call1(self.args.bind(py));
            if let (Some(_), Some(second)) = (b, self.second.as_mut()) {
                let one = I::from_f64_round(1.0).to_bits_u64();
                for i in 0..k * cols {
                    second.set_bits(i, one);
                }
            }
            called.map_err(|e| self.failure.keep(e, None))?;
            for (i, o) in out.iter_mut().enumerate() {
                *o = T::from_f64_round(f64::from_bits(self.output.get_bits(i)));
            }
            Ok(())
        })
    }
}

impl<I: ProbeFloat, T: ProbeFloat> Reduction<T> for PyReduction<I, T> {
    type Input = I;

    fn shape(&self) -> ReductionShape {
        self.shape
    }

    fn eval(&mut self, x: &[I], out: &mut [T]) -> Result<(), TargetError> {
        self.eval_with(x, None, out)
    }

    const OPERANDS: bool = true;

    fn eval_operands(
        &mut self,
        input: &[I],
        b: &[I],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        self.second.as_ref()?;
        Some(self.eval_with(input, Some(&|l, _| b[l]), out))
    }

    const COLUMNS: bool = true;

    fn eval_columns(
        &mut self,
        input: &[I],
        b: &[I],
        out: &mut [T],
    ) -> Option<Result<(), TargetError>> {
        self.second.as_ref()?;
        let cols = self.shape.outputs;
        Some(self.eval_with(input, Some(&|l, j| b[l * cols + j]), out))
    }
}

/// A dot product `call(*args)` over two buffers, for operands too narrow to hold a mask
/// that swamps `n` units (FP8): wrapped in [`fprev_runtime::target::Products`], every
/// value the engine sends is split into a factor in `a` and one in `b`.
pub struct PyDot<I, T> {
    call: Py<PyAny>,
    args: Py<PyTuple>,
    a: Flat,
    b: Flat,
    /// Calls of the callable.
    pub calls: u64,
    /// What went wrong in Python.
    pub failure: Failure,
    _t: PhantomData<fn() -> (I, T)>,
}

impl<I: ProbeFloat, T: ProbeFloat> PyDot<I, T> {
    /// `call(*args)` reads `a` and `b` (of `I` items) and returns their dot product.
    pub fn new(call: Py<PyAny>, args: Py<PyTuple>, a: Flat, b: Flat) -> Self {
        PyDot {
            call,
            args,
            a,
            b,
            calls: 0,
            failure: Failure::default(),
            _t: PhantomData,
        }
    }

    /// The callable's answer for operands `x` and `y`; NaN when it failed (the failure
    /// is kept and raised once the engine has returned).
    pub fn answer(&mut self, x: &[I], y: &[I]) -> T {
        let nan = T::from_f64_round(f64::NAN);
        if self.failure.error.is_some() {
            return nan;
        }
        Python::attach(|py| {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                self.a.set_bits(i, p.to_bits_u64());
                self.b.set_bits(i, q.to_bits_u64());
            }
            self.calls += 1;
            let r = match self.call.bind(py).call1(self.args.bind(py)) {
                Ok(r) => r,
                Err(e) => {
                    self.failure.keep(e, None);
                    return nan;
                }
            };
            match scalar(&r) {
                Ok(v) => T::from_f64_round(v),
                Err(bad) => {
                    // the same error as `reveal`'s for the same answer (the engine sees
                    // only the NaN, so the error is made here)
                    let e = crate::errors::TargetError::new_err(format!(
                        "the target failed: {}",
                        bad.message
                    ));
                    if let Some(cause) = bad.cause {
                        e.set_cause(py, Some(cause));
                    }
                    self.failure.keep(e, None);
                    nan
                }
            }
        })
    }
}
