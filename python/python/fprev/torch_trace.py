"""Batch invariance of PyTorch models: which operation's bits change with the batch
size, and the summation order it used on each side.

:func:`trace` runs a model at a few batch sizes under a ``TorchDispatchMode``, records
every aten operation (name, module path, shapes, dtypes) and compares the part of its
output that belongs to row ``row`` across the sizes, bit for bit. The first operation
whose row differs is replayed on crafted inputs with the shapes it ran with, and fprev
reveals the order behind the first element that differs, at each size.

Its companion :func:`fprev.torch_certify.certify` sweeps every reduction-bearing
operation over many sizes and says which sizes share one order. Available as
``fprev.torch.trace``; PyTorch is imported only when it is called.
"""

import json

import numpy as np

from . import _torch_record as _rec
from . import _torch_replay as _rep
from ._fprev import RevealError
from ._torch_errors import (  # noqa: F401  (re-exported: fprev.torch_trace.TraceError, ...)
    NondeterministicModelError,
    NotRevealableError,
    RowMismatchError,
    TraceDeviceError,
    TraceError,
    TraceInPlaceError,
)




def _sizes(sizes, row):
    from . import _sizes as check

    out = check(sizes)
    if len(out) < 2:
        raise ValueError(f"sizes needs two batch sizes or more, got {out}")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"sizes must be strictly increasing, got {out}")
    if out[0] < 1:
        raise ValueError("a batch size must be at least 1")
    if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or row < 0:
        raise TypeError(f"row must be a non-negative integer, got {row!r}")
    if row >= out[0]:
        raise ValueError(f"row {row} is not in a batch of {out[0]} (the smallest size)")
    return out


def _flatten(torch, value, what):
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(value)
    tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
    if not tensors:
        raise TypeError(f"{what} holds no tensor")
    return leaves


def _inputs(torch, make_input, sizes, row):
    """``{size: (args, leaves)}``, checked: row ``row`` of every tensor equal."""
    made = {}
    for m in sizes:
        value = make_input(m)
        args = value if isinstance(value, tuple) else (value,)
        made[m] = (args, _flatten(torch, args, f"make_input({m})"))
    first = made[sizes[0]][1]
    for m in sizes[1:]:
        if len(made[m][1]) != len(first):
            raise RowMismatchError(
                f"make_input({m}) returned {len(made[m][1])} values, make_input({sizes[0]}) "
                f"{len(first)}")
    for i, t0 in enumerate(first):
        if not isinstance(t0, torch.Tensor):
            continue
        shapes = {m: tuple(made[m][1][i].shape) for m in sizes}
        plan = _rec.plan_for(shapes, sizes)
        if plan[0] is None:
            raise RowMismatchError(f"input {i}'s shape does not follow the batch size: {plan[1]}")
        for m in sizes[1:]:
            a, b = t0, made[m][1][i]
            if plan[0] == "batch":
                _, d, c = plan
                a, b = a.narrow(d, row * c, c), b.narrow(d, row * c, c)
            at = _rec.first_difference(a, b)
            if at is not None:
                where = _rec.unravel(at, tuple(a.shape))
                raise RowMismatchError(
                    f"row {row} of input {i} differs between sizes {sizes[0]} and {m} at "
                    f"element {where} of the row ({a.reshape(-1)[at].item()!r} and "
                    f"{b.reshape(-1)[at].item()!r}): make_input(m) must give row {row} the "
                    "same values at every m")
    return made


def _clone(torch, args):
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, args)


def _run(torch, fn, args, module, plan=None, rename=None):
    """One call of ``fn`` under a recorder: ``(calls, output leaves)``."""

    def inplace(name, mod, arg, t):
        raise TraceInPlaceError(
            f"{name} (module {mod or '(none)'}) writes in place to its argument '{arg}', "
            f"a tensor of shape {list(t.shape)} that outlives the call (a parameter, a "
            "buffer or a global): each run would start from another state. Make the "
            "update out of place, or trace a copy of the model in eval mode")

    rec = _rec.Recorder(module=module, plan=plan, on_inplace=inplace, rename=rename)
    args = _clone(torch, args)
    rec.own(_flatten(torch, args, "the input"))
    with rec.active():
        out = fn(*args)
    leaves = [x.detach() if isinstance(x, torch.Tensor) else x
              for x in _flatten(torch, out, "the model's output")]
    return rec.calls, leaves


