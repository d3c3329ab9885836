"""fprev --exec --protocol binary responder: n little-endian float32 per probe, sequential float32 sum back."""
import struct
import sys

import array

n = int(sys.argv[1])
inp, out = sys.stdin.buffer, sys.stdout.buffer
while True:
    data = inp.read(4 * n)
    if len(data) < 4 * n:
        break
    x = array.array("f", data)
    total = array.array("f", [0.0])
    for v in x:
        total[0] = total[0] + v  # stored back as float32 after every addition
    out.write(struct.pack("<f", total[0]))
    out.flush()
