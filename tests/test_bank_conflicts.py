"""Bank conflicts: the documented numbers for a K-major 128x64 fp16 tile read by ldmatrix."""

import pytest

import cute_py as cute
from cute_py import AtomError, Layout
from cute_py.bank_conflicts import copy_bank_conflicts, phase_wavefronts, vector_width

MMA = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1), (32, 32, 16))
LDSM_A = cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16"), MMA)
PLAIN = Layout((128, 64), (64, 1))                    # K-major: a row of K is 128 bytes
SW = cute.tile_to_shape(cute.make_composed_layout(cute.Swizzle(3, 3, 3), 0,
                                                  Layout((8, 64), (64, 1))), (128, 64))


def test_phase_model():
    assert phase_wavefronts([(16 * i, 16) for i in range(8)]) == 1          # 128 contiguous bytes
    assert phase_wavefronts([(128 * i, 16) for i in range(8)]) == 8         # same 16 bytes of 8 rows
    assert phase_wavefronts([(0, 4)] * 32) == 1                              # broadcast
    assert phase_wavefronts([(4 * 32 * i, 4) for i in range(2)]) == 2


def test_ldmatrix_k_major_128x64_fp16():
    plain = copy_bank_conflicts(LDSM_A, PLAIN)
    assert len(plain.instructions) == 64                # 4 warps x 16 ldmatrix.x4 over 128x64
    assert plain.max_wavefronts_per_instruction == 32   # 8-way: 4 matrices x 8 wavefronts
    assert (plain.wavefronts, plain.ideal) == (2048, 256) and not plain.conflict_free
    sw = copy_bank_conflicts(LDSM_A, SW)                # Swizzle<3,3,3> on fp16 elements
    assert (sw.wavefronts, sw.ideal) == (256, 256) and sw.conflict_free
    sb = copy_bank_conflicts(LDSM_A, PLAIN, byte_swizzle=cute.Swizzle(3, 4, 3))   # on bytes
    assert (sb.wavefronts, sb.ideal) == (256, 256)
    gmma = cute.tile_to_shape(cute.GMMA.Layout_K_SW128_Atom("f16"), (128, 64))
    assert copy_bank_conflicts(LDSM_A, gmma).conflict_free
    assert "8x" in str(plain) and "conflict-free" in str(sw)


def test_stmatrix_and_vector_stores():
    st = cute.make_tiled_copy_C(cute.Copy_Atom(cute.SM90_U32x4_STSM_N, "f16"), MMA)
    r = copy_bank_conflicts(st, Layout((128, 128), (128, 1)))
    assert r.max_wavefronts_per_instruction == 32
    assert copy_bank_conflicts(st, cute.tile_to_shape(cute.GMMA.Layout_K_SW128_Atom("f16"),
                                                      (128, 128))).conflict_free
    g2s = cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEGLOBAL(), "f16"),
                               Layout((16, 8), (8, 1)), Layout((1, 8)))
    assert copy_bank_conflicts(g2s, PLAIN).conflict_free
    assert copy_bank_conflicts(g2s, SW).conflict_free
    narrow = cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEGLOBAL(), "f16"),
                                  Layout((32, 4), (4, 1)), Layout((1, 8)))
    r = copy_bank_conflicts(narrow, PLAIN)              # 4 threads per 128-byte row: 2-way
    assert (r.wavefronts, r.ideal) == (256, 128)


def test_vector_width():
    g = Layout((128, 64), (64, 1))
    assert vector_width(g, PLAIN, 16) == 128
    assert vector_width(g, SW, 16) == 128               # swizzle keeps 8-element chunks
    assert vector_width(Layout((128, 64), (1, 128)), PLAIN, 16) == 16   # transposed: scalar
    assert vector_width(Layout(64, 1), Layout(64, 1), 32, max_bits=64) == 64


def test_errors():
    with pytest.raises(AtomError, match="contiguous"):
        copy_bank_conflicts(LDSM_A, Layout((128, 64), (1, 128)))
    with pytest.raises(AtomError, match="multiple"):
        copy_bank_conflicts(LDSM_A, Layout((20, 64), (64, 1)))
    with pytest.raises(AtomError, match="side"):
        tc = cute.make_tiled_copy(cute.Copy_Atom(cute.UniversalCopy(16), "f16"), Layout((4, 8)))
        copy_bank_conflicts(tc, Layout((4, 8)))
    with pytest.raises(AtomError, match="TiledCopy"):
        copy_bank_conflicts(MMA, PLAIN)
