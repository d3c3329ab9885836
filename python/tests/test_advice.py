"""Errors that say what happened and what to do instead (the papercuts of issue 49)."""

import math

import numpy as np
import pytest

import fprev


def test_a_function_that_adds_noise_is_reported_as_nondeterministic():
    rng = np.random.default_rng(5)

    def noisy(x):
        return float(np.sum(x)) + rng.standard_normal() * 1e-3

    with pytest.raises(fprev.NondeterministicError, match="answers differ for the same input"):
        fprev.reveal(noisy, 16, dtype="float64")


def test_order_independence_advice_names_the_python_argument():
    with pytest.raises(fprev.OrderIndependentError) as e:
        fprev.reveal(lambda x: math.fsum(x.tolist()), 16, dtype="float64")
    assert "accept_flat=True" in str(e.value)
    assert "Reveal::" not in str(e.value)


def test_a_pytorch_function_passed_to_reveal_points_at_fprev_torch():
    def torch_like(x):
        raise AssertionError("never called: refused before")

    torch_like.__module__ = "torch"
    with pytest.raises(TypeError, match=r"fprev\.torch\.reveal"):
        fprev.reveal(torch_like, 8)


def test_torch_sum_and_torch_dtypes_passed_to_reveal_point_at_fprev_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    with pytest.raises(TypeError, match=r"fprev\.torch\.reveal"):
        fprev.reveal(torch.sum, 8)
    with pytest.raises(TypeError, match=r"fprev\.torch\.reveal"):
        fprev.reveal(np.sum, 8, dtype=torch.float32)


def test_reveals_docstring_keeps_the_fused_report_keys_out():
    doc = fprev.reveal.__doc__
    assert "accumulator_cut" not in doc and "tensor-cores.md" in doc
    assert len(doc.splitlines()) < 50
