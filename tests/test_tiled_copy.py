"""TiledCopy: the make_layout_tv golden, builders, tensor partitions, retile, checks, errors."""

import numpy as np
import pytest

import cute_py as cute
from cute_py import AtomError, Layout

MMA = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1), (32, 32, 16))


def test_make_layout_tv_golden():
    """``core.py:5347-5354``: thr (2,3):(3,1), val (2,2):(2,1) -> tiler (4,6), TV ((3,2),(2,2)):((8,2),(4,1))."""
    tiler, tv = cute.make_layout_tv(Layout((2, 3), (3, 1)), Layout((2, 2), (2, 1)))
    assert tiler == (4, 6) and str(tv) == "((3,2),(2,2)):((8,2),(4,1))"
    tc = cute.make_tiled_copy(cute.Copy_Atom(cute.UniversalCopy(16), "f16"),
                              Layout((2, 3), (3, 1)), Layout((2, 2), (2, 1)))
    assert tc.layout_tv == tv and tc.tiler_mn == (4, 6) and tc.size() == 6
    assert cute.TiledCopy(tc.atom, tv, (4, 6)) == tc


def test_cp_async_tiled_copy():
    tc = cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEALWAYS(128), "half_t"),
                              Layout((16, 8), (8, 1)), Layout((1, 8)))
    assert str(tc.layout_tv) == "((8,16),8):((128,1),16)" and tc.tile_shape == (16, 64)
    assert cute.tile_size(tc, 1) == 64
    # partition a real row-major 32x128 gmem tensor: thread 9 reads row 1, columns 8..15
    g = np.arange(32 * 128, dtype=np.float16)
    tg = cute.make_tensor(g, Layout((32, 128), (128, 1)))
    p = tc.get_slice(9).partition_S(tg)
    assert cute.fmt_int_tuple(p.shape) == "((8,1),2,2)"
    assert [float(p((v, 0), 0, 0)) for v in range(8)] == [128 + 8 + v for v in range(8)]
    assert "cp.async.ca.shared.global" in str(tc) and tc.cpp_str().startswith("TiledCopy")


def test_retile_mma_fragment_for_stmatrix():
    st = cute.make_tiled_copy_C(cute.Copy_Atom(cute.SM90_U32x4_STSM_N, "f16"), MMA)
    frag_shape = MMA.partition_shape_C((64, 64))
    r = st.get_slice(0).retile_S(cute.make_layout(frag_shape))
    assert cute.size(r) == cute.size(Layout(frag_shape)) and cute.size(r.shape[0]) == 8
    # retile is a permutation of the fragment's registers
    vals = sorted(r(i) for i in range(cute.size(r)))
    assert vals == list(range(cute.size(r)))


def test_copy_s_d_and_c_atom():
    ld = cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16"), MMA)
    s = cute.make_tiled_copy_S(cute.Copy_Atom(cute.UniversalCopy(128), "f16"), ld)
    assert s.layout_tv == ld.get_layoutS_TV() and s.tiler_mn == ld.tiler_mn
    d = cute.make_tiled_copy_D(cute.Copy_Atom(cute.UniversalCopy(32), "f16"), ld)
    assert d.layout_tv == ld.get_layoutD_TV()
    ca = cute.make_tiled_copy_C_atom(cute.Copy_Atom(cute.UniversalCopy(32), "f16"), MMA)
    assert ca.check()
    cot = cute.make_cotiled_copy(cute.Copy_Atom(cute.UniversalCopy(128), "f16"),
                                 Layout((32, 8), (8, 1)), Layout((16, 16), (16, 1)))
    assert cot.size() == 32 and cot.check()


def test_errors():
    atom = cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16")
    with pytest.raises(AtomError, match="too few threads"):
        cute.TiledCopy(atom, Layout((16, 8)), (16, 8))
    with pytest.raises(AtomError, match="too few values"):
        cute.TiledCopy(atom, Layout((32, 4)), (32, 4))
    with pytest.raises(AtomError, match="outside the tile"):
        cute.TiledCopy(cute.Copy_Atom(cute.UniversalCopy(16), "f16"), Layout((4, 2)), (4, 1))
    with pytest.raises(AtomError, match="Copy_Atom"):
        cute.make_tiled_copy(cute.SM75_U32x4_LDSM_N, Layout(32))
    with pytest.raises(AtomError, match="compact"):
        cute.make_tiled_copy(atom, Layout((4, 8), (2, 8)))
    with pytest.raises(AtomError, match="TiledMMA"):
        cute.make_tiled_copy_A(atom, atom)
    with pytest.raises(AtomError, match="thr_idx"):
        cute.make_tiled_copy_A(atom, MMA).get_slice(128)
    with pytest.raises(AtomError, match="rank"):
        cute.make_tiled_copy_A(atom, MMA).tidfrg_S(Layout(64))
    bad = cute.TiledCopy(cute.Copy_Atom(cute.UniversalCopy(16), "f16"), Layout((4, 2), (1, 0)), (4, 2))
    rep = cute.check_tiled_copy(bad)
    assert not rep and "missing" in str(rep)
