"""Unusual SM80 GEMM compositions built from algebra objects (``make_gemm_sm80``).

Each composition: builds, round-trips through ``describe``, computes a correct product in the
NumPy CTA model over its lowered index maps (``sm80_cta_model``), and compiles for sm_80 with
zero spills.  What the hardware forbids raises AtomError naming the argument and the rule.
"""

import os
import sys

import numpy as np
import pytest

from cute_py.atom import make_tiled_mma
from cute_py.atom import mma_traits_sm80 as t
from cute_py.atom.copy_atom import make_copy_atom
from cute_py.atom.copy_traits import (SM80_CP_ASYNC_CACHEALWAYS_ZFILL,
                                      SM80_CP_ASYNC_CACHEGLOBAL_ZFILL, UniversalCopy)
from cute_py.atom.tiled_copy import make_tiled_copy
from cute_py.backends.cuda.arch.sm80 import smem as sm80_smem
from cute_py.backends.cuda.kernels.gemm_sm80 import generate_source, kernel_name
from cute_py.backends.cuda.kernels.gemm_sm80_compose import (describe, make_gemm_sm80, report,
                                                             bank_reports)
from cute_py.errors import AtomError
from cute_py.layout import make_layout

sys.path.insert(0, os.path.dirname(__file__))
from sm80_cta_model import simulate_cta  # noqa: E402

F16 = t.SM80_16x8x16_F32F16F16F32_TN
BF16 = t.SM80_16x8x16_F32BF16BF16F32_TN
TF32 = t.SM80_16x8x8_F32TF32TF32F32_TN


def _cp(bits, vt, thr, val):
    op = SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(128) if bits == 128 else \
        SM80_CP_ASYNC_CACHEALWAYS_ZFILL(bits)
    return make_tiled_copy(make_copy_atom(op, vt), thr, val)


def _sw(R, BK, major, eb, sw):
    return sm80_smem.smem_layout(R, BK, major, eb, sw)


# name -> (kwargs of make_gemm_sm80); tile sizes small so the CTA model stays quick
COMPOSITIONS = {
    "warps4x1": lambda: dict(tiled_mma=make_tiled_mma(F16(), (4, 1, 1)), tile=(128, 64, 32)),
    "warps1x4": lambda: dict(tiled_mma=make_tiled_mma(F16(), (1, 4, 1)), tile=(64, 128, 32)),
    "warps2x2_permuted_bf16_pipelined": lambda: dict(
        tiled_mma=make_tiled_mma(BF16(), (2, 2, 1), (make_layout((16, 2, 2), (1, 32, 16)),
                                                     make_layout((8, 2, 4), (1, 32, 8)), None)),
        tile=(64, 64, 32), stages=2, mainloop="pipelined"),
    "no_swizzle_A_K": lambda: dict(tiled_mma=make_tiled_mma(F16(), (2, 2, 1)), tile=(64, 64, 32),
                                   smem_layout_A=make_layout((64, 32), (32, 1))),
    "no_swizzle_MN_both": lambda: dict(tiled_mma=make_tiled_mma(F16(), (2, 2, 1)),
                                       tile=(64, 64, 32), a_major="M", b_major="N",
                                       smem_layout_A=_sw(64, 32, "MN", 2, None),
                                       smem_layout_B=_sw(64, 32, "MN", 2, None)),
    "swizzle_2_3_3_on_128B_rows": lambda: dict(tiled_mma=make_tiled_mma(F16(), (2, 2, 1)),
                                               tile=(64, 64, 64),
                                               smem_layout_A=_sw(64, 64, "K", 2, (2, 3, 3)),
                                               smem_layout_B=_sw(64, 64, "K", 2, (1, 3, 3))),
    "copy_column_major_threads": lambda: dict(
        tiled_mma=make_tiled_mma(F16(), (2, 2, 1)), tile=(64, 64, 32),
        copy_A=_cp(128, "float16", make_layout((32, 4), (1, 32)), make_layout((1, 8)))),
    "copy_8_byte_cp_async": lambda: dict(
        tiled_mma=make_tiled_mma(F16(), (2, 2, 1)), tile=(64, 64, 32),
        copy_A=_cp(64, "float16", make_layout((16, 8), (8, 1)), make_layout((1, 4))),
        copy_B=_cp(64, "float16", make_layout((16, 8), (8, 1)), make_layout((1, 4)))),
    "tf32_4_byte_cp_async_MN": lambda: dict(
        tiled_mma=make_tiled_mma(TF32(), (2, 2, 1)), tile=(64, 64, 32), b_major="N",
        copy_B=_cp(32, "float32", make_layout((64, 2), (1, 64)), make_layout((1, 1)))),
    "copy_rest_along_k": lambda: dict(
        tiled_mma=make_tiled_mma(F16(), (2, 2, 1)), tile=(64, 64, 32),
        copy_A=_cp(128, "float16", make_layout((64, 2), (2, 1)), make_layout((1, 8)))),
    "copy_rest_along_k_singlestage_universal": lambda: dict(
        tiled_mma=make_tiled_mma(F16(), (2, 2, 1)), tile=(64, 64, 32), stages=1,
        mainloop="singlestage",
        copy_B=make_tiled_copy(make_copy_atom(UniversalCopy(128), "float16"),
                               make_layout((64, 2), (2, 1)), make_layout((1, 8)))),
    "MN_major_threads_strided_first": lambda: dict(
        tiled_mma=make_tiled_mma(F16(), (2, 2, 1)), tile=(64, 64, 32), a_major="M",
        copy_A=_cp(128, "float16", make_layout((8, 16), (16, 1)), make_layout((8, 1)))),
    "tf32_warps4x1_no_swizzle": lambda: dict(tiled_mma=make_tiled_mma(TF32(), (4, 1, 1)),
                                             tile=(128, 32, 32),
                                             smem_layout_B=_sw(32, 32, "K", 4, None)),
}


