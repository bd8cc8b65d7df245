"""User composition of the Hopper GEMM: compositions the hardware allows build, generate and
compile for sm_90a with zero spills; what it forbids raises AtomError naming the argument."""

import pytest

import cute_py as cute
from cute_py.atom import make_tiled_mma
from cute_py.atom import mma_traits_sm90 as T
from cute_py.errors import AtomError

from backends.cuda.kernels import gemm_sm90 as G
from backends.cuda.kernels.gemm_sm90_compose import describe, make_gemm_sm90
from backends.cuda.kernels.gemm_sm90_maps import derive_maps, smem_tile


def _mma(n, wgs=1, dt="f16", a="K", b="K"):
    fn = T.SM90_64xNx16_F32F16F16_SS if dt == "f16" else T.SM90_64xNx16_F32BF16BF16_SS
    return make_tiled_mma(fn(n, a, b), (wgs, 1, 1))


def _compose(n, wgs=1, tm=128, dt="f16", a="K", b="K", swa=3, swb=3, **kw):
    return make_gemm_sm90(_mma(n, wgs, dt, a, b), (tm, n, 64), a_major=a, b_major=b,
                          smem_layout_A=smem_tile(dt, tm, 64, a, swa),
                          smem_layout_B=smem_tile(dt, n // kw.get("cluster_m", 1) *
                                                  kw.get("cluster_m", 1), 64, b, swb), **kw)


COMPOSITIONS = {
    "coop_128x256": dict(n=256, wgs=2),
    "one_wg_n8": dict(n=8),
    "one_wg_n24": dict(n=24),
    "n40_bf16": dict(n=40, dt="bf16"),
    "n200_coop": dict(n=200, wgs=2),
    "sw64_k": dict(n=128, wgs=2, swa=2, swb=2),
    "sw32_k": dict(n=64, swa=1, swb=1),
    "inter_k": dict(n=64, swa=0, swb=0),
    "mn_major_b": dict(n=128, wgs=2, b="MN"),
    "mn_sw64_a_sw32_b": dict(n=128, a="MN", b="MN", swa=2, swb=1),
    "pingpong_cluster2": dict(n=128, schedule="pingpong", cluster_m=2),
    "coop_cluster2_mn": dict(n=256, wgs=2, b="MN", cluster_m=2),
    "tm64_one_wg_n96": dict(n=96, tm=64),
    "coop_cluster_n2": dict(n=256, wgs=2, cluster_n=2),
    "pingpong_cluster_n2_mn_a": dict(n=128, a="MN", schedule="pingpong", cluster_n=2),
    "coop_cluster_2x2_mn": dict(n=128, wgs=2, a="MN", b="MN", cluster_m=2, cluster_n=2),
}


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_composition_builds_and_compiles_without_spills(name):
    from backends.cuda.compiler import compile_module, has_compiler
    cfg = _compose(**COMPOSITIONS[name])
    objs = describe(cfg)
    spec = COMPOSITIONS[name]
    assert objs.tiled_mma.atom.shape_mnk == (64, spec["n"], 16)
    assert cfg.smem_swizzle == (spec.get("swa", 3), spec.get("swb", 3))
    src = G.generate_source(cfg)
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    res = compile_module(src, arch="sm_90a").resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res


def test_describe_gives_back_the_objects():
    LA = smem_tile("f16", 128, 64, "K", 2)
    LB = smem_tile("f16", 128, 64, "MN", 1)
    cfg = make_gemm_sm90(_mma(128, 2, b="MN"), (128, 128, 64), b_major="MN", smem_layout_A=LA,
                         smem_layout_B=LB)
    objs = describe(cfg)
    assert objs.smem_layout_A == LA and objs.smem_layout_B == LB
    maps = derive_maps(cfg)
    assert objs.copy_A == maps.atom_a and objs.copy_B == maps.atom_b
    again = make_gemm_sm90(objs.tiled_mma, (128, 128, 64), b_major="MN", smem_layout_A=LA,
                           smem_layout_B=LB, copy_A=objs.copy_A, copy_B=objs.copy_B)
    assert again == cfg


def _err(fn):
    with pytest.raises(AtomError) as ei:
        fn()
    return ei.value


