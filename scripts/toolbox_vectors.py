#!/usr/bin/env python3
"""Port the hardware test vectors of Khattak and Mikaitis' MATLAB Tensor Core toolbox.

The toolbox (https://github.com/north-numerical-computing/MATLAB-tensor-core, BSD-2-Clause,
Copyright (c) 2025 Faizan A. Khattak and Mantas Mikaitis; "Accurate Models of NVIDIA Tensor
Cores", arXiv:2512.07004) keeps, under model_validation/, D = A*B + C for one output element,
measured on V100, A100, A2, Ada, L40S, H100, H200 and B200. Its files are

  a_<GPU>_<fmt>.txt, b_<GPU>_<fmt>.txt  K inputs a line, each the f32 bit pattern (hex) of a
                                        value exact in <fmt>
  c_<GPU>_fp32.txt                      one f32 a line, as a 32-character binary string
  d_<GPU>_fp32.txt / d_<GPU>_fp16.txt   the GPU's result, the same way (an f16 result widened
                                        to f32)

This script reads them from a clone of that repository (bare or not: through `git show`) and
writes one compact file per (GPU, input format, output format) that tests/toolbox_vectors.rs
reads:

  # comment lines
  <a> <b> <c> <d>

<a> and <b> are the K codes of the input format (fp16/bf16: 4 hex digits each, tf32: the 19-bit
code, 5 hex digits, E4M3/E5M2: 2), concatenated; <c> is the f32 bit pattern the toolbox's
c file holds (8 hex digits), <d> the result in the output format (f32: 8 hex digits, f16: 4).

Usage (stdlib only):
  scripts/toolbox_vectors.py --repo PATH                 # tests/data/toolbox, first 500 rows
  scripts/toolbox_vectors.py --repo PATH --all DIR       # every row (5000 a case) into DIR
"""

import argparse
import os
import struct
import subprocess
import sys

DEFAULT_REPO = "/work/.mirror/north-numerical-computing+MATLAB-tensor-core/repo"
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "data", "toolbox")

# K per GPU and input format, as model_validation/Validate_TC_models.m pairs them
# (A2 and A30 as A100, L40S as Ada, H200 as H100).
K = {
    "V100": {"fp16": 4},
    "A100": {"fp16": 8, "bf16": 8, "tf32": 4},
    "Ada": {"fp16": 8, "bf16": 8, "tf32": 4, "E5M2": 32, "E4M3": 32},
    "H100": {"fp16": 16, "bf16": 16, "tf32": 4, "E5M2": 32, "E4M3": 32},
}
K["A2"] = K["A100"]
K["L40S"] = K["Ada"]
K["H200"] = K["H100"]
K["B200"] = K["H100"]
GPUS = ["V100", "A100", "A2", "Ada", "L40S", "H100", "H200", "B200"]
FORMATS = ["fp16", "bf16", "tf32", "E5M2", "E4M3"]


