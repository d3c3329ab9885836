#!/usr/bin/env bash
# `cargo fprev test` on published crates, fetched fresh and never edited; not run in CI
# (it needs the registry and about half an hour on two cores).
#
#   scripts/validate_cargo_fprev.sh [WORKDIR]
#
# For each crate of CRATES ("name@version[+features] ...", default a statistics crate, a
# linear-algebra crate with solvers and a rayon clustering crate): fetch it through a
# scratch cargo project, copy the published source out of cargo's registry, run
# `cargo fprev test --seeds $SEEDS --blame` on the copy, then replay every finding with
# `cargo fprev replay` and check that it fails again. Prints one row per crate:
# functions annotated, coverage, findings by kind, unscrambled failures, replays that
# reproduced, wall time. Each crate's findings.json and logs stay in WORKDIR/out-<crate>.
set -uo pipefail

FPREV=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-${WORK:-/tmp/fprev-cargo-validate}}
CRATES=${CRATES:-"statrs@0.19.1 rulinalg@0.4.2 rkm@0.8.1+parallel"}
SEEDS=${SEEDS:-8}
export CARGO_TERM_COLOR=never

cargo build --quiet --manifest-path "$FPREV/Cargo.toml" -p fprev-cli --bin cargo-fprev || exit 1
TOOL="$FPREV/target/debug/cargo-fprev"

rm -rf "$WORK/scratch"
mkdir -p "$WORK"
cargo new --lib --quiet "$WORK/scratch" || exit 1
for spec in $CRATES; do
    nv=${spec%%+*}
    echo "${nv%@*} = \"=${nv#*@}\"" >>"$WORK/scratch/Cargo.toml"
done
(cd "$WORK/scratch" && cargo fetch --quiet) || exit 1
(cd "$WORK/scratch" && cargo metadata --format-version 1) >"$WORK/scratch/metadata.json" || exit 1

printf '| crate | functions | coverage (binary with the most sites) | findings (fail/timeout) | unscrambled failures | replays reproduced | wall |\n|---|---|---|---|---|---|---|\n' >"$WORK/table.md"
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
    python3 - "$out/findings.json" "$spec" "$status" "$replayed" "$total" "$wall" >>"$WORK/table.md" <<'PY'
import json, sys
spec, status, replayed, total, wall = sys.argv[2:7]
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print(f"| {spec} | - | - | - | - | - | {wall} s (exit {status}, no report) |")
    sys.exit()
kinds = [f["kind"] for f in d["findings"]]
# the test binary that links the most scramble sites (integration tests may link none)
covs = [c["coverage"].split(" (")[0] for c in d.get("coverage", []) if "scramble site" in c["coverage"]]
cov = max(covs, key=lambda c: int(c.split(" of ")[1].split()[0]), default="-")
print(f"| {spec} | {d['functions_annotated']} | {cov} | {kinds.count('fail')}/{kinds.count('timeout')} "
      f"| {len(d['unscrambled_failures'])} | {replayed} of {total} | {wall} s |")
PY
done
cat "$WORK/table.md"
