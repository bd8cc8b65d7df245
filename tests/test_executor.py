"""The NumPy reference executor: TiledMMAs compute ``C + A @ B.T`` thread by thread (registers
placed by the PTX ISA's fragment maps, independent of CuTe's layouts), TiledCopies move every
element exactly once to the right place."""

import numpy as np
import pytest

import cute_py as cute
from cute_py import AtomError, Layout
from cute_py.atom.tiled_mma import layout_table
from cute_py.executor import (MMATrace, execute_mma_atom, execute_tiled_copy, execute_tiled_mma,
                              ptx_fragment_coord, round_to_type)

SM80 = [cute.SM80_16x8x16_F32F16F16F32_TN, cute.SM80_16x8x16_F32BF16BF16F32_TN,
        cute.SM80_16x8x16_F16F16F16F16_TN, cute.SM80_16x8x8_F32TF32TF32F32_TN,
        cute.SM80_16x8x8_F16F16F16F16_TN]


def run(mma, mult=(1, 1, 1), seed=0):
    rng = np.random.default_rng(seed)
    tM, tN, tK = mma.tile_shape
    M, N, K = tM * mult[0], tN * mult[1], tK * mult[2]
    A = rng.integers(-4, 5, (M, K)).astype(float)
    B = rng.integers(-4, 5, (N, K)).astype(float)
    C = rng.integers(-4, 5, (M, N)).astype(float)
    tr = MMATrace()
    D = execute_tiled_mma(mma, A, B, C, trace=tr)
    np.testing.assert_array_equal(D, C + A @ B.T)
    return tr


@pytest.mark.parametrize("f", SM80)
@pytest.mark.parametrize("atom_layout,perm", [
    ((1, 1, 1), None), ((2, 2, 1), None), (Layout((2, 2, 1), (2, 1, 0)), None),
    ((2, 2, 1), (32, 32, None)), ((2, 1, 2), None),
    ((2, 2, 1), (Layout((4, 4, 2), (1, 8, 4)), 16, None)),
])
def test_sm80_tiled_mma_computes_gemm(f, atom_layout, perm):
    mma = cute.make_tiled_mma(f(), atom_layout, perm)
    tr = run(mma, (2, 1, 2))
    assert tr.calls > 0


@pytest.mark.parametrize("f", [cute.SM90_64xNx16_F32F16F16_SS, cute.SM90_64xNx16_F32F16F16_RS,
                               cute.SM90_64xNx16_F32BF16BF16_SS, cute.SM90_64xNx16_F32BF16BF16_RS])
@pytest.mark.parametrize("N", [8, 64, 256])
def test_sm90_tiled_mma_computes_gemm(f, N):
    al = (2, 1, 1) if N <= 64 else (1, 1, 1)
    run(cute.make_tiled_mma(f(N), al), (1, 1, 2))


def test_universal_fma_tiled():
    run(cute.make_tiled_mma(cute.UniversalFMA(), (8, 4, 1)), (2, 2, 3))
    run(cute.make_tiled_mma(cute.UniversalFMA(), Layout((4, 8, 1), (8, 1, 0)), (8, 16, 2)))


ALL = [f() for f in SM80] + [cute.SM80_16x8x8_F32F16F16F32_TN(), cute.SM80_16x8x8_F32BF16BF16F32_TN(),
                             cute.SM80_16x8x16_F32BF16BF16F32_TN()] + \
      [cute.SM90_64xNx16_F32F16F16_RS(n) for n in cute.SM90_N_VALUES]


@pytest.mark.parametrize("atom", ALL, ids=repr)
def test_cute_layouts_equal_ptx_fragment_maps(atom):
    """CuTe's layout_A/B/C agree, element by element, with the PTX ISA's fragment tables."""
    M, N, K = atom.shape_mnk
    T = atom.thr_id.size()
    for which, L in (("A", atom.layout_A), ("B", atom.layout_B), ("C", atom.layout_C)):
        tab = layout_table(L)
        V = L.size() // T
        for t in range(T):
            for i in range(V):
                rc = ptx_fragment_coord(atom, which, t, i)
                if rc is None:
                    assert which in "AB" and atom.arch == 90
                    break
                r, c = rc
                want = {"A": r + M * c, "B": c + N * r, "C": r + M * c}[which]
                assert tab[t + T * i] == want, (which, t, i)


def test_executor_catches_a_wrong_layout():
    good = cute.SM80_16x8x16_F32F16F16F32_TN()
    # swap the two value modes of C: still a bijection, but not what the hardware does
    bad = cute.MMA_Atom(**{**{f: getattr(good, f) for f in good.__dataclass_fields__},
                           "layout_C": Layout(((4, 8), (2, 2)), ((32, 1), (8, 16)))})
    mma = cute.make_tiled_mma(bad, (2, 1, 1))
    rng = np.random.default_rng(1)
    A = rng.integers(-4, 5, (32, 16)).astype(float)
    B = rng.integers(-4, 5, (8, 16)).astype(float)
    D = execute_tiled_mma(mma, A, B)
    assert not np.array_equal(D, A @ B.T)
    np.testing.assert_array_equal(execute_tiled_mma(mma, A, B, semantics="cute"), A @ B.T)


