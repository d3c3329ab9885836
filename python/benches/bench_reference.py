"""fprev's Python package and `fprev --exec --protocol delta` against the reference FPRev.

Usage:
    python python/benches/bench_reference.py REFERENCE_DIR [--fprev BIN] [--reps 3]
        [--part inproc,largest,exec,torch,jax] [--lib-sizes 4096,16384,65536]

REFERENCE_DIR is a checkout of the reference implementation (the FPRev paper's artifact:
`fprev.py` and `experiments/accumimpls/numpy.py`; needs the `graphviz` Python package).
It is never copied into this repository. BIN is a release build of the CLI
(`cargo build --release -p fprev-cli`, default target/release/fprev).

Every measurement runs in a fresh process (so peak RSS is that run's), the two sides
alternate, and the table reports medians. The torch and jax parts also time a second
reveal in the same process (the library's compiled kernels and caches warm on both
sides). Every revealed tree is checked: ours against
NumPy's pairwise order, the reference's converted to canonical text and compared.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def peak_rss_mb():
    """This process's peak resident memory. VmHWM, not ru_maxrss: on Linux a child's
    ru_maxrss starts at its parent's peak (it survives fork and exec)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker_ours(n):
    import numpy as np

    import fprev

    start = time.perf_counter()
    tree, report = fprev.reveal(np.sum, n, report=True)
    elapsed = time.perf_counter() - start
    ok = tree == fprev.Tree.numpy_pairwise(n)
    return {"time": elapsed, "rss_mb": peak_rss_mb(), "ok": ok, "calls": report["calls"]}


def worker_ours_lib(lib, n, tree_file):
    import fprev

    if lib == "torch":
        import torch

        torch.set_num_threads(1)
        fn, reveal = torch.sum, fprev.torch.reveal
    else:
        import jax
        import jax.numpy as jnp

        # the backend starts before the clock, as the reference's JaxSum(n) starts it
        jax.devices("cpu")
        fn, reveal = jnp.sum, fprev.jax.reveal
    start = time.perf_counter()
    tree, report = reveal(fn, n, report=True)
    elapsed = time.perf_counter() - start
    # again in the same process: what is left once the library has compiled the target
    start = time.perf_counter()
    again = reveal(fn, n)
    elapsed_again = time.perf_counter() - start
    assert again == tree
    with open(tree_file, "w") as f:
        f.write(str(tree))
    return {
        "time": elapsed,
        "again": elapsed_again,
        "rss_mb": peak_rss_mb(),
        "calls": report["calls"],
        "recognized": report.get("recognized"),
    }


def worker_reference_lib(lib, n, reference, tree_file):
    sys.path[:0] = [reference, os.path.join(reference, "experiments")]
    sys.setrecursionlimit(1 << 20)
    from fprev import fprev as reference_fprev

    def impl():
        if lib == "numpy":
            from accumimpls.numpy import NumpySum

            return NumpySum(n)
        if lib == "torch":
            import torch
            from accumimpls.torch import TorchSum

            torch.set_num_threads(1)
            return TorchSum(n)
        from accumimpls.jax import JaxSum

        return JaxSum(n)

    first = impl()
    start = time.perf_counter()
    digraph = reference_fprev(first)
    elapsed = time.perf_counter() - start
    result = {"time": elapsed, "rss_mb": peak_rss_mb()}
    if lib != "numpy":
        second = impl()
        start = time.perf_counter()
        reference_fprev(second)
        result["again"] = time.perf_counter() - start
    with open(tree_file, "w") as f:
        f.write(digraph.source)
    return result


def reference_tree(source, n):
    """The reference's Digraph (edges child -> parent; inner node ids >= n) as a Tree."""
    import fprev

    children = {}
    has_parent = set()
    for line in source.splitlines():
        if "->" not in line:
            continue
        a, b = (int(s.strip().strip('"').split()[0]) for s in line.split("->"))
        children.setdefault(b, []).append(a)
        has_parent.add(a)
    roots = [v for v in children if v not in has_parent]
    if n == 1:
        return fprev.Tree.sequential(1)
    (root,) = roots
    text = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if node not in children:
            text[node] = str(node)
        elif done:
            text[node] = "(" + "+".join(text[c] for c in children[node]) + ")"
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in children[node])
    return fprev.Tree.parse(text[root])


def run_worker(kind, n, args, limit):
    """One measurement in a fresh process; None when it ran past `limit` seconds."""
    with tempfile.NamedTemporaryFile(suffix=".gv", delete=False) as f:
        tree_file = f.name
    cmd = [sys.executable, __file__, "--worker", kind, str(n), args.reference, tree_file]
    start = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, check=True)
    except subprocess.TimeoutExpired:
        os.unlink(tree_file)
        return None
    wall = time.perf_counter() - start
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # the whole process: interpreter start and imports included
    result["wall"] = wall
    import fprev

    if kind == "reference":
        with open(tree_file) as f:
            result["ok"] = reference_tree(f.read(), n) == fprev.Tree.numpy_pairwise(n)
    elif kind.startswith(("torch-", "jax-")):
        with open(tree_file) as f:
            text = f.read()
        result["tree"] = (
            fprev.Tree.parse(text) if kind.endswith("-ours") else reference_tree(text, n)
        )
    os.unlink(tree_file)
    return result


def run_exec(n, args, limit):
    cmd = [
        args.fprev, "reveal", "--exec",
        f"{sys.executable} {os.path.join(HERE, 'delta_numpy_responder.py')}",
        "--n", str(n), "--protocol", "delta", "--timeout", "60",
    ]
    start = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, check=True)
    except subprocess.TimeoutExpired:
        return None
    elapsed = time.perf_counter() - start
    import fprev

    ok = fprev.Tree.parse(out.stdout.strip()) == fprev.Tree.numpy_pairwise(n)
    return {"time": elapsed, "ok": ok}


