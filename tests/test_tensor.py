"""Tensors: CuTe's documented examples (03_tensor.md, 0x_gemm_tutorial.md) and the NumPy shadow
oracle (apply each operation to np.arange data and compare element by element with what the
layout promises)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import cute_py as cute
from cute_py import _, make_layout, make_tensor, TensorError, Swizzle
from cute_py.testing import compact_layouts, tilers


def arange_tensor(shape, stride=None):
    L = make_layout(shape, stride)
    data = np.arange(cute.cosize(L), dtype=np.int64)
    return make_tensor(data, L), data


def coords(shape):
    return [cute.idx2crd(i, shape) for i in range(cute.size(shape))]


# ---- 03_tensor.md ------------------------------------------------------------------------------

def test_doc_slicing_examples():
    A, _d = arange_tensor(((3, 2), (2, 5, 2)), ((4, 1), (2, 13, 100)))
    B, C, D = A(2, _), A(_, 5), A((_, _), 5)
    assert str(B.layout) == "((2,5,2)):((2,13,100))"
    assert str(C.layout) == "((3,2)):((4,1))"
    assert str(D.layout) == "(3,2):(4,1)"
    E = A((_, 1), (0, _, 1))
    assert str(E.layout) == "(3,5):(4,13)"
    F = A((2, _), (_, 3, _))
    assert str(F.layout) == "(2,2,2):(1,2,100)"
    # the sliced tensors read the same elements as the original
    for j in range(cute.size(B)):
        assert B(j) == A(2, j)
    for c in coords((3, 5)):
        assert E(c) == A((c[0], 1), (0, c[1], 1))
    for c in coords((2, 2, 2)):
        assert F(c) == A((2, c[0]), (c[1], 3, c[2]))


def test_doc_access_and_transpose():
    A = make_tensor(np.zeros(64 * 13, dtype=np.float32), make_layout(((4, 5), 13), ((12, 1), 64)))
    B = make_tensor(np.zeros(13 * 20, dtype=np.float32), make_layout((13, 20)))
    for m0 in range(4):
        for m1 in range(5):
            for n in range(13):
                A[((m0, m1), n)] = n + 2 * m0
    for m in range(cute.size(A, 0)):
        for n in range(cute.size(A, 1)):
            B[n, m] = A(m, n)
    assert B(3, 7) == A(7, 3) == 3 + 2 * (7 % 4)
    for i in range(cute.size(A)):
        A[i] = B[i]
    assert A(0) == B(0)


def test_doc_inner_outer_partition():
    A, data = arange_tensor((8, 24))
    tiled = cute.zipped_divide(A, (4, 8))
    assert str(tiled.layout) == "((4,8),(2,3)):((1,8),(4,64))"
    cta = tiled((_, _), (1, 2))
    assert cta.shape == (4, 8)
    assert cute.inner_partition(A, (4, 8), (1, 2)) == cta
    assert cute.local_tile(A, (4, 8), (1, 2)) == cta
    for m, n in coords((4, 8)):
        assert cta(m, n) == A(4 + m, 16 + n)
    thr = tiled(5, (_, _))
    assert thr.shape == (2, 3)
    assert cute.outer_partition(A, (4, 8), 5) == thr
    for i, j in coords((2, 3)):
        assert thr(i, j) == A(5 % 4 + 4 * i, 5 // 4 + 8 * j)


def test_doc_tv_partition():
    tv_layout = make_layout(((2, 4), (2, 2)), ((8, 1), (4, 16)))
    A, _d = arange_tensor((4, 8), cute.LayoutRight)
    tv = cute.composition(A, tv_layout)
    assert tv.shape == ((2, 4), (2, 2))
    for t in range(8):
        v = tv(t, _)
        assert cute.size(v) == 4
        for j in range(4):
            m, n = cute.idx2crd(tv_layout(t, j), (4, 8))
            assert v(j) == A(m, n)


def test_doc_make_tensor_like_of_a_tile():
    g, _d = arange_tensor((24, 16))
    tiled = cute.zipped_divide(g, (8, 4))
    r = cute.make_tensor_like(tiled(_, 0))
    assert r.shape == ((8, 4),) and r.memspace == "rmem"


# ---- 0x_gemm_tutorial.md --------------------------------------------------------------------

def test_gemm_tutorial_local_tile_with_projections():
    M, N, K = 256, 128, 64
    mA, _a = arange_tensor((M, K))
    mB, _b = arange_tensor((N, K))
    mC, _c = arange_tensor((M, N))
    cta_tiler = (128, 128, 8)
    cta_coord = (1, 0, _)
    gA = cute.local_tile(mA, cta_tiler, cta_coord, (1, None, 1))
    gB = cute.local_tile(mB, cta_tiler, cta_coord, (None, 1, 1))
    gC = cute.local_tile(mC, cta_tiler, cta_coord, (1, 1, None))
    assert gA.shape == (128, 8, 8) and gB.shape == (128, 8, 8) and gC.shape == (128, 128)
    assert gA(3, 5, 2) == mA(128 + 3, 16 + 5)
    assert gB(7, 1, 3) == mB(7, 24 + 1)
    assert gC(9, 10) == mC(128 + 9, 10)


def test_gemm_tutorial_local_partition():
    sA, _a = arange_tensor((128, 8))
    sC, _c = arange_tensor((128, 128))
    tA = make_layout((32, 8))
    tAsA = cute.local_partition(sA, tA, 37)
    assert tAsA.shape == (4, 1)
    for i in range(4):
        assert tAsA(i, 0) == sA(37 % 32 + 32 * i, 37 // 32)
    tC = make_layout((16, 16))
    tCsA = cute.local_partition(sA, tC, 37, (1, None))
    assert tCsA.shape == (8, 8)
    for m, k in coords((8, 8)):
        assert tCsA(m, k) == sA(37 % 16 + 16 * m, k)
    tCgC = cute.local_partition(sC, tC, 37, (1, 1))
    assert tCgC.shape == (8, 8)
    for m, n in coords((8, 8)):
        assert tCgC(m, n) == sC(37 % 16 + 16 * m, 37 // 16 + 16 * n)


def test_local_partition_with_projected_rank3_thread_layout():
    # tensor_impl.hpp comment: thr_layout (2,16,1):(16,1,0) with Step<_1,X,_1> etc.
    thr = make_layout((2, 16, 1), (16, 1, 0))
    A, _a = arange_tensor((8, 4))
    B, _b = arange_tensor((32, 4))
    C, _c = arange_tensor((8, 32))
    tid = 21
    thrA = cute.local_partition(A, thr, tid, (1, None, 1))
    thrB = cute.local_partition(B, thr, tid, (None, 1, 1))
    thrC = cute.local_partition(C, thr, tid, (1, 1, None))
    assert thrA.shape == (4, 4) and thrB.shape == (2, 4) and thrC.shape == (4, 2)
    m, n = tid // 16, tid % 16
    assert thrA(1, 2) == A(m + 2, 2)
    assert thrB(1, 3) == B(n + 16, 3)
    assert thrC(3, 1) == C(m + 6, n + 16)


# ---- Identity tensors ----------------------------------------------------------------------

def test_identity_tensor_prints_like_cute_and_returns_coordinates():
    I = cute.make_identity_tensor((4, 8))
    assert str(I) == "ArithTuple(0,0) o (4,8):(1@0,1@1)"
    assert I(3, 5) == (3, 5)
    N = cute.make_identity_tensor(((2, 3), 4))
    assert N(((1, 2), 3)) == ((1, 2), 3)
    assert str(cute.E(1, 0)) == "1@0@1"
    assert cute.E(1, 0).as_arithmetic_tuple() == (0, (1,))


def test_identity_tensor_predication_beyond_the_shape():
    # M = 100 does not divide 32: the last tile's coordinates run past the shape, exactly
    M, N = 100, 64
    I = cute.make_identity_tensor((M, N))
    g = cute.local_tile(I, (32, 64), (3, 0))
    tid = 5
    p = cute.local_partition(g, make_layout((8, 4), (4, 1)), tid)
    for c in coords(p.shape):
        m, n = p(c)
        assert (m, n) == (96 + tid // 4 + 8 * c[0], tid % 4 + 4 * c[1])
    mask = [cute.elem_less(p(c), (M, N)) for c in coords(p.shape)]
    assert sum(mask) == cute.size(p) // 4  # thread 5 owns rows 97,105,113,121: only 97 < 100


@given(st.sampled_from([(8, 12), (16, 16), (4, 8)]), st.data())
def test_identity_partitions_agree_with_data_partitions(shape, data):
    A, _a = arange_tensor(shape, cute.LayoutRight)
    I = cute.make_identity_tensor(shape)
    thr = data.draw(st.sampled_from([make_layout((2, 2)), make_layout((2, 4), (4, 1)),
                                     make_layout((1, 2))]))
    tid = data.draw(st.integers(0, cute.size(thr) - 1))
    pa, pi = cute.local_partition(A, thr, tid), cute.local_partition(I, thr, tid)
    for c in coords(pa.shape):
        assert pa(c) == A(pi(c))


# ---- NumPy shadow oracle -------------------------------------------------------------------

@given(compact_layouts(max_size=128, max_rank=3), st.data())
def test_oracle_divides(L, data):
    """Every divide of a tensor reads exactly tensor(layout-promised coordinate)."""
    t = make_tensor(np.arange(cute.cosize(L)), L)
    tiler = data.draw(tilers(L))
    for op in (cute.logical_divide, cute.zipped_divide, cute.tiled_divide, cute.flat_divide):
        r = op(t, tiler)
        lay = op(L, tiler)
        assert r.layout == lay
        for i in range(cute.size(r)):
            assert r(i) == t.engine[lay(i)]
    comp = cute.composition(t, tiler)
    for i in range(cute.size(comp)):
        assert comp(i) == t.engine[cute.composition(L, tiler)(i)]


@given(st.sampled_from([(8, 8), (12, 16), (16, 24)]), st.sampled_from(["col", "row"]), st.data())
def test_oracle_local_tile_and_partition(shape, major, data):
    stride = None if major == "col" else cute.LayoutRight
    A, arr = arange_tensor(shape, stride)
    M, N = shape
    dense = arr[: M * N].reshape((M, N), order="F" if major == "col" else "C")
    bm = data.draw(st.sampled_from([d for d in (2, 4, 8) if M % d == 0]))
    bn = data.draw(st.sampled_from([d for d in (2, 4, 8) if N % d == 0]))
    bx = data.draw(st.integers(0, M // bm - 1))
    by = data.draw(st.integers(0, N // bn - 1))
    g = cute.local_tile(A, (bm, bn), (bx, by))
    np.testing.assert_array_equal(g.to_numpy(), dense[bx * bm:(bx + 1) * bm, by * bn:(by + 1) * bn])
    tm = data.draw(st.sampled_from([d for d in (1, 2, 4) if bm % d == 0]))
    tn = data.draw(st.sampled_from([d for d in (1, 2, 4) if bn % d == 0]))
    thr = make_layout((tm, tn), data.draw(st.sampled_from([None, cute.LayoutRight])))
    tid = data.draw(st.integers(0, tm * tn - 1))
    p = cute.local_partition(g, thr, tid)
    m0, n0 = thr.get_flat_coord(tid)
    expect = dense[bx * bm:(bx + 1) * bm, by * bn:(by + 1) * bn][m0::tm, n0::tn]
    np.testing.assert_array_equal(p.to_numpy(), expect)
    # every element belongs to exactly one thread
    seen = sorted(int(v) for t in range(tm * tn) for v in cute.local_partition(g, thr, t).to_list())
    assert seen == sorted(int(v) for v in g.to_list())


@given(compact_layouts(max_size=64, max_rank=3), st.data())
def test_oracle_slicing(L, data):
    t = make_tensor(np.arange(cute.cosize(L)), L)
    full = data.draw(st.sampled_from(coords(L.shape)))
    if not isinstance(full, tuple):
        return
    mode = data.draw(st.integers(0, len(full) - 1))
    coord = tuple(_ if i == mode else c for i, c in enumerate(full))
    s = t(coord)
    for j in range(cute.size(s)):
        c2 = tuple(cute.idx2crd(j, L.shape[mode]) if i == mode else c for i, c in enumerate(full))
        assert s(j) == t(c2)


def test_oracle_swizzled_smem_tensor():
    atom = cute.GMMA.Layout_K_SW128_Atom("f16")
    sL = cute.tile_to_shape(atom, (64, 64))
    buf = np.arange(64 * 64, dtype=np.float16)
    s = make_tensor(buf, sL)
    assert str(s.layout).startswith("Sw<3,3,3> o 0 o")  # position-independent form
    # element (m, k) sits at the byte address CuTe's byte swizzle gives
    sw, B = atom.layout_a, cute.get_nonswizzle_portion(sL)
    for m in range(0, 64, 7):
        for k in range(64):
            assert s(m, k) == buf[sw(B(m, k) * 2) // 2]
    # slicing a swizzled tensor keeps the element mapping
    row = s(5, _)
    assert [row(k) for k in range(64)] == [s(5, k) for k in range(64)]
    with pytest.raises(TensorError):
        make_tensor(np.zeros(4096, dtype=np.float32), sL)


def test_recast_reads_the_same_bytes():
    data = np.arange(64, dtype=np.uint16)
    t = make_tensor(data, make_layout((8, 8), (8, 1)))
    u = cute.recast(t, np.uint32)
    assert u.shape == (8, 4)
    view = data.view(np.uint32)
    for m, n in coords((8, 4)):
        assert u(m, n) == view[m * 4 + n]
    back = cute.recast(u, np.uint16)
    assert back.layout == t.layout
    p = cute.recast(make_tensor(cute.make_smem_ptr("f16", "sA"), make_layout((8, 8), (8, 1))), "f32")
    assert str(p) == "smem_ptr[32b](sA+0) o (8,4):(4,1)"


def test_domain_offset():
    A, _d = arange_tensor((8, 8))
    B = cute.domain_offset((2, 3), A)
    for m, n in coords((4, 4)):
        assert B(m, n) == A(m + 2, n + 3)
    L = make_layout((8, 8))
    assert cute.domain_offset((2, 3), L) == (L, 26)
    sw = cute.make_composed_layout(Swizzle(2, 0, 3), 0, make_layout((8, 8), (8, 1)))
    S = make_tensor(np.arange(64), sw)
    D = cute.domain_offset((1, 2), S)
    assert isinstance(D.layout, cute.ComposedLayout) and D.offset == 0
    for m, n in coords((4, 4)):
        assert D(m, n) == S(m + 1, n + 2)


def test_fragment_like():
    A, _d = arange_tensor((8, (2, 4)), (4, (1, 32)))
    f = cute.make_fragment_like(A)
    assert f.memspace == "rmem" and cute.size(f) == cute.size(A) and f.shape[0] == 8
    assert f.engine.dtype == A.engine.dtype and f.layout == cute.make_fragment_like(A.layout)
    # C++ prints (_4,(_8)):(_1,(_4)) for this
    assert cute.make_fragment_like(make_layout((4, 8), (8, 1))) == make_layout((4, (8,)), (1, (4,)))
    p = make_tensor(cute.make_smem_ptr("f16"), cute.make_sm80_smem_layout_atom("f16", "K", 64))
    fp = cute.make_fragment_like(p)
    assert fp.memspace == "rmem" and fp.layout == cute.make_fragment_like(make_layout((8, 64), (64, 1)))


def test_placeholder_tensors_give_element_refs():
    sA = make_tensor(cute.make_smem_ptr("f16", "sA"), make_layout((8, 8), (8, 1)))
    assert str(sA) == "smem_ptr[16b](sA+0) o (8,8):(8,1)"
    r = sA(2, 3)
    assert r.index == 19 and r.ptr.space == "smem"
    sub = sA(2, _)
    assert sub.offset == 16 and sub(3).index == 19
    assert hash(sA) == hash(make_tensor(cute.make_smem_ptr("f16", "sA"), make_layout((8, 8), (8, 1))))


def test_tensor_accessors_and_free_functions():
    A, _d = arange_tensor((4, (2, 3)))
    assert cute.size(A) == 24 and cute.rank(A) == 2 and cute.shape(A) == (4, (2, 3))
    assert cute.stride(A) == (1, (4, 8)) and cute.size(A, 1) == 6
    assert cute.coalesce(A).layout == make_layout(24)
    assert cute.flatten(A).layout == make_layout((4, 2, 3))
    assert cute.get(A, 1) == make_layout((2, 3), (4, 8))
    assert A.get_mode(1).layout == make_layout((2, 3), (4, 8)) and A.get_mode(1)(1, 2) == A(0, (1, 2))


def test_failure_paths():
    with pytest.raises(TensorError):
        make_tensor([1, 2, 3], make_layout(3))
    with pytest.raises(TensorError):
        make_tensor(cute.make_gmem_ptr("f16"))
    with pytest.raises(TensorError):
        cute.make_gmem_ptr("nope")
    A, _d = arange_tensor((4, 4))
    with pytest.raises(cute.CuteError):
        A(3, 7)  # outside the layout's domain
    with pytest.raises(TensorError):
        make_tensor(np.arange(4), make_layout(8))(6)  # outside the engine's memory
    with pytest.raises(TensorError):
        cute.local_partition(A, make_layout((2, 2)), 4)
    with pytest.raises(TensorError):
        cute.logical_product(A, make_layout(2))
    with pytest.raises(TensorError):
        cute.local_tile(A.layout, (2, 2), (0, 0))
    I = cute.make_identity_tensor((4, 4))
    with pytest.raises(TensorError):
        I[0, 0] = 1
