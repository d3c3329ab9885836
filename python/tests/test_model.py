"""fprev.model and fprev.OrderModel: NumPy's sum fitted over lengths, proved where the
fit never looked, replayed and emitted as code that gives NumPy's bits."""

import math
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import fprev

NUMPY_SPEC = "fprev-model/1 numpy-pairwise lanes=8 block=128 type=%s"


def values(rng, n, dtype):
    """Mixed magnitudes and signs: every order gives its own bits."""
    return (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(dtype)


@pytest.fixture(scope="module")
def numpy_models():
    return {
        dt: fprev.model(np.sum, range(1, 4097), dtype=dt) for dt in ("float32", "float64")
    }


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_np_sum_fits_numpys_pairwise_sum_and_replays_it_up_to_a_million(numpy_models, dtype):
    m = numpy_models[dtype]
    assert str(m) == NUMPY_SPEC % ("f32" if dtype == "float32" else "f64")
    assert len(m.proved) >= 8 and max(m.proved) > 4096
    assert not set(m.proved) & set(m.fitted)
    seed = 49
    rng = np.random.default_rng(seed)
    sizes = sorted(set(int(n) for n in rng.integers(4097, 1_000_001, 50)))
    for n in sizes:
        x = values(rng, n, dtype)
        assert m.sum(x) == float(np.sum(x)), f"n={n} seed={seed}"
    for n in sizes[:3]:
        x = values(rng, n, dtype)
        assert m.tree(n).replay(x) == float(np.sum(x)), f"n={n} seed={seed}"


def test_emitted_python_gives_numpys_bits(numpy_models):
    ns = {}
    exec(numpy_models["float32"].emit("python"), ns)
    rng = np.random.default_rng(7)
    for n in [1, 7, 8, 9, 127, 128, 129, 1000, 5003]:
        x = values(rng, n, np.float32)
        assert ns["sum"](x.tolist()) == float(np.sum(x)), f"n={n} seed=7"


@pytest.mark.skipif(shutil.which("rustc") is None, reason="needs rustc to compile the emitted Rust")
def test_emitted_rust_compiles_with_rustc_alone_and_gives_numpys_bits(numpy_models):
    m = numpy_models["float32"]
    main = """
use std::io::Read;
fn main() {
    let mut raw = Vec::new();
    std::io::stdin().read_to_end(&mut raw).unwrap();
    let x: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    println!("{}", sum(&x).to_bits());
}
"""
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "sum.rs"), os.path.join(d, "sum")
        with open(src, "w") as f:
            f.write(m.emit("rust") + main)
        subprocess.run(["rustc", "-O", "--edition", "2021", "-o", exe, src], check=True)
        rng = np.random.default_rng(11)
        for n in [0, 1, 9, 129, 4099, 100_003, 1_000_000]:
            x = values(rng, n, np.float32)
            out = subprocess.run([exe], input=x.astype("<f4").tobytes(), capture_output=True,
                                 check=True)
            want = np.float32(np.sum(x)).view(np.uint32)
            # n = 0 included: the sum of nothing is NumPy's +0.0, bit for bit
            assert int(out.stdout) == int(want), f"n={n} seed=11"


def test_a_model_reads_back_from_its_json_and_spec():
    m = fprev.model(np.sum, range(1, 200), dtype="float64", proofs=4)
    again = fprev.OrderModel.from_json(m.to_json())
    assert again == m and again.fitted == m.fitted and again.proved == m.proved
    assert fprev.OrderModel.from_spec(str(m)) == m
    assert "NumPy's pairwise sum" in m.describe() and "proved at 4 sizes" in m.describe()


@pytest.mark.parametrize("bad", ["", "fprev-model/1 spiral type=f32", "numpy type=f32"])
def test_a_bad_spec_is_a_model_error(bad):
    with pytest.raises(fprev.ModelError):
        fprev.OrderModel.from_spec(bad)


def test_bad_json_is_a_model_error():
    with pytest.raises(fprev.ModelError):
        fprev.OrderModel.from_json('{"fitted": []}')


def first_half_in_order_second_reversed(x):
    h = len(x) // 2
    return np.cumsum(x[:h])[-1] + np.cumsum(x[h:][::-1])[-1] if h else x[0]


def test_an_order_no_family_has_is_refused_with_the_sizes_that_disagree():
    with pytest.raises(fprev.ModelError) as e:
        fprev.model(first_half_in_order_second_reversed, range(1, 65), dtype="float64")
    assert "no order model reproduces" in str(e.value)
    assert e.value.disagreeing and all(e.value.disagreeing.values())


def test_bad_sizes_are_a_model_error():
    with pytest.raises(fprev.ModelError):
        fprev.model(np.sum, [])
    with pytest.raises(fprev.ModelError):
        fprev.model(np.sum, [0, 4])
    with pytest.raises(fprev.ModelError):
        fprev.model(np.sum, ["a"])


def test_torch_sum_float32_one_thread_fits_the_cascade():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    torch.set_num_threads(1)
    m = fprev.model(torch.sum, range(1, 1025), dtype=torch.float32, proofs=4)
    assert str(m).startswith("fprev-model/1 torch-cascade ")
    rng = np.random.default_rng(3)
    for n in [5000, 65_537, 300_001]:
        x = values(rng, n, np.float32)
        assert m.sum(x) == torch.sum(torch.from_numpy(x)).item(), f"n={n} seed=3"


