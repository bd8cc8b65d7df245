"""The SM90 FP8 wgmma atoms against CuTe C++ (``mma_traits_sm90_gmma.hpp`` and ``_ext``):
shape, thread IDs and the A / B / C TV layouts of every accumulator x input-format x source
combination at a spread of N; plus the K-major-only rule and the argument errors."""

import itertools

import pytest

import cute_py as cute
from cute_py import AtomError
from cute_py.atom.mma_traits_sm90 import SM90_64xNx32_FP8

import cpp_oracle as co

NS = (8, 24, 64, 128, 200, 256)
COMBOS = [(n, d, a, b, s) for n in NS for d in ("F32", "F16") for a, b in
          (("E4M3", "E4M3"), ("E4M3", "E5M2"), ("E5M2", "E4M3"), ("E5M2", "E5M2"))
          for s in ("SS", "RS")]


def _ours(n, d, a, b, s):
    at = SM90_64xNx32_FP8(n, d, a, b, s)
    return " ".join(str(x) for x in (at.shape_mnk, at.thr_id, at.layout_A, at.layout_B,
                                     at.layout_C)).replace(" ", "")


@pytest.mark.skipif(not co.available(), reason="CuTe C++ headers / g++ not available")
def test_fp8_atoms_match_cute_cpp():
    import test_cute_gaps as gaps
    old = gaps._PRELUDE
    gaps._PRELUDE = old + ("#include <cute/arch/mma_sm90_gmma_ext.hpp>\n"
                          "#include <cute/atom/mma_traits_sm90_gmma_ext.hpp>\n")
    try:
        stmts = [f"using T = MMA_Traits<SM90_64x{n}x32_{d}{a}{b}_{s}_TN<>>; "
                 "print(typename T::Shape_MNK{}); print(typename T::ThrID{}); "
                 "print(typename T::ALayout{}); print(typename T::BLayout{}); "
                 "print(typename T::CLayout{});" for n, d, a, b, s in COMBOS]
        got = gaps.run_cpp(stmts)
    finally:
        gaps._PRELUDE = old
    bad = [(c, g, _ours(*c)) for c, g in zip(COMBOS, got) if g.replace(" ", "") != _ours(*c)]
    assert not bad, bad[:3]


def test_named_constructors_are_the_generic_atom():
    assert cute.SM90_64x128x32_F32E4M3E4M3_SS_TN() == SM90_64xNx32_FP8(128)
    at = cute.SM90_64x64x32_F16E5M2E4M3_RS_TN()
    assert (at.d_type, at.a_type, at.b_type) == ("float16", "float8_e5m2", "float8_e4m3")
    assert at.registers[3] == ("uint32", 16)          # 64 x 64 halves packed in pairs / 128
    assert at.ptx.startswith("wgmma.mma_async.sync.aligned.m64n64k32.f16.e5m2.e4m3")
    assert (at.a_major, at.b_major) == ("K", "K")
    assert cute.nvgpu.sm90.SM90_64x8x32_F32E4M3E4M3_SS_TN is cute.SM90_64x8x32_F32E4M3E4M3_SS_TN


def test_accumulator_covers_the_tile_once():
    from collections import Counter
    for n in (8, 136, 256):
        C = SM90_64xNx32_FP8(n).layout_C
        hits = Counter(C(t, v) for t, v in itertools.product(range(128), range(n // 2)))
        assert sorted(hits) == list(range(64 * n)) and set(hits.values()) == {1}


@pytest.mark.parametrize("kw, arg", [
    (dict(N=12), "N"), (dict(N=264), "N"), (dict(N=64, d="F64"), "d"),
    (dict(N=64, a="E3M4"), "a"), (dict(N=64, b=8), "b"), (dict(N=64, src="SR"), "src")])
def test_argument_errors_name_the_argument(kw, arg):
    with pytest.raises(AtomError) as e:
        SM90_64xNx32_FP8(**kw)
    assert e.value.arg == arg
