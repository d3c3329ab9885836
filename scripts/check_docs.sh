#!/usr/bin/env bash
# Runs the shell and Python examples of README.md and docs/*.md and compares what they
# print with the output the docs show, so the docs cannot drift from the code.
#
#   scripts/check_docs.sh [FILE.md ...]        (default: README.md docs/*.md python/README.md)
#
# The convention (docs/README.md, "Examples that are checked", says the same for writers):
#
# - A ```console block is a terminal session: each `$ command` line (continued by a
#   trailing `\`) is run, and the lines after it, up to the next `$`, are the output it
#   must print (stdout and stderr together). A block runs in one bash process started in
#   the repository root, so `cd`, variables and files carry from one command to the next.
#   In expected output, a line `...` stands for any number of lines, `[..]` for any text
#   within a line; durations (`0.39 s`, `12ms`), thread ids in panic lines and hex
#   addresses are masked on both sides.
# - A ```python block runs in one interpreter per file, blocks in order, sharing their
#   names. When a ```text block follows it (blank lines between at most), that is the
#   output it must print; an uncaught exception prints as `TypeName: message`.
# - `<!-- check-docs: skip: REASON -->` on the line before a block: not run (a GPU, MPI
#   where it is absent, PyTorch, a long campaign, an install). Every skip is printed with
#   its reason. `<!-- check-docs: run-only: REASON -->`: run, output not compared (it
#   depends on the machine: a BLAS, a core count). `<!-- check-docs: file: PATH -->`: the
#   block shows the file PATH (a script the commands run) and must equal it.
# - A ```sh/```bash/```shell block must carry a skip (what can run is a ```console block),
#   and a ```text block must not start with `$ ` (that is a console block). Both are errors.
#
# The binaries are the debug ones `cargo test --workspace` builds (`fprev`, `cargo-fprev`,
# in $CARGO_TARGET_DIR or target/). Python blocks and `--exec` responders use
# $FPREV_DOCS_PYTHON (a python3 with numpy, ml_dtypes and the fprev package; its folder
# goes first on PATH); without one, the Python blocks are skipped and say so. Files the
# blocks create in the repository are removed afterwards, and `fprev-regressions/` is set
# aside during the run, so every run starts as a fresh checkout does. The script fails
# when a block fails or when it checked nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
bin="$target_dir/debug"
if [ ! -x "$bin/fprev" ]; then
    echo "check_docs: $bin/fprev not found: build first (cargo test --workspace, or cargo build -p fprev-cli)" >&2
    exit 2
fi
py="${FPREV_DOCS_PYTHON:-}"
if [ -z "$py" ] && [ -x "$target_dir/ci-venv/bin/python" ]; then
    py="$target_dir/ci-venv/bin/python"
fi
scratch="$(mktemp -d)"
aside=""
restore() {
    if [ -n "$aside" ]; then
        rm -rf "$root/fprev-regressions"
        mv "$aside" "$root/fprev-regressions"
    fi
    rm -rf "$scratch"
}
trap restore EXIT
if [ -e fprev-regressions ]; then
    aside="$scratch/fprev-regressions.aside"
    mv fprev-regressions "$aside"
