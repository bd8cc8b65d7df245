"""``Layout``: a function from coordinates to indices, ``shape:stride``.

Construction, accessors, evaluation, slicing and mode manipulation. The algebra on layouts
(coalesce, composition, complement, inverses, divides, products) is in :mod:`cute_py.algebra`.
Semantics are CuTe C++'s (``include/cute/layout.hpp``), every Python int being a static value.
"""

from __future__ import annotations

from builtins import zip as _zip

from .errors import CuteError, IntTupleError, LayoutError
from .int_tuple import (
    _check, flatten, has_underscore, _is_const, is_int, is_tuple, is_underscore, product, wrap,
)
from . import int_tuple as it

__all__ = [
    "Layout", "LayoutLeft", "LayoutRight", "is_layout",
    "make_layout", "make_shape", "make_stride", "make_coord", "make_tile", "make_step",
    "make_ordered_layout", "make_layout_like",
    "compact_col_major", "compact_row_major", "compact_major", "compact_order",
    "size", "cosize", "coshape", "rank", "depth", "shape", "stride", "get", "layout",
    "crd2idx", "slice_and_offset", "select", "take", "group", "append", "prepend", "replace",
    "remove", "zip", "zip2_by", "tile_unzip", "get_hier_coord", "get_flat_coord",
    "get_1d_coord", "transform_layout", "fmt_int_tuple", "layout_table", "dice", "slice",
    "coprofile", "transform_leaf",
]


class _Major:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


LayoutLeft = _Major("LayoutLeft")    #: generalised column-major (CuTe's default)
LayoutRight = _Major("LayoutRight")  #: generalised row-major


def fmt_int_tuple(t) -> str:
    """Print an IntTuple as CuTe does: ``(4,(2,3))``, no spaces, ``_`` for an underscore."""
    if isinstance(t, tuple):
        return "(" + ",".join(fmt_int_tuple(a) for a in t) + ")"
    if is_underscore(t):
        return "_"
    return str(t).replace(" ", "")


def compact_major(shape, major=LayoutLeft, current=1):
    """Compact strides for ``shape`` in the given major order, starting at ``current``.

    Static size-1 modes get stride 0 (CuTe: ``make_layout((4,1)) == (4,1):(1,0)``).
    """
    if major is LayoutRight:
        if isinstance(shape, tuple):
            out = []
            for s in reversed(shape):
                out.append(compact_major(s, LayoutRight, current))
                current = current * product(s)
            return tuple(reversed(out))
    else:
        if isinstance(shape, tuple):
            out = []
            for s in shape:
                out.append(compact_major(s, LayoutLeft, current))
                current = current * product(s)
            return tuple(out)
    return 0 if _is_const(shape, 1) else current


def compact_col_major(shape, current=1):
    """Generalised column-major strides (LayoutLeft); size-1 modes get stride 0."""
    return compact_major(shape, LayoutLeft, current)


def compact_row_major(shape, current=1):
    """Generalised row-major strides (LayoutRight); size-1 modes get stride 0."""
    return compact_major(shape, LayoutRight, current)


def compact_order(shape, order):
    """Compact strides following ``order``: modes with smaller order values get smaller strides.

    ``order`` is weakly congruent to ``shape``; a mode's starting stride is the product of the
    sizes of all modes with a strictly smaller order (CuTe's ``compact_order``).
    """
    if not it.weakly_congruent(order, shape):
        raise LayoutError("compact_order", "order", "is not weakly congruent to the shape",
                          expected=fmt_int_tuple(shape), actual=order)
    ref_shape = flatten(wrap(it.product_like(shape, order)))
    ref_order = flatten(wrap(order))
    if not all(isinstance(o, int) for o in ref_order):
        # CuTe: a dynamic order element ranks after every static one, in mode order (it
        # becomes max_static + 1 + its position): make_ordered_layout((4,8), (1,P)) == (4,8):(1,4)
        top = max([0] + [o for o in ref_order if isinstance(o, int)])
        ref_order = tuple(o if isinstance(o, int) else top + 1 + i
                          for i, o in enumerate(ref_order))
        order = it.unflatten(ref_order, order)

    def rec(s, o):
        if isinstance(o, tuple):
            return tuple(rec(a, b) for a, b in _zip(s, o))
        start = 1
        for rs, ro in _zip(ref_shape, ref_order):
            if ro < o:
                start *= rs
        return compact_major(s, LayoutLeft, start)

    return rec(shape, order)


def _basis_as_int(t):
    """Strides may be ScaledBasis elements (coordinate layouts, ``cute_py.tensor.E``)."""
    if isinstance(t, tuple):
        return tuple(_basis_as_int(a) for a in t)
    return 1 if getattr(t, "_cute_scaled_basis", False) else t


def _check_shape(shape, op):
    _check(shape, op, "shape")
    for leaf in flatten(wrap(shape)):
        if isinstance(leaf, int) and leaf < 1:
            raise LayoutError(op, "shape", f"has a non-positive extent {leaf}",
                              expected="extents >= 1", actual=fmt_int_tuple(shape))


