"""MMA and copy atoms: CuTe's exact traits (``mma_traits_sm80.hpp``, ``mma_traits_sm90_gmma.hpp``,
``copy_traits_sm75/80/90.hpp``), the documented TV values (``0t_mma_atom.md``), frozen values,
and the failure paths."""

import pickle
from collections import Counter

import pytest

import cute_py as cute
from cute_py import AtomError, Layout
from cute_py.atom import sizeof_bits
from cute_py.atom.tiled_mma import layout_table

SM80 = [cute.SM80_16x8x16_F32F16F16F32_TN, cute.SM80_16x8x16_F32BF16BF16F32_TN,
        cute.SM80_16x8x16_F16F16F16F16_TN, cute.SM80_16x8x8_F32TF32TF32F32_TN,
        cute.SM80_16x8x8_F16F16F16F16_TN, cute.SM80_16x8x8_F32F16F16F32_TN,
        cute.SM80_16x8x8_F32BF16BF16F32_TN]
SM90 = [cute.SM90_64xNx16_F32F16F16_SS, cute.SM90_64xNx16_F32F16F16_RS,
        cute.SM90_64xNx16_F32BF16BF16_SS, cute.SM90_64xNx16_F32BF16BF16_RS]


def all_atoms():
    out = [cute.UniversalFMA(), cute.UniversalFMA("float16")] + [f() for f in SM80]
    for f in SM90:
        for N in cute.SM90_N_VALUES:
            out.append(f(N))
    out.append(cute.SM90_64xNx16_F32F16F16_SS(64, "MN", "MN"))
    out.append(cute.SM90_64xNx16_F32F16F16_RS(64, "K", "MN"))
    return out


# --- exact traits (strings as CuTe C++ prints them, without the '_' of static ints) -----------

