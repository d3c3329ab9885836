"""Replaying a recorded aten operation on crafted inputs, to reveal the summation order
behind one of its output elements (for :mod:`fprev.torch_trace`).

An operation is replayed with the shapes, strides, dtypes, device and non-tensor
arguments it ran with, on tensors fprev fills: the kernel PyTorch picks for the replay
is the one it picked in the model. Two families can be replayed:

- matrix products (``aten.mm``, ``aten.addmm``, ``aten.bmm``, ``aten.baddbmm``): the
  element ``(i, j)`` (``(b, i, j)``) sums ``K`` products; revealed with
  :func:`fprev.reveal_matmul` (every element at once), the bias set to zero;
- sums (``aten.sum``, ``aten.mean``, over some or all dimensions): the element sums the
  values of its fiber along the reduced dimensions, revealed with
  :func:`fprev.torch.reveal`; ``aten.mean`` is replayed as ``aten.sum`` with the same
  arguments (ATen's CPU ``mean`` is that sum, then a division, which does not round
  back to the sum fprev reads).

Everything else is not revealable, with the reason (:class:`Replay` ``.reason``).

Not public API.
"""

import numpy as np

from . import _dtypes
from ._torch_record import TensorMeta
from ._torch_reveal import reveal as torch_reveal

MATMULS = {
    "aten.mm.default": (0, 1, None),
    "aten.addmm.default": (1, 2, 0),
    "aten.bmm.default": (0, 1, None),
    "aten.baddbmm.default": (1, 2, 0),
}
SUMS = {
    "aten.sum.dim_IntList",
    "aten.sum.default",
    "aten.mean.dim",
    "aten.mean.default",
}
# reductions fprev sees but cannot probe, and why
_WHY = {
    "aten._softmax.default": "softmax sums exponentials, which are positive: fprev's "
    "probes need a value and its negation in one sum, which no input of exp gives",
    "aten._log_softmax.default": "log_softmax sums exponentials, which are positive: "
    "fprev's probes need a value and its negation in one sum, which no input of exp gives",
    "aten.logsumexp.default": "logsumexp sums exponentials, which are positive: fprev's "
    "probes need a value and its negation in one sum",
    "aten.native_layer_norm.default": "layer_norm's mean and variance come from a "
    "Welford-style moments kernel, not a plain sum fprev can read from its outputs",
    "aten._fused_rms_norm.default": "rms_norm returns 1/sqrt of its sum of squares, "
    "which does not give the sum back exactly",
    "aten.linalg_vector_norm.default": "a norm returns the root of its sum of squares, "
    "which does not give the sum back exactly",
    "aten._addmm_activation.default": "it applies an activation (relu or gelu) to its "
    "sums, which bends the probes' negative values",
    "aten._native_multi_head_attention.default": "a fused attention kernel: its sums "
    "pass through a softmax, whose exponentials are positive",
    "aten._scaled_dot_product_flash_attention_for_cpu.default": "a fused attention "
    "kernel: its sums pass through a softmax, whose exponentials are positive",
    "aten._scaled_dot_product_efficient_attention.default": "a fused attention kernel: "
    "its sums pass through a softmax, whose exponentials are positive",
    "aten._scaled_dot_product_flash_attention.default": "a fused attention kernel: its "
    "sums pass through a softmax, whose exponentials are positive",
    "aten._scaled_dot_product_cudnn_attention.default": "a fused attention kernel: its "
    "sums pass through a softmax, whose exponentials are positive",
}
# operations that reduce (and so have a summation order), revealable or not
REDUCTIONS = set(MATMULS) | SUMS | set(_WHY) | {
    "aten.mv.default", "aten.addmv.default", "aten.dot.default", "aten.vdot.default",
    "aten.addbmm.default", "aten.var.correction", "aten.var_mean.correction",
    "aten.std.correction", "aten.std_mean.correction", "aten.cumsum.default",
    "aten.nansum.default", "aten.norm.Scalar", "aten.norm.ScalarOpt_dim",
    "aten.nll_loss_forward.default", "aten._transformer_encoder_layer_fwd.default",
    "aten.convolution.default", "aten.native_group_norm.default",
    "aten.native_batch_norm.default", "aten._native_batch_norm_legit.default",
    "aten._native_batch_norm_legit_no_training.default",
}


