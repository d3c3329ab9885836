"""The costs of issue 50: `fprev.torch.trace` of a 4-layer MLP (hidden 1024) at batch
sizes 1 and 8, and `fprev.torch.certify` of it over sizes 1..64, on the CPU.

Usage:
    python python/benches/bench_torch_trace.py [--hidden 1024] [--layers 4]
        [--ms 64] [--threads 1] [--skip-certify] [--svg PATH]

Prints each step's wall time (the model's runs, the bitwise comparison and the reveals
of the first divergence for the trace; the runs and the sweeps for the certificate),
what was found, and the peak resident memory of the process.
"""

import argparse
import resource
import time

import torch
from torch import nn

import fprev


class MLP(nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(layers)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = torch.relu(x)
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--ms", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-certify", action="store_true")
    ap.add_argument("--svg", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = MLP(args.hidden, args.layers).eval()
    base = torch.randn(args.ms, args.hidden)

    def make_input(m):
        return base[:m]

    start = time.perf_counter()
    t = fprev.torch.trace(model, make_input, sizes=(1, 8))
    took = time.perf_counter() - start
    print(f"trace, sizes (1, 8): {took:.2f} s, {len(t.ops)} operations")
    print(f"  {t.describe()}")
    if not args.skip_certify:
        start = time.perf_counter()
        cert = fprev.torch.certify(model, make_input, range(1, args.ms + 1))
        took = time.perf_counter() - start
        print(f"certify, sizes 1..{args.ms}: {took:.2f} s, invariant={cert.invariant}")
        print("  " + cert.describe().replace("\n", "\n  "))
        if args.svg:
            with open(args.svg, "w") as f:
                f.write(cert.svg(title=f"{args.layers}-layer MLP (hidden {args.hidden}), "
                                       "float32, one thread: row 0"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
