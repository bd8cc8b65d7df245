"""Layouts applied to IR expressions give IR expressions (CuTe's crd2idx / idx2crd).

A layout here is anything with ``.shape`` and ``.stride`` (``cute_py.Layout``) or a
``(shape, stride)`` pair of IntTuples.  Leaves are Python ints (static), sympy integer
expressions (runtime sizes; each free symbol becomes a kernel parameter ``ir.param`` with bounds
``[1, 2**31 - 1]`` unless ``symbols`` maps it to a node), or IR nodes.

Law (tested against ``cute_py.crd2idx`` on random layouts and coordinates): for every
coordinate ``c`` in the layout's domain,
``ir.evaluate(crd2idx(as_ir(c), shape, stride), {}) == cute_py.crd2idx(c, shape, stride)``;
an integer coordinate is split colexicographically and its **last mode is not taken modulo**
(CuTe semantics), so out-of-domain integers extend the last mode.
"""

from __future__ import annotations

from cute_py.errors import LayoutError, SymbolicError

from . import ir
from .ir import Node

__all__ = ["to_ir", "crd2idx", "idx2crd", "layout_apply", "shape_stride", "size_ir",
           "swizzle_apply"]


def _is_tuple(x) -> bool:
    return isinstance(x, tuple)


def to_ir(x, symbols: dict | None = None) -> Node:
    """An int, IR node or sympy integer expression as an IR node. Free sympy symbols become
    ``ir.param(name, 1, 2**31 - 1)`` unless ``symbols`` maps them (symbol or its name -> node)."""
    if isinstance(x, Node):
        return x
    if isinstance(x, bool):
        raise SymbolicError("to_ir", "x", "must be an integer", actual=x)
    if isinstance(x, int):
        return ir.const(x)
    mod = type(x).__module__
    if not mod.startswith("sympy"):
        try:
            import operator
            return ir.const(operator.index(x))
        except TypeError:
            raise SymbolicError("to_ir", "x", "must be an int, a sympy expression or an IR node",
                                actual=type(x).__name__) from None
    import sympy
    symbols = symbols if symbols is not None else {}
    if x.is_Integer:
        return ir.const(int(x))
    if x.is_Symbol:
        n = symbols.get(x, symbols.get(str(x)))
        if n is None:
            n = ir.param(str(x), 1, (1 << 31) - 1)
            symbols[x] = n
        return n
    if x.is_Add:
        out = ir.const(0)
        for a in x.args:
            out = ir.add(out, to_ir(a, symbols))
        return out
    if x.is_Mul:
        num = [a for a in x.args if not (a.is_Pow and a.exp.is_negative)]
        den = [a for a in x.args if a.is_Pow and a.exp.is_negative]
        if den:
            raise SymbolicError("to_ir", "x", "a division outside floor() is not an integer "
                                "index expression", actual=str(x))
        out = ir.const(1)
        for a in num:
            out = ir.mul(out, to_ir(a, symbols))
        return out
    if x.is_Pow and x.exp.is_Integer and int(x.exp) >= 0:
        out = ir.const(1)
        base = to_ir(x.base, symbols)
        for _ in range(int(x.exp)):
            out = ir.mul(out, base)
        return out
    if isinstance(x, sympy.floor):
        num, den = sympy.fraction(sympy.together(x.args[0]))
        return ir.floordiv(to_ir(num, symbols), to_ir(den, symbols))
    if isinstance(x, sympy.ceiling):
        num, den = sympy.fraction(sympy.together(x.args[0]))
        d = to_ir(den, symbols)
        return ir.floordiv(ir.add(to_ir(num, symbols), ir.sub(d, 1)), d)
    if isinstance(x, sympy.Mod):
        return ir.mod(to_ir(x.args[0], symbols), to_ir(x.args[1], symbols))
    raise SymbolicError("to_ir", "x", "has an operation the IR does not lower", actual=str(x))


def shape_stride(layout):
    """``(shape, stride)`` of a ``cute_py.Layout`` or of a ``(shape, stride)`` pair."""
    if hasattr(layout, "shape") and hasattr(layout, "stride") and not _is_tuple(layout):
        return layout.shape, layout.stride
    if _is_tuple(layout) and len(layout) == 2:
        return layout
    raise LayoutError("lower", "layout", "must be a Layout or a (shape, stride) pair",
                      actual=type(layout).__name__)


def size_ir(shape, symbols=None) -> Node:
    """The product of a shape's leaves, as a node."""
    if _is_tuple(shape):
        out = ir.const(1)
        for s in shape:
            out = ir.mul(out, size_ir(s, symbols))
        return out
    return to_ir(shape, symbols)


