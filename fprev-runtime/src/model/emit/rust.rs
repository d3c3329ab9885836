//! Rust templates: `{T}` is the float type, `{ZERO}` its `-0.0`, `{HEADER}` the doc
//! comment, other `{KEY}`s the model's parameters.

use crate::model::{Combine, ModelShape};

/// The code of `shape`, before substitution.
pub(super) fn template(shape: &ModelShape) -> String {
    match *shape {
        ModelShape::Sequential => SEQUENTIAL.into(),
        ModelShape::Reverse => SEQUENTIAL.replace("x.iter()", "x.iter().rev()"),
        ModelShape::Unrolled { combine, .. } => UNROLLED.replace(
            "{COMBINE}",
            match combine {
                Combine::InOrder => "let mut s = acc.iter().fold({ZERO}, |s, &a| s + a);",
                Combine::Pairwise => "let mut s = pairwise(&acc);",
                Combine::Folded => {
                    "let mut s: {T} = {ZERO};\n    for k in 0..LANES / 2 {\n        s += acc[k] + acc[k + LANES / 2];\n    }"
                }
            },
        ),
        ModelShape::NumpyPairwise { .. } => NUMPY.into(),
        ModelShape::XlaWindows { .. } => XLA.into(),
        ModelShape::RayonHalving { .. } => RAYON.into(),
        ModelShape::TorchCascade { .. } => TORCH.into(),
    }
}

const SEQUENTIAL: &str = r#"{HEADER}pub fn sum(x: &[{T}]) -> {T} {
    let mut s: {T} = {ZERO};
    for &v in x.iter() {
        s += v;
    }
    s
}
"#;

const UNROLLED: &str = r#"{HEADER}pub fn sum(x: &[{T}]) -> {T} {
    const LANES: usize = {LANES};
    /// Halves, the lower one rounded down, each combined the same way.
    #[allow(dead_code)]
    fn pairwise(p: &[{T}]) -> {T} {
        match p.len() {
            0 => {ZERO},
            1 => p[0],
            n => pairwise(&p[..n / 2]) + pairwise(&p[n / 2..]),
        }
    }
    let mut acc = [{ZERO}; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            acc[k] += c[k];
        }
    }
    {COMBINE}
    for &v in chunks.remainder() {
        s += v;
    }
    s
}
"#;

const NUMPY: &str = r#"{HEADER}pub fn sum(x: &[{T}]) -> {T} {
    const LANES: usize = {LANES};
    const BLOCK: usize = {BLOCK};
    /// Halves, the lower one rounded down, each combined the same way.
    fn pairwise(p: &[{T}]) -> {T} {
        match p.len() {
            0 => {ZERO},
            1 => p[0],
            n => pairwise(&p[..n / 2]) + pairwise(&p[n / 2..]),
        }
    }
    let n = x.len();
    if n < LANES {
        let mut s: {T} = {ZERO};
        for &v in x {
            s += v;
        }
        s
    } else if n <= BLOCK {
        // LANES strided accumulators, combined pairwise, then the remainder in order
        let mut acc = [{ZERO}; LANES];
        let mut chunks = x.chunks_exact(LANES);
        for c in &mut chunks {
            for k in 0..LANES {
                acc[k] += c[k];
            }
        }
        let mut s = pairwise(&acc);
        for &v in chunks.remainder() {
            s += v;
        }
        s
    } else {
        // halves, the first rounded down to a multiple of LANES
        let half = n / 2 - (n / 2) % LANES;
        sum(&x[..half]) + sum(&x[half..])
    }
}
"#;

const XLA: &str = r#"{HEADER}pub fn sum(x: &[{T}]) -> {T} {
    const WINDOW: usize = {WINDOW};
    fn in_order(v: &[{T}]) -> {T} {
        let mut s: {T} = {ZERO};
        for &a in v {
            s += a;
        }
        s
    }
    /// One level: windows of WINDOW values, the padding to whole windows split evenly
    /// between both ends (the odd value of padding at the high end).
    fn windows(v: &[{T}]) -> Vec<{T}> {
        let m = v.len();
        let count = m.div_ceil(WINDOW);
        let low = (count * WINDOW - m) / 2;
        (0..count)
            .map(|k| {
                let start = (k * WINDOW).saturating_sub(low);
                let end = ((k + 1) * WINDOW - low).min(m);
                in_order(&v[start..end])
            })
            .collect()
    }
    if x.len() <= WINDOW {
        return in_order(x);
    }
    let mut level = windows(x);
    while level.len() > WINDOW {
        level = windows(&level);
    }
    in_order(&level)
}
"#;