SPECS = [
    "fprev-model/1 sequential type=%s",
    "fprev-model/1 reverse type=%s",
    "fprev-model/1 unrolled lanes=4 combine=in-order type=%s",
    "fprev-model/1 unrolled lanes=6 combine=pairwise type=%s",
    "fprev-model/1 unrolled lanes=8 combine=folded type=%s",
    "fprev-model/1 numpy-pairwise lanes=8 block=128 type=%s",
    "fprev-model/1 xla-windows window=32 type=%s",
    "fprev-model/1 rayon-halving threads=4 type=%s",
    "fprev-model/1 torch-cascade width=8 load=1 ilp=4 levels=4 type=%s",
    "fprev-model/1 torch-cascade width=8 load=2 ilp=4 levels=4 type=%s",
]
EMIT_SIZES = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 129, 1000, 1057, 4099, 70_001]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_emitted_python_sums_like_the_model(spec, t):
    m = fprev.OrderModel.from_spec(spec % t)
    ns = {}
    exec(m.emit("python"), ns)
    np_dt = np.float32 if t == "f32" else np.float64
    rng = np.random.default_rng(21)
    for n in EMIT_SIZES[:-1]:
        x = values(rng, n, np_dt)
        assert ns["sum"](x.tolist()) == m.sum(x), f"{m} n={n} seed=21"


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_emitted_python_sums_nothing_to_plus_zero_as_numpy(spec, t):
    m = fprev.OrderModel.from_spec(spec % t)
    ns = {}
    exec(m.emit("python"), ns)
    got = ns["sum"]([])
    want = float(np.sum(np.zeros(0, np.float32 if t == "f32" else np.float64)))
    assert got == 0.0 and math.copysign(1.0, got) == math.copysign(1.0, want) == 1.0, spec


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler (cc)")
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_emitted_c_sums_like_the_model(t):
    import ctypes

    np_dt, c_t = (np.float32, ctypes.c_float) if t == "f32" else (np.float64, ctypes.c_double)
    with tempfile.TemporaryDirectory() as d:
        for i, spec in enumerate(SPECS):
            m = fprev.OrderModel.from_spec(spec % t)
            src, lib = os.path.join(d, "m%d.c" % i), os.path.join(d, "m%d.so" % i)
            with open(src, "w") as f:
                f.write(m.emit("c"))
            subprocess.run(["cc", "-O2", "-std=c99", "-shared", "-fPIC", "-o", lib, src],
                           check=True)
            fn = ctypes.CDLL(lib).sum
            fn.restype = c_t
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            # the sum of nothing: +0.0, as NumPy's (the accumulators start at -0.0)
            empty = fn(None, 0)
            assert empty == 0.0 and math.copysign(1.0, empty) == 1.0, m
            rng = np.random.default_rng(22)
            for n in EMIT_SIZES:
                x = values(rng, n, np_dt)
                assert fn(x.ctypes.data, n) == m.sum(x), f"{m} n={n} seed=22"


def test_np_sum_swept_over_lengths_reads_as_numpys_pairwise_model():
    s = fprev.sweep_lengths(lambda n: np.sum, range(1, 2049))
    assert len(s.range_trees()) > 200  # a range at every breakpoint
    m = s.model()
    assert str(m) == NUMPY_SPEC % "f32"
    assert sorted(m.fitted + m.proved) == list(range(1, 2049))
    assert len(m.proved) > len(m.fitted)
    for n in (1, 7, 8, 100, 128, 129, 1000, 2048):
        assert m.tree(n) == s.trees[n], n
    assert str(s).splitlines()[0] == "n = 1..2048: one order model, " + NUMPY_SPEC % "f32"
    assert "NumPy's pairwise sum" in str(s).splitlines()[1]
    assert s.model_pieces() == [(1, 2048, m)]


def test_a_sweep_that_switches_algorithm_reads_as_pieces():
    def make(n):
        return (lambda x: np.cumsum(x)[-1]) if n < 50 else np.sum

    s = fprev.sweep_lengths(make, range(1, 200))
    with pytest.raises(fprev.ModelError, match="2 runs of lengths"):
        s.model()
    (a, b, first), (c, d, second) = s.model_pieces()
    assert (a, b, c, d) == (1, 49, 50, 199)
    assert str(first) == "fprev-model/1 sequential type=f32"
    assert str(second) == NUMPY_SPEC % "f32"
    assert str(s).splitlines()[0] == "n = 1..49: fprev-model/1 sequential type=f32"


def test_a_sweep_no_family_explains_keeps_its_ranges_and_says_why():
    s = fprev.sweep_lengths(
        lambda n: first_half_in_order_second_reversed, range(1, 40), dtype="float64"
    )
    with pytest.raises(fprev.ModelError) as e:
        s.model()
    assert e.value.disagreeing and all(e.value.disagreeing.values())
    with pytest.raises(fprev.ModelError):
        s.model_pieces()
    text = str(s)
    assert text.startswith("no order model gives every length, nor 8 or fewer runs"), text
    # then the ranges, one a line (each starts with "n = ")
    first, *rest = s.ranges().split("; n = ")
    assert text.splitlines()[1:] == [first] + ["n = " + r for r in rest], text


def test_a_sweep_over_another_parameter_has_no_order_model():
    s = fprev.sweep(lambda size: np.sum, [1, 2], 64)
    with pytest.raises(fprev.ModelError, match="functions of the length"):
        s.model()
    assert str(s) == s.ranges()
