"""Symbolic (runtime) sizes: sympy symbols in shapes, strides, offsets and coordinates.

Python ints are CuTe's *static* values; sympy integer expressions are its *dynamic* ones. The
algebra accepts them wherever CuTe's dynamic algebra works — tiling a symbolic ``(M, N)``
row-major tensor by a static ``(128, 64)`` tiler, ``local_tile`` with a symbolic block coordinate,
``ceil_div`` giving ``ceiling(M/128)`` tiles — and raises :class:`~cute_py.errors.SymbolicError`
where CuTe needs static values (a complement or left inverse of symbolic strides, swizzling a
symbolic offset, ...). Evaluating a layout at symbolic coordinates gives a sympy expression;
:func:`simplify` tidies it (with thread-index bounds, ``Mod(floor(tid/8), 32)`` becomes
``floor(tid/8)`` for ``tid < 256``) and :func:`subs` makes a symbolic value concrete.

::

    M, K = cute.symbols("M K")
    mA = cute.make_tensor(cute.make_gmem_ptr("f16", "A"), cute.make_layout((M, K), (K, 1)))
    gA = cute.local_tile(mA, (128, 32), (bm, cute._))       # (128,32,ceiling(K/32)):(K,1,32)
"""

from __future__ import annotations

from .composed import ComposedLayout
from .errors import SymbolicError
from .layout import fmt_int_tuple, Layout
from .tensor import ArithmeticTuple, _ArrayIter, _CoordIter, Pointer, ScaledBasis, Tensor

__all__ = ["symbols", "is_symbolic", "free_symbols", "subs", "simplify", "require_static"]


def _sympy():
    import sympy
    return sympy


def symbols(names: str, nonnegative: bool = False):
    """Integer sympy symbols for runtime sizes: positive (sizes, strides) by default,
    non-negative with ``nonnegative=True`` (indices such as ``tid``, ``bm``).
    ``M, N, K = symbols("M N K")``."""
    sp = _sympy()
    if nonnegative:
        return sp.symbols(names, integer=True, nonnegative=True)
    return sp.symbols(names, integer=True, positive=True)


def _leaves(x):
    if isinstance(x, Tensor):
        yield from _leaves(x.layout)
        off = x.data.offset if hasattr(x.data, "offset") else 0
        yield from _leaves(off)
    elif isinstance(x, ComposedLayout):
        yield from _leaves(x.layout_b)
        yield from _leaves(x.offset if isinstance(x.offset, int) or _is_sym(x.offset) else 0)
    elif isinstance(x, Layout):
        yield from _leaves(x.shape)
        yield from _leaves(x.stride)
    elif isinstance(x, ScaledBasis):
        yield x.value
    elif isinstance(x, (tuple, list)):
        for a in x:
            yield from _leaves(a)
    else:
        yield x


def _is_sym(x) -> bool:
    return type(x).__module__.startswith("sympy")


def is_symbolic(x) -> bool:
    """True when a value (IntTuple, layout, composed layout, tensor) holds a sympy expression."""
    return any(_is_sym(v) for v in _leaves(x))


def free_symbols(x) -> set:
    """The sympy symbols a value depends on."""
    out = set()
    for v in _leaves(x):
        if _is_sym(v):
            out |= v.free_symbols
    return out


def _subs_leaf(v, mapping):
    if _is_sym(v):
        r = v.subs(mapping)
        if getattr(r, "is_Integer", False):
            return int(r)
        return r
    return v


def _subs_tuple(t, mapping):
    if isinstance(t, tuple):
        out = tuple(_subs_tuple(a, mapping) for a in t)
        return ArithmeticTuple(out) if isinstance(t, ArithmeticTuple) else out
    if isinstance(t, ScaledBasis):
        return ScaledBasis(_subs_leaf(t.value, mapping), t.modes)
    return _subs_leaf(t, mapping)


