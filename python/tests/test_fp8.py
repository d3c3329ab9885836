"""FP8 operands (ml_dtypes' float8_e4m3fn and float8_e5m2): dot products and matrix
products, whose probes spread over both operands, and the typed refusal of a plain sum."""

import numpy as np
import pytest

import fprev

ml_dtypes = pytest.importorskip("ml_dtypes", reason="FP8 arrays need ml_dtypes")

FP8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]
# AMD MI300's formats: no negative zero, NaN at 0x80, bias one larger
FNUZ = [ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz]


def sequential_dot(x, y):
    """x . y added left to right in float32, each product exact (FP8 x FP8 fits)."""
    acc = np.float32(0)
    for p, q in zip(x.astype(np.float32), y.astype(np.float32)):
        acc = np.float32(acc + p * q)
    return acc


def halves_dot(x, y):
    """x . y in two halves added at the end (each half left to right)."""
    h = len(x) // 2
    return np.float32(sequential_dot(x[:h], y[:h]) + sequential_dot(x[h:], y[h:]))


def chain(lo, hi):
    """The text of a left-to-right sum of leaves lo..hi-1."""
    text = str(lo)
    for i in range(lo + 1, hi):
        text = f"({text}+{i})"
    return text


@pytest.mark.parametrize("dtype", FP8)
def test_fp8_dot_spreads_masks_over_both_operands(dtype):
    n = 64
    tree, report = fprev.reveal_dot(sequential_dot, n, dtype=dtype, report=True)
    assert tree == fprev.Tree.sequential(n)
    # one probe per call: the second operand differs for every probe
    assert report["calls"] >= report["probes"]
    halves = fprev.reveal_dot(halves_dot, n, dtype=dtype)
    assert halves == fprev.Tree.parse(f"({chain(0, n // 2)}+{chain(n // 2, n)})")


def test_fp8_dot_operands_are_fp8_arrays():
    seen = []

    def dot(x, y):
        seen.append((x.dtype, y.dtype, x.flags.writeable, y.flags.writeable))
        return sequential_dot(x, y)

    fprev.reveal_dot(dot, 32, dtype="float8_e4m3fn")
    want = np.dtype(ml_dtypes.float8_e4m3fn)
    assert all(s == (want, want, False, False) for s in seen)


@pytest.mark.parametrize("dtype", FP8)
def test_fp8_matmul_every_element_sequential(dtype):
    m, n, k = 4, 3, 32

    def matmul(a, b):
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        c = np.zeros((m, n), dtype=np.float32)
        for l in range(k):
            c = (c + np.outer(a32[:, l], b32[l, :])).astype(np.float32)
        return c

    o = fprev.reveal_matmul(matmul, m, n, k, dtype=dtype)
    assert o.uniform
    assert o.tree == fprev.Tree.sequential(k)
    assert o.calls > 1


def test_fp8_plain_sum_is_refused_with_a_typed_error():
    # no operand to spread over: E4M3's 17 binades cannot hold M and e apart enough
    with pytest.raises(fprev.RevealError):
        fprev.reveal(lambda x: np.float32(x.astype(np.float32).sum()), 64, dtype="f8e4m3")


def test_fp8_exceptions_from_the_callable_propagate():
    def broken(x, y):
        raise KeyError("inside the dot")

    with pytest.raises(KeyError, match="inside the dot"):
        fprev.reveal_dot(broken, 32, dtype="float8_e5m2")


def test_fp8_replay_adds_in_the_arrays_format():
    x = np.array([448, 16, -448, 1], dtype=ml_dtypes.float8_e4m3fn)
    # E4M3 has 3 fraction bits: 448 + 16 rounds back to 448
    assert fprev.Tree.sequential(4).replay(x) == 1.0
    # 16 + 1 = 17 is a tie between 16 and 18 in E4M3: to even, 16
    assert fprev.Tree.parse("((0+2)+(1+3))").replay(x) == 16.0


@pytest.mark.parametrize("dtype", FNUZ + ["float8_e4m3fnuz", "e5m2fnuz"])
def test_fnuz_dot_spreads_masks_over_both_operands(dtype):
    n = 64
    tree, report = fprev.reveal_dot(sequential_dot, n, dtype=dtype, report=True)
    assert tree == fprev.Tree.sequential(n)
    assert report["calls"] >= report["probes"]


@pytest.mark.parametrize("dtype", FNUZ)
def test_fnuz_codes_replay_as_ml_dtypes_reads_them(dtype):
    # every finite code of the format, summed in a tree, as ml_dtypes' own arithmetic
    codes = np.arange(256, dtype=np.uint8).view(dtype)
    finite = codes[np.isfinite(codes.astype(np.float32))]
    tree = fprev.Tree.sequential(2)
    for v in finite:
        pair = np.array([v, np.zeros((), dtype=dtype)], dtype=dtype)
        assert tree.replay(pair) == float(v.astype(np.float32))
