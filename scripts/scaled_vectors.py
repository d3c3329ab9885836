#!/usr/bin/env python3
"""Writes tests/data/scaled_vectors.txt: block-scaled dot products answered by the
independent responder fprev-cli/tests/python/scaled_dot.py (plain Python fractions,
none of fprev's code), which tests/scaled_vectors.rs checks bit for bit against
fprev::fused::BlockScaledFma.

Each case is a line `# FLAGS` (the responder's flags), then rows `ANSWER | LINE`:
the f32 answer's bits in hex and the probe line of the --exec contract (a, b, the
scales of a's blocks, the scales of b's). Inputs: random element codes (a quarter zero),
random scales (UE8M0 over 2 to 80 binades, UE4M3 over every non-zero code), some rows
with one block's products cancelling exactly. Seeded: the file is reproducible.

    python3 scripts/scaled_vectors.py > tests/data/scaled_vectors.txt
"""

import os
import random
import struct
import sys
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fprev-cli", "tests", "python"))
import scaled_dot  # noqa: E402

# element values from the OCP MX formulas: sign, exponent, mantissa, bias
LAYOUT = {"e2m1": (2, 1, 1), "e3m2": (3, 2, 3), "e2m3": (2, 3, 1), "e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}


def values(fmt):
    e_bits, m_bits, bias = LAYOUT[fmt]
    out = []
    for e in range(1 << e_bits):
        for m in range(1 << m_bits):
            if fmt == "e4m3" and e == 15 and m == 7:
                continue  # NaN
            if fmt == "e5m2" and e == 31:
                continue  # infinities and NaNs
            if e == 0:
                v = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
            else:
                v = (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
            out += [v, -v]
    return out


def ue4m3():
    # non-zero, non-NaN codes of E4M3 with the sign bit clear
    return [v for v in values("e4m3") if v > 0]


def text(v):
    f = float(v)
    return "0" if f == 0 else repr(f).removesuffix(".0") if repr(f).endswith(".0") else repr(f)


CASES = [
    "--fmt e2m1 --scale ue4m3 --block 16 --k 64 --group 16 --align scales --frac 35 --out trunc --c aligned",
    "--fmt e2m1 --scale ue8m0 --block 32 --k 64 --group 32 --align scales --frac 35 --out trunc --c aligned",
    "--fmt e4m3 --scale ue8m0 --block 32 --k 32 --group 1 --align operands --frac 25 --out trunc --c late",
    "--fmt e5m2 --scale ue8m0 --block 32 --k 32 --group 1 --align operands --frac 25 --out trunc --c late",
    "--fmt e2m1 --scale ue4m3 --block 16 --k 64 --group 8 --align term --frac 24 --out rn --c aligned",
    "--fmt e3m2 --scale ue8m0 --block 32 --k 64 --group 4 --align scales --frac 30 --out trunc --c late",
    "--fmt e2m3 --scale ue8m0 --block 32 --k 32 --group 2 --align term --frac 20 --out rn --c aligned",
]


def main():
    rng = random.Random(48)
    for flags in CASES:
        args = scaled_dot.parser().parse_args(flags.split())
        print("# " + flags)
        elems = values(args.fmt)
        for row in range(16):
            k = args.k * (1 + row % 3)
            nb = k // args.block
            a = [Fraction(0) if rng.random() < 0.25 else rng.choice(elems) for _ in range(k)]
            b = [Fraction(0) if rng.random() < 0.25 else rng.choice(elems) for _ in range(k)]
            if row % 4 == 3:
                # block 0's products cancel exactly: its second half is the first negated
                h = args.block // 2
                for i in range(h):
                    a[h + i], b[h + i] = -a[i], b[i]
            if args.scale == "ue4m3":
                sa = [rng.choice(ue4m3()) for _ in range(nb)]
                sb = [rng.choice(ue4m3()) for _ in range(nb)]
            else:
                spread = rng.choice([1, 4, 12, 20, 40])
                sa = [Fraction(2) ** rng.randint(-spread, spread) for _ in range(nb)]
                sb = [Fraction(2) ** rng.randint(-spread, spread) for _ in range(nb)]
            v = a + b + sa + sb
            r = float(scaled_dot.answer(args, v))
            bits = struct.unpack("<I", struct.pack("<f", r))[0]
            print(f"{bits:08x} | " + " ".join(text(x) for x in v))


if __name__ == "__main__":
    main()
