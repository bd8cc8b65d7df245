"""Printing and parsing layouts in CuTe's notation.

``print_layout`` reproduces CuTe's 2-D table; ``parse_layout`` reads ``"((2,2),4):((1,4),2)"``
back (law: ``parse_layout(str(L)) == L``).
"""

from __future__ import annotations

import re
import sys

from .errors import LayoutError, ParseError, SymbolicError
from .layout import cosize, fmt_int_tuple, group, Layout, make_layout
from . import int_tuple as it

__all__ = ["print_layout", "format_layout", "parse_layout", "parse_int_tuple", "MAX_TABLE_CELLS",
           "check_table_size", "format_cute", "print"]

#: The most cells a printed table or a picture may have: printing is proportional to the cells,
#: so a larger request (a 2**70-element layout) is refused before any work is done.
MAX_TABLE_CELLS = 1 << 18


def check_table_size(op: str, arg: str, M, N) -> None:
    """Raise LayoutError when an ``M x N`` table or picture is too large to draw."""
    if not (isinstance(M, int) and isinstance(N, int)):
        raise SymbolicError(op, arg, "needs static extents to be drawn", actual=(M, N))
    if M * N > MAX_TABLE_CELLS:
        raise LayoutError(op, arg, f"has {M}x{N} cells, too many to draw",
                          expected=f"at most {MAX_TABLE_CELLS} cells", actual=(M, N))


def format_cute(x) -> str:
    """The text CuTe C++'s ``print(x)`` writes for any value, ints without C++'s ``_`` prefix
    of static values (as ``str(Layout)``): IntTuples and coordinates ``(2,3,(4,5))``,
    ``(_,3,(1,_))``; layouts ``(4,2):(1,4)``; tilers (tuples of layouts) ``(3:4,8:2)``;
    composed layouts ``Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)``; coordinate strides
    ``1@0``; atoms and tiled objects through their ``cpp_str()`` (C++'s ``print`` of them);
    ``bool`` as ``true``/``false``; a ``str`` as itself.
    """
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, tuple):  # IntTuples, coordinates, tilers, ArithmeticTuples
        return "(" + ",".join(format_cute(a) for a in x) + ")"
    if it.is_underscore(x):
        return "_"
    if isinstance(x, list):
        return "(" + ",".join(format_cute(a) for a in x) + ")"
    f = getattr(x, "cpp_str", None)
    if callable(f):
        return f()
    return str(x).replace(" ", "") if it.is_int(x) else str(x)


def print(*xs, end="\n", file=None) -> None:  # noqa: A001 - CuTe's name; kept out of cute_py.__all__
    """CuTe's ``print(x, ...)``: writes :func:`format_cute` of each value, back to back (as the
    variadic C++ ``print``), then ``end``. ``cute.print(L)`` prints ``(4,2):(1,4)``;
    ``cute.print(atom)`` prints what C++ prints for the atom.
    """
    import builtins
    builtins.print("".join(format_cute(x) for x in xs), end=end, file=file or sys.stdout)


def format_layout(L) -> str:
    """The text CuTe's ``print_layout`` prints for a rank-2 layout.

    Other ranks: rank 1 is shown as ``(size, 1)``; ranks above 2 group modes ``1..R-1`` into
    the column mode, and the header line says so.
    """
    form = getattr(L, "_cute_print_form", None)  # composed layouts: CuTe prints flagged ones position-independently
    if form is not None:
        L = form()
    if not isinstance(L, Layout):
        inner = getattr(L, "layout", None)
        if not isinstance(inner, Layout) and not hasattr(L, "shape"):
            raise LayoutError("print_layout", "layout", "must be a Layout", actual=repr(L))
    header = str(L)
    R = it.rank(L.shape)
    if R == 0:
        raise LayoutError("print_layout", "layout", "has rank 0 (no modes to tabulate)",
                          actual=header)
    note = ""
    if R == 1:
        L2 = make_layout(L, Layout(1, 0))
        note = "  [rank 1: shown as (size,1)]"
    elif R > 2:
        L2 = group(L, 1, R)
        note = f"  [rank {R}: modes 1..{R - 1} grouped as columns]"
    else:
        L2 = L
    M, N = it.product(L2.shape[0]), it.product(L2.shape[1])
    check_table_size("print_layout", "layout", M, N)
    # CuTe (util/print_tensor.hpp): idx_width = num_digits(cosize) + 2, values "%*d" in
    # idx_width-2 columns, separators "+" followed by idx_width dashes.
    d = max(len(str(cosize(L2))), 1) if cosize(L2) > 0 else 1
    width = d + 2
    lines = [header + note]
    lines.append("    " + "".join(f"  {n:>{d}d} " for n in range(N)))
    sep = "    " + ("+" + "-" * width) * N + "+"
    for m in range(M):
        lines.append(sep)
        lines.append(f"{m:>2d}  " + "".join(f"| {L2((m, n)):>{d}d} " for n in range(N)) + "|")
    lines.append(sep)
    return "\n".join(lines)


