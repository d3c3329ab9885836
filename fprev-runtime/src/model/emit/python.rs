//! Python templates: `{R}` opens a rounding to the sum type (`_round(` for float32, a
//! plain parenthesis for float64), `{ROUND_DEF}` defines `_round`, `{HEADER}` the
//! comment, other `{KEY}`s the model's parameters. Standard library only.

use crate::model::{Combine, ModelShape, SumType};

/// The definition of `_round` for `t` (none for float64: Python floats are binary64).
pub(super) fn round_def(t: SumType) -> &'static str {
    match t {
        SumType::F32 => {
            "import struct\n\n\ndef _round(v):\n    \"\"\"v rounded to float32: a float32 sum \
             done in float64 and rounded once is correctly rounded.\"\"\"\n    return \
             struct.unpack(\"f\", struct.pack(\"f\", v))[0]\n\n\n"
        }
        SumType::F64 => "",
    }
}

/// The code of `shape`, before substitution.
pub(super) fn template(shape: &ModelShape) -> String {
    match *shape {
        ModelShape::Sequential => SEQUENTIAL.into(),
        ModelShape::Reverse => SEQUENTIAL.replace("for v in x:", "for v in reversed(x):"),
        ModelShape::Unrolled { combine, .. } => UNROLLED.replace(
            "{COMBINE}",
            match combine {
                Combine::InOrder => "s = -0.0\n    for a in acc:\n        s = {R}s + a)",
                Combine::Pairwise => "s = pairwise(acc)",
                Combine::Folded => {
                    "s = -0.0\n    for k in range(LANES // 2):\n        s = {R}s + {R}acc[k] + acc[k + LANES // 2]))"
                }
            },
        ),
        ModelShape::NumpyPairwise { .. } => NUMPY.into(),
        ModelShape::XlaWindows { .. } => XLA.into(),
        ModelShape::RayonHalving { .. } => RAYON.into(),
        ModelShape::TorchCascade { .. } => TORCH.into(),
    }
}

const SEQUENTIAL: &str = r#"{ROUND_DEF}{HEADER}def sum(x):
    s = -0.0
    for v in x:
        s = {R}s + v)
    return s
"#;

const UNROLLED: &str = r#"{ROUND_DEF}{HEADER}def sum(x):
    LANES = {LANES}

    def pairwise(p):
        # halves, the lower one rounded down, each combined the same way
        if len(p) == 0:
            return -0.0
        if len(p) == 1:
            return p[0]
        h = len(p) // 2
        return {R}pairwise(p[:h]) + pairwise(p[h:]))

    n = len(x)
    full = n - n % LANES
    acc = [-0.0] * LANES
    for i in range(0, full, LANES):
        for k in range(LANES):
            acc[k] = {R}acc[k] + x[i + k])
    {COMBINE}
    for i in range(full, n):
        s = {R}s + x[i])
    return s
"#;

const NUMPY: &str = r#"{ROUND_DEF}{HEADER}def sum(x):
    LANES, BLOCK = {LANES}, {BLOCK}

    def pairwise(p):
        # halves, the lower one rounded down, each combined the same way
        if len(p) == 1:
            return p[0]
        h = len(p) // 2
        return {R}pairwise(p[:h]) + pairwise(p[h:]))

    def block(lo, n):
        if n < LANES:
            s = -0.0
            for i in range(lo, lo + n):
                s = {R}s + x[i])
            return s
        if n <= BLOCK:
            # LANES strided accumulators, combined pairwise, then the remainder in order
            full = n - n % LANES
            acc = [-0.0] * LANES
            for i in range(lo, lo + full, LANES):
                for k in range(LANES):
                    acc[k] = {R}acc[k] + x[i + k])
            s = pairwise(acc)
            for i in range(lo + full, lo + n):
                s = {R}s + x[i])
            return s
        # halves, the first rounded down to a multiple of LANES
        half = n // 2 - (n // 2) % LANES
        return {R}block(lo, half) + block(lo + half, n - half))

    return block(0, len(x))
