"""The Hopper GEMM for any BK its GMMA smem atoms allow (``gemm_sm90_maps.tile_k_rule``).

For a spread of (BK, swizzle, major) compositions (``make_gemm_sm90`` with the smem layouts
given): (a) the source compiles for sm_90a with zero spills; (b) a model of the hardware --
the descriptor the kernel builds (``make_gmma_desc`` / ``gmma_desc_add`` encoded, then decoded
into the PTX canonical layout of its layout type, LBO and SBO, the swizzle applied to the
address) -- reads, for every k-step and m-slab, exactly the bytes the smem layout gives the
``(64 x k)`` / ``(N x k)`` slice, and the TMA boxes (written row by row, inner mode first,
swizzled on the address) fill exactly the stage with each element where the layout puts it.
Refusals name ``tile_mnk`` / ``smem_layout_A`` / ``tile_k`` and the rule.  GPU (``gpu``):
a few compositions against a float64 reference."""

import os
import sys

import numpy as np
import pytest

from cute_py.atom import make_tiled_mma
from cute_py.atom import mma_traits_sm90 as T
from cute_py.errors import AtomError, LaunchError

from backends.cuda.arch.sm90.tma import TmaLoad
from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels.gemm_sm90_compose import make_gemm_sm90
from backends.cuda.kernels.gemm_sm90_maps import derive_maps, smem_tile, tile_k_rule

sys.path.insert(0, os.path.dirname(__file__))
from sm90_cta_model import desc_add as _desc_add  # noqa: E402
from sm90_cta_model import encode_desc as _encode_desc  # noqa: E402
from sm90_cta_model import tma_writes as _tma_writes  # noqa: E402
from sm90_cta_model import wgmma_reads as _wgmma_reads  # noqa: E402


def _mma(n, wgs=1, dt="f16", a="K", b="K"):
    fn = T.SM90_64xNx16_F32F16F16_SS if dt == "f16" else T.SM90_64xNx16_F32BF16BF16_SS
    return make_tiled_mma(fn(n, a, b), (wgs, 1, 1))


#: name -> (BM, BN, BK, wgs, dtype, a_major, b_major, swizzle A, swizzle B, extra)
COMBOS = {
    "bk16_k_sw32": (128, 128, 16, 2, "f16", "K", "K", 1, 1, {}),
    "bk16_k_inter_n32": (64, 32, 16, 1, "f16", "K", "K", 0, 0, {}),
    "bk32_k_sw64_sw32_bf16": (128, 128, 32, 2, "bf16", "K", "K", 2, 1, {}),
    "bk32_mn_sw128": (128, 128, 32, 2, "f16", "MN", "MN", 3, 3, {}),
    "bk32_k_sw64_n8": (128, 8, 32, 1, "f16", "K", "K", 2, 2, {}),
    "bk48_k_sw32_mn_sw64": (128, 128, 48, 2, "f16", "K", "MN", 1, 2, {}),
    "bk128_k_sw128": (128, 128, 128, 2, "f16", "K", "K", 3, 3, {}),
    "bk128_mn_sw128_k_sw128": (128, 128, 128, 2, "bf16", "MN", "K", 3, 3, {}),
    "bk128_k_sw64_pp_cluster2": (128, 128, 128, 1, "f16", "K", "K", 2, 2,
                                 dict(schedule="pingpong", cluster_m=2)),
    "bk256_k_sw128": (64, 64, 256, 1, "f16", "K", "K", 3, 3, {}),
    "bk256_mn_sw64_k_inter": (64, 64, 256, 1, "f16", "MN", "K", 2, 0, {}),
    "bk128_mn_sw32_cluster2": (128, 256, 128, 2, "f16", "K", "MN", 3, 1, dict(cluster_m=2)),
    # decode tiles as wide as fill the SMs: N a multiple of the MN-major B atom's 32 rows
    "bk64_mn_sw64_n96": (64, 96, 64, 1, "f16", "K", "MN", 3, 2, {}),
    "bk64_mn_sw64_n224": (64, 224, 64, 1, "bf16", "K", "MN", 3, 2, {}),
    "bk64_k_n88": (64, 88, 64, 1, "f16", "K", "K", 3, 3, {}),
}


def _compose(name):
    tm, tn, tk, wgs, dt, a, b, swa, swb, kw = COMBOS[name]
    return make_gemm_sm90(_mma(tn, wgs, dt, a, b), (tm, tn, tk), a_major=a, b_major=b,
                          smem_layout_A=smem_tile(dt, tm, tk, a, swa),
                          smem_layout_B=smem_tile(dt, tn, tk, b, swb), **kw)


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_tile_k_composition_compiles_without_spills(name):
    from backends.cuda.compiler import compile_module, has_compiler
    cfg = _compose(name)
    tm, tn, tk, *_ = COMBOS[name]
    assert (cfg.tile_m, cfg.tile_n, cfg.tile_k) == (tm, tn, tk)
    assert cfg.smem_swizzle == COMBOS[name][7:9]
    src = G.generate_source(cfg)
    assert f"x{tk}_s" in cfg.name
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    mod = compile_module(src, arch="sm_90a")
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res


