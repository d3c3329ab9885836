//! C templates: `{T}` is `float` or `double`, `{ZERO}` its `-0.0`, `{HEADER}` the
//! comment, other `{KEY}`s the model's parameters. C99, no dependency beyond `stddef.h`.

use crate::model::{Combine, ModelShape};

/// The code of `shape`, before substitution.
pub(super) fn template(shape: &ModelShape) -> String {
    match *shape {
        ModelShape::Sequential => SEQUENTIAL.into(),
        ModelShape::Reverse => REVERSE.into(),
        ModelShape::Unrolled { combine, .. } => UNROLLED.replace(
            "{COMBINE}",
            match combine {
                Combine::InOrder => {
                    "{T} s = {ZERO};\n    for (size_t k = 0; k < LANES; k++) s += acc[k];"
                }
                Combine::Pairwise => "{T} s = sum_pairwise(acc, LANES);",
                Combine::Folded => {
                    "{T} s = {ZERO};\n    for (size_t k = 0; k < LANES / 2; k++) s += acc[k] + acc[k + LANES / 2];"
                }
            },
        ),
        ModelShape::NumpyPairwise { .. } => NUMPY.into(),
        ModelShape::XlaWindows { .. } => XLA.into(),
        ModelShape::RayonHalving { .. } => RAYON.into(),
        ModelShape::TorchCascade { .. } => TORCH.into(),
    }
}

const SEQUENTIAL: &str = r#"#include <stddef.h>

{HEADER}{T} sum(const {T} *x, size_t n) {
    {T} s = {ZERO};
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}
"#;

const REVERSE: &str = r#"#include <stddef.h>

{HEADER}{T} sum(const {T} *x, size_t n) {
    {T} s = {ZERO};
    for (size_t i = n; i > 0; i--) s += x[i - 1];
    return s;
}
"#;

const UNROLLED: &str = concat!(
    "#include <stddef.h>\n\n#define LANES {LANES}\n\n",
    r#"/* halves, the lower one rounded down, each combined the same way */
static {T} sum_pairwise(const {T} *p, size_t n) {
    if (n == 0) return {ZERO};
    if (n == 1) return p[0];
    return sum_pairwise(p, n / 2) + sum_pairwise(p + n / 2, n - n / 2);
}

{HEADER}{T} sum(const {T} *x, size_t n) {
    {T} acc[LANES];
    for (size_t k = 0; k < LANES; k++) acc[k] = {ZERO};
    size_t full = n - n % LANES;
    for (size_t i = 0; i < full; i += LANES)
        for (size_t k = 0; k < LANES; k++) acc[k] += x[i + k];
    {COMBINE}
    for (size_t i = full; i < n; i++) s += x[i];
    (void)sum_pairwise;
    return s;
}
"#
);

const NUMPY: &str = concat!(
    "#include <stddef.h>\n\n#define LANES {LANES}\n#define BLOCK {BLOCK}\n\n",
    r#"/* halves, the lower one rounded down, each combined the same way */
static {T} sum_pairwise(const {T} *p, size_t n) {
    if (n == 0) return {ZERO};
    if (n == 1) return p[0];
    return sum_pairwise(p, n / 2) + sum_pairwise(p + n / 2, n - n / 2);
}

{HEADER}{T} sum(const {T} *x, size_t n) {
    if (n < LANES) {
        {T} s = {ZERO};
        for (size_t i = 0; i < n; i++) s += x[i];
        return s;
    }
    if (n <= BLOCK) {
        /* LANES strided accumulators, combined pairwise, then the remainder in order */
        {T} acc[LANES];
        for (size_t k = 0; k < LANES; k++) acc[k] = {ZERO};
        size_t full = n - n % LANES;
        for (size_t i = 0; i < full; i += LANES)
            for (size_t k = 0; k < LANES; k++) acc[k] += x[i + k];
        {T} s = sum_pairwise(acc, LANES);
        for (size_t i = full; i < n; i++) s += x[i];
        return s;
    }
    /* halves, the first rounded down to a multiple of LANES */
    size_t half = n / 2 - (n / 2) % LANES;
    return sum(x, half) + sum(x + half, n - half);
}
"#
);

const XLA: &str = concat!(
    "#include <stddef.h>\n#include <stdlib.h>\n\n#define WINDOW {WINDOW}\n\n",
    r#"static {T} sum_in_order(const {T} *v, size_t n) {
    {T} s = {ZERO};
    for (size_t i = 0; i < n; i++) s += v[i];
    return s;
}

/* one level: windows of WINDOW values, the padding to whole windows split evenly between
   both ends (the odd value at the high end); writes the window sums to out */
static size_t sum_windows(const {T} *v, size_t m, {T} *out) {
    size_t count = (m + WINDOW - 1) / WINDOW;
    size_t low = (count * WINDOW - m) / 2;
    for (size_t k = 0; k < count; k++) {
        size_t start = k * WINDOW > low ? k * WINDOW - low : 0;
        size_t end = (k + 1) * WINDOW - low;
        if (end > m) end = m;
        out[k] = sum_in_order(v + start, end - start);
    }
    return count;
}

