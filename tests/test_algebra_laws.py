"""Hypothesis property tests of every law of the layout algebra (stated in the docstrings).

Inputs come from the seeded generator in ``strategies_core`` (nested shapes, size-1 modes,
stride 0, negative strides, non-powers of two). Operations may refuse an input with a
``CuteError`` (a precondition CuTe also checks); the law is tested whenever they accept it.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings, strategies as st

import cute_py as cute
from cute_py import Layout, _
from cute_py.errors import CuteError
from cute_py.int_tuple import flatten, product

from strategies_core import (
    compact_layouts, injective_layouts, layouts, random_injective_layout, random_layout,
    random_tiler, seeds, shapes,
)

N = settings(max_examples=150, deadline=None)


def values(L):
    return [L(i) for i in range(L.size())]


def ext(A, x):
    """A evaluated at a 1-D index past its domain the way CuTe does (last mode unbounded)."""
    return cute.crd2idx(x, A.shape, A.stride)


def attempt(f, *a):
    try:
        return f(*a)
    except CuteError:
        assume(False)


# ---------------------------------------------------------------------------------------------
# coalesce / filter


@N
@given(layouts(negative=True))
def test_coalesce_keeps_size_and_function_and_is_flat(L):
    R = cute.coalesce(L)
    assert R.size() == L.size()
    assert cute.depth(R) <= 1
    assert values(R) == values(L)


@N
@given(layouts(), seeds)
def test_coalesce_by_profile_is_by_mode_coalesce(L, seed):
    assume(isinstance(L.shape, tuple))
    rng = random.Random(seed)
    k = rng.randint(1, len(L.shape))
    R = cute.coalesce(L, (1,) * k)
    assert R.rank() == L.rank()
    for i in range(L.rank()):
        assert R[i] == (cute.coalesce(L[i]) if i < k else L[i])
    assert values(R) == values(L)


@N
@given(layouts())
def test_filter_keeps_image_and_drops_zeros(L):
    R = cute.filter(L)
    assert set(values(R)) == set(values(L))
    assert all(d != 0 for d in flatten((R.stride,))) or R == Layout(1, 0)


# ---------------------------------------------------------------------------------------------
# composition


@N
@given(layouts(negative=True), layouts())
def test_composition_law(A, B):
    R = attempt(cute.composition, A, B)
    assert cute.compatible(B.shape, R.shape)
    # Past A's domain the law needs A's last mode to be the one that grows: with a trailing
    # size-1 mode CuTe C++ itself composes along an earlier mode (see the pinned case below).
    past = any(B(i) >= A.size() for i in range(B.size()))
    flat = cute.flatten(A.shape)
    last = flat[-1] if isinstance(flat, tuple) else flat
    assume(not (past and last == 1))
    assert [R(i) for i in range(B.size())] == [ext(A, B(i)) for i in range(B.size())]


def test_composition_past_a_trailing_unit_mode_is_cutes():
    """Pinned from CuTe C++: composition(A, A) for A = (2,2,4,1):(4,12,48,48) is
    (2,2,4,1):(48,144,144,144), which differs from A(A(i)) at i = 3 (A(16) = 48 through the
    size-1 mode) -- the composition law holds inside A's domain only, in C++ as here."""
    A = cute.Layout((2, 2, 4, 1), (4, 12, 48, 48))
    assert str(cute.composition(A, A)) == "(2,2,4,1):(48,144,144,144)"


@N
@given(layouts(), seeds)
def test_bymode_composition_is_modewise(A, seed):
    assume(isinstance(A.shape, tuple))
    T = random_tiler(random.Random(seed), A)
    assume(isinstance(T, tuple))
    R = attempt(cute.composition, A, T)
    assert R.rank() == len(T)  # modes of A not covered by the tiler are dropped (C++)
    for i, t in enumerate(T):
        assert R[i] == (A[i] if t is _ else cute.composition(A[i], t))


@N
@given(layouts())
def test_composition_identities(A):
    assert cute.composition(A, _) == A
    R = cute.composition(A, Layout(A.size(), 1))
    assert values(R) == values(A)


# ---------------------------------------------------------------------------------------------
# complement