fi
if [ "$#" -eq 0 ]; then
    set -- README.md docs/*.md python/README.md
fi
export CHECK_DOCS_ROOT="$root" CHECK_DOCS_BIN="$bin" CHECK_DOCS_PY="$py" CHECK_DOCS_SCRATCH="$scratch"
python3 - "$@" <<'PYTHON'
import json, os, re, subprocess, sys, time

root, bin_dir = os.environ["CHECK_DOCS_ROOT"], os.environ["CHECK_DOCS_BIN"]
py, scratch = os.environ["CHECK_DOCS_PY"], os.environ["CHECK_DOCS_SCRATCH"]
BLOCK_TIMEOUT = 600
FENCE = re.compile(r"^(\s*)(`{3,})\s*([\w+-]*)")
MARK = re.compile(r"^<!--\s*check-docs:\s*(skip|run-only|file):\s*(.*?)\s*-->\s*$")

def blocks(path):
    """(line, lang, text lines, marker) of every fenced block, in order."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).split(",")[0]
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        mark = MARK.match(lines[j].strip()) if j >= 0 else None
        body, k = [], i + 1
        while k < len(lines) and not lines[k].strip().startswith(fence):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        # blank lines only between this block and the next fence: that block is its output
        n = k + 1
        while n < len(lines) and not lines[n].strip():
            n += 1
        out.append(dict(line=i + 1, lang=lang, body=body,
                        mark=(mark.group(1), mark.group(2)) if mark else None, next_fence=n))
        i = k + 1
    starts = {b["line"] - 1: b for b in out}
    for b in out:
        b["output"] = starts.get(b.pop("next_fence"))
    return out

def env():
    e = {k: v for k, v in os.environ.items() if not k.startswith(("FPREV_", "CHECK_DOCS_"))}
    path = [bin_dir] + ([os.path.dirname(py)] if py else []) + [e.get("PATH", "")]
    e.update(PATH=":".join(path), TMPDIR=scratch, CARGO_TERM_COLOR="never", NO_COLOR="1",
             COLUMNS="100", RUST_BACKTRACE="0")
    return e

TIME = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|m)\b")
def normalize(text):
    text = text.replace(scratch, "[TMP]").replace(root + "/", "").replace(root, ".")
    text = re.sub(r"(thread '[^']*') \(\d+\) panicked", r"\1 panicked", text)
    text = re.sub(r"0x[0-9a-fA-F]+", "0x[ADDR]", text)
    text = TIME.sub("[TIME]", text)
    lines = [l.rstrip() for l in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines

def matches(expected, actual):
    pattern = ""
    for line in expected:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += ".*".join(re.escape(part) for part in line.split("[..]")) + r"\n"
    return re.fullmatch(pattern, "".join(l + "\n" for l in actual)) is not None

def show(expected, actual):
    import difflib
    return "\n".join("      " + l for l in difflib.unified_diff(
        expected, actual, "shown in the doc", "printed now", lineterm="", n=2))

def console(body):
    """The commands of a console block, each with its expected output lines."""
    cmds, cur = [], None
    it = iter(body)
    for line in it:
        if line.startswith("$ "):
            cmd = line[2:]
            while cmd.endswith("\\"):
                cmd = cmd + "\n" + next(it, "")
            cur = dict(cmd=cmd, want=[])
            cmds.append(cur)
        elif cur is None:
            raise ValueError("a console block starts with a `$ command` line")
        else:
            cur["want"].append(line)
    return cmds

def run_console(cmds):
    sep = "\x1echeck-docs-output\x1e"
    # the separator is printed between commands, keeping `$?` the last command's
    script = "set +e\ncheck_docs_status=0\n" + "".join(
        f"printf '%s\\n' '{sep}'\n(exit $check_docs_status)\n{c['cmd']}\ncheck_docs_status=$?\n"
        for c in cmds) + f"printf '%s\\n' '{sep}'\n"
    p = subprocess.run(["bash", "-c", script], cwd=root, env=env(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL)
    parts = p.stdout.decode("utf-8", "replace").split(sep + "\n")
    return parts[1:len(cmds) + 1]

DRIVER = r'''
import contextlib, io, json, sys, traceback
blocks, ns, outs = json.load(sys.stdin), {"__name__": "__main__"}, []
for code in blocks:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            exec(compile(code, "<doc block>", "exec"), ns)
            ok = True
        except BaseException as e:
            print(f"{type(e).__name__}: {e}")
            ok = traceback.format_exc()
    outs.append([buf.getvalue(), ok])
json.dump(outs, sys.__stdout__)
'''

def run_python(codes):
    p = subprocess.run([py, "-c", DRIVER], cwd=root, env=env(), input=json.dumps(codes).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=BLOCK_TIMEOUT)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.decode())
    return json.loads(p.stdout)

def untracked():
    p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                       stdout=subprocess.PIPE, check=True)
    return {l[3:] for l in p.stdout.decode().splitlines() if l.startswith("?? ")}

python_ok = bool(py) and subprocess.run(
    [py, "-c", "import numpy, fprev"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    env=env()).returncode == 0
checked = skipped = failed = 0
start = time.time()
for path in sys.argv[1:]:
    rel = os.path.relpath(path, root)
    before = untracked()
    pending = []  # python blocks of this file, run together at its end
    for b in blocks(path):
        where = f"{rel}:{b['line']}"
        lang, mark = b["lang"], b["mark"]
        if lang == "text" and b["body"] and b["body"][0].startswith("$ "):
            print(f"ERROR {where}: a ```text block that starts with `$ ` is a command: make it ```console")
            failed += 1
            continue
        if lang not in ("console", "sh", "bash", "shell", "python"):
            continue
        if mark and mark[0] == "file":
            try:
                same = open(os.path.join(root, mark[1]), encoding="utf-8").read() == "\n".join(b["body"]) + "\n"
            except OSError as e:
                same = e
            if same is True:
                checked += 1
                print(f"ok    {where}: the block is {mark[1]}, as written")
            else:
                failed += 1
                print(f"FAIL  {where}: the block differs from {mark[1]} ({same or 'edit one of them'})")
            continue
        if mark and mark[0] == "skip":
            print(f"SKIP  {where} ({lang}): {mark[1]}")
            skipped += 1
            continue
        if lang in ("sh", "bash", "shell"):
            print(f"ERROR {where}: a ```{lang} block is run nowhere: make it a ```console block "
                  "(`$ command`, then its output) or mark it <!-- check-docs: skip: why -->")
            failed += 1
            continue
        compare = not (mark and mark[0] == "run-only")
        if lang == "python":
            if not python_ok:
                print(f"SKIP  {where} (python): no python3 with numpy and the fprev package "
                      "(set FPREV_DOCS_PYTHON)")
                skipped += 1
                continue
            out = b["output"]
            want = out["body"] if out and out["lang"] == "text" and compare else None
            pending.append((where, "\n".join(b["body"]), want, mark))
            continue
        try:
            cmds = console(b["body"])
            t0 = time.time()
            got = run_console(cmds)
        except Exception as e:  # a malformed block or a timeout
            print(f"FAIL  {where}: {e}")
            failed += 1
            continue
        for c, actual in zip(cmds, got + [""] * (len(cmds) - len(got))):
            want, have = normalize("\n".join(c["want"])), normalize(actual)
            first = c["cmd"].split("\n")[0]
            if not compare or matches(want, have):
                checked += 1
                note = " (output not compared: " + mark[1] + ")" if not compare else ""
                print(f"ok    {where}: $ {first}{note}")
            else:
                failed += 1
                print(f"FAIL  {where}: $ {first}\n{show(want, have)}")
        print(f"      ({time.time() - t0:.1f} s)")
    if pending:
        t0 = time.time()
        try:
            results = run_python([code for _, code, _, _ in pending])
        except Exception as e:
            print(f"FAIL  {rel}: the Python blocks did not run: {e}")
            failed += len(pending)
            results = []
        for (where, _, want, mark), (out, ok) in zip(pending, results):
            if want is None and ok is not True:
                failed += 1
                print(f"FAIL  {where} (python): raised\n      " + ok.replace("\n", "\n      "))
            elif want is None or matches(normalize("\n".join(want)), normalize(out)):
                checked += 1
                note = " (output not compared: " + mark[1] + ")" if mark else ""
                print(f"ok    {where} (python){note}")
            else:
                failed += 1
                print(f"FAIL  {where} (python)\n{show(normalize(chr(10).join(want)), normalize(out))}")
        print(f"      ({rel}: Python blocks, {time.time() - t0:.1f} s)")
    for new in sorted(untracked() - before):
        os.remove(os.path.join(root, new))
        try:
            os.removedirs(os.path.dirname(os.path.join(root, new)))
        except OSError:
            pass  # not empty: something else lives there
        print(f"      removed {new} (written by a block of {rel})")

print(f"check_docs: {checked} checked, {skipped} skipped, {failed} failed, "
      f"{time.time() - start:.0f} s")
if failed or checked == 0:
    sys.exit(1)
PYTHON
