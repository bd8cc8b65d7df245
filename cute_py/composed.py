"""``ComposedLayout``: ``A o offset o B`` for a non-linear ``A`` (a swizzle), CuTe's
``include/cute/layout_composed.hpp`` and ``swizzle_layout.hpp``.

``L(c) == A(offset + B(c))``. The domain (shape, size, rank, modes) is ``B``'s; the algebra —
divides, products, ``tile_to_shape``, ``coalesce``, ``filter``, ``flatten``, mode selection — is
applied to ``B`` keeping ``A`` and the offset. ``composition(Sw<0,M,S>, 0, L)`` is ``L`` itself
(CuTe drops the identity swizzle), so sub-layouts of an identity-swizzled layout are plain layouts.

Slicing a swizzled layout follows CuTe: the part of the coordinate that hits the swizzle's Y or Z
bits moves into the composed layout's offset; if the remaining layout no longer touches both a Y
bit and its Z partner, the swizzle is folded into strides and the result *decays* to a plain
layout plus an offset (``slice_and_offset``).

``smem_ptr_flag_bits(b)`` is CuTe's placeholder offset of the Hopper GMMA atoms: it marks a swizzle
that acts on the *byte* address of a shared-memory pointer of ``b``-bit elements. Evaluating or
slicing such a layout treats the flag as the ``0`` it derives from in C++; ``str`` prints
``Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)`` exactly as CuTe's ``print`` (C++'s
``operator<<`` prints the flag as ``_0``), while tensors and
``print_layout`` use its position-independent form (:func:`as_position_independent_swizzle_layout`,
the swizzle re-expressed on elements), exact when the shared-memory base is aligned to the
swizzle period.
"""

from __future__ import annotations

import sys

from . import int_tuple as it
from .algebra import (
    blocked_product, coalesce, complement, composition, downcast, filter as filt, filter_zeros,
    flat_divide, flat_product, flatten_layout, left_inverse, logical_divide, logical_product,
    raked_product, recast_layout, right_inverse, tile_to_shape, tiled_divide, tiled_product,
    upcast, zipped_divide, zipped_product,
)
from .errors import LayoutError, SymbolicError
from .int_tuple import _check, _crd2idx, has_underscore, is_underscore
from .layout import (
    _check_coord_profile, fmt_int_tuple, get, Layout, make_layout, _slice, slice_and_offset,
    _to_tuple, _zero_underscores,
)
from .swizzle import make_swizzle, Swizzle

__all__ = [
    "ComposedLayout", "make_composed_layout", "is_composed_layout", "smem_ptr_flag_bits",
    "smem_ptr_flag", "get_swizzle_portion", "get_nonswizzle_portion",
    "as_position_independent_swizzle_layout",
]


class smem_ptr_flag_bits:  # noqa: N801 - CuTe's name
    """CuTe's ``smem_ptr_flag_bits<B>``: an offset that is 0 and marks "the swizzle applies to the
    byte address of a shared-memory pointer to ``bits``-bit elements". Printed
    ``smem_ptr[16b](unset)``."""

    __slots__ = ("bits",)

    def __init__(self, bits: int = 1):
        if not isinstance(bits, int) or isinstance(bits, bool) or bits < 1:
            raise LayoutError("smem_ptr_flag_bits", "bits", "must be a positive int", actual=repr(bits))
        object.__setattr__(self, "bits", bits)

    def __setattr__(self, name, value):
        raise AttributeError("smem_ptr_flag_bits is immutable")

    def __eq__(self, other):
        return isinstance(other, smem_ptr_flag_bits) and other.bits == self.bits

    def __hash__(self):
        return hash(("smem_ptr_flag_bits", self.bits))

    def __reduce__(self):
        return (smem_ptr_flag_bits, (self.bits,))

    def __str__(self):
        return f"smem_ptr[{self.bits}b](unset)"

    def __repr__(self):
        return f"smem_ptr_flag_bits({self.bits})"


smem_ptr_flag = smem_ptr_flag_bits(1)


def _is_flag(o) -> bool:
    return isinstance(o, smem_ptr_flag_bits)


def _check_offset(o, op):
    if _is_flag(o) or it.is_int(o):
        return o
    raise LayoutError(op, "offset", "must be an int or smem_ptr_flag_bits", actual=repr(o))


