"""FP8 configuration of the Hopper GEMM, CPU side: configurations validate, the 8-bit maps
(smem atoms, descriptors, TMA boxes, wgmma k32 atom) agree with the algebra, sources compile for
sm_90a without spills, ``scaled_mm``'s checks name the argument, and a NumPy model of the
kernel's arithmetic (block-scale promotion) meets the float64 reference at K up to 16384."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import cute_py as cute
from cute_py import fp8
from cute_py.atom import mma_traits_sm90 as T
from cute_py.errors import AtomError, LaunchError

from backends.cuda import ptx
from backends.cuda.arch.sm90.wgmma import WgmmaAtom
from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels import gemm_sm90_fp8 as F
from backends.cuda.kernels.gemm_sm90_maps import derive_maps
from backends.cuda.kernels.gemm_sm90_ptxgen import FP8_FORMATS, WGMMA_N
from backends.cuda.scaled_mm_api import check_problem, choose_fp8_config

sys.path.insert(0, os.path.dirname(__file__))
from tensor_metas import meta  # noqa: E402


def _cfg(**kw):
    base = dict(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16", scaling="tensor")
    base.update(kw)
    return G.Sm90GemmConfig(**base)


# ------------------------------------------------------------------------------ configurations

@pytest.mark.parametrize("kw", [
    dict(), dict(dtype="e5m2"), dict(dtype_b="e5m2"), dict(dtype="e5m2", dtype_b="e4m3"),
    dict(tile_n=256), dict(out_dtype="f16", scaling="row"), dict(scaling="block"),
    dict(scaling="block", tile_n=64), dict(schedule="pingpong"), dict(cluster_m=2),
    dict(promote=True), dict(scaling="row", promote=True, tile_n=64), dict(out_dtype="f32"),
    dict(promote=True, tile_n=160), dict(scaling="row", promote=True, tile_n=192),
    dict(scaling="block", tile_n=192), dict(scaling="block", tile_n=160, cluster_m=1),
])
def test_fp8_configs_validate(kw):
    cfg = _cfg(**kw).fit_stages()
    assert cfg.check() is cfg and cfg.fp8 and cfg.elem_bytes == 1
    assert cfg.stage_bytes == (cfg.tile_m + cfg.tile_n) * 128
    assert cfg.smem_bytes() <= 227 * 1024
    assert cfg.name.startswith(f"cute_sm90_gemm_{cfg.dtype}{cfg.dtype_b or cfg.dtype}_")


@pytest.mark.parametrize("kw, arg", [
    (dict(a_major="MN"), "a_major"), (dict(b_major="MN"), "b_major"),
    (dict(tile_k=64), "tile_k"), (dict(out_dtype="f64"), "out_dtype"),
    (dict(out_dtype=""), "out_dtype"), (dict(scaling="none"), "scaling"),
    (dict(dtype_b="f16"), "dtype_b"), (dict(split_k="workspace"), "split_k"),
    (dict(has_c=True), "has_c"), (dict(transpose_d=True), "transpose_d"),
    (dict(scaling="block", tile_n=256), "tile"),
    (dict(smem_swizzle=(2, 2)), "smem_swizzle"), (dict(scaling="block", promote=True), "promote"),
    (dict(promote=True, tile_n=256), "tile"),
])
def test_fp8_config_errors_name_the_field(kw, arg):
    with pytest.raises(LaunchError) as e:
        _cfg(**kw).check()
    assert e.value.arg == arg


def test_fp8_fields_refused_on_16_bit_configs():
    with pytest.raises(LaunchError) as e:
        G.Sm90GemmConfig(scaling="row").check()
    assert e.value.arg == "dtype"


def test_mn_major_error_names_the_operand():
    with pytest.raises(LaunchError, match="operand B K-major"):
        _cfg(b_major="MN").check()
    with pytest.raises(AtomError):
        WgmmaAtom(128, "e4m3", 0, 1)


def test_16_bit_names_and_sources_unchanged_by_the_fp8_fields():
    cfg = G.SHIPPED_CONFIGS[0]
    assert "dtype_b" not in repr(cfg) and "scaling" not in repr(cfg)
    assert "k16_f32_f16_ss<0, 0>" in G.generate_source(cfg)


# ------------------------------------------------------------------------------ maps and atom

@pytest.mark.parametrize("a, b", [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"),
                                  ("e5m2", "e5m2")])
def test_wgmma_atom_matches_the_algebra_atom(a, b):
    for n in (8, 64, 128, 256):
        atom = WgmmaAtom(n, a, b=b)
        alg = T.SM90_64xNx32_FP8(n, "F32", a.upper(), b.upper(), "SS")
        assert alg.shape_mnk == (64, n, atom.k) and atom.k == 32
        assert atom.accumulators == n // 2
        ptx.require(atom.name)                       # the wrapper exists in ptx_sm90.cuh


def test_every_fp8_wrapper_is_in_the_header():
    for a in FP8_FORMATS:
        for b in FP8_FORMATS:
            for n in WGMMA_N:
                ptx.require(f"wgmma_m64n{n}k32_f32_{a}_{b}_ss")


def test_fp8_maps_from_one_byte_elements():
    cfg = _cfg(tile_n=256)
    m = derive_maps(cfg)
    assert m.elem_bytes == 1 and m.wgmma_atom.k == 32
    # K-major SW128 of 8-bit elements: 128-element rows, 8-row core-matrix groups 1024 B apart
    assert cute.size(m.smem_a) == 128 * 128 and cute.size(m.smem_b) == 256 * 128
    assert (m.lbo, m.sbo, m.layout_type) == (16, 1024, 1)
    assert (m.lbo_b, m.sbo_b) == (16, 1024)
    # one TMA box per operand: 128 bytes (= 128 elements) along K, uint8
    assert m.atom_a.dtype == "uint8" and m.atom_a.box == (128, 128, 1)
    assert m.atom_b.box == (128, 256, 1)
    assert m.atom_a.smem_bytes == 128 * 128 and m.atom_b.smem_bytes == 256 * 128
    # the descriptor start of slab j / k-step kk: the layout evaluated at (64 j, 32 kk), bytes
    op_a = m.operand("A")
    for kk in range(4):
        assert m.desc_b_offset(kk) == 32 * kk
        assert op_a.offset(0, 32 * kk) == 32 * kk
    assert m.wg_a_offset(1) == 64 * 128


def test_fp8_source_uses_k32_atoms_and_no_transpose():
    src = G.generate_source(_cfg(dtype_b="e5m2", tile_n=256))
    assert src.count("wgmma_m64n256k32_f32_e4m3_e5m2_ss(") == 4       # 4 k-steps of 32
    assert "gmma_desc_add(da_, 96u)" in src and "gmma_desc_add(db_, 96u)" in src
    assert "<0, 0>" not in src
    assert "kb * 128" in src                                         # TMA k coordinate


def test_promoted_source_adds_each_k_block():
    src = G.generate_source(_cfg(promote=True))
    body = src.split("for (int kb = 0; kb < k_blocks; ++kb)")[2]
    assert body.count("] += acc[0][") == 64 and "__ldg(scale_b" not in body.split("epilogue")[0]
    assert body.index("wgmma_wait_group<0>();") < body.index("tot_[0][0] += acc[0][0];")


def test_block_source_promotes_after_each_k_block():
    src = G.generate_source(_cfg(scaling="block"))
    body = src.split("for (int kb = 0; kb < k_blocks; ++kb)")[2]
    i_commit, i_wait = body.index("wgmma_commit_group();"), body.index("wgmma_wait_group<0>();")
    i_load, i_prom = body.index("sb_[0] = ld_shared_f32(sS"), body.index("tot_[0][0] += acc[0][0]")
    i_full, i_mma = body.index("mbarrier_wait_parity(bar_full"), body.index("wgmma_fence();")
    assert i_full < i_load < i_mma < i_commit < i_wait < i_prom     # scales read before the MMAs
    assert "__ldg(scale" not in body.split("epilogue")[0]             # scales come from smem
    producer = src.split("for (int kb = 0; kb < k_blocks; ++kb)")[1]
    assert "if (warp_id() == 0 || warp_id() == 1 || warp_id() == 2 || warp_id() == 3) {" in src
    cond = (f"idx % 3" if _cfg(scaling="block").stages % 3 == 0 else "own_")
    assert "// block scales: the CTA's k-blocks by warps 1 .. 3 in turn, counted across tiles" \
        in src
    scales = producer.split(f"if (warp_id() == 1 + {cond}) {{")[1].split(
        "if (warp_id() == 0 && leader_)")[0]
    loads, stores = scales.split("mbarrier_wait_parity(bar_empty + idx * 8, phase);")
    assert loads.count("= __ldg(scale_a + ") == 4 and loads.count("= __ldg(scale_b + ") == 1
    assert "st_shared" not in loads and "cp_async" not in src     # loads before the wait
    assert stores.count("st_shared_f32(sS + idx * 528") == 5            # 4 A rows + 1 B block
    assert stores.index("st_shared_f32") < stores.index("mbarrier_arrive(fb_);")
    tma = producer.split("if (warp_id() == 0 && leader_)")[1]
    assert "tma_load_3d(sA" in tma and "scale_" not in tma
    assert "mbarrier_init(bar_full + s_ * 8, 33u)" in src
    assert "wgmma_wait_group<1>" not in body.split("wgmma_wait_group<0>")[0]
    assert body.count("] += acc[0][") == 64                          # every accumulator
    assert "scale_d" not in body.split("wgmma_commit_group")[0].split("wgmma_fence();")[1]


def _compile(cfg):
    from cute_py.backends.cuda.compiler import compile_module, has_compiler
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    return compile_module(G.generate_source(cfg), arch="sm_90a")


@pytest.mark.parametrize("cfg", G.shipped_fp8_configs(), ids=lambda c: c.name)
def test_shipped_fp8_configs_compile_sm90a_zero_spills(cfg):
    mod = _compile(cfg)
    res = mod.resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res
    assert "C7508" not in mod.log                         # setmaxnreg not ignored


def _cuobjdump():
    exe = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    return exe if exe and os.path.exists(exe) else None


def test_sass_has_fp8_gmma():
    exe = _cuobjdump()
    if exe is None:
        pytest.skip("cuobjdump not installed (set CUOBJDUMP)")
    cfg = G.shipped_fp8_configs()[1]
    mod = _compile(cfg)
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.cubin")
        open(p, "wb").write(mod.cubin)
        sass = subprocess.run([exe, "-sass", p], capture_output=True, text=True).stdout
    # sm_90a disassembles 8-bit wgmma as QGMMA
    assert "GMMA.64x128x32.F32.E4M3.E5M2" in sass
    assert "UTMALDG" in sass and "LDL" not in sass and "STL" not in sass


# ------------------------------------------------------------------------------ scaled_mm checks

_meta = meta


def _problem(M=256, N=384, K=512, mode="tensor", a="float8_e4m3fn", b="float8_e4m3fn"):
    A = _meta((M, K), a)
    B = _meta((K, N), b, strides=(1, K))             # W.T of a row-major (N, K) W
    sa_shape, sb_shape = F.scale_shapes(mode, M, N, K)
    return A, B, _meta(sa_shape, "float32", itemsize=4), _meta(sb_shape, "float32", itemsize=4)


@pytest.mark.parametrize("mode", F.SCALINGS)
def test_check_problem_picks_the_mode(mode):
    A, B, sa, sb = _problem(mode=mode)
    assert check_problem(A, B, sa, sb, None, None, "bfloat16") == (256, 384, 512, mode, "bf16")
    one = _meta((1,), "float32", itemsize=4)
    assert check_problem(A, B, one, one, None, None, "float16")[3:] == ("tensor", "f16")


def _err(arg, A, B, sa, sb, bias=None, out=None, out_dtype="bfloat16"):
    with pytest.raises(LaunchError) as e:
        check_problem(A, B, sa, sb, bias, out, out_dtype)
    assert e.value.arg == arg, e.value
    assert e.value.op == "scaled_mm"


def test_check_problem_errors_name_the_argument():
    A, B, sa, sb = _problem(mode="row")
    _err("A", _meta((256, 512), "bfloat16", itemsize=2), B, sa, sb)            # not FP8
    _err("B", A, _meta((512, 384), "float16", itemsize=2), sa, sb)
    _err("A", _meta((256, 512), "float8_e4m3fn", strides=(1, 256)), B, sa, sb)  # M-major A
    _err("B", A, _meta((512, 384), "float8_e4m3fn"), sa, sb)                    # N-major B
    _err("A", _meta((256, 520), "float8_e4m3fn"), _meta((520, 384), "float8_e4m3fn",
                                                        strides=(1, 520)), sa, sb)  # K % 16
    _err("scale_a", A, B, _meta((256, 2), "float32", itemsize=4), sb)          # bad shape
    _err("scale_b", A, B, sa, _meta((2, 384), "float32", itemsize=4))
    _err("scale_a", A, B, _meta((256, 1), "float16", itemsize=2), sb)          # dtype
    _err("scale_b", A, B, sa, _meta((1, 384), "float32", itemsize=4, device=1))  # device
    _err("out_dtype", A, B, sa, sb, out_dtype="float64")
    _err("bias", A, B, sa, sb, bias=_meta((384,), "float32", itemsize=4))        # not bf16
    assert check_problem(A, B, sa, sb, _meta((384,), "float32", itemsize=4), None,
                         "float32")[4] == "f32"
    _err("out", A, B, sa, sb, out=_meta((256, 384), "float16", itemsize=2))
    _err("B", A, _meta((256, 384), "float8_e4m3fn", strides=(1, 256)), sa, sb)  # K differs


def test_torch_block_scale_orientation_is_named():
    """torch._scaled_mm's 128x128 scale_b is (K/128, N/128); ours is its transpose: a
    non-square one left in torch's orientation is refused naming scale_b and saying
    ``scale_b.t()``; its transposed view picks block scaling."""
    A, B, _, _ = _problem(mode="row")                   # 256 x 384 x 512: 4 k-blocks, 3 blocks
    sa = _meta((256, 4), "float32", strides=(1, 256), itemsize=4)
    with pytest.raises(LaunchError) as e:
        check_problem(A, B, sa, _meta((4, 3), "float32", strides=(1, 4), itemsize=4), None,
                      None, "bfloat16")
    assert e.value.arg == "scale_b" and "scale_b.t()" in str(e.value)
    assert check_problem(A, B, sa, _meta((3, 4), "float32", itemsize=4), None, None,
                         "bfloat16")[3] == "block"


def test_plan_scale_checks_name_the_argument():
    cfg = _cfg(scaling="block")
    strides = F.check_scales("Sm90Gemm", cfg, 200, 300, 1000,
                             _meta((200, 8), "float32", strides=(1, 200), itemsize=4),
                             _meta((3, 8), "float32", itemsize=4), None)
    assert strides == (1, 200, 8, 1)
    with pytest.raises(LaunchError) as e:
        F.check_scales("Sm90Gemm", cfg, 200, 300, 1000, _meta((200, 8), "float32", itemsize=4),
                       _meta((3, 8), "float32", itemsize=4), _meta((300,), "float16",
                                                                 itemsize=2))
    assert e.value.arg == "bias"
    row = _cfg(scaling="row")
    assert F.check_scales("Sm90Gemm", row, 200, 300, 1000,
                          _meta((200, 1), "float32", itemsize=4),
                          _meta((1, 300), "float32", itemsize=4), None) == (1, 0, 1, 0)


def test_choose_config():
    c = choose_fp8_config(8192, 8192, 8192, "e4m3", "e4m3", "bf16", "tensor", fast_accum=True)
    assert (c.tile_n, c.tile_k, c.scaling, c.promote) == (256, 128, "tensor", False) and c.check()
    c = choose_fp8_config(8192, 8192, 8192, "e4m3", "e4m3", "bf16", "row")
    assert (c.tile_n, c.promote) == (192, True) and c.check()
    c = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "tensor")
    assert (c.tile_n, c.promote) == (128, True) and c.check()
    # block scaling: its own wave rule (BLOCK_TILES): 128x192 on large problems, 256x128
    # (clusters of two along N, groups of 8) where it takes fewer rounds: 4096^3
    c = choose_fp8_config(8192, 8192, 8192, "e4m3", "e5m2", "f16", "block")
    assert (c.tile_m, c.tile_n, c.dtype_b, c.cluster_m) == (128, 192, "e5m2", 2) and c.check()
    c = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "block", tma_store=True)
    assert (c.tile_m, c.tile_n, c.cluster_m, c.cluster_n, c.group_m) == (256, 128, 1, 2, 8)
    assert (c.producer_regs, c.consumer_regs) == (72, 216) and c.check()
    c = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "block", stream_k=True)
    assert (c.tile_m, c.tile_n, c.cluster_n) == (128, 192, 1) and c.check()
    c = choose_fp8_config(1024, 1024, 4096, "e4m3", "e4m3", "bf16", "block")
    assert c.tile_n == 128 and c.check()


def test_block_scaling_takes_a_store_warp_when_two_scale_warps_stay():
    """With the TMA-store epilogue, block scaling's stores come from a store warp (warp 3) and
    its scales from warps 1 and 2, which load one turn ahead (``scale_prefetch``) at 56
    producer registers; with C loaded by the epilogue's producer (warp 1) a store warp would
    leave one scale warp, so the scales keep warps 2 and 3; the built-in epilogue keeps three
    scale warps, no prefetch, 40 registers."""
    c = choose_fp8_config(3072, 4096, 4096, "e4m3", "e4m3", "bf16", "block", tma_store=True)
    assert c.epi.store_warp and c.store_warp_id() == 3 and c.scale_warps() == (1, 2)
    assert c.scale_prefetch() and (c.producer_regs, c.consumer_regs) == (56, 224)
    assert c.stages >= 4 and c.check() is c
    c = choose_fp8_config(3072, 4096, 4096, "e4m3", "e4m3", "bf16", "block")
    assert c.epi is None and c.scale_warps() == (1, 2, 3) and not c.scale_prefetch()
    assert (c.producer_regs, c.consumer_regs) == (40, 232)
    # 256-row tiles: 3 stages with the whole tile staged, so no store warp (three scale warps)
    c = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "block", tma_store=True)
    assert c.tile_m == 256 and not c.epi.store_warp and c.scale_warps() == (1, 2, 3)
    from cute_py.epilogue import evt
    tree = evt.add(evt.AccFetch(), evt.SrcFetch("bfloat16"))
    c = G.Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16",
                         scaling="block", epi=G.make_epilogue_config(
                             tree, tile_n=128, element_d="bfloat16")).fit_stages()
    assert c.epilogue_producer_warps() == (1,) and c.scale_warps() == (2, 3)
    assert c.scale_prefetch() and c.producer_regs == 56


def test_256_row_promotion_takes_the_slabs_in_turn():
    """A promoting kernel whose warpgroups own two 64-row slabs (256-row tiles) keeps one
    k-block accumulator set: per k-block, slab 0's wgmmas, ``wait_group<0>``, its promotion
    into ``tot_[0]`` fenced before slab 1's wgmmas (sunk behind them the promotion kept two
    sets alive and the consumer spilled), then slab 1's, the stage released after the last;
    192 accumulators per thread, as 128x192's two sets."""
    for mode in ("block", "tensor"):
        cfg = _cfg(tile_m=256, scaling=mode, promote=mode != "block").fit_stages()
        src = G.generate_source(cfg)
        body = src.split("consumer warpgroups")[1]
        assert "float acc[1][64];" in body and "float tot_[2][64];" in body
        kloop = body.split("for (int kb = ")[1].split("wgmma_wait_group<0>();\n      if")[0]
        slab0, slab1 = kloop.split("wgmma_fence_operands(tot_[0]);")
        assert slab0.count("wgmma_commit_group();") == slab1.count("wgmma_commit_group();") == 1
        assert slab0.count("tot_[0][") == 64 and "tot_[1][" not in slab0
        assert slab1.count("tot_[1][") == 64 and "tot_[0][" not in slab1
        assert "mbarrier_arrive(bar_empty" not in slab0
        assert slab1.index("wgmma_wait_group<0>") < slab1.index("mbarrier_arrive(bar_empty") \
            < slab1.index("tot_[1][0]")
        assert "gmma_desc_add(da_, 8192u)" in slab1 and "8192u" not in slab0
        assert kloop.count("_ss(acc[0], ") == 8


