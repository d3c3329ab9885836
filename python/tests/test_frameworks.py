"""PyTorch and JAX, when installed (skipped with the reason otherwise)."""

import numpy as np
import pytest

import fprev


def test_torch_sum_float32():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    tree = fprev.torch.reveal(torch.sum, 1024, dtype=torch.float32)
    x = np.random.default_rng(2).standard_normal(1024).astype(np.float32)
    assert tree.replay(x) == float(torch.sum(torch.from_numpy(x)))


def test_torch_sum_float16_accumulated_in_float32():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    tree = fprev.torch.reveal(
        lambda t: torch.sum(t, dtype=torch.float32), 256, dtype=torch.float16,
        acc_dtype=torch.float32, device="cpu",
    )
    assert tree.n == 256


def test_torch_exception_propagates():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")

    def fails(t):
        raise RuntimeError("torch side")

    with pytest.raises(RuntimeError, match="torch side"):
        fprev.torch.reveal(fails, 8, dtype=torch.float32)


def test_jax_numpy_sum():
    pytest.importorskip("jax", reason="JAX is not installed")
    import jax.numpy as jnp

    tree = fprev.jax.reveal(jnp.sum, 512)
    x = np.random.default_rng(4).standard_normal(512).astype(np.float32)
    assert tree.replay(x) == float(jnp.sum(jnp.asarray(x)))
