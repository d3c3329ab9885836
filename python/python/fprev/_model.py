"""Order models: a library's summation algorithm as a function of ``n``.

:func:`fprev.model` reveals a reduction at chosen sizes, fits the simplest model of
fprev's families (sequential, reverse, unrolled loops, NumPy's pairwise sum, XLA's tree
reduction, rayon's halving, PyTorch's cascade sum) that reproduces every revealed tree,
and proves it at sizes it did not see before returning it. The model gives the tree at
any size and writes itself as code (:meth:`OrderModel.emit`).
"""

import json

from . import _fprev

__all__ = ["model", "OrderModel", "ModelError"]


class ModelError(ValueError):
    """No order model holds everywhere the fit looked.

    ``disagreeing`` maps each family's closest model (its spec) to the sizes where its
    tree is not the target's (empty when the message has no such list).
    """

    def __init__(self, message, disagreeing=None):
        super().__init__(message)
        self.disagreeing = disagreeing or {}


class OrderModel:
    """A summation order as a function of ``n``, with the sizes it was fitted and
    proved at.

    >>> import fprev
    >>> m = fprev.OrderModel.from_spec("fprev-model/1 numpy-pairwise lanes=8 block=128 type=f32")
    >>> print(m.tree(10))
    (((((0+1)+(2+3))+((4+5)+(6+7)))+8)+9)
    >>> m.fitted, m.proved
    ([], [])
    """

    def __init__(self, spec, fitted=(), proved=()):
        try:
            self._core = _fprev.OrderModelCore.parse(str(spec))
        except ValueError as e:
            raise ModelError(str(e)) from None
        self.spec = str(self._core)
        self.fitted = sorted(int(n) for n in fitted)
        self.proved = sorted(int(n) for n in proved)

    @classmethod
    def from_spec(cls, spec):
        """The model a spec names (``str(model)``), with no evidence."""
        return cls(spec)

    def tree(self, n):
        """The :class:`fprev.Tree` at ``n`` values."""
        return self._core.tree(int(n))

    def sum(self, x):
        """The sum of the array ``x`` in this order, in the model's type (float32 or
        float64), as a Python float: the library's bits, without building a tree."""
        return self._core.sum(x)

    def describe(self):
        """The algorithm in words, with its parameters, and where it was proved."""
        text = self._core.describe()
        if self.fitted or self.proved:
            text += "; fitted at %d sizes (%s), proved at %d sizes it did not see (%s)" % (
                len(self.fitted), _sizes_text(self.fitted),
                len(self.proved), _sizes_text(self.proved),
            )
        return text

    def emit(self, lang="python"):
        """One self-contained function ``sum`` in ``lang`` ("rust", "c" or "python")
        that adds in exactly this order for every length.

        >>> import fprev
        >>> m = fprev.OrderModel.from_spec("fprev-model/1 sequential type=f64")
        >>> ns = {}
        >>> exec(m.emit("python"), ns)
        >>> ns["sum"]([1e16, 1.0, -1e16])
        0.0
        """
        return self._core.emit(lang)

    def to_json(self):
        """``{"spec": ..., "fitted": [...], "proved": [...]}`` as text."""
        return json.dumps({"spec": self.spec, "fitted": self.fitted, "proved": self.proved})

    @classmethod
    def from_json(cls, text):
        """The model :meth:`to_json` wrote."""
        try:
            d = json.loads(text)
            return cls(d["spec"], d.get("fitted", ()), d.get("proved", ()))
        except (KeyError, TypeError, json.JSONDecodeError) as e:
            raise ModelError("not an order model's JSON: %s" % e) from None

    def __str__(self):
        return self.spec

    def __repr__(self):
        return "<fprev.OrderModel %s (fitted at %d sizes, proved at %d)>" % (
            self.spec, len(self.fitted), len(self.proved))

    def __eq__(self, other):
        return isinstance(other, OrderModel) and self.spec == other.spec

    def __hash__(self):
        return hash(self.spec)


def _sizes_text(sizes):
    if len(sizes) <= 12:
        return ", ".join(map(str, sizes))
    return "%s, ..., %s" % (", ".join(map(str, sizes[:6])), ", ".join(map(str, sizes[-4:])))


