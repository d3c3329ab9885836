"""fprev.sweep and fprev.sweep_matmul: orders across sizes, with NumPy callables whose
order changes at sizes the tests choose."""

import numpy as np
import pytest

import fprev


def in_order(x):
    """A sequential sum (NumPy's cumulative sum adds one value after another)."""
    return np.cumsum(x)[-1]


def halves(x):
    """Two halves, each in order, then added."""
    h = len(x) // 2
    return np.cumsum(x[:h])[-1] + np.cumsum(x[h:])[-1]


def halves_tree(n):
    def block(lo, hi):
        text = str(lo)
        for i in range(lo + 1, hi):
            text = f"({text}+{i})"
        return text

    return fprev.Tree.parse(f"({block(0, n // 2)}+{block(n // 2, n)})")


def test_a_kernel_that_blocks_from_four_rows_breaks_at_four():
    n = 256
    s = fprev.sweep(lambda m: in_order if m < 4 else halves, range(1, 9), n, label="M")
    assert s.breakpoints == [4]
    assert s.n == n
    assert sorted(s.trees) == list(range(1, 9))
    for m in range(1, 4):
        assert s.trees[m] == fprev.Tree.sequential(n)
    for m in range(4, 9):
        assert s.trees[m] == halves_tree(n)
    assert s.ranges() == (
        "M = 1..3: 256 in order; "
        "M = 4..8: 2 blocks of 128, combined in order; each block 128 in order"
    )
    assert s.ranges("batch").startswith("batch = 1..3: ")
    assert str(s) == s.ranges()
    assert [(a, b) for a, b, _ in s.range_trees()] == [(1, 3), (4, 8)]
    # searched at the first size and at the breakpoint only
    assert s.proved == [2, 3, 5, 6, 7, 8]
    assert repr(s) == "<fprev.Sweep: 8 sizes from 1 to 8, n = 256, 2 range(s)>"


def test_an_invariant_callable_has_no_breakpoint_and_is_proved_at_every_later_size():
    calls = [0]

    def counted(x):
        calls[0] += 1
        return np.sum(x)

    n = 4096
    s = fprev.sweep(lambda size: counted, [1, 2, 4, 8, 16, 32], n)
    assert s.breakpoints == []
    assert s.proved == [2, 4, 8, 16, 32]
    assert len(set(s.trees.values())) == 1
    assert s.probes + s.replays == calls[0]
    # NumPy's order is proved with probe sets: a small fraction of n calls per size
    assert calls[0] < 6 * n / 4, calls[0]


def test_float16_and_float64_sweeps():
    s = fprev.sweep(lambda m: np.sum, [1, 2], 32, dtype=np.float64)
    assert s.trees[2] == fprev.reveal(np.sum, 32, dtype=np.float64)
    # float16 values summed in float32 and answered in float32
    s = fprev.sweep(
        lambda m: lambda x: np.sum(x, dtype=np.float32), [1, 2], 64,
        dtype=np.float16, acc_dtype=np.float32,
    )
    assert s.breakpoints == []


def test_bad_sizes_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="at least one size"):
        fprev.sweep(lambda m: np.sum, [], 8)
    with pytest.raises(ValueError, match="2 follows 3"):
        fprev.sweep(lambda m: np.sum, [1, 3, 2], 8)
    with pytest.raises(ValueError, match="non-negative"):
        fprev.sweep(lambda m: np.sum, [-1], 8)
    with pytest.raises(TypeError, match="integers"):
        fprev.sweep(lambda m: np.sum, [1.5], 8)
    with pytest.raises(TypeError, match="iterable"):
        fprev.sweep(lambda m: np.sum, 3, 8)
    with pytest.raises(fprev.InvalidSizeError):
        fprev.sweep(lambda m: np.sum, [1], 0)
    with pytest.raises(TypeError, match="label"):
        fprev.sweep(lambda m: np.sum, [1], 8, label=3)


def test_a_failure_names_its_size():
    # a max instead of a sum from size 3 on: the engine's error starts with the size
    with pytest.raises(fprev.OutOfRangeError, match=r"^at size 3: "):
        fprev.sweep(lambda m: np.sum if m < 3 else np.max, [1, 2, 3, 4], 16)

    class NoKernel(Exception):
        pass

    def make(m):
        if m == 2:
            raise NoKernel("no kernel for 2 rows")
        return np.sum

    # make's own exception, unchanged
    with pytest.raises(NoKernel, match="no kernel for 2 rows"):
        fprev.sweep(make, [1, 2, 3], 16)

    def broken(m):
        def f(x):
            if m == 3:
                raise ZeroDivisionError("kernel crashed")
            return np.sum(x)

        return f

    with pytest.raises(ZeroDivisionError, match="kernel crashed"):
        fprev.sweep(broken, [1, 2, 3], 16)


def test_order_independent_16_bit_sums_say_which_acc_dtype_to_try():
    # float16 values accumulated in float32, answered in float16: rounding once at the
    # end looks order-independent to float16 probes
    f = lambda x: np.float16(np.sum(x, dtype=np.float32))  # noqa: E731
    with pytest.raises(fprev.OrderIndependentError, match='try acc_dtype="float32"'):
        fprev.reveal(f, 64, dtype=np.float16, acc_dtype=np.float16)
    # a sweep does not retry: each size would be revealed twice
    with pytest.raises(fprev.OrderIndependentError, match=r"^at size 1: .*acc_dtype"):
        fprev.sweep(lambda m: f, [1, 2], 64, dtype=np.float16)


