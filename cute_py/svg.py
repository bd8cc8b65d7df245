"""Pictures of layouts, TV layouts, TiledMMAs and TiledCopies: SVG and text tables.

* :func:`layout_svg` — a rank-1/2 layout as a grid, each cell labelled with its index
  (``Layout._repr_svg_`` uses it, so notebooks show layouts).
* :func:`tv_layout_svg` / :func:`format_tv_layout` — a ``(thr, val) -> coord`` layout over an
  ``M x N`` tile: each cell says which thread and value hold it (``T3`` over ``V1``), coloured by
  thread with CuTe's ``print_latex``/``print_svg`` palette (thread id mod 8).
* :func:`tiled_mma_svg` — CuTe's ``print_svg(TiledMMA)`` arrangement: A (M x K) on the left, B
  (K x N) on top, C (M x N) bottom right. :func:`tiled_copy_svg` — source and destination TV
  layouts of a TiledCopy side by side (CuTe has no TiledCopy picture).

Every cell is a ``<g class="cell" data-row=.. data-col=.. data-label=..>`` holding a ``<rect>``
and a ``<text>`` so tests and tools can read the picture back. Pure Python; no dependencies.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from . import int_tuple as it
from .errors import CuteError, LayoutError
from .layout import Layout, layout_table
from .printing import check_table_size

__all__ = ["layout_svg", "tv_layout_svg", "tiled_mma_svg", "tiled_copy_svg", "format_tv_layout",
           "print_tv_layout", "format_tiled_mma", "write_svg", "tv_cells", "TV_COLORS"]

#: CuTe's 8-colour palette (``util/print_latex.hpp`` TikzColor_TV / print_svg), thread id mod 8.
TV_COLORS = ("rgb(175,175,255)", "rgb(175,255,175)", "rgb(255,255,175)", "rgb(255,175,175)",
             "rgb(210,210,255)", "rgb(210,255,210)", "rgb(255,255,210)", "rgb(255,210,210)")

_CELL = 28     # px per cell
_FONT = 9


def _rank2(L, op):
    shp = getattr(L, "shape", None)
    if shp is None:
        raise LayoutError(op, "layout", "must be a layout", actual=repr(L))
    if not isinstance(shp, tuple):
        M, N, f = it.product(shp), 1, (lambda m, n: L(m))
    elif len(shp) == 1:
        M, N, f = it.product(shp[0]), 1, (lambda m, n: L((m,)))
    elif len(shp) != 2:
        raise LayoutError(op, "layout", "must have rank 1 or 2 to be drawn", actual=str(L))
    else:
        M, N, f = it.product(shp[0]), it.product(shp[1]), (lambda m, n: L((m, n)))
    check_table_size(op, "layout", M, N)
    return M, N, f


def _cell(x, y, label, fill, row, col, sub=None, extra=""):
    text = escape(label)
    lines = [f'<g class="cell" data-row="{row}" data-col="{col}" data-label="{text}"{extra}>',
             f'<rect x="{x}" y="{y}" width="{_CELL}" height="{_CELL}" fill="{fill}" '
             f'stroke="black" stroke-width="0.5"/>']
    if sub is None:
        lines.append(f'<text x="{x + _CELL / 2}" y="{y + _CELL / 2 + _FONT / 3}" '
                     f'font-size="{_FONT}" text-anchor="middle">{text}</text>')
    else:
        lines.append(f'<text x="{x + _CELL / 2}" y="{y + _CELL / 2 - 2}" font-size="{_FONT}" '
                     f'text-anchor="middle">{escape(sub[0])}</text>')
        lines.append(f'<text x="{x + _CELL / 2}" y="{y + _CELL / 2 + _FONT}" font-size="{_FONT}" '
                     f'text-anchor="middle">{escape(sub[1])}</text>')
    lines.append("</g>")
    return "".join(lines)


def _doc(w, h, body, title):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
            f'viewBox="0 0 {w} {h}" font-family="monospace">'
            f'<title>{escape(title)}</title>' + "".join(body) + "</svg>")


def _axis(x0, y0, M, N, body, row_labels=True, col_labels=True):
    if row_labels:
        for m in range(M):
            body.append(f'<text class="axis" x="{x0 - 4}" y="{y0 + m * _CELL + _CELL / 2 + 3}" '
                        f'font-size="{_FONT}" text-anchor="end">{m}</text>')
    if col_labels:
        for n in range(N):
            body.append(f'<text class="axis" x="{x0 + n * _CELL + _CELL / 2}" y="{y0 - 4}" '
                        f'font-size="{_FONT}" text-anchor="middle">{n}</text>')


def layout_svg(L) -> str:
    """SVG of a rank-1 or rank-2 layout: cell ``(m, n)`` shows ``L(m, n)``, shaded by index
    (8 greys, CuTe's ``print_latex`` of a layout). Law: the ``data-label`` of cell (m,n) is
    ``str(L(m,n))``."""
    M, N, f = _rank2(L, "layout_svg")
    x0, y0 = 30, 30
    body = []
    greys = ("rgb(255,255,255)", "rgb(230,230,230)", "rgb(205,205,205)", "rgb(180,180,180)",
             "rgb(155,155,155)", "rgb(130,130,130)", "rgb(105,105,105)", "rgb(80,80,80)")
    for m in range(M):
        for n in range(N):
            v = f(m, n)
            fill = greys[v % 8] if isinstance(v, int) else "white"
            body.append(_cell(x0 + n * _CELL, y0 + m * _CELL, str(v), fill, m, n))
    _axis(x0, y0, M, N, body)
    return _doc(x0 + N * _CELL + 10, y0 + M * _CELL + 10, body, str(L))


def tv_cells(layout_tv: Layout, tile_mn):
    """``{(m, n): [(thr, val), ...]}`` for a ``(thr, val) -> m + M*n`` layout over ``tile_mn``."""
    M, N = _tile2(tile_mn)
    if not isinstance(layout_tv, Layout) or not isinstance(layout_tv.shape, tuple) \
            or len(layout_tv.shape) != 2:
        raise LayoutError("tv_layout", "layout_tv", "must be a rank-2 (thr, val) Layout",
                          actual=repr(layout_tv))
    T = it.product(layout_tv.shape[0])
    V = it.product(layout_tv.shape[1])
    check_table_size("tv_layout", "layout_tv", T, V)
    tab = layout_table(layout_tv)
    cells = {}
    for v in range(V):
        for t in range(T):
            i = tab[t + T * v]
            cells.setdefault((i % M, i // M), []).append((t, v))
    return cells


def _tile2(tile_mn):
    if isinstance(tile_mn, int) and not isinstance(tile_mn, bool):
        M, N = tile_mn, 1
    elif isinstance(tile_mn, tuple) and tile_mn:
        t = tuple(it.product(x.shape) if isinstance(x, Layout) else it.product(x) for x in tile_mn)
        M, N = t[0], (it.product(t[1:]) if len(t) > 1 else 1)
    else:
        raise LayoutError("tv_layout", "tile_mn", "must be an int or a tuple of extents/layouts",
                          actual=repr(tile_mn))
    if not (isinstance(M, int) and isinstance(N, int) and M > 0 and N > 0):
        raise LayoutError("tv_layout", "tile_mn", "must have positive static extents",
                          actual=repr(tile_mn))
    check_table_size("tv_layout", "tile_mn", M, N)
    return M, N


def _tv_block(cells, M, N, x0, y0, body, transpose=False, tag=""):
    for m in range(M):
        for n in range(N):
            holders = cells.get((m, n), [])
            r, c = (n, m) if transpose else (m, n)
            x, y = x0 + c * _CELL, y0 + r * _CELL
            if not holders:
                body.append(_cell(x, y, "", "white", m, n, extra=f' data-operand="{tag}"'))
                continue
            t, v = holders[0]
            label = f"T{t}V{v}" + (f"+{len(holders) - 1}" if len(holders) > 1 else "")
            body.append(_cell(x, y, label, TV_COLORS[t % 8], m, n,
                              sub=(f"T{t}" + ("*" if len(holders) > 1 else ""), f"V{v}"),
                              extra=f' data-operand="{tag}" data-holders="{len(holders)}"'))


def tv_layout_svg(layout_tv: Layout, tile_mn, title=None) -> str:
    """SVG of a TV layout over an ``M x N`` tile: each cell shows the first ``(thread, value)``
    holding it (``T*`` when several threads hold it), coloured by thread (CuTe's palette).
    Law: cell ``(m,n)``'s ``data-label`` is ``T{t}V{v}`` with ``layout_tv(t, v) == m + M*n``."""
    M, N = _tile2(tile_mn)
    cells = tv_cells(layout_tv, tile_mn)
    x0, y0 = 30, 30
    body = []
    _tv_block(cells, M, N, x0, y0, body, tag="TV")
    _axis(x0, y0, M, N, body)
    return _doc(x0 + N * _CELL + 10, y0 + M * _CELL + 10, body, title or str(layout_tv))


def tiled_mma_svg(mma) -> str:
    """CuTe's ``print_svg(TiledMMA)``: A (M x K) left, B (K x N, i.e. ``B`` transposed) top,
    C (M x N) bottom right, each cell ``T{thread}V{value}`` coloured by thread."""
    tM, tN, tK = mma.tile_shape
    cA = tv_cells(mma.get_layoutA_TV(), (tM, tK))
    cB = tv_cells(mma.get_layoutB_TV(), (tN, tK))
    cC = tv_cells(mma.get_layoutC_TV(), (tM, tN))
    pad = 30
    xA, yA = pad, pad + (tK + 1) * _CELL
    xB, yB = pad + (tK + 1) * _CELL, pad
    xC, yC = xB, yA
    body = []
    _tv_block(cA, tM, tK, xA, yA, body, tag="A")
    _tv_block(cB, tN, tK, xB, yB, body, transpose=True, tag="B")
    _tv_block(cC, tM, tN, xC, yC, body, tag="C")
    w = xC + tN * _CELL + 10
    h = yC + tM * _CELL + 10
    return _doc(w, h, body, f"TiledMMA {mma.atom.name} tile {mma.tile_shape}")


def tiled_copy_svg(tc) -> str:
    """Source (left) and destination (right) TV layouts of a TiledCopy, coloured by thread."""
    M, N = _tile2(tc.tile_shape)
    cS = tv_cells(tc.get_layoutS_TV(), (M, N))
    cD = tv_cells(tc.get_layoutD_TV(), (M, N))
    pad = 30
    body = [f'<text x="{pad}" y="{pad - 14}" font-size="11">Src</text>',
            f'<text x="{pad + (N + 2) * _CELL}" y="{pad - 14}" font-size="11">Dst</text>']
    _tv_block(cS, M, N, pad, pad, body, tag="S")
    _tv_block(cD, M, N, pad + (N + 2) * _CELL, pad, body, tag="D")
    return _doc(pad + (2 * N + 2) * _CELL + 10, pad + M * _CELL + 10, body,
                f"TiledCopy {tc.atom.op.name} tile {tc.tile_shape}")


def format_tv_layout(layout_tv: Layout, tile_mn) -> str:
    """``print_layout``-style table of a TV layout: cell ``(m, n)`` reads ``T{t}V{v}`` (``*``
    marks cells held by several threads; the first holder is shown)."""
    M, N = _tile2(tile_mn)
    cells = tv_cells(layout_tv, tile_mn)

    def lab(m, n):
        h = cells.get((m, n))
        if not h:
            return "."
        return f"T{h[0][0]}V{h[0][1]}" + ("*" if len(h) > 1 else "")
    labels = [[lab(m, n) for n in range(N)] for m in range(M)]
    w = max(len(s) for row in labels for s in row)
    lines = [f"{layout_tv}  over ({M},{N})"]
    lines.append("    " + "".join(f" {n:>{w + 1}} " for n in range(N)))
    sep = "    " + ("+" + "-" * (w + 2)) * N + "+"
    for m in range(M):
        lines.append(sep)
        lines.append(f"{m:>3} " + "".join(f"| {labels[m][n]:>{w}} " for n in range(N)) + "|")
    lines.append(sep)
    return "\n".join(lines)


def print_tv_layout(layout_tv: Layout, tile_mn, file=None) -> None:
    """Print :func:`format_tv_layout`."""
    import sys
    print(format_tv_layout(layout_tv, tile_mn), file=file or sys.stdout)


def format_tiled_mma(mma, which: str = "C") -> str:
    """Text table of a TiledMMA's A, B or C TV layout (``which``)."""
    tM, tN, tK = mma.tile_shape
    L, shp = {"A": (mma.get_layoutA_TV(), (tM, tK)), "B": (mma.get_layoutB_TV(), (tN, tK)),
              "C": (mma.get_layoutC_TV(), (tM, tN))}[which]
    return f"{which} of {mma.atom.name}\n" + format_tv_layout(L, shp)


def write_svg(obj, path: str) -> str:
    """Write the SVG of a Layout, TiledMMA or TiledCopy to ``path``; returns the path."""
    if not isinstance(path, str) or not path:
        import os
        if not isinstance(path, os.PathLike):  # an int would be a file descriptor (and closed)
            raise LayoutError("write_svg", "path", "must be a file name", actual=repr(path))
    svg = layout_svg(obj) if isinstance(obj, Layout) or not hasattr(obj, "_repr_svg_") \
        else obj._repr_svg_()
    try:
        with open(path, "w") as f:
            f.write(svg)
    except OSError as e:
        raise LayoutError("write_svg", "path", f"cannot be written ({e.strerror or e})",
                          actual=path) from e
    return path


def _layout_repr_svg(self):
    """Notebooks show a rank-1 or rank-2 layout as its picture (nothing for other layouts)."""
    try:
        return layout_svg(self)
    except CuteError:
        return None


Layout._repr_svg_ = _layout_repr_svg  # installed here so that layout.py never imports the pictures
