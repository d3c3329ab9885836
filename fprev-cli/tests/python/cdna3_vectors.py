"""Writes the pinned test vectors of tests/data/cdna3_vectors.txt: random dot products
answered by tensor_core_dot.py's AMD CDNA3 model (written from MMA-Sim's description,
not from fprev's code), so that fprev's BlockFma presets can be checked bit for bit
against it without Python.

Usage: python3 cdna3_vectors.py > tests/data/cdna3_vectors.txt

Each line: preset, n, the a operands, the b operands (hex bits of f16, or of the f32
that a TF32 value is), the f32 answer's hex bits. Seeded: the same file every run.
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


SIGN = {"f16": 0x8000, "tf32": 0x8000_0000}

PRESETS = {
    # name: (operand format, nfma, value of bits, draw)
    "cdna3-f16": ("f16", 8, f16_value, draw_f16),
    "cdna3-xf32": ("tf32", 4, f32_value, draw_tf32),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--per-length", type=int, default=12)
    args = p.parse_args()
    rng = random.Random(0xCD3A)
    for name, (fmt, nfma, value, draw) in PRESETS.items():
        model = argparse.Namespace(fmt=fmt, nfma=nfma, frac=24, out="f32", align="operands",
                                   chunk=0, c="amd")
        for n in [1, nfma - 1, nfma, nfma + 1, 2 * nfma, 4 * nfma + 3]:
            for _ in range(args.per_length):
                a = [draw(rng) for _ in range(n)]
                b = [draw(rng) for _ in range(n)]
                if n >= 2 and rng.random() < 0.4:
                    # two products that cancel exactly: the block keeps their exponent
                    j = rng.randrange(n - 1)
                    a[j + 1], b[j + 1] = a[j] ^ SIGN[fmt], b[j]
                # products of f16 values stay finite in f32; TF32 ones may not
                va = [value(x) for x in a]
                vb = [value(x) for x in b]
                got = tc.to_float(*tc.dot(va, vb, model))
                try:
                    bits = f32_bits(got)
                except OverflowError:
                    continue
                hexes = lambda v: ",".join(f"{x:x}" for x in v)
                print(f"{name} {n} {hexes(a)} {hexes(b)} {bits:08x}")


if __name__ == "__main__":
    main()