class Layout:
    """A CuTe layout ``shape:stride`` — a frozen, hashable function from coordinates to indices.

    ``Layout(shape, stride=None)``: ``stride`` defaults to the compact column-major strides
    (``LayoutLeft``; size-1 modes get stride 0). ``L(i)``, ``L(coord)``, ``L(c0, c1, ...)``
    evaluate; a coordinate holding ``_`` (or ``None``) slices and returns the sub-layout.
    Equality is structural (shape and stride), not functional.
    """

    __slots__ = ("shape", "stride", "_hash", "_flat")

    def __init__(self, shape, stride=None):
        if stride is None and _plain_shape(shape):
            stride = _compact_left(shape, 1)[0]
        if stride is not None:
            flat = _plain_flat(shape, stride)
            if flat is not None:
                # fast path: plain nested int tuples, congruent, positive extents (what the
                # algebra produces); everything else takes the validating path below
                _set_shape(self, shape)
                _set_stride(self, stride)
                _set_flat(self, flat)
                return
        if isinstance(shape, list):
            shape = _to_tuple(shape)
        if isinstance(stride, list):
            stride = _to_tuple(stride)
        _check_shape(shape, "Layout")
        if stride is None or stride is LayoutLeft:
            stride = compact_major(shape, LayoutLeft)
        elif stride is LayoutRight:
            stride = compact_major(shape, LayoutRight)
        else:
            _check(_basis_as_int(stride), "Layout", "stride")
            if not it.congruent(shape, stride):
                raise LayoutError("Layout", "stride", "is not congruent to the shape",
                                  expected=f"profile of {fmt_int_tuple(shape)}",
                                  actual=fmt_int_tuple(stride))
        _set_shape(self, shape)
        _set_stride(self, stride)
        _set_flat(self, _flat_of(shape, stride))

    @classmethod
    def _raw(cls, shape, stride, flat=None):
        """Internal constructor without validation: only for values the algebra built from
        validated layouts (plain congruent nests, extents >= 1). ``flat`` is the layout's
        :meth:`_flat_modes`, when the caller already has it."""
        self = _new(cls)
        _set_shape(self, shape)
        _set_stride(self, stride)
        _set_flat(self, _flat_of(shape, stride) if flat is None else flat)
        return self

    def _flat_modes(self):
        """``((s0, d0), (s1, d1), ...)`` of the flattened layout when every extent and stride is
        a plain int, else ``()``. A derived field computed once, in the constructor."""
        return self._flat

    # frozen value -----------------------------------------------------------------------------
    def __setattr__(self, name, value):
        raise AttributeError("Layout is immutable")

    def __delattr__(self, name):
        raise AttributeError("Layout is immutable")

    def __eq__(self, other):
        if not isinstance(other, Layout):
            return NotImplemented
        return _same(self.shape, other.shape) and _same(self.stride, other.stride)

    def __hash__(self):
        try:
            return self._hash
        except AttributeError:  # first call: the slot is unset until then
            h = hash(("Layout", self.shape, self.stride))
            _set_hash(self, h)
            return h

    def __reduce__(self):
        return (Layout, (self.shape, self.stride))

    # printing ---------------------------------------------------------------------------------
    def __str__(self):
        return f"{fmt_int_tuple(self.shape)}:{fmt_int_tuple(self.stride)}"

    def __repr__(self):
        return f"Layout({self.shape!r}, {self.stride!r})"

    def __format__(self, spec):
        return format(str(self), spec)

    # accessors --------------------------------------------------------------------------------
    def size(self):
        """Number of coordinates in the domain: ``product(shape)``."""
        f = self._flat
        if f:
            n = 1
            for s, _d in f:
                n *= s
            return n
        return product(self.shape)

    def cosize(self):
        """Extent of the codomain: ``sum((s-1)*|d|) + 1`` (correct for negative strides)."""
        f = self._flat
        if f:
            n = 1
            for s, d in f:
                n += (s - 1) * (d if d >= 0 else -d)
            return n
        return cosize(self)

    def rank(self) -> int:
        return it.rank(self.shape)

    def depth(self) -> int:
        return it.depth(self.shape)

    def __len__(self):
        return it.rank(self.shape)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, i):
        """Mode ``i`` as a layout (``get<i>``); a tuple ``(i, j)`` selects a nested mode."""
        return get(self, *(i if isinstance(i, tuple) else (i,)))

    # evaluation -------------------------------------------------------------------------------
    def __call__(self, *coord):
        if len(coord) == 1:
            i = coord[0]
            if type(i) is int and i >= 0:
                f = self._flat
                if f:  # plain ints: colexicographic digits; in range iff nothing is left over
                    r = 0
                    for s, d in f:
                        r += (i % s) * d
                        i //= s
                    if i == 0:
                        return r
                    # out of range: the checked path below raises
        if len(coord) == 0:
            raise IntTupleError("Layout.__call__", "coord", "is missing")
        c = coord[0] if len(coord) == 1 else tuple(coord)
        if isinstance(c, list):
            c = _to_tuple(c)
        if has_underscore(c):
            _check(c, "Layout.__call__", "coord", allow_underscore=True)
            return _slice(c, self)
        return crd2idx(c, self)

    # CuTe member functions --------------------------------------------------------------------
    # compose / with_shape / tile are the algebra's (cute_py.algebra installs them);
    # _repr_svg_ is the pictures' (cute_py.svg installs it).

    def get_hier_coord(self, idx):
        return get_hier_coord(self, idx)

    def get_flat_coord(self, idx):
        return get_flat_coord(self, idx)

    def get_1d_coord(self, idx):
        return get_1d_coord(self, idx)



