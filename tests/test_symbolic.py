"""Symbolic sizes: the dynamic algebra on sympy symbols, SymbolicError where CuTe needs static
values, simplification of partitioned GEMM indices, subs."""

import numpy as np
import pytest
import sympy as sp

import cute_py as cute
from cute_py import _, make_layout, SymbolicError
from cute_py.symbolic import symbols, subs, simplify, is_symbolic, free_symbols, require_static

M, N, K = symbols("M N K")
bm, bn, tid, i, j, k = symbols("bm bn tid i j k", nonnegative=True)


def test_tiling_a_symbolic_row_major_tensor_by_a_static_tiler():
    L = make_layout((M, N), (N, 1))
    zd = cute.zipped_divide(L, (128, 64))
    assert str(zd) == "((128,64),(ceiling(M/128),ceiling(N/64))):((N,1),(128*N,64))"
    assert cute.ceil_div((M, N), (128, 64)) == (sp.ceiling(M / 128), sp.ceiling(N / 64))
    assert is_symbolic(zd) and free_symbols(zd) == {M, N}


def test_local_tile_with_symbolic_block_coordinate():
    mC = cute.make_tensor(cute.make_gmem_ptr("f32", "C"), make_layout((M, N), (N, 1)))
    gC = cute.local_tile(mC, (128, 64), (bm, bn))
    assert gC.shape == (128, 64)
    assert sp.simplify(gC.offset - (128 * N * bm + 64 * bn)) == 0
    assert sp.simplify(gC(3, 5).index - ((128 * bm + 3) * N + 64 * bn + 5)) == 0


def test_partitioned_gemm_operand_index_simplifies_to_what_a_person_writes():
    mA = cute.make_tensor(cute.make_gmem_ptr("f16", "A"), make_layout((M, K), (K, 1)))
    gA = cute.local_tile(mA, (128, 64, 32), (bm, bn, _), (1, None, 1))  # (128,32,k)
    assert str(gA.layout) == "(128,32,ceiling(K/32)):(K,1,32)"
    tA = cute.local_partition(gA, make_layout((32, 8), (8, 1)), tid)   # (4,4,k)
    assert tA.shape == (4, 4, sp.ceiling(K / 32))
    idx = simplify(tA(i, j, k).index, bounds={tid: 256})
    person = (128 * bm + tid // 8 + 32 * i) * K + 32 * k + 8 * j + tid % 8
    assert sp.expand(idx - person) == 0
    # and numerically, for a concrete problem
    vals = {M: 256, K: 96, bm: 1, tid: 77, i: 2, j: 3, k: 1}
    A = np.arange(256 * 96).reshape(256, 96)
    r, c = 128 * 1 + 77 // 8 + 32 * 2, 32 * 1 + 8 * 3 + 77 % 8
    assert int(idx.subs(vals)) == A[r, c]


def test_simplify_keeps_mods_it_cannot_prove():
    e = sp.Mod(sp.floor(tid / 8), 32)
    assert simplify(e) == e
    assert simplify(e, bounds={tid: 512}) == e
    assert simplify(e, bounds={tid: 256}) == sp.floor(tid / 8)
    assert simplify(sp.floor(tid / 8), bounds={tid: 8}) == 0


def test_subs_makes_layouts_and_tensors_concrete():
    L = cute.zipped_divide(make_layout((M, N), (N, 1)), (128, 64))
    C = subs(L, {M: 256, N: 128})
    assert C == cute.zipped_divide(make_layout((256, 128), (128, 1)), (128, 64))
    assert not is_symbolic(C)
    t = cute.local_tile(cute.make_tensor(cute.make_gmem_ptr("f16", "A"), make_layout((M, N), (N, 1))),
                        (128, 64), (bm, 0))
    tc = subs(t, {M: 256, N: 128, bm: 1})
    assert tc.offset == 128 * 128 and tc(1, 2).index == 128 * 128 + 128 + 2
    # law: subs(L, m)(subs(c, m)) == subs(L(c), m)
    m = {M: 300, N: 70}
    L2 = make_layout((M, N), (1, M))
    assert subs(L2, m)((7, 9)) == subs(L2((7, 9)), m)


def test_static_only_operations_raise_symbolic_error():
    with pytest.raises(SymbolicError):
        cute.complement(make_layout((4, 8), (1, M)), 1000)
    with pytest.raises(SymbolicError):
        cute.left_inverse(make_layout((4, 8), (M, 1)))
    with pytest.raises(SymbolicError):
        cute.Swizzle(3, 4, 3)(tid)
    sw = cute.make_composed_layout(cute.Swizzle(3, 3, 3), 0, make_layout((8, 64), (64, 1)))
    with pytest.raises(SymbolicError):
        cute.slice_and_offset((tid, _), sw)
    with pytest.raises(SymbolicError) as e:
        require_static(make_layout((4, M), (M, 1)), "make_swizzle", "layout")
    assert "mode (1,)" in str(e.value) and e.value.arg == "layout"


def test_coalesce_does_not_merge_symbolic_modes():
    L = make_layout((4, M), (1, 4))
    assert cute.coalesce(L) == L
    assert cute.coalesce(make_layout((4, 8), (1, 4))) == make_layout(32)


def test_identity_tensor_with_symbolic_shape_gives_coordinates():
    I = cute.make_identity_tensor((M, N))
    g = cute.local_tile(I, (128, 64), (bm, bn))
    c = g(3, 5)
    assert sp.simplify(c[0] - (128 * bm + 3)) == 0 and sp.simplify(c[1] - (64 * bn + 5)) == 0
