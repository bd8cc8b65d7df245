"""The SM80 GEMM's index maps agree with the layout algebra's objects (CPU only).

* smem: ``SmemLayout(R, BK, major, eb)`` == ``composition(Swizzle<B,M,S>, tile_to_shape(atom,
  (R, BK)))`` with CuTe's SM80 atoms, at every coordinate (and so does its CUDA function);
* mma fragments: ``fragment_coord`` / ``accumulator_coord`` == the MMA atoms' TV layouts
  (``SM80_16x8x16_F32F16F16F32_TN``, ``SM80_16x8x8_F32TF32TF32F32_TN``);
* gmem->smem copy: ``CopyMap`` == ``make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL_ZFILL>,
  thr_layout (T/cpl, cpl):(cpl, 1), val_layout (1, vec))`` (K-major; transposed for MN-major),
  repeated over the tile.
"""

import pytest

from cute_py.backends.cuda.kernels.gemm_sm80_maps import (SmemLayout, fragment_coord,
                                                          accumulator_coord)
from cute_py.backends.cuda.kernels.gemm_sm80_configs import shipped_configs

algebra = pytest.importorskip("cute_py.algebra")
from cute_py.layout import make_layout  # noqa: E402
from cute_py.swizzle import Swizzle  # noqa: E402


def cute_smem_layout(lay: SmemLayout):
    B, M, S = lay.swizzle
    W = lay.W
    atom = make_layout((8, W), (W, 1)) if lay.major == "K" else make_layout((W, 8), (1, W))
    L = algebra.composition(Swizzle(B, M, S), algebra.tile_to_shape(atom, (lay.R, lay.BK)))
    assert L == lay.cute()
    return L


def _layouts():
    seen = set()
    for c in shipped_configs():
        for op in "AB":
            lay = c.smem_layout(op)
            if lay not in seen:
                seen.add(lay)
                yield lay


@pytest.mark.parametrize("lay", list(_layouts()), ids=str)
def test_smem_layout_equals_algebra(lay):
    from cute_py.backends.cuda.ir import evaluate
    L = cute_smem_layout(lay)
    node = lay.lowered()  # what the kernel's smem_off_A/B functions are rendered from
    assert node is not None
    for r in range(lay.R):
        for k in range(lay.BK):
            want = L((r, k))
            assert lay(r, k) == want
            if (r * 7 + k) % 5 == 0:
                assert evaluate(node, {"r": r, "k": k}) == want


def _tv_coord(layout, thr, val, rows):
    idx = layout((thr, val))
    return idx % rows, idx // rows


@pytest.mark.parametrize("kind", ["f16", "tf32"])
def test_fragments_equal_mma_atom_tv_layouts(kind):
    from cute_py.atom import mma_traits_sm80 as t
    atom = (t.SM80_16x8x16_F32F16F16F32_TN() if kind == "f16"
            else t.SM80_16x8x8_F32TF32TF32F32_TN())
    mk = 16 if kind == "f16" else 8
    per = 2 if kind == "f16" else 1  # elements per 32-bit register
    for lane in range(32):
        for v in range(4 * per):
            reg, half = v // per, v % per
            assert _tv_coord(atom.layout_A, lane, v, 16) == fragment_coord("A", mk, lane, reg,
                                                                           half)
        for v in range(2 * per):
            reg, half = v // per, v % per
            n, k = fragment_coord("B", mk, lane, reg, half)
            assert _tv_coord(atom.layout_B, lane, v, 8) == (n, k)
        for v in range(4):
            assert _tv_coord(atom.layout_C, lane, v, 16) == accumulator_coord(lane, v)


@pytest.mark.parametrize("cfg", [c for c in shipped_configs() if c.vec_a > 1][:8],
                         ids=lambda c: f"{c.dtype}-{c.a_major}{c.b_major}-{c.tile}")
def test_copy_map_equals_tiled_copy(cfg):
    from cute_py.atom.copy_traits import SM80_CP_ASYNC_CACHEGLOBAL_ZFILL
    from cute_py.atom.copy_atom import make_copy_atom
    from cute_py.atom.tiled_copy import make_tiled_copy
    vt = "float16" if cfg.elem_bytes == 2 else "float32"
    for op in "AB":
        cm = cfg.copy_map(op)
        lines = cm.threads // cm.cpl
        tc = make_tiled_copy(make_copy_atom(SM80_CP_ASYNC_CACHEGLOBAL_ZFILL(128), vt),
                             make_layout((lines, cm.cpl), (cm.cpl, 1)),
                             make_layout((1, cm.vec)))
        for t in range(cm.threads):
            for i in range(cm.iterations):
                for v in range(cm.vec):
                    s, c = _tv_coord(tc.layout_tv, t, v, lines)  # (strided, contiguous) in tile
                    s += i * lines  # the tiled copy repeats down the strided mode
                    want = (s, c) if cm.major == "K" else (c, s)
                    r, k = cm.coord(t, i)
                    got = (r, k + v) if cm.major == "K" else (r + v, k)
                    assert got == want


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
    with pytest.raises(AtomError, match="smem_layout_A"):
        make_gemm_sm80(d["tiled_mma"], cfg.tile, smem_layout_A=make_layout((128, 32), (32, 1)))
    plain = make_tiled_copy(make_copy_atom(UniversalCopy(128), "float16"),
                            make_layout((64, 4), (4, 1)), make_layout((1, 8)))
    with pytest.raises(AtomError, match="copy_A"):
        make_gemm_sm80(d["tiled_mma"], cfg.tile, copy_A=plain)
    with pytest.raises(AtomError, match="tile"):
        make_gemm_sm80(d["tiled_mma"], (128, 256))


@pytest.mark.parametrize("dtype", ["f16", "tf32"])
def test_epilogue_coordinates_lowered_from_layout_C(dtype):
    from cute_py.backends.cuda.kernels.gemm_sm80_maps import accumulator_c_exprs
    exprs = accumulator_c_exprs(dtype)
    for lane in range(32):
        for h, (me, ne) in enumerate(exprs):
            assert (eval(me, {"lane": lane}), eval(ne, {"lane": lane})) == \
                accumulator_coord(lane, 2 * h)