_new = object.__new__
_set_shape = Layout.__dict__["shape"].__set__
_set_stride = Layout.__dict__["stride"].__set__
_set_hash = Layout.__dict__["_hash"].__set__
_set_flat = Layout.__dict__["_flat"].__set__


def _layout_raw(shape, stride, flat) -> Layout:
    """``Layout._raw`` for callers that have the flat modes (the algebra's fast paths)."""
    self = _new(Layout)
    _set_shape(self, shape)
    _set_stride(self, stride)
    _set_flat(self, flat)
    return self


def _flat_into(shape, stride, out) -> bool:
    """Append the ``(s, d)`` leaves of congruent tuples to ``out``; False at a non-int leaf."""
    for a, b in _zip(shape, stride):
        if type(a) is int:
            if type(b) is not int:
                return False
            out.append((a, b))
        elif type(a) is not tuple or type(b) is not tuple or not _flat_into(a, b, out):
            return False
    return True


def _flat_of(shape, stride) -> tuple:
    """The flat ``((s, d), ...)`` modes of a congruent shape and stride with plain-int leaves,
    else ``()``."""
    if type(shape) is int:
        return ((shape, stride),) if type(stride) is int else ()
    out = []
    ok = type(shape) is tuple and type(stride) is tuple and _flat_into(shape, stride, out)
    return tuple(out) if ok else ()


def _plain_flat_into(shape, stride, out) -> bool:
    """:func:`_flat_into` that also checks congruence, extents >= 1 and no empty tuple."""
    for a, b in _zip(shape, stride):
        if type(a) is int:
            if type(b) is not int or a < 1:
                return False
            out.append((a, b))
        elif type(a) is not tuple or type(b) is not tuple or len(a) != len(b) or not a \
                or not _plain_flat_into(a, b, out):
            return False
    return True


def _plain_flat(shape, stride):
    """The flat modes of ``shape:stride`` when both are congruent nests of plain ints with every
    extent >= 1 (and no empty tuple), else None."""
    if type(shape) is int:
        return ((shape, stride),) if type(stride) is int and shape >= 1 else None
    if type(shape) is not tuple or type(stride) is not tuple or len(shape) != len(stride) \
            or not shape:
        return None
    out = []
    return tuple(out) if _plain_flat_into(shape, stride, out) else None


def _plain_shape(shape) -> bool:
    """Is ``shape`` a nest of plain ints >= 1 (non-empty tuples)?"""
    if type(shape) is int:
        return shape >= 1
    if type(shape) is not tuple or not shape:
        return False
    for a in shape:
        if type(a) is int:
            if a < 1:
                return False
        elif not _plain_shape(a):
            return False
    return True


def _compact_left(shape, cur):
    """LayoutLeft strides of a plain shape from ``cur`` (size-1 modes: 0); returns (stride, next)."""
    if type(shape) is int:
        return (0 if shape == 1 else cur), cur * shape
    out = []
    for a in shape:
        d, cur = _compact_left(a, cur)
        out.append(d)
    return tuple(out), cur


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in _zip(a, b))
    if isinstance(b, tuple):
        return False
    return type(a) is type(b) and a == b if isinstance(a, int) else bool(a == b)


def _to_tuple(x):
    if isinstance(x, (list, tuple)):
        return tuple(_to_tuple(a) for a in x)
    return x


def is_layout(x) -> bool:
    return isinstance(x, Layout)


def _as_layout(x, op: str, arg: str) -> Layout:
    if isinstance(x, Layout):
        return x
    if hasattr(x, "layout") and isinstance(getattr(x, "layout"), Layout):  # tensors
        return x.layout
    raise LayoutError(op, arg, "must be a Layout", actual=f"{x!r}")


# ---------------------------------------------------------------------------------------------
# Construction


def make_shape(*xs):
    return tuple(xs)


make_stride = make_shape
make_coord = make_shape
make_step = make_shape


def make_tile(*xs):
    """A by-mode tiler: a tuple of layouts, ints or ``_``."""
    return tuple(xs)