"#;

const XLA: &str = r#"{ROUND_DEF}{HEADER}def sum(x):
    WINDOW = {WINDOW}

    def in_order(v):
        s = -0.0
        for a in v:
            s = {R}s + a)
        return s

    def windows(v):
        # windows of WINDOW values, the padding to whole windows split evenly between
        # both ends (the odd value at the high end)
        m = len(v)
        count = -(-m // WINDOW)
        low = (count * WINDOW - m) // 2
        return [
            in_order(v[max(k * WINDOW - low, 0):min((k + 1) * WINDOW - low, m)])
            for k in range(count)
        ]

    level = list(x)
    while len(level) > WINDOW:
        level = windows(level)
    return in_order(level)
"#;

const RAYON: &str = r#"{ROUND_DEF}{HEADER}def sum(x):
    THREADS = {THREADS}

    def split(lo, n, splits):
        # rayon's splitter: halve while the split count (halved per split) is non-zero
        if splits > 0 and n >= 2:
            h = n // 2
            return {R}split(lo, h, splits // 2) + split(lo + h, n - h, splits // 2))
        s = -0.0
        for i in range(lo, lo + n):
            s = {R}s + x[i])
        return s

    return split(0, len(x), THREADS)
"#;

const TORCH: &str = r#"{ROUND_DEF}{HEADER}def sum(x):
    WIDTH = {WIDTH}  # lanes of a vector
    LOAD = {LOAD}  # input vectors added lane by lane into one on loading
    ILP = {ILP}  # vectors per row
    LEVELS = {LEVELS}  # cascade levels

    def add(a, b):
        for k in range(len(a)):
            a[k] = {R}a[k] + b[k])

    def row_sum(count, lanes, get):
        # ATen's row_sum: rows of ILP items summed by the cascade (multi_row_sum),
        # leftover items into partial 0, partials in order
        rows = count // ILP
        power = max(4, (rows - 1).bit_length() // LEVELS if rows > 1 else 0)
        step = 1 << power
        mask = step - 1
        acc = [[[-0.0] * lanes for _ in range(ILP)] for _ in range(LEVELS)]
        i = 0
        while i + step <= rows:
            for _ in range(step):
                for k in range(ILP):
                    add(acc[0][k], get(i * ILP + k))
                i += 1
            # carry level j - 1 into level j, further up while i is a multiple of 2^(j p)
            for j in range(1, LEVELS):
                for k in range(ILP):
                    add(acc[j][k], acc[j - 1][k])
                    acc[j - 1][k] = [-0.0] * lanes
                if i & (mask << (j * power)):
                    break
        while i < rows:
            for k in range(ILP):
                add(acc[0][k], get(i * ILP + k))
            i += 1
        for j in range(1, LEVELS):
            for k in range(ILP):
                add(acc[0][k], acc[j][k])
        p = acc[0]
        for c in range(rows * ILP, count):
            add(p[0], get(c))
        for k in range(1, ILP):
            add(p[0], p[k])
        return p[0]

    def vector(v):
        base = v * WIDTH * LOAD
        a = [x[base + k] for k in range(WIDTH)]
        for h in range(1, LOAD):
            add(a, x[base + h * WIDTH:base + (h + 1) * WIDTH])
        return a

    n = len(x)
    if n < WIDTH * LOAD:
        # the scalar path: the same cascade over single values
        return row_sum(n, 1, lambda i: [x[i]])[0]
    count = n // (WIDTH * LOAD)
    lanes = row_sum(count, WIDTH, vector)
    # the scalar tail in order, then the lanes in order
    s = -0.0
    for i in range(count * WIDTH * LOAD, n):
        s = {R}s + x[i])
    for lane in lanes:
        s = {R}s + lane)
    return s
"#;
