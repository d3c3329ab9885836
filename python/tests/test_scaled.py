"""Block-scaled types and dots: every code of FP4 E2M1, FP6 E3M2/E2M3 and the UE8M0
scale as fprev reads it against ml_dtypes' float4_e2m1fn, float6_e3m2fn, float6_e2m3fn
and float8_e8m0fnu; conversions round as ml_dtypes does; and block-scaled dots
revealed from Python with their arithmetic (report=True)."""

import math
from fractions import Fraction

import numpy as np
import pytest

import fprev

ml_dtypes = pytest.importorskip("ml_dtypes", reason="FP4/FP6/E8M0 arrays need ml_dtypes")

TYPES = [
    ("float4_e2m1fn", 16),
    ("float6_e3m2fn", 64),
    ("float6_e2m3fn", 64),
    ("float8_e8m0fnu", 256),
]


@pytest.mark.parametrize("name,codes", TYPES)
def test_every_code_reads_as_ml_dtypes_reads_it(name, codes):
    t = getattr(ml_dtypes, name)
    want = np.arange(codes, dtype=np.uint8).view(t).astype(np.float64)
    got = fprev.format_codes(t)
    assert len(got) == codes
    for c, (g, w) in enumerate(zip(got, want)):
        if math.isnan(w):
            assert math.isnan(g), (name, c)
        else:
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (name, c, g, w)


@pytest.mark.parametrize("name,codes", TYPES[:3])
def test_conversions_round_as_ml_dtypes_converts(name, codes):
    t = getattr(ml_dtypes, name)
    values = np.array(fprev.format_codes(name))
    # every code, every midpoint between neighbours, points just off them, and beyond
    finite = np.unique(values)
    mids = (finite[1:] + finite[:-1]) / 2
    step = np.diff(finite) / 8
    probe = np.concatenate(
        [values, mids, mids - step, mids + step, [1e6, -1e6, np.inf, -np.inf]]
    )
    want = probe.astype(np.float32).astype(t).view(np.uint8).astype(int)
    got = fprev.format_round(name, probe.tolist())
    for x, g, w in zip(probe, got, want):
        # zeros: ml_dtypes keeps the sign of a negative value rounded to zero as fprev does
        assert g == w, (name, x, g, w)


def test_ue4m3_codes_are_unsigned_e4m3():
    e4m3 = np.arange(128, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    got = fprev.format_codes("ue4m3")
    assert len(got) == 128
    assert all((math.isnan(g) and math.isnan(w)) or g == w for g, w in zip(got, e4m3))


def floor_log2(x):
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    elif Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def cut(x, q):
    n = x / q
    return (n.numerator // n.denominator if n >= 0 else -((-n.numerator) // n.denominator)) * q


def _model(block, k_instr, frac):
    """One fused node per instruction over block sums aligned by the scales' exponents,
    truncated toward zero frac bits below the largest, the result truncated to 23 bits,
    C aligned (Fractions; the docs' B200 NVFP4 assumption)."""

    def f(a, b, sa, sb):
        a, b = [Fraction(x) for x in a], [Fraction(x) for x in b]
        sa, sb = [Fraction(x) for x in sa], [Fraction(x) for x in sb]
        c = Fraction(0)
        for start in range(0, len(a), k_instr):
            terms = []
            for g in range(start, start + k_instr, block):
                s = sum(a[i] * b[i] for i in range(g, g + block))
                if s:
                    j = g // block
                    lab = max(floor_log2(sa[j]), -6) + max(floor_log2(sb[j]), -6)
                    terms.append((s * sa[j] * sb[j], lab))
            if c:
                terms.append((c, max(floor_log2(c), -126)))
            if terms:
                top = max(t[1] for t in terms)
                tot = sum(cut(v, Fraction(2) ** (top - frac)) for v, _ in terms)
                c = cut(tot, Fraction(2) ** (max(floor_log2(tot), -126) - 23)) if tot else Fraction(0)
        return float(c)

    return f


def test_nvfp4_dot_reveals_its_blocks_and_arithmetic():
    f = _model(16, 64, 35)
    tree, rep = fprev.reveal_scaled_dot(
        f, 128, ml_dtypes.float4_e2m1fn, 16, "ue4m3", report=True
    )
    assert str(tree) == "((0+1+2+3)+4+5+6+7)"
    a = rep["arithmetic"]
    assert 16 in a["groups"]
    assert a["frac"] <= 35 <= a["frac_max"]
    assert "scale_exponents" in a["alignment"]
    assert a["k"] == [64]
    assert "blocks of 16" in rep["summary"]


def test_a_bad_shape_is_a_value_error():
    with pytest.raises(ValueError, match="multiple"):
        fprev.reveal_scaled_dot(lambda *a: 0.0, 40, "float4_e2m1fn", 16, "ue4m3")


def _mxfp8_model(frac=25):
    """One instruction per block of 32 FP8 products: each product aligned by its own
    exponent, cut toward zero frac bits below the largest, the sum cut to f32's 23
    bits, and added to the running value in f32, rounded to nearest (Fractions)."""

    def f(a, b, sa, sb):
        c = np.float32(0)
        for j in range(len(sa)):
            s = Fraction(sa[j]) * Fraction(sb[j])
            terms = [Fraction(a[i]) * Fraction(b[i]) * s for i in range(32 * j, 32 * j + 32)]
            terms = [t for t in terms if t]
            r = Fraction(0)
            if terms:
                top = max(floor_log2(t) for t in terms)
                tot = sum(cut(t, Fraction(2) ** (top - frac)) for t in terms)
                if tot:
                    r = cut(tot, Fraction(2) ** (max(floor_log2(tot), -126) - 23))
            c = np.float32(c + np.float32(float(r)))
        return float(c)

    return f


def test_mxfp8_products_are_revealed_inside_the_blocks():
    tree, rep = fprev.reveal_scaled_dot(
        _mxfp8_model(), 64, ml_dtypes.float8_e4m3fn, 32, "float8_e8m0fnu", report=True
    )
    assert str(tree) == "(0+1)"
    p = rep["products"]
    assert p["status"] == "revealed", p
    inside = "+".join(str(i) for i in range(32))
    second = "+".join(str(i) for i in range(32, 64))
    assert str(p["tree"]) == f"(({inside})+({second}))"
    assert p["probes"] > 0
    assert "products (every scale 1)" in rep["summary"]


def test_fp4_products_are_not_probed():
    _, rep = fprev.reveal_scaled_dot(
        _model(16, 64, 35), 64, ml_dtypes.float4_e2m1fn, 16, "ue4m3", report=True
    )
    assert rep["products"]["status"] == "not_probed"
    assert "e2m1" in rep["products"]["why"]