def median(runs, key="time"):
    return statistics.median(r[key] for r in runs)


def part_inproc(args):
    print("\n## numpy.sum float32, in process (medians of %d alternating runs)\n" % args.reps)
    print("| n | reference `fprev(NumpySum(n))` | fprev package | speedup | peak RSS ref / ours |")
    print("|---|---|---|---|---|")
    for n in (8192, 32768, 65536):
        ours, ref = [], []
        for _ in range(args.reps):
            ours.append(run_worker("ours", n, args, 600))
            ref.append(run_worker("reference", n, args, 600))
        assert all(r["ok"] for r in ours + ref), (ours, ref)
        o, r = median(ours), median(ref)
        print(
            f"| {n} | {r:.3f} s | {o:.3f} s | {r / o:.1f}x | "
            f"{median(ref, 'rss_mb'):.0f} MB / {median(ours, 'rss_mb'):.0f} MB |",
            flush=True,
        )


def part_lib(lib, args):
    title = {"torch": "torch.sum float32, one thread", "jax": "jax.numpy.sum float32"}[lib]
    impl = {"torch": "TorchSum", "jax": "JaxSum"}[lib]
    print("\n## %s, in process (medians of %d alternating runs)\n" % (title, args.reps))
    print(
        f"| n | reference `fprev({impl}(n))` | `fprev.{lib}.reveal` | speedup | "
        "again in the process: reference / ours / speedup | our calls | recognized | "
        "same tree |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in args.lib_sizes:
        ours, ref = [], []
        for _ in range(args.reps):
            ours.append(run_worker(f"{lib}-ours", n, args, 600))
            ref.append(run_worker(f"{lib}-reference", n, args, 600))
        # the reference verifies nothing; ours is verified: the two must agree
        same = all(o["tree"] == r["tree"] for o in ours for r in ref[:1])
        o, r = median(ours), median(ref)
        o2, r2 = median(ours, "again"), median(ref, "again")
        print(
            f"| {n} | {r:.3f} s | {o:.3f} s | {r / o:.1f}x | "
            f"{r2:.3f} s / {o2:.3f} s / {r2 / o2:.1f}x | {ours[0]['calls']} | "
            f"{ours[0]['recognized']} | {same} |",
            flush=True,
        )


def largest(kind, sizes, args):
    rows = []
    for n in sizes:
        r = run_worker(kind, n, args, 65)
        if r is None:
            rows.append((n, None))
            break
        assert r["ok"], r
        rows.append((n, r))
        if r["time"] > 60:
            break
    return rows


def part_largest(args):
    print("\n## largest numpy.sum n (one run per size)\n")
    print("| side | n | time | peak RSS |")
    print("|---|---|---|---|")
    ours = [131072, 196608, 262144, 393216, 524288, 655360, 786432, 1048576]
    ref = [65536, 98304, 131072, 196608]
    for kind, sizes in (("reference", ref), ("ours", ours)):
        for n, r in largest(kind, sizes, args):
            if r is None:
                print(f"| {kind} | {n} | > 65 s (stopped) | |", flush=True)
            else:
                print(f"| {kind} | {n} | {r['time']:.2f} s | {r['rss_mb']:.0f} MB |", flush=True)


def part_exec(args):
    print(
        "\n## `fprev --exec --protocol delta` (Python line-by-line numpy responder; "
        "both processes' start included) vs the reference (medians of %d)\n" % args.reps
    )
    print(
        "| n | reference in process | reference, whole `python` process | "
        "fprev --exec delta, whole | speedup (whole vs whole) |"
    )
    print("|---|---|---|---|---|")
    for n in (1024, 4096, 16384, 32768, 65536):
        ours, ref = [], []
        for _ in range(args.reps):
            ours.append(run_exec(n, args, 600))
            ref.append(run_worker("reference", n, args, 600))
        assert all(r["ok"] for r in ours + ref), (ours, ref)
        o, r, w = median(ours), median(ref), median(ref, "wall")
        print(f"| {n} | {r:.3f} s | {w:.3f} s | {o:.3f} s | {w / o:.1f}x |", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, n, reference, tree_file = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
        if kind == "ours":
            result = worker_ours(n)
        elif kind.endswith("-ours"):
            result = worker_ours_lib(kind.split("-")[0], n, tree_file)
        elif kind.endswith("-reference"):
            result = worker_reference_lib(kind.split("-")[0], n, reference, tree_file)
        else:
            result = worker_reference_lib("numpy", n, reference, tree_file)
        print(json.dumps(result))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reference", help="checkout of the reference FPRev (fprev.py)")
    p.add_argument("--fprev", default="target/release/fprev", help="release fprev binary")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--part", default="inproc,largest,exec", help="also: torch, jax")
    p.add_argument(
        "--lib-sizes",
        default="4096,16384,65536",
        type=lambda v: [int(x) for x in v.split(",")],
    )
    args = p.parse_args()
    args.reference = os.path.abspath(args.reference)
    with open("/proc/loadavg") as f:
        print(f"# load average at start: {f.read().split()[:3]}, cpus: {os.cpu_count()}")
    for part in args.part.split(","):
        parts = {
            "inproc": part_inproc,
            "largest": part_largest,
            "exec": part_exec,
            "torch": lambda args: part_lib("torch", args),
            "jax": lambda args: part_lib("jax", args),
        }
        parts[part](args)


if __name__ == "__main__":
    main()