def subs(x, mapping):
    """Substitute values for symbols everywhere in ``x`` (IntTuple, expression, Layout,
    ComposedLayout, Tensor); fully substituted leaves become Python ints (static values).
    Law: ``subs(L, m)(subs(c, m)) == subs(L(c), m)``."""
    from collections.abc import Mapping
    if not isinstance(mapping, Mapping):
        raise SymbolicError("subs", "mapping", "must be a mapping from symbols to values",
                            actual=type(mapping).__name__)
    mapping = dict(mapping)
    if isinstance(x, Layout):
        return Layout(_subs_tuple(x.shape, mapping), _subs_tuple(x.stride, mapping))
    if isinstance(x, ComposedLayout):
        off = _subs_leaf(x.offset, mapping) if _is_sym(x.offset) else x.offset
        return ComposedLayout(x.layout_a, off, subs(x.layout_b, mapping))
    if isinstance(x, Tensor):
        d = x.data
        if isinstance(d, Pointer):
            d = Pointer(d.space, d.dtype, d.name, _subs_leaf(d.offset, mapping))
        elif isinstance(d, _ArrayIter):
            d = _ArrayIter(d.flat, _subs_leaf(d.offset, mapping), d.space)
        elif isinstance(d, _CoordIter):
            d = _CoordIter(_subs_tuple(d.base, mapping))
        return Tensor(d, subs(x.layout, mapping))
    return _subs_tuple(x, mapping)


def _monotone(e) -> bool:
    """``e`` is non-decreasing in every symbol: sums/products with non-negative constants, floor."""
    sp = _sympy()
    if e.is_Symbol:
        return bool(e.is_nonnegative)
    if e.is_Number:
        return bool(e >= 0)
    if isinstance(e, (sp.Add, sp.Mul)):
        return all(_monotone(a) for a in e.args)
    if isinstance(e, (sp.floor, sp.ceiling)):
        return _monotone(e.args[0])
    return False


def simplify(expr, bounds=None):
    """Simplify an index expression. ``bounds`` maps symbols to exclusive upper bounds
    (``{tid: 256}``): ``Mod(x, m)`` is dropped where ``0 <= x < m`` follows from them and
    ``floor(x/m)`` becomes 0 where ``x < m``. Law: the result equals ``expr`` for every
    assignment within the bounds."""
    sp = _sympy()
    if not _is_sym(expr):
        return expr
    e = sp.sympify(expr)
    if bounds:
        hi = {s: b - 1 for s, b in bounds.items()}

        def upper(x):
            if not _monotone(x):
                return None
            if not x.free_symbols <= set(hi):
                return None
            return x.subs(hi)

        def rule(node):
            if isinstance(node, sp.Mod):
                a, m = node.args
                u = upper(a)
                if u is not None and m.is_Integer and u < m:
                    return a
            if isinstance(node, sp.floor):
                a = node.args[0]
                u = upper(a)
                if u is not None and u < 1:
                    return sp.Integer(0)
            return None

        changed = True
        while changed:
            changed = False
            for node in sp.preorder_traversal(e):
                r = rule(node)
                if r is not None:
                    e = e.xreplace({node: r})
                    changed = True
                    break
    return sp.expand(e) if e.is_Add or e.is_Mul else e


def require_static(x, op: str, arg: str):
    """Raise :class:`SymbolicError` naming the first symbolic mode of ``x`` (for operations CuTe
    only allows on static values); return ``x`` otherwise."""

    def find(t, path):
        if isinstance(t, tuple):
            for i, a in enumerate(t):
                p = find(a, path + (i,))
                if p is not None:
                    return p
            return None
        return path if _is_sym(t) else None

    if isinstance(x, Layout):
        for part, t in (("shape", x.shape), ("stride", x.stride)):
            p = find(t, ())
            if p is not None:
                raise SymbolicError(op, arg, f"has a symbolic {part} at mode {p or 0}; {op} needs "
                                    "static values (substitute with cute.subs)", actual=str(x))
        return x
    p = find(x, ())
    if p is not None:
        raise SymbolicError(op, arg, f"is symbolic at mode {p or 0}; {op} needs static values",
                            actual=fmt_int_tuple(x) if isinstance(x, tuple) else str(x))
    return x
