"""TF32 operands (``dtype="tf32"``): float32 arrays whose values have 10 fraction bits,
answered in float32. A Hopper-like TF32 Tensor Core dot, written here in plain Python
integers from the published model (blocks of 8 products and the running value, each
product aligned by its operands' exponent sum and cut toward zero 25 fraction bits below
the block's largest, the block's sum cut to 23 fraction bits), comes back with its tree
and its arithmetic; the names, the default accumulator and the refusals are checked."""

import math

import numpy as np
import pytest

import fprev
from fprev import _dtypes


def exponent(v):
    """floor(log2 |v|) of a non-zero float, clamped at TF32's (f32's) smallest normal
    exponent, as the hardware reads a subnormal operand."""
    return max(math.frexp(v)[1] - 1, -126)


def is_tf32(v):
    """Whether a float32 value has its low 13 bits zero."""
    return int(np.float32(v).view(np.uint32)) & 0x1FFF == 0


def block(c, xs, ys, frac=25, frac_out=23):
    """One block: terms (c with its own exponent, each product with ea + eb) cut toward
    zero 2^-frac below the largest, summed exactly, the sum cut to frac_out fraction
    bits below its leading bit."""
    terms = [(float(c), exponent(c))] if c != 0 else []
    terms += [(float(x) * float(y), exponent(x) + exponent(y))
              for x, y in zip(xs, ys) if x != 0 and y != 0]
    if not terms:
        return 0.0
    q = max(e for _, e in terms) - frac
    # each product of two 11-bit significands is exact in a double; ldexp only shifts
    total = sum(math.trunc(math.ldexp(t, -q)) for t, _ in terms)
    if total == 0:
        return 0.0
    drop = max(abs(total).bit_length() - (frac_out + 1), 0)
    kept = (abs(total) >> drop) << drop
    return math.ldexp(kept if total > 0 else -kept, q)


def hopper_tf32_dot(x, y, nfma=8):
    assert x.dtype == np.float32 and y.dtype == np.float32
    acc = 0.0
    for k in range(0, len(x), nfma):
        acc = block(acc, x[k : k + nfma], y[k : k + nfma])
    return np.float32(acc)


def chain_of_blocks(n, nfma):
    text = "(" + "+".join(str(i) for i in range(nfma)) + ")"
    for k in range(nfma, n, nfma):
        text = f"({text}+" + "+".join(str(i) for i in range(k, k + nfma)) + ")"
    return fprev.Tree.parse(text)


@pytest.mark.parametrize("spelling", ["tf32", "tensorfloat32", "tfloat32"])
def test_tf32_names_are_one_format_stored_as_float32(spelling):
    assert _dtypes.name(spelling) == "tf32"
    assert _dtypes.numpy_dtype("tf32") == np.dtype(np.float32)
    assert _dtypes.is_operand_only("tf32")


def test_a_tf32_tensor_core_dot_reveals_its_tree_and_published_arithmetic():
    n = 32
    seen = []

    def dot(x, y):
        seen.append((x.dtype, y.dtype, x.flags.writeable, y.flags.writeable,
                     all(is_tf32(v) for v in x) and all(is_tf32(v) for v in y)))
        return hopper_tf32_dot(x, y)

    tree, report = fprev.reveal_dot(dot, n, dtype="tf32", report=True)
    assert tree == chain_of_blocks(n, 8)
    # every call got read-only float32 arrays of TF32 values
    assert seen and all(s == (np.float32, np.float32, False, False, True) for s in seen)
    a = report["arithmetic"]
    assert a["alignment"] == "operand-exponents" and a["alignment_decided"]
    lo, hi = a["frac_range"]
    assert lo <= 25 <= hi
    assert a["frac_out"] == 23
    assert a["nfma"] == {"value": 8, "min": 8, "max": 8}
    assert a["c"] == "aligned"


def test_a_plain_tf32_sum_reveals_its_order():
    def in_order(x):
        acc = np.float32(0)
        for v in x:
            acc = np.float32(acc + v)
        return acc

    assert fprev.reveal(in_order, 16, dtype="tf32") == fprev.Tree.sequential(16)


def test_tf32_accumulates_in_float32_or_float64_only():
    with pytest.raises(ValueError, match="tf32 operands in float32 or float64"):
        fprev.reveal_dot(hopper_tf32_dot, 8, dtype="tf32", acc_dtype="float16")
    with pytest.raises(ValueError, match="tf32"):
        fprev.reveal_dot(hopper_tf32_dot, 8, dtype="tf32", acc_dtype="tf32")


def test_an_unknown_dtype_names_tf32_among_the_choices():
    with pytest.raises(ValueError, match="or tf32"):
        fprev.reveal(np.sum, 8, dtype="tf16")
