//! Block-scaled dots from Python: the element and scale types' codes, and
//! `reveal_scaled_dot` of a callable `f(a, b, sa, sb) -> float`.

use fprev_runtime::float::{
    ElementType, ProbeFloat, ScaleType, F4E2M1, F6E2M3, F6E3M2, F8E4M3, F8E5M2,
};
use fprev_runtime::fused::{AccumulatorJoin, ScaledAlignment};
use fprev_runtime::ops::{ProductOrder, ScaledDot, ScaledDotError, ScaledDotShape};
use fprev_runtime::target::TargetError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::tree::Tree;

/// The value of every code of a block-scaled type, in code order: `float4_e2m1fn` (16
/// codes), `float6_e3m2fn` and `float6_e2m3fn` (64), `float8_e8m0fnu` (256, NaN at
/// 255), `ue4m3` (128, NaN at 127), and the FP8 element types (256), as fprev reads them.
#[pyfunction]
pub fn format_codes(dtype: &str) -> PyResult<Vec<f64>> {
    fn all<T: ProbeFloat>(n: u64) -> Vec<f64> {
        (0..n).map(|c| T::from_bits_u64(c).to_f64()).collect()
    }
    if let Some(s) = ScaleType::parse(dtype) {
        let n = if s == ScaleType::Ue8m0 { 256 } else { 128 };
        return Ok((0..n)
            .map(|c| s.value(c as u8).unwrap_or(f64::NAN))
            .collect());
    }
    match ElementType::parse(dtype) {
        Some(ElementType::E2M1) => Ok(all::<F4E2M1>(16)),
        Some(ElementType::E3M2) => Ok(all::<F6E3M2>(64)),
        Some(ElementType::E2M3) => Ok(all::<F6E2M3>(64)),
        Some(ElementType::E4M3) => Ok(all::<F8E4M3>(256)),
        Some(ElementType::E5M2) => Ok(all::<F8E5M2>(256)),
        _ => Err(PyValueError::new_err(format!(
            "{dtype}: not a block-scaled type (float4_e2m1fn, float6_e3m2fn, float6_e2m3fn, \
             float8_e4m3fn, float8_e5m2, float8_e8m0fnu or ue4m3)"
        ))),
    }
}

/// The code each value of `values` rounds to in `dtype` (an element type: round to
/// nearest even, saturating), as fprev converts.
#[pyfunction]
pub fn format_round(dtype: &str, values: Vec<f64>) -> PyResult<Vec<u64>> {
    fn each<T: ProbeFloat>(v: &[f64]) -> Vec<u64> {
        v.iter()
            .map(|x| T::from_f64_round(*x).to_bits_u64())
            .collect()
    }
    match ElementType::parse(dtype) {
        Some(ElementType::E2M1) => Ok(each::<F4E2M1>(&values)),
        Some(ElementType::E3M2) => Ok(each::<F6E3M2>(&values)),
        Some(ElementType::E2M3) => Ok(each::<F6E2M3>(&values)),
        Some(ElementType::E4M3) => Ok(each::<F8E4M3>(&values)),
        Some(ElementType::E5M2) => Ok(each::<F8E5M2>(&values)),
        _ => Err(PyValueError::new_err(format!(
            "{dtype}: not a block-scaled element type"
        ))),
    }
}