def git_show(repo, path):
    return subprocess.run(
        ["git", "-C", repo, "show", "HEAD:" + path],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8-sig")


def git_files(repo):
    out = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", "model_validation/"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    return set(out.split())


def f32_to_f16_bits(bits):
    """The f16 code of an f32 value that f16 holds exactly (ValueError otherwise)."""
    (x,) = struct.unpack("<f", struct.pack("<I", bits))
    h = struct.unpack("<H", struct.pack("<e", x))[0]
    (back,) = struct.unpack("<e", struct.pack("<H", h))
    if not (back == x or (x != x and back != back)):
        raise ValueError(f"{bits:08x} is not an f16 value")
    if x == 0 and (bits >> 31) != (h >> 15):
        raise ValueError("zero sign lost")
    return h


def fp8_code(bits, ebits, mbits):
    """The OCP FP8 code of an f32 value that the format holds exactly."""
    sign = bits >> 31
    exp = (bits >> 23) & 0xFF
    frac = bits & 0x7FFFFF
    bias = (1 << (ebits - 1)) - 1
    if exp == 0 and frac == 0:
        return sign << 7
    if exp == 0xFF:
        raise ValueError(f"{bits:08x}: no infinities or NaNs expected")
    e = exp - 127
    sig = (1 << 23) | frac  # 1.frac, 23 fraction bits
    if e >= 1 - bias:
        if frac & ((1 << (23 - mbits)) - 1):
            raise ValueError(f"{bits:08x} is not exact in e{ebits}m{mbits}")
        code = ((e + bias) << mbits) | (frac >> (23 - mbits))
    else:
        # subnormal: value = m * 2^(1 - bias - mbits)
        shift = 23 - mbits + (1 - bias - e)
        if sig & ((1 << shift) - 1):
            raise ValueError(f"{bits:08x} is not exact in e{ebits}m{mbits}")
        code = sig >> shift
    if code >= (1 << 7):
        raise ValueError(f"{bits:08x} out of range")
    if ebits == 4 and code == 0x7F:
        raise ValueError("E4M3 NaN")
    return (sign << 7) | code


def input_code(fmt, bits):
    if fmt == "fp16":
        return f"{f32_to_f16_bits(bits):04x}"
    if fmt == "bf16":
        if bits & 0xFFFF:
            raise ValueError(f"{bits:08x} is not a bf16 value")
        return f"{bits >> 16:04x}"
    if fmt == "tf32":
        if bits & 0x1FFF:
            raise ValueError(f"{bits:08x} is not a tf32 value")
        return f"{bits >> 13:05x}"
    if fmt == "E4M3":
        return f"{fp8_code(bits, 4, 3):02x}"
    if fmt == "E5M2":
        return f"{fp8_code(bits, 5, 2):02x}"
    raise ValueError(fmt)


def read_hex_rows(text, k):
    rows = []
    for line in text.splitlines():
        tok = line.split()
        if not tok:
            continue
        if len(tok) != k:
            raise ValueError(f"expected {k} values a line, found {len(tok)}")
        rows.append([int(t, 16) for t in tok])
    return rows


def read_binary_words(text):
    words = []
    for tok in text.split():
        if len(tok) != 32 or set(tok) - {"0", "1"}:
            raise ValueError(f"not a 32-bit binary word: {tok!r}")
        words.append(int(tok, 2))
    return words


def cases(files):
    for gpu in GPUS:
        for fmt in FORMATS:
            for out in ("fp32", "fp16"):
                base = f"model_validation/{gpu}/{fmt}/"
                d = f"{base}d_{gpu}_{out}.txt"
                if d in files and fmt in K[gpu]:
                    yield gpu, fmt, out, base, d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=DEFAULT_REPO, help="clone of MATLAB-tensor-core")
    ap.add_argument("--rows", type=int, default=500, help="rows a case (default 500)")
    ap.add_argument("--all", metavar="DIR", help="write every row into DIR instead")
    args = ap.parse_args()
    out_dir = args.all or DEFAULT_OUT
    rows_wanted = None if args.all else args.rows
    os.makedirs(out_dir, exist_ok=True)
    commit = subprocess.run(
        ["git", "-C", args.repo, "rev-parse", "HEAD"], check=True, capture_output=True
    ).stdout.decode().strip()
    files = git_files(args.repo)
    total = 0
    for gpu, fmt, out, base, d_path in cases(files):
        k = K[gpu][fmt]
        a = read_hex_rows(git_show(args.repo, f"{base}a_{gpu}_{fmt}.txt"), k)
        b = read_hex_rows(git_show(args.repo, f"{base}b_{gpu}_{fmt}.txt"), k)
        c = read_binary_words(git_show(args.repo, f"{base}c_{gpu}_fp32.txt"))
        d = read_binary_words(git_show(args.repo, d_path))
        n = len(d)
        if not (len(a) == len(b) == len(c) == n):
            raise ValueError(f"{gpu} {fmt}: {len(a)}, {len(b)}, {len(c)}, {n} rows")
        if rows_wanted is not None:
            n = min(n, rows_wanted)
        name = f"{gpu}_{fmt}_{out}.txt".lower()
        lines = [
            f"# {gpu} {fmt} inputs, {out} output, K = {k}: D = A*B + C measured on the GPU",
            f"# from MATLAB-tensor-core {commit} model_validation/{gpu}/{fmt}/",
            "# (BSD-2-Clause, Copyright (c) 2025 Faizan A. Khattak and Mantas Mikaitis;",
            "# see LICENSE here). Regenerate: scripts/toolbox_vectors.py",
            "# a (K codes) b (K codes) c (f32 bits, as the c file holds it) d",
        ]
        for i in range(n):
            ac = "".join(input_code(fmt, v) for v in a[i])
            bc = "".join(input_code(fmt, v) for v in b[i])
            if out == "fp16":
                dc = f"{f32_to_f16_bits(d[i]):04x}"
            else:
                dc = f"{d[i]:08x}"
            lines.append(f"{ac} {bc} {c[i]:08x} {dc}")
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        total += os.path.getsize(path)
        print(f"{name}: {n} rows", file=sys.stderr)
    print(f"{total} bytes in {out_dir}", file=sys.stderr)


if __name__ == "__main__":
    main()
