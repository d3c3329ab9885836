"""fprev --exec --op dot responder: a Tensor Core dot product as the published models
describe it, written from the papers, not from fprev's code (so the two cannot share a
bug): Khattak and Mikaitis, "Accurate Models of NVIDIA Tensor Cores" (arXiv:2512.07004),
and Xie et al., "MMA-Sim" (arXiv:2511.10909). Plain Python integers, no numpy.

Usage: tensor_core_dot.py --fmt e4m3|e5m2|e4m3fnuz|e5m2fnuz|f16|bf16|tf32 --nfma N --frac F --out f32|e8m13|f16
                          [--align operands|product] [--chunk K] [--c aligned|late|amd|amd-fp8|f16-last]
       tensor_core_dot.py --fmt f16|bf16 --nfma N --c pairwise [--ftz]

Each input line holds 2n numbers, a then b; the answer is one float. One block of the
chain: the running value c and the next N products a_i b_i. Each operand's exponent is
clamped below at its format's smallest normal exponent (a subnormal keeps a denormalised
significand); a product is aligned by the sum of its operands' exponents (significand in
[1, 4)), or with --align product by its own normalised exponent; c by its exponent
clamped at f32's -126. The largest of these exponents, never below -126, sets the
quantum 2^(emax - F); every term is cut toward zero to a multiple of it and the cut terms
are added exactly. The sum is then cut toward zero to 23 (f32) or 13 (e8m13) fraction
bits below its own leading bit (that bit taken no lower than 2^-126), or rounded to
nearest even to f16's 10 (no lower than 2^-14). A zero sum is +0. With --chunk K the
chain restarts every K products and the chunk results are added in f32, round to
nearest even (cuBLAS's FP8 promotion). With --c late the block's products are fused
alone (c = 0 in the node) and the running value is added to the block result afterwards
in f32, round to nearest even (Khattak and Mikaitis: the presets that add c late).
With --c amd the block is AMD CDNA3's (Xie et al., MMA-Sim, `amd_fused_dot_rd_add`): the
block's products alone are aligned to their largest exponent (no clamp at -126) and cut
toward zero to F bits; the block's sum and the running value c (its exponent clamped at
-126, a zero's taken as -126) are then aligned to the larger of their two exponents and
cut toward minus infinity, the sum to 31 fraction bits and c to 24, added exactly and
rounded to nearest even in f32 (the first block meets c = 0 the same way).
With --c amd-fp8 the block is CDNA3's FP8 one (MMA-Sim, `amd_fused_dot_rd_add` with
is_fp8): the block's products are split into two interleaved halves (even and odd
positions in the block), each half aligned to its own largest exponent and cut toward
zero to F bits; the two half sums are aligned to the larger of their exponents and cut
toward minus infinity to F bits, then added exactly; that sum and c join as with
--c amd (31 and 24 bits toward minus infinity), except that c counts as zero when its
exponent lies more than 25 below the larger exponent.
With --c f16-last (Hopper's and Blackwell's FP8 mma.sync.m16n8k32 into f16, as fprev
found it on the toolbox's hardware vectors): each instruction's 32 products are taken in
the order k = 0, 1, 4, 5, ..., 29 (k mod 4 in 0, 1), then 2, 3, 6, 7, ..., 31, fused in
blocks of N (16) chained as --c aligned chains them (the first block with no running
value), each block's result rounded to nearest even in f16 (--out f16), and the running
value c of the instruction added to that result last, in one f16 addition rounded to
nearest even.
With --fmt tf32 the operands arrive as f32 values and are cut to TF32 first, as the
hardware reads them: the low 13 of f32's 23 fraction bits dropped (toward zero).
With --c pairwise the unit is AMD CDNA1/CDNA2's (MMA-Sim, `pairwise_dot`): no fused
adder; each group of N products (the last one shorter) is summed pairwise, the left half
len // 2 long, every addition an f32 one rounded to nearest even, and each group's sum
is added to the running value (starting at +0) in f32. With --ftz too (CDNA2), operands
below their format's smallest normal become +0, and every f32 result below 2^-126 a
zero of its sign. --frac and --out do not apply there.
"""
import argparse
import sys
from fractions import Fraction

# smallest normal exponent of each operand format
# (AMD's FNUZ formats: bias one larger than OCP's, so one binade lower)
EMIN = {
    "e4m3": -6,
    "e5m2": -14,
    "e4m3fnuz": -7,
    "e5m2fnuz": -15,
    "f16": -14,
    "bf16": -126,
    "tf32": -126,
}
F32_EMIN = -126


def exact(v):
    """v as (m, e), v == m * 2^e with m an integer: floats are dyadic rationals."""
    num, den = v.as_integer_ratio()
    return num, -(den.bit_length() - 1)


def lead(m, e):
    """floor(log2 |m 2^e|) of a non-zero value."""
    return abs(m).bit_length() - 1 + e


def cut(m, e, q):
    """m 2^e cut toward zero to a multiple of 2^q, as the integer count of 2^q."""
    if e >= q:
        return m << (e - q)
    mag = abs(m) >> (q - e)
    return mag if m >= 0 else -mag