def print_layout(L, file=None) -> None:
    """Print ``L`` and its 2-D table exactly as CuTe's ``print_layout`` does (rank 2)."""
    print(format_layout(L), file=file or sys.stdout)


_TOKEN = re.compile(r"\s*(?:(\()|(\))|(,)|(:)|(-?\d+)|(_)|([A-Za-z][A-Za-z0-9_]*))")


def _parse_tuple(text: str, pos: int, symbols):
    m = _TOKEN.match(text, pos)
    if not m:
        raise ParseError("parse_layout", "text", f"unexpected character at {pos}", actual=text)
    if m.group(1):
        items = []
        pos = m.end()
        while True:
            item, pos = _parse_tuple(text, pos, symbols)
            items.append(item)
            m2 = _TOKEN.match(text, pos)
            if m2 and m2.group(3):
                pos = m2.end()
                continue
            if m2 and m2.group(2):
                return tuple(items), m2.end()
            raise ParseError("parse_layout", "text", f"expected ',' or ')' at {pos}", actual=text)
    if m.group(5):
        return int(m.group(5)), m.end()
    if m.group(6):
        # CuTe prints static ints as _N; accept "_4" and a bare "_".
        m2 = re.compile(r"(-?\d+)").match(text, m.end())
        if m2:
            return int(m2.group(1)), m2.end()
        return it._, m.end()
    if m.group(7):
        name = m.group(7)
        import sympy
        if name not in symbols:
            symbols[name] = sympy.Symbol(name, integer=True, positive=True)
        return symbols[name], m.end()
    raise ParseError("parse_layout", "text", f"unexpected token at {pos}", actual=text)


def parse_int_tuple(text: str):
    """Read an IntTuple such as ``"(4,(2,3))"``; ``_N`` (CuTe's static ints) reads as ``N``."""
    if not isinstance(text, str):
        raise ParseError("parse_int_tuple", "text", "must be a str", actual=type(text).__name__)
    val, pos = _parse_tuple(text, 0, {})
    if text[pos:].strip():
        raise ParseError("parse_int_tuple", "text", f"has trailing text {text[pos:]!r}", actual=text)
    return val


def parse_layout(text: str) -> Layout:
    """Read CuTe's printed notation ``shape:stride`` back into a :class:`Layout`.

    Accepts ``"((2,2),4):((1,4),2)"``, ``"8:1"``, C++'s ``"(_4,_2):(_1,_4)"`` and a bare shape
    (compact strides). Names (``M``) become positive integer sympy symbols.
    Law: ``parse_layout(str(L)) == L``.
    """
    if not isinstance(text, str):
        raise ParseError("parse_layout", "text", "must be a str", actual=type(text).__name__)
    if not text.strip():
        raise ParseError("parse_layout", "text", "is empty", actual=repr(text))
    t = text.strip()
    if ":" not in t and not t.startswith("(") and not re.fullmatch(r"_?-?\d+", t):
        # a bare word is not a layout (a symbolic size is written with its stride: "M:1")
        raise ParseError("parse_layout", "text", "is not a layout: write shape:stride such as "
                         "(4,2):(1,4), a shape in parentheses or an int", actual=text)
    symbols: dict = {}
    try:
        return _parse_layout(text, symbols)
    except RecursionError:
        raise ParseError("parse_layout", "text", "is nested too deeply", actual=text[:40]) from None


def _parse_layout(text: str, symbols: dict) -> Layout:
    shape, pos = _parse_tuple(text, 0, symbols)
    rest = text[pos:].strip()
    if not rest:
        return Layout(shape)
    if not rest.startswith(":"):
        raise ParseError("parse_layout", "text", f"expected ':' after the shape, found {rest[:10]!r}",
                         actual=text)
    stride, pos2 = _parse_tuple(rest, 1, symbols)
    if rest[pos2:].strip():
        raise ParseError("parse_layout", "text", f"has trailing text {rest[pos2:]!r}", actual=text)
    if it.has_underscore(shape) or it.has_underscore(stride):
        raise ParseError("parse_layout", "text", "contains '_' where an integer is required", actual=text)
    if not it.congruent(shape, stride):
        raise ParseError("parse_layout", "text", "shape and stride are not congruent",
                         expected=fmt_int_tuple(shape), actual=fmt_int_tuple(stride))
    return Layout(shape, stride)
