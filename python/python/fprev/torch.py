"""PyTorch glue: reveal ``torch.sum`` and friends on tensors; trace and certify whole
models across batch sizes (:func:`trace` from :mod:`fprev.torch_trace`, :func:`certify`
from :mod:`fprev.torch_certify`).

PyTorch is imported only when a function here is called.
"""

from ._torch_reveal import reveal  # noqa: F401  (re-exported: fprev.torch.reveal)
from .torch_certify import Certificate, OpCertificate, certify  # noqa: F401  (re-exported)
from .torch_trace import (  # noqa: F401  (re-exported: fprev.torch.trace, ...)
    Divergence,
    NondeterministicModelError,
    NotRevealableError,
    OpRecord,
    RowMismatchError,
    Trace,
    TraceDeviceError,
    TraceError,
    TraceInPlaceError,
    trace,
)

__all__ = [
    "reveal",
    "trace",
    "certify",
    "Trace",
    "Divergence",
    "OpRecord",
    "Certificate",
    "OpCertificate",
    "TraceError",
    "RowMismatchError",
    "NondeterministicModelError",
    "TraceInPlaceError",
    "TraceDeviceError",
    "NotRevealableError",
]