@N
@given(layouts(), st.integers(1, 4), st.integers(0, 3))
def test_complement_laws(L, k, extra):
    cot = cute.cosize(L) * k + extra
    R = attempt(cute.complement, L, cot)
    rv = values(R)
    assert all(a < b for a, b in zip(rv, rv[1:])), "ordered"
    image = set(values(L))
    assert not (set(rv) - {0}) & image, "disjoint"
    full = cute.make_layout(cute.filter(L), R)
    fv = values(full)
    assert len(set(fv)) == len(fv), "(filter(L), R) is injective"
    if _strides_nest(cute.filter(L)):
        # (CuTe's complement only checks that each quotient is non-zero; when the sorted strides
        # do not nest, e.g. (2,2):(5,1), the holes cannot be tiled and the fill law does not hold)
        assert cute.cosize(full) >= cot or cute.size(full) * 1 >= cot, "fills the cotarget"
        assert R.size() >= -(-cot // cute.cosize(cute.filter(L)))


def _strides_nest(L):
    modes = sorted(zip(cute.flatten(cute.wrap(L.shape)), cute.flatten(cute.wrap(L.stride))),
                   key=lambda m: m[1])
    cur = 1
    for s, d in modes:
        if d % cur:
            return False
        cur = s * d
    return True


def test_complement_shape_cotarget_examples():
    # (4,7) has size 28 and is statically divisible by 4 (02_layout_algebra.md)
    assert values(cute.complement(Layout(4, 1), (4, 7))) == values(cute.complement(Layout(4, 1), 28))
    # a shape cotarget folds like CuTe's ceil_div: ceil_div((2,2), 3) == (1,1)
    assert cute.complement(Layout(3, 1), (2, 2)) == Layout(1, 0)


# ---------------------------------------------------------------------------------------------
# inverses


@N
@given(layouts())
def test_right_inverse_law(L):
    R = cute.right_inverse(L)
    assert all(L(R(i)) == i for i in range(R.size()))


@N
@given(compact_layouts())
def test_right_inverse_of_compact_is_full(L):
    R = cute.right_inverse(L)
    assert R.size() == L.size()
    assert all(R(L(i)) == i for i in range(L.size()))


@N
@given(injective_layouts())
def test_left_inverse_law(L):
    R = attempt(cute.left_inverse, L)
    assert all(R(L(i)) == i for i in range(L.size()))


# ---------------------------------------------------------------------------------------------
# divides


def _tiler(seed, L):
    return random_tiler(random.Random(seed), L)


@N
@given(layouts(), seeds)
def test_logical_divide_definition(L, seed):
    T = _tiler(seed, L)
    R = attempt(cute.logical_divide, L, T)
    if isinstance(T, tuple):
        for i, t in enumerate(T):
            assert R[i] == (L[i] if t is _ else cute.logical_divide(L[i], t))
        for i in range(len(T), L.rank()):
            assert R[i] == L[i]
    else:
        Tl = T if isinstance(T, Layout) else Layout(T)
        star = cute.make_layout(Tl, cute.complement(Tl, cute.coalesce(L).shape))
        assert R == cute.composition(L, star)
        assert R[0] == cute.composition(L, Tl)


@N
@given(layouts(), seeds)
def test_zipped_tiled_flat_divides_rearrange_logical(L, seed):
    T = _tiler(seed, L)
    assume(T is not _)
    ld = attempt(cute.logical_divide, L, T)
    zd = attempt(cute.zipped_divide, L, T)
    td, fd = cute.tiled_divide(L, T), cute.flat_divide(L, T)
    if isinstance(T, tuple):
        assume(all(t is not _ for t in T))
        k = len(T)
        assert values(zd[0]) == values(cute.composition(L, T))
        assert [values(zd[0][i]) for i in range(k)] == [values(ld[i][0]) for i in range(k)]
        assert sorted(values(zd)) == sorted(values(ld))
    else:
        assert zd == ld  # a layout tiler: zipped == logical
        assert values(zd[0]) == values(cute.composition(L, T))
        assert sorted(values(td)) == sorted(values(ld)) == sorted(values(fd))
    for X in (zd, td, fd):
        assert X.size() == ld.size()


# ---------------------------------------------------------------------------------------------
# products


@N
@given(injective_layouts(max_size=16), layouts(max_leaves=3, max_size=12))
def test_logical_product_definition(A, B):
    R = attempt(cute.logical_product, A, B)
    assert R.rank() == 2
    assert R[0] == A
    assert cute.compatible(B.shape, R[1].shape)
    comp = cute.complement(A, A.size() * cute.cosize(B))
    assert R[1] == cute.composition(comp, B)


@N
@given(injective_layouts(max_size=16), seeds)
def test_product_flavours_rearrange_logical(A, seed):
    rng = random.Random(seed)
    if not isinstance(A.shape, tuple):      # a rank-1 tuple layout, not a filter (health check)
        A = cute.Layout((A.shape,), (A.stride,))
    B = tuple(rng.choice([_, rng.randint(1, 3)]) for _i in range(rng.randint(1, len(A.shape))))
    lp = attempt(cute.logical_product, A, B)
    zp = attempt(cute.zipped_product, A, B)  # a '_' mode has no (block, tile) pair to gather
    tp, fp = cute.tiled_product(A, B), cute.flat_product(A, B)
    k = len(B)
    for i in range(k):
        if B[i] is _:
            continue
        assert lp[i] == cute.logical_product(A[i], B[i])
    for X in (zp, tp, fp):
        assert X.size() == lp.size()
        assert sorted(values(X)) == sorted(values(lp))


@N
@given(injective_layouts(max_size=12), layouts(max_leaves=3, max_size=12))
def test_blocked_and_raked_products(A, B):
    bp = attempt(cute.blocked_product, A, B)
    rp = attempt(cute.raked_product, A, B)
    R = max(A.rank(), B.rank())
    assert bp.rank() == R and rp.rank() == R
    assert bp.size() == rp.size() == A.size() * B.size()
    assert sorted(values(bp)) == sorted(values(rp))
    pad_a = cute.append(A, n=R)
    for i in range(R):
        assert bp[i][0] == pad_a[i] and rp[i][1] == pad_a[i]


@N
@given(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=3), seeds)
def test_tile_to_shape_fills_the_target(bshape, seed):
    rng = random.Random(seed)
    block = Layout(tuple(bshape))
    trg = tuple(b * rng.randint(1, 3) for b in bshape)
    order = tuple(rng.sample(range(len(trg)), len(trg)))
    R = cute.tile_to_shape(block, trg, order)
    assert cute.product_each(R.shape) == trg
    assert sorted(values(R)) == list(range(product(trg)))


