"""Certificates of batch invariance for PyTorch models: :func:`certify` sweeps every
reduction-bearing operation of a model over many batch sizes and says which sizes share
one summation order, operation by operation (the breakpoints where one changes).

The model is recorded at every size as :func:`fprev.torch_trace.trace` records it (the
same checks of the input and of determinism, the same alignment of the operations);
each operation is then replayed on crafted inputs with the shapes it ran with at each
size (:mod:`fprev._torch_replay`). Available as ``fprev.torch.certify``; PyTorch is
imported only when it is called.
"""

import json

from . import _torch_record as _rec
from . import _torch_replay as _rep
from ._fprev import RevealError
from .torch_trace import _check_same, _elsewhere, _inputs, _module_of, _run, _sizes


class OpCertificate:
    """One reduction-bearing operation of a :class:`Certificate`: ``op``, ``module``,
    ``occurrence``, ``index`` (the element swept: row ``row``'s first element of the
    output), ``trees`` (``{size: Tree}``), ``ranges`` (``[(first, last, Tree)]``),
    ``breakpoints`` (sizes whose order differs from the size before), ``reason`` (why
    it is not certified, or None), ``row_uniform`` (a matrix product: every element
    of the row answered every probe with the same bits) and ``searched`` (the sizes
    whose calls differ from the size before, and so were swept; the others make the
    same call)."""

    def __init__(self, call, index):
        self.op = call.name
        self.module = call.module
        self.occurrence = call.key[2]
        self.index = index
        self.trees = {}
        self.ranges = []
        self.breakpoints = []
        self.reason = None
        self.row_uniform = True
        self.searched = []
        self.how = None

    def label(self):
        where = "(fn)" if self.module is None else self.module or "(root)"
        return f"{where} {self.op}" + (f" #{self.occurrence}" if self.occurrence else "")

    def describe(self, label="M"):
        if self.reason is not None:
            return f"{self.label()}: not certified: {self.reason}"
        words = []
        for first, last, tree in self.ranges:
            span = f"{first}" if first == last else f"{first}..{last}"
            words.append(f"{label} = {span}: {tree.describe()}")
        return f"{self.label()}: " + "; ".join(words)

    def to_dict(self):
        return {
            "op": self.op, "module": self.module, "occurrence": self.occurrence,
            "index": None if self.index is None else list(self.index),
            "reason": self.reason, "breakpoints": self.breakpoints,
            "row_uniform": self.row_uniform, "searched": self.searched, "how": self.how,
            "ranges": [{"first": a, "last": b, "tree": str(t), "describe": t.describe()}
                       for a, b, t in self.ranges],
        }


class Certificate:
    """What :func:`certify` found: ``sizes``, ``row``, ``ops`` (an
    :class:`OpCertificate` per reduction-bearing operation present at every size),
    ``invariant`` (every one certified, with one order at every size),
    ``breakpoints`` (``{size: [operation labels whose order changes there]}``),
    ``uncertified`` (those fprev could not sweep, with the reason), ``unmatched``
    (operations present at some sizes only: another row's computation, or control
    flow that depends on the size; listed, not certified), ``svg()`` and
    ``to_json()``."""

    def __init__(self, sizes, row, label, ops, unmatched):
        self.sizes = sizes
        self.row = row
        self.label = label
        self.ops = ops
        self.unmatched = unmatched

    @property
    def uncertified(self):
        return [op for op in self.ops if op.reason is not None]

    @property
    def breakpoints(self):
        out = {}
        for op in self.ops:
            for s in op.breakpoints:
                out.setdefault(s, []).append(op.label())
        return dict(sorted(out.items()))

    @property
    def invariant(self):
        return not self.uncertified and not self.breakpoints

    def describe(self):
        lines = []
        if self.invariant:
            lines.append(f"invariant: {len(self.ops)} reduction(s), one order each at "
                         f"{self.label} = {self.sizes[0]}..{self.sizes[-1]}")
        else:
            lines.append("not invariant: " + ", ".join(
                [f"{self.label} = {s}: {', '.join(ops)}" for s, ops in self.breakpoints.items()]
                + [f"{len(self.uncertified)} not certified"] * bool(self.uncertified)))
        for op in self.ops:
            lines.append("  " + op.describe(self.label))
        return "\n".join(lines)

    def to_json(self):
        """The certificate as JSON text (schema ``fprev.torch.certify/1``)."""
        return json.dumps({
            "schema": "fprev.torch.certify/1", "sizes": self.sizes, "row": self.row,
            "label": self.label, "invariant": self.invariant,
            "breakpoints": {str(s): ops for s, ops in self.breakpoints.items()},
            "ops": [op.to_dict() for op in self.ops],
            "unmatched": self.unmatched,
        }, indent=1)

    def svg(self, title=None):
        """A picture (SVG text): one band per operation, one cell per size coloured by
        its tree, breakpoints outlined in red, swept sizes marked with a dot, and the
        ranges in words under each band."""
        from ._torch_picture import certificate_svg

        return certificate_svg(self, title)

    def _repr_svg_(self):
        return self.svg()

    def __str__(self):
        return self.describe()

    def __repr__(self):
        return (f"<fprev.torch.Certificate: {len(self.ops)} reductions over "
                f"{len(self.sizes)} sizes, invariant={self.invariant}>")


