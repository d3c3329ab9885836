"""Float formats by name: NumPy dtypes, their names, and bfloat16 and FP8 through ml_dtypes."""

import numpy as np

_NAMES = {
    "float64": "float64",
    "f64": "float64",
    "double": "float64",
    "float32": "float32",
    "f32": "float32",
    "single": "float32",
    "float16": "float16",
    "f16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "f8e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "f8e5m2": "float8_e5m2",
    "float8_e4m3fnuz": "float8_e4m3fnuz",
    "e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz",
    "e5m2fnuz": "float8_e5m2fnuz",
}

# formats NumPy lacks, by ml_dtypes' attribute name
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def name(dtype):
    """The canonical name ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz") of `dtype`.

    `dtype` is a name, a NumPy dtype or scalar type, or one of ml_dtypes' types.

    >>> import numpy as np
    >>> name(np.float16), name("f32")
    ('float16', 'float32')
    """
    if isinstance(dtype, str):
        key = dtype
    else:
        key = np.dtype(dtype).name
    try:
        return _NAMES[key]
    except KeyError:
        raise ValueError(
            f"unsupported dtype {dtype!r}: expected float64, float32, float16, bfloat16, "
            "float8_e4m3fn, float8_e5m2, float8_e4m3fnuz or float8_e5m2fnuz"
        ) from None


def numpy_dtype(canonical):
    """The NumPy dtype for a canonical name; bfloat16 and FP8 need ml_dtypes.

    >>> numpy_dtype("float32")
    dtype('float32')
    """
    if canonical in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError(
                f"{canonical} arrays need ml_dtypes: pip install ml_dtypes"
            ) from None
        return np.dtype(getattr(ml_dtypes, canonical))
    return np.dtype(canonical)


def is_fp8(canonical):
    """Whether a canonical name is an FP8 format (accumulated in float32 by default).

    >>> is_fp8("float8_e5m2"), is_fp8("float16")
    (True, False)
    """
    return canonical.startswith("float8")
