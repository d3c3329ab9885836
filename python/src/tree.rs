//! `fprev.Tree`: a summation tree, in the engine's canonical text.

use fprev_runtime::SumTree;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffer::Flat;
use crate::dtype::Dtype;

/// A summation tree: which partial sums a reduction adds, in which grouping.
///
/// `str(tree)` is the canonical text (`"((0+1)+(2+3))"`: leaves are input indices, `+`
/// one rounded addition, a node with more children one fused multi-term addition).
///
/// >>> import fprev
/// >>> t = fprev.Tree.parse("((0+1)+(2+3))")
/// >>> str(t), t.n
/// ('((0+1)+(2+3))', 4)
#[pyclass(module = "fprev", name = "Tree", frozen, eq, hash, from_py_object)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Tree {
    pub tree: SumTree,
}

/// Where two trees differ: the smallest subtree both have over the same leaves but
/// split differently.
///
/// >>> import fprev
/// >>> d = fprev.Tree.sequential(4).diff(fprev.Tree.parse("((0+1)+(2+3))"))
/// >>> d.leaves, d.left, d.right
/// ([0, 1, 2, 3], '(((0+1)+2)+3)', '((0+1)+(2+3))')
#[pyclass(module = "fprev", name = "TreeDiff", frozen, get_all)]
pub struct Diff {
    /// Leaves of the smallest differing subtree (empty when the sizes differ).
    leaves: Vec<usize>,
    /// That subtree in the left tree.
    left: String,
    /// That subtree in the right tree.
    right: String,
    /// Inner nodes only in the left tree, and only in the right tree.
    differing_nodes: (usize, usize),
    message: String,
}

#[pymethods]
impl Diff {
    fn __str__(&self) -> String {
        self.message.clone()
    }

    fn __repr__(&self) -> String {
        format!("<fprev.TreeDiff {}>", clip(&self.message, 200))
    }
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}... ({} chars)", &s[..i], s.len()),
        None => s.to_string(),
    }
}

#[pymethods]
impl Tree {
    /// The tree written as canonical text, as `str(tree)` gives it.
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.parse("((0+1)+2)") == fprev.Tree.sequential(3)
    /// True
    #[staticmethod]
    fn parse(text: &str) -> PyResult<Tree> {
        text.parse()
            .map(|tree| Tree { tree })
            .map_err(|e| PyValueError::new_err(format!("not a summation tree: {e}")))
    }

    /// A tree read from `Tree.to_json()`'s text.
    ///
    /// >>> import fprev
    /// >>> t = fprev.Tree.sequential(3)
    /// >>> fprev.Tree.from_json(t.to_json()) == t
    /// True
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Tree> {
        SumTree::from_json(text)
            .map(|tree| Tree { tree })
            .map_err(|e| PyValueError::new_err(format!("not a summation tree: {e}")))
    }

    /// The left-to-right loop `(((0+1)+2)+...)` over `n` inputs.
    ///
    /// >>> import fprev
    /// >>> str(fprev.Tree.sequential(4))
    /// '(((0+1)+2)+3)'
    #[staticmethod]
    fn sequential(n: usize) -> Tree {
        Tree {
            tree: SumTree::sequential(n),
        }
    }

    /// NumPy's pairwise summation order over `n` contiguous inputs (8 lanes, blocks of
    /// 128), as `numpy.sum` uses it for float arrays.
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.numpy_pairwise(8).n
    /// 8
    #[staticmethod]
    fn numpy_pairwise(n: usize) -> Tree {
        Tree {
            tree: SumTree::numpy_pairwise(n),
        }
    }

    /// XLA's CPU reduction order over `n` inputs, as `jax.numpy.sum` uses it: windows of
    /// 32 summed in order (the first and last short, the padding split evenly), their
    /// sums reduced the same way until 32 or fewer are left, summed in order.
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.xla_tree_reduction(1024).describe()
    /// '32 blocks of 32, combined in order; each block 32 in order'
    #[staticmethod]
    fn xla_tree_reduction(n: usize) -> Tree {
        Tree {
            tree: SumTree::xla_tree_reduction(n),
        }
    }

    /// Number of inputs (leaves).
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.sequential(5).n
    /// 5
    #[getter]
    fn n(&self) -> usize {
        self.tree.leaf_count()
    }

    fn __str__(&self) -> String {
        self.tree.to_string()
    }

    fn __repr__(&self) -> String {
        format!("fprev.Tree({:?})", clip(&self.tree.to_string(), 200))
    }

    /// `None` when the trees are equal, otherwise where they first differ.
    ///
    /// >>> import fprev
    /// >>> print(fprev.Tree.sequential(3).diff(fprev.Tree.sequential(3)))
    /// None
    fn diff(&self, other: &Tree) -> Option<Diff> {
        self.tree.diff(&other.tree).map(|d| Diff {
            message: d.to_string(),
            leaves: d.leaves,
            left: d.left,
            right: d.right,
            differing_nodes: d.differing_nodes,
        })
    }

