"""The arithmetic measured at fused nodes, in ``report=True``'s ``"arithmetic"``: a
block-FMA chain written here in plain Python integers (a V100-like unit: blocks of 4
values and the running value, aligned to the largest exponent with 23 fraction bits
kept, cut toward zero, the block result cut to 23 fraction bits) comes back with its
block size, where the running value enters, its promotion interval and its widths."""

import argparse
import importlib.util
import math
import os

import numpy as np
import pytest

import fprev


def exponent(v):
    """floor(log2 |v|) of a non-zero float."""
    return math.frexp(v)[1] - 1


def cut(v, q):
    """v cut toward zero to a multiple of 2^q (exact: ldexp only shifts)."""
    return math.ldexp(math.trunc(math.ldexp(v, -q)), q)


def block(terms, frac=23):
    """One fused node: every term cut 2^-frac below the largest, summed exactly, the
    sum cut to frac fraction bits below its own leading bit."""
    terms = [t for t in terms if t != 0]
    if not terms:
        return 0.0
    q = max(exponent(t) for t in terms) - frac
    total = sum(cut(t, q) for t in terms)  # exact: multiples of 2^q within 2^53
    if total == 0:
        return 0.0
    return cut(total, exponent(total) - frac)


def chained_blocks(x):
    x = [float(v) for v in x]
    acc = None
    for k in range(0, len(x), 4):
        acc = block(x[k : k + 4] if acc is None else [acc] + x[k : k + 4])
    return np.float32(acc)


def test_a_block_fma_chain_reports_its_arithmetic():
    tree, report = fprev.reveal(chained_blocks, 32, dtype=np.float32, report=True)
    text = "(0+1+2+3)"
    for k in range(4, 32, 4):
        text = f"({text}+{k}+{k + 1}+{k + 2}+{k + 3})"
    assert tree == fprev.Tree.parse(text)
    a = report["arithmetic"]
    assert a["nfma"] == {"value": 4, "min": 4, "max": 4}
    assert a["c"] == "aligned"
    assert a["promotion"] is None and a["unpromoted_from"] == 32
    assert a["frac_out"] == 23
    lo, hi = a["frac_range"]
    assert lo <= 23 <= hi
    assert "block size 4 (4-4 consistent) products" in a["text"]
    assert a["align_rounding"] == "toward-zero"
    assert a["accumulator_cut"] == {"kind": "with-products"}
    assert a["binary"] in ("rounded", "after-fused")
    assert a["candidates"] >= 1


def test_one_block_reports_an_open_block_size():
    _, report = fprev.reveal(lambda x: np.float32(block([float(v) for v in x])), 8,
                             dtype=np.float32, report=True)
    a = report["arithmetic"]
    assert a["nfma"] == {"value": 8, "min": 8, "max": None}
    assert a["c"] is None


def test_a_plain_sum_has_no_arithmetic():
    _, report = fprev.reveal(lambda x: np.float32(sum(x)), 8, dtype=np.float32, report=True)
    assert report["arithmetic"] is None


def blocked_matmul(a, b):
    """Every element a chain of the V100-like blocks over its exact products."""
    out = np.empty((a.shape[0], b.shape[1]), dtype=np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = chained_blocks([float(x) * float(y) for x, y in zip(a[i], b[:, j])])
    return out


def test_matmul_orders_carry_each_groups_arithmetic():
    orders = fprev.reveal_matmul(blocked_matmul, 2, 3, 16, dtype=np.float32)
    assert orders.uniform
    (arithmetic,) = orders.arithmetic
    assert len(orders.arithmetic) == len(orders.groups)
    assert arithmetic["nfma"] == {"value": 4, "min": 4, "max": 4}
    assert arithmetic["c"] == "aligned"
    assert arithmetic["frac_out"] == 23
    lo, hi = arithmetic["frac_range"]
    assert lo <= 23 <= hi


def test_plain_matmul_orders_have_no_arithmetic():
    orders = fprev.reveal_matmul(np.matmul, 2, 2, 8, dtype=np.float64)
    assert orders.arithmetic == [None] * len(orders.groups)


def test_cdna3_fp8_groups_report_their_halves_and_two_stage_cut():
    # the independent responder the CLI tests drive, written from MMA-Sim's description
    pytest.importorskip("ml_dtypes", reason="FP8 arrays need ml_dtypes")
    path = os.path.join(os.path.dirname(__file__), "..", "..", "fprev-cli", "tests", "python",
                        "tensor_core_dot.py")
    spec = importlib.util.spec_from_file_location("tensor_core_dot", path)
    tc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tc)
    args = argparse.Namespace(fmt="e4m3fnuz", nfma=16, frac=24, out="f32", align="operands",
                              chunk=0, c="amd-fp8")

    def dot(a, b):
        va = [float(v) for v in a.astype(np.float32)]
        vb = [float(v) for v in b.astype(np.float32)]
        return np.float32(tc.to_float(*tc.dot(va, vb, args)))

    tree, report = fprev.reveal_dot(dot, 64, dtype="float8_e4m3fnuz", report=True)
    text = "(0+1+2+3+4+5+6+7+8+9+10+11+12+13+14+15)"
    for k in range(16, 64, 16):
        text = "(" + text + "".join(f"+{k + i}" for i in range(16)) + ")"
    assert tree == fprev.Tree.parse(text)
    a = report["arithmetic"]
    cut = a["accumulator_cut"]
    assert cut["kind"] == "two-stage" and cut["halves"] is True, cut
    assert cut["rounding"] == "toward-negative"
    lo, hi = cut["acc_frac_range"]
    assert lo <= 24 <= hi
    assert a["frac"] <= 24 <= a["frac_range"][1]
    assert a["frac_out"] is None
