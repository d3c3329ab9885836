#!/usr/bin/env python3
"""An independent bit-accurate responder for block-scaled dot products, for
`fprev reveal --exec ... --op scaled-dot`. Plain Python (fractions.Fraction, integers),
none of fprev's code.

Written from the published descriptions:
- OCP Microscaling (MX) Formats Specification v1.0 (2023): element types E2M1 (FP4),
  E3M2 and E2M3 (FP6), E4M3 and E5M2 (FP8); the shared scale UE8M0 (2^-127..2^127) per
  block of 32 elements; the dot of two MX vectors is sum_k a_k b_k times the two blocks'
  scales (section 6.2).
- NVIDIA PTX ISA, tcgen05.mma with .kind::mxf8f6f4 and .kind::mxf4nvf4: block-scaled
  MMA, scale vectors of UE8M0 per 32 elements or UE4M3 per 16 (NVFP4), the result
  accumulated in f32 with C.
- What the issue states of the unit (the hardware's internals are not published):
  products may be summed exactly in groups; groups times their scales enter a fused
  multi-term adder aligned to the largest exponent, cut toward zero `--frac` fraction bits
  below it; the instruction's result is truncated to 23 fraction bits or rounded to
  nearest in f32; C enters the adder aligned with the terms or is added after.

Each input line holds 2K + 2K/B numbers: a[0..K), b[0..K), the K/B scales of a's blocks,
then the K/B scales of b's; the answer is one number per line (the f32 result), flushed.
With --binary K: each probe is 2K + 2K/B bytes in the same order, each value's code (an
FP4/FP6 element in the low bits, sign bit highest; FP8 and scales their 8 bits); the
answer is the f32 result's 4 bytes, little-endian, flushed.

  --fmt e2m1|e3m2|e2m3|e4m3|e5m2  --scale ue8m0|ue4m3  --block B  --k K_INSTRUCTION
  --group G  --align term|scales|operands  --frac F  --out trunc|rn  --c aligned|late
  [--binary K]
"""

import argparse
import sys
from fractions import Fraction

# (exponent bits, fraction bits, bias) of each element format (OCP MX v1.0 tables)
LAYOUT = {"e2m1": (2, 1, 1), "e3m2": (3, 2, 3), "e2m3": (2, 3, 1), "e4m3": (4, 3, 7),
          "e5m2": (5, 2, 15)}


def decode(code, e_bits, m_bits, bias, signed=True):
    """The value of a sign/exponent/fraction code, as a Fraction (subnormals at
    exponent field 0)."""
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    if e == 0:
        v = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
    else:
        v = (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
    return -v if signed and code >> (e_bits + m_bits) & 1 else v


def decode_probe(args, raw, k):
    """The values of one binary probe of k elements per operand."""
    e_bits, m_bits, bias = LAYOUT[args.fmt]
    values = [decode(c, e_bits, m_bits, bias) for c in raw[: 2 * k]]
    for c in raw[2 * k :]:
        if args.scale == "ue8m0":
            values.append(Fraction(2) ** (c - 127))
        else:  # UE4M3: E4M3 without its sign
            values.append(decode(c, 4, 3, 7, signed=False))
    return values


# smallest normal exponent of each element format (OCP MX v1.0 tables)
ELEMENT_MIN_EXP = {"e2m1": 0, "e3m2": -2, "e2m3": 0, "e4m3": -6, "e5m2": -14}


def floor_log2(x):
    """floor(log2 |x|) of a non-zero Fraction, exactly."""
    x = abs(x)
    n, d = x.numerator, x.denominator
    e = n.bit_length() - d.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    elif Fraction(2) ** (e + 1) <= x:
        e += 1
    return e


def exponent(x, min_exp):
    """A value's exponent as an adder's input stage reads it: clamped below at the
    format's smallest normal exponent; a zero's is that exponent."""
    if x == 0:
        return min_exp
    return max(floor_log2(x), min_exp)


def cut(x, quantum):
    """x truncated toward zero to a multiple of quantum."""
    q = x / quantum
    n = q.numerator // q.denominator if q >= 0 else -((-q.numerator) // q.denominator)
    return n * quantum


def to_f32(x, truncate):
    """x as an f32: truncated to 23 fraction bits below its leading bit, or rounded to
    nearest, ties to even (leading bit no lower than 2^-126)."""
    if x == 0:
        return Fraction(0)
    e = max(floor_log2(x), -126)
    quantum = Fraction(2) ** (e - 23)
    if truncate:
        return cut(x, quantum)
    q = x / quantum
    lo = q.numerator // q.denominator
    rest = q - lo
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and lo % 2 == 1):
        lo += 1
    return lo * quantum


