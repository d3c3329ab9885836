"""JAX glue: reveal ``jax.numpy.sum`` and friends.

JAX is imported only when a function here is called. A jitted function is given
fprev's read-only view of its probe buffer as it is (the jitted call moves it to the
device itself, which costs less than a ``jax.numpy.asarray`` first: about 165 us a call
against 355 us at n = 4096 on a CPU); the buffer changes only after the answer has been
read back. Without ``jit``, each call gets ``jax.numpy.asarray`` of the buffer, so the
function sees a JAX array as it would in user code.
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
    if jit:
        call = jax.jit(fn)
    else:

        def call(x):
            return fn(jnp.asarray(x))

    tree, costs = _run(call, (view,), buf, n, operands, acc, algorithm, hint, verify, seed,
                       widen=acc_dtype is None)
    return (tree, costs) if report else tree


__all__ = ["reveal"]