def test_serial_slabs_rule():
    """Law of ``serial_slabs``: exactly the promoting configurations whose warpgroups own
    several 64-row slabs and whose two full accumulator sets would pass 192 per thread; they
    run the cooperative schedule only (``schedule``, ``stream_k`` or ``split_k`` named
    otherwise), and at most 192
    accumulators per thread (``tile`` named)."""
    ok = [dict(tile_m=256, tile_n=128, scaling="block"),
          dict(tile_m=256, tile_n=96, scaling="tensor", promote=True),
          dict(tile_m=256, tile_n=64, scaling="block"),
          dict(tile_m=128, tile_n=64, scaling="block", schedule="pingpong"),
          dict(tile_m=128, tile_n=192, scaling="row", promote=True),
          dict(tile_m=256, tile_n=128, scaling="tensor")]          # fast accumulation
    for kw in ok:
        cfg = _cfg(**kw).fit_stages().check()
        maps = derive_maps(cfg)
        want = F.promotes(cfg) and maps.slabs > 1 and maps.slabs * cfg.tile_n > 192
        assert F.serial_slabs(cfg) == want, kw
        assert F.acc_sets(cfg, maps) == (1 if want else maps.slabs)
    for kw, arg in ((dict(tile_m=128, tile_n=128, scaling="tensor", promote=True,
                          schedule="pingpong"), "schedule"),
                    (dict(tile_m=256, tile_n=128, scaling="block", stream_k=True), "stream_k"),
                    (dict(tile_m=256, tile_n=128, scaling="row", promote=True,
                          split_k="fixup"), "split_k"),
                    (dict(tile_m=256, tile_n=192, scaling="block"), "tile"),
                    (dict(tile_n=256, scaling="block"), "tile")):
        with pytest.raises(LaunchError) as e:
            _cfg(**kw).fit_stages().check()
        assert e.value.arg == arg, (kw, e.value)


