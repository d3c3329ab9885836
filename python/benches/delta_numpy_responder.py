"""A line-by-line `fprev --exec --protocol delta` responder: numpy.sum in float32.

fprev sends `B x0 x1 ...` (the vector, no answer), `P i a j b` (answer the sum with
x[i] = a and x[j] = b, x unchanged) and `C` (answer the sum of x).
"""
import sys

import numpy as np

x = None
out = sys.stdout
for line in sys.stdin:
    if line[0] == "P":
        _, i, a, j, b = line.split()
        i, j = int(i), int(j)
        old_i, old_j = x[i], x[j]
        x[i], x[j] = float(a), float(b)
        answer = x.sum()
        x[i], x[j] = old_i, old_j
    elif line[0] == "B":
        x = np.array(line.split()[1:], dtype=np.float64).astype(np.float32)
        continue
    else:
        answer = x.sum()
    out.write(repr(float(answer)) + "\n")
    out.flush()