# ------------------------------------------------------------------ the hardware's side


def _image(layout, r0, k0, rows, k, eb, base):
    """Byte addresses the smem layout gives ``(r0 + i, k0 + j)`` in a stage at ``base``: a
    GMMA atom is ``Swizzle o smem_ptr_flag o Layout`` -- the layout gives element offsets,
    the swizzle acts on the smem pointer's byte address (CuTe's ``smem_ptr_flag_bits``)."""
    from cute_py.composed import get_nonswizzle_portion, get_swizzle_portion
    inner, sw = get_nonswizzle_portion(layout), get_swizzle_portion(layout)
    f = np.vectorize(lambda i, j: inner((int(r0 + i), int(k0 + j))))
    i, j = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    addr = base + f(i, j) * eb
    yyy = ((1 << sw.B) - 1) << (sw.M + max(0, sw.S))
    return addr ^ ((addr & yyy) >> sw.S)


# a stage base the kernel can have: 1024-aligned smem (two stages in, to test the alignment)
_BASE = 0x8000


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_descriptors_read_the_smem_layout_slices(name):
    """Every k-step of every m-slab of every consumer warpgroup (A) and of B: the descriptor
    the kernel builds reads the smem layout's image of its (64 | N) x k slice."""
    cfg = _compose(name)
    maps = derive_maps(cfg)
    atom = maps.wgmma_atom
    k, eb = atom.k, maps.elem_bytes
    stage_a, stage_b = cfg.tile_m * cfg.tile_k * eb, cfg.tile_n * cfg.tile_k * eb
    rows_wg = cfg.tile_m // maps.consumer_wgs
    for which in ("A", "B"):
        op = maps.operand(which)
        lbo, sbo = op.lbo_sbo()
        for stage in (0, 1):
            base = _BASE + stage * (stage_a if which == "A" else stage_b)
            wgs = range(maps.consumer_wgs) if which == "A" else (0,)
            for w in wgs:
                d0 = _encode_desc(base + (maps.wg_a_offset(w) if which == "A" else 0), lbo,
                                  sbo, op.layout_type)
                for kk in range(cfg.tile_k // k):
                    slabs = range(maps.slabs) if which == "A" else (None,)
                    for j in slabs:
                        if which == "A":
                            off, r0, rows = maps.desc_a_offset(j, kk), w * rows_wg + 64 * j, 64
                        else:
                            off, r0, rows = maps.desc_b_offset(kk), 0, cfg.tile_n
                        got = _wgmma_reads(_desc_add(d0, off), op.major, rows, k, eb)
                        want = _image(op.layout, r0, k * kk, rows, k, eb, base)
                        assert np.array_equal(got, want), (name, which, stage, w, kk, j)


@pytest.mark.parametrize("name", sorted(COMBOS))
def test_tma_boxes_fill_the_stage_as_the_layout_says(name):
    cfg = _compose(name)
    maps = derive_maps(cfg)
    eb = maps.elem_bytes
    for which, atom, rows in (("A", maps.atom_a, cfg.tile_m), ("B", maps.atom_b,
                                                               maps.b_slice_rows)):
        op = maps.operand(which)
        # a cluster slice of B: the boxes of CTA `rank` land at the slice's offset
        ranks = range(cfg.cluster_m) if which == "B" else (0,)
        seen = np.zeros(cfg.tile_k * (cfg.tile_m if which == "A" else cfg.tile_n), int)
        for rank in ranks:
            slice0 = rank * rows if which == "B" else 0
            extra = maps.b_slice_offset(rank) if which == "B" else 0
            load = TmaLoad(atom, op, rows)
            for r0, k0, off in load.boxes(cfg.tile_k):
                got = _tma_writes(atom, extra + off, eb, _BASE)
                want = _image(op.layout, slice0 + r0, k0, load.box_rows, load.box_k, eb,
                              _BASE)
                assert np.array_equal(got, want), (name, which, rank, r0, k0)
                np.add.at(seen, (got.ravel() - _BASE) // eb, 1)
        assert (seen == 1).all(), (name, which)   # the stage, each element once


def test_tile_k_rule_and_refusals():
    assert tile_k_rule(64, 2, "K", 3) is None and tile_k_rule(128, 2, "K", 3) is None
    assert "128 bytes" in tile_k_rule(32, 2, "K", 3)           # SW128 is 64 f16 wide
    assert tile_k_rule(32, 2, "K", 2) is None and tile_k_rule(16, 2, "K", 1) is None
    assert tile_k_rule(16, 2, "MN", 3) is None
    assert "wgmma K" in tile_k_rule(24, 2, "MN", 3) and "256" in tile_k_rule(512, 2, "MN", 3)
    # the config: a K-major SW128 stage 32 wide is not canonical
    with pytest.raises(LaunchError) as e:
        G.Sm90GemmConfig(128, 128, 32, 4, 2).check()
    assert e.value.arg == "smem_swizzle" and "128 bytes" in str(e.value)
    with pytest.raises(LaunchError) as e:
        G.Sm90GemmConfig(128, 128, 40, 4, 2, smem_swizzle=(0, 0)).check()
    assert e.value.arg == "tile_k"
    G.Sm90GemmConfig(128, 128, 32, 4, 2, smem_swizzle=(2, 2)).check()
    # make_gemm_sm90: BK not a multiple of k16 / too wide
    for bk in (24, 8, 512):
        with pytest.raises(AtomError) as e:
            make_gemm_sm90(_mma(128, 2), (128, 128, bk))
        assert e.value.arg == "tile_mnk"
    # a layout that is not canonical for this BK: names the swizzles that are, and the rule
    with pytest.raises(AtomError) as e:
        make_gemm_sm90(_mma(128, 2), (128, 128, 32), smem_layout_A=smem_tile("f16", 128, 64))
    assert e.value.arg == "smem_layout_A"
    assert "SW64,SW32,INTER" in str(e.value) and "SW128: a K-major SW128" in str(e.value)
    # the default layouts: the widest swizzle that tiles the stage
    assert make_gemm_sm90(_mma(128, 2), (128, 128, 32)).smem_swizzle == (2, 2)
    assert make_gemm_sm90(_mma(128, 2), (128, 128, 16)).smem_swizzle == (1, 1)
    assert make_gemm_sm90(_mma(128, 2, "f16", "MN", "MN"), (128, 128, 16), a_major="MN",
                          b_major="MN").smem_swizzle == (3, 3)
    assert make_gemm_sm90(_mma(128, 2), (128, 128, 64)) == G.Sm90GemmConfig(
        128, 128, 64, make_gemm_sm90(_mma(128, 2), (128, 128, 64)).stages, 2)


# ------------------------------------------------------------------ GPU

GPU_COMBOS = ("bk16_k_sw32", "bk32_mn_sw128", "bk48_k_sw32_mn_sw64", "bk128_k_sw128",
              "bk128_mn_sw128_k_sw128", "bk256_mn_sw64_k_inter", "bk128_k_sw64_pp_cluster2",
              "bk64_mn_sw64_n96", "bk64_mn_sw64_n224", "bk64_k_n88")


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_COMBOS)
def test_gpu_tile_k_compositions_compute_the_product(name):
    from cute_py.backends.cuda.device import has_gpu
    from cute_py.backends.cuda.make_gemm import make_gemm
    if not has_gpu():
        pytest.skip("needs a CUDA GPU")
    torch = pytest.importorskip("torch")
    tm, tn, tk, wgs, dt_, a, b, swa, swb, kw = COMBOS[name]
    g = make_gemm(_mma(tn, wgs, dt_, a, b), (tm, tn, tk), a_major=a, b_major=b,
                  smem_layout_A=smem_tile(dt_, tm, tk, a, swa),
                  smem_layout_B=smem_tile(dt_, tn, tk, b, swb), **kw)
    assert repr(g.config) == repr(_compose(name))   # (two import paths: compare the text)
    dt = torch.bfloat16 if dt_ == "bf16" else torch.float16
    gen = torch.Generator(device="cuda").manual_seed(0)
    # K not a multiple of BK (a zero-filled last k-block), M / N not multiples of the tile;
    # every leading dimension a multiple of 16 bytes (operands read in place by TMA)
    for M, N, K in ((304, 200, 3 * tk + 24), (256, 2 * tn, tk), (136, 72, 1000)):
        A = torch.randn(M, K, device="cuda", generator=gen).to(dt)
        B = torch.randn(K, N, device="cuda", generator=gen).to(dt)
        if a != "K":
            A = A.t().contiguous().t()
        if b == "K":                  # K-major B: (K, N) with k contiguous, i.e. W.T
            B = B.t().contiguous().t()
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        g(A, B, out=out)
        torch.cuda.synchronize()
        ref = A.double().cpu().numpy() @ B.double().cpu().numpy()
        err = np.linalg.norm(out.double().cpu().numpy() - ref) / np.linalg.norm(ref)
        assert err < (2e-2 if dt == torch.bfloat16 else 3e-3), (name, M, N, K, err)
