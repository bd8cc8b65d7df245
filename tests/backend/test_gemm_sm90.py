"""Hopper GEMM: CPU-side tests (generation, compile for sm_90a with zero spills, maps
derived from the algebra vs the hand-written ones, TMA box derivation, lowering of the pipeline
description) and GPU tests (float64 reference, poisoned outputs, odd sizes, batched, beta*C).

The SM90 kernel is sm_90a-only (wgmma, setmaxnreg); for sm_80 the same source compiles to an
empty body (everything is under ``__CUDA_ARCH_FEAT_SM90_ALL``), which the compile test checks
too so a multi-arch build never breaks.
"""

import dataclasses

import pytest

import cute_py as cute
from cute_py.errors import LaunchError, LayoutError
from cute_py.backends.cuda.kernels import gemm_sm90 as G
from cute_py.backends.cuda.gemm_api import gemm_sm90
from cute_py.backends.cuda.kernels.gemm_sm90_maps import (derive_maps, fragment_from_clayout,
                                                          smem_tile)
from cute_py.backends.cuda.kernels.gemm_sm90_ptxgen import wgmma_block
from cute_py.backends.cuda.tma import make_tma_atom
from cute_py.backends.cuda import INCLUDE_DIR
from cute_py.pipeline import PipelineTmaAsync

from cute_py.backends.cuda.device import has_gpu

requires_gpu = pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("cfg", G.SHIPPED_CONFIGS, ids=lambda c: c.name)
def test_shipped_configs_compile_sm90a_zero_spills(cfg):
    from cute_py.backends.cuda.compiler import compile_module
    src = G.generate_source(cfg)
    assert src == G.generate_source(cfg)                 # deterministic text
    mod = compile_module(src, arch="sm_90a")
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert "C7508" not in mod.log                         # setmaxnreg not ignored


@pytest.mark.parametrize("i", range(27))
def test_epilogue_configs_compile_sm90a_zero_spills(i):
    from cute_py.backends.cuda.compiler import compile_module
    cfg = G.shipped_epilogue_configs()[i]
    src = G.generate_source(cfg)
    mod = compile_module(src, arch="sm_90a")
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert cfg.smem_bytes() <= 227 * 1024
    assert compile_module(src, arch="sm_80").resources_for(cfg.name).spills == 0


def test_shipped_epilogue_config_count():
    assert len(G.shipped_epilogue_configs()) == 27


def test_pingpong_source_structure():
    """Ping-pong: each consumer warpgroup owns every other tile of the CTA, skips the other's
    k-blocks (state += k_blocks), takes turns through the ordered-sequence named barriers 3/4,
    releases stages alone (4 warp arrivals), and runs its own epilogue instance (named barrier
    1 + cw, its own smem region and C barriers)."""
    from cute_py.epilogue import evt
    cfg = G.Sm90GemmConfig(64, 256, 64, 4, 2, "f16", schedule="pingpong",
                           epi=G.make_epilogue_config(evt.linear_combination(), 64, 256,
                                                      schedule="pingpong", load_path="tma"))
    src = G.generate_source(cfg)
    assert cfg.pipeline().empty_arrive_count == 4
    assert "tile += 2 * tile_step" in src
    assert "if (cw > 0) {\n      const int a_ = idx + (cw * k_blocks);" in src
    assert ("if (tile != first_tile) {\n        named_barrier_sync(3u + (u32)((cw + 1) & 1), "
            "256u);") in src
    assert ("if (tile + tile_step < num_tiles) {\n        named_barrier_arrive(3u + (u32)(cw), "
            "256u);") in src
    assert "named_barrier_sync((1 + cw), 128);" in src
    R = cfg.epilogue_region_bytes()
    assert R % 1024 == 0 and cfg.epilogue_smem_bytes() == 2 * R
    assert f"cute_epi_smem_base + {R} * cw" in src
    assert "warp_id() >= 1 && warp_id() <= 2" in src        # one C producer per warpgroup
    assert cfg.order().groups == 2
    assert derive_maps(cfg).frag.num_threads == 128
    coop = G.Sm90GemmConfig(epi=G.make_epilogue_config(evt.linear_combination()))
    assert "named_barrier_sync(3u" not in G.generate_source(coop)   # no ping-pong order barrier


def test_compiles_for_sm80_as_empty_kernel():
    from cute_py.backends.cuda.compiler import compile_module
    cfg = G.SHIPPED_CONFIGS[0]
    mod = compile_module(G.generate_source(cfg), arch="sm_80")
    assert mod.resources_for(cfg.name).spills == 0


def test_sass_has_hgmma_and_utmaldg():
    import os
    import shutil
    import subprocess
    import tempfile
    exe = shutil.which("cuobjdump")
    if exe is None or shutil.which("nvdisasm") is None:
        pytest.skip("cuobjdump/nvdisasm not installed")
    from cute_py.backends.cuda.compiler import compile_module
    cfg = G.SHIPPED_CONFIGS[0]
    mod = compile_module(G.generate_source(cfg), arch="sm_90a")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.cubin")
        open(p, "wb").write(mod.cubin)
        sass = subprocess.run([exe, "-sass", p], capture_output=True, text=True).stdout
    assert "HGMMA.64x256x16.F32" in sass
    assert "UTMALDG" in sass
    assert "LDL" not in sass and "STL" not in sass


def test_header_wgmma_block_is_generated_text():
    import os
    t = open(os.path.join(INCLUDE_DIR, "cute_py", "ptx_sm90.cuh")).read()
    blk = t.split("// BEGIN GENERATED WGMMA\n")[1].split("// END GENERATED WGMMA")[0]
    assert blk.strip() == wgmma_block().strip()


@pytest.mark.parametrize("cfg", G.SHIPPED_CONFIGS[:5], ids=lambda c: c.name)
def test_fragment_matches_algebra_clayout(cfg):
    """The accumulator map used by the epilogue == CuTe's CLayout_64xN evaluated."""
    maps = derive_maps(cfg)
    rows = cfg.tile_m // cfg.consumer_wgs
    table = fragment_from_clayout(cfg.tile_n, cfg.consumer_wgs, rows)
    fr = maps.frag
    for t in range(0, fr.num_threads, 7):
        for v in range(fr.num_values):
            assert fr.coord(t, v) == table[t][v]