def test_refusals_name_the_argument():
    # not a canonical GMMA layout (a plain row-major tile)
    e = _err(lambda: make_gemm_sm90(_mma(128, 2), (128, 128, 64),
                                    smem_layout_A=cute.make_layout((128, 64), (64, 1))))
    assert e.arg == "smem_layout_A"
    # a TMA box dimension over 256 (BM = 384 with two warpgroups of 192 rows is refused first
    # by the warpgroup rule; 512 rows over 2 warpgroups of 256: box rule)
    e = _err(lambda: make_gemm_sm90(_mma(64, 2), (512, 64, 64)))
    assert e.arg == "tile_mnk"
    # tile_m not a multiple of 64 per warpgroup
    e = _err(lambda: make_gemm_sm90(_mma(64, 2), (96, 64, 64)))
    assert e.arg == "tile_mnk" and "64" in str(e)
    # N not a multiple of 8 / over 256: the atom itself refuses
    e = _err(lambda: _mma(20))
    assert e.arg == "N"
    e = _err(lambda: _mma(264))
    assert e.arg == "N"
    # BN other than the atom's N
    e = _err(lambda: make_gemm_sm90(_mma(64), (128, 128, 64)))
    assert e.arg == "tile_mnk"
    # shared memory over 227 KB
    e = _err(lambda: make_gemm_sm90(_mma(256, 2), (256, 256, 64), stages=8))
    assert e.arg == "stages"
    # not an SS wgmma atom
    e = _err(lambda: make_gemm_sm90(make_tiled_mma(T.SM90_64xNx16_F32F16F16_RS(64)),
                                    (128, 64, 64)))
    assert e.arg == "tiled_mma"
    # a TMA atom that is not the smem layout's box
    good = describe(make_gemm_sm90(_mma(64), (128, 64, 64)))
    e = _err(lambda: make_gemm_sm90(_mma(64), (128, 64, 64), copy_A=good.copy_B))
    assert e.arg == "copy_A"
    # clusters: 1 or 2 CTAs along each mode; an A slice of whole smem atoms (an MN-major SW128
    # A of 64 rows cannot be cut in two 32-row slices)
    e = _err(lambda: make_gemm_sm90(_mma(64), (128, 64, 64), cluster_n=3))
    assert e.arg == "cluster_n"
    e = _err(lambda: make_gemm_sm90(_mma(64, a="MN"), (64, 64, 64), a_major="MN", cluster_n=2))
    assert e.arg == "cluster_n" and "64-row" in str(e)


def test_composition_with_a_fused_epilogue():
    from backends.cuda.compiler import compile_module, has_compiler
    from cute_py.epilogue import evt
    epi = G.make_epilogue_config(evt.linear_combination(), 128, 128)
    cfg = make_gemm_sm90(_mma(128, 2), (128, 128, 64), epilogue=epi)
    assert cfg.epi is epi and cfg.smem_bytes() <= 227 * 1024
    src = G.generate_source(cfg)
    if not has_compiler():
        pytest.skip("no CUDA compiler")
    res = compile_module(src, arch="sm_90a").resources_for(cfg.name)
    assert res.spills == 0 and res.stack_frame == 0, res


def test_register_pool_bounds_setmaxnreg():
    """Law: the warpgroups' registers after ``setmaxnreg`` fit the pool the CTA holds at launch
    (threads x ptxas' per-thread count under ``__launch_bounds__(threads, 1)``): 168 x 384 for
    two consumer warpgroups.  More makes ``setmaxnreg.inc`` wait forever, so it is refused."""
    import dataclasses

    from cute_py.errors import LaunchError
    cfg = G.Sm90GemmConfig()
    assert cfg.threads == 384 and cfg.register_pool == 168 * 384
    assert 40 * 128 + 232 * 256 <= cfg.register_pool
    with pytest.raises(LaunchError, match="consumer_regs"):
        dataclasses.replace(cfg, producer_regs=64, consumer_regs=224).check()
    with pytest.raises(LaunchError, match="producer_regs"):
        dataclasses.replace(cfg, producer_regs=42).check()
    narrow = _compose(n=256, wgs=2, swa=1, swb=1)       # SW32 K-major: 8 TMA boxes a stage
    assert narrow.producer_regs > 40
    assert narrow.producer_regs * 128 + narrow.consumer_regs * 256 <= narrow.register_pool
