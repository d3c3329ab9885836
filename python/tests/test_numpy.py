"""NumPy reductions: the orders of numpy.sum, numpy.dot and numpy.matmul."""

import numpy as np
import pytest

import fprev

# numpy.sum of 32 contiguous float32 values, as the FPRev paper (Xie et al.) shows it:
# eight lanes over strided elements, the lanes combined pairwise.
PAPER_32 = (
    "((((((0+8)+16)+24)+(((1+9)+17)+25))+((((2+10)+18)+26)+(((3+11)+19)+27)))"
    "+(((((4+12)+20)+28)+(((5+13)+21)+29))+((((6+14)+22)+30)+(((7+15)+23)+31))))"
)


def test_numpy_sum_32_is_the_papers_order():
    tree = fprev.reveal(np.sum, 32)
    assert str(tree) == PAPER_32
    # the engine's own model of NumPy's pairwise summation agrees
    assert tree == fprev.Tree.numpy_pairwise(32)


@pytest.mark.parametrize("dtype", ["float32", "float64", np.float32, np.dtype("float64")])
def test_numpy_sum_1024(dtype):
    tree, report = fprev.reveal(np.sum, 1024, dtype=dtype, report=True)
    assert tree == fprev.Tree.numpy_pairwise(1024)
    assert report["recognized"] == "numpy-pairwise"
    # one call per probe plus the replays: nothing is called per value
    assert report["calls"] <= report["probes"] + report["replays"] + 8


def test_basic_algorithm_agrees():
    # all n(n-1)/2 pairs probed, no guessing: the same tree
    tree = fprev.reveal(np.sum, 256, algorithm="basic", seed=5)
    assert tree == fprev.Tree.numpy_pairwise(256)


def test_hint_as_text():
    hint = str(fprev.Tree.numpy_pairwise(256))
    tree, report = fprev.reveal(np.sum, 256, hint=hint, report=True)
    assert str(tree) == hint
    assert report["recognized"] == "hint"


def test_python_loop_is_sequential():
    def loop(x):
        s = np.float32(0)
        for v in x:
            s = np.float32(s + v)
        return s

    assert fprev.reveal(loop, 40) == fprev.Tree.sequential(40)


def test_float_and_0d_answers():
    seq = fprev.Tree.sequential(16)
    assert fprev.reveal(lambda x: float(np.cumsum(x)[-1]), 16, dtype="float64") == seq
    assert fprev.reveal(lambda x: np.asarray(np.cumsum(x)[-1]), 16) == seq


def test_float16_with_float32_accumulation():
    def f16_in_f32(x):
        assert x.dtype == np.float16
        return np.sum(x, dtype=np.float32)

    tree = fprev.reveal(f16_in_f32, 512, dtype="float16", acc_dtype="float32")
    assert tree == fprev.Tree.numpy_pairwise(512)


def test_float16_numpy_sum_is_revealed_with_a_float32_accumulator():
    # numpy sums float16 in float32 internally: as a float16 sum it looks exact, so
    # without an acc_dtype the reveal is retried with a float32 accumulator
    tree, report = fprev.reveal(np.sum, 64, dtype="float16", report=True)
    assert tree == fprev.Tree.numpy_pairwise(64)
    assert report["acc_dtype"] == "float32"
    assert report["acc_retry"].startswith(
        "order-independent in float16: revealed with a float32 accumulator; answers are "
    )
    # an accumulator the caller names is used as named: no retry
    with pytest.raises(fprev.OrderIndependentError, match="order-independent"):
        fprev.reveal(np.sum, 64, dtype="float16", acc_dtype="float16")
    # nor when the flat node is asked for
    flat = fprev.reveal(np.sum, 8, dtype="float16", accept_flat=True)
    assert str(flat) == "(0+1+2+3+4+5+6+7)"
    _, report = fprev.reveal(np.sum, 64, dtype="float32", report=True)
    assert report["acc_dtype"] == "float32" and "acc_retry" not in report


