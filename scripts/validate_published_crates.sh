#!/usr/bin/env bash
# Validate `#[fprev::scramble]` on published crates (issue 14, "Done when"); not run in CI.
#
#   scripts/validate_published_crates.sh [WORKDIR]
#
# For each crate: fetch it through a scratch cargo project (nothing is vendored), copy it
# twice (plain, annotated), annotate every accumulating function of the annotated copy with
# scripts/annotate_scramble.py, build both (warnings compared), run the suite of both with
# scrambling off, list the sites (`fprev::scramble::sites()`), then run the annotated suite
# under FPREV_SCRAMBLE = fisher-yates, sattolo, shapes with FPREV_SEED = 1 2 7 99, and
# replay every failing test alone with the replay command it printed. Prints a table.
#
# ATTR=accumulator: annotate with `#[fprev::accumulator]` (chain counting) instead; build
# both (warnings compared), run both suites (failures compared), then the annotated suite
# with FPREV_CHAINS=1 (the merged chain report's site count and head go in the table).
#
# Environment: CRATES ("name@version[+features] ..."), MODES, SEEDS, TEST_ARGS (default
# "--lib --tests": doctests are left out because rustdoc recompiles them on every run; set
# TEST_ARGS="" for the whole suite), OFF_TEST_ARGS (plain and off runs; default "": the
# whole suite with doctests), CARGO_TARGET_DIR (default WORKDIR/target).
set -uo pipefail

FPREV=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-${WORK:-/tmp/fprev-validate}}
CRATES=${CRATES:-"statrs@0.19.1 rulinalg@0.4.2 rkm@0.8.1+parallel"}
MODES=${MODES:-"fisher-yates sattolo shapes"}
SEEDS=${SEEDS:-"1 2 7 99"}
ATTR=${ATTR:-scramble}
TEST_ARGS=${TEST_ARGS---lib --tests}
OFF_TEST_ARGS=${OFF_TEST_ARGS-}   # plain and off runs: the whole suite, doctests included
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$WORK/target}
export CARGO_TERM_COLOR=never
mkdir -p "$WORK/logs"
LOGS=$WORK/logs

# 1. Fetch through a scratch project and find each crate's source.
rm -rf "$WORK/scratch"
cargo new --lib --quiet "$WORK/scratch" || exit 1
for spec in $CRATES; do
    nv=${spec%%+*}
    echo "${nv%@*} = \"=${nv#*@}\"" >> "$WORK/scratch/Cargo.toml"
done
(cd "$WORK/scratch" && cargo fetch --quiet) || exit 1
(cd "$WORK/scratch" && cargo metadata --format-version 1) > "$WORK/scratch/metadata.json" || exit 1

src_of() { # name version -> directory of the published source
    python3 - "$WORK/scratch/metadata.json" "$1" "$2" <<'PY'
import json, os, sys
meta = json.load(open(sys.argv[1]))
for p in meta["packages"]:
    if p["name"] == sys.argv[2] and p["version"] == sys.argv[3]:
        print(os.path.dirname(p["manifest_path"]))
PY
}

# Sum the `test result:` lines of a cargo test log: "passed failed ignored".
counts() {
    awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i } }
         END { printf "%d %d %d\n", p, f, g }' "$1"
}
failed_tests() { # names of failed tests in a cargo test log (a doctest's "(line N)" dropped:
    # the inserted attribute lines shift it)
    sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$1" | sed -E 's/ \(line [0-9]+\)$//' | sort -u
}
warnings_of() { # the build's warnings as "message @ file", line numbers dropped (annotation shifts lines)
    awk '/^warning: / { msg = $0; next } /^ *--> / && msg != "" { f = $2; sub(/:[0-9]+:[0-9]+$/, "", f); print msg " @ " f; msg = "" }' "$1" | sort
}
panic_of() { # test name, log -> its failure block, thread ids dropped
    awk -v t="---- $1 stdout ----" '$0 == t { on = 1; next } on && /^(---- |failures:$)/ { exit } on' "$2" |
        sed -E "s/' \\([0-9]+\\) panicked/' panicked/; /^note: run with/d; /^\$/d"
}

