"""fprev.Tree: text, equality, diff, replay, pictures, JSON, stats; fprev.exact."""

import json
import pickle

import numpy as np
import pytest

import fprev


def test_text_round_trip_and_equality():
    t = fprev.Tree.parse("((0+1)+(2+3))")
    assert str(t) == "((0+1)+(2+3))"
    assert t == fprev.Tree.parse(str(t))
    assert t != fprev.Tree.sequential(4)
    assert hash(t) == hash(fprev.Tree.parse("((0+1)+(2+3))"))
    assert repr(t) == 'fprev.Tree("((0+1)+(2+3))")'


def test_parse_rejects_bad_text():
    with pytest.raises(ValueError, match="not a summation tree"):
        fprev.Tree.parse("(0+0)")


def test_diff():
    a, b = fprev.Tree.parse("(((0+1)+2)+(3+4))"), fprev.Tree.parse("((0+(1+2))+(3+4))")
    assert a.diff(a) is None
    d = a.diff(b)
    assert d.leaves == [0, 1, 2]
    assert (d.left, d.right) == ("((0+1)+2)", "(0+(1+2))")
    assert d.differing_nodes == (1, 1)
    assert "left:  ((0+1)+2)" in str(d)


def test_replay_in_the_arrays_dtype():
    x = np.array([1e8, 1.0, -1e8, 1.0], dtype=np.float32)
    assert fprev.Tree.sequential(4).replay(x) == 1.0
    assert fprev.Tree.parse("(0+1+2+3)").replay(x) == 2.0
    xs = np.random.default_rng(7).standard_normal(300).astype(np.float16)
    s = np.float16(0)
    for v in xs:
        s = np.float16(s + v)  # one float16 rounding per addition
    assert fprev.Tree.sequential(300).replay(xs) == float(s)
    with pytest.raises(ValueError, match="one value per leaf"):
        fprev.Tree.sequential(300).replay(np.ones(3))


def test_replay_matches_numpy_sum_bit_for_bit():
    x = np.random.default_rng(3).standard_normal(5000).astype(np.float32)
    assert fprev.Tree.numpy_pairwise(5000).replay(x) == float(np.sum(x))


def _xla_windows_sum(x, window=32):
    """XLA's CPU tree reduction written from its description (TreeReductionRewriter:
    windows of 32 padded evenly on both sides, each summed in order, until 32 or fewer
    sums are left), in float32 one addition at a time."""
    x = list(x)
    while len(x) > window:
        m = len(x)
        count = -(-m // window)
        low = (count * window - m) // 2
        sums = []
        for k in range(count):
            acc = np.float32(0)
            for v in x[max(0, k * window - low):min(m, (k + 1) * window - low)]:
                acc = np.float32(acc + v)
            sums.append(acc)
        x = sums
    acc = np.float32(0)
    for v in x:
        acc = np.float32(acc + v)
    return float(acc)


def test_xla_tree_reduction_replays_xlas_windows():
    rng = np.random.default_rng(5)
    for n in (1, 31, 32, 33, 100, 1000, 1025, 1500, 3000):
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
        t = fprev.Tree.xla_tree_reduction(n)
        assert t.n == n
        assert t.replay(x) == _xla_windows_sum(x), n
    assert fprev.Tree.xla_tree_reduction(32) == fprev.Tree.sequential(32)


def test_json_dot_svg_stats_pickle():
    t = fprev.Tree.numpy_pairwise(40)
    doc = json.loads(t.to_json())
    assert doc["leaves"] == 40 and doc["canonical"] == str(t)
    assert fprev.Tree.from_json(t.to_json()) == t
    assert t.to_dot().startswith("digraph")
    svg = t.to_svg()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert t._repr_svg_() == svg
    s = t.stats()
    assert s["leaves"] == 40 and s["inner_nodes"] == 39 and s["max_arity"] == 2
    assert pickle.loads(pickle.dumps(t)) == t


def test_exact_sum_and_dot():
    x = np.array([1e16, 1.0, -1e16])
    assert float(np.sum(x)) == 0.0
    assert fprev.exact.sum(x) == 1.0
    assert fprev.exact.sum(x[::-1]) == 1.0
    assert fprev.exact.sum(np.array([0.5, 0.25], dtype=np.float16)) == 0.75
    assert fprev.exact.sum(np.arange(10)) == 45.0
    assert fprev.exact.dot(np.array([1e16, 1.0, 1e16]), np.array([1.0, 1.0, -1.0])) == 1.0
    with pytest.raises(ValueError):
        fprev.exact.dot(np.ones(3), np.ones(4))
