"""Float formats by name: NumPy dtypes, their names, bfloat16 and FP8 through ml_dtypes,
and TF32, which travels as float32."""

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
    "tf32": "tf32",
    "tensorfloat32": "tf32",
    "tfloat32": "tf32",
}

# formats NumPy lacks, by ml_dtypes' attribute name
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def name(dtype):
    """The canonical name ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "tf32") of `dtype`.

    `dtype` is a name, a NumPy dtype or scalar type, or one of ml_dtypes' types. NumPy
    has no TF32 dtype, so "tf32" is only ever a name.

    >>> import numpy as np
    >>> name(np.float16), name("f32"), name("tensorfloat32")
    ('float16', 'float32', 'tf32')
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
            "float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz or tf32"
        ) from None


def numpy_dtype(canonical):
    """The NumPy dtype for a canonical name; bfloat16 and FP8 need ml_dtypes. TF32 values
    are stored as the float32 values they stand for (the low 13 bits zero), which is how
    a Tensor Core reads them from memory.

    >>> numpy_dtype("float32"), numpy_dtype("tf32")
    (dtype('float32'), dtype('float32'))
    """
    if canonical == "tf32":
        return np.dtype("float32")
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


def is_operand_only(canonical):
    """Whether a canonical name is an operand type only (FP8, TF32): no library
    accumulates in it, so the default accumulator is float32, and a dot product's probes
    go through both operands so that the checks multiply random values in each, as the
    hardware's products do.

    >>> is_operand_only("tf32"), is_operand_only("float8_e4m3fn"), is_operand_only("float32")
    (True, True, False)
    """
    return is_fp8(canonical) or canonical == "tf32"
