"""The SM80 GEMM's lowered index maps agree with the layout algebra's objects (CPU only).

* smem: the configuration's layout is ``composition(Swizzle<B,M,S>, tile_to_shape(atom,
  (R, BK)))`` with CuTe's SM80 atoms, and its lowered IR evaluates to it at every coordinate;
* mma fragments: the coordinates lowered from the MMA atoms' TV layouts
  (``SM80_16x8x16_F32F16F16F32_TN``, ``SM80_16x8x8_F32TF32TF32F32_TN``) are the PTX ISA's
  fragment tables;
* gmem->smem copy: the configuration's copy is ``make_tiled_copy(Copy_Atom<cp.async>,
  thr_layout, val_layout)`` with the generator's row-major thread layout.
"""

import numpy as np
import pytest

from cute_py.backends.cuda import ir
from cute_py.backends.cuda.arch.sm80 import mma as sm80_mma
from cute_py.backends.cuda.arch.sm80 import smem as sm80_smem
from cute_py.backends.cuda.kernels.gemm_sm80_configs import shipped_configs

algebra = pytest.importorskip("cute_py.algebra")
from cute_py.layout import make_layout  # noqa: E402
from cute_py.swizzle import Swizzle  # noqa: E402


def _layouts():
    seen = set()
    for c in shipped_configs():
        for op in "AB":
            key = (c.rows(op), c.tile[2], c.major(op), c.elem_bytes)
            if key not in seen:
                seen.add(key)
                yield key


