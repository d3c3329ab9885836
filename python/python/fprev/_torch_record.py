"""Recording a PyTorch model's aten operations at one batch size (for
:mod:`fprev.torch_trace`).

A :class:`Recorder` is a ``TorchDispatchMode``: every aten operation the model runs
passes through it, and it notes the operation's name, the module it ran in (a stack
kept by forward hooks on the model's named submodules), its tensors' shapes, strides,
dtypes and devices, and its non-tensor arguments, enough to replay it on crafted inputs
later. With a :class:`RowPlan` it also keeps the part of each output that belongs to
row ``row`` of the batch (a slice, never the whole tensor), or a digest of an output
that does not scale with the batch size.

An operation's *key* is its module path, its name and how many times that pair ran
before in the same call, ``("layers.0", "aten.addmm.default", 0)``. Sizes may run
different sequences (a batched matmul of one item takes fewer views than of eight), so
each size's sequence of (module, name) is aligned with the first size's
(:func:`align`, a longest-matching-blocks diff) and its keys renamed to the ones they
match; operations left unmatched keep a key of their own.

Not public API: :func:`fprev.torch.trace` and :func:`fprev.torch.certify` use it.
"""

import contextlib
import hashlib

import numpy as np

from ._torch_errors import TraceDeviceError


class TensorMeta:
    """What a replay needs of one tensor argument: shape, strides, dtype, device."""

    __slots__ = ("shape", "stride", "dtype", "device")

    def __init__(self, t):
        self.shape = tuple(t.shape)
        self.stride = tuple(t.stride())
        self.dtype = t.dtype
        self.device = t.device

    def signature(self):
        return (self.shape, self.stride, str(self.dtype), str(self.device))

    def __repr__(self):
        return f"TensorMeta({list(self.shape)}, stride={list(self.stride)}, {self.dtype})"


class OpCall:
    """One aten operation as it ran at one size: ``func`` (the OpOverload, kept for
    replay), ``key``, ``module``, ``args``/``kwargs`` with tensors replaced by
    :class:`TensorMeta`, ``outputs`` (a TensorMeta or None per output), ``inplace``
    and, with a plan, ``parts`` (per output: the row's slice, a digest, or None)."""

    __slots__ = ("func", "name", "key", "module", "args", "kwargs", "outputs", "inplace",
                 "parts")

    def __init__(self, func, key, module, args, kwargs, outputs, inplace):
        self.func = func
        self.name = str(func)
        self.key = key
        self.module = module
        self.args = args
        self.kwargs = kwargs
        self.outputs = outputs
        self.inplace = inplace
        self.parts = None

    def tensors(self):
        """The TensorMeta of every tensor argument, in order."""
        out = []
        for a in list(self.args) + list(self.kwargs.values()):
            if isinstance(a, TensorMeta):
                out.append(a)
            elif isinstance(a, (list, tuple)):
                out.extend(x for x in a if isinstance(x, TensorMeta))
        return out

    def signature(self):
        """Everything a kernel sees but the values: equal signatures, one call."""
        def sig(a):
            if isinstance(a, TensorMeta):
                return ("T",) + a.signature()
            if isinstance(a, (list, tuple)):
                return tuple(sig(x) for x in a)
            return repr(a)

        return (self.name, sig(tuple(self.args)), sig(tuple(sorted(self.kwargs.items()))))


class RowPlan:
    """Which part of each output belongs to the row: per op key, per output, one of
    ``("batch", dim, c)`` (the row is ``narrow(dim, row * c, c)``), ``("shared",)``
    (the output does not scale with the batch: compared whole, through a digest) or
    ``None`` (not compared)."""

    def __init__(self, row, parts):
        self.row = row
        self.parts = parts  # key -> [plan per output]


# an output this small is kept whole when it does not scale with the batch (to name the
# element that differs); larger ones only as a digest
SMALL = 1 << 16


def bits(t):
    """The bytes of ``t`` as a flat uint8 tensor (bitwise comparison: NaNs and signed
    zeros compare by their bits)."""
    return t.detach().reshape(-1).contiguous().view(__import__("torch").uint8)


def digest(t):
    return hashlib.blake2b(bits(t).cpu().numpy().tobytes(), digest_size=16).hexdigest()


def _meta(torch, a):
    if isinstance(a, torch.Tensor):
        return TensorMeta(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_meta(torch, x) for x in a)
    return a


def _flat_outputs(torch, out):
    if isinstance(out, (list, tuple)):
        return list(out)
    return [out]