def _check_same(torch, sizes_label, m, out_a, out_b, calls_a, calls_b):
    keys_a = [c.key for c in calls_a]
    keys_b = [c.key for c in calls_b]
    if keys_a != keys_b:
        at = next((i for i, (x, y) in enumerate(zip(keys_a, keys_b)) if x != y),
                  min(len(keys_a), len(keys_b)))
        raise NondeterministicModelError(
            f"at {sizes_label} = {m} two runs of the model ran different operations "
            f"(operation {at}: {keys_a[at][1] if at < len(keys_a) else 'none'} and then "
            f"{keys_b[at][1] if at < len(keys_b) else 'none'})")
    for i, (a, b) in enumerate(zip(out_a, out_b)):
        if isinstance(a, torch.Tensor):
            at = _rec.first_difference(a, b)
            if at is not None:
                where = _rec.unravel(at, tuple(a.shape))
                raise NondeterministicModelError(
                    f"at {sizes_label} = {m} two runs of the model on the same input gave "
                    f"output {i} element {where} as {a.reshape(-1)[at].item()!r} and then "
                    f"{b.reshape(-1)[at].item()!r}: a non-deterministic model cannot be "
                    "traced (fix the thread count with torch.set_num_threads, or "
                    "torch.use_deterministic_algorithms(True) on a GPU)")


def _plans(runs, sizes, row):
    """The :class:`RowPlan` of every operation present at every size, and the
    ``{key: reason}`` of those not compared."""
    by_size = {m: {c.key: c for c in runs[m]} for m in sizes}
    parts, why = {}, {}
    for call in runs[sizes[0]]:
        key = call.key
        missing = [m for m in sizes if key not in by_size[m]]
        if missing:
            why[key] = f"absent at size {', '.join(map(str, missing))}"
            continue
        plans = []
        for i, meta in enumerate(call.outputs):
            metas = {m: by_size[m][key].outputs[i] if i < len(by_size[m][key].outputs)
                     else None for m in sizes}
            if any(x is None for x in metas.values()):
                plans.append(None)
                continue
            p = _rec.plan_for({m: x.shape for m, x in metas.items()}, sizes)
            plans.append(p if p[0] is not None else None)
            if p[0] is None:
                why[key] = f"output {i}: {p[1]}"
        if all(p is None for p in plans) and key not in why:
            why[key] = "no tensor output"
        parts[key] = plans
    return _rec.RowPlan(row, parts), why