def certify(fn, make_input, sizes, row=0, verify=True, seed=None, label="M"):
    """Certify which batch sizes share one summation order, operation by operation.

    ``fn``, ``make_input`` and ``row`` as for :func:`trace`. fprev records the model at
    every size of ``sizes`` (twice, checking both runs agree), then for every
    reduction-bearing operation present at every size sweeps the order of row
    ``row``'s first output element over the sizes with :func:`fprev.sweep` (each size
    proved to keep the previous size's tree before anything is searched). A size whose
    call has the same shapes, strides, dtypes and arguments as the size before makes
    the same kernel call and is given its tree without a sweep; operations with the
    same calls at every size (the same layer shape) share one sweep.

    Returns:
        :class:`Certificate`. ``.invariant`` is True only when every such operation was
        certified with one order at every size.
    """
    import torch

    sizes = _sizes(sizes, row)
    made = _inputs(torch, make_input, sizes, row)
    module = _module_of(torch, fn)
    runs = {}
    for m in sizes:
        calls_a, out_a = _run(torch, fn, made[m][0], module)
        calls_b, out_b = _run(torch, fn, made[m][0], module)
        _check_same(torch, label, m, out_a, out_b, calls_a, calls_b)
        runs[m] = calls_a
    _rec.align(runs, sizes)
    by_size = {m: {c.key: c for c in runs[m]} for m in sizes}
    ops, unmatched, cache = [], [], {}
    for call in runs[sizes[0]]:
        key = call.key
        if not _rep.is_reduction(call.name):
            continue
        if any(key not in by_size[m] for m in sizes):
            unmatched.append({"op": call.name, "module": call.module,
                              "occurrence": key[2],
                              "sizes": [m for m in sizes if key in by_size[m]]})
            continue
        calls = {m: by_size[m][key] for m in sizes}
        ops.append(_certify_op(calls, sizes, row, label, verify, seed, cache))
    unmatched += _elsewhere(runs, sizes, by_size, _rep.is_reduction)
    return Certificate(sizes, row, label, ops, unmatched)


def _certify_op(calls, sizes, row, label, verify, seed, cache):
    first = calls[sizes[0]]
    metas = {m: calls[m].outputs[0] for m in sizes}
    cert = OpCertificate(first, None)
    if any(x is None for x in metas.values()):
        cert.reason = "no tensor output"
        return cert
    p = _rec.plan_for({m: x.shape for m, x in metas.items()}, sizes)
    if p[0] is None:
        cert.reason = f"its output does not follow the batch size: {p[1]}"
        return cert
    index = [0] * len(metas[sizes[0]].shape)
    if p[0] == "batch":
        index[p[1]] = row * p[2]
    cert.index = index = tuple(index)
    replays = {m: _rep.Replay(calls[m], index) for m in sizes}
    unfit = [m for m in sizes if replays[m].kind is None]
    if unfit:
        cert.reason = (f"at {label} = {unfit[0]}: " if unfit[0] != sizes[0] else ""
                       ) + replays[unfit[0]].reason
        return cert
    cert.how = replays[sizes[0]].how
    ns = {m: r.n for m, r in replays.items()}
    if len(set(ns.values())) != 1:
        cert.reason = ("the number of values summed changes with the batch size: "
                       + ", ".join(f"{n} at {m}" for m, n in ns.items()))
        return cert
    sigs = {m: calls[m].signature() for m in sizes}
    reps = [m for i, m in enumerate(sizes) if i == 0 or sigs[m] != sigs[sizes[i - 1]]]
    cert.searched = reps
    memo = (tuple(sigs[m] for m in sizes), index)
    if memo in cache:
        trees, uniform, reason = cache[memo]
    else:
        uniform = [True]

        def check(ok):
            if not ok:
                uniform[0] = False

        try:
            swept, reason = _sweep_hinted(replays, reps, check, verify, seed, label), None
        except (RevealError, _rep._Unfit) as e:
            swept, reason = {}, f"{type(e).__name__}: {e}"
        trees = {}
        last = None
        for m in sizes:
            last = swept.get(m, last)
            trees[m] = last
        uniform = uniform[0]
        cache[memo] = (trees, uniform, reason)
    if reason is not None:
        cert.reason = reason
        return cert
    cert.trees = trees
    cert.row_uniform = uniform
    prev = None
    for m in sizes:
        t = trees[m]
        if prev is not None and t != prev:
            cert.breakpoints.append(m)
        if prev is None or t != prev:
            cert.ranges.append([m, m, t])
        else:
            cert.ranges[-1][1] = m
        prev = t
    cert.ranges = [tuple(r) for r in cert.ranges]
    return cert


def _sweep_hinted(replays, reps, check, verify, seed, label, most=64):
    """The trees of the swept element at the sizes ``reps``, as :func:`fprev.sweep`
    finds them: each size revealed with the previous size's tree as the hint (proved
    with probe sets, searched only where the proof fails). A float32 or float64 matrix
    product answers up to ``most`` probes per call, one per column of the product (a
    row of probes costs ``n / lanes`` products instead of ``n``), trusted only as far as
    ``fprev._reveal_rows`` checks the columns (seeded random rows answered as element
    ``(i, 0)`` answers them, before and after); where they are not, and for sums and
    16-bit products, one probe per call through :func:`fprev.reveal`, whose float32
    retry reads a 16-bit result that PyTorch accumulated in float32."""
    from . import _reveal_rows, reveal

    trees, prev = {}, None
    for m in reps:
        r = replays[m]
        single = r.probe_fn(row_check=check)
        tree = None
        try:
            if (r.kind == "matmul" and r.cols >= 2 and r.index[-1] == 0
                    and _rep._acc(r.operands) is None):
                lanes = min(most, r.cols)
                tree, _ = _reveal_rows(single, _rep.lanes_fn(r, lanes), r.n, lanes,
                                       r.operands, "fprev", prev, verify, seed)
            if tree is None:
                tree = reveal(single, r.n, dtype=r.operands, hint=prev, verify=verify,
                              seed=seed)
        except RevealError as e:
            raise type(e)(f"at {label} = {m}: {e}") from e
        trees[m] = prev = tree
    return trees


__all__ = ["certify", "Certificate", "OpCertificate"]
