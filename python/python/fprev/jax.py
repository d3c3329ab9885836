"""JAX glue: reveal ``jax.numpy.sum`` and friends.

JAX is imported only when a function here is called. JAX arrays are immutable, so
each call gets ``jax.numpy.asarray`` of fprev's probe buffer (one host-to-device
copy per call).
"""

from . import _buffer, _dtypes, _flag, _formats, _run, _size


def _name(dtype):
    if dtype is None:
        return None
    try:
        return _dtypes.name(dtype)
    except (TypeError, ValueError):
        import numpy as np

        return _dtypes.name(np.dtype(dtype))


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
    jit=True,
):
    """Reveal the summation tree of ``fn(x) -> scalar`` on a 1-D JAX array.

    ``fn`` is jitted (``jit=False`` to call it as it is). ``dtype`` is a JAX/NumPy
    dtype or a name; other arguments as for :func:`fprev.reveal`.

    >>> import jax.numpy as jnp, fprev
    >>> fprev.jax.reveal(jnp.sum, 16).n
    16
    """
    import jax
    import jax.numpy as jnp

    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(_name(dtype), _name(acc_dtype))
    buf, view = _buffer(n, operands, algorithm)
    f = jax.jit(fn) if jit else fn

    def call(x):
        return f(jnp.asarray(x))

    tree, costs = _run(call, (view,), buf, n, operands, acc, algorithm, hint, verify, seed,
                       widen=acc_dtype is None)
    return (tree, costs) if report else tree


__all__ = ["reveal"]