GOLDEN = {
    "SM80_16x8x16_F32F16F16F32_TN": ("32:1", "(16,8,16)", "((4,8),(2,2,2)):((32,1),(16,8,128))",
                                     "((4,8),(2,2)):((16,1),(8,64))", "((4,8),(2,2)):((32,1),(16,8))"),
    "SM80_16x8x8_F32TF32TF32F32_TN": ("32:1", "(16,8,8)", "((4,8),(2,2)):((16,1),(8,64))",
                                      "((4,8),2):((8,1),32)", "((4,8),(2,2)):((32,1),(16,8))"),
    "SM80_16x8x8_F16F16F16F16_TN": ("32:1", "(16,8,8)", "((4,8),(2,2)):((32,1),(16,8))",
                                    "((4,8),2):((16,1),8)", "((4,8),(2,2)):((32,1),(16,8))"),
    "UniversalFMA": ("1:0", "(1,1,1)", "(1,1):(0,0)", "(1,1):(0,0)", "(1,1):(0,0)"),
    "SM90_64x128x16_F32F16F16_SS": ("128:1", "(64,128,16)", "(128,(64,16)):(0,(1,64))",
                                    "(128,(128,16)):(0,(1,128))",
                                    "((4,8,4),(2,2,16)):((128,1,16),(64,8,512))"),
    "SM90_64x128x16_F32F16F16_RS": ("128:1", "(64,128,16)",
                                    "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))",
                                    "(128,(128,16)):(0,(1,128))",
                                    "((4,8,4),(2,2,16)):((128,1,16),(64,8,512))"),
    "SM90_64x8x16_F32BF16BF16_SS": ("128:1", "(64,8,16)", "(128,(64,16)):(0,(1,64))",
                                    "(128,(8,16)):(0,(1,8))",
                                    "((4,8,4),(2,2,1)):((128,1,16),(64,8,512))"),
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_traits(name):
    atom = {a.name: a for a in all_atoms()}[name]
    thr, mnk, A, B, C = GOLDEN[name]
    assert str(atom.thr_id) == thr
    assert cute.fmt_int_tuple(atom.shape_mnk) == mnk
    assert (str(atom.layout_A), str(atom.layout_B), str(atom.layout_C)) == (A, B, C)
    assert atom.cpp_str().splitlines()[1:] == [f"  ThrID:      {thr}", f"  Shape_MNK:  {mnk}",
                                              f"  LayoutA_TV: {A}", f"  LayoutB_TV: {B}",
                                              f"  LayoutC_TV: {C}"]


def test_sm80_documented_thread_values():
    """``0t_mma_atom.md``: thread 0 of the 16x8x16 atom holds C (0,0),(0,1),(8,0),(8,1);
    thread 1 -> (0,2),(0,3),(8,2),(8,3); thread 4 -> (1,0),(1,1),(9,0),(9,1)."""
    a = cute.SM80_16x8x16_F32F16F16F32_TN()
    assert [a.thr_val_to_mn(0, v) for v in range(4)] == [(0, 0), (0, 1), (8, 0), (8, 1)]
    assert [a.thr_val_to_mn(1, v) for v in range(4)] == [(0, 2), (0, 3), (8, 2), (8, 3)]
    assert [a.thr_val_to_mn(4, v) for v in range(4)] == [(1, 0), (1, 1), (9, 0), (9, 1)]
    assert [a.thr_val_to_mk(0, v) for v in range(8)] == [(0, 0), (0, 1), (8, 0), (8, 1),
                                                        (0, 8), (0, 9), (8, 8), (8, 9)]
    # B: thread 0 holds (n,k) = (0,0),(0,1),(0,8),(0,9); thread 4 -> n = 1
    assert [a.thr_val_to_nk(0, v) for v in range(4)] == [(0, 0), (0, 1), (0, 8), (0, 9)]
    assert [a.thr_val_to_nk(4, v) for v in range(4)] == [(1, 0), (1, 1), (1, 8), (1, 9)]


def test_wgmma_accumulator_rows():
    """wgmma C: warp w of the warpgroup owns rows 16w..16w+15; thread t of a warp owns row
    t/4 and t/4+8, columns 2*(t%4) + {0,1} + 8j."""
    a = cute.SM90_64xNx16_F32F16F16_SS(32)
    for t in (0, 5, 37, 127):
        rows = {a.thr_val_to_mn(t, v)[0] for v in range(16)}
        w, l = divmod(t, 32)
        assert rows == {16 * w + l // 4, 16 * w + l // 4 + 8}
        cols = sorted({a.thr_val_to_mn(t, v)[1] for v in range(16)})
        assert cols == sorted(2 * (l % 4) + d + 8 * j for d in (0, 1) for j in range(4))


@pytest.mark.parametrize("atom", all_atoms(), ids=lambda a: repr(a))
def test_atom_laws(atom):
    """C is a bijection onto M*N; A and B cover M*K / N*K uniformly."""
    M, N, K = atom.shape_mnk
    T = atom.thr_id.size()
    for L, extent in ((atom.layout_C, M * N), (atom.layout_A, M * K), (atom.layout_B, N * K)):
        V = L.size() // T
        seen = Counter(layout_table(L))
        assert set(seen) == set(range(extent))
        assert len(set(seen.values())) == 1
    C = atom.layout_C
    assert len(set(layout_table(C))) == M * N
    t, v = 5 % T, 1 % (C.size() // T)
    assert layout_table(C)[t + T * v] == C((t, v))
    hash(atom)
    assert atom == type(atom)(**{f: getattr(atom, f) for f in atom.__dataclass_fields__})
    assert pickle.loads(pickle.dumps(atom)) == atom
    s = str(atom)
    assert atom.name in s and "LayoutC_TV" in s and atom.ptx.split()[0] in s


def test_ptx_and_types():
    a = cute.SM80_16x8x16_F32BF16BF16F32_TN()
    assert a.ptx == "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    assert (a.d_type, a.a_type, a.b_type, a.c_type) == ("float32", "bfloat16", "bfloat16", "float32")
    assert cute.SM80_16x8x8_F32TF32TF32F32_TN().a_type == "tfloat32"
    g = cute.SM90_64x192x16_F32BF16BF16_RS()
    assert g.ptx.startswith("wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16")
    assert g.a_source == "rmem" and g.b_source == "smem" and g.frg_type_B == "smem_desc"
    assert cute.SM90_64x64x16_F32F16F16_SS("MN", cute.GMMA.Major.MN).a_major == "MN"
    assert cute.SM90_64x64x16_F32F16F16_SS() == cute.SM90_64xNx16_F32F16F16_SS(64)
    assert cute.SM90_64x64x16_F32F16F16_SS("MN") != cute.SM90_64xNx16_F32F16F16_SS(64)


def test_atom_errors():
    with pytest.raises(AtomError, match="a_major"):
        cute.SM90_64xNx16_F32F16F16_RS(64, "MN", "K")
    with pytest.raises(AtomError, match="N"):
        cute.SM90_64xNx16_F32F16F16_SS(12)
    with pytest.raises(AtomError, match="N"):
        cute.SM90_64xNx16_F32BF16BF16_SS(264)
    with pytest.raises(AtomError, match="b_major"):
        cute.SM90_64xNx16_F32F16F16_SS(64, "K", "X")
    with pytest.raises(AtomError, match="type"):
        cute.UniversalFMA("float7")
    with pytest.raises(AtomError, match="layout_C"):
        cute.MMA_Atom("bad", Layout(32), (16, 8, 8), Layout((32, 4)), Layout((32, 2)),
                      Layout((16, 4)), "float32", "float16", "float16", "float32", "x")


# --- copy atoms -------------------------------------------------------------------------------

COPY_GOLDEN = [
    # (op, value type, ValLayoutSrc, ValLayoutDst, ValLayoutRef) -- printed by CuTe C++ 4.2
    (cute.SM75_U32x4_LDSM_N, "float16", "(32,8):(8,1)", "(32,(2,4)):(2,(1,64))", "(32,(2,4)):(2,(1,64))"),
    (cute.SM75_U16x8_LDSM_T, "float16", "(32,8):(8,1)", "((4,8),(1,2,4)):((16,1),(1,8,64))",
     "((4,8),(1,2,4)):((16,1),(1,8,64))"),
    (cute.SM90_U32x4_STSM_N, "float16", "(32,(2,4)):(2,(1,64))", "(32,8):(8,1)", "(32,(2,4)):(2,(1,64))"),
    (cute.SM80_CP_ASYNC_CACHEALWAYS(128), "float16", "(1,8):(0,1)", "(1,8):(0,1)", "(1,8):(0,1)"),
    (cute.SM80_CP_ASYNC_CACHEGLOBAL(128), "float32", "(1,4):(0,1)", "(1,4):(0,1)", "(1,4):(0,1)"),
    (cute.UniversalCopy(128), "uint128", "(1,1):(0,1)", "(1,1):(0,1)", "(1,1):(0,1)"),
    (cute.UniversalCopy, "float16", "(1,1):(0,1)", "(1,1):(0,1)", "(1,1):(0,1)"),
]


@pytest.mark.parametrize("op,T,src,dst,ref", COPY_GOLDEN)
def test_copy_atom_recast(op, T, src, dst, ref):
    a = cute.Copy_Atom(op, T)
    assert (str(a.val_layout_src), str(a.val_layout_dst), str(a.val_layout_ref)) == (src, dst, ref)
    assert a.cpp_str().endswith(f"ValueType:    {sizeof_bits(T)}b")
    hash(a)
    assert a == cute.Copy_Atom(op, T)
    assert pickle.loads(pickle.dumps(a)) == a


def test_copy_traits_bits():
    ld = cute.SM75_U32x4_LDSM_N()
    assert str(ld.src_layout) == "(32,128):(128,1)"
    assert str(ld.dst_layout) == "(32,(32,4)):(32,(1,1024))"
    assert ld.ref_layout == ld.dst_layout
    st = cute.SM90_U16x8_STSM_T()
    assert st.src_layout == cute.SM75_U16x8_LDSM_T().dst_layout
    assert st.dst_layout == cute.SM75_U16x8_LDSM_T().src_layout and st.ref_layout == st.src_layout
    x1 = cute.SM75_U32x1_LDSM_N()
    assert str(x1.src_layout) == "((8,4),128):((128,0),1)" and "x1.m8n8" in x1.ptx
    tma = cute.SM90_TMA_LOAD(box_shape=(64, 64), value_type="float16")
    assert str(tma.src_layout) == f"(1,{64 * 64 * 16}):(0,1)"
    assert cute.Copy_Atom(tma, "float16").num_val_src == 64 * 64
    assert cute.SM90_TMA_STORE(1024).kind == "tma_store"
    z = cute.SM80_CP_ASYNC_CACHEGLOBAL_ZFILL()
    assert z.zfill and "cp.async.cg.shared.global" in z.ptx
    assert "cp.async.ca" in cute.SM80_CP_ASYNC_CACHEALWAYS(32).ptx


def test_copy_errors():
    with pytest.raises(AtomError, match="bits"):
        cute.SM80_CP_ASYNC_CACHEGLOBAL(64)
    with pytest.raises(AtomError, match="bits"):
        cute.SM80_CP_ASYNC_CACHEALWAYS(256)
    with pytest.raises(AtomError, match="value_type"):
        cute.Copy_Atom(cute.SM75_U32x4_LDSM_N, "float64")     # 64 does not divide 32-bit regs
    with pytest.raises(AtomError, match="value_type"):
        cute.Copy_Atom(cute.UniversalCopy(32), "float64")
    with pytest.raises(AtomError, match="op"):
        cute.Copy_Atom("ldmatrix", "float16")
    with pytest.raises(AtomError, match="num_bits"):
        cute.SM90_TMA_LOAD()
    with pytest.raises(AtomError, match="type"):
        cute.Copy_Atom(cute.UniversalCopy(32), "float7")
