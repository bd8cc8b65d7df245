"""cute_py.testing: each strategy draws what it promises; the documented user example runs."""

from hypothesis import given, strategies as st

import cute_py as cute
from cute_py import testing as ct


@given(ct.profiles(), st.data())
def test_int_tuples_follow_the_profile(p, data):
    t = data.draw(ct.int_tuples(p, 1, 5))
    assert cute.congruent(t, p)
    assert all(1 <= x <= 5 for x in (cute.flatten(t) if isinstance(t, tuple) else (t,)))


@given(ct.shapes(max_size=64))
def test_shapes_are_bounded(s):
    assert 1 <= cute.product(s) <= 64


@given(ct.compact_layouts(max_size=64))
def test_compact_layouts_are_bijections(L):
    assert sorted(L(i) for i in range(cute.size(L))) == list(range(cute.size(L)))


@given(ct.injective_layouts(max_size=64))
def test_injective_layouts_are_injective_and_complementable(L):
    vals = [L(i) for i in range(cute.size(L))]
    assert len(set(vals)) == len(vals)
    C = cute.complement(L)
    both = cute.make_layout(L, C)
    img = [both(i) for i in range(cute.size(both))]
    assert len(set(img)) == len(img)


@given(ct.layouts_with_zero_strides(max_size=64))
def test_zero_stride_layouts_have_a_zero(L):
    strides = cute.flatten(L.stride) if isinstance(L.stride, tuple) else (L.stride,)
    assert 0 in strides


@given(ct.nested_layouts(max_size=64))
def test_nested_layouts_are_nested(L):
    assert cute.depth(L) >= 2


@given(ct.layouts(max_size=32))
def test_any_layouts_evaluate(L):
    for i in range(cute.size(L)):
        L(i)


@given(ct.compact_layouts(max_size=128), st.data())
def test_tilers_divide_their_layout(L, data):
    T = data.draw(ct.tilers(L))
    d = cute.zipped_divide(L, T)
    assert cute.size(d) == cute.size(L)
    assert sorted(d(i) for i in range(cute.size(d))) == list(range(cute.size(L)))


@given(ct.swizzles())
def test_swizzles_are_valid(sw):
    assert abs(sw.S) >= sw.B


@given(ct.composed_layouts(offset=True))
def test_composed_layouts_are_bijections_onto_a_shifted_range(L):
    vals = sorted(L(i) for i in range(cute.size(L)))
    assert vals == list(range(vals[0], vals[0] + cute.size(L)))


# The user example from cute_py.testing's docstring and docs/swizzles.md
@given(ct.composed_layouts())
def test_user_example_smem_layout_right_inverse(L):
    R = cute.right_inverse(L)          # composed_layouts() draws invertible layouts
    for i in range(cute.size(R)):
        assert L(R(i)) == i


@given(ct.composed_layouts(invertible=False))
def test_any_compact_composed_layout_is_a_bijection(L):
    assert sorted(L(i) for i in range(cute.size(L))) == list(range(cute.size(L)))
