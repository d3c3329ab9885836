"""fprev --exec responder: numpy.sum over each probe line, in the dtype given (float32 by default).

One line in (n numbers), one line out (the sum, printed so it reads back exactly).
"""
import sys

import numpy as np

dtype = np.dtype(sys.argv[1] if len(sys.argv) > 1 else "float32")
for line in sys.stdin:
    x = np.array(line.split(), dtype=np.float64).astype(dtype)
    print(repr(float(np.sum(x))), flush=True)
