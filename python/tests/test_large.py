"""A large n in bounded memory."""

import resource
import sys

import numpy as np

import fprev


def _peak_rss_mb():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def test_numpy_sum_65536_in_bounded_memory():
    n = 65536
    before = _peak_rss_mb()
    tree, report = fprev.reveal(np.sum, n, report=True)
    assert tree == fprev.Tree.numpy_pairwise(n)
    # the guessed order is proved with inputs holding up to 16 probes each: every node
    # in two of them, about n / 8 calls (plus replays), no per-value work in Python
    assert report["calls"] <= n // 6
    assert report["recognized"] == "numpy-pairwise"
    grown = _peak_rss_mb() - before
    # the probe buffer is 256 KiB; the engine's arrays a few MB: far from n^2
    assert grown < 100, f"peak RSS grew by {grown:.1f} MB"
