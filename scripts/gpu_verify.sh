#!/usr/bin/env bash
# Verify the `cuda` backend on a real NVIDIA GPU in one prepared run.
#
#   scripts/gpu_verify.sh build [BUNDLE]       # here, on any machine: build the binaries
#   scripts/gpu_verify.sh run   [BUNDLE] OUT   # on the GPU machine: run them, results in OUT
#
# `build` compiles, with `--release --features cuda`, the GPU test binary
# (tests/cuda_backend.rs), the `cuda_reveal` and `tensor_cores` examples and the `fprev`
# command-line tool, strips them and copies them with this script and its responders into
# BUNDLE (default target/gpu-bundle, ignored by git; about 20 MB). Nothing needs a GPU or a
# CUDA toolkit to build: cudarc loads the driver, cuBLAS and NVRTC at run time.
#
# `run` needs no Rust and no network. It finds the CUDA libraries (the system's, or the
# ones NVIDIA's Python wheels ship, CUDA 12 or 13), runs everything with
# FPREV_CUDA_REQUIRED=1 (so a missing driver, library or device fails instead of
# skipping), each step under its own time limit (all of them within 8 minutes), and
# writes to OUT at most 8 files:
#   summary.txt      what ran, exit status and wall time of each step, the trees found
#   env.txt          GPU model, driver and CUDA versions, the libraries loaded
#   cuda_backend.log the GPU tests (sgemm, Tensor Core f16/bf16 gemm at k = 32 and 256,
#                    spread operands to k = 16384, sgemv, the shared-memory tree reduction,
#                    atomicAdd reported nondeterministic, the scrambling prelude, the
#                    scrambled-atomics variability table)
#   cuda_reveal.log  the example's trees and variability table
#   fp8.log          FP8 (e4m3) GEMM dots through cuBLASLt (torch._scaled_mm) revealed
#                    with `fprev reveal --exec ... --op dot` at k = 32, 64, 128 and 256
#   presets.log      the CPU models' trees (examples/tensor_cores.rs), to hold against the
#                    revealed ones
# Exit status: 0 when every step passed, 1 otherwise (OUT is written either way).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cmd="${1:-}"

