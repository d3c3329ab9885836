"""The errors of :func:`fprev.torch.trace` and :func:`fprev.torch.certify`, in a module
of their own so that the recording, the replay and both entry points raise them without
importing each other. Not public API: ``fprev.torch`` re-exports them.
"""

from ._fprev import NondeterministicError, RevealError


class TraceError(RevealError):
    """Why a model could not be traced or certified (the base of the errors below)."""


class RowMismatchError(TraceError):
    """``make_input(m)``'s row ``row`` is not the same at every size: the sizes would
    not be computing the same request."""


class NondeterministicModelError(TraceError, NondeterministicError):
    """The model gave two different answers at one batch size: bits that differ across
    sizes would say nothing about the batch."""


class TraceInPlaceError(TraceError):
    """An in-place operation wrote to a tensor that outlives the call (a parameter, a
    buffer, a global): the runs at each size would not start from the same state.
    In-place operations on the call's own tensors (``relu_``, ``add_`` of a temporary)
    are traced as usual and marked ``inplace``."""


class TraceDeviceError(TraceError):
    """An operation ran where fprev cannot read its values (the ``meta`` device)."""


class NotRevealableError(TraceError):
    """The operation cannot be replayed to reveal its order; ``reason`` says why.
    Not raised by :func:`trace`: a :class:`Divergence` carries it as
    ``.not_revealable``."""

    def __init__(self, op, reason):
        super().__init__(f"{op} is not revealable: {reason}")
        self.op = op
        self.reason = reason
