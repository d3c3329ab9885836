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


def test_torch_sum_float16_is_revealed_with_a_float32_accumulator():
    # PyTorch adds float16 in float32 on the CPU and rounds once: order-independent to
    # float16 probes, so the reveal is retried with a float32 accumulator
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tree, report = fprev.torch.reveal(torch.sum, 256, dtype=torch.float16, report=True)
        assert report["acc_dtype"] == "float32", report
        assert report["acc_retry"].startswith("order-independent in float16"), report
        rng = np.random.default_rng(5)
        for _ in range(8):
            with np.errstate(under="ignore"):  # values and sums in float16's subnormals
                x = rng.standard_normal(256).astype(np.float16)
                got = float(np.float16(tree.replay(x.astype(np.float32))))
            assert got == float(torch.sum(torch.from_numpy(x)))
    finally:
        torch.set_num_threads(threads)


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