def make_layout(*args, stride=None):
    """Build a layout.

    ``make_layout(shape, stride=None)`` (``stride`` may be ``LayoutLeft``/``LayoutRight``);
    ``make_layout(L0, L1, ...)`` concatenates layouts as modes; ``make_layout(L)`` wraps ``L``
    into a rank-1 tuple layout, as CuTe does.
    """
    if len(args) == 2 and stride is None:
        flat = _plain_flat(args[0], args[1])
        if flat is not None:  # plain congruent int nests: nothing to convert or validate
            return _layout_raw(args[0], args[1], flat)
    if not args:
        raise LayoutError("make_layout", "shape", "is missing")
    if all(isinstance(a, Layout) for a in args):
        if stride is not None:
            raise LayoutError("make_layout", "stride", "cannot be given with layout arguments")
        return _concat(args)
    if any(isinstance(a, Layout) for a in args):
        raise LayoutError("make_layout", "args", "mixes layouts and shapes",
                          actual=[type(a).__name__ for a in args])
    if len(args) == 2 and stride is None:
        shape, stride = args
    elif len(args) == 1:
        shape = args[0]
    else:
        raise LayoutError("make_layout", "args", "expects (shape, stride=None) or layouts",
                          actual=f"{len(args)} positional arguments")
    return Layout(_to_tuple(shape), _to_tuple(stride) if stride is not None else None)


def make_ordered_layout(shape, order):
    """Compact layout of ``shape`` whose strides increase in the order given by ``order``.

    ``make_ordered_layout((2,2,2,2), (0,2,3,1)) == (2,2,2,2):(1,4,8,2)``.
    """
    shape = _to_tuple(shape)
    _check_shape(shape, "make_ordered_layout")
    order = _to_tuple(order)
    _check(order, "make_ordered_layout", "order")
    return Layout(shape, compact_order(shape, order))


def make_layout_like(L):
    """Compact layout with L's shape whose strides are ordered like L's; stride-0 modes stay 0.

    ``make_layout_like((2,3,4,5):(0,42,1,0)) == (2,3,4,5):(0,4,1,0)``.
    """
    L = _as_layout(L, "make_layout_like", "layout")
    return Layout(L.shape, compact_order(it.filter_zeros(L.stride, L.shape), L.stride))


# ---------------------------------------------------------------------------------------------
# Accessors (free functions accept layouts, tensors and IntTuples)


def _unwrap_obj(x):
    if isinstance(x, Layout):
        return x
    lay = getattr(x, "layout", None)
    if isinstance(lay, Layout) or type(lay).__name__ == "ComposedLayout":
        return lay
    return x


def get(x, *modes):
    """``get<I, J, ...>``: a (nested) mode of a layout or IntTuple."""
    x = _unwrap_obj(x)
    for m in modes:
        if isinstance(x, Layout):
            if not isinstance(m, int) or isinstance(m, bool):
                raise LayoutError("get", "mode", "must be an int", actual=m)
            r = x.rank()
            if not -r <= m < r:
                raise LayoutError("get", "mode", f"is out of range for rank {r}", expected=f"[0, {r})", actual=m)
            if isinstance(x.shape, tuple):
                x = Layout(x.shape[m], x.stride[m])
        elif hasattr(x, "get_mode"):
            x = x.get_mode(m)
        else:
            if not isinstance(m, int) or isinstance(m, bool):
                raise IntTupleError("get", "mode", "must be an int", actual=repr(m))
            if not isinstance(x, tuple) and not is_int(x):
                raise IntTupleError("get", "x", "must be a Layout or an IntTuple", actual=repr(x))
            r = it.rank(x)
            if not -r <= m < r:
                raise IntTupleError("get", "mode", f"is out of range for rank {r}", actual=m)
            if isinstance(x, tuple):
                x = x[m]
    return x


layout = get


def shape(x, *modes):
    x = get(x, *modes)
    return x.shape if hasattr(x, "shape") and not isinstance(x, tuple) else x


def stride(x, *modes):
    x = get(x, *modes)
    if not hasattr(x, "stride") or isinstance(x, tuple):
        raise LayoutError("stride", "x", "must be a Layout (an IntTuple has no stride)",
                          actual=repr(x))
    return x.stride


def size(x, *modes):
    """Size of a layout/tensor/IntTuple or of one of its modes: ``size(L, 1)``."""
    if type(x) is Layout and not modes:
        return x.size()
    x = get(x, *modes)
    if hasattr(x, "size") and callable(x.size) and not isinstance(x, tuple):
        return x.size()
    _check(x, "size", "x")
    return product(x)


def rank(x, *modes):
    x = get(x, *modes)
    s = x.shape if hasattr(x, "shape") and not isinstance(x, tuple) else x
    return it.rank(s)


def depth(x, *modes):
    x = get(x, *modes)
    s = x.shape if hasattr(x, "shape") and not isinstance(x, tuple) else x
    return it.depth(s)


