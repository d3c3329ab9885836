#!/usr/bin/env bash
# Compile time of `#[fprev::scramble]` on a large function (issue 14 item 9); not run in CI.
#
#   scripts/scramble_compile_time.sh [LINES] [WORKDIR] [-- extra cargo build args, e.g. --release]
#
# Generates a LINES-line function (default 2,000) in a scratch crate that depends on this
# checkout by path, builds its dependencies once, then times a cold build of the scratch
# crate only (CARGO_INCREMENTAL=0, `touch`), plain and annotated, three times each. Prints
# wall and CPU seconds per build.
#
# DENSITY=dense (default): the worst case, a function made of reductions only (loop `+=`,
#   `x = x + e`, `-=` in a `while`, nested loops, iterator `sum` and `fold`: a site every
#   3.5 lines).
# DENSITY=realistic: a reduction every 16 lines among element-wise loops, branches, index
#   arithmetic, integer counters and calls.
# ATTR=accumulator: time `#[fprev::accumulator]` (chain counting) instead of `#[fprev::scramble]`.
# COUNT=1: also count the compiler's instructions for each build (valgrind's cachegrind,
#   one codegen unit, one thread), which a busy machine does not blur.
set -euo pipefail

FPREV=$(cd "$(dirname "$0")/.." && pwd)
LINES=${1:-2000}
WORK=${2:-/tmp/fprev-compile-time}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
mkdir -p "$WORK/src"
cat > "$WORK/Cargo.toml" <<TOML
[package]
name = "fprev-compile-time"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
fprev = { path = "$FPREV" }

[workspace]
TOML
cp "$FPREV/Cargo.lock" "$WORK/"

DENSITY=${DENSITY:-dense}
generate() { # $1: 1 annotated, 0 plain
    python3 - "$1" "$LINES" "$DENSITY" "${ATTR:-scramble}" <<'PY'
import sys
annotated, lines, density, attr = sys.argv[1] == "1", int(sys.argv[2]), sys.argv[3], sys.argv[4]
out = ["#![allow(clippy::all, unused)]", ""]
if annotated:
    out.append(f"#[fprev::{attr}]")
if density == "realistic":
    out += ["pub fn big(x: &[f64], y: &mut [f64], n: usize, a: f64) -> f64 {",
            "    let mut total = 0.0f64;", "    let mut count = 0usize;"]
    red = [
        lambda k: [f"    let mut s{k} = 0.0f64;", "    for i in 0..n {", f"        s{k} += x[i] * y[i];", "    }", f"    total += s{k};"],
        lambda k: [f"    let q{k}: f64 = x.iter().map(|v| v * a{k}).sum();", f"    total += q{k};"],
        lambda k: [f"    let mut m{k} = 0.0f64;", "    for (p, q) in x.iter().zip(y.iter()) {", f"        m{k} = m{k} + (p - q) * (p - q);", "    }", f"    total += m{k}.sqrt();"],
        lambda k: [f"    let f{k} = y.iter().fold(0.0, |acc, v| acc + v.abs());", f"    total += f{k};"],
    ]
    k = 0
    while len(out) < lines:
        out += [
            f"    let a{k} = a * {k}.5 + (n as f64).ln_1p();",
            f"    let b{k} = if a{k} > 1.0 {{ a{k}.sqrt() }} else {{ a{k} * a{k} - 0.25 }};",
            "    for i in 0..n {",
            f"        y[i] = a{k} * x[i] + b{k};",
            "        if y[i] < 0.0 {",
            "            y[i] = -y[i] * 0.5;",
            "            count += 1;",
            "        }",
            "    }",
            f"    let c{k} = match count % 3 {{ 0 => b{k}.max(1.0), 1 => b{k}.min(-1.0), _ => b{k}.abs() }};",
            f"    let idx{k} = (count * 7 + {k}) % n.max(1);",
            f"    if idx{k} < y.len() {{ y[idx{k}] += c{k} * 1e-3; }}",
        ]
        out += red[k % 4](k)
        k += 1
    out += ["    total + count as f64", "}"]
else:
    out += ["pub fn big(x: &[f64], y: &[f64], n: usize) -> f64 {", "    let mut total = 0.0f64;"]
    k = 0
    while len(out) < lines:
        out += [
            f"    let mut s{k} = 0.0f64;",
            "    for i in 0..n {",
            f"        let t = x[i] * y[i] + {k}.0;",
            f"        s{k} += t * 0.5;",
            "    }",
            f"    let mut m{k} = 0.0f64;",
            "    for (a, b) in x.iter().zip(y.iter()) {",
            f"        m{k} = m{k} + a * b;",
            "    }",
            f"    let q{k}: f64 = x.iter().map(|v| v * {k}.0).sum();",
            f"    let f{k} = y.iter().fold(0.0, |acc, v| acc + v * 2.0);",
            f"    let mut w{k} = 0.0f64;",
            f"    let mut j{k} = 0;",
            f"    while j{k} < n {{",
            f"        w{k} -= x[j{k}];",
            f"        j{k} += 1;",
            "    }",
            "    for r in 0..n {",
            "        let mut inner = 0.0;",
            "        for c in 0..n {",
            "            inner += x[r] * y[c];",
            "        }",
            "        total += inner;",
            "    }",
            f"    total += s{k} + m{k} + q{k} + f{k} + w{k};",
        ]
        k += 1
    out += ["    total", "}"]
print("\n".join(out))
PY
}

cd "$WORK"
export CARGO_INCREMENTAL=0
for annotated in 0 1; do
    generate "$annotated" > src/lib.rs
    cargo build -q "$@"
    for _ in 1 2 3; do
        touch src/lib.rs
        /usr/bin/time -f "${ATTR:-scramble} $DENSITY annotated=$annotated lines=$LINES wall %e s cpu %U+%S s" cargo build -q "$@"
    done
    if [ "${COUNT:-0}" = 1 ]; then
        printf '#!/bin/sh\nexec valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=%s/cg.out "$@" 2>/dev/null\n' "$WORK" > "$WORK/cg.sh"
        chmod +x "$WORK/cg.sh"
        touch src/lib.rs
        RUSTC_BOOTSTRAP=1 RUSTC_WORKSPACE_WRAPPER="$WORK/cg.sh" cargo rustc -q "$@" -- -C codegen-units=1 -Z threads=1
        awk -v d="$DENSITY" -v a="$annotated" '/^summary/ { printf "%s annotated=%s compiler instructions %.2f G\n", d, a, $2 / 1e9 }' "$WORK/cg.out"
    fi
done
