"""``fprev.torch.reveal``: the summation tree of a function of one PyTorch tensor. In a
module of its own so that the replay of traced operations (``_torch_replay``) reveals
with it without importing the public ``fprev.torch``, which imports the tracer. Not
public API: ``fprev.torch`` re-exports it.
"""

import numpy as np

from . import _buffer, _dtypes, _flag, _formats, _fprev, _run, _size

_TORCH_NAMES = {
    "torch.float64": "float64",
    "torch.float32": "float32",
    "torch.float16": "float16",
    "torch.bfloat16": "bfloat16",
}


def _name(dtype):
    if dtype is None:
        return None
    key = str(dtype)
    if key in _TORCH_NAMES:
        return _TORCH_NAMES[key]
    return _dtypes.name(dtype)


def reveal(
    fn,
    n,
    dtype="float32",
    acc_dtype=None,
    device="cpu",
    algorithm="fprev",
    hint=None,
    verify=True,
    seed=None,
    report=False,
):
    """Reveal the summation tree of ``fn(t) -> scalar tensor`` on a 1-D tensor.

    On the CPU, ``fn`` gets a tensor that shares memory with fprev's probe buffer (no
    copy per call); on another device, a copy of it moved there (``t.to(device)``)
    per call. ``dtype`` is a torch dtype or a name; other arguments as for
    :func:`fprev.reveal`.

    >>> import torch, fprev
    >>> t = fprev.torch.reveal(torch.sum, 16, dtype=torch.float32)
    >>> t.n
    16
    """
    import torch

    n = _size(n)
    report = _flag(report, "report")
    operands, acc = _formats(_name(dtype), _name(acc_dtype))
    if operands == "bfloat16":
        # raw 16-bit storage viewed as torch.bfloat16: needs no ml_dtypes
        _fprev.check_size(n, operands, algorithm)
        buf = np.empty(n, dtype=np.uint16)
        tensor = torch.from_numpy(buf).view(torch.bfloat16)
    else:
        buf, _ = _buffer(n, operands, algorithm)
        tensor = torch.from_numpy(buf)
    device = torch.device(device)
    if device.type == "cpu":
        call, args = fn, (tensor,)
    else:

        def call(t):
            return fn(t.to(device))

        args = (tensor,)
    tree, costs = _run(call, args, buf, n, operands, acc, algorithm, hint, verify, seed,
                       widen=acc_dtype is None)
    return (tree, costs) if report else tree
