"""fprev --exec responder: numpy.sum over each probe line, in the dtype given (float32 by default).

Usage: numpy_sum.py [DTYPE [ACC_DTYPE]]. With ACC_DTYPE, the values are DTYPE and numpy
accumulates (and answers) in ACC_DTYPE: numpy.sum(x, dtype=ACC_DTYPE).
One line in (n numbers), one line out (the sum, printed so it reads back exactly).
"""
import sys

import numpy as np

dtype = np.dtype(sys.argv[1] if len(sys.argv) > 1 else "float32")
acc = np.dtype(sys.argv[2]) if len(sys.argv) > 2 else None
for line in sys.stdin:
    x = np.array(line.split(), dtype=np.float64).astype(dtype)
    s = np.sum(x) if acc is None else np.sum(x, dtype=acc)
    print(repr(float(s)), flush=True)
