"""Float formats by name: NumPy dtypes, their names, and bfloat16 through ml_dtypes."""

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
}


def name(dtype):
    """The canonical name ("float64", "float32", "float16", "bfloat16") of `dtype`.

    `dtype` is a name, a NumPy dtype or scalar type, or ml_dtypes' bfloat16.

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
            f"unsupported dtype {dtype!r}: expected float64, float32, float16 or bfloat16"
        ) from None


def numpy_dtype(canonical):
    """The NumPy dtype for a canonical name; bfloat16 needs ml_dtypes.

    >>> numpy_dtype("float32")
    dtype('float32')
    """
    if canonical == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError(
                "bfloat16 arrays need ml_dtypes: pip install ml_dtypes"
            ) from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(canonical)
