"""LaTeX/TikZ pictures exactly as CuTe C++'s ``print_latex`` writes them
(``include/cute/util/print_latex.hpp``), next to the SVGs of :mod:`cute_py.svg`.

* :func:`print_latex` / :func:`format_latex` — a rank-1/2 layout (``fill=black!NN`` grey by index
  mod 8, each cell its index, row and column labels); a composed layout (one with a
  ``smem_ptr_flag`` offset in its position-independent form, as C++); an MMA atom, a TiledMMA
  (C at the origin, A to the left, B on top) and a TiledCopy (source left, destination right)
  with cells ``T{thread} \\\\ V{value}`` coloured by thread.
* :func:`print_latex_tv` / :func:`format_latex_tv` — a ``(thr, val) -> coord`` layout over an
  ``M x N`` tile.

The text is C++'s byte for byte except in the ``%`` comment lines, which print the layouts the
way ``str`` does (ints without C++'s ``_`` prefix of static values). Compile with
``pdflatex`` (``\\documentclass[convert]{standalone}``).
"""

from __future__ import annotations

import sys

from . import int_tuple as it
from .errors import IntTupleError, LayoutError
from .layout import Layout, append, make_layout

__all__ = ["print_latex", "format_latex", "print_latex_tv", "format_latex_tv"]

#: CuTe's TikzColor_BWx8: grey by index mod 8.
BW_COLORS = ("black!00", "black!40", "black!20", "black!60",
             "black!10", "black!50", "black!30", "black!70")
#: CuTe's TikzColor_TV: by thread id mod 8.
TV_COLORS = ("{rgb,255:red,175;green,175;blue,255}", "{rgb,255:red,175;green,255;blue,175}",
             "{rgb,255:red,255;green,255;blue,175}", "{rgb,255:red,255;green,175;blue,175}",
             "{rgb,255:red,210;green,210;blue,255}", "{rgb,255:red,210;green,255;blue,210}",
             "{rgb,255:red,255;green,255;blue,210}", "{rgb,255:red,255;green,210;blue,210}")

_HEADER = ("\\documentclass[convert]{standalone}\n"
           "\\usepackage{tikz}\n\n"
           "\\begin{document}\n"
           "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},every node/.style="
           "{minimum size=1cm, outer sep=0pt}]\n\n")
_FOOTER = "\\end{tikzpicture}\n\\end{document}\n"
_MAX_CELLS = 1 << 16  # a picture larger than this is not a picture


def _check_size(n, op):
    if not isinstance(n, int) or n > _MAX_CELLS:
        raise LayoutError(op, "layout", f"has {n} cells; a LaTeX picture needs a static size "
                          f"<= {_MAX_CELLS}", actual=n)


def _label(x, y, v):
    return f"\\node at ({x},{y}) {{\\Large{{\\texttt{{{v}}}}}}};\n"


def _tv_node(color, x, y, t, v):
    return f"\\node[fill={color}] at ({x},{y}) {{\\shortstack{{T{t} \\\\ V{v}}}}};\n"


def _layout_latex(L, color=None) -> str:
    """A layout or a composed layout (evaluated as C++'s generic template does)."""
    color = color or (lambda idx: BW_COLORS[idx % 8])
    if it.rank(L.shape) > 2:
        raise LayoutError("print_latex", "layout", "must have rank <= 2", actual=str(L))
    if isinstance(L, Layout):
        lay = append(L, n=2) if isinstance(L.shape, tuple) else make_layout(L, Layout(1, 0))
        M, N = (it.product(s) for s in lay.shape)
        at = lay
    else:
        shp = L.shape if isinstance(L.shape, tuple) else (L.shape,)
        M, N = it.product(shp[0]), (it.product(shp[1]) if len(shp) > 1 else 1)
        lay = L

        def at(c):
            return L(c) if len(shp) > 1 else (L(c[0],) if isinstance(L.shape, tuple) else L(c[0]))
    _check_size(M * N if isinstance(M, int) and isinstance(N, int) else M, "print_latex")
    out = [f"% Layout: {lay}\n", _HEADER]
    for m in range(M):
        for n in range(N):
            idx = at((m, n))
            out.append(f"\\node[fill={color(idx)}] at ({m},{n}) {{{idx}}};\n")
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({M},{N});\n\n")
    out += [_label(m, -1, m) for m in range(M)]
    out += [_label(-1, n, n) for n in range(N)]
    out.append(_FOOTER)
    return "".join(out)


def _coords(layout_tv, M):
    """``(tid, vid) -> (m, n)`` of a TV layout whose values are indices ``m + M*n`` into the
    tile (or coordinates already)."""
    T = it.product(layout_tv.shape[0])
    V = it.product(layout_tv.shape[1])
    _check_size(T * V, "print_latex")

    def at(t, v):
        x = layout_tv((t, v))
        if isinstance(x, tuple):
            return x[0], x[1]
        return x % M, x // M
    return T, V, at


def _tv_text(layout_tv, M, N, color, dx=0, dy=0, transpose=False):
    """The nodes of a TV layout, each cell once (the first ``(tid, vid)`` to hold it)."""
    T, V, at = _coords(layout_tv, M)
    filled = set()
    out = []
    for t in range(T):
        for v in range(V):
            m, n = at(t, v)
            if (m, n) in filled:
                continue
            filled.add((m, n))
            x, y = (n + dx, m + dy) if transpose else (m + dx, n + dy)
            out.append(_tv_node(color(t, v), x, y, t, v))
    return out


