"""A batch-size sweep of `torch.matmul` row 0 (float32, one thread): time and calls.

Usage:
    python python/benches/bench_sweep_torch.py [--k 1024] [--cols 16] [--ms 64]
        [--reps 3] [--table]

Sweeps `fprev.sweep_matmul` over M = 1..ms with `torch.set_num_threads(1)`, `--reps`
times, and prints each run's seconds and the median, with the calls the sweep made
(probes and replays) split into the sizes proved against the previous size's tree and
the sizes searched. `--table` prints the ranges (sizes, tree in words) of the last run.
"""

import argparse
import statistics
import time

import numpy as np
import torch

import fprev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--cols", type=int, default=16)
    ap.add_argument("--ms", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)

    calls = [0]

    def matmul(a, b):
        calls[0] += 1
        return torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()

    ms = range(1, args.ms + 1)
    times = []
    for _ in range(args.reps):
        calls[0] = 0
        start = time.perf_counter()
        s = fprev.sweep_matmul(matmul, ms, args.cols, args.k)
        times.append(time.perf_counter() - start)
    print(f"torch {torch.__version__}, numpy {np.__version__}, K = {args.k}, "
          f"{args.cols} columns, M = 1..{args.ms}, one thread")
    print("runs (s):", " ".join(f"{t:.2f}" for t in times),
          f"median {statistics.median(times):.2f}")
    searched = [m for m in ms if m not in set(s.proved)]
    print(f"calls: {calls[0]} ({s.probes} probes + {s.replays} replays); "
          f"{len(s.proved)} sizes proved, {len(searched)} searched: {searched}")
    if args.table:
        print("breakpoints:", s.breakpoints)
        for first, last, tree in s.range_trees():
            span = first if first == last else f"{first}..{last}"
            print(f"M = {span}: {tree.describe()}")


if __name__ == "__main__":
    main()
