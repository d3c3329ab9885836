"""An `fprev reveal --exec ... --op dot --dtype f8e4m3 --acc-dtype f32` responder that
answers with one element of an FP8 GEMM on the GPU: PyTorch's `torch._scaled_mm`, which
calls cuBLASLt's FP8 matmul (e4m3 operands, f32 output, unit scales).

Each probe line holds 2k numbers, `a` then `b`. They become row 0 of A (16 x K) and
column 0 of B (K x 16), K the next multiple of 16 (cuBLASLt's FP8 shape rule), every
other entry zero; the answer is C[0, 0]. Usage (run by scripts/gpu_verify.sh):

    fprev reveal --exec "python3 scripts/gpu/fp8_scaled_mm.py" --op dot \
        --dtype f8e4m3 --acc-dtype f32 --n 64
"""

import sys

import torch


def main():
    dev = torch.device("cuda")
    one = torch.ones((), dtype=torch.float32, device=dev)
    shape = None
    for line in sys.stdin:
        values = [float(v) for v in line.split()]
        k = len(values) // 2
        padded = (k + 15) // 16 * 16
        if shape != padded:
            shape = padded
            a = torch.zeros((16, padded), dtype=torch.float32, device=dev)
            bt = torch.zeros((16, padded), dtype=torch.float32, device=dev)
        row = torch.tensor(values, dtype=torch.float32, device=dev)
        a[0, :k] = row[:k]
        bt[0, :k] = row[k:]
        a8 = a.to(torch.float8_e4m3fn)
        # column-major B, as cuBLASLt's FP8 path wants it
        b8 = bt.to(torch.float8_e4m3fn).t()
        c = torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.float32)
        print(repr(float(c[0, 0])), flush=True)


if __name__ == "__main__":
    main()
