"""Swizzle laws and CuTe's documented swizzle facts."""

import pytest
from hypothesis import given, strategies as st

import cute_py as cute
from cute_py import Swizzle, make_swizzle, LayoutError, SymbolicError
from cute_py.testing import swizzles


def test_sw343_formula():
    sw = Swizzle(3, 4, 3)
    assert str(sw) == "Sw<3,4,3>"
    assert repr(sw) == "Swizzle(3, 4, 3)"
    assert sw.yyy_msk == 0x380 and sw.zzz_msk == 0x70
    for o in range(4096):
        assert sw(o) == o ^ ((o & 0x380) >> 3)


def test_negative_shift_moves_bits_left():
    sw = Swizzle(2, 0, -3)
    assert sw.yyy_msk == 0b11 and sw.zzz_msk == 0b11000
    for o in range(64):
        assert sw(o) == o ^ ((o & 0b11) << 3)


def test_identity_swizzle_does_not_recurse():
    sw = Swizzle(0, 4, 3)
    assert sw.is_identity()
    assert [sw(i) for i in range(300)] == list(range(300))
    # composing the identity swizzle with a layout gives the layout itself
    L = cute.make_layout((8, 8), (8, 1))
    assert cute.composition(sw, L) == L


def test_make_swizzle_from_masks():
    assert make_swizzle(0b1000, 0b0100) == Swizzle(1, 2, 1)
    assert make_swizzle(0b11000000, 0b00000110) == Swizzle(2, 1, 5)
    assert make_swizzle(3, 4, 3) == Swizzle(3, 4, 3)


def test_swizzle_values_are_frozen_and_hashable():
    a, b = Swizzle(3, 4, 3), Swizzle(3, 4, 3)
    assert a == b and hash(a) == hash(b) and len({a, b, Swizzle(2, 4, 3)}) == 2
    with pytest.raises(AttributeError):
        a.num_bits = 2


@pytest.mark.parametrize("args", [(-1, 4, 3), (3, -1, 3), (3, 4, 2), (3, 4, -2), (1.5, 4, 3)])
def test_invalid_parameters_raise(args):
    with pytest.raises(LayoutError):
        Swizzle(*args)


def test_make_swizzle_failures():
    with pytest.raises(LayoutError):
        make_swizzle(0b1100, 0b0001)  # different bit counts
    with pytest.raises(LayoutError):
        make_swizzle(0b1010, 0b0101)  # not contiguous runs
    with pytest.raises(LayoutError):
        make_swizzle(1, 2, 3, 4)


def test_swizzle_compose_equal_shift_merges_and_other_shift_raises():
    a, b = Swizzle(1, 4, 3), Swizzle(1, 5, 3)
    ab = cute.composition(a, b)
    assert ab == Swizzle(2, 4, 3)
    for o in range(1024):
        assert ab(o) == a(b(o))
    with pytest.raises(LayoutError):
        cute.composition(Swizzle(1, 4, 3), Swizzle(1, 4, 4))


def test_symbolic_offset_raises_symbolic_error():
    import sympy
    with pytest.raises(SymbolicError):
        Swizzle(3, 4, 3)(sympy.Symbol("i", integer=True))


@given(swizzles(), st.integers(0, 1 << 16))
def test_involution(sw, o):
    assert sw(sw(o)) == o


@given(swizzles(), st.integers(0, 1 << 12))
def test_touches_only_its_z_bits(sw, o):
    # bits outside ZZZ are unchanged; the low M bits in particular
    assert (sw(o) ^ o) & ~sw.zzz_msk == 0
    assert sw(o) % (1 << sw.M) == o % (1 << sw.M)


@given(swizzles(max_bits=3, max_base=3, max_shift=4), st.integers(0, 3))
def test_bijection_on_its_period(sw, block):
    p = sw.period
    base = block * p
    image = {sw(base + i) for i in range(p)}
    assert image == set(range(base, base + p))


@given(swizzles(max_bits=3, max_base=3, max_shift=4))
def test_composition_with_layout_keeps_size(sw):
    L = cute.make_layout((8, sw.period // 8 if sw.period >= 8 else 1))
    C = cute.composition(sw, L)
    assert cute.size(C) == cute.size(L)
    assert sorted(C(i) for i in range(cute.size(C))) == sorted(L(i) for i in range(cute.size(L)))


@given(swizzles(max_bits=3, max_base=4, max_shift=4), st.sampled_from([2, 4, 8]))
def test_upcast_downcast_commute_with_element_grouping(sw, n):
    # downcast(sw, n) on element indices equals sw on the n-times-larger groups
    d = cute.downcast(sw, n)
    for o in range(0, 4 * sw.period, 3):
        assert d(o * n) == sw(o) * n
    if sw.M >= n.bit_length() - 1:
        u = cute.upcast(sw, n)
        for o in range(0, 4 * sw.period, n):
            assert u(o // n) * n == sw(o)


def test_upcast_below_base_shrinks_bits():
    assert cute.upcast(Swizzle(3, 4, 3), 2) == Swizzle(3, 3, 3)
    assert cute.upcast(Swizzle(3, 1, 3), 8) == Swizzle(1, 0, 3)
    assert cute.upcast(Swizzle(2, 0, 3), 16) == Swizzle(0, 0, 3)
    assert cute.downcast(Swizzle(3, 3, 3), 2) == Swizzle(3, 4, 3)
    assert cute.recast_layout(Swizzle(3, 4, 3), 8, 16) == Swizzle(3, 3, 3)
    with pytest.raises(LayoutError):
        cute.upcast(Swizzle(3, 4, 3), 3)


def test_layout_composed_with_swizzle():
    # composition(Layout, Swizzle) re-expresses the swizzle in the layout's domain
    inv = cute.make_layout((64, 8), (8, 1))
    r = cute.composition(inv, Swizzle(3, 3, 3))
    assert str(r) == "Sw<3,0,-6> o 0 o (64,8):(8,1)"