def test_descriptor_offsets_from_smem_layout():
    maps = derive_maps(G.Sm90GemmConfig(128, 256, 64, 4, 2))
    assert maps.sbo == 1024 and maps.layout_type == 1
    assert [maps.desc_a_offset(0, kk) for kk in range(4)] == [0, 32, 64, 96]
    assert maps.wg_a_offset(1) == 64 * 128
    assert [maps.desc_b_offset(kk) for kk in range(4)] == [0, 32, 64, 96]
    sa = smem_tile("f16", 128, 64)
    # the swizzled tile is a bijection onto [0, 128*64)
    offs = {sa(m, k) for m in range(128) for k in range(64)}
    assert offs == set(range(128 * 64))


@pytest.mark.parametrize("majors", [("K", "MN"), ("MN", "K"), ("MN", "MN")])
@pytest.mark.parametrize("cluster", [1, 2])
def test_mn_major_configs_compile_sm90a_zero_spills(majors, cluster):
    from cute_py.backends.cuda.compiler import compile_module
    cfg = G.Sm90GemmConfig(a_major=majors[0], b_major=majors[1], cluster_m=cluster,
                           epi=G.make_epilogue_config())
    src = G.generate_source(cfg)
    ta, tb = (int(m == "MN") for m in majors)
    assert f"_ss<{ta}, {tb}>" in src                      # wgmma transpose bits
    mod = compile_module(src, arch="sm_90a")
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert compile_module(src, arch="sm_80").resources_for(cfg.name).spills == 0


def test_mn_major_maps_from_algebra():
    """MN-major SW128 tiles: 64-element chunks of 64 k-rows (8 KB), LBO = chunk distance,
    SBO = 8 k-rows (1 KB); one TMA box (64 x 64) per chunk, at the chunk's smem offset; the
    descriptor start of k-step kk is 16 k-rows further (2 KB)."""
    maps = derive_maps(G.Sm90GemmConfig(128, 256, 64, 4, 2, a_major="MN", b_major="MN"))
    assert (maps.lbo, maps.sbo, maps.lbo_b, maps.sbo_b) == (8192, 1024, 8192, 1024)
    assert maps.transpose_bits == (1, 1)
    assert [maps.desc_a_offset(0, kk) for kk in range(4)] == [0, 2048, 4096, 6144]
    assert maps.wg_a_offset(1) == 8192
    assert maps.atom_a.box == (64, 64, 1) and maps.atom_a.g_modes == (0, 1, 2)
    from cute_py.backends.cuda import ir
    from cute_py.backends.cuda.arch.sm90.tma import TmaLoad
    from cute_py.backends.cuda.builder import KernelBuilder
    kb = KernelBuilder("k", threads=384, origin="t")
    TmaLoad(maps.atom_b, maps.operand("B"), 256).emit(
        kb, ir.var("sB", 0, 1 << 20), "&tmB", "fb", ir.var("n0", 0, 1 << 20),
        ir.var("kc", 0, 1 << 20), ir.var("l", 0, 7))
    loads = kb.text()
    assert loads.count("tma_load_3d(") == 4 and "sB + 24576" in loads and "n0 + 192" in loads
    sb = smem_tile("f16", 256, 64, "MN")
    assert {sb(n, k) for n in range(256) for k in range(64)} == set(range(256 * 64))
    inner = cute.get_nonswizzle_portion(sb)
    # the box of chunk c fills [8192 c, 8192 (c + 1)) with n fastest, then k
    for i in range(0, 256 * 64, 101):
        c, r = divmod(i, 4096)
        k, n = divmod(r, 64)
        assert inner(64 * c + n, k) == i
    # binding: the contiguous mode is the rows (stride 1), K strides by the leading dimension
    b = maps.tma_atom("B", 4096, 1000, 1, 4104, 0)
    assert b.dims == (4096, 1000, 1) and b.strides[0] == 4104 * 2
    with pytest.raises(LaunchError):
        maps.tma_atom("B", 4096, 1000, 1, 4099, 0)                 # 8198-byte pitch
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(tile_n=64, cluster_m=2, b_major="MN").check()
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(a_major="M").check()


def test_tma_box_law():
    """For every smem offset i, the box element i is g_tile(right_inverse(smem)(i))."""
    sa = smem_tile("f16", 128, 64)
    lda = 4104
    atom = make_tma_atom("f16", (1000, 4099, 3), (lda, 1, 1000 * lda), sa)
    assert atom.box == (64, 128, 1) and atom.g_modes == (1, 0, 2)
    assert atom.dims == (4099, 1000, 3) and atom.strides == (2 * lda, 2 * 1000 * lda)
    assert atom.swizzle_bits == 3 and atom.smem_bytes == 128 * 64 * 2
    inner = cute.get_nonswizzle_portion(sa)
    for i in range(0, 128 * 64, 97):
        m, k = divmod(i, 64)               # box order: k innermost, then m
        assert inner(m, k) == i


def test_default_l2_promotion():
    from cute_py.backends.cuda.tma import default_l2_promotion
    assert default_l2_promotion(1 << 20, (4096, 4096 * 1000)) == 3      # 128-byte rows
    assert default_l2_promotion(1 << 20, (4080,)) == 2                  # K = 2040 halves
    assert default_l2_promotion((1 << 20) + 16, (4096,)) == 2           # base off a line
    assert default_l2_promotion(1 << 20, ()) == 3                       # one row


def test_tma_errors():
    sa = smem_tile("f16", 128, 64)
    with pytest.raises(LaunchError):
        make_tma_atom("f16", (100, 333), (333, 1), sa)             # 666-byte pitch
    with pytest.raises(LayoutError):
        make_tma_atom("f16", (100, 64), (1, 100), sa)              # M-major gmem, K-major smem
    with pytest.raises(LaunchError):
        make_tma_atom("f64x", (100, 64), (64, 1), sa)
    big = smem_tile("f16", 512, 64)
    with pytest.raises(LaunchError):
        make_tma_atom("f16", (1024, 4096), (4096, 1), big)         # box > 256
    atom = make_tma_atom("f16", (1000, 4096), (4096, 1), sa)
    with pytest.raises(LaunchError) as e:                          # checked before the driver
        atom.encode(1 << 20, l2_promotion=4)
    assert e.value.arg == "l2_promotion"