def test_block_scaled_registers_rule():
    """Law (``Sm90GemmConfig.__post_init__``): a block-scaled configuration with an ``epi``
    has at least 56 producer registers (72 with 256-row tiles, ``epi`` or not) and consumers
    within the CTA's pool; every other configuration keeps the registers it was given."""
    from backends.cuda.arch.sm90.block_scales import PRODUCER_REGS, producer_regs
    assert [producer_regs(m) for m in (64, 128, 256)] == [PRODUCER_REGS, PRODUCER_REGS, 72]
    for e in (None, G.make_epilogue_config(None, tile_m=256, tile_n=128,
                                            element_d="bfloat16")):
        cfg = G.Sm90GemmConfig(tile_m=256, tile_n=128, tile_k=128, dtype="e4m3",
                               out_dtype="bf16", scaling="block", epi=e)
        assert (cfg.producer_regs, cfg.consumer_regs) == (72, 216)
        assert cfg.producer_regs * 128 + cfg.consumer_regs * 256 <= cfg.register_pool
    epi = G.make_epilogue_config(None, tile_n=128, element_d="bfloat16")
    for p, c in ((24, 232), (40, 232), (48, 216), (56, 224), (64, 216)):
        cfg = G.Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16",
                               scaling="block", epi=epi, producer_regs=p, consumer_regs=c)
        assert cfg.producer_regs == max(p, 56)
        assert cfg.consumer_regs == (min(c, 224) if p < 56 else c)
        assert cfg.producer_regs * 128 + cfg.consumer_regs * 256 <= cfg.register_pool
    for kw in (dict(scaling="block"), dict(scaling="tensor", epi=epi),
               dict(scaling="row", promote=True)):
        cfg = G.Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16", **kw)
        assert (cfg.producer_regs, cfg.consumer_regs) == (40, 232)
    assert (G.Sm90GemmConfig().producer_regs, G.Sm90GemmConfig().consumer_regs) == (40, 232)


def test_scaled_mm_is_exported_and_lazy():
    assert "scaled_mm" in cute.__all__ and cute.scaled_mm.__module__.startswith("cute_py")


# ------------------------------------------------------------------------------ numeric model

def _trunc(x, bits):
    """float32 values with the mantissa cut to ``bits`` bits (toward zero)."""
    m, e = np.frexp(np.asarray(x, np.float64))
    return np.ldexp(np.trunc(m * 2.0 ** (bits + 1)) / 2.0 ** (bits + 1), e).astype(np.float32)