def coshape(L):
    """``inner_product(shape - 1, |stride|) + 1``: an int for an integer layout; for a coordinate
    layout (``E(i)`` strides) the tuple of per-mode extents, as CuTe's ``coshape``
    (``coshape((4,8):(1@0,1@1)) == (4,8)``). Law: ``size(coshape(L)) == cosize(L)``."""
    L = _unwrap_obj(L)
    if not isinstance(L, Layout):
        return L.coshape() if hasattr(L, "coshape") else product(L)
    f = L._flat
    if f:
        n = 1
        for s, d in f:
            n += (s - 1) * (d if d >= 0 else -d)
        return n
    m1 = _map_leaf(L.shape, lambda s: s - 1)
    co = it.inner_product(m1, it.abs_(L.stride))
    if getattr(co, "_cute_scaled_basis", False):
        co = co.as_arithmetic_tuple()
    if isinstance(co, tuple):
        return _map_leaf(_plain_tuple(co), lambda c: c + 1)
    return co + 1


def _plain_tuple(t):
    if isinstance(t, tuple):
        return tuple(_plain_tuple(a) for a in t)
    return t


def cosize(L, *modes):
    """Extent of the codomain: ``size(coshape(L))`` — for a layout ``max index + 1`` over its
    domain, correct for negative strides (``cosize(4:-1) == 4``)."""
    if type(L) is Layout and not modes:
        f = L._flat
        if f:
            n = 1
            for s, d in f:
                n += (s - 1) * (d if d >= 0 else -d)
            return n
    L = get(L, *modes)
    if isinstance(L, Layout):
        c = coshape(L)
        return product(c) if isinstance(c, tuple) else c
    if hasattr(L, "cosize"):
        return L.cosize()
    raise LayoutError("cosize", "layout", "must be a Layout", actual=repr(L))


def _map_leaf(t, f):
    if isinstance(t, tuple):
        return tuple(_map_leaf(a, f) for a in t)
    return f(t)


def crd2idx(coord, L, stride_=None):
    """``crd2idx(coord, layout)`` or ``crd2idx(coord, shape, stride=None)``."""
    if isinstance(L, Layout):
        coord = _to_tuple(coord)
        _check(coord, "crd2idx", "coord")
        _check_coord_profile(coord, L.shape, "crd2idx")
        return it._crd2idx(coord, L.shape, L.stride)
    coord = _to_tuple(coord)
    _check(coord, "crd2idx", "coord")
    _check_shape(L, "crd2idx")
    if stride_ is not None:
        _check(stride_, "crd2idx", "stride")
        if not it.congruent(L, stride_):
            raise IntTupleError("crd2idx", "stride", "is not congruent to the shape",
                                expected=fmt_int_tuple(L), actual=fmt_int_tuple(stride_))
    return it.crd2idx(coord, L, stride_)


def _check_coord_profile(c, s, op):
    """Coordinates must be weakly congruent to the shape and non-negative. A coordinate past
    its mode is evaluated as C++ and pycute do (``Layout(4,1)(6) == 6``: the strides continue
    the function past the domain; an int into a tuple mode wraps every sub-mode but the last)."""
    if isinstance(c, tuple):
        if not isinstance(s, tuple) or len(c) != len(s):
            raise IntTupleError(op, "coord", "does not match the layout's profile",
                                expected=fmt_int_tuple(s), actual=fmt_int_tuple(c))
        for a, b in _zip(c, s):
            _check_coord_profile(a, b, op)
    elif isinstance(c, int) and c < 0:
        # C++ truncates a negative coordinate's division and modulo, Python floors: refuse
        # rather than give an index C++ does not
        raise IntTupleError(op, "coord", "is negative", expected="coord >= 0", actual=c)


def _slice(c, L: Layout) -> Layout:
    if is_underscore(c):
        return L
    return Layout(it.slice_(c, L.shape), it.slice_(c, L.stride))


def _zero_underscores(c):
    if isinstance(c, tuple):
        return tuple(_zero_underscores(a) for a in c)
    return 0 if is_underscore(c) else c


def slice_and_offset(coord, L):
    """``(L(coord), offset)`` for a slicing coordinate: the sub-layout of the ``_`` modes and the
    index of the coordinate with every ``_`` set to 0. Law: ``L(c) == sub(c_) + offset``."""
    coord = _to_tuple(coord)
    L = _unwrap_obj(L)
    if not isinstance(L, Layout) and hasattr(L, "slice_and_offset"):
        return L.slice_and_offset(coord)
    L = _as_layout(L, "slice_and_offset", "layout")
    _check(coord, "slice_and_offset", "coord", allow_underscore=True)
    if isinstance(coord, tuple) and not isinstance(L.shape, tuple):
        raise IntTupleError("slice_and_offset", "coord", "is a tuple but the layout has rank 1",
                            expected=fmt_int_tuple(L.shape), actual=fmt_int_tuple(coord))
    z = _zero_underscores(coord)
    _check_coord_profile(z, L.shape, "slice_and_offset")
    return _slice(coord, L), it._crd2idx(z, L.shape, L.stride)