class Recorder:
    """Builds the dispatch mode and the module hooks for one call of the model."""

    def __init__(self, module=None, plan=None, on_inplace=None, rename=None):
        self.module = module
        self.plan = plan
        self.rename = rename  # own key -> the first size's key it was aligned with
        self.on_inplace = on_inplace
        self.calls = []
        self._stack = []
        self._counts = {}
        self._local = set()  # storages created within this call (or its inputs' copies)

    def own(self, tensors):
        """Mark ``tensors`` (the call's inputs) as this call's: mutating them is fine."""
        import torch

        for t in tensors:
            if isinstance(t, torch.Tensor):
                self._local.add(_storage(t))

    @contextlib.contextmanager
    def active(self):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return recorder._dispatch(func, args, kwargs or {})

        handles = []
        if self.module is not None:
            for name, sub in self.module.named_modules():
                handles.append(sub.register_forward_pre_hook(self._enter(name)))
                handles.append(sub.register_forward_hook(self._leave(name), always_call=True))
        try:
            with torch.no_grad(), Mode():
                yield self
        finally:
            for h in handles:
                h.remove()

    def _enter(self, name):
        def hook(module, args):
            self._stack.append(name)

        return hook

    def _leave(self, name):
        def hook(module, args, output):
            if self._stack and self._stack[-1] == name:
                self._stack.pop()

        return hook

    def _dispatch(self, func, args, kwargs):
        import torch

        schema = func._schema
        mutated = []
        for i, a in enumerate(schema.arguments):
            info = a.alias_info
            if info is None or not info.is_write:
                continue
            value = args[i] if i < len(args) else kwargs.get(a.name)
            if isinstance(value, torch.Tensor):
                mutated.append((a.name, value))
        module = self._stack[-1] if self._stack else None
        name = str(func)
        for arg, t in mutated:
            if _storage(t) not in self._local and self.on_inplace is not None:
                self.on_inplace(name, module, arg, t)
        for t in _tensors(torch, args, kwargs):
            if t.device.type == "meta":
                raise TraceDeviceError(
                    f"{name} (module {module or '(none)'}) runs on the meta device: its "
                    "tensors hold no values to compare or replay; run the model on the CPU "
                    "or a GPU"
                )
        out = func(*args, **kwargs)
        outs = _flat_outputs(torch, out)
        for o in outs:
            if isinstance(o, torch.Tensor):
                self._local.add(_storage(o))
        count = self._counts.get((module, name), 0)
        self._counts[(module, name)] = count + 1
        key = (module or "", name, count)
        if self.rename is not None:
            key = self.rename.get(key, key)
        call = OpCall(
            func, key, module, _meta(torch, tuple(args)),
            {k: _meta(torch, v) for k, v in kwargs.items()},
            [TensorMeta(o) if isinstance(o, torch.Tensor) else None for o in outs],
            bool(mutated),
        )
        if self.plan is not None:
            call.parts = self._parts(key, outs)
        self.calls.append(call)
        return out

    def _parts(self, key, outs):
        import torch

        plans = self.plan.parts.get(key)
        parts = []
        for i, o in enumerate(outs):
            p = plans[i] if plans is not None and i < len(plans) else None
            if p is None or not isinstance(o, torch.Tensor):
                parts.append(None)
            elif p[0] == "batch":
                _, dim, c = p
                parts.append(("batch", o.detach().narrow(dim, self.plan.row * c, c).clone()))
            else:
                small = o.detach().clone() if o.numel() <= SMALL else None
                parts.append(("shared", digest(o), small))
        return parts


def _storage(t):
    try:
        return (t.device.type, t.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, ...)
        return (t.device.type, id(t))


def _tensors(torch, args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (x for x in a if isinstance(x, torch.Tensor))


def align(runs, sizes):
    """``{size: {own key: aligned key}}`` for every size after the first. Each size's
    keys are matched against the first size's with difflib's SequenceMatcher (no junk
    heuristic) in two passes: whole keys first (so the n-th addmm of a module meets the
    n-th, as a per-row loop's row 0 does), then, inside the stretches left unmatched,
    (module, name) alone (a size that runs an extra view shifts the later views'
    counts). Unmatched operations get ``("~", module, name, count)``, the same at every
    size where they run. The calls of ``runs`` are renamed in place."""
    import difflib

    base = runs[sizes[0]]
    renames = {}
    for m in sizes[1:]:
        calls = runs[m]
        rename = {c.key: ("~",) + c.key for c in calls}
        whole = difflib.SequenceMatcher(
            None, [c.key for c in base], [c.key for c in calls], autojunk=False)
        for tag, i1, i2, j1, j2 in whole.get_opcodes():
            if tag == "equal":
                for t in range(i2 - i1):
                    rename[calls[j1 + t].key] = base[i1 + t].key
            elif tag == "replace":
                names = difflib.SequenceMatcher(
                    None, [(c.key[0], c.name) for c in base[i1:i2]],
                    [(c.key[0], c.name) for c in calls[j1:j2]], autojunk=False)
                for i, j, n in names.get_matching_blocks():
                    for t in range(n):
                        rename[calls[j1 + j + t].key] = base[i1 + i + t].key
        for c in calls:
            c.key = rename[c.key]
        renames[m] = rename
    return renames


def occurrence(key):
    """How many times the key's (module, name) ran before it, at its own size."""
    return key[3] if key[0] == "~" else key[2]


def plan_for(shapes, sizes):
    """Which part of an output is the row's, from its shapes at every size
    (``{size: shape}``): ``("batch", dim, c)`` when exactly one dimension changes and
    is ``c`` times the size at every size, ``("shared",)`` when no dimension changes,
    else ``(None, why)``."""
    first = shapes[sizes[0]]
    if any(len(shapes[s]) != len(first) for s in sizes):
        return (None, "its rank changes with the batch size")
    dims = [d for d in range(len(first)) if any(shapes[s][d] != first[d] for s in sizes)]
    if not dims:
        return ("shared",)
    if len(dims) > 1:
        return (None, f"dimensions {dims} change with the batch size")
    d = dims[0]
    c, rest = divmod(first[d], sizes[0]) if sizes[0] else (0, 1)
    if rest or c == 0 or any(shapes[s][d] != c * s for s in sizes):
        got = ", ".join(f"{shapes[s][d]} at {s}" for s in sizes)
        return (None, f"dimension {d} does not grow with the batch size ({got})")
    return ("batch", d, c)


def first_difference(a, b):
    """The flat index of the first element whose bits differ between equally shaped
    ``a`` and ``b``, or None when they are bitwise equal."""
    x, y = bits(a), bits(b)
    if x.numel() != y.numel():
        return 0
    differ = (x != y).nonzero()
    if differ.numel() == 0:
        return None
    return int(differ[0, 0]) // a.element_size()


def unravel(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()
