"""Reveal the summation order of NumPy, PyTorch and JAX reductions.

fprev calls a reduction on crafted inputs (units, with one ``+M`` and one ``-M``) and
reads back which partial sums it formed: the result is the exact tree of additions,
as ``str(tree)`` text such as ``"((0+1)+(2+3))"``. The engine is fprev's Rust
implementation of the FPRev method; it runs with the GIL released and calls your
function back with one reused NumPy array.

>>> import fprev, numpy as np
>>> tree = fprev.reveal(np.sum, 8)
>>> print(tree)
(((0+1)+(2+3))+((4+5)+(6+7)))

Errors are exceptions: :class:`RevealError` and one subclass per reason, with the
engine's messages; an exception raised by your function propagates unchanged.
"""

import operator

import numpy as np

from . import _dtypes
from . import _fprev
from . import exact
from ._fprev import (
    ConstantAnswersError,
    DataDependentError,
    InconsistentError,
    InvalidSizeError,
    NaiveError,
    NondeterministicError,
    NonFiniteError,
    NotIntegerError,
    NotPlainSummationError,
    FusedUnverifiedError,
    IndistinguishableError,
    OrderIndependentError,
    Orders,
    OutOfMemoryError,
    OutOfRangeError,
    PrecisionTooLowError,
    RevealError,
    SingleInputError,
    TargetError,
    TooLargeError,
    Tree,
    TreeDiff,
)

__all__ = [
    "reveal",
    "reveal_dot",
    "reveal_matmul",
    "Tree",
    "TreeDiff",
    "Orders",
    "exact",
    "torch",
    "jax",
    "RevealError",
    "ConstantAnswersError",
    "DataDependentError",
    "InconsistentError",
    "InvalidSizeError",
    "NaiveError",
    "NondeterministicError",
    "NonFiniteError",
    "NotIntegerError",
    "NotPlainSummationError",
    "FusedUnverifiedError",
    "IndistinguishableError",
    "OrderIndependentError",
    "OutOfMemoryError",
    "OutOfRangeError",
    "PrecisionTooLowError",
    "SingleInputError",
    "TargetError",
    "TooLargeError",
]

__version__ = "0.1.0"


def _formats(dtype, acc_dtype):
    operands = _dtypes.name(dtype)
    if acc_dtype is not None:
        acc = _dtypes.name(acc_dtype)
    elif _dtypes.is_fp8(operands):
        acc = "float32"  # no library accumulates FP8 products in FP8
    else:
        acc = operands
    return operands, acc


def _size(n, what="n"):
    # bool is an int subclass: n=True would be read as 1 without a word
    if isinstance(n, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, got {type(n).__name__}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(n).__name__}") from None
    if n < 0:
        raise InvalidSizeError(f"cannot reveal a sum of {n} values: {what} is negative")
    return n