class OpRecord:
    """One operation of a :class:`Trace`: ``index`` (its position at the first size),
    ``op`` (``"aten.addmm.default"``), ``module`` (``"layers.0"``, or None), ``occurrence``
    (how many times it ran before in that module), ``shapes`` (``{size: [shape of each
    tensor argument]}``), ``dtypes``, ``device``, ``inplace``, ``reduction`` (it has a
    summation order), ``verdict`` (``"equal"``, ``"differs"`` or ``"not compared"``),
    ``differs_at`` (the sizes whose row differs from the first size's) and ``reason``
    (why it was not compared)."""

    def __init__(self, index, call, calls, sizes, verdict, differs_at=(), reason=None,
                 input_device=None):
        self.index = index
        self.op = call.name
        self.module = call.module
        self.occurrence = call.key[2]
        self.key = call.key
        self.shapes = {m: [list(t.shape) for t in c.tensors()] for m, c in calls.items()}
        self.dtypes = sorted({str(t.dtype).replace("torch.", "") for t in call.tensors()})
        devices = sorted({str(t.device) for t in call.tensors()})
        self.device = ", ".join(devices) if devices else None
        self.inplace = call.inplace
        self.reduction = _rep.is_reduction(call.name)
        self.verdict = verdict
        self.differs_at = list(differs_at)
        self.reason = reason
        self.other_device = bool(devices) and input_device is not None and any(
            d != input_device for d in devices)

    def label(self):
        where = "(fn)" if self.module is None else self.module or "(root)"
        return f"{where} {self.op}" + (f" #{self.occurrence}" if self.occurrence else "")

    def to_dict(self):
        return {
            "index": self.index, "op": self.op, "module": self.module,
            "occurrence": self.occurrence, "verdict": self.verdict,
            "differs_at": self.differs_at, "reason": self.reason,
            "reduction": self.reduction, "inplace": self.inplace, "device": self.device,
            "other_device": self.other_device, "dtypes": self.dtypes,
            "shapes": {str(m): s for m, s in self.shapes.items()},
        }

    def __repr__(self):
        flags = "".join([" inplace" if self.inplace else "",
                         " other-device" if self.other_device else ""])
        return f"<OpRecord {self.index}: {self.label()} {self.verdict}{flags}>"


class Divergence:
    """The first operation whose row differs across sizes: ``op``, ``module``,
    ``index`` (the first differing element of its output ``output``, in the output's
    coordinates, the same at every size), ``sizes``, ``trees`` (``{size: fprev.Tree}``:
    that element's summation order at each size, revealed by replaying the operation
    with the shapes it ran with; empty when not revealable), ``not_revealable`` (a
    :class:`NotRevealableError` with the reason, or None), ``how`` (a note on the
    replay) and ``record`` (its :class:`OpRecord`)."""

    def __init__(self, record, output, index, sizes, values, label):
        self.record = record
        self.op = record.op
        self.module = record.module
        self.output = output
        self.index = index
        self.sizes = list(sizes)
        self.values = values  # {size: the element's value}
        self.label = label
        self.trees = {}
        self.not_revealable = None
        self.how = None

    def describe(self):
        """In words: ``"aten.addmm.default in layers.0, element (0, 3): M = 1: ...;
        M = 8: ..."``."""
        where = f" in {self.module}" if self.module else ""
        head = f"{self.op}{where}, element {self.index}"
        if self.not_revealable is not None:
            return f"{head}: not revealable: {self.not_revealable.reason}"
        parts = [f"{self.label} = {m}: {t.describe()}" for m, t in self.trees.items()]
        text = f"{head}: " + "; ".join(parts)
        if len({t.n for t in self.trees.values()}) > 1:
            text += (" (the number of values summed changes with the batch size: the "
                     "element sums over the batch, so it mixes other rows into this one)")
        elif len(set(self.trees.values())) == 1 and len(self.trees) > 1:
            text += (" (one order at every size: the row's inputs to it differ, or its "
                     "kernel does more than sum)")
        return text

    def to_dict(self):
        return {
            "op": self.op, "module": self.module, "output": self.output,
            "index": list(self.index), "sizes": self.sizes,
            "values": {str(m): v for m, v in self.values.items()},
            "trees": {str(m): str(t) for m, t in self.trees.items()},
            "not_revealable": None if self.not_revealable is None
            else self.not_revealable.reason,
            "how": self.how, "describe": self.describe(), "op_index": self.record.index,
        }

    def __repr__(self):
        return f"<Divergence: {self.describe()}>"