def test_pipeline_lowering_uses_description():
    d = PipelineTmaAsync(stages=5, consumer_arrivals=8, transaction_bytes=49152)
    from cute_py.backends.cuda.arch.sm90.pipeline import PipelineEmitter, smem_address
    from cute_py.backends.cuda.builder import KernelBuilder
    pl = PipelineEmitter(d, smem_address("bar_full"), smem_address("bar_empty"))
    kb = KernelBuilder("k", threads=384, origin="t")
    pl.init(kb)
    pl.producer_acquire(kb, "i", "p")
    pl.increment(kb, "i", "p")
    t = kb.text()
    assert "mbarrier_init(bar_empty + s_ * 8, 8u);" in t
    assert "49152u" in t
    assert "== 5" in t
    src = G.generate_source(G.SHIPPED_CONFIGS[0])
    assert G.SHIPPED_CONFIGS[0].pipeline().transaction_bytes == (128 + 256) * 64 * 2
    assert "mbarrier_arrive_expect_tx" in src and "mbarrier_wait_parity" in src


def test_config_errors():
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(tile_k=32).check()
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(stages=7).check()                          # > 227 KB smem
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(tile_m=256, tile_n=256).check()            # 256 accumulators/thread
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(dtype="f32").check()
    with pytest.raises(LaunchError):
        G.Sm90GemmConfig(consumer_wgs=3).check()
    with pytest.raises(LaunchError, match="schedule"):
        G.Sm90GemmConfig(schedule="stream-k").check()
    with pytest.raises(LaunchError, match="consumer_wgs"):
        G.Sm90GemmConfig(64, 256, consumer_wgs=1, schedule="pingpong").check()
    with pytest.raises(LaunchError, match="tile_m"):            # a 256-row tile per warpgroup
        G.Sm90GemmConfig(256, 64, schedule="pingpong").check()
    with pytest.raises(LaunchError, match="tile"):              # 128x256 per warpgroup: 256 acc
        G.Sm90GemmConfig(128, 256, schedule="pingpong").check()
    with pytest.raises(LaunchError, match="epi"):               # cooperative fragment
        G.Sm90GemmConfig(128, 128, schedule="pingpong",
                         epi=G.make_epilogue_config(None, 128, 128)).check()
    with pytest.raises(LaunchError, match="tile_m"):            # 32 rows per warpgroup
        G.make_epilogue_config(None, 64, 256)
    with pytest.raises(LaunchError, match="tile_n"):            # not a multiple of 32
        G.make_epilogue_config(None, 128, 80)
    # 32-column multiples are TMA-store tiles (an 8-bit D at 160: 32-column subtiles)
    assert G.make_epilogue_config(None, 128, 96).epilogue_tile == (128, 32)
    assert G.make_epilogue_config(None, 128, 160, element_d="float8_e4m3").epilogue_tile == \
        (128, 32)
    assert G.make_epilogue_config(None, 128, 192, element_d="float8_e4m3").epilogue_tile == \
        (128, 64)
    with pytest.raises(LaunchError, match="cluster_m"):         # 36-row B slices
        G.Sm90GemmConfig(128, 72, cluster_m=2).check()
    assert G.Sm90GemmConfig(128, 80, cluster_m=2).check().tile_n == 80   # 40-row slices


def test_cluster_shapes_checked_and_named():
    """2-D clusters: 1 or 2 CTAs along each mode; A's slices whole smem atoms; refused with
    a_rows, stream-K, "ksplit" and the "fixup" split-K (one slot per unit), each naming the
    field.  The kernel name carries the shape; a cluster of one along N keeps the old name."""
    for bad in (3, 0, True):
        with pytest.raises(LaunchError) as e:
            G.Sm90GemmConfig(cluster_n=bad).check()
        assert e.value.arg == "cluster_n"
    with pytest.raises(LaunchError) as e:                       # 32-row MN-major A slices
        G.Sm90GemmConfig(64, 256, a_major="MN", consumer_wgs=1, cluster_n=2).check()
    assert e.value.arg == "cluster_n"
    with pytest.raises(LaunchError) as e:
        G.Sm90GemmConfig(64, 64, consumer_wgs=1, a_rows=16, cluster_n=2).check()
    assert e.value.arg == "cluster_n"
    with pytest.raises(LaunchError) as e:
        G.Sm90GemmConfig(128, 128, stages=6, stream_k=True, cluster_n=2).check()
    assert e.value.arg == "stream_k"
    for cm, cn in ((2, 1), (1, 2)):
        with pytest.raises(LaunchError) as e:
            G.Sm90GemmConfig(128, 64, split_k="fixup", cluster_m=cm, cluster_n=cn).check()
        assert e.value.arg == "split_k"
    c = G.Sm90GemmConfig(cluster_m=2, cluster_n=2).check()
    assert c.cluster_size == 4 and "_c2x2_" in c.name
    assert "_c2_" in G.Sm90GemmConfig(cluster_m=2).name
    assert c.pipeline().empty_arrive_count == 4 * 8                 # every CTA's 8 warps
    assert c.units(1000, 776) == 4 * 2 and G.Sm90GemmConfig().units(1000, 776, 3) == 8 * 4 * 3
    with pytest.raises(LaunchError, match="schedule"):
        G.make_epilogue_config(None, schedule="ping")


# --------------------------------------------------------------------------- GPU


def _ref(A, B, dt, C=None, alpha=1.0, beta=0.0):
    import cupy as cp

    def f64(X):
        if dt == "f16":
            return X.astype(cp.float64)
        return (X.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)
    r = alpha * cp.matmul(f64(A), f64(B).swapaxes(-1, -2))
    if C is not None:
        r += beta * f64(C)
    return r, f64