def _flag(value, what):
    """``value`` as a bool; anything but True or False is refused (``verify="no"`` is a
    true string, and would verify)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be True or False, got {type(value).__name__}")
    return bool(value)


def _seed(seed):
    if seed is None:
        return 0
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError(f"seed must be an integer or None, got {type(seed).__name__}")
    seed = operator.index(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def _hint(hint):
    return None if hint is None else _fprev.as_tree(hint)


def _buffer(n, operands, algorithm, shape=None):
    """A writable array for the engine, and a read-only view of it for the callable."""
    _fprev.check_size(n, operands, algorithm)
    buf = np.empty(shape if shape is not None else n, dtype=_dtypes.numpy_dtype(operands))
    view = buf.view()
    view.flags.writeable = False
    return buf, view


def _run(call, args, buf, n, operands, acc, algorithm, hint, verify, seed, accept_flat=False):
    return _fprev.reveal(
        call, args, buf, n, operands, acc, algorithm, _hint(hint), _flag(verify, "verify"),
        _seed(seed), _flag(accept_flat, "accept_flat"),
    )


def reveal(
    fn,
    n,
    dtype="float32",
    acc_dtype=None,
    algorithm="fprev",
    hint=None,
    verify=True,
    seed=None,
    report=False,
    accept_flat=False,
):
    """Reveal the summation tree of ``fn``, a sum of a one-dimensional array.

    ``fn`` is called with one read-only NumPy array of ``n`` values of ``dtype``
    (the same array every time: fprev writes the probe values into it between calls)
    and must return the sum as a scalar: a Python float, a NumPy scalar or 0-d array,
    or anything with ``__float__`` and no dimensions (a torch or JAX scalar).

    Parameters:
        fn: the reduction, ``fn(x) -> scalar``.
        n: number of summands.
        dtype: operand format: "float64", "float32", "float16", "bfloat16",
            "float8_e4m3fn", "float8_e5m2" (the last three need ml_dtypes), or the
            NumPy dtype. FP8's range is too narrow for a plain sum's probes (E4M3
            reaches 448); :func:`reveal_dot` and :func:`reveal_matmul` spread them over
            both operands.
        acc_dtype: the format ``fn`` accumulates and answers in, when wider than the
            operands (float16 operands summed in float32); default ``dtype``, float32
            for FP8.
        algorithm: "fprev" (default), "basic" (all pairs) or "naive" (n <= 8).
        hint: a :class:`Tree` (or its text) to try first; proved with one probe per
            inner node when it is right, ignored when it is not.
        verify: re-ask sampled probes and replay the tree on seeded random inputs.
        seed: seed of pivot choices and verification inputs (default 0).
        report: also return a dict of costs (probes, calls, batches, ...).
        accept_flat: return one n-way node (``"(0+1+...)"``) for a sum whose result
            does not depend on the order, instead of raising OrderIndependentError
            (the engine's message names the Rust equivalent, Reveal::accept_flat).

    Returns:
        The :class:`Tree`, or ``(tree, report)`` when ``report`` is true.

    Raises:
        RevealError: a subclass saying why no tree explains the answers.
        Whatever ``fn`` raises, unchanged (with a note naming the probe).

    >>> import fprev, numpy as np
    >>> print(fprev.reveal(np.sum, 10, dtype=np.float64))
    (((((0+1)+(2+3))+((4+5)+(6+7)))+8)+9)
    """
    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(dtype, acc_dtype)
    buf, view = _buffer(n, operands, algorithm)
    tree, costs = _run(
        fn, (view,), buf, n, operands, acc, algorithm, hint, verify, seed, accept_flat
    )
    return (tree, costs) if report else tree


def reveal_dot(
    fn,
    n,
    dtype="float32",
    acc_dtype=None,
    algorithm="fprev",
    hint=None,
    verify=True,
    seed=None,
    report=False,
    accept_flat=False,
):
    """Reveal the summation tree of a dot product ``fn(x, y) -> scalar`` of length ``n``.

    fprev puts its probes in ``x`` and ones in ``y`` (both read-only NumPy arrays of
    ``dtype``, reused between calls), so the products are the probe values and the
    tree is the order ``fn`` adds them in. FP8 operands cannot hold a mask big enough
    in one of them: each probe value is then split into a factor in ``x`` and one in
    ``y`` (the FPRev paper's §8.1.1), and the checks draw both at random. Arguments as
    for :func:`reveal`.

    >>> import fprev, numpy as np
    >>> t = fprev.reveal_dot(np.dot, 64, dtype=np.float64)
    >>> t.n
    64
    """
    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(dtype, acc_dtype)
    buf, view = _buffer(n, operands, algorithm)
    if _dtypes.is_fp8(operands):
        # E4M3 reaches 448: a mask in one operand cannot swamp n units, the product can
        second = np.ones(n, dtype=buf.dtype)
        second_view = second.view()
        second_view.flags.writeable = False
        tree, costs = _fprev.reveal_products(
            fn, (view, second_view), buf, second, n, operands, acc, algorithm, _hint(hint),
            _flag(verify, "verify"), _seed(seed), _flag(accept_flat, "accept_flat"),
        )
        return (tree, costs) if report else tree
    ones = np.ones(n, dtype=buf.dtype)
    ones.flags.writeable = False
    tree, costs = _run(
        fn, (view, ones), buf, n, operands, acc, algorithm, hint, verify, seed, accept_flat
    )
    return (tree, costs) if report else tree


def reveal_matmul(
    fn, m, n, k, dtype="float32", acc_dtype=None, algorithm="fprev", seed=None, verify=True
):
    """Reveal the summation order of every element of a matrix product.

    ``fn(a, b)`` must return ``a @ b`` for ``a`` of shape ``(m, k)`` and ``b`` of
    shape ``(k, n)`` (read-only NumPy arrays of ``dtype``, reused between calls) as
    anything ``numpy.asarray`` reads with shape ``(m, n)``. fprev puts one probe in
    each row of ``a`` and ones in ``b``, so one call answers ``m`` probes (FP8: a probe
    spread over a row of ``a`` and a column of ``b``, up to ``min(m, n)`` a call); every
    element's order is then checked, and elements that sum differently (edge tiles)
    are revealed again and grouped.

    ``verify`` checks every tree as :func:`reveal` does (sampled probes asked again,
    seeded random inputs): a product that is not a plain summation (one that rounds its
    results to whole numbers) raises :class:`NotPlainSummationError` as ``reveal`` of
    one element does. Off, only every element's own checks run (fewer inputs).

    Returns:
        :class:`Orders`: ``.uniform``, ``.tree`` (when uniform), ``.groups`` as
        ``[(tree, [(row, column), ...]), ...]``, ``.calls``.

    >>> import fprev, numpy as np
    >>> o = fprev.reveal_matmul(np.matmul, 8, 4, 16, dtype=np.float64)
    >>> o.uniform, o.tree.n
    (True, 16)
    """
    m, n, k = _size(m, "m"), _size(n, "n"), _size(k, "k")
    verify = _flag(verify, "verify")
    operands, acc = _formats(dtype, acc_dtype)
    _fprev.check_size(k, operands, algorithm)
    np_dtype = _dtypes.numpy_dtype(operands)
    a = np.empty((m, k), dtype=np_dtype)
    a_view = a.view()
    a_view.flags.writeable = False
    b = np.ones((k, n), dtype=np_dtype)
    b_view = b.view()
    b_view.flags.writeable = False
    out = np.empty((m, n), dtype=np.float64)

    def call():
        c = np.asarray(fn(a_view, b_view))
        if c.shape != (m, n):
            raise ValueError(
                f"the matrix product returned shape {c.shape}, expected {(m, n)}"
            )
        # the copy below would keep the real parts with only a ComplexWarning
        if np.iscomplexobj(c):
            raise TargetError(
                f"the matrix product returned {c.dtype} values, not real numbers "
                "(return the real part, or abs(), if that is the product)"
            )
        out[...] = c

    return _fprev.reveal_reduction(
        call, (), a, out, m, k, n, operands, acc, algorithm, _seed(seed), b, verify
    )


# last: they use the helpers above; they import PyTorch / JAX only when called
from . import jax, torch  # noqa: E402
