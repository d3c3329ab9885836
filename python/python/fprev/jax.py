"""JAX glue: reveal ``jax.numpy.sum`` and friends.

JAX is imported only when a function here is called. A jitted function is given
fprev's read-only view of its probe buffer as it is (the jitted call moves it to the
device itself, which costs less than a ``jax.numpy.asarray`` first: about 165 us a call
against 355 us at n = 4096 on a CPU); the buffer changes only after the answer has been
read back. Without ``jit``, each call gets ``jax.numpy.asarray`` of the buffer, so the
function sees a JAX array as it would in user code.
"""

import weakref

from . import (
    NotPlainSummationError,
    _buffer,
    _dtypes,
    _flag,
    _formats,
    _reveal_rows,
    _rows_per_call,
    _run,
    _size,
)

# The jitted function and the many-row function of each revealed function: JAX compiles
# a jitted function once per shape, but a new lambda is a new function, compiled again
# (about 0.1 s on a CPU, as much as a reveal's own calls at a few thousand values), and
# a new ``jax.jit`` object dispatches its first call through Python. Keyed weakly, and
# referring to the function weakly, so that an entry lives as long as its function.
_JITTED = weakref.WeakKeyDictionary()


def _jitted(fn):
    """``(jax.jit(fn), jax.jit(lambda x: jax.lax.map(fn, x)))``, the same objects for the
    same ``fn``."""
    import jax

    try:
        return _JITTED[fn]
    except KeyError:
        pass
    except TypeError:  # neither hashable nor weakly referenceable: not kept
        return jax.jit(fn), jax.jit(lambda x: jax.lax.map(fn, x))
    ref = weakref.ref(fn)
    pair = jax.jit(lambda x: ref()(x)), jax.jit(lambda x: jax.lax.map(ref(), x))
    _JITTED[fn] = pair
    return pair


def _name(dtype):
    if dtype is None:
        return None
    try:
        return _dtypes.name(dtype)
    except (TypeError, ValueError):
        import numpy as np

        return _dtypes.name(np.dtype(dtype))


# Value triples that YNNPACK summed to other bits than every order of two additions
# (JAX 0.10.2, AVX-512 CPU, float32; found among seeded random triples at n = 4096 and
# exposing at 65,536 too): tried first, at every placement.
_EXPOSING = [
    (-1.0792196989059448, -0.6839583516120911, 1.9230016469955444),
    (-13.141630172729492, 19.635902404785156, -223.30189514160156),
    (0.024735599756240845, -0.9018523693084717, -5.85398530960083),
]