{HEADER}{T} sum(const {T} *x, size_t n) {
    if (n <= WINDOW) return sum_in_order(x, n);
    {T} *level = malloc(((n + WINDOW - 1) / WINDOW) * sizeof({T}));
    if (level == NULL) abort();
    size_t m = sum_windows(x, n, level);
    while (m > WINDOW) m = sum_windows(level, m, level); /* in place: out[k] <= v[k * WINDOW] */
    {T} s = sum_in_order(level, m);
    free(level);
    return s;
}
"#
);

const RAYON: &str = concat!(
    "#include <stddef.h>\n\n#define THREADS {THREADS}\n\n",
    r#"/* rayon's splitter: halve while the split count (halved per split) is non-zero */
static {T} sum_split(const {T} *x, size_t n, size_t splits) {
    if (splits > 0 && n >= 2)
        return sum_split(x, n / 2, splits / 2) + sum_split(x + n / 2, n - n / 2, splits / 2);
    {T} s = {ZERO};
    for (size_t i = 0; i < n; i++) s += x[i];
    return s;
}

{HEADER}{T} sum(const {T} *x, size_t n) {
    return sum_split(x, n, THREADS);
}
"#
);

const TORCH: &str = concat!(
    "#include <stddef.h>\n\n",
    "#define WIDTH {WIDTH}   /* lanes of a vector */\n",
    "#define LOAD {LOAD}    /* input vectors added lane by lane into one on loading */\n",
    "#define ILP {ILP}     /* vectors per row */\n",
    "#define LEVELS {LEVELS}  /* cascade levels */\n\n",
    r#"/* item i of `lanes` lanes: a vector (lanes = WIDTH) or one value (lanes = 1) */
static void sum_load(const {T} *x, size_t lanes, size_t i, {T} *out) {
    if (lanes == 1) { out[0] = x[i]; return; }
    const {T} *base = x + i * WIDTH * LOAD;
    for (size_t k = 0; k < WIDTH; k++) out[k] = base[k];
    for (size_t h = 1; h < LOAD; h++)
        for (size_t k = 0; k < WIDTH; k++) out[k] += base[h * WIDTH + k];
}

static size_t sum_ceil_log2(size_t x) {
    size_t r = 0;
    while (x > 1 && ((size_t)1 << r) < x) r++;
    return r;
}

/* ATen's row_sum over `count` items: rows of ILP items summed by the cascade
   (multi_row_sum), leftover items into partial 0, partials in order; result in out */
static void sum_rows(const {T} *x, size_t lanes, size_t count, {T} *out) {
    {T} acc[LEVELS][ILP][WIDTH], v[WIDTH];
    for (size_t j = 0; j < LEVELS; j++)
        for (size_t k = 0; k < ILP; k++)
            for (size_t l = 0; l < WIDTH; l++) acc[j][k][l] = {ZERO};
    size_t rows = count / ILP;
    size_t power = sum_ceil_log2(rows) / LEVELS;
    if (power < 4) power = 4;
    size_t step = (size_t)1 << power, mask = step - 1, i = 0;
    while (i + step <= rows) {
        for (size_t r = 0; r < step; r++, i++)
            for (size_t k = 0; k < ILP; k++) {
                sum_load(x, lanes, i * ILP + k, v);
                for (size_t l = 0; l < lanes; l++) acc[0][k][l] += v[l];
            }
        /* carry level j - 1 into level j, further up while i is a multiple of 2^(j p) */
        for (size_t j = 1; j < LEVELS; j++) {
            for (size_t k = 0; k < ILP; k++)
                for (size_t l = 0; l < lanes; l++) {
                    acc[j][k][l] += acc[j - 1][k][l];
                    acc[j - 1][k][l] = {ZERO};
                }
            if (i & (mask << (j * power))) break;
        }
    }
    for (; i < rows; i++)
        for (size_t k = 0; k < ILP; k++) {
            sum_load(x, lanes, i * ILP + k, v);
            for (size_t l = 0; l < lanes; l++) acc[0][k][l] += v[l];
        }
    for (size_t j = 1; j < LEVELS; j++)
        for (size_t k = 0; k < ILP; k++)
            for (size_t l = 0; l < lanes; l++) acc[0][k][l] += acc[j][k][l];
    for (size_t c = rows * ILP; c < count; c++) {
        sum_load(x, lanes, c, v);
        for (size_t l = 0; l < lanes; l++) acc[0][0][l] += v[l];
    }
    for (size_t k = 1; k < ILP; k++)
        for (size_t l = 0; l < lanes; l++) acc[0][0][l] += acc[0][k][l];
    for (size_t l = 0; l < lanes; l++) out[l] = acc[0][0][l];
}

{HEADER}{T} sum(const {T} *x, size_t n) {
    {T} lanes[WIDTH];
    if (n < WIDTH * LOAD) { /* the scalar path: the same cascade over single values */
        sum_rows(x, 1, n, lanes);
        return lanes[0];
    }
    size_t count = n / (WIDTH * LOAD);
    sum_rows(x, WIDTH, count, lanes);
    /* the scalar tail in order, then the lanes in order */
    {T} s = {ZERO};
    for (size_t i = count * WIDTH * LOAD; i < n; i++) s += x[i];
    for (size_t l = 0; l < WIDTH; l++) s += lanes[l];
    return s;
}
"#
);
