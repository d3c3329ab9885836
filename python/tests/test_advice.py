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


@pytest.mark.parametrize("n", [64, 1024, 2048])
def test_torch_sum_on_bfloat16_is_revealed_in_float32_with_or_without_acc_dtype(n):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    torch.set_num_threads(1)
    cascade = fprev.OrderModel.from_spec(
        "fprev-model/1 torch-cascade width=8 load=2 ilp=4 levels=4 type=f32")
    auto, costs = fprev.torch.reveal(torch.sum, n, dtype=torch.bfloat16, report=True)
    assert costs["acc_dtype"] == "float32" and costs["acc_retry"]
    given = fprev.torch.reveal(torch.sum, n, dtype=torch.bfloat16, acc_dtype="float32")
    assert auto == given == cascade.tree(n)


def test_a_bfloat16_model_of_torch_sum_is_the_cascade_with_paired_loads():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    torch.set_num_threads(1)
    m = fprev.model(torch.sum, range(1, 1025), dtype=torch.bfloat16, proofs=4)
    assert str(m) == "fprev-model/1 torch-cascade width=8 load=2 ilp=4 levels=4 type=f32"
    rng = np.random.default_rng(8)
    for n in [3000, 70_001]:
        x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(torch.bfloat16)
        want = torch.sum(x)
        got = torch.tensor(m.sum(x.float().numpy())).to(torch.bfloat16)
        assert got.item() == want.item(), f"n={n} seed=8"


@pytest.mark.parametrize("n", [4096, 65536])
def test_jnp_sum_under_a_non_plain_ynnpack_fusion_is_refused_before_a_reveal(n):
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    import jax.numpy as jnp

    text = jax.jit(jnp.sum).lower(jax.ShapeDtypeStruct((n,), "float32")).compile().as_text()
    if "ynn" not in text.lower():
        pytest.skip(f"XLA does not hand jnp.sum of {n} values to YNNPACK on this machine")
    with pytest.raises(fprev.NotPlainSummationError) as e:
        fprev.jax.reveal(jnp.sum, n)
    message = str(e.value)
    assert "YNNPACK" in message and "XLA_FLAGS" in message, message
    # the check before the reveal refused (three values among zeros), not the reveal
    assert "among zeros" in message, message


def test_the_ynnpack_check_places_values_where_it_constructs_them():
    from fprev.jax import _placements

    for n in (20, 4096, 65536, 100_003):
        places = _placements(n)
        assert places, n
        for i, j, k in places:
            assert i == 0 < j < k < n, (n, (i, j, k))
            lanes = next(w for w in (16, 8, 32) if j % w == w - 1 and k % w == w - 1)
            assert j % lanes == k % lanes != 0, (n, lanes, (i, j, k))
    assert _placements(3) == []
