"""Writes the pinned test vectors of tests/data/cdna3_vectors.txt: random dot products
answered by tensor_core_dot.py's AMD models (written from MMA-Sim's description, not
from fprev's code): CDNA3's fused groups (--c amd, --c amd-fp8 for FP8), checked against fprev's BlockFma
presets, and CDNA1/CDNA2's pairwise groups (--c pairwise, --ftz on CDNA2), checked
against its PairwiseGroups presets, bit for bit and without Python.

Usage: python3 cdna3_vectors.py > tests/data/cdna3_vectors.txt

Each line: preset (`cdna3-fp8` on e4m3fnuz operands, `cdna3-fp8:e5m2fnuz` on e5m2fnuz
ones), n, the a operands, the b operands (hex bits of f16, of the f32 that a TF32 value
is, or of the FP8 code), the f32 answer's hex bits. Seeded: the same file every run.
"""
import argparse
import random
import struct

import tensor_core_dot as tc


def f16_value(bits):
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def f32_value(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def draw_f16(rng):
    """A finite f16 code: mostly normal values over a wide exponent span, some
    subnormals, zeros and equal magnitudes (cancellation)."""
    r = rng.random()
    sign = rng.getrandbits(1) << 15
    if r < 0.05:
        return sign
    if r < 0.15:
        return sign | rng.randrange(1, 1 << 10)  # subnormal
    exp = rng.randrange(1, 31)
    return sign | (exp << 10) | rng.getrandbits(10)


def draw_tf32(rng):
    """A finite TF32 value's f32 bits (low 13 zero), exponents over f32's range
    mostly near 1, some far, some subnormal."""
    r = rng.random()
    sign = rng.getrandbits(1) << 31
    if r < 0.05:
        return sign
    if r < 0.12:
        return sign | (rng.randrange(1, 1 << 10) << 13)
    exp = 127 + rng.randrange(-40, 41) if r < 0.9 else rng.randrange(1, 255)
    return sign | (exp << 23) | (rng.getrandbits(10) << 13)


def bf16_value(bits):
    return f32_value(bits << 16)


def draw_bf16(rng):
    """A finite bf16 code: exponents within 2^+-60 of 1 (products and sums stay far from
    f32's overflow), some subnormals (their products reach f32's subnormals), zeros."""
    r = rng.random()
    sign = rng.getrandbits(1) << 15
    if r < 0.05:
        return sign
    if r < 0.15:
        return sign | rng.randrange(1, 1 << 7)  # subnormal
    exp = 127 + rng.randrange(-60, 61)
    return sign | (exp << 7) | rng.getrandbits(7)


def fnuz_value(bits, exp_bits, bias):
    """An FNUZ FP8 code's value (AMD MI300: no infinities, no -0, 0x80 the one NaN)."""
    man_bits = 7 - exp_bits
    sign = -1.0 if bits & 0x80 else 1.0
    e = (bits >> man_bits) & ((1 << exp_bits) - 1)
    m = bits & ((1 << man_bits) - 1)
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - man_bits)
    return sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)


def draw_fnuz(rng):
    """A finite, non-NaN FNUZ FP8 code: any of them, zeros a little more often."""
    if rng.random() < 0.05:
        return 0
    while True:
        bits = rng.randrange(256)
        if bits != 0x80:
            return bits


SIGN = {"f16": 0x8000, "tf32": 0x8000_0000, "bf16": 0x8000, "e4m3fnuz": 0x80,
        "e5m2fnuz": 0x80}

FP8 = {
    # name: (operand format, value of bits)
    "cdna3-fp8": ("e4m3fnuz", lambda b: fnuz_value(b, 4, 8)),
    "cdna3-fp8:e5m2fnuz": ("e5m2fnuz", lambda b: fnuz_value(b, 5, 16)),
}

PRESETS = {
    # name: (operand format, nfma, value of bits, draw)
    "cdna3-f16": ("f16", 8, f16_value, draw_f16),
    "cdna3-xf32": ("tf32", 4, f32_value, draw_tf32),
}

PAIRWISE = {
    # name: (operand format, group, flush subnormals, value of bits, draw)
    "cdna1-f16": ("f16", 4, False, f16_value, draw_f16),
    "cdna1-bf16": ("bf16", 2, False, bf16_value, draw_bf16),
    "cdna2-f16": ("f16", 4, True, f16_value, draw_f16),
    "cdna2-bf16-1k": ("bf16", 4, True, bf16_value, draw_bf16),
}


def vectors(rng, name, fmt, nfma, value, draw, answer, per_length):
    """Lines of random dot products of every interesting length, answered by
    `answer(a values, b values)`."""
    for n in [1, nfma - 1, nfma, nfma + 1, 2 * nfma, 4 * nfma + 3]:
        if n < 1:
            continue
        for _ in range(per_length):
            a = [draw(rng) for _ in range(n)]
            b = [draw(rng) for _ in range(n)]
            if n >= 2 and rng.random() < 0.4:
                # two products that cancel exactly: the block keeps their exponent
                j = rng.randrange(n - 1)
                a[j + 1], b[j + 1] = a[j] ^ SIGN[fmt], b[j]
                if fmt.endswith("fnuz") and a[j + 1] == 0x80:
                    a[j + 1] = 0  # FNUZ has no -0: its code is the NaN
            # products of f16 values stay finite in f32; TF32 ones may not
            got = answer([value(x) for x in a], [value(x) for x in b])
            try:
                bits = f32_bits(got)
            except OverflowError:
                continue
            hexes = lambda v: ",".join(f"{x:x}" for x in v)
            print(f"{name} {n} {hexes(a)} {hexes(b)} {bits:08x}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--per-length", type=int, default=12)
    args = p.parse_args()
    rng = random.Random(0xCD3A)
    for name, (fmt, nfma, value, draw) in PRESETS.items():
        model = argparse.Namespace(fmt=fmt, nfma=nfma, frac=24, out="f32", align="operands",
                                   chunk=0, c="amd")
        vectors(rng, name, fmt, nfma, value, draw,
                lambda va, vb: tc.to_float(*tc.dot(va, vb, model)), args.per_length)
    for name, (fmt, group, ftz, value, draw) in PAIRWISE.items():
        model = argparse.Namespace(fmt=fmt, nfma=group, c="pairwise", ftz=ftz)
        vectors(rng, name, fmt, group, value, draw,
                lambda va, vb: tc.pairwise_groups(va, vb, model), args.per_length)
    # after the others, so that their lines stay as they were
    for name, (fmt, value) in FP8.items():
        model = argparse.Namespace(fmt=fmt, nfma=16, frac=24, out="f32", align="operands",
                                   chunk=0, c="amd-fp8")
        vectors(rng, name, fmt, 16, value, draw_fnuz,
                lambda va, vb: tc.to_float(*tc.dot(va, vb, model)), args.per_length)


if __name__ == "__main__":
    main()