def _tile2(tile_mn):
    if isinstance(tile_mn, Layout):
        tile_mn = tile_mn.shape
    try:
        it._check(tile_mn, "print_latex_tv", "tile_mn")
    except IntTupleError:
        t = None  # re-raised below as this op's LayoutError
    else:
        t = it.product_each(tile_mn) if isinstance(tile_mn, tuple) else (tile_mn, 1)
    if t is None or len(t) != 2 or not all(isinstance(x, int) and x >= 1 for x in t):
        raise LayoutError("print_latex_tv", "tile_mn", "must be a rank-2 static shape (M, N)",
                          actual=repr(tile_mn))
    _check_size(t[0] * t[1], "print_latex_tv")
    return t


def _check_color(color, op):
    if color is not None and not callable(color):
        raise LayoutError(op, "color", "must be callable (CuTe's colour functor) or None",
                          actual=repr(color))


def format_latex_tv(layout_tv, tile_mn, color=None) -> str:
    """The text of CuTe's ``print_latex_tv(layout_tv, tile_mn)``: cell ``(m, n)`` of the
    ``M x N`` tile shows the first ``T{tid} \\\\ V{vid}`` with ``layout_tv(tid, vid)`` at it
    (a value is an index ``m + M*n`` or a coordinate ``(m, n)``)."""
    _check_color(color, "print_latex_tv")
    color = color or (lambda t, v: TV_COLORS[t % 8])
    if not isinstance(layout_tv, Layout) or it.rank(layout_tv.shape) != 2:
        raise LayoutError("print_latex_tv", "layout_tv", "must be a rank-2 (thr, val) layout",
                          actual=repr(layout_tv))
    M, N = _tile2(tile_mn)
    out = [f"% Layout TV: {layout_tv}\n", _HEADER]
    out += _tv_text(layout_tv, M, N, color)
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({M},{N});\n\n")
    out += [_label(m, -1, m) for m in range(M)]
    out += [_label(-1, n, n) for n in range(N)]
    out.append(_FOOTER)
    return "".join(out)


def _mma_latex(mma, color=None) -> str:
    color = color or (lambda t, v: TV_COLORS[t % 8])
    M, N, K = mma.tile_shape
    C, A, B = mma.get_layoutC_TV(), mma.get_layoutA_TV(), mma.get_layoutB_TV()
    out = [f"% LayoutC: {C}\n", f"% LayoutA: {A}\n", f"% LayoutB: {B}\n", _HEADER]
    out += _tv_text(C, M, N, color)
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({M},{N});\n\n")
    out += _tv_text(A, M, K, color, dy=-K - 1)
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,{-K - 1}) grid ({M},-1);\n\n")
    out += [_label(m, -1 - K - 1, m) for m in range(M)]
    out += [_label(-1, k - K - 1, k) for k in range(K)]
    out += _tv_text(B, N, K, color, dx=-K - 1, transpose=True)
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] ({-K - 1},0) grid (-1,{N});\n\n")
    out += [_label(-1 - K - 1, n, n) for n in range(N)]
    out += [_label(k - K - 1, -1, k) for k in range(K)]
    out.append(_FOOTER)
    return "".join(out)


def _copy_latex(tc, color=None) -> str:
    color = color or (lambda t, v: TV_COLORS[t % 8])
    M, N = _tile2(tc.tile_shape)
    S, D = tc.get_layoutS_TV(), tc.get_layoutD_TV()
    out = [f"% Layout S TV: {S}\n", f"% Layout D TV: {D}\n", _HEADER]
    out += _tv_text(S, M, N, color)
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({M},{N});\n\n")
    out += [_label(m, -1, m) for m in range(M)]
    out += [_label(-1, n, n) for n in range(N)]
    out += _tv_text(D, M, N, color, dy=N + 3)
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,{N + 3}) grid ({M},{2 * N + 3});\n\n")
    out += [_label(m, 2 * N + 3, m) for m in range(M)]
    out += [_label(-1, n + N + 3, n) for n in range(N)]
    out.append(_FOOTER)
    return "".join(out)


def format_latex(x, color=None) -> str:
    """The text of CuTe's ``print_latex(x)`` for a layout (rank <= 2), a flagged composed
    layout (position-independent form), an MMA atom, a TiledMMA or a TiledCopy. ``color`` is
    CuTe's colour functor: ``color(idx)`` for layouts, ``color(tid, vid)`` for the others."""
    _check_color(color, "print_latex")
    form = getattr(x, "_cute_print_form", None)
    if form is not None:
        x = form()
    if isinstance(x, Layout) or (form is not None and hasattr(x, "layout_b")):
        return _layout_latex(x, color)
    if hasattr(x, "get_layoutC_TV") and hasattr(x, "tile_shape"):
        return _mma_latex(x, color)
    if hasattr(x, "get_layoutS_TV") and hasattr(x, "tile_shape"):
        return _copy_latex(x, color)
    if hasattr(x, "layout_C") and hasattr(x, "shape_mnk"):  # an MMA atom: make_tiled_mma(atom)
        from .atom import make_tiled_mma
        return _mma_latex(make_tiled_mma(x), color)
    raise LayoutError("print_latex", "x", "must be a Layout, a composed layout, an MMA atom, "
                      "a TiledMMA or a TiledCopy", actual=repr(x))


def print_latex(x, color=None, file=None) -> None:
    """CuTe's ``print_latex(x)``: writes :func:`format_latex` to ``file`` (stdout)."""
    (file or sys.stdout).write(format_latex(x, color))


def print_latex_tv(layout_tv, tile_mn, color=None, file=None) -> None:
    """CuTe's ``print_latex_tv(layout_tv, tile_mn)``: writes :func:`format_latex_tv`."""
    (file or sys.stdout).write(format_latex_tv(layout_tv, tile_mn, color))
