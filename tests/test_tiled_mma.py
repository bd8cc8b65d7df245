"""TiledMMA laws: random valid atom layouts/permutations cover their tile (hypothesis), partitions
of tensors hold the right elements, fragments, static helpers, printing and failure paths."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cute_py as cute
from cute_py import AtomError, Layout
from cute_py.int_tuple import _

ATOMS = [cute.UniversalFMA(), cute.SM80_16x8x16_F32F16F16F32_TN(), cute.SM80_16x8x8_F32TF32TF32F32_TN(),
         cute.SM80_16x8x16_F16F16F16F16_TN(), cute.SM90_64xNx16_F32F16F16_SS(8),
         cute.SM90_64xNx16_F32BF16BF16_RS(16)]


@st.composite
def tiled_mmas(draw):
    atom = draw(st.sampled_from(ATOMS))
    if atom.arch == 90:   # 128 threads x a whole smem tile per thread: keep these small
        shp = (draw(st.sampled_from([1, 2])), 1, 1)
    else:
        shp = tuple(draw(st.sampled_from([1, 2, 4])) for _i in range(2)) + (draw(st.sampled_from([1, 2])),)
    order = draw(st.permutations([0, 1, 2]))
    al = cute.make_ordered_layout(shp, tuple(order))
    perm = []
    for i in range(3):
        base = atom.shape_mnk[i] * shp[i]
        kind = draw(st.sampled_from(["_", "int", "layout"]))
        mult = draw(st.sampled_from([1, 2])) if atom.arch != 90 else 1
        if kind == "_":
            perm.append(_)
        elif kind == "int" or base * mult < 4:
            perm.append(base * mult)
        else:
            P = base * mult
            perm.append(cute.make_ordered_layout((2, P // 2), tuple(draw(st.permutations([0, 1])))))
    return cute.make_tiled_mma(atom, al, tuple(perm))


@settings(max_examples=40, deadline=None)
@given(tiled_mmas())
def test_every_tiled_mma_covers_its_tile(mma):
    rep = cute.check_tiled_mma(mma)
    assert rep, str(rep)
    tM, tN, tK = mma.tile_shape
    assert mma.get_layoutC_TV().size() == tM * tN * mma.size(3)     # ThrK partial sums


def test_coverage_report_failure_is_clear():
    bad = cute.MMA_Atom("dup", Layout(32), (16, 8, 16), cute.SM80_16x8x16_F32F16F16F32_TN().layout_A,
                        cute.SM80_16x8x16_F32F16F16F32_TN().layout_B,
                        Layout(((4, 8), (2, 2)), ((32, 1), (16, 0))),   # value 1 repeats value 0
                        "float32", "float16", "float16", "float32", "none")
    rep = cute.check_tiled_mma(cute.make_tiled_mma(bad))
    assert not rep
    s = str(rep)
    assert "FAILED" in s and "64 covered 0x (missing), 64 covered 2x" in s


def test_tensor_partitions_hold_the_right_elements():
    mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1))
    M, N, K = 64, 32, 32
    idx = np.arange(M * N).reshape(M, N, order="F").astype(np.float32)
    tC = cute.make_tensor(idx.reshape(-1, order="F"), Layout((M, N)))
    LC = mma.get_layoutC_TV()
    tM, tN, _k = mma.tile_shape
    for t in (0, 5, 33, 127):
        p = mma.get_slice(t).partition_C(tC)
        assert cute.fmt_int_tuple(p.shape) == cute.fmt_int_tuple(mma.partition_shape_C((M, N)))
        for v in range(4):
            i = LC((t, v))
            assert p((v, 0, 0)) == i % tM + M * (i // tM)   # the tile-(0,0) element of (t, v)
        f = mma.get_slice(t).partition_fragment_C(tC)
        assert f.layout == Layout(p.shape) and f.dtype == np.float32
    tA = cute.make_tensor(cute.make_smem_ptr("f16"), Layout((M, K), (K, 1)))
    pa = mma.get_slice(37).partition_A(tA)
    assert cute.fmt_int_tuple(pa.shape) == "((2,2,2),2,2)"
    fa = mma.get_slice(37).partition_fragment_A(tA)
    assert fa.shape == pa.shape and fa.memspace == "rmem" and fa.layout.cosize() == 32


def test_wgmma_fragments_are_views():
    mma = cute.make_tiled_mma(cute.SM90_64xNx16_F32F16F16_SS(64), (2, 1, 1))
    sA = cute.make_tensor(cute.make_smem_ptr("f16"),
                          cute.tile_to_shape(cute.GMMA.Layout_K_SW128_Atom("f16"), (128, 64)))
    s = mma.get_slice(130)
    assert s.partition_fragment_A(sA) == s.partition_A(sA)     # descriptors come from smem
    assert s.thr_vmnk == (2, 1, 0, 0)


def test_static_helpers_and_printing():
    mma = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1), (32, 32, 16))
    assert mma.tile_shape == (32, 32, 16) == cute.tile_shape(mma)
    assert cute.tile_size(mma, 1) == 32 and mma.size() == 128 == cute.thr_size(mma)
    assert str(mma.thr_layout_vmnk) == "(32,2,2,1):(1,32,64,0)"
    assert cute.partition_shape_C(mma, (128, 128)) == ((2, 2), 4, 8)
    assert cute.partition_shape_B(mma, (128, 32)) == ((2, 2), 8, 2)
    assert "PermutationMNK: (32,32,16)" in str(mma) and "TiledMMA" in mma.cpp_str()
    hash(mma)
    assert mma == cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), Layout((2, 2, 1)), (32, 32, 16))
    assert mma.get_thread_slice(3) == mma.get_slice(3)
    assert str(mma.thrfrg_C(Layout((32, 32)))) == \
        "(((4,8),(2,2)),((2,2),(1,2))):(((64,1),(16,256)),((32,8),(0,512)))"


def test_errors():
    atom = cute.SM80_16x8x16_F32F16F16F32_TN()
    with pytest.raises(AtomError, match="atom_layout"):
        cute.make_tiled_mma(atom, (2, 2, 1, 1))
    # C++ accepts a tile that is not a multiple of atom x atom_layout (the divides pad it)
    assert cute.make_tiled_mma(atom, (2, 2, 1), (24, None, None)).tile_shape == (24, 16, 16)
    with pytest.raises(AtomError, match="permutations"):
        cute.make_tiled_mma(atom, (1, 1, 1), (_, _, _, _))
    with pytest.raises(AtomError, match="atom"):
        cute.make_tiled_mma("mma.sync")
    mma = cute.make_tiled_mma(atom)
    with pytest.raises(AtomError, match="thr_idx"):
        mma.get_slice(32)
    with pytest.raises(AtomError, match="rank"):
        mma.thrfrg_C(Layout(32))
    with pytest.raises(AtomError, match="TiledMMA"):
        cute.partition_shape_C(atom, (16, 8))
    with pytest.raises(AtomError, match="Tensor or a Layout"):
        mma.get_slice(0).partition_C([1, 2, 3])