def _operands(name):
    """The positions of a matrix product's tensor arguments: left, right, bias."""
    a_at, b_at, bias_at = MATMULS[name]
    return (a_at, b_at) + ((bias_at,) if bias_at is not None else ())


def _zeroed(call):
    """A matrix product's recorded arguments with its operands (bias too) replaced by
    zero tensors of the same layout: ``(args, left, right)``."""
    a_at, b_at, _ = MATMULS[call.name]
    args = list(call.args)
    for i in _operands(call.name):
        args[i] = _zeros(args[i])
    return args, args[a_at], args[b_at]


def is_reduction(name):
    return name in REDUCTIONS


def _torch():
    import torch

    return torch


def dtype_name(dtype):
    """A torch dtype's fprev name (``torch.float32`` -> ``"float32"``), or None."""
    return {
        "torch.float64": "float64",
        "torch.float32": "float32",
        "torch.float16": "float16",
        "torch.bfloat16": "bfloat16",
    }.get(str(dtype))


def _acc(operands):
    # PyTorch adds 16-bit products and values in float32, on the CPU and in cuBLAS
    return "float32" if operands in ("float16", "bfloat16") else None


def _bind(call):
    """``{argument name: value}`` of a recorded call, defaults filled in."""
    out = {}
    for i, a in enumerate(call.func._schema.arguments):
        if i < len(call.args):
            out[a.name] = call.args[i]
        elif a.name in call.kwargs:
            out[a.name] = call.kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
        else:
            out[a.name] = None
    return out


def _zeros(meta):
    """A zero tensor laid out as ``meta`` (shape, strides, dtype, device)."""
    torch = _torch()
    # through a flat buffer: a broadcast layout (stride 0) cannot be zeroed in place
    if any(s == 0 for s in meta.shape):
        extent = 0
    else:
        extent = 1 + sum((s - 1) * st for s, st in zip(meta.shape, meta.stride))
    flat = torch.zeros(extent, dtype=meta.dtype, device=meta.device)
    return flat.as_strided(meta.shape, meta.stride)


def write(dst, values):
    """Copy the NumPy array ``values`` (an fprev dtype, bfloat16 included) into the
    tensor view ``dst``, without a torch warning about read-only arrays."""
    torch = _torch()
    if dst.dtype == torch.bfloat16:
        raw = np.asarray(values).view(np.int16)
        target = dst.view(torch.int16)
    else:
        raw = np.asarray(values)
        target = dst
    if target.device.type == "cpu":
        target.numpy()[...] = raw.reshape(target.shape)
    else:
        target.copy_(torch.from_numpy(np.array(raw).reshape(target.shape)))


def _scalar(t):
    torch = _torch()
    return float(t.to(torch.float64).cpu()) if t.dtype != torch.float64 else float(t.cpu())