def _meta(ptr, strides, itemsize=2):
    """A TensorMeta stand-in for a device array (strides in bytes, as NumPy gives them)."""
    from cute_py.backends.cuda.tensors import TensorMeta
    st = tuple(x // itemsize for x in strides)
    shape = tuple(4 for _ in strides)
    return TensorMeta(ptr, shape, st, "float16", itemsize, 0, "cupy")


def test_rows_128():
    assert G.rows_128(_meta(1 << 20, (4096, 2)))              # K = 2048 halves, K-major
    assert not G.rows_128(_meta(1 << 20, (4080, 2)))          # K = 2040: 16-byte pitch
    assert not G.rows_128(_meta((1 << 20) + 16, (4096, 2)))   # base off a 128-byte line
    assert G.rows_128(_meta(1 << 20, (2, 8192)))              # rows-contiguous ("MN")
    assert not G.rows_128(_meta(1 << 20, (2, 8000)))
    assert not G.rows_128(_meta(1 << 20, (4096 * 100 + 16, 4096, 2)))   # batch stride


def test_tma_major():
    """K-contiguous operands are "K", rows-contiguous "MN", anything TMA cannot read in place
    (row pitch not a multiple of 16 bytes, misaligned base) None (copied first)."""
    assert G.tma_major(_meta(1 << 20, (4096, 2))) == "K"
    assert G.tma_major(_meta(1 << 20, (2, 4096))) == "MN"
    assert G.tma_major(_meta(1 << 20, (666, 2))) is None          # K = 333 halves
    assert G.tma_major(_meta((1 << 20) + 8, (4096, 2))) is None
    assert G.tma_major(_meta(1 << 20, (4096 * 100 + 8, 4096, 2))) is None   # batch stride


@pytest.mark.parametrize("use_c", [False, True])
def test_default_evt_config(use_c):
    """The one-call default: ping-pong 64x256 (C loaded by the consumer threads) when operand
    rows start on 128-byte boundaries, else the cooperative kernel; 128x128 for skinny
    problems.  Every choice compiles (CPU) and keeps the operand majors."""
    pp = G.default_evt_config("f16", 256, use_c, "MN", "K")
    assert (pp.schedule, pp.tile_m, pp.tile_n, pp.stages) == ("pingpong", 64, 256, 5)
    assert (pp.a_major, pp.b_major) == ("MN", "K")
    assert pp.epi.load_path == ("direct" if use_c else "tma")
    assert ("C" in pp.epi.tree.signature) == use_c
    coop = G.default_evt_config("bf16", 256, use_c, rows_128=False)
    assert (coop.schedule, coop.tile_m, coop.tile_n, coop.stages) == ("cooperative", 128, 256, 4)
    assert coop.epi.load_path == "tma" and coop.epi.element_d == "bfloat16"
    # the cooperative kernels' stores from a store warp, half a tile staged, where the C
    # stages leave room (never fewer mainloop stages than without it)
    assert coop.epi.store_warp == (not use_c)
    skinny = G.default_evt_config("f16", 128, use_c)
    assert (skinny.schedule, skinny.tile_n, skinny.stages) == ("cooperative", 128, 6)
    assert skinny.epi.store_warp and skinny.epi.stages_d == 2
    for cfg in (coop, skinny):
        plain = dataclasses.replace(cfg, epi=dataclasses.replace(
            cfg.epi, store_warp=False, stages_d=2)).fit_stages(4 if cfg.tile_n == 256 else 5)
        assert G.half_tile_store_warp(plain) == cfg
        assert cfg.stages >= plain.stages
    c2 = G.default_evt_config("f16", 256, use_c, "K", "MN", False, 2)
    assert (c2.schedule, c2.tile_m, c2.cluster_m, c2.b_major) == ("cooperative", 128, 2, "MN")
    for cfg in (pp, coop, skinny, c2):
        cfg.check()
    shipped = G.shipped_epilogue_configs()      # compiled by the shipped-config tests
    assert G.default_evt_config("f16" if not use_c else "bf16", 256, use_c, "K", "MN", False,
                                2) in shipped


def test_with_store_warp_buffers():
    """``with_store_warp(cfg, buffers=b)``: b staging buffers (1 .. the subtile count; None:
    all), the tile, tree and fragment unchanged; other counts are refused naming
    ``buffers``."""
    base = G.evt_config(None, "f16", 256, "K", "K", False, 1)
    plain = dataclasses.replace(base, epi=dataclasses.replace(
        base.epi, store_warp=False, stages_d=2)).fit_stages(4)
    n = len(plain.epilogue().subtiles)
    for b in (1, 2, n // 2, n):
        c = G.with_store_warp(plain, buffers=b)
        assert c.epi.store_warp and c.epi.stages_d == b
        assert (c.tile_m, c.tile_n, c.epi.tree, c.epi.fragment) == \
            (plain.tile_m, plain.tile_n, plain.epi.tree, plain.epi.fragment)
    assert G.with_store_warp(plain) == G.with_store_warp(plain, buffers=n)
    for bad in (0, n + 1, True, 2.0):
        with pytest.raises(LaunchError) as e:
            G.with_store_warp(plain, buffers=bad)
        assert e.value.arg == "buffers"


def test_coop_tile_n_law():
    """The cooperative width minimises tile-rounds x width / relative throughput over
    COOP_WIDTHS (ties to the wider); choose_config takes it for operand rows off 128 bytes
    with a K-major B (3000x3000x2000 ``x @ W.T``: 192; at 3000x5000x2000 the wave model's
    256x160 tile beats it, ``wide_tile_n``), keeps 256 (clusters of two) for an N-contiguous
    B and the ping-pong kernel for rows on 128 bytes."""
    from cute_py.backends.cuda.tensors import TensorMeta
    for M, N in ((3000, 5000), (4096, 4096), (2048, 8192), (3000, 3000), (8192, 14336), (777, 999)):
        costs = {tn: -(-(-(-M // 128) * -(-N // tn)) // 132) * tn / e for tn, e in G.COOP_WIDTHS}
        best = min(costs.values())
        assert G.coop_tile_n(M, N) == max(tn for tn, c in costs.items() if c <= best + 1e-9)
    assert [G.coop_tile_n(*mn) for mn in ((3000, 5000), (4096, 4096), (2048, 8192))] == \
        [192, 256, 256]

    def meta(shape, strides):
        return TensorMeta(1 << 20, shape, strides, "float16", 2, 0, "torch", None)
    M, N, K = 3000, 5000, 2000
    A, D = meta((M, K), (K, 1)), meta((M, N), (N, 1))
    xwt = G.choose_config(A, meta((N, K), (K, 1)), D, None, True, 132)
    assert (xwt.schedule, xwt.tile_m, xwt.tile_n, xwt.cluster_m) == ("cooperative", 256, 160, 1)
    assert xwt.epi.store_warp and xwt.epi.stages_d == 1 and xwt.stages == 4
    sq3 = G.choose_config(meta((3000, K), (K, 1)), meta((3000, K), (K, 1)),
                          meta((3000, 3000), (3000, 1)), None, True, 132)
    assert (sq3.schedule, sq3.tile_m, sq3.tile_n) == ("cooperative", 128, 192)
    assert sq3.epi.store_warp and sq3.epi.stages_d == 3
    ab = G.choose_config(A, meta((N, K), (1, N)), D, None, True, 132)
    assert (ab.schedule, ab.tile_n, ab.cluster_m) == ("cooperative", 256, 2)
    sq = G.choose_config(meta((4096, 4096), (4096, 1)), meta((4096, 4096), (4096, 1)),
                         meta((4096, 4096), (4096, 1)), None, True, 132)
    assert (sq.schedule, sq.tile_m, sq.tile_n) == ("pingpong", 64, 256)


def test_cluster_for():
    """Clusters of 2 exactly for an N-contiguous B (row-major ``(K, N)``) whose rows are off
    128-byte boundaries, on 256-wide tiles."""
    from cute_py.backends.cuda.tensors import TensorMeta

    def b_nk(N, K, n_contig, ptr=1 << 20):
        strides = (1, N) if n_contig else (K, 1)
        return TensorMeta(ptr, (N, K), strides, "float16", 2, 0, "torch", None)
    assert G.cluster_for(b_nk(5000, 2000, True), 256) == 2      # pitch 10000 bytes
    assert G.cluster_for(b_nk(4040, 4096, True), 256) == 2
    assert G.cluster_for(b_nk(4096, 2000, True), 256) == 1      # pitch 8192: on 128 bytes
    assert G.cluster_for(b_nk(5000, 2000, False), 256) == 1     # K-major (x @ W.T)
    assert G.cluster_for(b_nk(5000, 2000, True), 128) == 1
    assert G.cluster_for(b_nk(4096, 2000, True, ptr=(1 << 20) + 16), 256) == 2


def test_make_epilogue_config_pingpong_load_path():
    """Ping-pong trees that read C / aux load them directly (no C smem: 5 mainloop stages fit)
    unless a load path or a TMA-path option is asked for; cooperative keeps TMA."""
    from cute_py.epilogue import evt
    relu, gelu = evt.lin_comb_bias_elt_act("relu"), evt.lin_comb_bias_elt_act("gelu", beta=0.0,
                                                                              alpha=1.0)
    aux = evt.AccFetch() + evt.AuxLoad("z", "float16")
    pp = dict(tile_m=64, tile_n=256, schedule="pingpong")
    assert G.make_epilogue_config(relu, **pp).load_path == "direct"
    assert G.make_epilogue_config(aux, **pp).load_path == "direct"
    assert G.make_epilogue_config(gelu, **pp).load_path == "tma"          # nothing to load
    assert G.make_epilogue_config(relu, **pp, load_path="tma").load_path == "tma"
    for opt in (dict(reuse_smem_c=True), dict(stages_c=3), dict(prefetch_l2=True)):
        assert G.make_epilogue_config(relu, **pp, **opt).load_path == "tma"
    assert G.make_epilogue_config(relu).load_path == "tma"
    cfg = G.Sm90GemmConfig(64, 256, 64, 5, 2, "f16", schedule="pingpong",
                           epi=G.make_epilogue_config(relu, **pp))
    assert cfg.fit_stages(5).stages == 5


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("K", [192, 200])
def test_gemm_sm90_default_lincomb_gpu(K):
    """``D = alpha * A @ B + beta * C`` through the one-call default on a problem large enough
    for 64x256 tiles: K = 192 (rows on 128-byte boundaries: ping-pong, C loaded directly) and
    K = 200 (cooperative); in place (D is C) too."""
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    rng = cp.random.default_rng(K)
    M, N = 2304, 2568
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B = rng.standard_normal((N, K), dtype=cp.float32).astype(cp.float16)
    C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
    ref, f64 = _ref(A, B, "f16", C, 1.5, 0.5)
    D = cp.full((M, N), cp.nan, cp.float16)
    gemm_sm90(A, B, D, C, 1.5, 0.5)
    assert float(cp.linalg.norm(f64(D) - ref) / cp.linalg.norm(ref)) < 2e-3
    gemm_sm90(A, B, C, C, 1.5, 0.5)                    # in place: C's values read first
    assert float(cp.linalg.norm(f64(C) - ref) / cp.linalg.norm(ref)) < 2e-3
    used = {(c.schedule, c.tile_n) for c in G._CACHE if c.epi is not None
            and "C" in c.epi.tree.signature}
    assert (("pingpong", 256) if K == 192 else ("cooperative", G.coop_tile_n(M, N))) in used


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("N", [391, 396, 392])
def test_gemm_sm90_padded_d_keeps_its_padding_gpu(N):
    """D (and C) as column slices of wider buffers: the default kernel writes D's N columns and
    nothing past them.  TMA stores write whole 16-byte chunks, so rows that end mid-chunk (N % 8
    != 0 halves) must take the predicated epilogue; "Fused epilogue v2" found the TMA-store epilogue
    zeroing column N of such a buffer."""
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    rng = cp.random.default_rng()
    M, K, W = 517, 264, 408
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B = rng.standard_normal((N, K), dtype=cp.float32).astype(cp.float16)
    for use_c in (False, True):
        Db = cp.full((M, W), cp.nan, cp.float16)
        Cb = rng.standard_normal((M, W), dtype=cp.float32).astype(cp.float16)
        D, C = Db[:, :N], Cb[:, :N]
        gemm_sm90(A, B, D, C if use_c else None, 1.5 if use_c else 1.0, 0.5 if use_c else 0.0)
        ref, f64 = _ref(A, B, "f16", C if use_c else None, 1.5 if use_c else 1.0, 0.5)
        assert bool(cp.isnan(Db[:, N:]).all()), (N, use_c)       # the padding is untouched
        err = float(cp.linalg.norm(f64(D) - ref) / cp.linalg.norm(ref))
        assert err < 2e-3, (N, use_c, err)
    # an explicit TMA-store configuration refuses such a D instead
    if N % 8:
        g = G.Sm90Gemm(G.Sm90GemmConfig(epi=G.make_epilogue_config()))
        with pytest.raises(LaunchError) as e:
            g.prepare(A, B, cp.empty((M, W), cp.float16)[:, :N])
        assert e.value.arg == "D"


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("shape", [(1, 1, 1, None), (1000, 777, 333, None),
                                   (4095, 4097, 4099, None), (300, 200, 136, 3),
                                   (256, 1024, 512, None), (2000, 4096, 520, None)])
def test_gemm_sm90_gpu(dt, shape):
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from benchmarks.gemm_sm90_variants import check_case
    M, N, K, L = shape
    rng = cp.random.default_rng()
    err = check_case(lambda A, B, D, C, a, b: gemm_sm90(A, B, D, C, a, b), M, N, K, dt, rng,
                     L=L)
    assert err < (2e-3 if dt == "f16" else 1e-2), err
    err = check_case(lambda A, B, D, C, a, b: gemm_sm90(A, B, D, C, a, b), M, N, K, dt, rng,
                     L=L, alpha=1.5, beta=0.5)
    assert err < (2e-3 if dt == "f16" else 1e-2), err


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("majors", [("K", "MN"), ("MN", "K"), ("MN", "MN")])
@pytest.mark.parametrize("shape", [(1000, 776, 333, None), (4095, 4096, 520, None),
                                   (300, 200, 136, 3), (64, 128, 64, None)],
                         ids=["1000x776x333", "4095x4096x520", "L3x300x200x136", "64x128x64"])
def test_gemm_sm90_mn_major_gpu(dt, majors, shape):
    """Operands read in place through the MN-major path (no K-major copy): A as ``At.T``, B as
    ``Bkn.T``, fresh random data, poisoned D, float64 reference, residues in M, N and K, batched;
    the one-call path and the plain (direct-epilogue) kernel."""
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from benchmarks.gemm_sm90_variants import _rand
    M, N, K, L = shape
    lead = () if L is None else (L,)
    rng = cp.random.default_rng()

    def operand(rows, major):
        if major == "K":          # a padded, 16-byte aligned pitch: TMA reads it in place
            return _rand(lead + (rows, -(-K // 8) * 8), dt, rng)[..., :K]
        pad = -(-rows // 8) * 8 + 8                     # a padded leading dimension
        X = _rand(lead + (K, pad), dt, rng)[..., :rows]
        return X.swapaxes(-1, -2)
    A, B = operand(M, majors[0]), operand(N, majors[1])
    from cute_py.backends.cuda.tensors import meta_of
    assert G.tma_major(meta_of(A, 'A', 't')) == majors[0] and \
        G.tma_major(meta_of(B, 'B', 't')) == majors[1]
    ref, f64 = _ref(A, B, dt)
    tol = 2e-3 if dt == "f16" else 1e-2
    for run in ("one-call", "direct"):
        D = cp.empty(lead + (M, N), dtype=A.dtype)
        D.view(cp.uint16).fill(0x7E00 if dt == "f16" else 0x7FC0)
        if run == "one-call":
            gemm_sm90(A, B, D)
        else:
            G.Sm90Gemm(G.Sm90GemmConfig(dtype=dt, a_major=majors[0], b_major=majors[1],
                                        vec2=False))(A, B, D)
        out = f64(D)
        assert not bool(cp.isnan(out).any()), run
        err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
        assert err < tol, (run, err)
    with pytest.raises(LaunchError):                    # majors that do not match the arrays
        G.Sm90Gemm(G.Sm90GemmConfig(dtype=dt, a_major="MN" if majors[0] == "K" else "K",
                                    b_major=majors[1]))(A, B)


def test_tma_bind_errors_and_law():
    import cute_py as cute
    sa = smem_tile("f16", 128, 64)
    M, K, L, ld, ldl = cute.symbols("M K L ld ldl")
    atom = make_tma_atom("f16", (M, K, L), (ld, 1, ldl), sa)     # runtime extents and strides
    assert atom.dims == (K, M, L) and atom.strides == (2 * ld, 2 * ldl)
    b = atom.bind((1000, 4096, 1), (4104, 1, 4104 * 1000))
    assert b.dims == (4096, 1000, 1) and b.strides == (8208, 8208000) and b.box == atom.box
    assert b == make_tma_atom("f16", (1000, 4096, 1), (4104, 1, 4104 * 1000), sa)
    with pytest.raises(LaunchError):
        atom.bind((1000, 333, 1), (333, 1, 333000))                   # odd pitch
    with pytest.raises(LaunchError):
        atom.bind((1000, 64, 1), (1, 1000, 64000))                    # inner mode not unit


def test_default_path_picks_tiles_and_epilogue():
    cfgs = G.shipped_epilogue_configs()
    assert all(c.epi is not None and c.smem_bytes() <= 227 * 1024 for c in cfgs)
    assert {c.tile_n for c in cfgs} == {128, 160, 192, 256}
    assert {c.tile_m for c in cfgs} == {64, 128, 256}


@requires_gpu
@pytest.mark.gpu
def test_gemm_sm90_evt_relu_lincomb_bias_gpu():
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    from cute_py.epilogue import evt
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    tree = evt.lin_comb_bias_elt_act("relu", bias="col")
    g = G.Sm90Gemm(G.Sm90GemmConfig(cluster_m=2, epi=G.make_epilogue_config(tree)))
    rng = cp.random.default_rng()
    M, N, K = 1000, 776, 336
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B = rng.standard_normal((N, K), dtype=cp.float32).astype(cp.float16)
    C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
    bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
    D = cp.full((M, N), cp.nan, dtype=cp.float16)
    names = {n for n, (role, _) in tree.signature.items() if role == "scalar"}
    tens = {"C": C, "bias": bias, **{n: (1.5 if "alpha" in n else 0.5) for n in names}}
    g(A, B, D, tensors=tens)
    ref = cp.maximum(1.5 * A.astype(cp.float64) @ B.astype(cp.float64).T
                     + 0.5 * C.astype(cp.float64) + bias.astype(cp.float64)[None, :], 0)
    out = D.astype(cp.float64)
    assert not bool(cp.isnan(out).any())
    assert float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref)) < 2e-3


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("kind", ["pp64x256", "pp128x128_c2", "pp64x256_evt", "pp128x128_evt_c2",
                                  "coop256x128_evt", "coop128x256_evt_ef", "pp64x256_evt_ef",
                                  "pp64x256_evt_reuse", "pp64x256_evt_direct",
                                  "coop128x256_evt_direct", "coop256x128_evt_direct"])
@pytest.mark.parametrize("shape", [(1000, 776, 333), (2047, 1536, 1100), (64, 256, 64),
                                   (3000, 4000, 72), (200, 520, 328)],
                         ids=["1000x776x333", "2047x1536x1100", "64x256x64", "3000x4000x72",
                              "200x520x328"])
def test_gemm_sm90_pingpong_gpu(dt, kind, shape):
    """Ping-pong kernels (and the 2-slab cooperative EVT; ``_ef``: epilogue TMA with L2
    evict_first hints): fresh random data, poisoned D,
    float64 reference, each on the full persistent grid and on 6 CTAs (many tiles per CTA and
    per warpgroup).  Shapes: residues in M/N/K; k-blocks not a multiple of the stages (a
    skipping warpgroup's phase must be right); one tile (warpgroup 1 idle); ~190 tiles with
    k_blocks = 2 < stages; a small case for compute-sanitizer."""
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    from cute_py.epilogue import evt
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    M, N, K = shape
    ed = "float16" if dt == "f16" else "bfloat16"
    tm, tn = (64, 256) if "64x256" in kind else (256, 128) if "256x128" in kind else \
        (128, 256) if "128x256" in kind else (128, 128)
    sched = "pingpong" if kind.startswith("pp") else "cooperative"
    evt_tree = "evt" in kind
    tree = evt.lin_comb_bias_elt_act("relu", bias="col", element_c=ed, element_bias=ed) \
        if evt_tree else None
    epi = G.make_epilogue_config(tree, tm, tn, element_d=ed, schedule=sched,
                                 l2_evict_first=kind.endswith("_ef"),
                                 reuse_smem_c=kind.endswith("_reuse"),
                                 load_path="direct" if kind.endswith("_direct") else "tma") \
        if (evt_tree or sched == "cooperative") else None
    cfg = G.Sm90GemmConfig(tm, tn, 64, 3 if tm == 256 else 5 if kind.startswith("pp") and (
        "reuse" in kind or "direct" in kind) else 4, 2, dt,
                           schedule=sched, epi=epi,
                           cluster_m=2 if "c2" in kind else 1, vec2=False)
    g = G.Sm90Gemm(cfg)
    rng = cp.random.default_rng()
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from benchmarks.gemm_sm90_variants import _rand
    Kp = -(-K // 8) * 8
    A = _rand((M, Kp), dt, rng)[:, :K]
    B = _rand((N, Kp), dt, rng)[:, :K]
    Np = -(-N // 8) * 8
    D = cp.empty((M, Np), dtype=A.dtype)[:, :N]
    D.view(cp.uint16).fill(0x7E00 if dt == "f16" else 0x7FC0)
    ref, f64 = _ref(A, B, dt)
    tens = None
    if evt_tree:
        C = _rand((M, Np), dt, rng)[:, :N]
        bias = _rand((N,), dt, rng)
        names = {n for n, (role, _) in tree.signature.items() if role == "scalar"}
        tens = {"C": C, "bias": bias, **{n: (1.5 if "alpha" in n else 0.5) for n in names}}
        ref = cp.maximum(1.5 * ref + 0.5 * f64(C) + f64(bias)[None, :], 0)
    for max_ctas in (None, 6):
        D.view(cp.uint16).fill(0x7E00 if dt == "f16" else 0x7FC0)
        g.prepare(A, B, D, max_ctas=max_ctas, tensors=tens)()
        out = f64(D)
        assert not bool(cp.isnan(out).any()), max_ctas
        err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
        assert err < (2e-3 if dt == "f16" else 1e-2), (max_ctas, err)


@requires_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("sched, load_path", [("pingpong", None), ("pingpong", "tma"),
                                              ("cooperative", "tma"), ("cooperative", "direct")])
def test_gemm_sm90_prefetched_vectors_and_pointer_scalar_gpu(sched, load_path):
    """Broadcast vectors (row and column, fp16 / fp32), a bf16 device-pointer scalar and C, all
    loaded by ``prefetch_code`` before each tile's mainloop: many tiles per CTA (6 CTAs), odd
    sizes, poisoned D, float64 reference."""
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    from cute_py.epilogue.evt import AccFetch, ColBroadcast, RowBroadcast, ScalarBroadcast, SrcFetch
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    tree = (AccFetch() * ScalarBroadcast("s", ptr=True, dtype="bfloat16")
            + ColBroadcast("cb", "float32") * SrcFetch("float16") + RowBroadcast("rb", "float16"))
    tm = 64 if sched == "pingpong" else 128
    kw = {} if load_path is None else {"load_path": load_path}
    cfg = G.Sm90GemmConfig(tm, 256, 64, 4, 2, "f16", schedule=sched, epi=G.make_epilogue_config(
        tree, tm, 256, schedule=sched, **kw)).fit_stages(5)
    g = G.Sm90Gemm(cfg)
    rng = cp.random.default_rng(7)
    M, N, K = 1000, 776, 320
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B = rng.standard_normal((N, K), dtype=cp.float32).astype(cp.float16)
    C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
    cb = rng.standard_normal((M,), dtype=cp.float32)
    rb = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
    sv = cp.asarray([0x3FC0], dtype=cp.uint16)                    # bf16 1.5
    ref, f64 = _ref(A, B, "f16")
    ref = 1.5 * ref + cb.astype(cp.float64)[:, None] * f64(C) + f64(rb)[None, :]
    D = cp.empty((M, N), cp.float16)
    for max_ctas in (None, 6):
        D.fill(cp.nan)
        g.prepare(A, B, D, max_ctas=max_ctas, tensors={"s": sv, "cb": cb, "rb": rb, "C": C})()
        assert not bool(cp.isnan(D).any()), max_ctas
        err = float(cp.linalg.norm(f64(D) - ref) / cp.linalg.norm(ref))
        assert err < 2e-3, (max_ctas, err)


@requires_gpu
@pytest.mark.gpu
def test_gemm_sm90_copied_operands_share_one_plan_gpu():
    """Operands TMA cannot read in place (K = 333 halves: 666-byte rows) are copied for each
    call; plans are keyed by metadata, not pointers, so one plan serves every call (the copies'
    metadata does not change) and the copies are not kept alive by it."""
    import cupy as cp
    from cute_py.backends.cuda import gemm_api
    from cute_py.backends.cuda.device import device_properties
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")
    rng = cp.random.default_rng(3)
    for K in (333, 336):
        gemm_api.clear_plans()
        for _ in range(3):
            A = rng.standard_normal((300, K), dtype=cp.float32).astype(cp.float16)
            B = rng.standard_normal((200, K), dtype=cp.float32).astype(cp.float16)
            D = cp.full((300, 200), cp.nan, cp.float16)
            gemm_sm90(A, B, D)
            ref, f64 = _ref(A, B, "f16")
            assert float(cp.linalg.norm(f64(D) - ref) / cp.linalg.norm(ref)) < 2e-3
        assert len(gemm_api.plan_cache()) == 1, K


def test_fit_stages():
    from cute_py.epilogue import evt
    tree = evt.lin_comb_bias_elt_act("relu", bias="col")
    cfg = G.Sm90GemmConfig(64, 256, schedule="pingpong", epi=G.make_epilogue_config(
        tree, 64, 256, schedule="pingpong", load_path="tma"))
    f = cfg.fit_stages(5)
    assert f.stages == 4 and f.smem_bytes() <= 227 * 1024     # C and D buffers per warpgroup
    direct = G.Sm90GemmConfig(64, 256, schedule="pingpong", epi=G.make_epilogue_config(
        tree, 64, 256, schedule="pingpong"))
    assert direct.fit_stages(5).stages == 5                    # no C smem
    assert G.Sm90GemmConfig(64, 256, schedule="pingpong").fit_stages(5).stages == 5
    assert G.Sm90GemmConfig().fit_stages().stages == 4            # 48 KB stages
    assert G.Sm90GemmConfig(128, 128).fit_stages().stages == 7         # 7 x 32 KB + 1 KB


def test_l2_evict_first_hints_compile():
    """``l2_evict_first``: every epilogue TMA load / store carries the L2 cache-hint operand."""
    from cute_py.backends.cuda.compiler import compile_module
    from cute_py.epilogue import evt
    cfg = G.Sm90GemmConfig(epi=G.make_epilogue_config(
        evt.lin_comb_bias_elt_act("relu", bias="col"), l2_evict_first=True))
    src = G.generate_source(cfg)
    assert "tma_load_2d_hint(" in src and "tma_store_2d_hint(&tmap_D" in src
    assert "tma_load_2d((cute_epi_smem" not in src and "tma_store_2d(&tmap" not in src
    for arch in ("sm_90a", "sm_80"):
        res = compile_module(src, arch=arch).resources_for(cfg.name)
        assert res.spills == 0, res


@pytest.mark.parametrize("majors", [("K", "MN"), ("MN", "K"), ("MN", "MN")])
@pytest.mark.parametrize("tile", [(64, 256), (128, 128)])
def test_pingpong_mn_major_compile(majors, tile):
    """The default one-call kernel for D = A @ B is ping-pong 64x256: every operand major."""
    from cute_py.backends.cuda.compiler import compile_module
    tm, tn = tile
    cfg = G.Sm90GemmConfig(tm, tn, 64, 5, 2, "f16", schedule="pingpong", a_major=majors[0],
                           b_major=majors[1], epi=G.make_epilogue_config(
                               None, tm, tn, schedule="pingpong"))
    src = G.generate_source(cfg)
    for arch in ("sm_90a", "sm_80"):
        assert compile_module(src, arch=arch).resources_for(cfg.name).spills == 0


def test_batched_d_takes_the_tma_store_epilogue():
    """Batched ``D = A @ B`` with a D TMA can store runs the default TMA-store kernels with
    3-D D stores (the tile's batch ``l_`` as third coordinate, ``_bl`` in the name); with C,
    alpha != 1 or a D whose batch stride is off 16 bytes it keeps the ping-pong 128x128
    kernel's register epilogue; a batched epilogue refuses trees with tensor inputs."""
    import os
    import sys
    from cute_py.epilogue import evt
    from cute_py.errors import LaunchError
    sys.path.insert(0, os.path.dirname(__file__))
    from tensor_metas import meta
    A = meta((8, 1024, 1024), "float16", None, 1 << 20, itemsize=2)
    B = meta((8, 1024, 1024), "float16", None, 1 << 24, itemsize=2)     # (L, N, K)
    D = meta((8, 1024, 1024), "float16", None, 1 << 26, itemsize=2)
    cfg = G.choose_config(A, B, D, None, True, 132)
    assert cfg.epi is not None and cfg.epi.batched and cfg.name.count("_bl_") == 1
    assert cfg.schedule == "pingpong" and (cfg.tile_m, cfg.tile_n) == (64, 256)
    src = G.generate_source(cfg)
    assert "tma_store_3d(&tmap_D" in src and "tma_store_2d(&tmap_D" not in src
    for args in ((A, B, D, D, True), (A, B, D, None, False)):
        c = G.choose_config(*args, 132)
        assert c.epi is None and c.schedule == "pingpong" and c.tile_n == 128
    odd = meta((8, 1024, 1024), "float16", (1024 * 1024 + 4, 1024, 1), 1 << 26, itemsize=2)
    assert G.choose_config(A, B, odd, None, True, 132).epi is None
    with pytest.raises(LaunchError) as e:
        G.generate_source(G.Sm90GemmConfig(epi=G.make_epilogue_config(
            evt.linear_combination(), batched=True)))
    assert "batched" in str(e.value)
    from backends.cuda.epilogue.sm90 import Sm90Epilogue, build_test_kernel_source
    with pytest.raises(LaunchError) as e:
        build_test_kernel_source(Sm90Epilogue(cfg.epi))
    assert "batched" in str(e.value)