class Trace:
    """What :func:`trace` found: ``sizes``, ``row``, ``ops`` (every operation the first
    size ran, an :class:`OpRecord` with its verdict), ``unmatched`` (operations only
    other sizes ran: op, module, occurrence, sizes), ``first`` (the first
    :class:`Divergence`, or None when row ``row`` is bitwise equal at every size) and
    ``to_json()``."""

    def __init__(self, sizes, row, label, ops, first, unmatched=()):
        self.sizes = sizes
        self.row = row
        self.label = label
        self.ops = ops
        self.first = first
        self.unmatched = list(unmatched)

    def describe(self):
        if self.first is None:
            compared = sum(op.verdict != "not compared" for op in self.ops)
            return (f"row {self.row} is bitwise equal at {self.label} = "
                    f"{', '.join(map(str, self.sizes))} in all {compared} compared "
                    f"operations (of {len(self.ops)})")
        return self.first.describe()

    def to_json(self):
        """The trace as JSON text (schema ``fprev.torch.trace/1``)."""
        return json.dumps({
            "schema": "fprev.torch.trace/1", "sizes": self.sizes, "row": self.row,
            "label": self.label,
            "first": None if self.first is None else self.first.to_dict(),
            "ops": [op.to_dict() for op in self.ops],
            "unmatched": self.unmatched,
        }, indent=1)

    def __str__(self):
        return self.describe()

    def __repr__(self):
        return f"<fprev.torch.Trace: {len(self.ops)} operations; {self.describe()}>"


def _module_of(torch, fn):
    return fn if isinstance(fn, torch.nn.Module) else None


def _input_device(torch, made, sizes):
    for x in made[sizes[0]][1]:
        if isinstance(x, torch.Tensor):
            return str(x.device)
    return None


def trace(fn, make_input, sizes=(1, 8), row=0, reveal=True, label="M"):
    """Find the first operation whose row ``row`` changes bits with the batch size.

    ``fn`` is a function or an ``nn.Module``, called as ``fn(*make_input(m))`` (a tuple
    is spread into arguments; anything else is the one argument); ``make_input(m)``
    returns the input for batch size ``m``, whose row ``row`` must be the same at every
    size. fprev runs ``fn`` twice at each size under a ``TorchDispatchMode`` (no
    gradients): once to record every aten operation's shapes, once to keep each
    output's part that belongs to row ``row`` (its slice along the one dimension that
    grows with the batch size; an output that does not grow is compared whole), and
    checks that both runs answered the same bits.

    Operations are matched across sizes by module, name and occurrence. The first whose
    row differs is the :class:`Divergence`; with ``reveal`` (default) its first
    differing element's summation order is revealed at every size by replaying the
    operation on crafted inputs with the shapes, strides and dtypes it ran with (matrix
    products through :func:`fprev.reveal_matmul`, sums and means through
    :func:`fprev.torch.reveal`; other operations get a :class:`NotRevealableError` with
    the reason).

    Raises:
        RowMismatchError: row ``row`` of the inputs differs between sizes.
        NondeterministicModelError: two runs at one size gave different bits.
        TraceInPlaceError: an in-place operation wrote to a parameter or buffer.
        TraceDeviceError: an operation ran on the meta device.

    Use ``torch.set_num_threads(1)`` (or fix the count) where the order should not
    depend on how many threads a size gets: the thread count changes orders too.
    """
    import torch

    sizes = _sizes(sizes, row)
    made = _inputs(torch, make_input, sizes, row)
    module = _module_of(torch, fn)
    runs, outs = {}, {}
    for m in sizes:
        runs[m], outs[m] = _run(torch, fn, made[m][0], module)
    renames = _rec.align(runs, sizes)
    plan, why = _plans(runs, sizes, row)
    parts = {}
    for m in sizes:
        calls, out = _run(torch, fn, made[m][0], module, plan, renames.get(m))
        _check_same(torch, label, m, outs[m], out, runs[m], calls)
        parts[m] = {c.key: c for c in calls}
    t = _compare(torch, runs, parts, plan, why, sizes, row, label, reveal,
                 _input_device(torch, made, sizes))
    t.unmatched = _elsewhere(runs, sizes, {m: {c.key for c in runs[m]} for m in sizes})
    return t