def nearest_even(m, e, q):
    """m 2^e rounded to nearest (ties to even) to a multiple of 2^q, as the count."""
    if e >= q:
        return m << (e - q)
    sh = q - e
    mag = abs(m)
    down = mag >> sh
    rest = mag - (down << sh)
    half = 1 << (sh - 1)
    if rest > half or (rest == half and down & 1):
        down += 1
    return down if m >= 0 else -down


def to_float(m, e):
    return float(m) * 2.0 ** e if m else 0.0


def tf32_cut(m, e):
    """An f32 value m 2^e cut toward zero to TF32's 10 fraction bits (a quantum of
    2^(lead - 10), no lower than 2^(-126 - 10) for subnormals)."""
    if m == 0:
        return m, e
    q = max(lead(m, e), EMIN["tf32"]) - 10
    return cut(m, e, q), q


def operand_exponent(m, e, fmt):
    if m == 0:
        return EMIN[fmt]
    return max(lead(m, e), EMIN[fmt])


def block(c, products, args):
    """One fused node: c (m, e) and the products ((m, e), alignment exponent)."""
    terms = []
    if c[0] != 0:
        terms.append((c, max(lead(*c), F32_EMIN)))
    terms += [p for p in products if p[0][0] != 0]
    if not terms:
        return (0, 0)
    emax = max(max(x for _, x in terms), F32_EMIN)
    q = emax - args.frac
    total = sum(cut(m, e, q) for (m, e), _ in terms)
    if total == 0:
        return (0, 0)  # +0, whatever cancelled
    top = max(lead(total, q), F32_EMIN if args.out != "f16" else -14)
    if args.out == "f16":
        k = nearest_even(total, q, top - 10)
        return (k, top - 10)
    bits = 13 if args.out == "e8m13" else 23
    return (cut(total, q, top - bits), top - bits)


def floor_to(m, e, q):
    """m 2^e rounded toward minus infinity to a multiple of 2^q, as the count."""
    if e >= q:
        return m << (e - q)
    return m >> (q - e)  # Python's >> floors negative integers


def amd_block(c, products, args):
    """AMD CDNA3: the products fused alone, then joined to c with the 31/24-bit
    round-down alignment, rounded to nearest even in f32."""
    live = [p for p in products if p[0][0] != 0]
    if live:
        emax = max(x for _, x in live)
        q = emax - args.frac
        s = (sum(cut(m, e, q) for (m, e), _ in live), q)
    else:
        emax, s = None, (0, 0)
    ec = max(lead(*c), F32_EMIN) if c[0] != 0 else F32_EMIN
    top = ec if emax is None else max(emax, ec)
    qs, qc = top - 31, top - 24
    q = min(qs, qc)
    total = (floor_to(s[0], s[1], qs) << (qs - q)) + (floor_to(c[0], c[1], qc) << (qc - q))
    if total == 0:
        return (0, 0)
    qo = max(lead(total, q), F32_EMIN) - 23
    return (nearest_even(total, q, qo), qo)


def amd_fp8_block(c, products, args):
    """AMD CDNA3's FP8 groups: two interleaved halves fused apart, joined toward minus
    infinity at F bits, then joined to c as amd_block does (c dropped beyond 25
    binades), rounded to nearest even in f32."""
    halves = []
    for half in (products[0::2], products[1::2]):
        live = [p for p in half if p[0][0] != 0]
        if live:
            e = max(x for _, x in live)
            q = e - args.frac
            halves.append((sum(cut(m, pe, q) for (m, pe), _ in live), q, e))
    ec = max(lead(*c), F32_EMIN) if c[0] != 0 else F32_EMIN
    if halves:
        e = max(h[2] for h in halves)
        qh = e - args.frac
        s = (sum(floor_to(m, q, qh) for m, q, _ in halves), qh)
        top = max(e, ec)
    else:
        s, top = (0, 0), ec
    qs, qc = top - 31, top - 24
    q = min(qs, qc)
    kept = c if ec >= top - 25 else (0, 0)
    total = (floor_to(s[0], s[1], qs) << (qs - q)) + (floor_to(kept[0], kept[1], qc) << (qc - q))
    if total == 0:
        return (0, 0)
    qo = max(lead(total, q), F32_EMIN) - 23
    return (nearest_even(total, q, qo), qo)


def add_f16(x, y):
    """x + y (both (m, e)) rounded to nearest even in f16 (no lower than 2^-14 for the
    leading bit: f16's subnormals)."""
    e = min(x[1], y[1])
    total = (x[0] << (x[1] - e)) + (y[0] << (y[1] - e))
    if total == 0:
        return (0, 0)
    q = max(lead(total, e), -14) - 10
    return (nearest_even(total, e, q), q)


def add_f32(x, y):
    """x + y (both (m, e)) rounded to nearest even in f32."""
    e = min(x[1], y[1])
    m = (x[0] << (x[1] - e)) + (y[0] << (y[1] - e))
    if m == 0:
        return (0, 0)
    q = max(lead(m, e), F32_EMIN) - 23
    return (nearest_even(m, e, q), q)