@pytest.fixture(scope="module", params=sorted(COMPOSITIONS))
def composed(request):
    kw = COMPOSITIONS[request.param]()
    mma, tile = kw.pop("tiled_mma"), kw.pop("tile")
    return request.param, mma, tile, kw, make_gemm_sm80(mma, tile, **kw)


def test_composition_round_trips_describe(composed):
    name, mma, tile, kw, cfg = composed
    d = describe(cfg)
    assert d["tiled_mma"].atom == mma.atom
    assert d["tiled_mma"].atom_layout_mnk == mma.atom_layout_mnk
    for op in "AB":
        R = cfg.rows(op)
        if f"smem_layout_{op}" in kw:
            given = kw[f"smem_layout_{op}"]
            got = d[f"smem_layout_{op}"]
            assert all(got((r, k)) == given((r, k)) for r in range(R) for k in range(tile[2]))
        if f"copy_{op}" in kw:
            assert d[f"copy_{op}"].layout_tv == kw[f"copy_{op}"].layout_tv
            assert tuple(d[f"copy_{op}"].tile_shape) == tuple(kw[f"copy_{op}"].tile_shape)
    # objects back in give the same configuration
    again = make_gemm_sm80(mma, tile, **{**kw, "smem_layout_A": d["smem_layout_A"],
                                         "smem_layout_B": d["smem_layout_B"],
                                         "copy_A": d["copy_A"], "copy_B": d["copy_B"]})
    assert again == cfg


def test_composition_computes_the_product(composed):
    name, mma, tile, kw, cfg = composed
    rng = np.random.default_rng(3)
    BM, BN, BK = cfg.tile
    A = rng.integers(-4, 5, (BM, BK)).astype(float)
    B = rng.integers(-4, 5, (BN, BK)).astype(float)
    assert np.array_equal(simulate_cta(cfg, A, B), A @ B.T)


def test_composition_source_is_deterministic(composed):
    name, mma, tile, kw, cfg = composed
    src = generate_source(cfg)
    assert src == generate_source(cfg) and kernel_name(cfg) in src