def test_float16_rounded_once_at_the_end_is_replayed_with_that_rounding():
    # float32 sums rounded to float16: the engine's float32 replays cannot match them,
    # the retry's replays round the tree's float32 sum once
    rounded = lambda x: np.float16(np.cumsum(x, dtype=np.float32)[-1])  # noqa: E731
    tree, report = fprev.reveal(rounded, 128, dtype="float16", report=True)
    assert tree == fprev.Tree.sequential(128)
    assert report["acc_retry"].endswith("answers are float32 rounded once to float16")
    # answering in float32 is told apart
    _, report = fprev.reveal(
        lambda x: np.cumsum(x, dtype=np.float32)[-1], 128, dtype="float16", report=True
    )
    assert report["acc_retry"].endswith("answers are in float32")


def _lanes_in_float32(x):
    """float16 values added in 8 float32 lanes (a vector register), rounded once."""
    acc = np.zeros(8, np.float32)
    for i in range(8):
        acc[i] = np.cumsum(x[i::8], dtype=np.float32)[-1] if len(x) > i else 0
    return np.float16(np.cumsum(acc, dtype=np.float32)[-1])


@pytest.mark.parametrize("n", [1536, 3000])
def test_float16_in_a_float32_register_past_1024_values(n):
    # from 1025 values on, float16 probes find the register's true tree (its float32
    # arithmetic, not float16's, reproduces random inputs): the engine says so
    # (WiderAccumulatorError) and the reveal is retried in float32, counting in windows
    # past the 2^11 units a float16 answer holds
    with pytest.raises(fprev.WiderAccumulatorError, match='acc_dtype="float32"'):
        fprev.reveal(_lanes_in_float32, n, dtype="float16", acc_dtype="float16")
    tree, report = fprev.reveal(_lanes_in_float32, n, dtype="float16", report=True)
    lanes = lambda x: np.float32(  # noqa: E731
        np.cumsum([np.cumsum(x[i::8], dtype=np.float32)[-1] for i in range(8)],
                  dtype=np.float32)[-1])
    assert tree == fprev.reveal(lanes, n, dtype="float32")
    assert report["acc_dtype"] == "float32"
    assert report["acc_retry"].startswith(
        "the float16 probes' tree sums in float32: revealed with a float32 accumulator"
    ), report


def test_a_retry_that_fails_raises_the_first_error_with_a_note():
    # exact in float64 too: the float32 retry is order-independent as well
    exact = lambda x: np.float16(fprev.exact.sum(x.astype(np.float64)))  # noqa: E731
    with pytest.raises(fprev.OrderIndependentError, match='try acc_dtype="float32"') as e:
        fprev.reveal(exact, 64, dtype="float16")
    notes = getattr(e.value, "__notes__", None)
    if notes is not None:  # Python 3.11+
        assert any(n.startswith("retried with acc_dtype='float32'") for n in notes), notes

    # in order on the probes (powers of two and zeros), in reverse order on other
    # inputs: the retry's replays catch it
    def data_dependent(x):
        y = x.astype(np.float32)
        if np.all((np.abs(np.frexp(y)[0]) == 0.5) | (y == 0)):
            return np.float16(np.cumsum(y)[-1])
        return np.float16(np.cumsum(y[::-1])[-1])

    with pytest.raises(fprev.OrderIndependentError) as e:
        fprev.reveal(data_dependent, 64, dtype="float16")
    if notes is not None:
        assert any("NotPlainSummationError" in n for n in e.value.__notes__), e.value.__notes__


def test_bfloat16_with_float32_accumulation():
    pytest.importorskip("ml_dtypes", reason="bfloat16 arrays need ml_dtypes")
    tree = fprev.reveal(
        lambda x: np.sum(x, dtype=np.float32), 128, dtype="bfloat16", acc_dtype="float32"
    )
    assert tree == fprev.Tree.numpy_pairwise(128)


def test_accumulator_narrower_than_operands_is_refused():
    with pytest.raises(ValueError, match="cannot accumulate float32 operands in float16"):
        fprev.reveal(np.sum, 8, dtype="float32", acc_dtype="float16")


def test_numpy_dot():
    tree = fprev.reveal_dot(np.dot, 1024, dtype="float64")
    assert tree.n == 1024
    x = np.random.default_rng(1).standard_normal(1024)
    assert tree.replay(x) == float(np.dot(x, np.ones(1024)))


def test_numpy_matmul_orders_are_grouped():
    orders = fprev.reveal_matmul(np.matmul, 32, 16, 256)
    assert orders.unresolved == []
    elements = sorted(e for _, group in orders.groups for e in group)
    assert elements == [(i, j) for i in range(32) for j in range(16)]
    # one probe per row per call: far fewer calls than probes
    assert orders.calls < orders.probes
    if orders.uniform:
        assert orders.tree.n == 256
    assert "k = 256" in str(orders)