def _default_reveal(fn, dtype):
    """fprev.torch.reveal for torch functions and dtypes, fprev.jax.reveal for JAX's,
    fprev.reveal otherwise."""
    from . import jax as fjax, reveal, torch as ftorch

    where = "%s %s" % (getattr(fn, "__module__", "") or "", type(dtype).__module__)
    if "torch" in where or str(dtype).startswith("torch."):
        return ftorch.reveal
    if "jax" in where:
        return fjax.reveal
    return reveal


def _disagreeing(message):
    out = {}
    for line in message.splitlines()[1:]:
        spec, _, sizes = line.strip().partition(": disagrees at n = ")
        if sizes:
            out[spec] = [int(s) for s in sizes.replace("...", "").split(",") if s.strip()]
    return out


def model(fn, sizes, dtype="float32", *, proofs=8, reach=10, seed=49, rounds=3,
          reveal=None, **reveal_kwargs):
    """Fit an order model to ``fn``, a sum of a 1-D array, over the lengths ``sizes``.

    The sizes revealed are those of ``sizes`` up to 24, the powers of two, their
    neighbours, three times the powers of two, the largest prime below each power of
    two and the largest size. The simplest model whose tree is the revealed one at all
    of them is then proved (the target revealed with the model's tree as a hint) at
    ``proofs`` sizes it did not see: half among ``sizes``, half above the largest
    fitted size, up to ``reach`` times it. A model that fails a proof is replaced by the
    next one that fits those sizes too (at most ``rounds`` times).

    Parameters:
        fn: the reduction, as for :func:`fprev.reveal` (or :func:`fprev.torch.reveal`,
            :func:`fprev.jax.reveal`: chosen from ``fn``'s module and ``dtype``, or
            given as ``reveal``).
        sizes: the lengths the model is for (``range(1, 4097)``).
        dtype: the operands' format, as for the reveal used; float16 and bfloat16 sums
            accumulated in float32 give a float32 model.
        reveal_kwargs: passed to every reveal (``acc_dtype``, ``seed``, ...).

    Returns:
        An :class:`OrderModel` whose ``fitted`` and ``proved`` list the sizes.

    Raises:
        ModelError: no model reproduces every revealed tree, or a model that did was
            disproved at sizes it did not see and no other fits them; the message lists
            the sizes that disagree.
        fprev.RevealError: a reveal failed (its message names the size).

    >>> import fprev, numpy as np
    >>> m = fprev.model(np.sum, range(1, 300), dtype="float64", proofs=4)
    >>> str(m)
    'fprev-model/1 numpy-pairwise lanes=8 block=128 type=f64'
    >>> len(m.proved)
    4
    """
    if reveal is None:
        reveal = _default_reveal(fn, dtype)
    try:
        given = sorted({int(n) for n in sizes})
    except (TypeError, ValueError) as e:
        raise ModelError("sizes must be whole numbers: %s" % e) from None
    try:
        chosen = _fprev.model_fit_sizes(given)
    except ValueError as e:
        raise ModelError(str(e)) from None

    sum_type = [None]

    def reveal_at(n, hint=None):
        try:
            tree, costs = reveal(fn, n, dtype=dtype, hint=hint, report=True, **reveal_kwargs)
        except Exception as e:
            if hasattr(e, "add_note"):
                e.add_note("fprev.model: revealing n = %d" % n)
            raise
        acc = costs.get("acc_dtype") or str(dtype)
        sum_type[0] = "f64" if "64" in str(acc) else "f32"
        return tree

    trees = {n: reveal_at(n) for n in chosen}
    last = None
    for round_ in range(max(1, int(rounds))):
        spec, message = _fprev.model_fit_trees(sorted(trees.items()), sum_type[0])
        if spec is None:
            raise ModelError(message, _disagreeing(message))
        candidate = OrderModel(spec)
        held = _fprev.model_proof_sizes(given, sorted(trees), int(proofs), int(reach),
                                         int(seed), round_)
        failed = {}
        for n in held:
            expected = candidate.tree(n)
            tree = reveal_at(n, hint=expected)
            if tree != expected:
                failed[n] = tree
        if not failed:
            return OrderModel(spec, sorted(trees), held)
        last = (spec, sorted(failed))
        trees.update(failed)
    raise ModelError(
        "%s fits every revealed size but is not the target's order at n = %s"
        % (last[0], _sizes_text(last[1])),
        {last[0]: last[1]},
    )