def _compare(torch, runs, parts, plan, why, sizes, row, label, reveal, input_device):
    ops, first = [], None
    for index, call in enumerate(runs[sizes[0]]):
        key = call.key
        calls = {m: parts[m][key] for m in sizes if key in parts[m]}
        if key in why and (key not in plan.parts or all(p is None for p in plan.parts[key])):
            ops.append(OpRecord(index, call, calls, sizes, "not compared", reason=why[key],
                                input_device=input_device))
            continue
        differs, found = [], None
        for m in sizes[1:]:
            for i, p in enumerate(plan.parts[key]):
                if p is None:
                    continue
                a, b = calls[sizes[0]].parts[i], calls[m].parts[i]
                at = _difference(a, b)
                if at is False:
                    continue
                if m not in differs:
                    differs.append(m)
                if found is None:
                    found = (m, i, at, p)
        record = OpRecord(index, call, calls, sizes, "differs" if differs else "equal",
                          differs, reason=why.get(key), input_device=input_device)
        ops.append(record)
        if differs and first is None:
            first = _divergence(torch, record, calls, sizes, found, row, label, reveal)
    return Trace(sizes, row, label, ops, first)


def _difference(a, b):
    """False when the parts are bitwise equal, else the flat index of the first
    differing element within the part (None when only digests were kept)."""
    if a[0] == "batch":
        at = _rec.first_difference(a[1], b[1])
        return False if at is None else at
    if a[1] == b[1]:
        return False
    if a[2] is not None and b[2] is not None:
        return _rec.first_difference(a[2], b[2])
    return None


def _divergence(torch, record, calls, sizes, found, row, label, reveal):
    m, output, at, p = found
    part = calls[sizes[0]].parts[output]
    if at is None:
        index = None
        values = {}
    else:
        shape = tuple(part[1].shape if part[0] == "batch" else part[2].shape)
        local = _rec.unravel(at, shape)
        if p[0] == "batch":
            _, d, c = p
            index = tuple(x + row * c if k == d else x for k, x in enumerate(local))
        else:
            index = local
        values = {}
        for s in sizes:
            t = calls[s].parts[output][1] if part[0] == "batch" else calls[s].parts[output][2]
            values[s] = t.reshape(-1)[at].item()
    div = Divergence(record, output, index, sizes, values, label)
    if index is None:
        div.not_revealable = NotRevealableError(
            record.op, f"its output does not grow with the batch and is over {_rec.SMALL} "
            "elements: only a digest was kept, so no element can be named")
        return div
    if output != 0:
        div.not_revealable = NotRevealableError(
            record.op, f"the first difference is in its output {output}, which fprev does "
            "not replay")
        return div
    if record.other_device:
        div.how = f"replayed on {record.device}"
    if not reveal:
        return div
    for s in sizes:
        replay = _rep.Replay(calls[s], index)
        if replay.kind is None:
            div.not_revealable = NotRevealableError(record.op, replay.reason)
            div.trees = {}
            return div
        div.how = replay.how or div.how
        try:
            div.trees[s] = replay.reveal()
        except (RevealError, _rep._Unfit) as e:
            div.not_revealable = NotRevealableError(
                record.op, f"at {label} = {s} the replay could not be revealed: "
                f"{type(e).__name__}: {e}")
            div.trees = {}
            return div
    return div


def _elsewhere(runs, sizes, by_size, keep=lambda name: True):
    """The operations that ran at some sizes after the first but not at the first, as
    dicts: op, module, occurrence, sizes."""
    seen, out = {c.key for c in runs[sizes[0]]}, []
    for m in sizes[1:]:
        for call in runs[m]:
            if call.key not in seen and keep(call.name):
                seen.add(call.key)
                out.append({"op": call.name, "module": call.module,
                            "occurrence": _rec.occurrence(call.key),
                            "sizes": [s for s in sizes if call.key in by_size[s]]})
    return out


__all__ = [
    "trace",
    "Trace",
    "Divergence",
    "OpRecord",
    "TraceError",
    "RowMismatchError",
    "NondeterministicModelError",
    "TraceInPlaceError",
    "TraceDeviceError",
    "NotRevealableError",
]
