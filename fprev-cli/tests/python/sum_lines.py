"""fprev --exec responder without dependencies: Python's sequential float sum, line by line."""
import sys

for line in sys.stdin:
    total = 0.0
    for v in line.split():
        total += float(v)
    sys.stdout.write(repr(total) + "\n")
    sys.stdout.flush()
