"""Bad callables give exceptions: the callable's own, or a RevealError subclass."""

import numpy as np
import pytest

import fprev


class Boom(Exception):
    pass


def test_exception_from_the_callable_propagates_with_its_traceback():
    def fails(x):
        raise Boom("from the callable")

    with pytest.raises(Boom, match="from the callable") as info:
        fprev.reveal(fails, 16)
    # the traceback reaches into the callable
    assert any(entry.name == "fails" for entry in info.traceback)


def test_exception_after_some_probes():
    calls = []

    def fails_later(x):
        calls.append(1)
        if len(calls) == 10:
            raise KeyError("tenth call")
        return np.sum(x)

    with pytest.raises(KeyError, match="tenth call"):
        fprev.reveal(fails_later, 64)
    assert len(calls) == 10  # nothing is called after the failure


def test_exception_from_a_matmul_propagates():
    def fails(a, b):
        raise Boom("matmul")

    with pytest.raises(Boom, match="matmul"):
        fprev.reveal_matmul(fails, 4, 4, 8)


def test_nan_answer():
    with pytest.raises(fprev.NonFiniteError, match="returned NaN"):
        fprev.reveal(lambda x: np.float32("nan"), 8)


def test_wrong_shape_answer():
    with pytest.raises(fprev.TargetError, match=r"array of shape \(2,\), not a scalar"):
        fprev.reveal(lambda x: x[:2], 8)
    with pytest.raises(fprev.TargetError, match=r"array of shape \(1,\), not a scalar"):
        fprev.reveal(lambda x: np.sum(x, keepdims=True), 8)


def test_non_scalar_answer():
    with pytest.raises(fprev.TargetError, match="returned a str, not a number"):
        fprev.reveal(lambda x: "12", 8)
    with pytest.raises(fprev.TargetError, match="returned a NoneType, not a number"):
        fprev.reveal(lambda x: None, 8)


def test_matmul_wrong_shape():
    with pytest.raises(ValueError, match=r"returned shape \(4, 3\), expected \(4, 4\)"):
        fprev.reveal_matmul(lambda a, b: (a @ b)[:, :3], 4, 4, 8)


def test_not_a_sum():
    with pytest.raises(fprev.OutOfRangeError, match="not a summation of its inputs"):
        fprev.reveal(np.max, 8)
    with pytest.raises(fprev.ConstantAnswersError):
        fprev.reveal(lambda x: 3.0, 8)


def test_every_error_is_a_reveal_error():
    for name in [
        "InvalidSizeError", "OutOfMemoryError", "SingleInputError", "ConstantAnswersError",
        "DataDependentError", "TooLargeError", "NonFiniteError", "NotIntegerError",
        "OutOfRangeError", "InconsistentError", "NondeterministicError",
        "OrderIndependentError", "NotPlainSummationError", "PrecisionTooLowError",
        "TargetError", "NaiveError",
    ]:
        cls = getattr(fprev, name)
        assert issubclass(cls, fprev.RevealError), name
        assert cls.__module__ == "fprev"


def test_sizes():
    with pytest.raises(fprev.InvalidSizeError, match="nothing to sum"):
        fprev.reveal(np.sum, 0)
    with pytest.raises(fprev.InvalidSizeError, match="negative"):
        fprev.reveal(np.sum, -1)
    with pytest.raises(fprev.OutOfMemoryError, match="memory budget"):
        fprev.reveal(np.sum, 1 << 40)
    with pytest.raises(TypeError, match="n must be an integer"):
        fprev.reveal(np.sum, 8.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unsupported dtype"):
        fprev.reveal(np.sum, 8, dtype="int32")
    with pytest.raises(ValueError, match="unknown algorithm"):
        fprev.reveal(np.sum, 8, algorithm="magic")
    with pytest.raises(ValueError, match="seed"):
        fprev.reveal(np.sum, 8, seed=-1)


def test_keyboard_interrupt_style_errors_are_not_swallowed():
    def interrupted(x):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fprev.reveal(interrupted, 8)


def test_order_independent_sum_as_one_node():
    exact = lambda x: fprev.exact.sum(x)  # noqa: E731 (the same bits in any order)
    with pytest.raises(fprev.OrderIndependentError, match="order-independent"):
        fprev.reveal(exact, 8, dtype="float64")
    tree = fprev.reveal(exact, 8, dtype="float64", accept_flat=True)
    assert str(tree) == "(0+1+2+3+4+5+6+7)"