def parser():
    p = argparse.ArgumentParser()
    p.add_argument("--fmt", required=True, choices=sorted(ELEMENT_MIN_EXP))
    p.add_argument("--scale", required=True, choices=["ue8m0", "ue4m3"])
    p.add_argument("--block", type=int, required=True)
    p.add_argument("--k", type=int, required=True, help="products per instruction")
    p.add_argument("--group", type=int, required=True)
    p.add_argument("--align", required=True, choices=["term", "scales", "operands"])
    p.add_argument("--frac", type=int, required=True)
    p.add_argument("--out", default="trunc", choices=["trunc", "rn"])
    p.add_argument("--c", default="aligned", choices=["aligned", "late"])
    p.add_argument("--binary", type=int, metavar="K", help="binary probes of K elements")
    return p


def answer(args, v):
    """The scaled dot of one line's values `v` (Fractions), C = 0, as a Fraction."""
    emin = ELEMENT_MIN_EXP[args.fmt]
    # UE8M0 has no subnormals; UE4M3's smallest normal exponent is E4M3's, -6
    smin = -127 if args.scale == "ue8m0" else -6
    # 2K + 2K/B numbers
    k = len(v) * args.block // (2 * args.block + 2)
    nb = k // args.block
    a, b, sa, sb = v[:k], v[k : 2 * k], v[2 * k : 2 * k + nb], v[2 * k + nb :]
    kpad = -(-k // args.k) * args.k
    c = Fraction(0)
    for start in range(0, kpad, args.k):
        terms = []
        for g in range(start, start + args.k, args.group):
            if g >= k:
                break
            blk = g // args.block
            s = sum((a[i] * b[i] for i in range(g, min(g + args.group, k))), Fraction(0))
            if s == 0:
                continue  # a group of zero products is no term
            value = s * sa[blk] * sb[blk]
            scales = exponent(sa[blk], smin) + exponent(sb[blk], smin)
            if args.align == "term":
                label = floor_log2(value)
            elif args.align == "scales":
                label = scales
            else:
                label = scales + exponent(a[g], emin) + exponent(b[g], emin)
            terms.append((value, label))
        if args.c == "aligned" and c != 0:
            terms.append((c, exponent(c, -126)))
        if terms:
            top = max(t[1] for t in terms)
            quantum = Fraction(2) ** (top - args.frac)
            total = sum((cut(t[0], quantum) for t in terms), Fraction(0))
            r = to_f32(total, args.out == "trunc")
        else:
            r = Fraction(0) if args.c == "late" else c
        if args.c == "late":
            c = to_f32(c + r, truncate=False)
        else:
            c = r
    return c


def main():
    args = parser().parse_args()
    out = sys.stdout
    if args.binary:
        import struct

        k = args.binary
        size = 2 * k + 2 * (k // args.block)
        while True:
            raw = sys.stdin.buffer.read(size)
            if len(raw) < size:
                return
            c = answer(args, decode_probe(args, raw, k))
            # an f32 value: packing its exact float loses nothing
            out.buffer.write(struct.pack("<f", float(c)))
            out.buffer.flush()
    for line in sys.stdin:
        # each number is the shortest decimal of a binary value: read it as that value
        c = answer(args, [Fraction(float(t)) for t in line.split()])
        # an f32 value printed as the shortest decimal of the same f64: reads back exactly
        out.write(repr(float(c)) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