    /// The sum of `x` added in this tree's order, in `x`'s dtype (float64, float32,
    /// float16, bfloat16 or FP8; other arrays are read as float64), returned as a Python
    /// float.
    ///
    /// >>> import fprev, numpy as np
    /// >>> x = np.array([1e8, 1.0, -1e8, 1.0], dtype=np.float32)
    /// >>> fprev.Tree.sequential(4).replay(x)
    /// 1.0
    fn replay(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<f64> {
        let flat = Flat::readable(py, x)?;
        if flat.len != self.tree.leaf_count() {
            return Err(PyValueError::new_err(format!(
                "replay needs one value per leaf: the tree has {} leaves, the array {} values",
                self.tree.leaf_count(),
                flat.len
            )));
        }
        let values = flat.to_f64();
        let tree = &self.tree;
        Ok(py.detach(|| match flat.dtype {
            Dtype::F64 => tree.replay(&values),
            // NumPy has no tf32 dtype, so `readable` never reads one; a tf32 value is
            // the float32 it stands for
            Dtype::F32 | Dtype::Tf32 => f64::from(tree.replay(&narrow::<f32>(&values))),
            Dtype::F16 => {
                fprev_runtime::ProbeFloat::to_f64(tree.replay(&narrow::<half::f16>(&values)))
            }
            Dtype::BF16 => {
                fprev_runtime::ProbeFloat::to_f64(tree.replay(&narrow::<half::bf16>(&values)))
            }
            Dtype::F8E4M3 => {
                use fprev_runtime::float::F8E4M3;
                fprev_runtime::ProbeFloat::to_f64(tree.replay(&narrow::<F8E4M3>(&values)))
            }
            Dtype::F8E5M2 => {
                use fprev_runtime::float::F8E5M2;
                fprev_runtime::ProbeFloat::to_f64(tree.replay(&narrow::<F8E5M2>(&values)))
            }
            Dtype::F8E4M3Fnuz => {
                use fprev_runtime::float::F8E4M3Fnuz;
                fprev_runtime::ProbeFloat::to_f64(tree.replay(&narrow::<F8E4M3Fnuz>(&values)))
            }
            Dtype::F8E5M2Fnuz => {
                use fprev_runtime::float::F8E5M2Fnuz;
                fprev_runtime::ProbeFloat::to_f64(tree.replay(&narrow::<F8E5M2Fnuz>(&values)))
            }
        }))
    }

    /// Graphviz DOT text of the tree.
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.sequential(2).to_dot().startswith("digraph")
    /// True
    fn to_dot(&self) -> String {
        self.tree.to_dot()
    }

    /// JSON text of the tree (read back with `Tree.from_json`).
    ///
    /// >>> import fprev, json
    /// >>> "leaves" in json.loads(fprev.Tree.sequential(2).to_json())
    /// True
    fn to_json(&self) -> String {
        self.tree.to_json()
    }

    /// An SVG picture of the tree (long chains condensed), as Jupyter shows it.
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.sequential(4).to_svg().startswith("<svg")
    /// True
    fn to_svg(&self) -> String {
        fprev_runtime::picture::svg(&self.tree)
    }

    /// Jupyter's rich display: the SVG picture.
    fn _repr_svg_(&self) -> String {
        self.to_svg()
    }

    /// A plain-words description of the order (loops, lanes, blocks).
    ///
    /// >>> import fprev
    /// >>> isinstance(fprev.Tree.sequential(8).describe(), str)
    /// True
    fn describe(&self) -> String {
        self.tree.describe()
    }

    /// The tree the first ``k`` leaves induce (``1 <= k <= n``): the order this tree
    /// adds them in when every later value is zero. :func:`fprev.sweep_lengths` says a
    /// length keeps the order of a shorter one when its tree's prefix is that tree.
    ///
    /// >>> import fprev
    /// >>> print(fprev.Tree.parse("(((0+1)+(2+3))+((4+5)+(6+7)))").prefix(6))
    /// (((0+1)+(2+3))+(4+5))
    fn prefix(&self, k: usize) -> PyResult<Tree> {
        let n = self.tree.leaf_count();
        if k == 0 || k > n {
            return Err(PyValueError::new_err(format!(
                "prefix({k}) of a tree of {n} leaves: k must be 1..={n}"
            )));
        }
        Ok(Tree {
            tree: self.tree.prefix(k),
        })
    }

    /// Shape counts: leaves, inner nodes, depth, largest arity, arity histogram.
    ///
    /// >>> import fprev
    /// >>> fprev.Tree.sequential(4).stats()["depth"]
    /// 3
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.tree.stats();
        let d = PyDict::new(py);
        d.set_item("leaves", s.leaves)?;
        d.set_item("inner_nodes", s.inner_nodes)?;
        d.set_item("depth", s.depth)?;
        d.set_item("max_arity", s.max_arity)?;
        d.set_item("arity_histogram", s.arity_histogram)?;
        Ok(d)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, (String,))> {
        let parse = py.get_type::<Tree>().getattr("parse")?.unbind();
        Ok((parse, (self.tree.to_string(),)))
    }
}

fn narrow<T: fprev_runtime::ProbeFloat>(values: &[f64]) -> Vec<T> {
    values.iter().map(|&v| T::from_f64_round(v)).collect()
}