def test_unswizzled_layout_reports_bank_conflicts():
    cfg = make_gemm_sm80(make_tiled_mma(F16(), (2, 2, 1)), (64, 64, 64),
                         smem_layout_A=_sw(64, 64, "K", 2, None))
    reps = bank_reports(cfg)
    assert not reps["ldmatrix_A"].conflict_free and reps["ldmatrix_B"].conflict_free
    assert "wavefronts per instruction" in report(cfg)


@pytest.mark.skipif(not __import__("cute_py.backends.cuda.compiler", fromlist=["x"]).has_compiler(),
                    reason="no CUDA compiler")
def test_compositions_compile_for_sm80_without_spills():
    from cute_py.backends.cuda.kernels.gemm_sm80 import precompile
    cfgs = []
    for name in sorted(COMPOSITIONS):
        kw = COMPOSITIONS[name]()
        cfgs.append(make_gemm_sm80(kw.pop("tiled_mma"), kw.pop("tile"), **kw))
    res = precompile(cfgs, arch="sm_80", processes=1)
    assert len(res) == len(cfgs)
    assert not [r for r in res if r[2]], res
    assert all(0 < regs <= 255 for _, regs, _ in res)


# ------------------------------------------------------------------ what the hardware forbids

def test_illegal_cp_async_vectors_are_refused():
    mma = make_tiled_mma(F16(), (2, 2, 1))
    wide = _cp(128, "float16", make_layout((64, 2), (2, 1)), make_layout((1, 16)))
    with pytest.raises(AtomError, match="copy_A.*16 bytes"):          # 32 bytes per thread
        make_gemm_sm80(mma, (64, 64, 32), copy_A=wide)
    across = _cp(128, "float16", make_layout((8, 16), (16, 1)), make_layout((8, 1)))
    with pytest.raises(AtomError, match="copy_A.*contiguous"):        # vector along m, K-major A
        make_gemm_sm80(mma, (64, 64, 32), copy_A=across)
    one = make_tiled_copy(make_copy_atom(UniversalCopy(16), "float16"),
                          make_layout((32, 4), (4, 1)), make_layout((1, 1)))
    with pytest.raises(AtomError, match="cp.async"):                  # multistage needs cp.async
        make_gemm_sm80(mma, (64, 64, 32), copy_A=one)


def test_misaligned_ldmatrix_rows_are_refused():
    # Sw<3,2,3> moves 8-byte units of 16-bit data: an ldmatrix row is no longer 16 contiguous bytes
    from cute_py.algebra import composition
    from cute_py.swizzle import Swizzle
    L = composition(Swizzle(3, 2, 3), sm80_smem.plain_of(_sw(64, 64, "K", 2, (3, 3, 3))))
    with pytest.raises(AtomError, match="smem_layout_A"):
        make_gemm_sm80(make_tiled_mma(F16(), (2, 2, 1)), (64, 64, 64), smem_layout_A=L,
                       copy_A=_cp(64, "float16", make_layout((8, 16), (16, 1)),
                                  make_layout((1, 4))))  # 8-byte copies stay legal


def test_tile_not_divisible_and_smem_limit_are_refused():
    with pytest.raises(AtomError, match="tile"):
        make_gemm_sm80(make_tiled_mma(F16(), (4, 1, 1)), (96, 64, 32))
    with pytest.raises(AtomError, match="stages") as e:
        make_gemm_sm80(make_tiled_mma(F16(), (2, 4, 1)), (128, 256, 64), stages=4)
    assert "sm_80" in str(e.value)
    # the same fits the H100's 227 KB
    make_gemm_sm80(make_tiled_mma(F16(), (2, 4, 1)), (128, 256, 64), stages=3, arch="sm_90a")


def test_interleaved_permutation_is_refused():
    mma = make_tiled_mma(F16(), (2, 2, 1), (make_layout(32), make_layout(16), None))
    with pytest.raises(AtomError, match="tiled_mma"):
        make_gemm_sm80(mma, (64, 64, 32))