def _coord_ir(c, symbols):
    if _is_tuple(c):
        return tuple(_coord_ir(a, symbols) for a in c)
    return to_ir(c, symbols)


def crd2idx(coord, shape, stride, symbols: dict | None = None) -> Node:
    """CuTe ``crd2idx(coord, shape, stride)`` with IR leaves: the offset as a node.

    ``coord`` is a node / int (split colexicographically over ``shape``, last mode unbounded)
    or a tuple congruent to ``shape``'s top level.
    """
    symbols = symbols if symbols is not None else {}
    coord = _coord_ir(coord, symbols)
    return _crd2idx(coord, shape, stride, symbols)


def _crd2idx(c, shape, stride, symbols) -> Node:
    if _is_tuple(c):
        if not _is_tuple(shape) or not _is_tuple(stride) or len(shape) != len(c) \
                or len(stride) != len(c):
            raise LayoutError("crd2idx", "coord", "is not congruent to the shape",
                              expected=shape, actual=c)
        out = ir.const(0)
        for ci, si, di in zip(c, shape, stride):
            out = ir.add(out, _crd2idx(ci, si, di, symbols))
        return out
    if _is_tuple(shape):
        if not _is_tuple(stride) or len(stride) != len(shape):
            raise LayoutError("crd2idx", "stride", "is not congruent to the shape",
                              expected=shape, actual=stride)
        if len(shape) == 0:
            return ir.const(0)
        out = ir.const(0)
        for si, di in zip(shape[:-1], stride[:-1]):
            n = size_ir(si, symbols)
            out = ir.add(out, _crd2idx(ir.mod(c, n), si, di, symbols))
            c = ir.floordiv(c, n)
        return ir.add(out, _crd2idx(c, shape[-1], stride[-1], symbols))
    if _is_tuple(stride):
        raise LayoutError("crd2idx", "stride", "is not congruent to the shape",
                          expected=shape, actual=stride)
    return ir.mul(c, to_ir(stride, symbols))


def idx2crd(idx, shape, symbols: dict | None = None):
    """CuTe ``idx2crd(idx, shape)``: the colexicographic coordinate of ``idx`` as nodes
    (nested like ``shape``; the last mode of each level is not taken modulo)."""
    symbols = symbols if symbols is not None else {}
    idx = to_ir(idx, symbols)
    return _idx2crd(idx, shape, symbols)


def _idx2crd(idx, shape, symbols):
    if not _is_tuple(shape):
        return idx
    out = []
    for i, s in enumerate(shape):
        if i == len(shape) - 1:
            out.append(_idx2crd(idx, s, symbols))
        else:
            n = size_ir(s, symbols)
            out.append(_idx2crd(ir.mod(idx, n), s, symbols))
            idx = ir.floordiv(idx, n)
    return tuple(out)


def swizzle_apply(offset, swz) -> Node:
    """A CuTe Swizzle (``.B/.M/.S``, or ``.bits/.base/.shift``, or a ``(B, M, S)`` triple)
    applied to an offset node."""
    if _is_tuple(swz):
        B, M, S = swz
    elif hasattr(swz, "bits"):
        B, M, S = swz.bits, swz.base, swz.shift
    else:
        B, M, S = swz.B, swz.M, swz.S
    return ir.swizzle(to_ir(offset), B, M, S)


def layout_apply(layout, coord, symbols: dict | None = None) -> Node:
    """``layout(coord)`` as a node, for a Layout or (shape, stride) pair."""
    shape, stride = shape_stride(layout)
    return crd2idx(coord, shape, stride, symbols)


def composed_apply(layout, coord, symbols: dict | None = None) -> Node:
    """``layout(coord)`` as a node for a Layout or a ComposedLayout ``A o offset o B`` (``A``
    a Swizzle or a layout, applied to ``B(coord) + offset``), recursively.

    Law: ``ir.evaluate(composed_apply(L, c), {}) == L(c)`` for every coordinate ``c``."""
    from cute_py.composed import ComposedLayout
    from cute_py.swizzle import Swizzle
    if isinstance(layout, ComposedLayout):
        inner = ir.add(composed_apply(layout.layout_b, coord, symbols),
                       to_ir(layout.offset, symbols))
        a = layout.layout_a
        if isinstance(a, Swizzle):
            return swizzle_apply(inner, a)
        return composed_apply(a, inner, symbols)
    return layout_apply(layout, coord, symbols)