@pytest.mark.parametrize("key", list(_layouts()), ids=str)
def test_smem_layout_equals_algebra(key):
    R, BK, major, eb = key
    L = sm80_smem.smem_layout(R, BK, major, eb)
    W = min(BK if major == "K" else R, 128 // eb)
    atom = make_layout((8, W), (W, 1)) if major == "K" else make_layout((W, 8), (1, W))
    B = (W * eb // 16).bit_length() - 1
    M = (16 // eb).bit_length() - 1
    want = algebra.composition(Swizzle(B, M, 3), algebra.tile_to_shape(atom, (R, BK)))
    node = sm80_smem.offset(L, ir.var("r", 0, R - 1), ir.var("k", 0, BK - 1))
    got = ir.evaluate(node, {"r": np.arange(R).reshape(R, 1), "k": np.arange(BK).reshape(1, BK)})
    for r in range(R):
        for k in range(BK):
            assert got[r, k] == want((r, k)) == L((r, k))


def _ptx_a(mk, lane, reg, half):
    g, t = lane // 4, lane % 4
    if mk == 16:
        return (g + 8 * (reg % 2), 2 * t + half + 8 * (reg // 2))
    return (g + 8 * (reg % 2), t + 4 * (reg // 2))


def _ptx_b(mk, lane, reg, half):
    g, t = lane // 4, lane % 4
    return (g, 2 * t + half + 8 * reg) if mk == 16 else (g, t + 4 * reg)


@pytest.mark.parametrize("kind", ["f16", "bf16", "tf32"])
def test_lowered_fragments_are_the_ptx_tables(kind):
    """The PTX ISA's mma.sync fragment tables (m16n8k16 / m16n8k8) == the lowered TV layouts."""
    mk = 16 if kind != "tf32" else 8
    per = 2 if kind != "tf32" else 1
    ev = lambda xs: tuple(int(ir.evaluate(x, {})) for x in xs)  # noqa: E731
    for lane in range(32):
        for v in range(4 * per):
            assert ev(sm80_mma.fragment_coord(kind, "A", lane, v)) == _ptx_a(mk, lane, v // per,
                                                                             v % per)
        for v in range(2 * per):
            assert ev(sm80_mma.fragment_coord(kind, "B", lane, v)) == _ptx_b(mk, lane, v // per,
                                                                             v % per)
        for v in range(4):
            g, t = lane // 4, lane % 4
            assert ev(sm80_mma.accumulator_coord(kind, lane, v)) == (g + 8 * (v // 2),
                                                                       2 * t + v % 2)


@pytest.mark.parametrize("cfg", [c for c in shipped_configs() if c.vec_a > 1][:8],
                         ids=lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-{c.tile}")
def test_copy_is_the_row_major_tiled_copy(cfg):
    from cute_py.atom.copy_atom import make_copy_atom
    from cute_py.atom.tiled_copy import make_tiled_copy
    from cute_py.backends.cuda.arch.sm80.copy import copy_op
    vt = "float16" if cfg.elem_bytes == 2 else "float32"
    for op in "AB":
        R, BK, vec = cfg.rows(op), cfg.tile[2], cfg.vec(op)
        contiguous = BK if cfg.major(op) == "K" else R
        cpl = contiguous // vec
        lines = cfg.threads // cpl
        atom = make_copy_atom(copy_op(vec * cfg.elem_bytes, cfg.mainloop == "multistage"), vt)
        if cfg.major(op) == "K":
            want = make_tiled_copy(atom, make_layout((lines, cpl), (cpl, 1)), make_layout((1, vec)))
        else:
            want = make_tiled_copy(atom, make_layout((cpl, lines), (1, cpl)), make_layout((vec, 1)))
        got = cfg.gmem_copy(op)
        assert got.layout_tv == want.layout_tv and got.tile_shape == want.tile_shape


# ------------------------------------------------------------------------ composing from objects

def test_make_gemm_sm80_round_trips_describe():
    from cute_py.backends.cuda.kernels.gemm_sm80_compose import make_gemm_sm80, describe
    from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config
    for cfg in (default_config(8192, 8192, 8192), default_config(64, 64, 64, a_major="M"),
                default_config(8192, 8192, 8192, dtype="tf32", out_dtype="f32", b_major="N")):
        d = describe(cfg)
        back = make_gemm_sm80(d["tiled_mma"], cfg.tile, stages=cfg.stages,
                              mainloop=cfg.mainloop, a_major=cfg.a_major, b_major=cfg.b_major,
                              smem_layout_A=d["smem_layout_A"], smem_layout_B=d["smem_layout_B"],
                              copy_A=d["copy_A"], copy_B=d["copy_B"])
        assert back == cfg


def test_make_gemm_sm80_rejects_what_it_cannot_generate():
    from cute_py.atom import make_tiled_mma, SM80_16x8x8_F32F16F16F32_TN
    from cute_py.atom.copy_atom import make_copy_atom
    from cute_py.atom.copy_traits import UniversalCopy
    from cute_py.atom.tiled_copy import make_tiled_copy
    from cute_py.backends.cuda.kernels.gemm_sm80_compose import make_gemm_sm80, describe
    from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config
    from cute_py.errors import AtomError
    with pytest.raises(AtomError, match="tiled_mma"):
        make_gemm_sm80(make_tiled_mma(SM80_16x8x8_F32F16F16F32_TN(), (2, 2, 1)), (128, 128, 32))
    cfg = default_config(8192, 8192, 8192)
    d = describe(cfg)
    with pytest.raises(AtomError, match="smem_layout_A"):   # k not contiguous: no ldmatrix
        make_gemm_sm80(d["tiled_mma"], cfg.tile, smem_layout_A=make_layout((128, 32), (1, 128)))
    # the plain (unswizzled) K-major layout is the atom tiling without a swizzle: accepted
    plain_cfg = make_gemm_sm80(d["tiled_mma"], cfg.tile, smem_layout_A=make_layout((128, 32), (32, 1)))
    assert plain_cfg.swizzle_a is None
    plain = make_tiled_copy(make_copy_atom(UniversalCopy(128), "float16"),
                            make_layout((64, 4), (4, 1)), make_layout((1, 8)))
    with pytest.raises(AtomError, match="copy_A"):
        make_gemm_sm80(d["tiled_mma"], cfg.tile, copy_A=plain)
    with pytest.raises(AtomError, match="tile"):
        make_gemm_sm80(d["tiled_mma"], (128, 256))


@pytest.mark.parametrize("dtype", ["f16", "tf32"])
def test_epilogue_coordinates_lowered_from_layout_C(dtype):
    exprs = sm80_mma.accumulator_c_exprs(dtype)
    for lane in range(32):
        for h, (me, ne) in enumerate(exprs):
            assert (eval(me, {"lane": lane}), eval(ne, {"lane": lane})) == \
                (lane // 4 + 8 * h, 2 * (lane % 4))
