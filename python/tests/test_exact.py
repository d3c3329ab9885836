"""fprev.exact.Accumulator: states that travel between processes (pickle, bytes,
multiprocessing, torch.distributed with gloo) and merge to one bit pattern."""

import multiprocessing
import pickle
import random
import struct

import numpy as np
import pytest

import fprev
from fprev.exact import Accumulator, StateError


def _data(seed, n=20_000):
    """Values whose plain sums depend on the order: wide exponents, both signs."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n) * np.exp2(rng.integers(-40, 40, n))


def _cuts(n, parts, rng):
    inner = sorted(rng.randrange(0, n + 1) for _ in range(parts - 1))
    return list(zip([0] + inner, inner + [n]))


def _partial(args):
    """A worker: the exact state of its part, and its part's plain sum."""
    x, dtype = args
    acc = Accumulator(dtype)
    acc.add(x)
    return acc, float(np.sum(x))


def _bits(v):
    return struct.pack("<d", v)


def test_round_trip_through_bytes_and_pickle():
    x = _data(1)
    acc = Accumulator()
    acc.add(x)
    for back in (Accumulator.from_bytes(acc.to_bytes()), pickle.loads(pickle.dumps(acc))):
        assert back == acc
        assert _bits(back.value()) == _bits(fprev.exact.sum(x))
        assert back.dtype == "float64"
    assert acc.to_bytes()[:5] == b"FPXA\x01"
    # a copy is independent
    c = acc.copy()
    c.add(np.array([1.0]))
    assert c != acc


def test_merge_in_any_order_gives_the_sum_of_the_whole():
    x = _data(2)
    want = fprev.exact.sum(x)
    rng = random.Random(3)
    plain = set()
    for trial in range(20):
        parts = []
        for lo, hi in _cuts(len(x), rng.randrange(1, 9), rng):
            a = Accumulator()
            a.add(x[lo:hi])
            parts.append(a.to_bytes() if rng.random() < 0.5 else a)
            plain.add(float(np.sum(x[lo:hi])) if hi > lo else 0.0)
        rng.shuffle(parts)
        total = Accumulator()
        for p in parts:
            total.merge(p)
        assert _bits(total.value()) == _bits(want), f"trial {trial}"
    assert len(plain) > 1


def test_float32_rounds_once():
    x = np.array([1.0, 2.0**-24, 2.0**-60])
    acc = Accumulator(np.float32)
    acc.add(x)
    assert acc.dtype == "float32"
    assert acc.value() == float(np.float32(1.0) + np.finfo(np.float32).eps)
    wide = Accumulator.from_bytes(acc.to_bytes(), dtype="float64")
    assert np.float32(wide.value()) == np.float32(1.0)  # rounded twice
    assert pickle.loads(pickle.dumps(acc)).dtype == "float32"


def test_special_values_and_dot():
    acc = Accumulator()
    acc.add(np.array([-0.0, -0.0]))
    assert _bits(acc.value()) == _bits(-0.0)
    acc.add_dot(np.array([1e20, 1.0, -1e20]), np.array([1e20, 3.0, 1e20]))
    assert acc.value() == 3.0
    acc.add(np.array([np.inf]))
    assert acc.value() == np.inf
    assert Accumulator.from_bytes(acc.to_bytes()).value() == np.inf
    with pytest.raises(ValueError, match="different lengths"):
        acc.add_dot(np.ones(2), np.ones(3))


def test_bad_states_and_arguments_are_refused():
    good = Accumulator()
    good.add(np.array([1.5]))
    data = good.to_bytes()
    bad = {
        data[:-1]: "truncated",
        data + b"\0": "trailing bytes",
        b"nope" + data[4:]: "not an accumulator state",
        data[:4] + b"\x02" + data[5:]: "format version 2; this build reads version 1",
        data[:5] + b"\xc8" + data[6:]: "unknown flag bits",
        data[:6] + b"\x87\x02" + data[8:]: "beyond the accumulator's 136",
    }
    for b, message in bad.items():
        with pytest.raises(StateError, match=message):
            Accumulator.from_bytes(b)
        with pytest.raises(StateError):
            good.merge(b)
    assert issubclass(StateError, ValueError)
    assert good.value() == 1.5  # nothing merged
    with pytest.raises(TypeError, match="not str"):
        good.merge("FPXA")
    with pytest.raises(ValueError, match="float64 or float32, not float16"):
        Accumulator("float16")
    with pytest.raises(TypeError, match="dtype must be float64 or float32"):
        Accumulator(object())
    with pytest.raises(StateError):
        pickle.loads(pickle.dumps(good).replace(b"FPXA", b"FPXB"))


def test_multiprocessing_partitions_give_one_bit_pattern():
    """Random partitions over worker processes: the plain sums differ, the exact one
    does not, and it is the exact sum of the whole."""
    x = _data(4, n=200_000)
    want = fprev.exact.sum(x)
    rng = random.Random(5)
    exact, plain = set(), set()
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        for parts in (1, 2, 3, 4, 7, 8):
            cuts = _cuts(len(x), parts, rng)
            results = pool.map(_partial, [(x[lo:hi], "float64") for lo, hi in cuts])
            rng.shuffle(results)
            total = Accumulator()
            for state, _ in results:
                total.merge(state)
            exact.add(_bits(total.value()))
            plain.add(_bits(sum(s for _, s in results)))
    assert exact == {_bits(want)}
    assert len(plain) > 1, "the plain sums should depend on the partition"


def _gloo_rank(rank, world, x, init, out):
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        rng = random.Random(world)
        cuts = _cuts(len(x), world, rng)
        lo, hi = cuts[rank]
        acc = Accumulator()
        acc.add(x[lo:hi])
        states = [None] * world
        dist.all_gather_object(states, acc)
        total = Accumulator()
        for state in reversed(states):
            total.merge(state)
        import torch

        plain = torch.tensor([float(np.sum(x[lo:hi]))], dtype=torch.float64)
        dist.all_reduce(plain)
        with open(f"{out}.{rank}", "wb") as f:
            f.write(_bits(total.value()) + _bits(float(plain[0])))
    finally:
        dist.destroy_process_group()


def test_torch_distributed_gloo_gives_one_bit_pattern(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    import torch.multiprocessing as mp

    x = _data(6, n=100_000)
    want = _bits(fprev.exact.sum(x))
    plain = set()
    for world in (1, 2, 3, 4):
        init = f"file://{tmp_path}/init-{world}"
        out = tmp_path / f"out-{world}"
        mp.spawn(_gloo_rank, args=(world, x, init, str(out)), nprocs=world, join=True)
        for rank in range(world):
            got = (tmp_path / f"out-{world}.{rank}").read_bytes()
            assert got[:8] == want, f"world {world}, rank {rank}"
            plain.add(got[8:])
    assert len(plain) > 1, "the plain allreduce should depend on the world size"