build() {
    local bundle="${1:-target/gpu-bundle}"
    cd "$here/.."
    set -e
    mkdir -p "$bundle"
    local tests
    tests=$(cargo test --release --features cuda --test cuda_backend --no-run \
        --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cuda_backend":
        print(m["executable"])')
    if [ -z "$tests" ]; then
        cargo test --release --features cuda --test cuda_backend --no-run
        echo "gpu_verify: cargo built no cuda_backend test binary" >&2
        exit 1
    fi
    cargo build --release --features cuda --example cuda_reveal --example tensor_cores
    cargo build --release -p fprev-cli
    cp "$tests" "$bundle/cuda_backend"
    cp target/release/examples/cuda_reveal target/release/examples/tensor_cores "$bundle/"
    cp target/release/fprev "$bundle/fprev"
    strip "$bundle"/cuda_backend "$bundle"/cuda_reveal "$bundle"/tensor_cores "$bundle"/fprev
    cp "$here/gpu_verify.sh" "$here/gpu/fp8_scaled_mm.py" "$bundle/"
    set +e
    du -sh "$bundle"
    echo "gpu_verify: bundle ready in $bundle; on the GPU machine run:"
    echo "  bash $bundle/gpu_verify.sh run $bundle \"\$OUT\""
}

# Directories holding libcuda, libcublas and libnvrtc, and a folder of links that gives
# the CUDA 13 libraries the names cudarc asks for (libcublas.so, libnvrtc.so: its
# candidates stop at the .so.12 suffix).
find_libraries() {
    local links="$1"
    mkdir -p "$links"
    local dirs=()
    local py
    for py in python3 /opt/torch/.venv/bin/python3; do
        command -v "$py" >/dev/null 2>&1 || continue
        local site
        site=$("$py" -c 'import nvidia, os; print("\n".join(nvidia.__path__))' 2>/dev/null) || continue
        while IFS= read -r d; do
            [ -n "$d" ] && dirs+=("$d")
        done < <(find $site -maxdepth 3 -type d -name lib 2>/dev/null)
    done
    for d in /usr/local/cuda/lib64 /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
        [ -d "$d" ] && dirs+=("$d")
    done
    local lib
    for lib in cublas cublasLt nvrtc; do
        local found=""
        local d
        for d in "${dirs[@]}"; do
            found=$(ls "$d"/lib$lib.so "$d"/lib$lib.so.1[0-9]* 2>/dev/null | sort -V | tail -1)
            [ -n "$found" ] && break
        done
        if [ -n "$found" ]; then
            ln -sf "$found" "$links/lib$lib.so"
            echo "lib$lib: $found"
        else
            echo "lib$lib: NOT FOUND in ${dirs[*]}"
        fi
    done
    local path="$links"
    for d in "${dirs[@]}"; do path="$path:$d"; done
    LIBRARY_PATH_FOUND="$path"
}

run() {
    local bundle="${1:-target/gpu-bundle}"
    local out="${2:?usage: gpu_verify.sh run BUNDLE OUT}"
    bundle="$(cd "$bundle" && pwd)"
    mkdir -p "$out"
    out="$(cd "$out" && pwd)"
    local start=$SECONDS
    local status=0
    local summary="$out/summary.txt"
    : >"$summary"
    {
        echo "== gpu_verify $(date -u +%FT%TZ)"
        nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
        nvidia-smi 2>&1 | sed -n '1,4p'
        python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0))' 2>&1
        echo "== libraries"
        find_libraries "/tmp/gpu_verify_libs"
    } >"$out/env.txt" 2>&1
    export LD_LIBRARY_PATH="$LIBRARY_PATH_FOUND${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$out/env.txt"
    export FPREV_CUDA_REQUIRED=1

    step() {
        local name="$1" limit="$2" log="$3"
        shift 3
        local t0=$SECONDS
        timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
        local rc=$?
        local verdict=passed
        [ $rc -eq 0 ] || { verdict="FAILED (exit $rc$([ $rc -eq 124 ] && echo ', time limit'))"; status=1; }
        printf '%-40s %s in %d s\n' "$name" "$verdict" $((SECONDS - t0)) >>"$summary"
    }

    step "cuda_backend tests (all, incl. ignored)" 240 "$out/cuda_backend.log" \
        "$bundle/cuda_backend" --include-ignored --nocapture --test-threads=1
    step "cuda_reveal example (n = 32 256)" 90 "$out/cuda_reveal.log" \
        "$bundle/cuda_reveal" 32 256
    local k
    for k in 32 64 128 256; do
        echo "== fp8 e4m3 cuBLASLt dot, k = $k" >>"$out/fp8.log"
        step "fp8 cuBLASLt dot k = $k" 45 "$out/fp8.log" \
            "$bundle/fprev" reveal --exec "python3 $bundle/fp8_scaled_mm.py" --op dot \
            --dtype f8e4m3 --acc-dtype f32 --n "$k" --timeout 60
    done
    step "tensor_cores presets (CPU models)" 60 "$out/presets.log" \
        "$bundle/tensor_cores" /tmp/gpu_verify_pictures
    {
        echo
        echo "== trees found (from the logs)"
        grep -hE "sgemm|gemm n=|gemmEx|sgemv|shared-tree|atomicAdd|fused width|compute capability|max arity" \
            "$out/cuda_backend.log" "$out/cuda_reveal.log" 2>/dev/null | cut -c1-400
        echo
        echo "== variability (scrambled atomics)"
        grep -hA8 -i "distinct" "$out/cuda_backend.log" 2>/dev/null | head -20
        echo
        echo "== fp8"
        grep -vE "^\s*$" "$out/fp8.log" 2>/dev/null | cut -c1-400 | head -40
        echo
        echo "total $((SECONDS - start)) s; $([ $status -eq 0 ] && echo 'every step passed' || echo 'SOME STEPS FAILED')"
    } >>"$summary"
    cat "$summary"
    return $status
}

case "$cmd" in
    build) shift; build "$@" ;;
    run) shift; run "$@" ;;
    *)
        sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
