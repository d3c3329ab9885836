#!/usr/bin/env bash
# `cargo fprev` on published crates, fetched fresh and never edited; not run in CI
# (it needs the registry and about half an hour on two cores).
#
#   scripts/validate_cargo_fprev.sh [WORKDIR]
#
# For each crate of CRATES ("name@version[+features] ...", default a statistics crate, a
# linear-algebra crate with solvers and a rayon clustering crate): fetch it through a
# scratch cargo project, copy the published source out of cargo's registry, then on the
# copy:
# - `cargo fprev scan --json`: functions, loops and chains scrambled, left alone by reason;
# - `cargo fprev test --seeds $SEEDS --blame`, then `cargo fprev replay` on every finding
#   (it must fail again);
# - `cargo fprev chains`: the chain report of the suite (sites, running values).
# Prints one row per crate. Each crate's scan.json, findings.json, chains.txt and logs
# stay in WORKDIR/out-<crate>.
set -uo pipefail

FPREV=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-${WORK:-/tmp/fprev-cargo-validate}}
CRATES=${CRATES:-"statrs@0.19.1 rulinalg@0.4.2 rkm@0.8.1+parallel"}
SEEDS=${SEEDS:-8}
export CARGO_TERM_COLOR=never

cargo build --release --quiet --manifest-path "$FPREV/Cargo.toml" -p fprev-cli --bin cargo-fprev || exit 1
TOOL="$FPREV/target/release/cargo-fprev"

rm -rf "$WORK/scratch"
mkdir -p "$WORK"
cargo new --lib --quiet "$WORK/scratch" || exit 1
for spec in $CRATES; do
    nv=${spec%%+*}
    echo "${nv%@*} = \"=${nv#*@}\"" >>"$WORK/scratch/Cargo.toml"
done
(cd "$WORK/scratch" && cargo fetch --quiet) || exit 1
(cd "$WORK/scratch" && cargo metadata --format-version 1) >"$WORK/scratch/metadata.json" || exit 1

printf '| crate | functions | scrambled (loops, chains) | left alone, by reason | coverage (binary with the most sites) | findings (fail/timeout) | unscrambled failures | replays reproduced | wall: test (build; plain runs; scrambled runs) | chain report: sites (running values) |\n|---|---|---|---|---|---|---|---|---|---|\n' >"$WORK/table.md"
for spec in $CRATES; do
    nv=${spec%%+*}
    name=${nv%@*}
    version=${nv#*@}
    features=""
    [ "$spec" != "$nv" ] && features="--features ${spec#*+}"
    src=$(python3 - "$WORK/scratch/metadata.json" "$name" "$version" <<'PY'
import json, os, sys
for p in json.load(open(sys.argv[1]))["packages"]:
    if p["name"] == sys.argv[2] and p["version"] == sys.argv[3]:
        print(os.path.dirname(p["manifest_path"]))
PY
)
    copy="$WORK/$name-$version"
    rm -rf "$copy"
    cp -r "$src" "$copy"
    out="$WORK/out-$name"
    mkdir -p "$out"
    # shellcheck disable=SC2086
    (cd "$copy" && "$TOOL" fprev scan --json) >"$out/scan.json" 2>"$WORK/$name.scan.log"
    start=$SECONDS
    # shellcheck disable=SC2086
    (cd "$copy" && "$TOOL" fprev test --seeds "$SEEDS" --blame --out "$out" $features) \
        >"$WORK/$name.log" 2>&1
    status=$?
    wall=$((SECONDS - start))
    replayed=0
    total=0
    while IFS=$'\t' read -r mode token test; do
        [ -z "$test" ] && continue
        total=$((total + 1))
        # shellcheck disable=SC2086
        (cd "$copy" && "$TOOL" fprev replay --mode "$mode" $features "$token" "$test") \
            >>"$WORK/$name.replays.log" 2>&1
        [ $? -eq 2 ] && replayed=$((replayed + 1))
    done < <(python3 - "$out/findings.json" <<'PY' 2>/dev/null
import json, sys
for f in json.load(open(sys.argv[1]))["findings"]:
    if f["kind"] == "fail":
        print(f"{f['mode']}\t{f['token']}\t{f['test']}")
PY
)
    # shellcheck disable=SC2086
    (cd "$copy" && "$TOOL" fprev chains --out "$out" $features) >"$WORK/$name.chains.log" 2>&1
    python3 - "$out" "$spec" "$status" "$replayed" "$total" "$wall" >>"$WORK/table.md" <<'PY'
import json, os, sys
out, spec, status, replayed, total, wall = sys.argv[1:7]
try:
    scan = json.load(open(os.path.join(out, "scan.json")))["totals"]
    scanned = (f"{scan['functions']} | {scan['scrambled']} | {scan['left_alone']}: "
               + ", ".join(f"{n} {k}" for k, n in sorted(scan["left_alone_by_reason"].items(), key=lambda kv: -kv[1])))
except Exception:
    scanned = "- | - | -"
try:
    lines = open(os.path.join(out, "chains.txt")).read().splitlines()
    sites = [l for l in lines[3:] if l.strip()]
    chains = f"{len(sites)} ({sum('[running value' in l for l in sites)})"
except Exception:
    chains = "-"
try:
    d = json.load(open(os.path.join(out, "findings.json")))
except Exception:
    print(f"| {spec} | {scanned} | - | - | - | - | {wall} s (exit {status}, no report) | {chains} |")
    sys.exit()
kinds = [f["kind"] for f in d["findings"]]
# the test binary that links the most scramble sites (integration tests may link none)
covs = [c["coverage"].split(" (")[0] for c in d.get("coverage", []) if "scramble site" in c["coverage"]]
cov = max(covs, key=lambda c: int(c.split(" of ")[1].split()[0]), default="-")
times = f"{d['wall_s']:.0f} s ({d['build_s']:.0f} s; {d['unscrambled_s']:.1f} s; {d['scrambled_s']:.1f} s)"
print(f"| {spec} | {scanned} | {cov} | {kinds.count('fail')}/{kinds.count('timeout')} "
      f"| {len(d['unscrambled_failures'])} | {replayed} of {total} | {times} | {chains} |")
PY
done
cat "$WORK/table.md"