def _placements(n):
    """Where ``_refuse_non_plain_fusion`` puts its three values: one at index 0 (lane 0),
    two in the last lane of ``lanes`` (16, 8, 32): the last such index, and the first,
    the first after n/2, or the one a vector before it. Measured with JAX 0.10.2 on an
    AVX-512 CPU, YNNPACK's float32 sum is not plain only where two values share one of
    16 lanes and a third is in another, and (n = 4096) the two are in different blocks
    of 1024 or (n = 65,536) both in the second half; random places meet that about once
    in 30 tries."""
    out = []
    for lanes in (16, 8, 32):
        if n < 2 * lanes + 1:
            continue
        last = n - 1 - (n - lanes) % lanes  # the last index in lane lanes - 1
        half = (n // 2) - (n // 2) % lanes + lanes - 1
        for second in (lanes - 1, half, last - lanes):
            where = (0, second, last)
            if 0 < second < last and where not in out:
                out.append(where)
    return out


def _refuse_non_plain_fusion(fn, call, buf, view, n, operands, triples=3000):
    """Refuses, in a few calls, a sum that XLA hands to a YNNPACK fusion where that
    fusion is not a plain summation: three values among zeros must sum like one of the
    three orders of two additions, and on some CPUs YNNPACK's sum of float32 does not
    (it is refused after a whole reveal otherwise: 21 s at n = 4096, 186 s at 65,536).
    Where YNNPACK's tree is plain (other CPUs, other sizes) nothing is refused.

    Nothing is random: the places are constructed (``_placements``), the values first
    are triples measured to expose YNNPACK (``_EXPOSING``: at n = 4096 and 65,536 the
    first try refuses), then values drawn from a fixed seed, three tries in four at the
    constructed places and the fourth at drawn places (other CPUs, other layouts). The
    values cannot be derived: where YNNPACK is not plain its sum is several units in the
    last place from every order and from the exact sum for about 0.7% of value triples
    (21 of 3000 at the right places), and the arithmetic that makes it is not known, so
    a triple that exposes it on one CPU is a measurement, not a construction."""
    import jax
    import numpy as np

    try:
        text = jax.jit(fn).lower(jax.ShapeDtypeStruct((n,), operands)).compile().as_text()
    except Exception:  # not lowerable here: the reveal reports what fails
        return
    if n < 3 or "ynn" not in text.lower():
        return
    rng = np.random.default_rng(0x714E)
    t = np.float32 if operands == "float32" else np.float64
    placements = _placements(n)
    known = [(np.array(p), np.array(v, dtype=t)) for v in _EXPOSING for p in placements]
    for k in range(len(known) + triples):
        if k < len(known):
            where, v = known[k]
        else:
            if placements and k % 4 != 3:
                where = np.array(placements[k % len(placements)])
            else:
                where = rng.choice(n, 3, replace=False)
            v = (rng.standard_normal(3) * 2.0 ** rng.integers(-6, 7, 3)).astype(t)
        buf[:] = 0
        buf[where] = v
        got = t(float(call(view)))
        a, b, c = v
        orders = {t(t(a + b) + c), t(t(a + c) + b), t(t(b + c) + a)}
        if got not in orders:
            v, where = [float(u) for u in v], sorted(int(i) for i in where)
            raise NotPlainSummationError(
                f"XLA hands this sum of {n} {operands} values to a YNNPACK fusion "
                f"(ynn_fusion in the compiled program), which is not a plain summation "
                f"here: {v[0]!r}, {v[1]!r} and {v[2]!r} at positions {where} among "
                f"zeros sum to {float(got)!r}, which no order of two additions gives "
                f"({sorted(float(o) for o in orders)}). YNNPACK sums a window in wider "
                f"or fused steps, so no summation tree describes it; to reveal XLA's own "
                f"order, set XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type= before "
                f"JAX starts"
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
    jit=True,
    rows=True,
):
    """Reveal the summation tree of ``fn(x) -> scalar`` on a 1-D JAX array.

    ``fn`` is jitted (``jit=False`` to call it as it is). ``dtype`` is a JAX/NumPy
    dtype or a name; other arguments as for :func:`fprev.reveal`.

    With ``rows`` (the default, for jitted float32 and float64 sums of 1024 to 4096
    values without an ``acc_dtype``), probes are asked many at a time through
    ``jax.jit(lambda X: jax.lax.map(fn, X))``, one probe per row of up to 64 rows and
    ``2^16`` values a call (a JAX call on the CPU costs about as much as summing
    thousands of values, so single probes pay mostly for the call; below 1024 values
    compiling the many-row function costs more than the reveal's calls, above 4096 a
    call's own sum does). ``lax.map`` runs ``fn`` itself on each row, unlike ``vmap``,
    which compiles a batched reduction that may sum in another order. It is trusted
    only as far as it is checked: its rows must answer seeded random inputs with the
    one-row function's bits, and the tree it reveals must replay the one-row function
    on those and on other seeded inputs; otherwise the reveal runs one probe per call
    as with ``rows=False``. Both jitted functions are kept (weakly) for ``fn``, so that
    a second reveal of ``fn`` at the same ``n`` compiles nothing. The report's ``lanes``
    says how many rows a call held, and ``rows_skipped`` why the rows were not used when they were tried.

    >>> import jax.numpy as jnp, fprev
    >>> fprev.jax.reveal(jnp.sum, 16).n
    16
    """
    import jax.numpy as jnp

    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(_name(dtype), _name(acc_dtype))
    buf, view = _buffer(n, operands, algorithm)
    if jit:
        call, batched = _jitted(fn)
    else:

        def call(x):
            return fn(jnp.asarray(x))

    if jit and operands in ("float32", "float64") and acc_dtype is None:
        _refuse_non_plain_fusion(fn, call, buf, view, n, operands)
    lanes = _rows_per_call(n)
    if (jit and _flag(rows, "rows") and lanes > 1 and acc_dtype is None
            and operands in ("float32", "float64")):
        tree, costs = _reveal_rows(call, batched, n, lanes, operands, algorithm, hint, verify,
                                   seed)
        if tree is not None:
            costs["acc_dtype"] = acc
            return (tree, costs) if report else tree
        skipped = costs
    else:
        skipped = None
    tree, costs = _run(call, (view,), buf, n, operands, acc, algorithm, hint, verify, seed,
                       widen=acc_dtype is None)
    costs["lanes"] = 1
    if skipped is not None:
        costs["rows_skipped"] = skipped
    return (tree, costs) if report else tree


__all__ = ["reveal"]
