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
        # up to 1024 values float16 probes see an order-independent sum; from 1025 on
        # they see the float32 register's tree (a float16 tree that does not replay
        # before, never the one-node "fused" tree it once returned at 1536 and 2048)
        for n, why in [(256, "order-independent in float16"),
                       (2048, "the float16 probes' tree sums in float32"),
                       (3000, "the float16 probes' tree sums in float32")]:
            tree, report = fprev.torch.reveal(torch.sum, n, dtype=torch.float16, report=True)
            assert report["acc_dtype"] == "float32", report
            assert report["acc_retry"].startswith(why), report
            assert tree.stats()["max_arity"] == 2, tree
            rng = np.random.default_rng(5)
            for _ in range(8):
                with np.errstate(under="ignore"):  # values and sums in float16's subnormals
                    x = rng.standard_normal(n).astype(np.float16)
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


def test_jax_sum_is_xlas_tree_reduction_proved_from_the_table():
    # XLA's CPU compiler sums a 1-D array in windows of 32 (TreeReductionRewriter), an
    # order fprev's table holds: proved with probe sets, never searched, one probe per
    # call (below 1024 values) or 64 rows a call. Measured on jax 0.10.2's CPU backend;
    # a JAX that sums otherwise fails here, saying so, and is still revealed by search.
    jax = pytest.importorskip("jax", reason="JAX is not installed")
    import jax.numpy as jnp

    f = jax.jit(jnp.sum)
    rng = np.random.default_rng(9)
    for n in (100, 1000, 1024, 3000):
        tree, report = fprev.jax.reveal(jnp.sum, n, report=True)
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
        assert tree.replay(x) == float(f(x))
        assert report["recognized"] == "xla-tree-reduction", (jax.__version__, n, report)
        assert tree == fprev.Tree.xla_tree_reduction(n)
        # a search takes about 2n calls; with 4 windows or fewer, each node is its own
        # input, from 32 windows on many share one
        limit = n + 40 if n < 1000 else (n / 2 if report["lanes"] == 1 else n / 40)
        assert report["calls"] < limit, (n, report)


def test_jax_rows_reveal_the_one_row_tree_in_fewer_calls():
    # lax.map runs jnp.sum itself on every row: 32 probes a call at n = 2048, the same
    # tree as one probe per call (2048: below the sizes XLA hands to YNNPACK, whose sum
    # is no plain float32 summation on some CPUs, see the next test)
    pytest.importorskip("jax", reason="JAX is not installed")
    import jax.numpy as jnp

    tree, report = fprev.jax.reveal(jnp.sum, 2048, report=True)
    single, one = fprev.jax.reveal(jnp.sum, 2048, rows=False, report=True)
    assert report["lanes"] == 32 and one["lanes"] == 1, (report, one)
    assert tree == single
    assert report["calls"] * 8 < one["calls"], (report["calls"], one["calls"])


def test_jax_sum_at_4096_is_revealed_or_refused_never_wrong():
    # Whichever XLA path sums 4096 float32 values here (its own loop, or a YNNPACK
    # fusion), fprev's answer holds: a tree that replays jnp.sum on random inputs, or
    # NotPlainSummationError where no order of float32 additions explains the sums.
    pytest.importorskip("jax", reason="JAX is not installed")
    import jax
    import jax.numpy as jnp

    f = jax.jit(jnp.sum)
    try:
        tree = fprev.jax.reveal(jnp.sum, 4096)
    except fprev.NotPlainSummationError:
        # the refusal is right only if some input has a sum no order gives: three values
        # among zeros, whose three orders are the only plain answers
        rng = np.random.default_rng(7)
        f32 = np.float32
        for _ in range(20000):
            x = np.zeros(4096, dtype=f32)
            v = (rng.standard_normal(3) * np.exp2(rng.integers(-12, 12, 3))).astype(f32)
            x[rng.choice(4096, 3, replace=False)] = v
            a, b, c = v
            orders = {f32(f32(a + b) + c), f32(f32(a + c) + b), f32(f32(b + c) + a)}
            if f32(f(x)) not in orders:
                return
        pytest.fail("refused, but 20000 three-value sums all matched an order of additions")
    rng = np.random.default_rng(8)
    for _ in range(8):
        x = (rng.standard_normal(4096) * np.exp2(rng.integers(-20, 20, 4096))).astype(np.float32)
        assert float(f(x)) == float(tree.replay(x))
