"""Shared fixtures: the package must be importable (built with `pip install ./python`)."""

import pytest


@pytest.fixture(autouse=True)
def _numpy_errors():
    """NumPy warnings (overflow of a mask, deprecated conversions) fail the test."""
    import numpy as np

    with np.errstate(all="raise"):
        yield
