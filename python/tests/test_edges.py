"""Edge cases of the Python API: complex numbers, conversions that raise, flags and sizes
of the wrong type, big-endian arrays, and exact sums of large arrays without a copy."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import fprev


@pytest.fixture
def no_warnings():
    """A ComplexWarning (a real part kept silently) fails the test instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# complex answers and arrays


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: complex(np.sum(x)),
        lambda x: np.complex128(np.sum(x)),
        lambda x: np.complex64(np.sum(x)),
        lambda x: np.array(np.sum(x), dtype=np.complex128),
    ],
    ids=["complex", "complex128", "complex64", "0-d complex array"],
)
def test_complex_answers_are_refused(no_warnings, answer):
    with pytest.raises(fprev.TargetError, match="not a real number"):
        fprev.reveal(answer, 8)
    with pytest.raises(fprev.TargetError, match="not a real number"):
        fprev.reveal_dot(lambda x, y: answer(x * y), 8)


def test_complex_matrix_products_are_refused(no_warnings):
    with pytest.raises(fprev.TargetError, match="complex128 values, not real numbers"):
        fprev.reveal_matmul(lambda a, b: (a @ b).astype(np.complex128), 4, 4, 8)


def test_complex_fp8_dot_answers_are_refused(no_warnings):
    pytest.importorskip("ml_dtypes")
    f32 = lambda v: v.astype(np.float32)  # noqa: E731
    with pytest.raises(fprev.TargetError, match="not a real number"):
        fprev.reveal_dot(
            lambda x, y: np.complex128(np.dot(f32(x), f32(y))), 8, dtype="float8_e4m3fn"
        )


def test_complex_arrays_are_refused_by_exact_and_replay(no_warnings):
    z = np.array([1 + 2j, 3 - 1j, 0.5j])
    with pytest.raises(TypeError, match="complex128 array"):
        fprev.exact.sum(z)
    with pytest.raises(TypeError, match="complex128 array"):
        fprev.exact.dot(z, z)
    with pytest.raises(TypeError, match="complex64 array"):
        fprev.Tree.sequential(3).replay(z.astype(np.complex64))


# a conversion that raises


class Unconvertible:
    def __float__(self):
        raise ValueError("no float for you")


def test_a_raising_float_conversion_is_chained():
    with pytest.raises(fprev.TargetError, match="conversion to float raised ValueError") as info:
        fprev.reveal(lambda x: Unconvertible(), 8)
    assert isinstance(info.value.__cause__, ValueError)
    assert str(info.value.__cause__) == "no float for you"


def test_a_raising_float_conversion_is_chained_for_fp8_dots():
    pytest.importorskip("ml_dtypes")
    with pytest.raises(fprev.TargetError, match="conversion to float raised ValueError") as info:
        fprev.reveal_dot(lambda x, y: Unconvertible(), 8, dtype="float8_e4m3fn")
    assert isinstance(info.value.__cause__, ValueError)


def test_answers_without_a_conversion_have_no_cause():
    with pytest.raises(fprev.TargetError, match="returned a str, not a number") as info:
        fprev.reveal(lambda x: "12", 8)
    assert info.value.__cause__ is None


# flags and sizes of the wrong type


def test_bool_sizes_are_refused():
    with pytest.raises(TypeError, match="n must be an integer, got bool"):
        fprev.reveal(np.sum, True)
    with pytest.raises(TypeError, match="n must be an integer, got bool"):
        fprev.reveal_dot(np.dot, np.bool_(True))
    with pytest.raises(TypeError, match="k must be an integer, got bool"):
        fprev.reveal_matmul(np.matmul, 2, 2, True)
    with pytest.raises(TypeError, match="seed must be an integer or None, got bool"):
        fprev.reveal(np.sum, 8, seed=True)


@pytest.mark.parametrize("flag", ["verify", "accept_flat", "report"])
@pytest.mark.parametrize("value", ["no", 0, 1, None, "False"])
def test_flags_must_be_bools(flag, value):
    with pytest.raises(TypeError, match=f"{flag} must be True or False"):
        fprev.reveal(np.sum, 8, **{flag: value})
    with pytest.raises(TypeError, match=f"{flag} must be True or False"):
        fprev.reveal_dot(np.dot, 8, **{flag: value})


def test_numpy_bools_are_flags():
    t = fprev.reveal(np.sum, 8, verify=np.bool_(False), accept_flat=np.False_)
    assert t.n == 8


# big-endian arrays


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_big_endian_arrays_read_as_their_values(dtype):
    rng = np.random.default_rng(7)
    # eighths in [-256, 256): exact in float16 too, so no cast underflows
    little = (rng.integers(-2048, 2048, 1000) / 8.0).astype(dtype)
    big = little.astype(np.dtype(dtype).newbyteorder(">"))
    assert big.dtype.byteorder == ">" and np.array_equal(big, little)
    assert fprev.exact.sum(big) == fprev.exact.sum(little)
    assert fprev.exact.dot(big, little) == fprev.exact.dot(little, little)
    tree = fprev.Tree.numpy_pairwise(1000)
    assert tree.replay(big) == tree.replay(little)


# exact sums of large arrays


def test_exact_sum_reads_large_arrays_in_chunks():
    """Across several chunks, every value counts once: the exact sum of a float32
    array equals the float64 sum of whole numbers, whatever the chunk borders."""
    n = 3 * (1 << 16) + 12345
    x = np.arange(n, dtype=np.float32) % 1024
    assert fprev.exact.sum(x) == float(np.sum(x.astype(np.float64)))
    y = np.full(n, 0.5, dtype=np.float32)
    assert fprev.exact.dot(x, y) == float(np.sum(x.astype(np.float64))) / 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB on Linux")
def test_exact_sum_of_a_float32_array_makes_no_float64_copy():
    # in a fresh process, whose peak memory is this array's: a float64 copy of it
    # would raise the peak by 128 MiB
    code = textwrap.dedent(
        """
        import resource
        import numpy as np
        import fprev
        x = np.ones(1 << 24, dtype=np.float32)  # 64 MiB, written: resident
        fprev.exact.sum(x[:10])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        total = fprev.exact.sum(x)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert total == 1 << 24, total
        print(after - before)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    grew_kib = int(out.stdout.strip())
    assert grew_kib < 16 * 1024, f"the peak grew by {grew_kib} KiB"


# the same answer checks at every entry point


def test_a_truncating_matrix_product_is_refused_as_reveal_refuses_it():
    with pytest.raises(fprev.NotPlainSummationError):
        fprev.reveal(lambda x: np.trunc(np.sum(x)), 8)
    with pytest.raises(fprev.NotPlainSummationError):
        fprev.reveal_matmul(lambda a, b: np.trunc(a @ b), 4, 4, 8)


def test_matmul_flags_must_be_bools():
    with pytest.raises(TypeError, match="verify must be True or False"):
        fprev.reveal_matmul(np.matmul, 4, 4, 8, verify="no")
    o = fprev.reveal_matmul(np.matmul, 4, 4, 8, verify=False)
    assert o.tree.n == 8
