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

import functools
import itertools
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
    Sweep,
    TargetError,
    TooLargeError,
    Tree,
    TreeDiff,
    WiderAccumulatorError,
)

__all__ = [
    "reveal",
    "model",
    "OrderModel",
    "ModelError",
    "reveal_dot",
    "reveal_scaled_dot",
    "format_codes",
    "reveal_matmul",
    "sweep",
    "sweep_lengths",
    "sweep_matmul",
    "Sweep",
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
    "WiderAccumulatorError",
    "TargetError",
    "TooLargeError",
]

__version__ = "0.1.0"


def _formats(dtype, acc_dtype):
    operands = _dtypes.name(dtype)
    if acc_dtype is not None:
        acc = _dtypes.name(acc_dtype)
    elif _dtypes.is_operand_only(operands):
        acc = "float32"  # no library accumulates FP8 or TF32 products in their own format
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


def _not_torch(fn, *dtypes):
    """Refuses a PyTorch function or dtype before NumPy or torch fail on the other's
    types: fprev.reveal hands ``fn`` a NumPy array, fprev.torch.reveal a tensor."""
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    torch_dtype = any(type(d).__module__.split(".")[0] == "torch" for d in dtypes)
    if module == "torch" or torch_dtype:
        what = "the dtype %s" % next(
            str(d) for d in dtypes if type(d).__module__.split(".")[0] == "torch"
        ) if torch_dtype else "%s (a PyTorch function)" % getattr(fn, "__name__", fn)
        raise TypeError(
            "fprev.reveal calls its function with a NumPy array, and %s is PyTorch's: "
            "use fprev.torch.reveal(fn, n, dtype=torch.float32), which passes a tensor"
            % what
        )


def _same_answers(call, args, calls=3):
    """Whether ``call`` answers the current input the same way every time (a function
    that adds noise does not: its probes look like fractions of units)."""
    first = float(call(*args))
    for _ in range(calls - 1):
        again = float(call(*args))
        if again != first and not (again != again and first != first):
            return first, again
    return None


def _run(call, args, buf, n, operands, acc, algorithm, hint, verify, seed, accept_flat=False,
         widen=False):
    """The engine's reveal; with ``widen`` (no ``acc_dtype`` given), a 16-bit sum that
    looks order-independent is revealed again with a float32 accumulator (see
    :func:`_widened`)."""
    if not widen and operands in _WIDER and acc == _WIDER[operands]:
        # acc_dtype="float32" given for a 16-bit sum: the answers may be rounded to 16
        # bits (torch.sum on bfloat16 answers in bfloat16), which the engine's float32
        # replays never match; the replays that allow it run here, as in the retry
        return _in_wider(call, args, buf, n, operands, algorithm, hint, verify, seed,
                         accept_flat)
    try:
        tree, costs = _fprev.reveal(
            call, args, buf, n, operands, acc, algorithm, _hint(hint), _flag(verify, "verify"),
            _seed(seed), _flag(accept_flat, "accept_flat"),
        )
    except PrecisionTooLowError as e:
        # a 16-bit sum accumulated in float32 keeps more units than 16 bits count from
        # a few hundred values on (bfloat16: 2^8): it is revealed in float32 instead
        if not (widen and acc == operands and operands in _WIDER):
            raise
        return _widened(e, call, args, buf, n, operands, algorithm, hint, verify, seed)
    except NotIntegerError as e:
        differ = _same_answers(call, args)
        if differ is None:
            raise
        raise NondeterministicError(
            "answers differ for the same input (%r, then %r): the function is not "
            "deterministic (it adds noise, or draws random numbers), so no summation tree "
            "explains it" % differ
        ) from e
    except (OrderIndependentError, WiderAccumulatorError) as e:
        retry = widen and acc == operands and operands in _WIDER
        if not retry or (_flag(accept_flat, "accept_flat")
                         and isinstance(e, OrderIndependentError)):
            raise
        return _widened(e, call, args, buf, n, operands, algorithm, hint, verify, seed)
    costs["acc_dtype"] = acc
    return tree, costs


