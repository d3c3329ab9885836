"""The picture of a :class:`fprev.torch_trace.Certificate`: one band per operation,
drawn as the sweep picture draws one sweep (a strip of cells, one per size, coloured by
the size's tree, breakpoints in red), with the operation's ranges in words under it.

Not public API: ``Certificate.svg()`` calls it.
"""

from xml.sax.saxutils import escape

# Okabe-Ito, the sweep picture's colours: distinguishable with every colour vision
PALETTE = ["#56b4e9", "#e69f00", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7",
           "#999999"]
GREY = "#dddddd"
WIDTH = 1200
LEFT = 24
STRIP = 300  # the operation's name, left of its strip
WORDS = 150  # characters of a range's words on one line


def _text(x, y, text, size=13.0, fill="#222", anchor="start", bold=False):
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" '
            f'text-anchor="{anchor}"{weight}>{escape(text)}</text>')


def _clip(text, n=WORDS):
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def certificate_svg(cert, title=None):
    sizes = cert.sizes
    label = cert.label
    cells_w = WIDTH - LEFT * 2 - STRIP
    cell = cells_w / len(sizes)
    out, y = [], 30.0
    if title:
        out.append(_text(LEFT, y + 5, title, size=20.0))
        y += 23
    verdict = ("invariant: one order per operation at every size" if cert.invariant else
               "not invariant: " + "; ".join(
                   [f"{label} = {s}: {len(ops)} operation(s) change order"
                    for s, ops in cert.breakpoints.items()]
                   + [f"{len(cert.uncertified)} not certified"] * bool(cert.uncertified)))
    out.append(_text(LEFT, y, f"{len(sizes)} values of {label}, {sizes[0]} to {sizes[-1]}; "
                     f"row {cert.row}; {len(cert.ops)} reduction(s); {verdict}",
                     fill="#555"))
    y += 22
    # the size axis, above the first band
    step = max(1, round(len(sizes) / 16))
    for i, s in enumerate(sizes):
        if i % step == 0 or i == len(sizes) - 1:
            out.append(_text(LEFT + STRIP + (i + 0.5) * cell, y + 8, str(s), size=11.0,
                             fill="#555", anchor="middle"))
    out.append(_text(LEFT + STRIP - 8, y + 8, label, size=11.0, fill="#555", anchor="end"))
    y += 16
    for op in cert.ops:
        band = 26.0
        out.append(_text(LEFT, y + 17, _clip(op.label(), 40), size=12.0, bold=True))
        if op.reason is not None:
            out.append(f'<rect x="{LEFT + STRIP:.1f}" y="{y:.1f}" width="{cells_w:.1f}" '
                       f'height="{band}" fill="{GREY}" stroke="#333" stroke-width="1"/>')
            out.append(_text(LEFT + STRIP + 8, y + 17, _clip("not certified: " + op.reason,
                                                               120), size=12.0))
            y += band + 22
            continue
        colours, order = {}, []
        for _, _, tree in op.ranges:
            if tree not in colours:
                colours[tree] = PALETTE[len(colours) % len(PALETTE)]
                order.append(tree)
        for i, s in enumerate(sizes):
            x = LEFT + STRIP + i * cell
            fill = colours[op.trees[s]]
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell:.1f}" height="{band}" '
                       f'fill="{fill}" stroke="#ffffff" stroke-opacity="0.6" '
                       f'stroke-width="1"/>')
            if s in op.breakpoints:
                out.append(f'<rect x="{x + 1:.1f}" y="{y + 1:.1f}" width="{cell - 2:.1f}" '
                           f'height="{band - 2}" fill="none" stroke="#d00000" '
                           f'stroke-width="2.5"/>')
            if s in op.searched and cell >= 6:
                out.append(f'<circle cx="{x + cell / 2:.1f}" cy="{y + band - 5:.1f}" r="2" '
                           f'fill="#222"/>')
        out.append(f'<rect x="{LEFT + STRIP:.1f}" y="{y:.1f}" width="{cells_w:.1f}" '
                   f'height="{band}" fill="none" stroke="#333" stroke-width="1"/>')
        y += band + 14
        for first, last, tree in op.ranges:
            span = f"{first}" if first == last else f"{first}..{last}"
            out.append(f'<rect x="{LEFT + STRIP:.1f}" y="{y - 9:.1f}" width="10" '
                       f'height="10" fill="{colours[tree]}" stroke="#333" stroke-width="0.5"/>')
            out.append(_text(LEFT + STRIP + 16, y, _clip(f"{label} = {span}: "
                                                          f"{tree.describe()}", 130),
                             size=11.0))
            y += 15
        if not op.row_uniform:
            out.append(_text(LEFT + STRIP + 16, y, "the row's elements did not all answer "
                             "alike: the band is its first element's", size=11.0,
                             fill="#d00000"))
            y += 15
        y += 8
    y += 6
    out.append(_text(LEFT, y, "cells: sizes coloured by their tree; red outline: a "
                     "breakpoint; dot: a size whose call differs from the size before "
                     "(swept); grey: not certified", size=11.0, fill="#555"))
    height = int(y + 14)
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">\n'
            '<rect width="100%" height="100%" fill="#ffffff"/>')
    return "\n".join([head] + out + ["</svg>"]) + "\n"
