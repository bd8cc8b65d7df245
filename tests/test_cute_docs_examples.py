"""Every worked example of CuTe's ``media/docs/cpp/cute/01_layout.md`` and ``02_layout_algebra.md``.

All our ints are static, so the expected strings are the docs' static results with ``_N`` read
as ``N`` (``d8 : 8:_1`` becomes ``8:1``).
"""

from __future__ import annotations

import pytest

import cute_py as cute
from cute_py import Layout, LayoutLeft, LayoutRight, make_layout


# ---------------------------------------------------------------------------------------------
# 01_layout.md


def test_constructing_layouts():
    got = {
        "s8": make_layout(8),
        "s2xs4": make_layout((2, 4)),
        "s2xd4_a": make_layout((2, 4), (12, 1)),
        "s2xd4_col": make_layout((2, 4), LayoutLeft),
        "s2xd4_row": make_layout((2, 4), LayoutRight),
        "s2xh4": make_layout((2, (2, 2)), (4, (2, 1))),
        "s2xh4_col": make_layout((2, (2, 2)), LayoutLeft),
    }
    want = {
        "s8": "8:1", "s2xs4": "(2,4):(1,2)", "s2xd4_a": "(2,4):(12,1)",
        "s2xd4_col": "(2,4):(1,2)", "s2xd4_row": "(2,4):(4,1)",
        "s2xh4": "(2,(2,2)):(4,(2,1))", "s2xh4_col": "(2,(2,2)):(1,(2,4))",
    }
    assert {k: str(v) for k, v in got.items()} == want
    # LayoutRight reproduces s2xh4's strides
    assert make_layout((2, (2, 2)), LayoutRight) == got["s2xh4"]


def _print2d(L):
    return [[L(m, n) for n in range(cute.size(L, 1))] for m in range(cute.size(L, 0))]


def test_print2d_and_print1d():
    s2xs4 = make_layout((2, 4))
    s2xd4_a = make_layout((2, 4), (12, 1))
    s2xh4_col = make_layout((2, (2, 2)))
    s2xh4 = make_layout((2, (2, 2)), (4, (2, 1)))
    assert _print2d(s2xs4) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert _print2d(s2xd4_a) == [[0, 1, 2, 3], [12, 13, 14, 15]]
    assert _print2d(s2xh4_col) == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert _print2d(s2xh4) == [[0, 2, 1, 3], [4, 6, 5, 7]]
    one_d = lambda L: [L(i) for i in range(L.size())]  # noqa: E731
    assert one_d(s2xs4) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert one_d(s2xd4_a) == [0, 12, 1, 13, 2, 14, 3, 15]
    assert one_d(s2xh4_col) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert one_d(s2xh4) == [0, 4, 2, 6, 1, 5, 3, 7]


def test_print_layout_s2xh4():
    text = cute.format_layout(make_layout((2, (2, 2)), (4, (2, 1))))
    assert text == (
        "(2,(2,2)):(4,(2,1))\n"
        "      0   1   2   3 \n"
        "    +---+---+---+---+\n"
        " 0  | 0 | 2 | 1 | 3 |\n"
        "    +---+---+---+---+\n"
        " 1  | 4 | 6 | 5 | 7 |\n"
        "    +---+---+---+---+")


@pytest.mark.parametrize("layout,indices", [
    ("8:1", [0, 1, 2, 3, 4, 5, 6, 7]),
    ("8:2", [0, 2, 4, 6, 8, 10, 12, 14]),
    ("((4,2)):((2,1))", [0, 2, 4, 6, 1, 3, 5, 7]),
    ("((4,2)):((1,4))", [0, 1, 2, 3, 4, 5, 6, 7]),
])
def test_vector_layouts(layout, indices):
    L = cute.parse_layout(layout)
    assert [L(i) for i in range(L.size())] == indices


@pytest.mark.parametrize("layout,table", [
    ("(4,2):(1,4)", [[0, 4], [1, 5], [2, 6], [3, 7]]),
    ("(4,2):(2,1)", [[0, 1], [2, 3], [4, 5], [6, 7]]),
    ("((2,2),2):((4,1),2)", [[0, 2], [4, 6], [1, 3], [5, 7]]),
])
def test_matrix_examples(layout, table):
    assert _print2d(cute.parse_layout(layout)) == table