# ---------------------------------------------------------------------------------------------
# element-type changes and helpers


@N
@given(compact_layouts(), st.sampled_from([2, 4]))
def test_upcast_downcast_round_trip(L, n):
    C = cute.coalesce(L)
    assume(C != Layout(1, 0))
    D = cute.downcast(C, n)
    assert D.size() == C.size() * n
    assert cute.upcast(D, n) == C
    assert sorted(values(D)) == list(range(C.size() * n))


@N
@given(shapes(max_size=64), seeds, seeds)
def test_max_common_vector(shape, s1, s2):
    from strategies_core import random_compact_layout
    a = random_compact_layout(random.Random(s1), shape=shape)
    b = random_compact_layout(random.Random(s2), shape=shape)
    n = cute.max_common_vector(a, b)
    assert n >= 1
    common = cute.max_common_layout(a, b)
    assert common.size() == n
    assert all(a(common(i)) == i and b(common(i)) == i for i in range(n))
    if a == b:
        assert n == a.size() or cute.coalesce(a).rank() > 1 or cute.coalesce(a).stride != 1


@N
@given(layouts())
def test_nullspace(L):
    R = cute.nullspace(L)
    assert all(L(R(i)) == 0 for i in range(R.size()))
    zeros = [s for s, d in zip(flatten((L.shape,)), flatten((L.stride,))) if d == 0]
    assert R.size() == product(tuple(zeros))


@N
@given(injective_layouts())
def test_make_layout_like_and_fragment_like_are_compact(L):
    for f in (cute.make_layout_like, cute.make_fragment_like):
        R = f(L)
        assert R.size() == L.size()
        assert sorted(values(cute.filter(R))) == list(range(cute.size(cute.filter(R))))


@N
@given(shapes(), seeds)
def test_make_ordered_layout_is_compact_in_order(shape, seed):
    rng = random.Random(seed)
    fl = flatten((shape,))
    order = tuple(rng.sample(range(len(fl)), len(fl)))
    R = cute.make_ordered_layout(shape, cute.unflatten(order, shape)
                                 if isinstance(shape, tuple) else order[0])
    assert sorted(values(R)) == list(range(product(shape)))
    ds = [(o, d) for o, s, d in zip(order, fl, flatten((R.stride,))) if s != 1]
    ds.sort()
    assert [d for _o, d in ds] == sorted(d for _o, d in ds)


# ---------------------------------------------------------------------------------------------
# coordinates, printing and parsing


@N
@given(shapes(), seeds)
def test_crd2idx_idx2crd_round_trip(shape, seed):
    for i in range(product(shape)):
        c = cute.idx2crd(i, shape)
        assert cute.congruent(c, shape)
        assert cute.crd2idx(c, shape) == i


@N
@given(layouts(negative=True), seeds)
def test_layout_accepts_1d_rd_and_natural_coordinates(L, seed):
    i = random.Random(seed).randrange(L.size())
    nat = cute.idx2crd(i, L.shape)
    assert L(i) == L(nat) == cute.inner_product(nat, L.stride)
    if isinstance(L.shape, tuple):
        rd = tuple(cute.crd2idx(c, s) for c, s in zip(nat, L.shape))
        assert L(rd) == L(i)


@N
@given(layouts(negative=True))
def test_parse_print_round_trip(L):
    assert cute.parse_layout(str(L)) == L
    assert eval(repr(L), {"Layout": Layout}) == L


@N
@given(layouts(negative=True), seeds)
def test_slice_and_offset_law(L, seed):
    assume(isinstance(L.shape, tuple))
    rng = random.Random(seed)
    k = rng.randrange(len(L.shape))
    c = tuple(_ if j == k else rng.randrange(product(s)) for j, s in enumerate(L.shape))
    sub, off = cute.slice_and_offset(c, L)
    for x in range(sub.size()):
        full = tuple(x if j == k else cj for j, cj in enumerate(c))
        assert L(full) == sub(x) + off


@N
@given(layouts(negative=True))
def test_layouts_are_hashable_values(L):
    M = Layout(L.shape, L.stride)
    assert M == L and hash(M) == hash(L)
    assert {L: 1}[M] == 1


@pytest.mark.parametrize("L", [Layout(4, -1), Layout((2, 3), (-3, 1)), Layout((4, 2), (0, -2))])
def test_cosize_with_negative_strides(L):
    vals = values(L)  # C++: inner_product(shape - 1, |stride|) + 1 (pycute gets these wrong)
    assert cute.cosize(L) == max(vals) - min(vals) + 1
