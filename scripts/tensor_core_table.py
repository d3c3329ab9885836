"""The table of issue 31's closing: every architecture's matrix unit, as the independent
responder `fprev-cli/tests/python/tensor_core_dot.py` computes it (written from the
published models, not from fprev's code), revealed through `fprev reveal --exec ...
--op dot --format summary` at one instruction's k and chained; one row per case with
the tree, the arithmetic fprev measured, the probes and the seconds.

Usage: python3 scripts/tensor_core_table.py [FPREV_BINARY] [--only SUBSTRING]

FPREV_BINARY defaults to target/release/fprev (`cargo build --release -p fprev-cli`).
Exits non-zero when a case is refused or its tree is not the published one.
"""
import re
import subprocess
import sys
import time

RESPONDER = "python3 fprev-cli/tests/python/tensor_core_dot.py"

# (case, dtype, responder flags, k, the published tree's description prefix)
CASES = [
    ("Volta V100 mma (k = 4)", "f16", "--fmt f16 --nfma 4 --frac 23 --out f32", 4),
    ("Volta V100, 4 chained", "f16", "--fmt f16 --nfma 4 --frac 23 --out f32", 16),
    ("Volta V100, f16 result", "f16", "--fmt f16 --nfma 4 --frac 23 --out f16", 4),
    ("Ampere A100 half mma (k = 8)", "f16", "--fmt f16 --nfma 8 --frac 24 --out f32", 8),
    ("Ampere A100, 4 chained", "bf16", "--fmt bf16 --nfma 8 --frac 24 --out f32", 32),
    ("Ampere A100 TF32 (k = 4)", "tf32", "--fmt tf32 --nfma 4 --frac 24 --out f32", 4),
    ("Ampere A100 TF32, 2 chained", "tf32", "--fmt tf32 --nfma 4 --frac 24 --out f32", 8),
    ("Ada fp16 (k = 8), 2 chained", "f16", "--fmt f16 --nfma 8 --frac 24 --out f32", 16),
    ("Ada FP8 half mma (k = 16)", "f8e4m3", "--fmt e4m3 --nfma 16 --frac 13 --out e8m13", 16),
    ("Ada FP8, 4 chained", "f8e5m2", "--fmt e5m2 --nfma 16 --frac 13 --out e8m13", 64),
    ("Hopper H100 wgmma (k = 16)", "f16", "--fmt f16 --nfma 16 --frac 25 --out f32", 16),
    ("Hopper H100, 4 chained", "bf16", "--fmt bf16 --nfma 16 --frac 25 --out f32", 64),
    ("Hopper H100, f16 result", "f16", "--fmt f16 --nfma 16 --frac 25 --out f16", 16),
    ("Hopper H100 TF32 (k = 8), 4 chained", "tf32", "--fmt tf32 --nfma 8 --frac 25 --out f32",
     32),
    ("Hopper FP8 wgmma (k = 32)", "f8e4m3", "--fmt e4m3 --nfma 32 --frac 13 --out e8m13", 32),
    ("Hopper FP8, 4 chained", "f8e4m3", "--fmt e4m3 --nfma 32 --frac 13 --out e8m13", 128),
    ("Hopper FP8 GEMM, promoted every 128", "f8e4m3",
     "--fmt e4m3 --nfma 32 --frac 13 --out e8m13 --chunk 128", 256),
    ("Blackwell B200 (k = 16)", "bf16", "--fmt bf16 --nfma 16 --frac 25 --out f32", 16),
    ("Blackwell B200, 4 chained", "f16", "--fmt f16 --nfma 16 --frac 25 --out f32", 64),
    ("Blackwell B200 TF32, 2 chained", "tf32", "--fmt tf32 --nfma 8 --frac 25 --out f32", 16),
    ("Blackwell B200 FP8 (k = 32), 4 chained, c added late", "f8e4m3",
     "--fmt e4m3 --nfma 32 --frac 25 --out f32 --c late", 128),
    ("Hopper/Blackwell FP8 into f16 (mma.sync k = 32)", "f8e4m3",
     "--fmt e4m3 --nfma 16 --frac 25 --out f16 --c f16-last", 32),
    ("Hopper/Blackwell FP8 into f16, 2 chained", "f8e5m2",
     "--fmt e5m2 --nfma 16 --frac 25 --out f16 --c f16-last", 64),
    ("CDNA1 MI100 fp16 (groups of 4), 4 chained", "f16", "--fmt f16 --nfma 4 --c pairwise",
     16),
    ("CDNA1 MI100 bf16 (groups of 2), 4 chained", "bf16", "--fmt bf16 --nfma 2 --c pairwise",
     8),
    ("CDNA2 MI250 fp16, 4 chained", "f16", "--fmt f16 --nfma 4 --c pairwise --ftz", 16),
    ("CDNA3 MI300 fp16 (k = 8)", "f16", "--fmt f16 --nfma 8 --frac 24 --out f32 --c amd", 8),
    ("CDNA3 MI300 bf16, 4 chained", "bf16", "--fmt bf16 --nfma 8 --frac 24 --out f32 --c amd",
     32),
    ("CDNA3 MI300 xf32, 4 chained", "tf32", "--fmt tf32 --nfma 4 --frac 24 --out f32 --c amd",
     16),
    ("CDNA3 MI300 FP8 (k = 16)", "e4m3fnuz",
     "--fmt e4m3fnuz --nfma 16 --frac 24 --out f32 --c amd-fp8", 16),
    ("CDNA3 MI300 FP8, 4 chained", "e4m3fnuz",
     "--fmt e4m3fnuz --nfma 16 --frac 24 --out f32 --c amd-fp8", 64),
    ("CDNA3 MI300 BF8, 2 chained", "e5m2fnuz",
     "--fmt e5m2fnuz --nfma 16 --frac 24 --out f32 --c amd-fp8", 32),
]


def summary(fprev, dtype, flags, k):
    acc = "f16" if "--out f16" in flags else "f32"
    cmd = [fprev, "reveal", "--exec", f"{RESPONDER} {flags}", "--n", str(k), "--dtype", dtype,
           "--acc-dtype", acc, "--op", "dot", "--format", "summary"]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    return out, time.perf_counter() - start


def measured(lines):
    """The arithmetic lines of a summary, shortened for a table cell."""
    keep = []
    for line in lines:
        if line.startswith(("alignment:", "products:", "block results:", "running value",
                            "promotion", "additions:")):
            keep.append(line)
    text = "; ".join(keep)
    text = text.replace("by the operands' exponent sum, ", "")
    text = re.sub(r"fraction bits kept \((\d+-\d+) consistent\)", r"bits (\1)", text)
    return text


def main():
    args = sys.argv[1:]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i : i + 2]
    fprev = args[0] if args else "target/release/fprev"
    print("| case | operands | k | tree | measured arithmetic | probes | s |")
    print("|---|---|---|---|---|---|---|")
    failed = 0
    for case, dtype, flags, k in CASES:
        if only and only not in case:
            continue
        out, secs = summary(fprev, dtype, flags, k)
        if out.returncode != 0:
            failed += 1
            print(f"| {case} | {dtype} | {k} | refused: {out.stderr.strip()[:200]} | | | |")
            continue
        lines = out.stdout.strip().splitlines()
        probes = re.search(r"n = \d+, (\d+) probes", out.stderr)
        print(f"| {case} | {dtype} | {k} | {lines[0]} | {measured(lines[1:])} | "
              f"{probes.group(1) if probes else '?'} | {secs:.1f} |")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
