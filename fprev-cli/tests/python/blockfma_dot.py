"""fprev --exec --op dot responder: a block-FMA chain (a Tensor Core model) in plain Python.

Usage: blockfma_dot.py NFMA FRAC FRAC_OUT
Each line holds 2n numbers (a, then b); the answer is the dot product through blocks of
NFMA products plus the running accumulator, aligned to the largest exponent, truncated to
FRAC fraction bits below it, summed exactly, the result truncated to FRAC_OUT fraction
bits and rounded to float32: fprev::fused::BlockFma with an aligned accumulator.
"""
import math
import struct
import sys

nfma, frac, frac_out = (int(v) for v in sys.argv[1:4])


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def trunc_bits(v, bits, top):
    """v truncated toward zero to multiples of 2^(top - bits)."""
    q = math.ldexp(1.0, top - bits)
    return math.trunc(v / q) * q


def fused(terms):
    nz = [t for t in terms if t != 0.0]
    if not nz:
        return 0.0
    emax = max(math.frexp(abs(t))[1] - 1 for t in nz)
    s = sum(trunc_bits(t, frac, emax) for t in terms)  # exact: few terms, narrow values
    if s != 0.0:
        s = trunc_bits(s, frac_out, math.frexp(abs(s))[1] - 1)
    return f32(s)


for line in sys.stdin:
    v = [float(t) for t in line.split()]
    n = len(v) // 2
    products = [a * b for a, b in zip(v[:n], v[n:])]
    acc = None
    for k in range(0, n, nfma):
        block = products[k : k + nfma]
        acc = fused(([acc] if acc is not None else []) + block)
    print(repr(acc if acc is not None else 0.0), flush=True)