def test_sweep_matmul_over_the_batch_dimension():
    k = 64

    def batched(a, b):
        # rows summed in order for up to 3 rows, in two halves of k from 4 rows on
        out = np.empty((a.shape[0], b.shape[1]), dtype=np.float64)
        for i in range(a.shape[0]):
            for j in range(b.shape[1]):
                p = a[i] * b[:, j]
                out[i, j] = in_order(p) if a.shape[0] < 4 else halves(p)
        return out

    s = fprev.sweep_matmul(batched, range(1, 7), 3, k, dtype=np.float64)
    assert s.breakpoints == [4]
    assert s.trees[1] == fprev.Tree.sequential(k)
    assert s.trees[6] == halves_tree(k)
    assert s.ranges().startswith("M = 1..3: 64 in order; M = 4..6: 2 blocks of 32")


def test_sweep_matmul_agrees_with_reveal_matmul_at_every_size():
    # np.matmul's order depends on the BLAS build (OpenBLAS sums row 0 of a one-row
    # product in its gemv kernel's order, and from two rows on in its gemm kernel's):
    # each size's tree must be what reveal_matmul finds for element (0, 0) at that size
    ms, n, k = [1, 2, 3, 5], 4, 64
    s = fprev.sweep_matmul(np.matmul, ms, n, k)
    for m in ms:
        orders = fprev.reveal_matmul(np.matmul, m, n, k)
        (tree,) = [t for t, elements in orders.groups if (0, 0) in elements]
        assert s.trees[m] == tree, m
    assert s.breakpoints == [
        b for a, b in zip(ms, ms[1:]) if s.trees[a] != s.trees[b]
    ]


def test_sweep_matmul_checks_every_element_of_row_0():
    def skewed(a, b):
        c = np.asarray(a @ b, dtype=np.float64)
        # column 2 sums its k values in reverse order
        c[:, 2] = [np.cumsum(row[::-1])[-1] for row in a]
        return c

    with pytest.raises(fprev.TargetError, match=r"element \(0, 2\) answered"):
        fprev.sweep_matmul(skewed, [1, 2], 4, 16, dtype=np.float64)
    with pytest.raises(fprev.InvalidSizeError, match="m = 0"):
        fprev.sweep_matmul(np.matmul, [0, 1], 4, 16)
    with pytest.raises(ValueError, match="shape"):
        fprev.sweep_matmul(lambda a, b: (a @ b)[:, :1], [1], 4, 16)


def test_torch_matmul_batch_sizes():
    # torch.matmul's order depends on the CPU and the BLAS PyTorch was built with, so
    # each size's tree is checked against reveal_matmul's at that size, not against a
    # fixed tree (docs/sweeps.md shows the ranges on one machine)
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:

        def matmul(a, b):
            # a copy: torch warns about tensors over read-only NumPy arrays
            return torch.matmul(torch.tensor(a), torch.tensor(b)).numpy()

        ms, n, k = range(1, 9), 4, 256
        s = fprev.sweep_matmul(matmul, ms, n, k)
        assert sorted(s.trees) == list(ms)
        for m in [1, 3, 4, 8]:
            orders = fprev.reveal_matmul(matmul, m, n, k)
            (tree,) = [t for t, elements in orders.groups if (0, 0) in elements]
            assert s.trees[m] == tree, m
        assert s.breakpoints == [m for m in ms[1:] if s.trees[m - 1] != s.trees[m]]
        # every size that is not a breakpoint was proved, not searched
        assert s.proved == [m for m in ms[1:] if m not in s.breakpoints]
    finally:
        torch.set_num_threads(threads)


def test_svg_draws_the_ranges():
    s = fprev.sweep(lambda m: in_order if m < 4 else halves, range(1, 7), 16, label="M")
    svg = s.svg(title="a <kernel>")
    assert svg.startswith("<svg") and svg.endswith("</svg>\n")
    assert ">a &lt;kernel&gt;</text>" in svg
    assert "breakpoint at M = 4" in svg
    assert ">M = 1..3 (3 values)</text>" in svg and ">M = 4..6 (3 values)</text>" in svg
    assert f">{s.trees[4].describe()}</text>" in svg
    assert "searched (2 of 6)" in svg
    assert ">rows = 1..3 (3 values)</text>" in s.svg("rows")


def test_too_many_sizes_are_refused_before_anything_is_built():
    """range(1, 10**8) would be 4 GB as a list: refused after reading 65,537 of them."""
    called = []

    def make(size):
        called.append(size)
        return np.sum

    with pytest.raises(ValueError, match="more than 65536 sizes: sweep fewer"):
        fprev.sweep(make, range(1, 10**8), 16)
    assert called == []
    # an endless iterator too
    import itertools

    with pytest.raises(ValueError, match="more than 65536 sizes"):
        fprev.sweep(make, itertools.count(1), 16)