/// Reveals `call(a, b, sa, sb) -> float`, a block-scaled dot of `k` elements of
/// `dtype` with one `scale_dtype` scale per `block` (lists of floats). Returns the tree
/// over the blocks and a report dict.
#[pyfunction]
#[pyo3(signature = (call, k, dtype, block, scale_dtype, seed=0))]
pub fn reveal_scaled_dot<'py>(
    py: Python<'py>,
    call: Py<PyAny>,
    k: usize,
    dtype: &str,
    block: usize,
    scale_dtype: &str,
    seed: u64,
) -> PyResult<(Tree, Bound<'py, PyDict>)> {
    let element = ElementType::parse(dtype).ok_or_else(|| {
        PyValueError::new_err(format!(
            "dtype {dtype}: the elements are float4_e2m1fn, float6_e3m2fn, float6_e2m3fn, \
             float8_e4m3fn or float8_e5m2"
        ))
    })?;
    let scale = ScaleType::parse(scale_dtype).ok_or_else(|| {
        PyValueError::new_err(format!(
            "scale_dtype {scale_dtype}: the scales are float8_e8m0fnu (ue8m0) or ue4m3"
        ))
    })?;
    let shape = ScaledDotShape {
        k,
        block,
        element,
        scale,
    };
    shape.validate().map_err(PyValueError::new_err)?;
    let mut failure: Option<PyErr> = None;
    let dot = ScaledDot::new(shape, |o: &fprev_runtime::ops::ScaledOperands| {
        Python::attach(|py| {
            let r = call
                .bind(py)
                .call1((o.a.clone(), o.b.clone(), o.sa.clone(), o.sb.clone()))
                .and_then(|v| v.extract::<f64>());
            match r {
                Ok(v) => Ok(v as f32),
                Err(e) => {
                    let m = e.to_string();
                    failure.get_or_insert(e);
                    Err(TargetError::new(m))
                }
            }
        })
    });
    let result = py.detach(|| fprev_runtime::ops::reveal_scaled_dot(dot, seed));
    if let Some(e) = failure {
        return Err(e);
    }
    let r = match result {
        Ok(r) => r,
        Err(ScaledDotError::Reveal(e)) => return Err(errors::to_py(e)),
        Err(e) => return Err(errors::scaled_to_py(e)),
    };
    let report = report_dict(py, &r)?;
    Ok((Tree { tree: r.tree }, report))
}

/// The report dict of a revealed block-scaled dot: probes, calls, the summary, the
/// arithmetic's consistent values and the products' order.
fn report_dict<'py>(
    py: Python<'py>,
    r: &fprev_runtime::ops::ScaledDotReport,
) -> PyResult<Bound<'py, PyDict>> {
    let report = PyDict::new(py);
    report.set_item("probes", r.probes)?;
    report.set_item("fit_calls", r.fit_calls)?;
    report.set_item("summary", r.summary())?;
    let a = &r.arithmetic;
    let arith = PyDict::new(py);
    arith.set_item("k", a.k())?;
    arith.set_item("k_at_least", a.k_at_least)?;
    arith.set_item("groups", a.groups())?;
    let rules: Vec<&str> = a
        .alignments()
        .iter()
        .map(|r| match r {
            ScaledAlignment::TermExponent => "term_exponent",
            ScaledAlignment::ScaleExponents => "scale_exponents",
            _ => "operand_exponents",
        })
        .collect();
    arith.set_item("alignment", rules)?;
    let (lo, hi) = a.frac_range();
    arith.set_item("frac", lo)?;
    arith.set_item("frac_max", hi)?;
    arith.set_item("frac_out", a.frac_out())?;
    let joins: Vec<&str> = a
        .accumulators()
        .iter()
        .map(|j| match j {
            AccumulatorJoin::Aligned => "aligned",
            AccumulatorJoin::Late => "late",
        })
        .collect();
    arith.set_item("accumulator", joins)?;
    arith.set_item("draws", a.draws)?;
    arith.set_item("why_blocks", a.why_blocks())?;
    report.set_item("arithmetic", arith)?;
    let products = PyDict::new(py);
    match &r.products {
        ProductOrder::Revealed { tree, probes } => {
            products.set_item("status", "revealed")?;
            products.set_item("tree", Tree { tree: tree.clone() })?;
            products.set_item("probes", *probes)?;
        }
        ProductOrder::Refused(why) => {
            products.set_item("status", "refused")?;
            products.set_item("why", why)?;
        }
        ProductOrder::NotProbed(why) => {
            products.set_item("status", "not_probed")?;
            products.set_item("why", why)?;
        }
        _ => products.set_item("status", "unknown")?,
    }
    report.set_item("products", products)?;
    Ok(report)
}