def _rows_per_call(n, most=64):
    """Rows a many-row call gets for sums of ``n`` values (1: none): enough that one
    call's fixed cost (a JAX call on the CPU, about 15-80 us) is shared by many probes,
    few enough that the rows' own work stays near it (``2^16`` values a call: at 1024,
    2048 and 3072 values a warm reveal took 1.7, 2.2 and 3.5 ms so, against 1.7, 3.3
    and 5.5 ms with 64 rows a call, and 2.5 ms with 16 at 1024). Compiling the many-row function
    costs about 60-80 ms on a CPU, once per function and length: from 1024 values on, a
    second reveal is several times faster for it (a known order's proof, 342 inputs at
    n = 1024, takes 6 calls instead of 342), though a first one is slower. Above 4096
    values a one-probe call's own sum costs more than its fixed cost, and inputs that
    hold many probes each (a known order's proof, about ``n / 8`` calls) or the
    structure-guided search (about ``n / 3``) leave the rows little to save."""
    if not 1024 <= n <= 4096:
        return 1
    return min(most, (1 << 16) // n)


def _random_rows(rng, rows, n, np_dtype):
    """Seeded values over 40 binades, so that two orders round differently."""
    x = rng.standard_normal((rows, n)) * np.exp2(rng.integers(-20, 20, (rows, n)))
    return x.astype(np_dtype)


@functools.lru_cache(maxsize=8)
def _check_rows(seed, n, operands, before):
    """The seeded random rows of :func:`_reveal_rows`' checks, ``before`` of them for
    the check ahead of the reveal and four for the one after, drawn once per seed and
    size (read-only): drawing them cost a warm reveal of 1024 values a tenth of its
    time."""
    rng = np.random.default_rng([seed, 0x1A7E5])
    rows = _random_rows(rng, before + 4, n, _dtypes.numpy_dtype(operands))
    rows.flags.writeable = False
    return rows[:before], rows[before:]


def _reveal_rows(single, rows, n, lanes, operands, algorithm, hint, verify, seed):
    """Reveal ``single`` (a sum of one array) through ``rows``, which sums each row of a
    ``(lanes, n)`` array as ``single`` sums one: the engine puts one probe in every row,
    so a row of ``n`` probes costs ``n / lanes`` calls. ``rows`` is trusted only as far
    as it is checked, before (its rows must answer seeded random inputs with
    ``single``'s bits) and after (the tree it revealed must replay ``single`` itself on
    seeded random inputs). ``(None, why)`` when either check, or the reveal, fails: the
    caller reveals ``single`` one probe per call, whose own errors are the ones to
    report."""
    np_dtype = _dtypes.numpy_dtype(operands)
    a = np.empty((lanes, n), dtype=np_dtype)
    view = a.view()
    view.flags.writeable = False
    out = np.empty((lanes, 1), dtype=np.float64)

    def call():
        r = np.asarray(rows(view), dtype=np.float64).reshape(-1)
        if r.shape != (lanes,):
            raise ValueError(f"the rows' sums have shape {r.shape}, expected ({lanes},)")
        out[:, 0] = r

    checked = 0
    try:
        # random rows above zero rows: the zeros cost the call little, drawing them much
        before, after = _check_rows(_seed(seed), n, operands, min(lanes, 4))
        a[...] = 0
        a[: len(before)] = before
        call()
        answers = [out[i, 0] for i in range(len(before))]
        for i, x in enumerate(before):
            checked += 1
            if float(single(x)) != answers[i]:
                return None, f"row {i} of a random input was summed differently"
        tree, costs = _fprev.reveal_lanes(
            call, (), a, out, lanes, n, operands, operands, algorithm, _hint(hint),
            _flag(verify, "verify"), _seed(seed), False,
        )
        # the rows checked before (their answers are the function's) and new inputs
        for k, x in enumerate(before):
            if answers[k] != float(tree.replay(x)):
                return None, f"the rows' tree does not replay the function on random row {k}"
        for k, x in enumerate(after):
            checked += 1
            if float(single(x)) != float(tree.replay(x)):
                return None, f"the rows' tree does not replay the function on random input {k}"
    except Exception as e:  # the one-probe reveal reports the function's own errors
        return None, f"{type(e).__name__}: {e}"
    costs["calls"] += 1 + checked
    costs["lanes"] = lanes
    return tree, costs


# the next wider accumulator of a 16-bit format: what libraries sum float16 and
# bfloat16 in on CPUs
_WIDER = {"float16": "float32", "bfloat16": "float32"}


def _in_wider(call, args, buf, n, operands, algorithm, hint, verify, seed, accept_flat):
    """A 16-bit sum revealed with the float32 accumulator the caller named; the replays
    of :func:`_replay_rounded` accept float32 answers and answers rounded once."""
    wider = _WIDER[operands]
    tree, costs = _fprev.reveal(
        call, args, buf, n, operands, wider, algorithm, _hint(hint), False, _seed(seed),
        _flag(accept_flat, "accept_flat"),
    )
    count, model = (_replay_rounded(call, args, buf, tree, operands, _seed(seed))
                    if _flag(verify, "verify") else (0, None))
    costs["replays"] = costs.get("replays", 0) + count
    costs["calls"] = costs.get("calls", 0) + count
    costs["acc_dtype"] = wider
    if model:
        costs["acc_retry"] = f"acc_dtype={wider!r} given; answers are {model}"
    return tree, costs


def _widened(first, call, args, buf, n, operands, algorithm, hint, verify, seed):
    """Reveal a 16-bit sum that looked order-independent in its own format, or whose
    probed tree reproduced it only when summed in float32 (the engine's
    WiderAccumulatorError), again in float32: a library that adds float16 values in
    float32 and rounds once at the end (PyTorch on the CPU) keeps every unit of a 16-bit
    probe up to 1024 values, and from there on its tree follows float32's arithmetic.
    The probes' answers are whole numbers of units, exact in the 16-bit result up to
    2^11 units (2^8 for bfloat16; the engine counts larger sizes in windows of zeros),
    so the tree is revealed as usual; the engine's replay check compares answers in
    float32, which a result rounded to 16 bits never matches, so the replays are run
    here instead: seeded inputs whose
    large values cancel (so that float32 rounding errors show in a 16-bit result), each
    answered twice, must equal the tree summed in float32, either as it is (the callable
    answers in float32) or rounded once to the 16-bit format, the same way for every
    input. Any failure raises the first error, with a note saying what the retry found."""
    wider = _WIDER[operands]
    try:
        tree, costs = _fprev.reveal(
            call, args, buf, n, operands, wider, algorithm, _hint(hint), False, _seed(seed),
            False,
        )
        replays = _replay_rounded(call, args, buf, tree, operands, _seed(seed)) if _flag(
            verify, "verify") else (0, None)
    except Exception as e:  # the retry's reason is kept as a note on the first error
        if hasattr(first, "add_note"):
            first.add_note(
                f"retried with acc_dtype={wider!r} (a float32 accumulator), which failed: "
                f"{type(e).__name__}: {e}"
            )
        raise first from None
    count, model = replays
    costs["replays"] = costs.get("replays", 0) + count
    costs["calls"] = costs.get("calls", 0) + count
    costs["acc_dtype"] = wider
    why = (f"order-independent in {operands}" if isinstance(first, OrderIndependentError)
           else f"more units than {operands} counts exactly" if isinstance(
               first, PrecisionTooLowError)
           else f"the {operands} probes' tree sums in {wider}")
    costs["acc_retry"] = (
        f"{why}: revealed with a {wider} accumulator"
        + f"; answers are {model or 'the float32 sums, each also exact in ' + operands}"
    )
    return tree, costs


def _round_bits(values, operands):
    """float32 ``values`` rounded to the nearest 16-bit ``operands`` value, as bits."""
    if operands == "float16":
        with np.errstate(all="ignore"):  # rounding to a subnormal is no error here
            return values.astype(np.float16).view(np.uint16)
    u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _widen_bits(bits, operands):
    """16-bit ``operands`` bits as float32 values (exact)."""
    if operands == "float16":
        return bits.view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _replay_rounded(call, args, buf, tree, operands, seed, inputs=16):
    """The replay checks of :func:`_widened`: ``(calls made, the answers' model)``."""
    n = tree.n
    rng = np.random.default_rng([seed, 0x16B17])
    # float16: 10 fraction bits, 5 exponent bits; bfloat16: 7 and 8, so its partial
    # sums must be larger and its small values smaller for float32 roundings to show
    frac, big_exp, small_exp = (1024, (-8, 10), (-14, -8)) if operands == "float16" else (
        128, (-8, 16), (-20, -12))
    bits = buf.view(np.uint16)
    model = None
    calls = 0
    for k in range(inputs):
        # pairs v, -v (large, cancelling) and small values, at shuffled positions: the
        # exact sum is small, the float32 partial sums are not, so their rounding shows
        half = (n - max(1, n // 8)) // 2
        big = rng.choice([-1.0, 1.0], half) * np.ldexp(
            1 + rng.integers(0, frac, half) / frac, rng.integers(*big_exp, half))
        small = rng.choice([-1.0, 1.0], n - 2 * half) * np.ldexp(
            1 + rng.integers(0, frac, n - 2 * half) / frac, rng.integers(*small_exp, n - 2 * half))
        x = np.concatenate([big, -big, small]).astype(np.float32)[rng.permutation(n)]
        x_bits = _round_bits(x, operands)
        bits[:] = x_bits
        answers = []
        for _ in range(2 if k < 2 else 1):
            calls += 1
            answers.append(float(call(*args)))  # a scalar, as the engine reads it
        if answers[0] != answers[-1] and not np.isnan(answers[0]):
            raise NondeterministicError(
                f"replay input {k} was answered {answers[0]!r} and then {answers[-1]!r}"
            )
        exact = float(tree.replay(_widen_bits(x_bits, operands)))
        rounded_bits = _round_bits(np.array([exact], np.float32), operands)
        rounded = float(_widen_bits(rounded_bits, operands)[0])
        got = answers[0]
        same = {"in float32": got == exact, f"float32 rounded once to {operands}": got == rounded}
        matches = [m for m, ok in same.items() if ok]
        if len(matches) == 1 and model is None:
            model = matches[0]  # both match where the float32 sum is a 16-bit value
        if not matches or (model is not None and model not in matches):
            raise NotPlainSummationError(
                f"the tree revealed with a float32 accumulator does not reproduce the "
                f"target on replay input {k} (seed {seed}): target {got!r}, tree "
                f"{exact!r} in float32, {rounded!r} rounded to {operands}"
            )
    return calls, model


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
            "float8_e4m3fn", "float8_e5m2", AMD's "float8_e4m3fnuz" and
            "float8_e5m2fnuz" (bfloat16 and FP8 need ml_dtypes), NVIDIA's "tf32"
            (float32 arrays whose values have 10 fraction bits), or the NumPy dtype.
            FP8's range is too narrow for a plain sum's probes (E4M3 reaches 448);
            :func:`reveal_dot` and :func:`reveal_matmul` spread them over both
            operands.
        acc_dtype: the format ``fn`` accumulates and answers in, when wider than the
            operands (float16 operands summed in float32); default ``dtype``, float32
            for FP8 and TF32. When it is not given and a float16 or bfloat16 sum looks
            order-independent (a float32 accumulator, rounded once at the end), the
            reveal is retried with float32; the report's ``acc_dtype`` says which
            accumulator was used, ``acc_retry`` why.
        algorithm: "fprev" (default), "basic" (all pairs) or "naive" (n <= 8).
        hint: a :class:`Tree` (or its text) to try first; proved with one probe per
            inner node when it is right, ignored when it is not.
        verify: re-ask sampled probes and replay the tree on seeded random inputs.
        seed: seed of pivot choices and verification inputs (default 0).
        report: also return a dict of costs (probes, calls, batches, ...), the
            accumulator used (``acc_dtype``, ``acc_retry``) and, under
            ``"arithmetic"``, the block-FMA model fitted to truncating fused nodes
            (``None`` for plain additions; ``"text"`` says it in words, and
            docs/tensor-cores.md describes every key: they are the fields of the Rust
            ``FittedFused``).
        accept_flat: return one n-way node (``"(0+1+...)"``) for a sum whose result
            does not depend on the order, instead of raising OrderIndependentError.

    Returns:
        The :class:`Tree`, or ``(tree, report)`` when ``report`` is true.

    Raises:
        RevealError: a subclass saying why no tree explains the answers.
        Whatever ``fn`` raises, unchanged (with a note naming the probe).

    >>> import fprev, numpy as np
    >>> print(fprev.reveal(np.sum, 10, dtype=np.float64))
    (((((0+1)+(2+3))+((4+5)+(6+7)))+8)+9)
    """
    _not_torch(fn, dtype, acc_dtype)
    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(dtype, acc_dtype)
    buf, view = _buffer(n, operands, algorithm)
    tree, costs = _run(
        fn, (view,), buf, n, operands, acc, algorithm, hint, verify, seed, accept_flat,
        widen=acc_dtype is None,
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
    ``y`` (the FPRev paper's §8.1.1), and the checks draw both at random. TF32 operands
    (``dtype="tf32"``, float32 arrays of TF32 values, answered in float32) go the same
    way: a Tensor Core aligns each product by its operands' exponents, which only
    random values in both operands show. Arguments as for :func:`reveal`.

    >>> import fprev, numpy as np
    >>> t = fprev.reveal_dot(np.dot, 64, dtype=np.float64)
    >>> t.n
    64
    """
    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(dtype, acc_dtype)
    buf, view = _buffer(n, operands, algorithm)
    if _dtypes.is_operand_only(operands):
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


_MAX_SIZES = 1 << 16


def _sizes(sizes, what="sizes"):
    """``sizes`` as a list of non-negative ints (the engine refuses an empty or
    non-increasing list with the reason); at most ``_MAX_SIZES`` of them, read lazily,
    so that ``range(1, 10**8)`` is refused before anything is built."""
    try:
        items = list(itertools.islice(sizes, _MAX_SIZES + 1))
    except TypeError:
        raise TypeError(f"{what} must be an iterable of integers, got {type(sizes).__name__}") from None
    if len(items) > _MAX_SIZES:
        raise ValueError(
            f"more than {_MAX_SIZES} {what}: sweep fewer (each one is a reveal of its own)")
    out = []
    for s in items:
        if isinstance(s, (bool, np.bool_)):
            raise TypeError(f"{what} must hold integers, got {type(s).__name__}")
        try:
            s = operator.index(s)
        except TypeError:
            raise TypeError(f"{what} must hold integers, got {type(s).__name__}") from None
        if s < 0:
            raise ValueError(f"{what} must be non-negative, got {s}")
        out.append(s)
    return out


def sweep(
    make,
    sizes,
    n,
    dtype="float32",
    acc_dtype=None,
    algorithm="fprev",
    verify=True,
    seed=None,
    accept_flat=False,
    label="size",
):
    """Reveal a reduction at every size of ``sizes`` and say where its order changes.

    A kernel may sum in order for small batches and in blocks from some batch size on,
    so a request's result changes bit-wise with the batch it rides in. ``make(size)``
    returns the callable to reveal at that size (called as :func:`reveal` calls ``fn``:
    one read-only array of ``n`` values of ``dtype``, returning the sum). Each size is
    first proved to sum like the previous size (probe sets, a fraction of a search's
    calls) and searched only when that proof fails; no tree is carried over unproved.

    Parameters:
        make: ``make(size) -> fn``, the callable at that size.
        sizes: strictly increasing sizes (batch rows, threads, chunk lengths, ...).
        n: number of summands at every size.
        dtype, acc_dtype, algorithm, verify, seed, accept_flat: as for :func:`reveal`.
        label: what a size stands for, in :meth:`Sweep.ranges` (``"M = 1..3: ..."``).

    Returns:
        :class:`Sweep`: ``.trees`` (``{size: Tree}``), ``.breakpoints`` (the sizes
        whose tree differs from the previous size's), ``.ranges()`` (the runs of sizes
        sharing one tree, in words), ``.range_trees()``, ``.proved``, ``.probes``.

    Raises:
        RevealError: a subclass, its message starting with the size that failed.
        Whatever ``make`` or a callable raises, unchanged (with a note naming the size).

    >>> import fprev, numpy as np
    >>> def make(rows):  # in order below 4 rows, two halves from 4 on
    ...     if rows < 4:
    ...         return lambda x: np.cumsum(x)[-1]
    ...     return lambda x: np.cumsum(x[:32])[-1] + np.cumsum(x[32:])[-1]
    >>> s = fprev.sweep(make, range(1, 7), 64, label="M")
    >>> s.breakpoints
    [4]
    >>> print(s.ranges())
    M = 1..3: 64 in order; M = 4..6: 2 blocks of 32, combined in order; each block 32 in order
    """
    sizes = _sizes(sizes)
    n = _size(n)
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    operands, acc = _formats(dtype, acc_dtype)
    buf, view = _buffer(n, operands, algorithm)
    return _fprev.sweep(
        make, sizes, buf, view, n, operands, acc, algorithm, _flag(verify, "verify"),
        _seed(seed), _flag(accept_flat, "accept_flat"), label,
    )


def sweep_lengths(
    make,
    lengths,
    dtype="float32",
    acc_dtype=None,
    algorithm="fprev",
    verify=True,
    seed=None,
    accept_flat=False,
    label="n",
):
    """Reveal a reduction at every length of ``lengths`` and say where the order of the
    values it already summed changes.

    ``make(n)`` returns the callable that sums ``n`` values (called as :func:`reveal`
    calls ``fn``: one read-only array of ``n`` values of ``dtype``). Trees of two
    lengths cannot be equal, so a length **keeps the order** of the length before when
    its tree, cut to that length (:meth:`Tree.prefix`: the order it adds the first
    values in when the rest are zero), is that length's tree: the order only grew. A
    breakpoint is a length where the order of the values already there changed (a
    kernel that switches from 8 lanes to 16, a pairwise split that moves). Each length
    is revealed on its own, with the structure-guided guess from 4096 values on.

    Parameters:
        make: ``make(n) -> fn``, the callable for ``n`` values (``lambda n: np.sum``
            for one function at every length).
        lengths: strictly increasing lengths.
        dtype, acc_dtype, algorithm, verify, seed, accept_flat: as for :func:`reveal`.
        label: what a length stands for, in :meth:`Sweep.ranges` (``"n = 1..3: ..."``).

    Returns:
        :class:`Sweep`, as :func:`sweep` returns (a range's tree is its longest
        length's; ``.proved`` is empty: no length is proved from another).

    >>> import fprev, numpy as np
    >>> s = fprev.sweep_lengths(lambda n: np.sum, [8, 9, 128, 129, 300])
    >>> s.breakpoints  # 9 values grow 8's order; 128 are 8 lanes, 129 split in two
    [128, 129, 300]
    """
    lengths = _sizes(lengths, "lengths")
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    operands, acc = _formats(dtype, acc_dtype)

    def with_buffer(n):
        fn = make(n)
        buf, view = _buffer(n, operands, algorithm)
        return fn, buf, view

    return _fprev.sweep_lengths(
        with_buffer, lengths, operands, acc, algorithm, _flag(verify, "verify"), _seed(seed),
        _flag(accept_flat, "accept_flat"), label,
    )


def sweep_matmul(
    fn, ms, n, k, dtype="float32", acc_dtype=None, verify=True, seed=None, label="M"
):
    """Reveal row 0 of a matrix product at every batch size ``m`` of ``ms``.

    Batch invariance: does a request's row of ``a @ b`` sum in the same order whatever
    the number of rows ``m`` it is batched with? ``fn(a, b)`` must return ``a @ b`` for
    ``a`` of shape ``(m, k)`` and ``b`` of shape ``(k, n)`` (read-only NumPy arrays of
    ``dtype``); fprev puts its probes in row 0 of ``a`` (the other rows zero) and ones
    in ``b``, and reveals the sum of ``k`` products behind element ``(0, 0)``. Every
    element of row 0 is checked on every call: they all sum the same values, so any
    answer that differs from element ``(0, 0)``'s raises :class:`TargetError` (row 0's
    elements sum in different orders: :func:`reveal_matmul` groups them).

    Returns:
        :class:`Sweep` over ``ms``, its sizes labelled ``label``.

    >>> import fprev, numpy as np
    >>> def in_order(a, b):  # each element's k products added one after another
    ...     return np.cumsum(a[:, :, None] * b[None, :, :], axis=1)[:, -1, :]
    >>> s = fprev.sweep_matmul(in_order, [1, 2, 3], 4, 32, dtype=np.float64)
    >>> print(s.ranges())
    M = 1..3: 32 in order

    ``np.matmul`` with OpenBLAS 0.3 (Haswell kernels) shows a breakpoint at ``M = 2``:
    a one-row product runs its gemv kernel, two rows and more its gemm kernel.
    """
    ms = _sizes(ms, "ms")
    n, k = _size(n, "n"), _size(k, "k")
    operands, acc = _formats(dtype, acc_dtype)
    if _dtypes.is_fp8(operands):
        raise ValueError(
            "sweep_matmul probes one operand, which FP8 cannot hold the masks in: "
            "call reveal_matmul at each m (it spreads probes over both operands)"
        )
    if n == 0:
        raise InvalidSizeError("a matrix product with n = 0 columns has no row 0 to reveal")
    np_dtype = _dtypes.numpy_dtype(operands)

    def make(m):
        if m == 0:
            raise InvalidSizeError("m = 0: a product with no rows has no row 0 to reveal")
        a = np.zeros((m, k), dtype=np_dtype)
        a_view = a.view()
        a_view.flags.writeable = False
        b = np.ones((k, n), dtype=np_dtype)
        b.flags.writeable = False

        def row0(x):
            a[0, :] = x
            c = np.asarray(fn(a_view, b))
            if c.shape != (m, n):
                raise ValueError(
                    f"the matrix product returned shape {c.shape}, expected {(m, n)}"
                )
            if np.iscomplexobj(c):
                raise TargetError(
                    f"the matrix product returned {c.dtype} values, not real numbers"
                )
            row = c[0]
            first = row[0]
            differs = np.flatnonzero(
                (row != first) | (np.signbit(row) != np.signbit(first))
            )
            if not np.isnan(first) and differs.size:
                j = int(differs[0])
                raise TargetError(
                    f"at {label} = {m}: element (0, {j}) answered {row[j]!r} where "
                    f"(0, 0) answered {first!r} on the same values: the elements of row 0 "
                    f"sum in different orders (fprev.reveal_matmul(fn, {m}, {n}, {k}) "
                    "groups them)"
                )
            return first

        return row0

    return sweep(
        make, ms, k, dtype=operands, acc_dtype=acc, verify=verify, seed=seed, label=label
    )


def _type_name(t):
    """A dtype given as a string, a numpy dtype or an ml_dtypes type, as its name."""
    if isinstance(t, str):
        return t
    return np.dtype(t).name


def format_codes(dtype):
    """The value of every code of a block-scaled type, in code order, as fprev reads it.

    ``dtype``: ``float4_e2m1fn`` (16 codes), ``float6_e3m2fn``, ``float6_e2m3fn`` (64),
    ``float8_e8m0fnu`` (256; code 255 is NaN), ``ue4m3`` (128; code 127 is NaN), or the
    FP8 element types ``float8_e4m3fn``, ``float8_e5m2`` (ml_dtypes types work too).

    >>> import fprev
    >>> fprev.format_codes("float4_e2m1fn")[:8]
    [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    """
    return _fprev.format_codes(_type_name(dtype))


def format_round(dtype, values):
    """The codes ``values`` round to in the element type ``dtype`` (to nearest even,
    saturating at the largest finite value), as fprev converts.

    >>> import fprev
    >>> fprev.format_round("float4_e2m1fn", [2.5, 100.0, -0.25])
    [4, 7, 8]
    """
    return _fprev.format_round(_type_name(dtype), [float(v) for v in values])


def reveal_scaled_dot(f, k, dtype, block, scale_dtype, *, report=False, seed=0):
    """Reveal a block-scaled dot product ``f(a, b, sa, sb) -> float``: ``a`` and ``b``
    hold ``k`` element values of ``dtype`` (``float4_e2m1fn``, ``float6_e3m2fn``,
    ``float6_e2m3fn``, ``float8_e4m3fn``, ``float8_e5m2``), ``sa`` and ``sb`` the
    ``k / block`` scales of their blocks (``float8_e8m0fnu`` or ``ue4m3``), all as lists
    of floats; ``f`` returns the scaled dot in f32 (any float; it is read as f32).

    Returns the tree over the ``k / block`` blocks (the probes go through the blocks'
    scales), and with ``report=True`` also a dict: ``probes``, ``fit_calls``,
    ``summary`` (the lines ``fprev reveal --op scaled-dot --format summary`` prints),
    ``arithmetic`` (``k``, ``groups``, ``alignment``, ``frac``, ``frac_max``,
    ``frac_out``, ``accumulator``, each the values still consistent) and ``products``:
    the order of the ``k`` products inside the blocks, revealed with every scale 1 for
    FP8 elements (``status`` ``"revealed"`` with ``tree`` and ``probes``; ``"refused"``
    with ``why``), or ``"not_probed"`` with ``why`` for FP4 and FP6, whose products no
    mask separates.

    >>> import fprev
    >>> def nvfp4(a, b, sa, sb):  # exact products, one f32 addition per block
    ...     s = 0.0
    ...     for j in range(len(sa)):
    ...         g = sum(x * y for x, y in zip(a[16 * j:16 * j + 16], b[16 * j:16 * j + 16]))
    ...         s = float(np.float32(s + np.float32(g * sa[j] * sb[j])))
    ...     return s
    >>> tree, rep = fprev.reveal_scaled_dot(nvfp4, 64, "float4_e2m1fn", 16, "ue4m3", report=True)
    >>> str(tree)
    '(((0+1)+2)+3)'
    """
    tree, rep = _fprev.reveal_scaled_dot(
        f, int(k), _type_name(dtype), int(block), _type_name(scale_dtype), int(seed)
    )
    return (tree, rep) if _flag(report, "report") else tree


# last: they use the helpers above; they import PyTorch / JAX only when called
from . import jax, torch  # noqa: E402
from ._model import ModelError, OrderModel, model  # noqa: E402