def test_matmul_with_a_known_order():
    def rows_sequential(a, b):
        return np.cumsum(a, axis=1)[:, -1:] * np.ones((1, b.shape[1]), dtype=a.dtype)

    orders = fprev.reveal_matmul(rows_sequential, 8, 3, 32, dtype="float64")
    assert orders.uniform
    assert orders.tree == fprev.Tree.sequential(32)
    assert orders.groups[0][1] == [(i, j) for i in range(8) for j in range(3)]


def test_the_callable_cannot_write_into_the_buffer():
    def writes(x):
        x[0] = 0
        return np.sum(x)

    with pytest.raises(ValueError, match="read-only"):
        fprev.reveal(writes, 8)


def test_rows_that_sum_like_the_function_reveal_it_in_fewer_calls():
    # numpy sums each contiguous row of a matrix as it sums one vector (pairwise): one
    # probe per row, the same tree
    from fprev import _reveal_rows

    n, lanes = 1000, 16
    tree, report = _reveal_rows(
        np.sum, lambda x: np.sum(x, axis=1), n, lanes, "float32", "fprev", None, True, 0
    )
    assert tree == fprev.reveal(np.sum, n)
    assert report["lanes"] == lanes
    assert report["calls"] * 4 < report["probes"], report


def test_rows_that_sum_differently_are_not_trusted():
    # rows summed in order, the function pairwise: caught on the first random input,
    # before any probe (the caller then reveals one probe per call)
    from fprev import _reveal_rows

    tree, why = _reveal_rows(
        np.sum, lambda x: np.cumsum(x, axis=1)[:, -1], 1000, 16, "float32", "fprev", None,
        True, 0,
    )
    assert tree is None and why == "row 0 of a random input was summed differently", why

    # rows that agree on the random inputs the check draws but whose probes follow
    # another order: the revealed tree fails to replay the function itself
    def sneaky(x):
        powers = np.all((np.abs(np.frexp(x)[0]) == 0.5) | (x == 0), axis=1)
        return np.where(powers, np.cumsum(x, axis=1)[:, -1], np.sum(x, axis=1))

    # the engine's own replays (through the rows) catch it; without them, the replays
    # of the one-row function do
    tree, why = _reveal_rows(np.sum, sneaky, 1000, 16, "float32", "fprev", None, True, 0)
    assert tree is None and why.startswith("NotPlainSummationError"), why
    tree, why = _reveal_rows(np.sum, sneaky, 1000, 16, "float32", "fprev", None, False, 0)
    assert tree is None and "does not replay the function" in why, why


def test_sweep_lengths_finds_where_the_order_of_the_first_values_changes():
    # 8 lanes below 64 values, 16 from 64 on: lengths keep their order up to 63 (each
    # tree cut to the shorter length is that length's tree) and break at 64
    def lanes(count):
        def f(x):
            acc = np.zeros(count, np.float32)
            for i in range(count):
                if i < len(x):
                    acc[i] = np.cumsum(x[i::count], dtype=np.float32)[-1]
            return np.cumsum(acc, dtype=np.float32)[-1]
        return f

    s = fprev.sweep_lengths(lambda n: lanes(8 if n < 64 else 16), [16, 24, 40, 63, 64, 80])
    assert s.breakpoints == [64]
    assert s.trees[80] == fprev.reveal(lanes(16), 80)
    assert s.trees[63].prefix(40) == s.trees[40]
    assert s.proved == []
    assert s.ranges().startswith("n = 16..63: 8 parts of 8"), s.ranges()
    # numpy's pairwise sum: 9 values add the 9th to 8's tree; 128 are 8 lanes of 16
    # (the first 9 values no longer in 9's order), and 129 and 300 split where 128 and
    # 129 did not
    assert fprev.sweep_lengths(lambda n: np.sum, [8, 9, 128, 129, 300]).breakpoints == [
        128, 129, 300]
    with pytest.raises(ValueError, match="prefix"):
        s.trees[16].prefix(17)
    with pytest.raises(fprev.RevealError, match="at size 3"):
        fprev.sweep_lengths(lambda n: np.sum if n < 3 else np.max, [2, 3])
