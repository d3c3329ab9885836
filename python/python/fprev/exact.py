"""Exact sums: the same bits whatever the order of the values.

The values are added without rounding (fprev's exact accumulator) and the result is
rounded once, to float64 unless said otherwise. :class:`Accumulator` holds a partial
exact sum whose state travels between processes (pickled, sent, stored as bytes) and
merges in any order to the same bits.
"""

from . import _fprev

Accumulator = _fprev.Accumulator
StateError = _fprev.StateError


def sum(x):
    """The exact sum of the values of the one-dimensional array ``x``, rounded once
    to float64 (float64, float32, float16 and bfloat16 arrays are read as they are;
    other arrays are converted to float64 first).

    >>> import numpy as np
    >>> import fprev
    >>> x = np.array([1e16, 1.0, -1e16])
    >>> float(np.sum(x)), fprev.exact.sum(x)
    (0.0, 1.0)
    """
    return _fprev.exact_sum(x)


def dot(a, b):
    """The exact dot product of the one-dimensional arrays ``a`` and ``b``, rounded
    once to float64 (``ValueError`` when their lengths differ).

    >>> import numpy as np
    >>> import fprev
    >>> fprev.exact.dot(np.array([1e16, 1.0, 1e16]), np.array([1.0, 1.0, -1.0]))
    1.0
    """
    return _fprev.exact_dot(a, b)


__all__ = ["Accumulator", "StateError", "dot", "sum"]
