"""fprev --exec --protocol delta-binary responder (float32, n given as argv[1]): keeps the
vector, answers its sequential float32 sum as 4 little-endian bytes.

  'B' + n float32       the vector is now x (no answer)
  'P' + u32 i + float32 a + u32 j + float32 b
                        answer sum(x with x[i] = a, x[j] = b); x unchanged
  'C'                   answer sum(x)
"""
import array
import struct
import sys

n = int(sys.argv[1])
inp, out = sys.stdin.buffer, sys.stdout.buffer
x = array.array("f", [0.0] * n)


def total():
    s = array.array("f", [0.0])
    for v in x:
        s[0] = s[0] + v  # stored back as float32 after every addition
    return s[0]


while True:
    kind = inp.read(1)
    if not kind:
        break
    if kind == b"B":
        x = array.array("f", inp.read(4 * n))
        continue
    if kind == b"P":
        i, a, j, b = struct.unpack("<IfIf", inp.read(16))
        old_i, old_j = x[i], x[j]
        x[i], x[j] = a, b
        answer = total()
        x[i], x[j] = old_i, old_j
    else:  # b"C"
        answer = total()
    out.write(struct.pack("<f", answer))
    out.flush()
