"""fprev --exec --protocol delta responder: keeps the vector, answers its sequential f64 sum.

  B x0 x1 ...   the vector is now x (no answer)
  P i a j b     answer sum(x with x[i] = a, x[j] = b); x unchanged
  C             answer sum(x)
"""
import sys


def total(x):
    s = 0.0
    for v in x:  # left to right, one rounding per addition
        s += v
    return s


x = []
for line in sys.stdin:
    kind, *rest = line.split()
    if kind == "B":
        x = [float(v) for v in rest]
        continue
    if kind == "P":
        i, a, j, b = int(rest[0]), float(rest[1]), int(rest[2]), float(rest[3])
        old_i, old_j = x[i], x[j]
        x[i], x[j] = a, b
        answer = total(x)
        x[i], x[j] = old_i, old_j
    else:  # "C"
        answer = total(x)
    print(repr(answer), flush=True)