@pytest.mark.parametrize("a,b,ok", [
    (24, 32, False), (24, (4, 6), True), ((4, 6), ((2, 2), 6), True),
    (((2, 2), 6), ((2, 2), (3, 2)), True), (24, ((2, 2), (3, 2)), True),
    (24, ((2, 3), 4), True), (((2, 3), 4), ((2, 2), (3, 2)), False),
    (((2, 2), (3, 2)), ((2, 3), 4), False), (24, (24,), True), ((24,), 24, False),
    ((24,), (4, 6), False),
])
def test_compatibility(a, b, ok):
    assert cute.compatible(a, b) is ok


def test_coordinate_mapping_table():
    shape = (3, (2, 3))
    for i in range(18):
        two_d = (i % 3, i // 3)
        natural = cute.idx2crd(i, shape)
        assert cute.idx2crd(two_d, shape) == natural
        assert cute.crd2idx(natural, shape) == i
    assert cute.idx2crd(9, shape) == (0, (1, 1))
    assert cute.idx2crd(14, shape) == (2, (0, 2))


def test_idx2crd_examples():
    shape = (3, (2, 3))
    assert cute.idx2crd(16, shape) == (1, (1, 2))
    assert cute.idx2crd((1, 5), shape) == (1, (1, 2))
    assert cute.idx2crd((1, (1, 2)), shape) == (1, (1, 2))


def test_crd2idx_examples():
    shape, stride = (3, (2, 3)), (3, (12, 1))
    assert cute.crd2idx(16, shape, stride) == 17
    assert cute.crd2idx((1, 5), shape, stride) == 17
    assert cute.crd2idx((1, (1, 2)), shape, stride) == 17


def test_index_mapping_table():
    L = make_layout((3, (2, 3)), (3, (12, 1)))
    assert _print2d(L) == [[0, 12, 1, 13, 2, 14], [3, 15, 4, 16, 5, 17], [6, 18, 7, 19, 8, 20]]


def test_sublayouts():
    a = make_layout((4, (3, 6)))
    assert str(a) == "(4,(3,6)):(1,(4,12))"
    assert str(cute.layout(a, 0)) == "4:1"
    assert str(cute.layout(a, 1)) == "(3,6):(4,12)"
    assert str(cute.layout(a, 1, 0)) == "3:4"
    assert str(cute.layout(a, 1, 1)) == "6:12"
    b = make_layout((2, 3, 5, 7))
    assert str(b) == "(2,3,5,7):(1,2,6,30)"
    assert str(cute.select(b, 1, 3)) == "(3,7):(2,30)"
    assert str(cute.select(b, 0, 1, 3)) == "(2,3,7):(1,2,30)"
    assert str(cute.select(b, 2)) == "(5):(6)"
    assert str(cute.take(b, 1, 3)) == "(3,5):(2,6)"
    assert str(cute.take(b, 1, 4)) == "(3,5,7):(2,6,30)"
    with pytest.raises(cute.LayoutError):
        cute.take(b, 1, 1)  # "take<1,1> not allowed. Empty layouts not allowed."


def test_concatenation():
    a, b = Layout(3, 1), Layout(4, 3)
    row, col = make_layout(a, b), make_layout(b, a)
    assert str(row) == "(3,4):(1,3)" and str(col) == "(4,3):(3,1)"
    assert str(make_layout(row, col)) == "((3,4),(4,3)):((1,3),(3,1))"
    aa = make_layout(a)
    assert str(aa) == "(3):(1)"
    assert str(make_layout(aa)) == "((3)):((1))"
    assert str(make_layout(a, make_layout(a), a)) == "(3,(3),3):(1,(1),1)"
    ab = cute.append(a, b)
    assert str(ab) == "(3,4):(1,3)"
    assert str(cute.prepend(a, b)) == "(4,3):(3,1)"
    c = cute.append(ab, ab)
    assert str(c) == "(3,4,(3,4)):(1,3,(1,3))"
    assert str(cute.replace(c, 2, b)) == "(3,4,4):(1,3,3)"


def test_group_and_flatten():
    a = make_layout((2, 3, 5, 7))
    b = cute.group(a, 0, 2)
    assert str(b) == "((2,3),5,7):((1,2),6,30)"
    c = cute.group(b, 1, 3)
    assert str(c) == "((2,3),(5,7)):((1,2),(6,30))"
    assert str(cute.flatten(b)) == "(2,3,5,7):(1,2,6,30)"
    assert str(cute.flatten(c)) == "(2,3,5,7):(1,2,6,30)"


# ---------------------------------------------------------------------------------------------
# 02_layout_algebra.md


def test_coalesce_examples():
    a = make_layout((2, (1, 6)), (1, (6, 2)))
    assert str(cute.coalesce(a)) == "12:1"
    r = cute.coalesce(a, (1, 1))
    assert str(r) == "(2,6):(1,2)"
    assert r == make_layout(cute.coalesce(cute.layout(a, 0)), cute.coalesce(cute.layout(a, 1)))


@pytest.mark.parametrize("a,b", [("(2,4):(1,2)", "8:1")])
def test_coalesce_column_major_is_identity(a, b):
    assert cute.coalesce(cute.parse_layout(a)) == cute.parse_layout(b)


def test_composition_worked_example():
    A, B = make_layout((6, 2), (8, 2)), make_layout((4, 3), (3, 1))
    R = cute.composition(A, B)
    assert [R(i) for i in range(12)] == [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42]
    assert str(R) == "((2,2),3):((24,2),8)"
    assert cute.compatible(B.shape, R.shape)
    assert str(cute.composition(A, Layout(4, 3))) == "(2,2):(24,2)"
    assert str(cute.composition(A, Layout(3, 1))) == "3:8"  # (3,1):(8,2) coalesced


@pytest.mark.parametrize("shape,d,want", [
    ((6, 2), 2, (3, 2)), ((6, 2), 3, (2, 2)), ((6, 2), 6, (1, 2)), ((6, 2), 12, (1, 1)),
    ((3, 6, 2, 8), 3, (1, 6, 2, 8)), ((3, 6, 2, 8), 6, (1, 3, 2, 8)),
    ((3, 6, 2, 8), 9, (1, 2, 2, 8)), ((3, 6, 2, 8), 72, (1, 1, 1, 4)),
])
def test_dividing_out_strides(shape, d, want):
    assert cute.shape_div(shape, d) == want


def test_composition_divide_and_mod_example():
    # (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9*w,3*x,y,z); with w,x,y,z = 1,100,1000,10000
    A = make_layout((3, 6, 2, 8), (1, 100, 1000, 10000))
    R = cute.composition(A, Layout(16, 9))
    assert [R(i) for i in range(16)] == [A(9 * i) for i in range(16)]
    assert str(R) == "(2,2,4):(300,1000,10000)"  # the size-1 mode vanishes


def test_reshape_examples():
    assert str(cute.composition(Layout(20, 2), make_layout((5, 4), (4, 1)))) == "(5,4):(8,2)"
    R = cute.composition(make_layout((10, 2), (16, 4)), make_layout((5, 4), (1, 5)))
    assert str(R) == "(5,(2,2)):(16,(80,4))"


def test_dynamic_reshape_keeps_size_one_modes():
    sympy = pytest.importorskip("sympy")
    d = sympy.Integer
    A = make_layout((d(10), d(2)), (d(16), d(4)))
    B = make_layout((d(5), d(4)), (d(1), d(5)))
    assert str(cute.composition(A, B)) == "((5,1),(2,2)):((16,4),(80,4))"


def test_bymode_composition():
    a = make_layout((12, (4, 8)), (59, (13, 1)))
    r = cute.composition(a, (Layout(3, 4), Layout(8, 2)))
    assert str(r) == "(3,(2,4)):(236,(26,1))"
    assert r == make_layout(cute.composition(cute.layout(a, 0), Layout(3, 4)),
                            cute.composition(cute.layout(a, 1), Layout(8, 2)))
    assert str(cute.composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"


@pytest.mark.parametrize("layout,cotarget,want", [
    ("4:1", 24, "6:4"), ("6:4", 24, "4:1"), ("(4,6):(1,4)", 24, "1:0"),
    ("4:2", 24, "(2,3):(1,8)"), ("(2,4):(1,6)", 24, "3:2"), ("(2,2):(1,6)", 24, "(3,2):(2,12)"),
])
def test_complement_examples(layout, cotarget, want):
    L = cute.parse_layout(layout)
    R = cute.complement(L, cotarget)
    assert str(R) == want
    assert cute.cosize(make_layout(L, R)) >= cotarget


def test_complement_shape_cotarget_same_function_as_int():
    L = Layout(4, 1)
    assert [cute.complement(L, (4, 7))(i) for i in range(7)] == \
        [cute.complement(L, 28)(i) for i in range(7)]


def test_logical_divide_1d():
    A, B = make_layout((4, 2, 3), (2, 1, 8)), Layout(4, 2)
    assert str(cute.complement(B, A.size())) == "(2,3):(1,8)"
    assert str(make_layout(B, cute.complement(B, 24))) == "(4,(2,3)):(2,(1,8))"
    assert str(cute.logical_divide(A, B)) == "((2,2),(2,3)):((4,1),(2,8))"


def test_logical_divide_2d():
    A = make_layout((9, (4, 8)), (59, (13, 1)))
    T = (Layout(3, 3), make_layout((2, 4), (1, 8)))
    ld = cute.logical_divide(A, T)
    assert str(ld) == "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))"
    assert str(cute.layout(ld, 0, 0)) == "3:177"
    assert cute.composition(A, T) == make_layout(cute.layout(ld, 0, 0), cute.layout(ld, 1, 0))
    assert str(cute.composition(A, T)) == "(3,(2,4)):(177,(13,2))"


def test_zipped_divide_example():
    A = make_layout((9, (4, 8)), (59, (13, 1)))
    T = (Layout(3, 3), make_layout((2, 4), (1, 8)))
    ld, zd = cute.logical_divide(A, T), cute.zipped_divide(A, T)
    assert cute.product_each(ld.shape) == (9, 32)
    assert tuple(cute.size(m) for m in (ld[0][0], ld[0][1], ld[1][0], ld[1][1])) == (3, 3, 8, 4)
    assert (cute.size(zd, 0), cute.size(zd, 1)) == (24, 12)
    assert str(zd) == "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"
    assert cute.layout(zd, 0) == cute.composition(A, T)
    # the offsets of the 3rd, 7th and (1,2)th tiles
    assert zd(0, 3) == cute.layout(zd, 1)(3)
    assert zd(0, 7) == cute.layout(zd, 1)(7)
    assert zd(0, (1, 2)) == cute.layout(zd, 1)((1, 2))


def test_divide_flavours_shapes():
    A = make_layout((8, 12, 5))
    T = (4, 3)
    assert cute.shape(cute.logical_divide(A, T)) == ((4, 2), (3, 4), 5)
    assert cute.shape(cute.zipped_divide(A, T)) == ((4, 3), (2, 4, 5))
    assert cute.shape(cute.tiled_divide(A, T)) == ((4, 3), 2, 4, 5)
    assert cute.shape(cute.flat_divide(A, T)) == (4, 3, 2, 4, 5)


def test_logical_product_1d():
    A, B = make_layout((2, 2), (4, 1)), Layout(6, 1)
    assert str(cute.complement(A, 24)) == "(2,3):(2,8)"
    assert str(cute.composition(cute.complement(A, 24), B)) == "(2,3):(2,8)"
    assert str(cute.logical_product(A, B)) == "((2,2),(2,3)):((4,1),(2,8))"
    # same as the 1-D logical divide example
    assert cute.logical_product(A, B) == cute.logical_divide(make_layout((4, 2, 3), (2, 1, 8)),
                                                             Layout(4, 2))


def test_logical_product_reordered_tiles():
    A, B = make_layout((2, 2), (4, 1)), make_layout((4, 2), (2, 1))
    R = cute.logical_product(A, B)
    assert cute.size(R, 1) == 8
    assert cute.compatible(A.shape, cute.shape(R, 0)) and cute.compatible(B.shape, cute.shape(R, 1))


def test_logical_product_2d_by_mode():
    # a 2x5 row-major block tiled across a 3x4 column-major arrangement, with a by-mode tiler
    A = make_layout((2, 5), (5, 1))
    R = cute.logical_product(A, (Layout(3, 5), Layout(4, 6)))
    assert str(R) == "((2,3),(5,4)):((5,10),(1,30))"
    assert R == cute.blocked_product(A, make_layout((3, 4)))


def test_blocked_and_raked_products():
    A, B = make_layout((2, 5), (5, 1)), make_layout((3, 4), (1, 3))
    assert str(cute.blocked_product(A, B)) == "((2,3),(5,4)):((5,10),(1,30))"
    assert str(cute.raked_product(A, B)) == "((3,2),(4,5)):((10,5),(30,1))"


def test_product_flavours_shapes():
    A, B = make_layout((2, 5, 7)), (3, 4)   # (M,N,L) by <TileM,TileN>
    M, N, TM, TN = 2, 5, 3, (2, 2)  # 5:2 times 4 needs the complement (2,2):(1,10)
    assert cute.shape(cute.logical_product(A, B)) == ((M, TM), (N, TN), 7)
    assert cute.shape(cute.zipped_product(A, B)) == ((M, N), (TM, TN, 7))
    assert cute.shape(cute.tiled_product(A, B)) == ((M, N), TM, TN, 7)
    assert cute.shape(cute.flat_product(A, B)) == (M, N, TM, TN, 7)