ROWS=()
for spec in $CRATES; do
    nv=${spec%%+*}; name=${nv%@*}; version=${nv#*@}
    feats=""; [[ $spec == *+* ]] && feats="--features ${spec#*+}"
    src=$(src_of "$name" "$version")
    [[ -n $src ]] || { echo "$nv: not found in the scratch project"; continue; }
    plain=$WORK/$name-plain; ann=$WORK/$name
    rm -rf "$plain" "$ann"
    cp -r "$src" "$plain"; cp -r "$src" "$ann"; chmod -R u+w "$plain" "$ann"

    # 2. Annotate; a test that lists the sites goes at the end of the library root.
    n_fns=$(python3 "$FPREV/scripts/annotate_scramble.py" "$ann" "$FPREV" --list "$LOGS/$name.annotated.txt" | sed -n "s/^annotated //p")
    lib=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(next(t['src_path'] for p in m['packages'] if p['name']==sys.argv[2] for t in p['targets'] if 'lib' in t['kind']))" "$WORK/scratch/metadata.json" "$name")
    lib=$ann/${lib#"$src"/}
    if [[ $ATTR == accumulator ]]; then
        grep -rl 'fprev::scramble' "$ann" --include='*.rs' | xargs -r sed -i 's/#\[fprev::scramble\]/#[fprev::accumulator]/g'
        (cd "$plain" && cargo test $feats $TEST_ARGS --no-run) > "$LOGS/$name.build-plain.log" 2>&1
        (cd "$ann" && cargo test $feats $TEST_ARGS --no-run) > "$LOGS/$name.acc.build.log" 2>&1 ||
            { ROWS+=("$name $version|$n_fns|COMPILE ERROR (see $LOGS/$name.acc.build.log)"); continue; }
        new_warn=$(comm -13 <(warnings_of "$LOGS/$name.build-plain.log") <(warnings_of "$LOGS/$name.acc.build.log") | wc -l)
        (cd "$plain" && cargo test $feats $OFF_TEST_ARGS --no-fail-fast) > "$LOGS/$name.plain.log" 2>&1
        (cd "$ann" && rm -rf "$CARGO_TARGET_DIR/fprev" && FPREV_CHAINS=1 cargo test $feats $OFF_TEST_ARGS --no-fail-fast) > "$LOGS/$name.acc.log" 2>&1
        read -r pp pf pi < <(counts "$LOGS/$name.plain.log")
        read -r ap af ai < <(counts "$LOGS/$name.acc.log")
        same=$([[ "$(failed_tests "$LOGS/$name.plain.log")" == "$(failed_tests "$LOGS/$name.acc.log")" && $pp == "$ap" ]] && echo same || echo DIFFERENT)
        cp "$CARGO_TARGET_DIR/fprev/chains.txt" "$LOGS/$name.chains.txt" 2>/dev/null
        n_sites=$(grep -o '^fprev chains: [0-9]*' "$LOGS/$name.chains.txt" 2>/dev/null | grep -o '[0-9]*$')
        ROWS+=("$name $version|$n_fns|new warnings $new_warn|passed/failed plain $pp/$pf, annotated $ap/$af ($same)|${n_sites:-NO} sites in the merged chain report ($LOGS/$name.chains.txt)")
        continue
    fi
    cat >> "$lib" <<'RS'

#[cfg(test)]
#[test]
fn fprev_sites_listing() {
    for s in fprev::scramble::sites() {
        println!("fprev-site: {}", s);
    }
}
RS

    # 3. Build both; compare warnings.
    (cd "$plain" && cargo test $feats $TEST_ARGS --no-run) > "$LOGS/$name.build-plain.log" 2>&1
    (cd "$ann" && cargo test $feats $TEST_ARGS --no-run) > "$LOGS/$name.build-annotated.log" 2>&1
    build_rc=$?
    errors=$(grep -c '^error' "$LOGS/$name.build-annotated.log")
    new_warn=$(comm -13 <(warnings_of "$LOGS/$name.build-plain.log") <(warnings_of "$LOGS/$name.build-annotated.log") | wc -l)
    comm -13 <(warnings_of "$LOGS/$name.build-plain.log") <(warnings_of "$LOGS/$name.build-annotated.log") > "$LOGS/$name.new-warnings.txt"
    if [[ $build_rc -ne 0 ]]; then
        ROWS+=("$name $version|$n_fns|COMPILE ERROR ($errors errors, see $LOGS/$name.build-annotated.log)")
        continue
    fi

    # 4. Off: plain and annotated suites.
    (cd "$plain" && cargo test $feats $OFF_TEST_ARGS --no-fail-fast) > "$LOGS/$name.plain.log" 2>&1
    (cd "$ann" && FPREV_SCRAMBLE=off cargo test $feats $OFF_TEST_ARGS --no-fail-fast) > "$LOGS/$name.off.log" 2>&1
    read -r pp pf pi < <(counts "$LOGS/$name.plain.log")
    read -r op of oi < <(counts "$LOGS/$name.off.log")
    op=$((op - 1)) # the fprev_sites_listing test added above
    same_off=$([[ "$(failed_tests "$LOGS/$name.plain.log")" == "$(failed_tests "$LOGS/$name.off.log")" && $pf == "$of" ]] && echo same || echo DIFFERENT)

    # Sites: every reduction compiled in the library, and the loops left alone with why.
    (cd "$ann" && FPREV_SCRAMBLE=shapes FPREV_SEED=1 cargo test $feats --lib fprev_sites_listing -- --nocapture) > "$LOGS/$name.sites.log" 2>&1
    grep '^fprev-site: ' "$LOGS/$name.sites.log" | sed 's/^fprev-site: //' > "$LOGS/$name.sites.txt"
    n_red=$(grep -vc '^left alone' "$LOGS/$name.sites.txt")
    n_left=$(grep -c '^left alone' "$LOGS/$name.sites.txt")
    reasons=$(grep '^left alone' "$LOGS/$name.sites.txt" | sed -E 's/^[^)]*\): //; s/, line [0-9]+//; s/`[^`]*`/`_`/g' | sort | uniq -c | sort -rn | head -4 | awk '{c=$1; $1=""; printf "%s%d x%s", (NR>1?"; ":""), c, $0}')

    # 5. Scrambled runs.
    findings=""; total_fail=0; reached=""
    for mode in $MODES; do
        for seed in $SEEDS; do
            log=$LOGS/$name.$mode.$seed.log
            (cd "$ann" && FPREV_SCRAMBLE=$mode FPREV_SEED=$seed cargo test $feats $TEST_ARGS --no-fail-fast) > "$log" 2>&1
            read -r sp sf si < <(counts "$log")
            total_fail=$((total_fail + sf))
            reached+="$mode/$seed:"$(grep -o '^fprev scramble: [0-9]* of [0-9]*' "$log" | awk '{printf " %s/%s", $3, $5}')"; "
            while IFS= read -r t; do
                [[ -n $t ]] || continue
                replay=$(grep -F "cargo test $t -- --exact" "$log" | grep -o 'replay: FPREV_SCRAMBLE=.*' | head -1 | sed 's/^replay: //')
                verdict="no replay line printed"
                if [[ -n $replay ]]; then
                    alone=$LOGS/$name.$mode.$seed.replay.$(echo "$t" | tr -c 'A-Za-z0-9_\n' _).log
                    (cd "$ann" && env ${replay% cargo test*} cargo test $feats $TEST_ARGS "$t" -- --exact) > "$alone" 2>&1
                    if panic_of "$t" "$alone" | cmp -s - <(panic_of "$t" "$log"); then
                        verdict="replay alone: same failure"
                    elif failed_tests "$alone" | grep -qx "$t"; then
                        verdict="replay alone: fails, DIFFERENT message"
                    else
                        verdict="replay alone: PASSES"
                    fi
                fi
                findings+="    $mode seed $seed: $t: $(panic_of "$t" "$log" | grep -m1 -vE '^thread|^fprev:' | cut -c1-150) [$verdict]"$'\n'
            done < <(failed_tests "$log")
            echo "$name $mode seed $seed: $sp passed, $sf failed, $si ignored" >&2
        done
    done
    most=$(echo "$reached" | grep -o '[0-9]*/[0-9]*' | sort -t/ -k1,1n | tail -1)
    ROWS+=("$name $version|$n_fns|$n_red compiled, at most $most reached in one test process|$n_left: $reasons|new warnings $new_warn; passed/failed plain $pp/$pf, off $op/$of ($same_off)|$total_fail")
    [[ -n $findings ]] && ROWS+=("FINDINGS $name"$'\n'"$findings")
    echo "coverage lines (reached/compiled per test process, per run) $name:$reached" > "$LOGS/$name.coverage.txt"
done

echo
if [[ $ATTR == accumulator ]]; then
    echo "crate | fns annotated | build | suites | chain report"
    for r in "${ROWS[@]}"; do echo "$r"; done
    echo "logs: $LOGS"
    exit 0
fi
echo "crate | fns annotated | reduction sites (lib) | loops/fns left alone: top reasons | off | scrambled test failures (all modes x seeds)"
for r in "${ROWS[@]}"; do echo "$r"; done
echo "logs, site lists and coverage lines: $LOGS"