const RAYON: &str = r#"{HEADER}pub fn sum(x: &[{T}]) -> {T} {
    const THREADS: usize = {THREADS};
    /// rayon's splitter: halve while the split count (halved per split) is non-zero.
    fn split(x: &[{T}], splits: usize) -> {T} {
        if splits > 0 && x.len() >= 2 {
            let (a, b) = x.split_at(x.len() / 2);
            split(a, splits / 2) + split(b, splits / 2)
        } else {
            let mut s: {T} = {ZERO};
            for &v in x {
                s += v;
            }
            s
        }
    }
    split(x, THREADS)
}
"#;

const TORCH: &str = r#"{HEADER}pub fn sum(x: &[{T}]) -> {T} {
    const WIDTH: usize = {WIDTH}; // lanes of a vector
    const LOAD: usize = {LOAD}; // input vectors added lane by lane into one on loading
    const ILP: usize = {ILP}; // vectors per row
    const LEVELS: usize = {LEVELS}; // cascade levels

    fn add<const L: usize>(a: &mut [{T}; L], b: [{T}; L]) {
        for k in 0..L {
            a[k] += b[k];
        }
    }
    /// ATen's row_sum over `count` items of L lanes (`get(i)`): rows of ILP items summed
    /// by the cascade (multi_row_sum), leftover items into partial 0, partials in order.
    fn row_sum<const L: usize, G: Fn(usize) -> [{T}; L]>(count: usize, get: G) -> [{T}; L] {
        let rows = count / ILP;
        let ceil_log2 = if rows <= 1 { 0 } else { usize::BITS - (rows - 1).leading_zeros() };
        let power = (ceil_log2 / LEVELS as u32).max(4);
        let step = 1usize << power;
        let mask = step - 1;
        let mut acc = [[[{ZERO}; L]; ILP]; LEVELS];
        let mut i = 0;
        while i + step <= rows {
            for _ in 0..step {
                for k in 0..ILP {
                    add(&mut acc[0][k], get(i * ILP + k));
                }
                i += 1;
            }
            // carry level j - 1 into level j, further up while i is a multiple of 2^(j p)
            for j in 1..LEVELS {
                for k in 0..ILP {
                    let low = acc[j - 1][k];
                    add(&mut acc[j][k], low);
                    acc[j - 1][k] = [{ZERO}; L];
                }
                if i & (mask << (j as u32 * power)) != 0 {
                    break;
                }
            }
        }
        while i < rows {
            for k in 0..ILP {
                add(&mut acc[0][k], get(i * ILP + k));
            }
            i += 1;
        }
        for j in 1..LEVELS {
            for k in 0..ILP {
                let high = acc[j][k];
                add(&mut acc[0][k], high);
            }
        }
        let mut p = acc[0];
        for v in rows * ILP..count {
            add(&mut p[0], get(v));
        }
        for k in 1..ILP {
            let q = p[k];
            add(&mut p[0], q);
        }
        p[0]
    }
    let n = x.len();
    if n < WIDTH * LOAD {
        // the scalar path: the same cascade over single values
        return row_sum::<1, _>(n, |i| [x[i]])[0];
    }
    let count = n / (WIDTH * LOAD);
    let lanes = row_sum::<WIDTH, _>(count, |v| {
        // one slice of known length per vector: no bounds check per lane
        let chunk = &x[v * WIDTH * LOAD..(v + 1) * WIDTH * LOAD];
        let mut a: [{T}; WIDTH] = std::array::from_fn(|k| chunk[k]);
        for h in 1..LOAD {
            for k in 0..WIDTH {
                a[k] += chunk[h * WIDTH + k];
            }
        }
        a
    });
    // the scalar tail in order, then the lanes in order
    let mut s: {T} = {ZERO};
    for &v in &x[count * WIDTH * LOAD..] {
        s += v;
    }
    for lane in lanes {
        s += lane;
    }
    s
}
"#;
