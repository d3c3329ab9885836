#!/usr/bin/env python3
"""Annotate a copied crate with `#[fprev::scramble]`, as a new user would.

Every function with a body (free fns, inherent/trait methods, trait-provided methods;
not `const fn`, not inside `macro_rules!` or any other macro invocation, not test code
unless --include-tests) whose body accumulates syntactically (`+=`, `-=`, `x = x + ..`,
`x = x - ..`, `.sum(`, `.sum::<`, `.fold(`) gets `#[fprev::scramble]` on its own line
right before the line of its `fn` (after its attributes and doc comments). No per-loop
markers. The crate's Cargo.toml gets `fprev = { path = .., default-features = false }`
under [dependencies].

Usage: annotate_scramble.py CRATE_DIR FPREV_PATH [--include-tests] [--list FILE]
Prints the number of functions annotated (last line: `annotated N`).
"""
import os
import re
import sys

PUNCT3 = {"<<=", ">>=", "...", "..="}
PUNCT2 = {"+=", "-=", "*=", "/=", "%=", "^=", "&=", "|=", "==", "!=", "<=", ">=",
          "&&", "||", "->", "=>", "::", "..", "<<", ">>"}


def tokenize(src):
    """Tokens as (kind, text, start, end); comments are dropped."""
    toks = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
            continue
        # raw strings r"..", r#".."#, br#".."#, cr".."
        m = re.match(r'(?:br|cr|r)(#*)"', src[i:i + 300])
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            hashes = m.group(1)
            end = src.find('"' + hashes, i + m.end())
            end = n if end < 0 else end + 1 + len(hashes)
            toks.append(("str", src[i:end], i, end))
            i = end
            continue
        if c == '"' or (c in "bc" and i + 1 < n and src[i + 1] == '"'):
            j = i + (1 if c == '"' else 2)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            toks.append(("str", src[i:j + 1], i, j + 1))
            i = j + 1
            continue
        if c == "'" or (c == "b" and src.startswith("b'", i)):
            k = i + (1 if c == "'" else 2)
            # char literal: 'x', '\n', '\u{..}'; otherwise a lifetime/label
            m = re.match(r"(?:\\u\{[0-9a-fA-F_]*\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", src[k:k + 12])
            if m:
                toks.append(("char", src[i:k + m.end()], i, k + m.end()))
                i = k + m.end()
                continue
            if c == "'":
                m = re.match(r"'[A-Za-z_][A-Za-z0-9_]*", src[i:])
                if m:
                    toks.append(("lifetime", m.group(0), i, i + m.end()))
                    i += m.end()
                    continue
        if c.isalpha() or c == "_":
            m = re.match(r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*", src[i:])
            toks.append(("ident", m.group(0), i, i + m.end()))
            i += m.end()
            continue
        if c.isdigit():
            m = re.match(r"[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?(?:[eE][+-]?[0-9_]+)?", src[i:])
            toks.append(("num", m.group(0), i, i + m.end()))
            i += m.end()
            continue
        for width, table in ((3, PUNCT3), (2, PUNCT2)):
            if src[i:i + width] in table:
                toks.append(("punct", src[i:i + width], i, i + width))
                i += width
                break
        else:
            toks.append(("punct", c, i, i + 1))
            i += 1
    return toks


OPEN = {"(": ")", "[": "]", "{": "}"}


def match_group(toks, i):
    """Index of the token closing the group opened at toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j][1]
        if toks[j][0] != "punct":
            continue
        if t in OPEN:
            depth += 1
        elif t in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def is_attr(toks, i):
    return toks[i][1] == "#" and i + 1 < len(toks) and toks[i + 1][1] == "["


def attr_text(toks, i):
    j = match_group(toks, i + 1)
    return "".join(t[1] for t in toks[i + 2:j]), j


def item_end(toks, i):
    """End of the item starting at toks[i]: its first `{..}` group or `;` at depth 0."""
    j = i
    while j < len(toks):
        t = toks[j][1]
        if toks[j][0] == "punct" and t in ("(", "["):
            j = match_group(toks, j) + 1
            continue
        if t == "{":
            return match_group(toks, j)
        if t == ";":
            return j
        j += 1
    return len(toks) - 1


LHS_OK = re.compile(r"^(?:\*?)(?:self|[A-Za-z_][A-Za-z0-9_]*)(?:\.[A-Za-z_][A-Za-z0-9_]*|\.[0-9]+)*$")


def accumulates(toks, lo, hi, skip):
    """Whether toks[lo:hi] (minus the ranges in skip) accumulates syntactically."""
    texts = []
    for k in range(lo, hi):
        if any(a <= k <= b for a, b in skip):
            continue
        texts.append(toks[k][1])
    for k, t in enumerate(texts):
        if t in ("+=", "-="):
            return True
        if t == "." and k + 2 < len(texts) and texts[k + 1] in ("sum", "fold") and texts[k + 2] in ("(", "::"):
            return True
        if t == "=":
            s = k - 1
            while s >= 0 and texts[s] not in (";", "{", "}", "let", "=>", ","):
                s -= 1
            lhs = texts[s + 1:k]
            if not lhs or not LHS_OK.match("".join(lhs)):
                continue
            m = len(lhs)
            if texts[k + 1:k + 1 + m] == lhs and k + 1 + m < len(texts) and texts[k + 1 + m] in ("+", "-"):
                return True
    return False


def annotate_file(path, include_tests, found):
    src = open(path, encoding="utf-8").read()
    toks = tokenize(src)
    inserts = []  # (offset, text)
    fn_ranges = []  # (fn token index, body open, body close)
    i = 0
    pending_test = False
    while i < len(toks):
        kind, t, s, e = toks[i]
        # attributes: remember #[cfg(test)] / #[test]
        if is_attr(toks, i):
            text, j = attr_text(toks, i)
            if not include_tests and (text in ("test", "cfg(test)") or text.startswith("cfg(all(test") or text.endswith("::test")):
                pending_test = True
            i = j + 1
            continue
        if pending_test and kind == "ident" and t not in ("pub", "crate", "in", "super", "self"):
            # skip the whole test item (mod tests { .. } / #[test] fn ..)
            pending_test = False
            i = item_end(toks, i) + 1
            continue
        if kind == "punct" and t == "(" and pending_test:
            i = match_group(toks, i) + 1  # pub(crate)
            continue
        # any macro invocation or definition: `name! (..)`, `macro_rules! name {..}`
        if kind == "ident" and i + 1 < len(toks) and toks[i + 1][1] == "!" and i + 2 < len(toks):
            j = i + 2
            if toks[j][0] == "ident":  # macro_rules! name
                j += 1
            if j < len(toks) and toks[j][1] in OPEN:
                i = match_group(toks, j) + 1
                continue
        if kind == "ident" and t == "fn" and i + 1 < len(toks) and toks[i + 1][0] == "ident":
            # qualifiers before `fn`
            q = i - 1
            is_const = False
            while q >= 0:
                qt = toks[q][1]
                if qt in ("unsafe", "async", "extern", "default", "pub") or toks[q][0] == "str":
                    q -= 1
                elif qt == "const":
                    is_const = True
                    q -= 1
                elif qt == ")" and q >= 1:
                    # pub(crate) / pub(in path)
                    d, r = 0, q
                    while r >= 0:
                        if toks[r][1] == ")":
                            d += 1
                        elif toks[r][1] == "(":
                            d -= 1
                            if d == 0:
                                break
                        r -= 1
                    if r >= 1 and toks[r - 1][1] == "pub":
                        q = r - 2
                    else:
                        break
                else:
                    break
            first = q + 1
            end = item_end(toks, i)
            if toks[end][1] == "}":
                open_idx = end
                d = 0
                for r in range(end, i, -1):
                    if toks[r][1] == "}":
                        d += 1
                    elif toks[r][1] == "{":
                        d -= 1
                        if d == 0:
                            open_idx = r
                            break
                fn_ranges.append((i, first, open_idx, end, is_const))
            i += 2
            pending_test = False
            continue
        i += 1
    count = 0
    for (fi, first, lo, hi, is_const) in fn_ranges:
        if is_const:
            continue
        nested = [(a, b) for (_, _, a, b, _) in fn_ranges if lo < a and b < hi]
        if not accumulates(toks, lo + 1, hi, nested):
            continue
        off = toks[first][2]
        line_start = src.rfind("\n", 0, off) + 1
        prefix = src[line_start:off]
        if prefix.strip() == "":
            inserts.append((line_start, prefix + "#[fprev::scramble]\n"))
        else:
            inserts.append((off, "#[fprev::scramble] "))
        line = src.count("\n", 0, off) + 1
        found.append(f"{path}:{line}: fn {toks[fi + 1][1]}")
        count += 1
    for off, text in sorted(inserts, reverse=True):
        src = src[:off] + text + src[off:]
    if inserts:
        open(path, "w", encoding="utf-8").write(src)
    return count


def add_dependency(crate_dir, fprev_path):
    toml = os.path.join(crate_dir, "Cargo.toml")
    text = open(toml, encoding="utf-8").read()
    if re.search(r"^\s*fprev\s*=|^\[dependencies\.fprev\]", text, re.M):
        return
    line = f'fprev = {{ path = "{fprev_path}", default-features = false }}\n'
    m = re.search(r"^\[dependencies\]\s*\n", text, re.M)
    if m:
        text = text[:m.end()] + line + text[m.end():]
    else:
        text = text.rstrip("\n") + f'\n\n[dependencies.fprev]\npath = "{fprev_path}"\ndefault-features = false\n'
    open(toml, "w", encoding="utf-8").write(text)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    include_tests = "--include-tests" in sys.argv
    list_file = None
    if "--list" in sys.argv:
        list_file = sys.argv[sys.argv.index("--list") + 1]
        args.remove(list_file)
    if len(args) != 2:
        sys.exit(__doc__)
    crate_dir, fprev_path = args
    found = []
    total = 0
    for root, dirs, files in os.walk(os.path.join(crate_dir, "src")):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".rs"):
                total += annotate_file(os.path.join(root, f), include_tests, found)
    add_dependency(crate_dir, os.path.abspath(fprev_path))
    if list_file:
        with open(list_file, "w", encoding="utf-8") as out:
            out.write("\n".join(found) + ("\n" if found else ""))
    print(f"annotated {total}")


if __name__ == "__main__":
    main()
