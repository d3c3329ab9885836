"""fprev --exec responder that fails on purpose: `exit`, `garbage` or `stall` after some answers;
`slowstart S`: a slow start-up (S seconds before the first answer), then a plain sum."""
import sys
import time

mode, after = sys.argv[1], int(sys.argv[2])
if mode == "slowstart":
    time.sleep(after)
for k, line in enumerate(sys.stdin):
    if k == after:
        if mode == "exit":
            sys.exit(3)
        if mode == "garbage":
            print("not-a-number", flush=True)
            continue
        if mode == "stall":
            time.sleep(60)
    print(repr(sum(float(v) for v in line.split())), flush=True)