class ComposedLayout:
    """CuTe's ``ComposedLayout<A, Offset, B>``: the function ``c -> A(offset + B(c))``.

    ``A`` is a :class:`~cute_py.swizzle.Swizzle`, a :class:`~cute_py.layout.Layout` or another
    composed layout; ``B`` is a :class:`~cute_py.layout.Layout` and defines the domain. Frozen and
    hashable; equal when ``A``, ``offset`` and ``B`` are equal. ``stride`` is undefined (as in
    CuTe). Printed ``A o offset o B``: ``Sw<3,4,3> o 0 o (8,64):(64,1)``.
    """

    __slots__ = ("layout_a", "offset", "layout_b", "_hash")

    def __init__(self, layout_a, offset, layout_b):
        if not isinstance(layout_a, (Swizzle, Layout, ComposedLayout)):
            raise LayoutError("ComposedLayout", "layout_a", "must be a Swizzle, Layout or ComposedLayout",
                              actual=repr(layout_a))
        if not isinstance(layout_b, (Layout, ComposedLayout)):
            # a composed layout as B: CuTe's composition of two composed layouts nests them
            raise LayoutError("ComposedLayout", "layout_b", "must be a Layout or a ComposedLayout",
                              actual=repr(layout_b))
        _check_offset(offset, "ComposedLayout")
        object.__setattr__(self, "layout_a", layout_a)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "layout_b", layout_b)
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name, value):
        raise AttributeError("ComposedLayout is immutable")

    def __eq__(self, other):
        if not isinstance(other, ComposedLayout):
            return NotImplemented
        return (self.layout_a == other.layout_a and self.layout_b == other.layout_b
                and type(self.offset) is type(other.offset) and bool(self.offset == other.offset))

    def __hash__(self):
        h = self._hash
        if h is None:
            h = hash(("ComposedLayout", self.layout_a, self.offset, self.layout_b))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self):
        return (ComposedLayout, (self.layout_a, self.offset, self.layout_b))

    def __str__(self):
        return f"{self.layout_a} o {_fmt_offset(self.offset)} o {self.layout_b}"

    def __repr__(self):
        return f"make_composed_layout({self.layout_a!r}, {self.offset!r}, {self.layout_b!r})"

    def __format__(self, spec):
        return format(str(self), spec)

    # accessors ----------------------------------------------------------------------------
    @property
    def shape(self):
        return self.layout_b.shape

    @property
    def stride(self):
        raise LayoutError("ComposedLayout.stride", None, "is undefined for a composed layout (CuTe "
                          "deletes it); use get_nonswizzle_portion(L).stride")

    def size(self):
        return self.layout_b.size()

    def cosize(self):
        """CuTe: the codomain size of ``B`` (a swizzle permutes within its period)."""
        return self.layout_b.cosize()

    def rank(self) -> int:
        return self.layout_b.rank()

    def depth(self) -> int:
        return self.layout_b.depth()

    def __len__(self):
        return self.layout_b.rank()

    def get_mode(self, i):
        return _compose3(self.layout_a, self.offset, get(self.layout_b, i))

    def __getitem__(self, i):
        return get(self, *(i if isinstance(i, tuple) else (i,)))

    def __iter__(self):
        for i in range(len(self)):
            yield self.get_mode(i)

    # evaluation ---------------------------------------------------------------------------
    def __call__(self, *coord):
        """``A(offset + B(c))``; a coordinate with ``_`` slices (see :func:`slice_and_offset`)."""
        if not coord:
            raise LayoutError("ComposedLayout.__call__", "coord", "is missing")
        c = coord[0] if len(coord) == 1 else tuple(coord)
        c = _to_tuple(c)
        if has_underscore(c):
            return self.slice_and_offset(c)[0]
        return _apply_a(self.layout_a, _off(self.offset) + self.layout_b(c))

    def slice_and_offset(self, coord):
        """``(sub, off)`` with ``self(c) == sub(c_) + off`` for every completion ``c`` of the
        slicing coordinate (``c_`` = the coordinates of the ``_`` modes)."""
        coord = _to_tuple(coord)
        if isinstance(self.layout_b, ComposedLayout):  # A o off o (composed B): slice B
            sub, off = self.layout_b.slice_and_offset(coord)
            return _compose3(self.layout_a, _off(self.offset) + off, sub), 0
        if isinstance(self.layout_a, Swizzle):
            return _swizzle_slice_and_offset(coord, self)
        sub, off = slice_and_offset(coord, self.layout_b)
        return ComposedLayout(self.layout_a, _off(self.offset) + off, sub), 0

    def compose(self, *others):
        return composition(self, others[0] if len(others) == 1 else tuple(others))

    def with_shape(self, *shape):
        return self.compose(make_layout(_to_tuple(shape[0] if len(shape) == 1 else shape)))

    def tile(self, *tiler):
        return tiled_divide(self, tiler[0] if len(tiler) == 1 else tuple(tiler))

    # algebra hooks --------------------------------------------------------------------------
    def _on_b(self, f):
        return _compose3(self.layout_a, self.offset, f(self.layout_b))

    def _cute_compose(self, tiler):
        return self._on_b(lambda b: composition(b, tiler))

    def _cute_rcompose(self, a):
        """``composition(Layout a, A o 0 o B) == composition(composition(a, A), B)`` (offset 0)."""
        if not _is_zero(_off(self.offset)):
            raise LayoutError("composition", "rhs", "must have offset 0 when composed on the right "
                              "of a layout (CuTe: 'Require offset == 0')", actual=str(self))
        return composition(composition(a, self.layout_a), self.layout_b)

    def _cute_coalesce(self, profile=None):
        return self._on_b(lambda b: coalesce(b, profile))

    def _cute_filter(self, profile=None):
        return self._on_b(lambda b: filt(b, profile))

    def _cute_filter_zeros(self, profile=None):
        return self._on_b(lambda b: filter_zeros(b, profile))

    def _cute_flatten(self):
        return self._on_b(flatten_layout)

    def _cute_complement(self, cotarget=None):
        return complement(self.layout_b, self.cosize() if cotarget is None else cotarget)

    def _cute_right_inverse(self):
        return _inverse(self, "right_inverse")

    def _cute_left_inverse(self):
        return _inverse(self, "left_inverse")

    def _cute_logical_divide(self, tiler):
        return self._on_b(lambda b: logical_divide(b, tiler))

    def _cute_zipped_divide(self, tiler):
        return self._on_b(lambda b: zipped_divide(b, tiler))

    def _cute_tiled_divide(self, tiler):
        return self._on_b(lambda b: tiled_divide(b, tiler))

    def _cute_flat_divide(self, tiler):
        return self._on_b(lambda b: flat_divide(b, tiler))

    def _cute_logical_product(self, tiler):
        return self._on_b(lambda b: logical_product(b, tiler))

    def _cute_zipped_product(self, tiler):
        return self._on_b(lambda b: zipped_product(b, tiler))

    def _cute_tiled_product(self, tiler):
        return self._on_b(lambda b: tiled_product(b, tiler))

    def _cute_flat_product(self, tiler):
        return self._on_b(lambda b: flat_product(b, tiler))

    def _cute_blocked_product(self, tiler):
        return self._on_b(lambda b: blocked_product(b, tiler))

    def _cute_raked_product(self, tiler):
        return self._on_b(lambda b: raked_product(b, tiler))

    def _cute_tile_to_shape(self, trg_shape, order=None):
        return self._on_b(lambda b: tile_to_shape(b, trg_shape, order))

    def _cute_upcast(self, n):
        """``upcast<N>``: each part upcast; a ``smem_ptr_flag_bits<b>`` keeps the swizzle (it acts
        on bytes) and becomes ``smem_ptr_flag_bits<b*N>``."""
        if _is_flag(self.offset):
            return _compose3(self.layout_a, smem_ptr_flag_bits(self.offset.bits * n),
                             upcast(self.layout_b, n))
        return _compose3(_recast_a(self.layout_a, n, "upcast"), _recast_offset(self.offset, n, "upcast"),
                         upcast(self.layout_b, n))

    def _cute_downcast(self, n):
        if _is_flag(self.offset):
            if self.offset.bits % n:
                raise LayoutError("downcast", "n", f"does not divide the flag's {self.offset.bits} bits",
                                  actual=n)
            return _compose3(self.layout_a, smem_ptr_flag_bits(self.offset.bits // n),
                             downcast(self.layout_b, n))
        return _compose3(_recast_a(self.layout_a, n, "downcast"),
                         _recast_offset(self.offset, n, "downcast"), downcast(self.layout_b, n))

    def _cute_print_form(self):
        """What ``print_layout`` shows (CuTe prints flagged layouts position-independently)."""
        return as_position_independent_swizzle_layout(self)


def _fmt_offset(o) -> str:
    if _is_flag(o):
        # CuTe's print(): smem_ptr[16b](unset) (its operator<< prints the Int<0> the flag
        # derives from; print() is what CuTe users see)
        return str(o)
    if isinstance(o, tuple):
        return fmt_int_tuple(o)
    return str(o).replace(" ", "")


def _off(o):
    """The offset's value: ``smem_ptr_flag_bits`` is CuTe's ``Int<0>`` in arithmetic."""
    return 0 if _is_flag(o) else o


def _is_zero(o) -> bool:
    return isinstance(o, int) and not isinstance(o, bool) and o == 0


def _apply_a(a, idx):
    if isinstance(a, Swizzle):
        return a(idx)
    if isinstance(a, Layout):
        return a(idx)
    return a(idx)


def _recast_a(a, n, op):
    return upcast(a, n) if op == "upcast" else downcast(a, n)


def _recast_offset(o, n, op):
    if op == "downcast":
        return o * n
    if isinstance(o, int):
        if o % n:
            raise LayoutError("upcast", "offset", f"{o} is not divisible by {n}", actual=o)
        return o // n
    return it._floordiv(o, n)


def _inverse(cl: ComposedLayout, which: str):
    inv = right_inverse if which == "right_inverse" else left_inverse
    if _is_zero(_off(cl.offset)):
        # CuTe: composition(inv(B), A) — the swizzle is its own inverse.
        a_inv = cl.layout_a if isinstance(cl.layout_a, Swizzle) else inv(cl.layout_a)
        return composition(inv(cl.layout_b), a_inv)
    if isinstance(cl.layout_a, Swizzle):
        raise LayoutError(which, "layout", "of a swizzled layout with a non-zero offset is not "
                          "supported (slice it first or use offset 0)", actual=str(cl))
    return _compose3(inv(cl.layout_b), -cl.offset, inv(cl.layout_a)) \
        if isinstance(inv(cl.layout_a), Layout) else composition(inv(cl.layout_b), inv(cl.layout_a))


def is_composed_layout(x) -> bool:
    return isinstance(x, ComposedLayout)


def _as_inner(x, op):
    if isinstance(x, Layout):
        return x
    if isinstance(x, (int, tuple)) and not isinstance(x, bool):
        return make_layout(_to_tuple(x))
    raise LayoutError(op, "rhs", "must be a Layout or a shape to compose with a swizzle",
                      actual=repr(x))


def _compose3(a, offset, b):
    """CuTe's three-argument ``composition(A, offset, B)``: ``ComposedLayout(A, offset, B)``, except
    that the identity swizzle with offset 0 gives ``B`` itself."""
    if isinstance(a, Swizzle) and a.num_bits == 0 and _is_zero(offset) and isinstance(b, Layout):
        return b
    return ComposedLayout(a, offset, b)


def make_composed_layout(layout_a, offset, layout_b) -> ComposedLayout:
    """CuTe's ``make_composed_layout(A, offset, B)`` (C++ argument order: outer function first):
    the layout ``c -> A(offset + B(c))``. Always a :class:`ComposedLayout` (even for an identity
    swizzle). The Python CuTe DSL spells this ``make_composed_layout(inner, offset, outer)`` with
    the same argument positions.
    """
    if isinstance(layout_b, (int, tuple)) and not isinstance(layout_b, bool):
        layout_b = make_layout(_to_tuple(layout_b))
    return ComposedLayout(layout_a, offset, layout_b)


def get_swizzle_portion(L) -> Swizzle:
    """The swizzle of ``Sw o off o B``; ``Swizzle(0, 4, 3)`` (the identity) for a plain layout."""
    L = _unwrap(L)
    if isinstance(L, ComposedLayout) and isinstance(L.layout_a, Swizzle):
        return L.layout_a
    if isinstance(L, Layout):
        return Swizzle(0, 4, 3)
    raise LayoutError("get_swizzle_portion", "layout", "must be a Layout or a swizzled ComposedLayout",
                      actual=repr(L))


def get_nonswizzle_portion(L) -> Layout:
    """``B`` of ``Sw o off o B``; a plain layout is its own non-swizzle portion."""
    L = _unwrap(L)
    if isinstance(L, ComposedLayout) and isinstance(L.layout_a, Swizzle):
        return L.layout_b
    if isinstance(L, Layout):
        return L
    raise LayoutError("get_nonswizzle_portion", "layout", "must be a Layout or a swizzled "
                      "ComposedLayout", actual=repr(L))


def _unwrap(L):
    if isinstance(L, (Layout, ComposedLayout)):
        return L
    lay = getattr(L, "layout", None)
    return lay if isinstance(lay, (Layout, ComposedLayout)) else L


def as_position_independent_swizzle_layout(L):
    """``Sw o smem_ptr[b] o B`` -> ``recast(Sw, 8 -> b bits) o 0 o B``: the swizzle re-expressed on
    element offsets (exact for a shared-memory base aligned to the swizzle period). Other layouts
    are returned unchanged. ``Sw<3,4,3> o smem_ptr[16b](unset) o (8,64):(64,1)`` ->
    ``Sw<3,3,3> o 0 o (8,64):(64,1)``.
    """
    L = _unwrap(L)
    if not (isinstance(L, ComposedLayout) and _is_flag(L.offset)):
        return L
    sw = L.layout_a
    if not isinstance(sw, Swizzle):
        raise LayoutError("as_position_independent_swizzle_layout", "layout", "must have a Swizzle "
                          "as its outer function", actual=str(L))
    new_sw = recast_layout(sw, 8, L.offset.bits) if L.offset.bits != 8 else sw
    return _compose3(new_sw, 0, L.layout_b)


# ---------------------------------------------------------------------------------------------
# Slicing a swizzled composed layout (CuTe swizzle_layout.hpp, all values static)


def _all_underscore(c) -> bool:
    if isinstance(c, tuple):
        return all(_all_underscore(x) for x in c)
    return is_underscore(c)


def _dice_layout(c, L: Layout) -> Layout:
    if isinstance(c, tuple):
        return Layout(it.dice(c, L.shape), it.dice(c, L.stride))
    return L


def _swizzle_strides(z_low: bool, Z: int, Y: int, offset: int, B: int):
    if z_low:
        return tuple((Z << i) if (offset & (Y << i)) == 0 else -(Z << i) for i in range(B))
    return tuple(((Y + Z) << i) if (offset & (Z << i)) == 0 else ((Y - Z) << i) for i in range(B))


def _swizzle_slice_and_offset(coord, cl: ComposedLayout):
    sw: Swizzle = cl.layout_a
    L: Layout = cl.layout_b
    _check(coord, "slice_and_offset", "coord", allow_underscore=True)
    if isinstance(coord, tuple) and not isinstance(L.shape, tuple):
        raise LayoutError("slice_and_offset", "coord", "is a tuple but the layout has rank 1",
                          expected=fmt_int_tuple(L.shape), actual=fmt_int_tuple(coord))
    _check_coord_profile(_zero_underscores(coord), L.shape, "slice_and_offset")
    if _all_underscore(coord):
        return _compose3(sw, cl.offset, _slice(coord, L)), 0
    if not (isinstance(_off(cl.offset), int) and it.is_static(it.dice(coord, coord) if isinstance(coord, tuple) else coord)
            and it.is_static(L.stride)):
        raise SymbolicError("slice_and_offset", "coord", f"slices the swizzled layout {cl} with "
                            "symbolic values; a swizzle needs concrete offsets", actual=str(coord))
    B_, M_, S_ = sw.num_bits, sw.num_base, sw.num_shft
    aS = abs(S_)
    sh = (1 << M_, 1 << B_, 1 << (aS - B_), 1 << B_, 1)
    anti_zy = Layout(sh, (1, 0, 1 << (M_ + B_), 0, 1 << (M_ + B_ + aS)))
    only_zy = Layout(sh, (0, 1 << M_, 0, 1 << (M_ + aS), 0))
    sliced = _slice(coord, L)
    diced = _dice_layout(coord, L)
    diced_coord = it.dice(coord, coord) if isinstance(coord, tuple) else coord
    diced_anti = composition(anti_zy, diced)
    diced_only = composition(only_zy, diced)
    offset_only_zy = _off(cl.offset) ^ diced_only(diced_coord)
    offset_anti_zy = diced_anti(diced_coord)
    sliced_only = composition(only_zy, sliced)
    active = sliced_only(sliced_only.size() - 1)
    if active & ~sw(active):
        # The remaining layout hits a Y bit and its Z partner: keep the swizzle.
        return _compose3(sw, offset_only_zy, sliced), offset_anti_zy
    zm, ym = sw.zzz_msk, sw.yyy_msk
    Z = zm & -zm
    Y = ym & -ym
    lo = _swizzle_strides(Z < Y, Z, Y, offset_only_zy, B_)
    hi = _swizzle_strides(Z > Y, Z, Y, offset_only_zy, B_)
    two = (2,) * B_
    swl = Layout((1 << M_, two, 1 << (aS - B_), two, 1),
                 (1, lo, 1 << (M_ + B_), hi, 1 << (M_ + B_ + aS)))
    return composition(swl, sliced), sw(offset_only_zy) + offset_anti_zy


# ---------------------------------------------------------------------------------------------
# Swizzle o Layout and Layout o Swizzle: they make composed layouts, so they are written here and
# installed on Swizzle (swizzle.py stays below this module).


def _swizzle_compose(self, other):
    """``composition(Swizzle, X)``: a swizzle with a swizzle of equal shift merges; with a
    layout (or int/tiler) gives the composed layout ``Sw o 0 o X``."""
    if isinstance(other, Swizzle):
        if other.num_shft != self.num_shft:
            raise LayoutError("composition", "rhs", f"{self} and {other} have different shifts; "
                              "CuTe only merges swizzles of the same shift",
                              expected=f"S == {self.num_shft}", actual=str(other))
        return make_swizzle(self.yyy_msk ^ other.yyy_msk, self.zzz_msk ^ other.zzz_msk)
    return _compose3(self, 0, _as_inner(other, "composition"))


def _swizzle_rcompose(self, A):
    """``composition(Layout A, Swizzle)``: the swizzle re-expressed in A's domain,
    ``composition(make_swizzle(A(yyy_msk), A(zzz_msk)), A)`` (CuTe's "simple cases")."""
    if not isinstance(A, Layout):
        raise LayoutError("composition", "lhs", "must be a Layout to compose with a Swizzle",
                          actual=repr(A))
    if self.num_bits == 0:
        return A

    def ev(i):  # CuTe evaluates 1-D coordinates past the size (the last mode extends)
        return _crd2idx(i, A.shape, A.stride)

    y, z = ev(self.yyy_msk), ev(self.zzz_msk)
    why = f"{A} does not carry the Y and Z bits of {self} to the bits of a swizzle (CuTe's " \
          "composition(Layout, Swizzle) only handles these 'simple cases')"
    try:
        sw = make_swizzle(y, z) if isinstance(y, int) and isinstance(z, int) and y >= 0 and z >= 0 \
            else None
    except LayoutError:
        sw = None
    if sw is None:
        raise LayoutError("composition", "lhs", why, actual=str(A))
    R = _compose3(sw, 0, A)
    n = A.size()
    if isinstance(n, int):
        # C++ would return R unchecked; we verify R(x) == A(sw(x)) on A's domain (capped).
        for x in range(min(n, 1 << 14)):
            if R(x) != ev(self.apply(x)):
                raise LayoutError("composition", "lhs", why, actual=str(A))
    return R


def composition_sw_layout(sw: Swizzle, L):
    """``composition(sw, L)`` = ``sw o 0 o L`` (the identity swizzle gives ``L``)."""
    return _compose3(sw, 0, L)


Swizzle._cute_compose = _swizzle_compose
Swizzle._cute_rcompose = _swizzle_rcompose
sys.modules[Swizzle.__module__].composition_sw_layout = composition_sw_layout  # old import path