class Replay:
    """How one recorded call's element ``index`` is revealed: ``kind`` is
    ``"matmul"``, ``"sum"`` or None (``reason`` says why not); ``n`` the number of
    values summed; ``operands`` the fprev dtype name; ``how`` a note."""

    def __init__(self, call, index):
        self.call = call
        self.index = tuple(index)
        self.kind = None
        self.reason = None
        self.how = None
        self.n = None
        self.operands = None
        name = call.name
        try:
            if name in MATMULS:
                self._matmul()
            elif name in SUMS:
                self._sum()
            elif name in _WHY:
                self.reason = _WHY[name]
            elif name in REDUCTIONS:
                self.reason = f"fprev does not replay {name} yet"
            else:
                self.reason = (f"{name} is not a matrix product or a sum: fprev replays "
                               "aten.mm, addmm, bmm, baddbmm, sum and mean")
        except _Unfit as e:
            self.kind, self.reason = None, str(e)

    # -- matrix products ------------------------------------------------------------
    def _matmul(self):
        a_at, b_at, bias_at = MATMULS[self.call.name]
        a, b = self.call.args[a_at], self.call.args[b_at]
        if not (isinstance(a, TensorMeta) and isinstance(b, TensorMeta)):
            raise _Unfit("its operands were not tensors")
        operands = dtype_name(a.dtype)
        if operands is None or dtype_name(b.dtype) != operands:
            raise _Unfit(f"operands of {a.dtype} and {b.dtype}: fprev replays float64, "
                         "float32, float16 and bfloat16 products of one dtype")
        alpha = _bind(self.call).get("alpha", 1)
        if alpha is not None and alpha != 1:
            raise _Unfit(f"alpha = {alpha!r} scales the products: fprev replays "
                         "products of alpha = 1")
        self.kind, self.operands = "matmul", operands
        self.batched = len(a.shape) == 3
        self.m, self.k = a.shape[-2], a.shape[-1]
        self.cols = b.shape[-1]
        self.n = self.k
        if bias_at is not None:
            self.how = "bias set to zero"

    def _matmul_fn(self):
        """``fn(a, b)`` for :func:`fprev.reveal_matmul`: the recorded call on ``a`` and
        ``b`` laid out as recorded (batch ``index[0]`` of a batched product)."""
        call = self.call
        a_at, b_at, bias_at = MATMULS[call.name]
        args = list(call.args)
        tensors = {i: _zeros(args[i]) for i in _operands(call.name)}
        a_t, b_t = tensors[a_at], tensors[b_at]
        if self.batched:
            a_t, b_t = a_t[self.index[0]], b_t[self.index[0]]
        for i, t in tensors.items():
            args[i] = t
        kwargs = dict(call.kwargs)
        func = call.func
        batch = self.index[0] if self.batched else None

        written = [None]  # the right operand as last written: fprev changes it rarely

        def fn(a, b):
            write(a_t, a)
            # comparing is ten times cheaper than writing a transposed operand again
            if written[0] is None or not np.array_equal(b, written[0]):
                write(b_t, b)
                written[0] = np.array(b)
            out = func(*args, **kwargs)
            if batch is not None:
                out = out[batch]
            return out.to(_torch().float64).cpu().numpy()

        return fn

    def reveal_matmul(self):
        """The :class:`fprev.Orders` of every element (of batch ``index[0]``)."""
        from . import reveal_matmul

        return reveal_matmul(self._matmul_fn(), self.m, self.cols, self.k,
                             dtype=self.operands, acc_dtype=_acc(self.operands))

    # -- sums -------------------------------------------------------------------------
    def _sum(self):
        call = self.call
        bound = _bind(call)
        x = bound["self"]
        if not isinstance(x, TensorMeta):
            raise _Unfit("its input was not a tensor")
        operands = dtype_name(x.dtype)
        if operands is None:
            raise _Unfit(f"an input of {x.dtype}: fprev replays floating-point sums")
        rank = len(x.shape)
        dims = bound.get("dim")
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = list(range(rank))
        elif isinstance(dims, int):
            dims = [dims]
        dims = sorted({d % rank if rank else 0 for d in dims})
        keepdim = bool(bound.get("keepdim") or False)
        coords = list(self.index)
        where = []
        for d in range(rank):
            if d in dims:
                where.append(slice(None))
                if keepdim:
                    coords.pop(0)
            else:
                where.append(coords.pop(0))
        if any(x.stride[d] == 0 and x.shape[d] > 1 for d in dims):
            raise _Unfit("its input is broadcast along the reduced dimension (stride 0)")
        self.kind, self.operands = "sum", operands
        self.where = tuple(where)
        self.fiber_shape = tuple(x.shape[d] for d in dims)
        self.n = int(np.prod(self.fiber_shape, dtype=np.int64)) if self.fiber_shape else 1
        if call.name.startswith("aten.mean"):
            self.how = ("replayed as aten.sum with the same arguments (ATen's CPU mean "
                        "is that sum, then a division)")

    def _sum_fn(self, numpy_input):
        torch = _torch()
        call = self.call
        func = call.func
        if call.name.startswith("aten.mean"):
            func = (torch.ops.aten.sum.dim_IntList if call.name == "aten.mean.dim"
                    else torch.ops.aten.sum.default)
        args = list(call.args)
        x = _zeros(args[0])
        args[0] = x
        fiber = x[self.where]
        kwargs = dict(call.kwargs)
        index = self.index
        shape = self.fiber_shape

        if numpy_input:
            def fn(v):
                write(fiber, np.asarray(v).reshape(shape))
                return _scalar(func(*args, **kwargs)[index])
        else:
            def fn(t):
                fiber.copy_(t.reshape(shape))
                return func(*args, **kwargs)[index]

        return fn

    # -- both -------------------------------------------------------------------------
    def reveal(self):
        """The tree of element ``index``."""
        if self.kind == "matmul" and _acc(self.operands) is not None:
            # a 16-bit product accumulated in float32 and rounded once: fprev.reveal's
            # float32 retry reads it (reveal_matmul's checks compare in float32)
            from . import reveal

            return reveal(self.probe_fn(), self.n, dtype=self.operands)
        if self.kind == "matmul":
            orders = self.reveal_matmul()
            i, j = self.index[-2], self.index[-1]
            for tree, elements in orders.groups:
                if (i, j) in elements:
                    return tree
            raise _Unfit(f"fprev.reveal_matmul left element {(i, j)} unresolved")
        if self.kind == "sum":
            torch = _torch()
            t_dtype = getattr(torch, self.operands)
            device = self.call.args[0].device
            fn = self._sum_fn(numpy_input=False)
            if device.type == "cpu":
                return torch_reveal(fn, self.n, dtype=t_dtype)
            return torch_reveal(fn, self.n, dtype=t_dtype, device=device)
        raise _Unfit(self.reason)

    def probe_fn(self, row_check=None):
        """``fn(x) -> float`` for :func:`fprev.sweep`: the element's sum of the values
        ``x`` (a NumPy array of ``n`` values). For a matrix product ``x`` goes in row
        ``index[-2]`` of the left operand, ones in the right; ``row_check(ok)`` is told
        whether every element of that row answered the same bits."""
        if self.kind == "sum":
            return self._sum_fn(numpy_input=True)
        if self.kind != "matmul":
            raise _Unfit(self.reason)
        torch = _torch()
        call = self.call
        args, a_t, b_t = _zeroed(call)
        b_t.fill_(1)
        if self.batched:
            a_t = a_t[self.index[0]]
        i = self.index[-2]
        row_of_a = a_t[i]
        kwargs = dict(call.kwargs)
        func = call.func
        lead = self.index[:-2]
        column = self.index[-1]
        operands = np.dtype(_dtypes.numpy_dtype(self.operands))

        def fn(x):
            write(row_of_a, np.asarray(x, dtype=operands))
            out = func(*args, **kwargs)[lead + (i,)]
            if row_check is not None:
                row = out.view(torch.int16 if out.element_size() == 2 else (
                    torch.int32 if out.element_size() == 4 else torch.int64))
                row_check(bool((row == row[0]).all()))
            return _scalar(out[column])

        return fn


def lanes_fn(replay, lanes):
    """``rows(x)`` for ``fprev._reveal_rows``: a matrix product's row ``index[-2]`` with
    ones in the left operand and lane ``l``'s values in column ``l`` of the right one,
    so one call answers ``lanes`` sums (those of elements ``(i, 0..lanes-1)``). The
    products are the values themselves (times 1, exact), added in the kernel's order
    for each element; the caller checks that every lane sums as element ``(i, j)``."""
    torch = _torch()
    call = replay.call
    args, a_t, b_t = _zeroed(call)
    if replay.batched:
        a_t, b_t = a_t[replay.index[0]], b_t[replay.index[0]]
    i = replay.index[-2]
    a_t[i].fill_(1)
    columns = b_t[:, :lanes]
    kwargs = dict(call.kwargs)
    func = call.func
    lead = replay.index[:-2]

    def rows(x):
        write(columns, np.asarray(x).T)
        out = func(*args, **kwargs)[lead + (i,)][:lanes]
        return out.to(torch.float64).cpu().numpy()

    return rows


class _Unfit(Exception):
    """The recorded call cannot be replayed (the message says why)."""