def get_hier_coord(L, idx):
    """The hierarchical coordinate of index ``idx`` of a compact layout: ``idx2crd(idx, shape, stride)``."""
    L = _as_layout(L, "get_hier_coord", "layout")
    if not is_int(idx):
        raise IntTupleError("get_hier_coord", "idx", "must be an int", actual=repr(idx))
    return it.idx2crd(idx, L.shape, L.stride)


def get_flat_coord(L, idx):
    """The rank-R coordinate (one 1-D coordinate per top-level mode) of index ``idx`` of a
    compact layout: ``crd2crd(get_hier_coord(idx), shape, (1,)*R)``."""
    L = _as_layout(L, "get_flat_coord", "layout")
    hc = get_hier_coord(L, idx)
    if isinstance(L.shape, tuple):
        return tuple(it.crd2idx(c, s) for c, s in _zip(hc, L.shape))
    return hc


def get_1d_coord(L, idx):
    """The 1-D (colexicographic) coordinate of index ``idx`` of a compact layout."""
    L = _as_layout(L, "get_1d_coord", "layout")
    return it.crd2idx(get_hier_coord(L, idx), L.shape)


# ---------------------------------------------------------------------------------------------
# Mode manipulation


def _modes(L: Layout):
    if isinstance(L.shape, tuple):
        return [Layout(s, d) for s, d in _zip(L.shape, L.stride)]
    return [L]


def _from_modes(modes) -> Layout:
    return _concat(modes)


def _range_check(op, B, E, R):
    if not (0 <= B < E <= R):
        raise LayoutError(op, "range", f"[{B}, {E}) is empty or outside the rank {R}",
                          expected=f"0 <= begin < end <= {R}", actual=(B, E))


def select(L, *modes):
    """The layout (or, for a tuple, the tuple) of the listed modes, in that order:
    ``select(L, 2, 0)``; ``select((4, 5, 6), 2, 0) == (6, 4)``."""
    if len(modes) == 1 and isinstance(modes[0], (tuple, list)):
        modes = tuple(modes[0])
    if isinstance(L, (tuple, list)):
        t = _to_tuple(L)
        for m in modes:
            if not is_int(m) or not isinstance(m, int) or not -len(t) <= m < len(t):
                raise IntTupleError("select", "modes", f"mode {m!r} is out of range for rank "
                                    f"{len(t)}", actual=modes)
        return tuple(t[m] for m in modes)
    L = _as_layout(L, "select", "layout")
    ms = _modes(L)
    for m in modes:
        if not isinstance(m, int) or not -len(ms) <= m < len(ms):
            raise LayoutError("select", "modes", f"mode {m} is out of range for rank {len(ms)}", actual=modes)
    return _from_modes([ms[m] for m in modes])