def kernel_model(qa, qb, sa, sb, mode, acc_bits=23):
    """The kernel's arithmetic in NumPy: per wgmma k-step (32 elements) the exact sum of
    products (FP8 x FP8 products are exact in fp32) added to the fp32 accumulator, which keeps
    ``acc_bits`` mantissa bits (23: IEEE fp32; fewer: a model of the tensor core's reduced
    internal accumulation).  "block": a fresh accumulator per 128-element k-block, promoted
    into ``tot += acc * (sa * sb)`` in fp32; "tensor" / "row": one accumulator over K, scaled
    in the epilogue.  Returns the fp32 results before the output rounding."""
    M, K = qa.shape
    N = qb.shape[1]
    f32 = np.float32

    def run(k0, k1, acc=None):
        acc = np.zeros((M, N), f32) if acc is None else acc
        for k in range(k0, k1, 32):
            part = (qa[:, k:min(k + 32, k1)] @ qb[k:min(k + 32, k1), :]).astype(f32)
            acc = _trunc(acc.astype(np.float64) + part, acc_bits) if acc_bits < 23 else acc + part
        return acc

    if mode == "block":
        tot = np.zeros((M, N), f32)
        for kb in range(-(-K // 128)):
            acc = run(kb * 128, min(K, kb * 128 + 128))
            s = sa[:, kb:kb + 1].astype(f32) * np.repeat(sb[:, kb], 128)[:N][None, :].astype(f32)
            tot = tot + acc * s
        return tot
    acc = run(0, K)
    if mode == "tensor":
        return (f32(sa.item()) * f32(sb.item())) * acc
    return acc * sa.astype(f32) * sb.astype(f32)


def _bf16(x):
    """Round float32 to bf16 (ties to even) and back."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def _rel(x, ref):
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


#: relative-norm error bounds vs the float64 reference (N(0,1) data, e4m3, bf16 output):
#: the output rounding (bf16: 2^-9 relative, ~2^-9/sqrt(3) ~ 1.1e-3 in norm) dominates; fp32
#: accumulation over K = 16384 adds < 1e-5.  Bound used here and in the GPU tests: 4e-3.
REL_BOUND_BF16 = 4e-3


@pytest.mark.parametrize("K", [128, 1000 - 8, 4096, 16384])
@pytest.mark.parametrize("mode", ["block", "row", "tensor"])
def test_kernel_model_meets_the_reference(mode, K):
    rng = np.random.default_rng(K)
    M, N = 48, 200
    x, w = rng.standard_normal((M, K)), rng.standard_normal((N, K))
    if mode == "block":
        qa, sa = fp8.quantize_blockwise(x, "float8_e4m3", (1, 128))
        qw, sb = fp8.quantize_blockwise(w, "float8_e4m3", (128, 128))
    elif mode == "row":
        qa, sa = fp8.quantize(x, "float8_e4m3", axis=1)
        qw, sbt = fp8.quantize(w, "float8_e4m3", axis=1)
        sb = sbt.T
    else:
        qa, sa = fp8.quantize(x, "float8_e4m3")
        qw, sb = fp8.quantize(w, "float8_e4m3")
    qb = qw.T
    ref = fp8.scaled_mm_reference(qa, qb, sa, sb)
    out = kernel_model(qa, qb, np.asarray(sa), np.asarray(sb), mode)
    assert _rel(out, ref) < 1e-5 * max(1, K / 4096)               # fp32 accumulation
    assert _rel(_bf16(out), ref) < REL_BOUND_BF16                 # what the kernel stores
    # a tensor core keeping only 13 accumulator mantissa bits: promotion every 128 elements
    # (block) bounds the error; one accumulator over K = 16384 loses more
    lo = kernel_model(qa, qb, np.asarray(sa), np.asarray(sb), mode, acc_bits=13)
    if mode == "block":
        assert _rel(_bf16(lo), ref) < REL_BOUND_BF16


def test_plan_parameters_without_a_gpu(monkeypatch):
    """``Sm90Gemm.plan`` of an FP8 configuration: TMA atoms of uint8 with byte strides, the
    16-bit kernel's parameters, then SA, SB, BIAS and the four scale strides, in the order of
    the kernel signature (make_plan captured; no driver)."""
    from backends.cuda import driver
    cap = {}
    monkeypatch.setattr(G, "make_plan", lambda *a: cap.setdefault("params", a[5]) and None
                        or type("P", (), {})())
    monkeypatch.setattr(driver, "ensure_context", lambda *a: 0)

    class Fake(G.Sm90Gemm):
        def __init__(self, cfg):
            self.cfg, self.maps, self.kernel = cfg.check(), derive_maps(cfg), None

        def _function(self, dev):
            pass

        def max_ctas(self, device=None):
            return 132

    cfg = G.shipped_fp8_configs()[2]                       # block scaling
    M, N, K = 200, 328, 1040
    sa = _meta((M, 9), "float32", strides=(1, M), itemsize=4)
    sb = _meta((3, 9), "float32", itemsize=4)
    Fake(cfg).plan(_meta((M, K), "float8_e4m3fn"), _meta((N, K), "float8_e4m3fn"),
                   _meta((M, N), "bfloat16", itemsize=2), None, scale_a=sa, scale_b=sb,
                   device=0)
    p = cap["params"]
    a = p[0][1][0].__self__
    assert (a.dtype, a.dims[:2], a.strides[0], a.box) == ("uint8", (K, M), K, (128, 128, 1))
    assert [r for _, _, r in p if r][-3:] == ["SA", "SB", "BIAS"]
    assert [v for _, v, _ in p[-4:]] == [1, M, 9, 1]
    src = G.generate_source(cfg)
    assert src.index("const u16* __restrict__ bias") > src.index("float beta")
    with pytest.raises(LaunchError) as e:
        Fake(cfg).plan(_meta((M, K), "float8_e4m3fn"), _meta((N, K), "float8_e5m2"),
                       _meta((M, N), "bfloat16", itemsize=2), None, scale_a=sa, scale_b=sb)
    assert e.value.arg == "B"


@pytest.mark.parametrize("mode", F.SCALINGS)
def test_scale_layouts_address_the_scale_elements(mode):
    """The lowered scale addresses (``scale_layouts`` through ``lower.crd2idx``), evaluated on
    NumPy arrays, select ``scale_a[m, k // 128]`` / ``scale_b[n // 128, k // 128]`` (block),
    ``scale_a[m]`` / ``scale_b[n]`` (row), element 0 (tensor) of strided scale tensors."""
    from backends.cuda import ir
    from backends.cuda.lower import crd2idx
    SA, SB = F.scale_layouts(mode)
    rng = np.random.default_rng(0)
    m, n = rng.integers(0, 1000, 64), rng.integers(0, 1000, 64)
    k = rng.integers(0, 8192, 64)
    env = {"m": m, "n": n, "k": k, "ld_sa_m": 3, "ld_sa_k": 5000, "ld_sb_n": 70, "ld_sb_k": 1}
    big = 1 << 20
    got_a = ir.evaluate(crd2idx((ir.var("m", 0, big), ir.var("k", 0, big)), cute.shape(SA),
                                cute.stride(SA)), env)
    got_b = ir.evaluate(crd2idx((ir.var("n", 0, big), ir.var("k", 0, big)), cute.shape(SB),
                                cute.stride(SB)), env)
    want = {"block": (m * 3 + (k // 128) * 5000, (n // 128) * 70 + k // 128),
            "row": (m * 3, n * 70), "tensor": (0 * m, 0 * n)}[mode]
    assert np.array_equal(np.broadcast_to(got_a, m.shape), want[0])
    assert np.array_equal(np.broadcast_to(got_b, n.shape), want[1])


def test_d_layout_addresses_the_output():
    """``d_layout`` (the FP8 epilogue's D offsets, lowered through ``lower.crd2idx``),
    evaluated on NumPy arrays: ``D(r, c, l) = r * ldd + c + l * ldl_d``; ``d_offset`` renders
    the same map with the kernel's variable names."""
    from backends.cuda import ir
    from backends.cuda.lower import crd2idx
    D = F.d_layout()
    rng = np.random.default_rng(1)
    r, c, l_ = (rng.integers(0, 5000, 64) for _ in range(3))
    big = 1 << 20
    got = ir.evaluate(crd2idx((ir.var("r", 0, big), ir.var("c", 0, big), ir.var("l", 0, big)),
                              cute.shape(D), cute.stride(D)),
                      {"r": r, "c": c, "l": l_, "ldd": 4104, "ldl_d": 1 << 24})
    assert np.array_equal(got, r * 4104 + c + l_ * (1 << 24))
    i32 = (1 << 31) - 1      # the kernel's int variables
    row0, cc = ir.var("row0_", 0, i32), ir.var("cc_", 0, i32)
    assert F.d_offset(row0 + 8, cc) == "((long long)row0_ + 8) * ldd + cc_"
    assert F.d_offset(0, 0, ir.var("l_", 0, i32)) == "(long long)l_ * ldl_d"


@pytest.mark.parametrize("kw", [dict(scaling="block", tile_n=64),
                                dict(scaling="row", promote=True, schedule="pingpong",
                                     tile_m=64, tile_n=128),
                                dict(dtype="e5m2", dtype_b="e4m3", cluster_m=2, tile_n=256),
                                dict(out_dtype="f32", scaling="row", vec2=False),
                                dict(out_dtype="f32", scaling="block"),
                                # 256-row tiles: the slabs promoted in turn
                                dict(tile_m=256, scaling="block", cluster_m=2),
                                dict(tile_m=256, scaling="tensor", promote=True),
                                dict(tile_m=256, scaling="row", promote=True, cluster_n=2,
                                     out_dtype="f16")])
def test_more_fp8_configs_compile_without_spills(kw):
    cfg = _cfg(**kw).fit_stages()
    res = _compile(cfg).resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res


def test_compose_from_the_fp8_atom():
    """``make_gemm_sm90`` of a TiledMMA of the algebra's FP8 atom gives the FP8 configuration;
    ``describe`` gives the atom and the 8-bit smem layouts back."""
    from cute_py.atom import make_tiled_mma
    from backends.cuda.kernels.gemm_sm90_compose import describe, make_gemm_sm90
    from backends.cuda.kernels.gemm_sm90_maps import smem_tile
    mma = make_tiled_mma(T.SM90_64xNx32_FP8(128, "F32", "E4M3", "E5M2", "SS"), (2, 1, 1))
    cfg = make_gemm_sm90(mma, (128, 128, 128), out_dtype="bfloat16", scaling="row",
                         promote=True, smem_layout_A=smem_tile("uint8", 128, 128))
    assert (cfg.dtype, cfg.dtype_b, cfg.out_dtype, cfg.scaling, cfg.promote, cfg.tile_k) == \
        ("e4m3", "e5m2", "bf16", "row", True, 128)
    objs = describe(cfg)
    assert objs.tiled_mma.atom.name == "SM90_64x128x32_F32E4M3E5M2_SS_TN"
    assert objs.smem_layout_A == derive_maps(cfg).smem_a
    assert "wgmma_m64n128k32_f32_e4m3_e5m2_ss(" in G.generate_source(cfg)
    with pytest.raises(AtomError) as e:
        make_gemm_sm90(mma, (128, 128, 64), out_dtype="bfloat16")
    assert e.value.arg == "tile_mnk"
    with pytest.raises(AtomError) as e:
        make_gemm_sm90(mma, (128, 128, 128))
    assert e.value.arg == "out_dtype"
    with pytest.raises(AtomError) as e:     # an SW64 smem layout: 8-bit operands use SW128
        make_gemm_sm90(mma, (128, 128, 128), out_dtype="bfloat16",
                       smem_layout_B=smem_tile("uint8", 128, 128, "K", 2))
    assert e.value.arg == "smem_swizzle"


def test_f32_output_source():
    src = G.generate_source(_cfg(out_dtype="f32"))
    assert "float* Dl_ = reinterpret_cast<float*>(D)" in src
    assert "*reinterpret_cast<float2*>(dp) = make_float2(x0, x1);" in src
    assert "pack_bf16x2" not in src


def test_scaled_mm_on_host_tensors_names_the_argument():
    torch = pytest.importorskip("torch")
    A = torch.zeros(16, 16).to(torch.float8_e4m3fn)
    one = torch.ones(())
    with pytest.raises(LaunchError) as e:
        cute.scaled_mm(A, A.t(), one, one)
    assert e.value.arg == "A" and e.value.op == "scaled_mm"
    with pytest.raises(LaunchError) as e:
        cute.scaled_mm(A, A.t(), one, one, use_fast_accum="yes")
    assert e.value.arg in ("A", "use_fast_accum")


def test_promoted_tile_width_rule():
    """Law: the promoted width minimises tile-rounds x width / relative throughput over
    PROMOTED_TILES (ties to the narrower); measured cases: 8192^3 and the LLM layers 192,
    4096^3 128."""
    from backends.cuda.scaled_mm_api import PROMOTED_TILES, promoted_tile_n
    for M, N, tm in ((8192, 8192, 128), (8192, 14336, 128), (8192, 4096, 128),
                     (4096, 4096, 128), (300, 1000, 128), (16, 4096, 64), (64, 14336, 64),
                     (256, 4096, 128), (512, 4096, 128), (1, 100, 64)):
        costs = {tn: -(-(-(-M // tm) * -(-N // tn)) // 132) * tn / e
                 for tn, e in PROMOTED_TILES.items()}
        best = min(costs.values())
        first = next(tn for tn, c in costs.items() if c <= best + 1e-9)
        assert promoted_tile_n(M, N, tile_m=tm) == first
    assert [promoted_tile_n(8192, n) for n in (8192, 14336, 4096)] == [192, 192, 192]
    assert promoted_tile_n(4096, 4096) == 128
    # measured ("FP8 GEMM", v19): 64-wide where 128 leaves SMs idle, else the wider tiles
    assert [promoted_tile_n(16, n, tile_m=64) for n in (4096, 6144, 14336)] == [64, 64, 128]
    assert [promoted_tile_n(m, 4096) for m in (128, 256, 512)] == [64, 64, 128]
    assert promoted_tile_n(1024, 1024) == 64


def test_promoted_tile_rule():
    """Law of ``promoted_tile``: the 256x128 tile exactly when K >= LONG_K, M >= 256 and its
    tile-rounds x elements / rate (128x192's rate) cost less than the 128-row tile's
    (``promoted_tile_n``); measured cases: 8192x4096x14336 256x128 (8 rounds against 11),
    8192^3 and the LLM layers of K = 4096 128x192."""
    from backends.cuda.scaled_mm_api import (LONG_K, PROMOTED_TILES, promoted_tile,
                                             promoted_tile_n)
    for M in (129, 255, 256, 1000, 2000, 4096, 8192):
        for N in (136, 1880, 4096, 8192, 14336):
            for K in (4096, LONG_K - 16, LONG_K, 16384):
                tn = promoted_tile_n(M, N)
                c128 = -(-(-(-M // 128) * -(-N // tn)) // 132) * 128 * tn / PROMOTED_TILES[tn]
                c256 = -(-(-(-M // 256) * -(-N // 128)) // 132) * 256 * 128 / \
                    PROMOTED_TILES[192]
                want = (256, 128) if K >= LONG_K and M >= 256 and c256 < c128 - 1e-9 \
                    else (128, tn)
                assert promoted_tile(M, N, K) == want, (M, N, K)
    assert promoted_tile(8192, 4096, 14336) == (256, 128)
    assert [promoted_tile(8192, n, k) for n, k in ((8192, 8192), (14336, 4096), (6144, 4096),
                                                   (8192, 16384))] == [(128, 192)] * 4


def test_whole_tile_staged():
    """Law of ``whole_tile_staged``: tile, tree, fragment and cluster unchanged, one D buffer
    per epilogue subtile and no store warp where ``min_stages`` mainloop stages still fit,
    else the configuration unchanged (an f32 D's 256-row tile; no TMA-store epilogue)."""
    from backends.cuda.kernels.gemm_sm90_fp8 import EPI_D, epilogue_tree
    for out, staged in (("bf16", True), ("e4m3", True), ("f32", False)):
        epi = G.make_epilogue_config(epilogue_tree(None), tile_m=256, tile_n=128,
                                     element_d=EPI_D[out])
        cfg = G.Sm90GemmConfig(tile_m=256, tile_n=128, tile_k=128, dtype="e4m3",
                               out_dtype=out, scaling="block", cluster_n=2, epi=epi).fit_stages()
        w = G.whole_tile_staged(cfg)
        assert (w.tile_m, w.tile_n, w.cluster_n, w.epi.tree, w.epi.fragment) == \
            (cfg.tile_m, cfg.tile_n, cfg.cluster_n, cfg.epi.tree, cfg.epi.fragment)
        if staged:
            assert w.epi.stages_d == len(cfg.epilogue().subtiles) == (4 if out == "bf16" else 2)
            assert w.stages >= 3 and not w.epi.store_warp and w.check() is w
        else:
            assert w is cfg
        assert G.whole_tile_staged(cfg, min_stages=9) is cfg
    plain = _cfg(tile_m=256, scaling="block").fit_stages()
    assert G.whole_tile_staged(plain) is plain


def test_long_k_promoted_choice():
    """``scaled_mm``'s promoted per-tensor / row-wise choice at 8192x4096x14336: 256x128 tiles
    in clusters of two along N, groups of 8, the whole tile staged in four D buffers with 3
    mainloop stages and no store warp; 0 spills with a bf16 D, an e4m3 D with bias and amax,
    and an f32 D (TMA-store and built-in epilogues)."""
    from backends.cuda.compiler import compile_module, has_compiler
    for mode in ("tensor", "row"):
        c = choose_fp8_config(8192, 4096, 14336, "e4m3", "e4m3", "bf16", mode, tma_store=True)
        assert (c.tile_m, c.tile_n, c.cluster_m, c.cluster_n, c.group_m) == (256, 128, 1, 2, 8)
        assert (c.stages, c.epi.stages_d, c.epi.store_warp, c.promote) == (3, 4, False, True)
        assert c.check() is c
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    for mode, out, bias, amax, tma in (("tensor", "bf16", False, False, True),
                                       ("row", "e4m3", "bfloat16", True, True),
                                       ("tensor", "f32", False, False, True),
                                       ("row", "bf16", False, False, False)):
        cfg = choose_fp8_config(8192, 4096, 14336, "e4m3", "e4m3", out, mode, tma_store=tma,
                                bias=bias, amax=amax)
        assert cfg.tile_m == 256, cfg.name
        res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
        assert res.spills == 0 and res.stack_frame == 0, (cfg.name, res)


def test_block_tile_rule():
    """Law: block scaling's tile minimises tile-rounds x elements / relative throughput over
    BLOCK_TILES (ties to the earlier entry); measured cases: 4096^3 256x128 (4 rounds against
    6), 8192^3 and the LLM layers 128x192, one-wave problems 128x128."""
    from backends.cuda.scaled_mm_api import BLOCK_TILES, block_tile
    for M, N in ((8192, 8192), (8192, 14336), (4096, 4096), (2048, 8192), (1024, 1024),
                 (300, 1000), (129, 3000), (4000, 3968), (256, 32768), (16384, 16384),
                 (136, 32768), (255, 40000)):
        costs = {t: -(-(-(-M // t[0]) * -(-N // t[1])) // 132) * t[0] * t[1] / 128 / e
                 for t, e in BLOCK_TILES.items() if t[0] == 128 or t[0] <= M}
        best = min(costs.values())
        assert block_tile(M, N) == next(t for t, c in costs.items() if c <= best + 1e-9)
    assert [block_tile(*s) for s in ((8192, 8192), (8192, 14336), (8192, 4096),
                                     (8192, 6144))] == [(128, 192)] * 4
    assert block_tile(4096, 4096) == (256, 128) and block_tile(1024, 1024) == (128, 128)
    # from K = LONG_K on, 256x128 is counted at 128x192's rate: 8 rounds against 11
    from backends.cuda.scaled_mm_api import LONG_K
    for M, N in ((8192, 4096), (8192, 8192), (8192, 14336), (4000, 3968), (255, 40000)):
        rates = {**BLOCK_TILES, (256, 128): BLOCK_TILES[(128, 192)]}
        costs = {t: -(-(-(-M // t[0]) * -(-N // t[1])) // 132) * t[0] * t[1] / 128 / e
                 for t, e in rates.items() if t[0] == 128 or t[0] <= M}
        best = min(costs.values())
        assert block_tile(M, N, K=LONG_K) == next(t for t, c in costs.items()
                                                  if c <= best + 1e-9)
        assert block_tile(M, N, K=LONG_K - 128) == block_tile(M, N)
    assert block_tile(8192, 4096, K=14336) == (256, 128)
    assert block_tile(8192, 8192, K=16384) == (128, 192)
    # the width rule is the tile rule at one tile_m
    widths = ((128, 1.0), (160, 1.04), (192, 1.10), (64, 0.85))
    for M, N in ((4096, 4096), (8192, 14336), (300, 1000), (16, 4096)):
        for tm in (64, 128):
            assert G.fewest_rounds_width(M, N, widths, 1, 132, tm) == G.fewest_rounds_tile(
                M, N, [((tm, w), e) for w, e in widths])[1]


def test_every_choice_is_a_valid_configuration():
    """Law: every configuration ``choose_fp8_config`` returns passes ``check`` -- over a grid of
    shapes (160-wide promoted tiles included: 2048 x 1280, 256 x 8456), scaling modes, output
    types, fast accumulation, TMA-store or built-in epilogue, bias and amax.  160-wide tiles
    run in clusters of two (each CTA multicasts 80 of B's rows) and an 8-bit D there is staged
    in 32-column subtiles."""
    from backends.cuda.scaled_mm_api import choose_fp8_config, promoted_tile_n
    assert promoted_tile_n(2048, 1280) == 160 and promoted_tile_n(256, 8456) == 160
    seen = set()
    for M in (1, 128, 129, 1000, 2048, 8192):
        for N in (8, 136, 1000, 1280, 3000, 8456, 14336):
            for mode in ("tensor", "row", "block"):
                for out in ("bf16", "f32", "e4m3"):
                    for fast in ((False, True) if mode != "block" else (False,)):
                        for tma in ((True,) if out == "e4m3" else (False, True)):
                            bias = "bfloat16" if out == "e4m3" else (M % 2 == 1)
                            cfg = choose_fp8_config(M, N, 1024, "e4m3", "e4m3", out, mode,
                                                    fast_accum=fast, tma_store=tma, bias=bias,
                                                    amax=out == "e4m3")
                            assert cfg.check() is cfg
                            seen.add((cfg.tile_n, cfg.cluster_m))
    assert (160, 2) in seen and (192, 2) in seen and (128, 1) in seen
    e8 = choose_fp8_config(2048, 1280, 1024, "e4m3", "e4m3", "e4m3", "tensor", tma_store=True,
                           amax=True)
    assert e8.tile_n == 160 and e8.epi.epilogue_tile == (128, 32)
    assert len(e8.epilogue().subtiles) == 5


def test_small_problem_choices():
    """Decode (M <= 64): 64-row tiles on one consumer warpgroup for per-tensor and row-wise
    scaling, promoted or not (promoted ones on two, "ksplit", where ``ksplit_pays``); 32 wide (the built-in epilogue) where one round of tiles
    doubles the CTAs, 64 wide when the tree needs the TMA-store epilogue (an 8-bit D with
    amax) or 32-wide tiles would take two rounds; only M rounded up to 8 of A's rows loaded;
    every output type and epilogue compiling at 0 spills; block scaling keeps 128-row
    tiles."""
    from backends.cuda.compiler import compile_module, has_compiler
    from backends.cuda.scaled_mm_api import SMALL_M, choose_fp8_config, ksplit_pays
    cases = [("tensor", "bf16", True, False, False), ("row", "f16", True, True, False),
             ("tensor", "f32", False, False, True), ("tensor", "e4m3", True, True, False),
             ("row", "f32", True, False, True)]
    for M in (1, 16, 33, SMALL_M):
        for mode, out, tma, bias, fast in cases:
            for N, narrow in ((4096, out != "e4m3"), (6144, False)):
                cfg = choose_fp8_config(M, N, 4096, "e4m3", "e4m3", out, mode, tma_store=tma,
                                        bias="bfloat16" if bias and out == "e4m3" else bias,
                                        amax=out == "e4m3", fast_accum=fast)
                # promoted tiles without a tree-only feature: two warpgroups ("ksplit")
                ks = not fast and out != "e4m3" and ksplit_pays(N, 4096)
                assert cfg.schedule == ("ksplit" if ks else "cooperative"), cfg.name
                assert (cfg.tile_m, cfg.consumer_wgs, cfg.cluster_m) == (64, 1 + ks, 1)
                assert cfg.tile_n == (32 if narrow else 64), (M, N, cfg.name)
                assert cfg.a_rows == (0 if M == SMALL_M else -(-M // 8) * 8)
                assert cfg.promote == (not fast) and not cfg.splits
                assert (cfg.epi is None) == (narrow or not tma or ks)
    assert choose_fp8_config(65, 4096, 4096, "e4m3", "e4m3", "bf16", "tensor").tile_m == 128
    assert choose_fp8_config(16, 4096, 4096, "e4m3", "e4m3", "bf16", "block").tile_m == 128
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    for mode, out, tma, bias, fast in cases:
        cfg = choose_fp8_config(16, 4096, 4096, "e4m3", "e4m3", out, mode, tma_store=tma,
                                bias="bfloat16" if bias and out == "e4m3" else bias,
                                amax=out == "e4m3", fast_accum=fast)
        res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
        assert res.spills == 0 and res.stack_frame == 0, (cfg.name, res)


def test_fp8_split_rule():
    """Law of ``fp8_splits``: 1, or S in [SPLIT_MIN, SPLIT_MAX] with S * tiles <= SMs (one
    wave of units) and every split at least SPLIT_MIN_KB k-blocks; ``choose_fp8_config``
    splits exactly where it says (per-tensor / row-wise, no tree-only feature, at most 64
    accumulators per thread), with the built-in epilogue and no cluster, and the split
    configurations pass ``check``."""
    from backends.cuda import scaled_mm_api as S
    for M in (1, 16, 64, 100, 128, 300):
        for N in (256, 520, 1024, 4096, 14336):
            for K in (1024, 4096, 6000, 8192, 28672):
                for tm, tn in ((64, 32), (64, 64), (128, 64), (128, 128)):
                    s = S.fp8_splits(M, N, K, tm, tn)
                    tiles = -(-M // tm) * -(-N // tn)
                    assert s == 1 or (S.SPLIT_MIN <= s <= S.SPLIT_MAX and s * tiles <= 132
                                      and -(-K // 128) // s >= S.SPLIT_MIN_KB), (M, N, K, tm)
                for mode in ("tensor", "row", "block"):
                    for out, amax in (("bf16", False), ("f32", False), ("e4m3", True)):
                        cfg = S.choose_fp8_config(M, N, K, "e4m3", "e4m3", out, mode,
                                                  tma_store=True, amax=amax).check()
                        want = (mode != "block" and not amax and (cfg.tile_m // cfg.mma_wgs)
                                * cfg.tile_n // 128 <= 64 and
                                S.fp8_splits(M, N, K, cfg.tile_m, cfg.tile_n) > 1)
                        assert cfg.splits == want, (M, N, K, mode, out, cfg.name)
                        if cfg.splits:
                            assert cfg.split_k == "fixup" and cfg.epi is None
                            assert cfg.cluster_m == 1


def test_160_wide_configs_compile_without_spills():
    from backends.cuda.compiler import compile_module, has_compiler
    from backends.cuda.scaled_mm_api import choose_fp8_config
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    for mode, out, tma in (("tensor", "bf16", True), ("tensor", "e4m3", True),
                           ("row", "f32", False)):
        # 40 columns of 160-wide tiles: too many for 4-row groups in one wave -> clusters
        cfg = choose_fp8_config(2048, 6400, 1024, "e4m3", "e4m3", out, mode, tma_store=tma,
                                amax=out == "e4m3")
        assert (cfg.tile_n, cfg.cluster_m) == (160, 2)
        res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
        assert res.spills == 0 and res.stack_frame == 0, (cfg.name, res)


def test_block_scaled_choices_compile_without_spills():
    """Block scaling's choices (128 and 192 wide, store warp and prefetching scale warps with
    the TMA-store epilogue, three scale warps with the built-in one) at 0 spills."""
    from backends.cuda.compiler import compile_module, has_compiler
    from backends.cuda.scaled_mm_api import choose_fp8_config
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    seen = set()
    for M, N in ((4096, 4096), (3072, 4096), (1024, 1024)):
        for tma in (True, False):
            cfg = choose_fp8_config(M, N, 1024, "e4m3", "e4m3", "bf16", "block", tma_store=tma)
            seen.add((cfg.tile_m, cfg.tile_n, cfg.scale_prefetch()))
            res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
            assert res.spills == 0 and res.stack_frame == 0, (cfg.name, res)
    assert seen == {(128, 192, True), (128, 192, False), (128, 128, True), (128, 128, False),
                    (256, 128, False)}
    # 256x128 with the epilogue tree's features: an e4m3 D with bias and amax, an f32 D
    for out, bias, amax in (("e4m3", "bfloat16", True), ("f32", True, False)):
        cfg = choose_fp8_config(4096, 4096, 1024, "e4m3", "e4m3", out, "block", tma_store=True,
                                bias=bias, amax=amax)
        assert (cfg.tile_m, cfg.producer_regs, cfg.consumer_regs) == (256, 72, 216)
        res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
        assert res.spills == 0 and res.stack_frame == 0, (cfg.name, res)


def test_wide_promoted_configs_compile_without_spills():
    from backends.cuda.compiler import compile_module, has_compiler
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    for mode in ("tensor", "row"):
        cfg = _cfg(tile_n=192, scaling=mode, promote=True).fit_stages()
        res = compile_module(G.generate_source(cfg), arch="sm_90a").resources_for(cfg.name)
        assert res.spills == 0 and res.stack_frame == 0, (mode, res)


def test_tma_store_epilogue_for_aligned_outputs():
    """``scaled_mm``'s configuration for a 16-byte aligned D without bias stores D through the
    TMA-store EVT epilogue (``D = acc``), the tree reading the scaled products: ``s_ * tot_``
    per tensor, ``tot_ * rs_[row] * scale_b[col]`` row-wise, ``tot_`` with block scales; an
    FP8 ``epi`` of the wrong output type is refused naming ``epi``; the block scales' slots
    are padded to 1024 bytes so the epilogue's region after them stays aligned."""
    from dataclasses import replace
    from backends.cuda.scaled_mm_api import choose_fp8_config
    from backends.cuda.kernels.gemm_sm90 import make_epilogue_config
    want = {"tensor": "s_ * tot_[0][0]", "row": "(tot_[0][0] * rs_[0] * csb_[ncol_])",
            "block": "tot_[0][0]"}
    for mode in ("tensor", "row", "block"):
        cfg = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", mode, tma_store=True)
        assert cfg.epi is not None and cfg.epi.element_d == "bfloat16"
        assert choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", mode).epi is None
        src = G.generate_source(cfg)
        assert "tma_store" in src and want[mode] in src, mode
    # with a bias: D = scaled acc + bias[n] (a RowBroadcast the plan binds to the bias)
    for mode in ("tensor", "row", "block"):
        cfg = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "f16", mode, tma_store=True,
                                bias=True)
        assert cfg.epi.tree.signature == {"bias": ("row", "float16")}
    fast = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "row", fast_accum=True,
                             tma_store=True)
    assert "(acc[0][0] * rs_[0]" in G.generate_source(fast)
    blk = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "block", tma_store=True)
    assert blk.scale_smem_bytes() % 1024 == 0 and blk.block_scales().bytes % 1024
    ten = choose_fp8_config(4096, 4096, 4096, "e4m3", "e4m3", "bf16", "tensor", tma_store=True)
    with pytest.raises(LaunchError) as e:
        replace(ten, epi=make_epilogue_config(None, tile_n=ten.tile_n,
                                              element_d="float16")).check()
    assert "epi" in str(e.value) and "element_d" in str(e.value)


def test_shipped_tma_store_configs_are_scaled_mms_choices():
    """The golden FP8 configurations with the TMA-store epilogue are the ones ``scaled_mm``
    picks (same configuration, same kernel name)."""
    from backends.cuda.scaled_mm_api import choose_fp8_config
    shipped = {c.name for c in G.shipped_fp8_configs()}
    for shape, mode in (((8192, 8192, 4096), "tensor"), ((8192, 8192, 4096), "row"),
                        ((4096, 4096, 4096), "block")):
        cfg = choose_fp8_config(*shape, "e4m3", "e4m3", "bf16", mode, tma_store=True)
        assert cfg.name in shipped, (mode, cfg)


def test_store_warp_configs():
    """``with_store_warp``: same tile, tree and fragment, every subtile staged, ``_sw`` in the
    name, the most stages that fit; refused for ping-pong or without an epilogue.
    ``scaled_mm`` takes it for per-tensor / row-wise TMA-store configurations that keep 4 or
    more stages; block scaling too, when two scale warps (1 and 2) stay."""
    from dataclasses import replace
    from backends.cuda.kernels.gemm_sm90 import make_epilogue_config, with_store_warp
    from backends.cuda.kernels.gemm_sm90_body import Sm90Body
    for shape, mode, out in (((8192, 6144, 4096), "tensor", "bf16"),
                             ((4096, 4096, 4096), "row", "bf16"),
                             ((8192, 8192, 8192), "tensor", "e4m3")):
        cfg = choose_fp8_config(*shape, "e4m3", "e4m3", out, mode, tma_store=True)
        assert cfg.epi.store_warp and "_sw_" in cfg.name and cfg.stages >= 4, cfg.name
        e = cfg.epilogue()
        assert cfg.epi.stages_d == len(e.subtiles) and e.staging.whole
        base = replace(cfg, epi=replace(cfg.epi, store_warp=False, stages_d=2)).fit_stages()
        again = with_store_warp(base)
        assert again == cfg and (again.tile_m, again.tile_n) == (base.tile_m, base.tile_n)
        assert again.epi.tree == base.epi.tree and again.stages <= base.stages
        src = G.generate_source(cfg)
        # no named barrier but the row-wise column scales' staging (barrier 5)
        syncs = re.findall(r"named_barrier_sync\(([^,]+),", src)
        assert "epilogue store warp" in src and all(b == "5u" for b in syncs)
        assert bool(syncs) == (mode == "row"), (mode, syncs)
    blk = choose_fp8_config(8192, 6144, 4096, "e4m3", "e4m3", "bf16", "block", tma_store=True)
    assert blk.epi.store_warp and blk.stages >= 4
    assert Sm90Body(blk, G.derive_maps(blk)).scale_warps() == (1, 2) == blk.scale_warps()
    f32 = choose_fp8_config(8192, 8192, 8192, "e4m3", "e4m3", "f32", "tensor", tma_store=True)
    assert not f32.epi.store_warp and with_store_warp(f32).stages < 4
    pp = G.Sm90GemmConfig(64, 256, 64, 4, 2, "f16", schedule="pingpong",
                          epi=make_epilogue_config(None, 64, 256, schedule="pingpong"))
    with pytest.raises(LaunchError) as e:
        with_store_warp(pp)
    assert e.value.arg == "cfg"
    with pytest.raises(LaunchError) as e:
        replace(pp, epi=replace(pp.epi, store_warp=True)).check()
    assert e.value.arg == "epi"
    with pytest.raises(LaunchError):
        with_store_warp(G.Sm90GemmConfig())


# --------------------------------------------------------------------------- an 8-bit D

def test_epilogue_tree_law():
    """``epilogue_tree``: None for ``D = acc``; otherwise its value is ``(acc + bias[n]) *
    scale_result`` and its side output ``amax = max |acc + bias[n]|`` (``evt.evaluate_all``
    against NumPy)."""
    import numpy as np
    from cute_py.epilogue import evt
    epilogue_tree = F.epilogue_tree
    assert epilogue_tree() is None
    rng = np.random.default_rng(0)
    acc = rng.standard_normal((5, 7)).astype(np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    for b, am, sr in ((None, True, False), ("float32", False, True), ("bfloat16", True, True)):
        t = epilogue_tree(b, am, sr)
        sig = t.signature
        assert ("bias" in sig) == bool(b) and ("amax" in sig) == am and \
            ("scale_result" in sig) == sr
        kw = {}
        if b:
            kw["bias"] = bias
        if sr:
            kw["scale_result"] = np.array([0.5], np.float32)
        if am:
            kw["amax"] = np.zeros(1, np.float32)
        got = evt.evaluate_all(t, acc, **kw)
        v = acc.astype(np.float64) + (evt.round_to(bias, b) if b else 0.0)
        np.testing.assert_allclose(got["D"] if "D" in got else got[None], v * (0.5 if sr else 1),
                                   rtol=1e-6, atol=1e-6)
        if am:
            np.testing.assert_allclose(np.asarray(got["amax"]).reshape(()), np.abs(v).max(),
                                       rtol=1e-6)


def test_fp8_output_configuration_rules():
    """An 8-bit D needs the TMA-store epilogue (``epi``); ``choose_fp8_config`` refuses an
    out that TMA cannot store, naming ``out``; the kernel packs pairs with the saturating
    ``cvt`` and stores them as 16-bit words."""
    with pytest.raises(LaunchError, match="out_dtype") as e:
        G.Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="e4m3",
                         scaling="tensor").check()
    assert e.value.arg == "out_dtype"
    with pytest.raises(LaunchError) as e:
        choose_fp8_config(256, 100, 256, "e4m3", "e4m3", "e4m3", "tensor", tma_store=False)
    assert e.value.arg == "out" and str(e.value).startswith("scaled_mm: out")
    cfg = choose_fp8_config(256, 256, 256, "e4m3", "e4m3", "e5m2", "block", tma_store=True,
                            bias="float32", amax=True, scale_result=True)
    assert cfg.epi.element_d == "float8_e5m2" and cfg.out_dtype == "e5m2"
    src = G.generate_source(cfg)
    assert "pack_e5m2x2(" in src and "st_shared_16(" in src and "tma_store_2d" in src
    assert "red_amax" in src and "p_scale_result[0]" in src


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fill_bits_round_to_the_dtype(dtype):
    """Law: the memset pattern of a reduction's reset value, read back as ``dtype``, is the
    value rounded to ``dtype`` (0, +-inf: the reductions' identities; others rounded to
    nearest, ties to even)."""
    from backends.cuda.kernels.gemm_sm90 import _fill_bits
    vals = (0.0, -0.0, float("inf"), float("-inf"), 1.5, -3.0e-3, 1.0 + 2 ** -9,
            1.0 + 3 * 2 ** -9, 65504.0, 1.0 + 2 ** -8 + 2 ** -20)
    for v in vals:
        bits, width = _fill_bits(dtype, v)
        if dtype != "bfloat16":
            got = np.frombuffer(bits.to_bytes(width, "little"), dtype=dtype)[0]
            assert got.tobytes() == np.array(v, dtype=dtype).tobytes(), (v, bits)
            continue
        assert width == 2
        dec = lambda b: np.array([b << 16], dtype=np.uint32).view(np.float32)[0]  # noqa: E731
        got = dec(bits)
        if np.isinf(v) or v == 0:
            assert got == v and np.signbit(got) == np.signbit(v)
            continue
        f = np.float32(v)
        lo = int(np.array([f], dtype=np.float32).view(np.uint32)[0]) >> 16
        cands = sorted({lo, lo + 1}, key=lambda b: (abs(float(dec(b)) - float(f)), b & 1))
        assert bits == cands[0], (v, bits, cands)


def test_align_of_law():
    """``align_of(p)``: the largest power of two up to 256 dividing ``p`` -- it divides p, and
    twice it does not (below 256); every choice a plan makes from p's alignment (p % 4, % 8,
    % 16, % 128) is a function of it."""
    import random
    from backends.cuda.scaled_mm_api import align_of
    rng = random.Random(3)
    for p in [rng.randrange(1, 1 << 48) for _ in range(2000)] + [256, 512, 4, 12, 1 << 40]:
        a = align_of(p)
        assert a in (1, 2, 4, 8, 16, 32, 64, 128, 256) and p % a == 0
        assert a == 256 or p % (2 * a)
        q = rng.randrange(1, 1 << 40) * 512 + (p & 255)        # same low bits, other address
        assert align_of(q) == a and all((p % m == 0) == (q % m == 0) for m in (4, 8, 16, 128))


def test_partial_a_rows_law():
    """Law: the chosen ``a_rows`` is 0 (the whole tile) or M rounded up to 8 and below
    ``tile_m``, for every M (M = 61 rounds up to the 64-row tile: 0), and the choice passes
    ``check``; 32-wide tiles only up to NARROW_MAX_M rows, with the built-in epilogue."""
    from backends.cuda import scaled_mm_api as S
    for M in range(1, 300, 3):
        for mode in ("tensor", "row", "block"):
            for fast in (False, True):
                if fast and mode == "block":
                    continue
                for N in (1024, 4096):
                    cfg = S.choose_fp8_config(M, N, 1136, "e5m2", "e5m2", "bf16", mode,
                                              fast_accum=fast, tma_store=True).check()
                    r = -(-M // 8) * 8
                    assert cfg.a_rows == (r if r < cfg.tile_m else 0), (M, mode, cfg.name)
                    if cfg.tile_n == 32:
                        assert M <= S.NARROW_MAX_M and cfg.epi is None and mode != "block"


def test_a_rows_and_fp8_split_errors_name_the_argument():
    """``a_rows``: a multiple of 8 below tile_m, K-major A only; 8-bit split-K: 'fixup' only,
    per-tensor / row-wise, the built-in epilogue -- each refusal a LaunchError naming the
    field."""
    from cute_py.errors import LaunchError
    base = dict(tile_m=64, tile_n=64, consumer_wgs=1, tile_k=128, dtype="e4m3",
                out_dtype="bf16", scaling="tensor", promote=True, stages=4)
    for bad in (4, 12, 64, 72):
        with pytest.raises(LaunchError, match="a_rows"):
            G.Sm90GemmConfig(**base, a_rows=bad).check()
    with pytest.raises(LaunchError, match="a_rows"):
        G.Sm90GemmConfig(tile_m=128, tile_n=128, a_major="MN", a_rows=64).check()
    assert G.Sm90GemmConfig(**base, a_rows=56).check().tx_bytes == (56 + 64) * 128
    with pytest.raises(LaunchError, match="split_k"):
        G.Sm90GemmConfig(**base, split_k="workspace").check()
    with pytest.raises(LaunchError, match="split_k"):
        G.Sm90GemmConfig(**{**base, "scaling": "block", "promote": False, "tile_m": 128,
                            "consumer_wgs": 2}, split_k="fixup").check()
    epi = G.make_epilogue_config(None, tile_m=64, tile_n=64, consumer_wgs=1,
                                 element_d="bfloat16")
    with pytest.raises(LaunchError, match="split_k"):
        G.Sm90GemmConfig(**base, split_k="fixup", epi=epi).check()
    G.Sm90GemmConfig(**base, split_k="fixup").check()


def test_promoted_raster_law():
    """``promoted_raster``: groups of 4 tile-rows without a cluster exactly where 4-row groups
    over all of N's tiles fit the SMs in one wave, else clusters of two in groups of 16; and
    ``choose_fp8_config`` takes it for promoted per-tensor / row-wise problems above one
    128-row tile (block scaling: clusters of two in groups of 16; 256-row tiles clusters of
    two along N in groups of 8)."""
    from backends.cuda.scaled_mm_api import choose_fp8_config, promoted_raster
    for N in range(64, 20000, 328):
        for tn in (128, 160, 192):
            c, g = promoted_raster(N, tn)
            assert (c, g) == ((1, 4) if 4 * -(-N // tn) <= 132 else (2, 16)), (N, tn)
    for (M, N, K) in ((4096, 4096, 4096), (8192, 8192, 8192), (8192, 14336, 4096),
                      (512, 2048, 4096)):
        for mode in ("tensor", "row", "block"):
            cfg = choose_fp8_config(M, N, K, "e4m3", "e4m3", "bf16", mode, tma_store=True)
            if mode == "block" and cfg.tile_m == 256:
                assert (cfg.cluster_m, cfg.cluster_n, cfg.group_m) == (1, 2, 8)
            elif mode == "block":
                assert (cfg.cluster_m, cfg.group_m) == ((2, 16) if M > 128 else (1, 8))
            else:
                assert (cfg.cluster_m, cfg.group_m) == promoted_raster(N, cfg.tile_n)


def test_col_scale_layout_law():
    """``col_scale_layout``: injective onto the configuration's ``col_scale_bytes`` floats, in
    ping-pong (a region per warpgroup) and cooperative tiles; and the generated row-wise
    epilogue reads every value's column scale from it."""
    import cute_py as cute
    from backends.cuda.kernels.gemm_sm90_fp8 import col_scale_layout
    for schedule, tm, tn in (("cooperative", 128, 192), ("cooperative", 128, 128),
                             ("pingpong", 64, 192)):
        pp = schedule == "pingpong"
        cfg = G.Sm90GemmConfig(
            tile_m=tm, tile_n=tn, tile_k=128, dtype="e4m3", out_dtype="bf16", scaling="row",
            promote=True, schedule=schedule,
            epi=G.make_epilogue_config(None, tile_m=tm, tile_n=tn, element_d="bfloat16",
                                       schedule=schedule)).fit_stages()
        lay = col_scale_layout(cfg, pp)
        offs = [lay(c, r) for r in range(cute.size(lay, 1)) for c in range(tn)]
        assert sorted(offs) == list(range(cfg.col_scale_bytes // 4))
        src = G.generate_source(cfg)
        values = tm * tn // (128 if pp else 256)        # per consumer thread
        assert src.count("* csb_[ncol_") == values
        # the column scales' only global loads: one or two per thread at the tile's start
        assert src.count("__ldg(scale_b") == -(-tn // (128 if pp else 256))