def test_atom_call_and_errors():
    atom = cute.SM80_16x8x16_F32F16F16F32_TN()
    with pytest.raises(AtomError, match="a_frags"):
        execute_mma_atom(atom, np.zeros((32, 4)), np.zeros((32, 4)))
    a = np.arange(32 * 8, dtype=float).reshape(32, 8)
    a[1, 0] = a[0, 0]   # thread 1 disagrees... only if it holds the same element: use wgmma SS
    g = cute.SM90_64xNx16_F32F16F16_SS(8)
    fa = np.zeros((128, 64 * 16))
    fa[5, 3] = 1.0
    with pytest.raises(AtomError, match="disagree"):
        execute_mma_atom(g, fa, np.zeros((128, 8 * 16)))
    mma = cute.make_tiled_mma(atom, (2, 2, 1))
    with pytest.raises(AtomError, match="multiples"):
        execute_tiled_mma(mma, np.zeros((30, 16)), np.zeros((16, 16)))
    with pytest.raises(AtomError, match="TiledMMA"):
        execute_tiled_mma(atom, np.zeros((32, 16)), np.zeros((16, 16)))


def test_round_to_type():
    x = np.array([1 + 2 ** -9, 1 + 2 ** -12, 3.0])
    assert round_to_type(x, "bfloat16")[0] == 1.0
    assert round_to_type(x, "float16")[0] == 1 + 2 ** -9 and round_to_type(x, "float16")[1] == 1.0
    assert round_to_type(x, "tfloat32")[1] == 1.0 and round_to_type(x, "tfloat32")[2] == 3.0


# --- copies -----------------------------------------------------------------------------------

MMA = cute.make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), (2, 2, 1), (32, 32, 16))


@pytest.mark.parametrize("tc,shape,mult", [
    (cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEALWAYS(128), "f16"),
                          Layout((16, 8), (8, 1)), Layout((1, 8))), (32, 128), 1),
    (cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(), "f32"),
                          Layout((8, 16)), Layout((4, 1))), (64, 32), 1),
    (cute.make_tiled_copy(cute.Copy_Atom(cute.UniversalCopy(32), "f16"),
                          Layout((4, 32), (1, 4)), Layout((2, 2))), (8, 64), 1),
    (cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "f16"), MMA), (64, 32), 2),
    (cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x2_LDSM_N, "f16"), MMA), (32, 16), 2),
    (cute.make_tiled_copy_A(cute.Copy_Atom(cute.SM75_U32x1_LDSM_N, "f16"), MMA), (32, 16), 2),
    (cute.make_tiled_copy_B(cute.Copy_Atom(cute.SM75_U16x8_LDSM_T, "f16"), MMA), (32, 16), 2),
    (cute.make_tiled_copy_B(cute.Copy_Atom(cute.SM75_U16x4_LDSM_T, "f16"), MMA), (32, 32), 2),
    (cute.make_tiled_copy_C(cute.Copy_Atom(cute.SM90_U32x4_STSM_N, "f16"), MMA), (32, 32), 1),
    (cute.make_tiled_copy_C(cute.Copy_Atom(cute.SM90_U16x8_STSM_T, "f16"), MMA), (64, 32), 1),
    (cute.TiledCopy(cute.Copy_Atom(cute.SM90_TMA_LOAD(box_shape=(16, 8), value_type="f16"), "f16"),
                    Layout((1, 128), (0, 1)), (16, 8)), (32, 16), 1),
])
def test_tiled_copy_moves_every_element(tc, shape, mult):
    rng = np.random.default_rng(3)
    src = rng.integers(0, 1000, shape).astype(np.float32)
    r = execute_tiled_copy(tc, src)
    np.testing.assert_array_equal(r.dst, src)
    assert (r.writes == mult).all()          # A/B copies built from an MMA replicate over ThrN/ThrM
    assert tc.check()


def test_tiled_copy_into_swizzled_smem():
    tc = cute.make_tiled_copy(cute.Copy_Atom(cute.SM80_CP_ASYNC_CACHEGLOBAL(), "f16"),
                              Layout((16, 8), (8, 1)), Layout((1, 8)))
    sw = cute.tile_to_shape(cute.make_composed_layout(cute.Swizzle(3, 3, 3), 0,
                                                      Layout((8, 64), (64, 1))), (128, 64))
    src = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    r = execute_tiled_copy(tc, src, dst_layout=sw)
    np.testing.assert_array_equal(r.dst, src)
    assert r.each_once and r.atom_calls == 128 * 64 // 8


def test_copy_errors():
    tc = cute.make_tiled_copy(cute.Copy_Atom(cute.UniversalCopy(16), "f16"), Layout((4, 8)))
    with pytest.raises(AtomError, match="multiples"):
        execute_tiled_copy(tc, np.zeros((6, 8)))
    with pytest.raises(AtomError, match="TiledCopy"):
        execute_tiled_copy(MMA, np.zeros((4, 8)))
