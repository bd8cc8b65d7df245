"""Hypothesis strategies for property tests of your own layouts.

``import cute_py.testing`` needs `hypothesis <https://hypothesis.readthedocs.io>`_ (``import
cute_py`` does not). Every strategy draws frozen cute_py values::

    from hypothesis import given
    import cute_py as cute
    from cute_py.testing import composed_layouts

    @given(composed_layouts())
    def test_my_smem_layout_right_inverse(L):
        # "my smem layout composed with its right inverse is the identity"
        R = cute.right_inverse(L)
        for i in range(cute.size(R)):
            assert L(R(i)) == i

Strategies: :func:`int_tuples` (of a given profile), :func:`profiles`, :func:`shapes`,
:func:`layouts` (any strides incl. 0 and negative), :func:`compact_layouts`,
:func:`injective_layouts`, :func:`layouts_with_zero_strides`, :func:`nested_layouts`,
:func:`tilers` (tilers that divide a given layout), :func:`swizzles`, :func:`composed_layouts`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from . import int_tuple as it
from .algebra import left_inverse, right_inverse
from .composed import ComposedLayout
from .errors import LayoutError
from .layout import Layout, compact_order, make_layout
from .swizzle import Swizzle

__all__ = [
    "int_tuples", "profiles", "shapes", "layouts", "compact_layouts", "injective_layouts",
    "layouts_with_zero_strides", "nested_layouts", "tilers", "swizzles", "composed_layouts",
]

_EXTENTS = st.sampled_from([1, 2, 2, 2, 3, 4, 4, 5, 6, 8])


def profiles(max_rank: int = 3, max_depth: int = 2):
    """Profiles: ``0`` (a leaf) or nested tuples of profiles (leaves are 0)."""
    leaf = st.just(0)
    if max_depth <= 0:
        return leaf
    return st.one_of(leaf, st.lists(profiles(max_rank, max_depth - 1), min_size=1,
                                    max_size=max_rank).map(tuple))


def int_tuples(profile, min_value: int = 1, max_value: int = 8):
    """IntTuples congruent to ``profile`` with leaves in ``[min_value, max_value]``."""
    if isinstance(profile, tuple):
        return st.tuples(*(int_tuples(p, min_value, max_value) for p in profile))
    return st.integers(min_value, max_value)


def _leaves_to_shape(leaves, profile_draw):
    return it.unflatten(tuple(leaves), profile_draw) if isinstance(profile_draw, tuple) else leaves[0]


@st.composite
def shapes(draw, max_size: int = 256, max_rank: int = 3, max_depth: int = 2):
    """Shapes (ints or nested tuples) whose size is at most ``max_size``."""
    prof = draw(profiles(max_rank, max_depth))
    n = len(it.flatten(prof)) if isinstance(prof, tuple) else 1
    leaves, total = [], 1
    for _ in range(n):
        e = draw(_EXTENTS)
        if total * e > max_size:
            e = 1
        leaves.append(e)
        total *= e
    return _leaves_to_shape(leaves, prof)


@st.composite
def compact_layouts(draw, shape=None, **kw):
    """Compact layouts: the shape's leaves in a random stride order (a bijection onto
    ``[0, size)``)."""
    shape = draw(shapes(**kw)) if shape is None else shape
    flat = it.flatten(shape) if isinstance(shape, tuple) else (shape,)
    order = draw(st.permutations(range(len(flat))))
    strides = compact_order(tuple(flat), tuple(order))
    return Layout(shape, _leaves_to_shape(list(strides), shape))


@st.composite
def injective_layouts(draw, **kw):
    """Injective layouts with holes: compact over the shape plus hidden "gap" modes, whose
    strides are then dropped (``complement`` exists for these)."""
    shape = draw(shapes(**kw))
    flat = list(it.flatten(shape)) if isinstance(shape, tuple) else [shape]
    gaps = draw(st.lists(st.sampled_from([2, 3]), max_size=2))
    full = flat + gaps
    order = draw(st.permutations(range(len(full))))
    strides = compact_order(tuple(full), tuple(order))[: len(flat)]
    return Layout(shape, _leaves_to_shape(list(strides), shape))


@st.composite
def layouts_with_zero_strides(draw, **kw):
    """Injective layouts where some modes are broadcast (stride 0)."""
    L = draw(injective_layouts(**kw))
    flat_s = list(it.flatten(L.stride)) if isinstance(L.stride, tuple) else [L.stride]
    zero = draw(st.lists(st.booleans(), min_size=len(flat_s), max_size=len(flat_s)))
    if not any(zero):
        zero[0] = True
    new = [0 if z else d for z, d in zip(zero, flat_s)]
    return Layout(L.shape, _leaves_to_shape(new, L.shape))


@st.composite
def nested_layouts(draw, **kw):
    """Injective layouts whose shape has at least one nested mode."""
    kw.setdefault("max_depth", 2)
    L = draw(injective_layouts(**kw))
    if it.depth(L.shape) < 2:
        # nest the whole layout: (s):(d) -> ((s0,...),)
        shape = L.shape if isinstance(L.shape, tuple) else (L.shape,)
        stride = L.stride if isinstance(L.stride, tuple) else (L.stride,)
        return Layout((shape, 2), (stride, it.tuple_max(tuple(abs(d) for d in it.flatten(stride)))
                                   * it.product(shape) + 1))
    return L


@st.composite
def layouts(draw, **kw):
    """Any layout: random strides in ``[-8, 16]`` (stride 0 and negative strides included)."""
    shape = draw(shapes(**kw))
    n = len(it.flatten(shape)) if isinstance(shape, tuple) else 1
    strides = draw(st.lists(st.integers(-8, 16), min_size=n, max_size=n))
    return Layout(shape, _leaves_to_shape(strides, shape))


def _prefix_divisors(mode_shape):
    """Sizes ``d`` such that ``d:1`` divides a mode of this shape (CuTe's divisibility): a
    product of a prefix of its leaves times a divisor of the next leaf."""
    leaves = it.flatten(mode_shape) if isinstance(mode_shape, tuple) else (mode_shape,)
    out, pre = {1}, 1
    for s in leaves:
        for q in range(1, s + 1):
            if s % q == 0:
                out.add(pre * q)
        pre *= s
    return sorted(out)


@st.composite
def tilers(draw, layout, allow_underscore: bool = False):
    """Tilers that divide ``layout`` mode by mode: a tuple with one entry per leading top-level
    mode, each an int ``d`` or the layout ``d:1`` (or ``_`` with ``allow_underscore``), where ``d``
    evenly divides the mode (so ``logical_divide(layout, tiler)`` and ``zipped_divide`` are
    defined)."""
    L = layout.layout if not isinstance(layout, Layout) and hasattr(layout, "layout") else layout
    shape = L.shape if isinstance(L.shape, tuple) else (L.shape,)
    n = draw(st.integers(1, len(shape)))
    out = []
    for s in shape[:n]:
        d = draw(st.sampled_from(_prefix_divisors(s)))
        kind = draw(st.sampled_from(["int", "layout"] + (["underscore"] if allow_underscore else [])))
        out.append(it._ if kind == "underscore" else (Layout(d, 1) if kind == "layout" else d))
    return tuple(out)


@st.composite
def swizzles(draw, max_bits: int = 3, max_base: int = 4, max_shift: int = 5):
    """``Swizzle(B, M, S)`` with ``0 <= B <= max_bits``, ``0 <= M <= max_base``,
    ``B <= |S| <= max_shift`` and either sign of ``S``."""
    B = draw(st.integers(0, max_bits))
    M = draw(st.integers(0, max_base))
    lo = max(B, 1)
    S = draw(st.integers(lo, max(lo, max_shift)))
    if draw(st.booleans()):
        S = -S
    return Swizzle(B, M, S)


@st.composite
def composed_layouts(draw, offset: bool = False, invertible: bool = True, **kw):
    """``Sw o offset o L`` with ``L`` compact and at least one swizzle period in size (so the
    composed layout is a bijection onto ``[0, size)``, at most 1024 elements); ``offset=True``
    also draws offsets that are multiples of the period (keeping the bijection onto a shifted
    range).

    ``invertible=True`` (the default) keeps to the layouts whose ``right_inverse`` and
    ``left_inverse`` exist: CuTe re-expresses the swizzle in the inverse's domain only when the
    inverse carries the swizzle's bits to bits ("simple cases"; shared-memory layouts are), so a
    drawn ``L`` outside them is replaced by the column-major layout of its shape. With
    ``invertible=False`` any compact ``L`` is drawn."""
    sw = draw(swizzles(max_bits=3, max_base=3, max_shift=4))
    p = sw.period
    # shape: leaves multiplying to p * extra
    extra = draw(st.sampled_from([e for e in (1, 2, 4) if p * e <= 1024] or [1]))
    total = p * extra
    leaves = []
    while total > 1:
        f = draw(st.sampled_from([f for f in (2, 4, 8) if total % f == 0]))
        leaves.append(f)
        total //= f
    if not leaves:
        leaves = [1]
    split = draw(st.integers(0, len(leaves)))
    shape = tuple(leaves[:split]) + ((tuple(leaves[split:]),) if leaves[split:] else ())
    shape = shape if len(shape) > 1 else (shape[0] if shape else 1)
    L = draw(compact_layouts(shape=shape))
    off = draw(st.integers(0, 3)) * p if offset else 0
    C = ComposedLayout(sw, off, L)
    if invertible and not offset:
        try:
            right_inverse(C)
            left_inverse(C)
        except LayoutError:
            C = ComposedLayout(sw, off, make_layout(shape))
    return C