def take(L, begin, end):
    """Modes ``[begin, end)`` of ``L`` (CuTe's ``take<B,E>``), always a tuple layout; of a
    tuple, the tuple of those elements: ``take((4, 5, 6), 1, 3) == (5, 6)``."""
    if isinstance(L, (tuple, list)):
        t = _to_tuple(L)
        for name, v in (("begin", begin), ("end", end)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise IntTupleError("take", name, "must be an int", actual=repr(v))
        if not 0 <= begin < end <= len(t):
            raise IntTupleError("take", "range", f"[{begin}, {end}) is empty or outside the "
                                f"rank {len(t)}", expected=f"0 <= begin < end <= {len(t)}",
                                actual=(begin, end))
        return t[begin:end]
    L = _as_layout(L, "take", "layout")
    ms = _modes(L)
    _range_check("take", begin, end, len(ms))
    return _from_modes(ms[begin:end])


def group(L, begin, end):
    """Wrap modes ``[begin, end)`` into one mode (CuTe's ``group<B,E>``)."""
    L = _as_layout(L, "group", "layout")
    ms = _modes(L)
    _range_check("group", begin, end, len(ms))
    mid = _from_modes(ms[begin:end])
    return _from_modes(ms[:begin] + [mid] + ms[end:])


def append(L, x=None, n=None):
    """Append ``x`` (default ``1:0``) as a new last mode; with ``n``, pad with ``x`` up to rank ``n``."""
    L = _as_layout(L, "append", "layout")
    x = Layout(1, 0) if x is None else _as_layout(x, "append", "x")
    ms = _modes(L) if isinstance(L.shape, tuple) else [L]
    if n is None:
        return _from_modes(ms + [x])
    if n < len(ms):
        raise LayoutError("append", "n", f"is smaller than the rank {len(ms)}", actual=n)
    if n == 1 and not isinstance(L.shape, tuple):
        return L
    if n == len(ms) and isinstance(L.shape, tuple):
        return L
    return _from_modes(ms + [x] * (n - len(ms)))


def prepend(L, x=None, n=None):
    """Prepend ``x`` (default ``1:0``) as a new first mode; with ``n``, pad in front up to rank ``n``."""
    L = _as_layout(L, "prepend", "layout")
    x = Layout(1, 0) if x is None else _as_layout(x, "prepend", "x")
    ms = _modes(L)
    if n is None:
        return _from_modes([x] + ms)
    if n < len(ms):
        raise LayoutError("prepend", "n", f"is smaller than the rank {len(ms)}", actual=n)
    if n == 1 and not isinstance(L.shape, tuple):
        return L
    if n == len(ms) and isinstance(L.shape, tuple):
        return L
    return _from_modes([x] * (n - len(ms)) + ms)


def replace(L, i, x):
    """Replace mode ``i`` of ``L`` by the layout ``x``."""
    L = _as_layout(L, "replace", "layout")
    x = _as_layout(x, "replace", "x")
    ms = _modes(L)
    if not -len(ms) <= i < len(ms):
        raise LayoutError("replace", "i", f"is out of range for rank {len(ms)}", actual=i)
    ms[i] = x
    if len(ms) == 1 and not isinstance(L.shape, tuple):
        return x
    return _from_modes(ms)


def remove(L, i):
    """Remove mode ``i`` of ``L``."""
    L = _as_layout(L, "remove", "layout")
    ms = _modes(L)
    if not -len(ms) <= i < len(ms):
        raise LayoutError("remove", "i", f"is out of range for rank {len(ms)}", actual=i)
    del ms[i]
    return _from_modes(ms)


def _zip_t(t):
    if isinstance(t, tuple):
        if t and isinstance(t[0], tuple):
            n = len(t[0])
            for x in t:
                if not isinstance(x, tuple) or len(x) < n:
                    raise LayoutError("zip", "layout", "modes have mismatched ranks", actual=fmt_int_tuple(t))
            return tuple(tuple(x[j] for x in t) for j in range(n))
        return (t,)
    return t


def zip(*layouts):
    """Transpose a rank-R-of-rank-K layout into rank-K-of-rank-R: ``zip(((a,b),(c,d))) -> ((a,c),(b,d))``.

    With two or more layouts, zips their modes: ``zip(A, B)`` pairs ``A_i`` with ``B_i``.
    """
    if len(layouts) == 1:
        L = _as_layout(layouts[0], "zip", "layout")
        return Layout(_zip_t(L.shape), _zip_t(L.stride))
    Ls = [_as_layout(L, "zip", "layout") for L in layouts]
    return Layout(_zip_t(tuple(L.shape for L in Ls)), _zip_t(tuple(L.stride for L in Ls)))


def zip2_by(t, guide):
    """Split each mode of ``t`` by the guide's profile and gather the halves:
    ``((A,a),((B,b),(C,c)),d)`` with guide ``(_,(_,_))`` gives ``((A,(B,C)),(a,(b,c),d))``."""
    if isinstance(guide, tuple):
        if not isinstance(t, tuple) or len(t) < len(guide):
            raise LayoutError("zip2_by", "guide", "has more modes than the layout", actual=guide)
        split = [zip2_by(t[i], guide[i]) for i in range(len(guide))]
        return (tuple(s[0] for s in split), tuple(s[1] for s in split) + tuple(t[len(guide):]))
    if not isinstance(t, tuple) or len(t) != 2:
        raise LayoutError("zip2_by", "layout", "mode is not a (tile, rest) pair", actual=fmt_int_tuple(t))
    return t


def tile_unzip(L, tiler):
    """Gather the tile and rest parts of a by-mode divided/multiplied layout: ``((tiles...),(rests...))``."""
    L = _as_layout(L, "tile_unzip", "layout")
    if isinstance(tiler, Layout) or not isinstance(tiler, tuple):
        return L
    return Layout._raw(zip2_by(L.shape, tiler), zip2_by(L.stride, tiler))


def layout_table(L) -> list:
    """``[L(i) for i in range(size(L))]`` computed mode by mode (fast; colexicographic order)."""
    shp, std = flatten(wrap(L.shape)), flatten(wrap(L.stride))
    idx = [0]
    for s, d in _zip(shp, std):
        idx = [i + k * d for k in range(s) for i in idx]
    return idx


def transform_layout(f, *layouts):
    """Apply ``f`` mode by mode; with two layouts, tail modes of the longer are kept."""
    if len(layouts) == 1:
        return _concat([f(m) for m in _modes(layouts[0])])
    a, b = _modes(layouts[0]), _modes(layouts[1])
    R = min(len(a), len(b))
    return _concat([f(a[i], b[i]) for i in range(R)] + a[R:] + b[R:])


def _concat(modes) -> Layout:
    """CuTe's make_layout(L0, L1, ...): modes become the top-level modes (one layout is wrapped)."""
    shapes, strides, flat = [], [], ()
    for m in modes:
        shapes.append(m.shape)
        strides.append(m.stride)
        if flat is not None:
            f = m._flat
            flat = flat + f if f else None  # a mode without plain flat modes: recompute below
    return Layout._raw(tuple(shapes), tuple(strides), flat or None)


# ---------------------------------------------------------------------------------------------
# dice / slice of layouts, coprofile, transform_leaf


def slice(coord, x):  # noqa: A001 - CuTe's name
    """CuTe's ``slice(c, x)``: keep the modes of ``x`` at the ``_`` of ``c`` (flattening ``c``'s
    tuples). A layout gives ``make_layout(slice(c, shape), slice(c, stride))`` — the layout of
    ``L(c)`` without its offset; an IntTuple gives the tuple of kept elements.
    ``slice((1, _), (4,4):(1,8)) == (4):(8)``; ``slice((_, (_, 1)), (a, (b, c))) == (a, b)``.
    """
    return _by_coord(coord, x, "slice", it.slice_)


def dice(coord, x):
    """CuTe's ``dice(c, x)``: keep the modes of ``x`` at the integers of ``c`` (the complement
    of :func:`slice`). A layout gives ``make_layout(dice(c, shape), dice(c, stride))``;
    ``dice((1, _), (4,4):(1,8)) == (4):(1)``; ``dice((1, _, 1), (a, b, c)) == (a, c)``.
    """
    return _by_coord(coord, x, "dice", it.dice)


def _by_coord(coord, x, op, f):
    """``f(coord, x)`` for an IntTuple x, ``make_layout(f(coord, shape), f(coord, stride))``
    for a layout (the shared body of :func:`slice` and :func:`dice`)."""
    coord = _to_tuple(coord)
    _check(coord, op, "coord", allow_underscore=True)
    x = _unwrap_obj(x)
    if isinstance(x, Layout):
        _check_slice_profile(coord, x.shape, op)
        return Layout(f(coord, x.shape), f(coord, x.stride))
    x = _to_tuple(x)
    _check(x, op, "x", allow_underscore=True)
    return f(coord, x)


def _check_slice_profile(c, s, op):
    if isinstance(c, tuple):
        if not isinstance(s, tuple) or len(c) != len(s):
            raise IntTupleError(op, "coord", "does not match the layout's profile",
                                expected=fmt_int_tuple(s), actual=fmt_int_tuple(c))
        for a, b in _zip(c, s):
            _check_slice_profile(a, b, op)


def transform_leaf(t, f, *more):
    """CuTe's ``transform_leaf``: ``f`` applied to every leaf of ``t`` (and the matching leaves
    of the congruent tuples ``more``), keeping ``t``'s nesting.
    ``transform_leaf((1, (2, 3)), lambda x: x + 1) == (2, (3, 4))``.
    """
    if not callable(f):
        raise IntTupleError("transform_leaf", "f", "must be callable", actual=repr(f))

    def rec(a, bs):
        if isinstance(a, tuple):
            for b in bs:
                if not isinstance(b, tuple) or len(b) != len(a):
                    raise IntTupleError("transform_leaf", "t", "tuples are not congruent",
                                        expected=fmt_int_tuple(a), actual=repr(b))
            return tuple(rec(x, [b[i] for b in bs]) for i, x in enumerate(a))
        for b in bs:
            if isinstance(b, tuple):
                raise IntTupleError("transform_leaf", "t", "tuples are not congruent",
                                    expected=fmt_int_tuple(a), actual=fmt_int_tuple(b))
        return f(a, *bs)

    return rec(_to_tuple(t), [_to_tuple(b) for b in more])


def _coprofile_of(x):
    """The profile of a codomain value: 0 for an int, ``(0, ...)`` for a (nested) coordinate."""
    if getattr(x, "_cute_scaled_basis", False):
        x = x.as_arithmetic_tuple()
    if isinstance(x, tuple):
        return tuple(_coprofile_of(a) for a in x)
    return 0


def _sum_profile(a, b):
    """Merge two codomain profiles (ArithmeticTuple addition: the longer one wins, by mode)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        a = a if isinstance(a, tuple) else ()
        b = b if isinstance(b, tuple) else ()
        n = max(len(a), len(b))
        a = a + (0,) * (n - len(a))
        b = b + (0,) * (n - len(b))
        return tuple(_sum_profile(x, y) for x, y in _zip(a, b))
    return 0


def coprofile(L, *modes):
    """CuTe's ``coprofile``: a tuple of 0s congruent to the values of ``L`` — ``0`` for an
    integer layout, ``(0, 0)`` for ``(4,8):(1@0,1@1)``. Law: ``congruent(coprofile(L), L(i))``
    for every ``i`` (with ArithmeticTuple values as tuples).
    """
    L = _as_layout(get(L, *modes), "coprofile", "layout")
    p = 0
    for d in flatten(wrap(L.stride)):
        p = _sum_profile(p, _coprofile_of(d))
    return p