def round_f32(v):
    """The exact rational v rounded to nearest even in f32 (no overflow here: f16 and
    bf16 products and their sums stay far below f32's largest value)."""
    if v == 0:
        return 0.0
    num, den = v.numerator, v.denominator
    # the leading bit's exponent: 2^t <= |v| < 2^(t+1)
    t = abs(num).bit_length() - den.bit_length()
    if Fraction(abs(num), den) < Fraction(2) ** t:
        t -= 1
    q = max(t, F32_EMIN) - 23
    scaled = v / Fraction(2) ** q
    down = scaled.numerator // scaled.denominator  # floor
    rest = scaled - down
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and down % 2):
        down += 1
    if down == 0:
        return -0.0 if v < 0 else 0.0
    return float(Fraction(down) * Fraction(2) ** q)


def add_f32_float(x, y):
    """x + y of two f32 values (Python floats) in f32, round to nearest even; an exact
    zero is +0 unless both are -0, as IEEE 754 says."""
    total = Fraction(x) + Fraction(y)
    if total == 0:
        neg = str(x).startswith("-") and str(y).startswith("-")
        return -0.0 if neg else 0.0
    return round_f32(total)


def pairwise_groups(a, b, args):
    """AMD CDNA1/CDNA2 (--c pairwise): see the module's description."""
    tiny = 2.0 ** F32_EMIN

    def flush(v):
        return v * 0.0 if args.ftz and abs(v) < tiny else v

    def operand(v):
        return 0.0 if args.ftz and abs(v) < 2.0 ** EMIN[args.fmt] else v

    def pairwise(p):
        if len(p) == 1:
            return p[0]
        m = len(p) // 2
        return flush(add_f32_float(pairwise(p[:m]), pairwise(p[m:])))

    products = [flush(round_f32(Fraction(operand(x)) * Fraction(operand(y))))
                for x, y in zip(a, b)]
    total = 0.0
    for k in range(0, len(products), args.nfma):
        total = flush(add_f32_float(total, pairwise(products[k : k + args.nfma])))
    return total


def dot(a, b, args):
    n = len(a)
    products = []
    for x, y in zip(a, b):
        mx, ex = exact(x)
        my, ey = exact(y)
        if args.fmt == "tf32":
            mx, ex = tf32_cut(mx, ex)
            my, ey = tf32_cut(my, ey)
        m, e = mx * my, ex + ey
        if args.align == "operands":
            at = operand_exponent(mx, ex, args.fmt) + operand_exponent(my, ey, args.fmt)
        else:
            at = lead(m, e) if m else 0
        products.append(((m, e), at))
    chunk = args.chunk or max(n, 1)
    total = None
    for start in range(0, n, chunk):
        c = (0, 0)
        part = products[start : start + chunk]
        for k in range(0, len(part), args.nfma):
            if args.c == "amd":
                c = amd_block(c, part[k : k + args.nfma], args)
            elif args.c == "amd-fp8":
                c = amd_fp8_block(c, part[k : k + args.nfma], args)
            elif args.c == "f16-last":
                if k % 32 == 0:
                    # one instruction: its products in k mod 4 = 0, 1 then 2, 3 order
                    inst = part[k : k + 32]
                    order = [i for i in range(len(inst)) if i % 4 < 2]
                    order += [i for i in range(len(inst)) if i % 4 >= 2]
                    inst = [inst[i] for i in order]
                    d = (0, 0)
                    for j in range(0, len(inst), args.nfma):
                        d = block(d, inst[j : j + args.nfma], args)
                    c = add_f16(c, d)
            elif args.c == "late":
                c = add_f32(c, block((0, 0), part[k : k + args.nfma], args))
            else:
                c = block(c, part[k : k + args.nfma], args)
        total = c if total is None else add_f32(total, c)
    return total if total is not None else (0, 0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fmt", choices=sorted(EMIN), required=True)
    p.add_argument("--nfma", type=int, required=True)
    p.add_argument("--frac", type=int)
    p.add_argument("--out", choices=["f32", "e8m13", "f16"])
    p.add_argument("--align", choices=["operands", "product"], default="operands")
    p.add_argument("--chunk", type=int, default=0)
    p.add_argument("--c", choices=["aligned", "late", "amd", "amd-fp8", "f16-last", "pairwise"],
                   default="aligned")
    p.add_argument("--ftz", action="store_true")
    args = p.parse_args()
    if args.c != "pairwise" and (args.frac is None or args.out is None):
        p.error("--frac and --out are required for a fused unit")
    for line in sys.stdin:
        v = [float(t) for t in line.split()]
        n = len(v) // 2
        if args.c == "pairwise":
            print(repr(pairwise_groups(v[:n], v[n:], args)), flush=True)
        else:
            print(repr(to_float(*dot(v[:n], v[n:], args))), flush=True)


if __name__ == "__main__":
    main()
