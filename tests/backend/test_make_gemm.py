"""``make_gemm``: one entry point composing either family's GEMM from algebra objects.

CPU: the family follows the atom; the objects given back rebuild the same configuration (the
law); options of the other family and bad majors are refused naming the argument; every
composition's source compiles with zero spills.  GPU: the composed kernels through their call
against a float64 reference (skipped without a GPU)."""

import numpy as np
import pytest

import cute_py as cute
from cute_py.atom import make_tiled_mma
from cute_py.errors import AtomError
from cute_py.backends.cuda.device import has_gpu
from cute_py.backends.cuda.make_gemm import ComposedGemm, make_gemm


def _sm80(warps=(2, 2, 1)):
    return make_tiled_mma(cute.SM80_16x8x16_F32F16F16F32_TN(), warps)


def _sm90(n=128, wgs=2, dtype="f16", a="K", b="K"):
    atom = (cute.SM90_64xNx16_F32F16F16_SS if dtype == "f16" else
            cute.SM90_64xNx16_F32BF16BF16_SS)(n, a, b)
    return make_tiled_mma(atom, (wgs, 1, 1))


COMPOSITIONS = {
    "sm80-2x2": lambda: make_gemm(_sm80(), (128, 128, 32)),
    "sm80-4x1-pipelined": lambda: make_gemm(_sm80((4, 1, 1)), (128, 64, 32), stages=2,
                                            mainloop="pipelined"),
    "sm80-1x4-MN": lambda: make_gemm(_sm80((1, 4, 1)), (64, 128, 32), a_major="MN",
                                     b_major="MN"),
    "sm90-coop-128x128": lambda: make_gemm(_sm90(128), (128, 128, 64)),
    "sm90-one-wg-n96": lambda: make_gemm(_sm90(96, 1), (64, 96, 64)),
    "sm90-pingpong-bf16": lambda: make_gemm(_sm90(256, 1, "bf16"), (64, 256, 64),
                                            schedule="pingpong"),
    "sm90-MN-B-cluster2": lambda: make_gemm(_sm90(128, 2, "f16", "K", "MN"), (128, 128, 64),
                                            b_major="MN", cluster_m=2),
    # narrow swizzles: several TMA boxes per stage, more producer registers (setmaxnreg)
    "sm90-SW32-K-coop": lambda: make_gemm(_sm90(256, 2), (128, 256, 64),
                                          smem_layout_A=_smem("f16", 128, "K", 1),
                                          smem_layout_B=_smem("f16", 256, "K", 1)),
    "sm90-INTER-K": lambda: make_gemm(_sm90(64, 1), (64, 64, 64),
                                      smem_layout_A=_smem("f16", 64, "K", 0),
                                      smem_layout_B=_smem("f16", 64, "K", 0)),
    "sm90-SW64-MN-bf16": lambda: make_gemm(_sm90(128, 2, "bf16", "MN", "MN"), (128, 128, 64),
                                           a_major="MN", b_major="MN",
                                           smem_layout_A=_smem("bf16", 128, "MN", 2),
                                           smem_layout_B=_smem("bf16", 128, "MN", 2)),
}


def _smem(dt, rows, major, bits):
    from cute_py.backends.cuda.kernels.gemm_sm90_maps import smem_tile
    return smem_tile(dt, rows, 64, major, bits)


@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_composition_round_trips_and_compiles(name):
    g = COMPOSITIONS[name]()
    assert isinstance(g, ComposedGemm) and hash(g) == hash(COMPOSITIONS[name]())
    assert g.arch == (90 if name.startswith("sm90") else 80)
    d = g.describe()
    kw = {}
    if g.arch == 80:
        kw = dict(stages=g.config.stages, mainloop=g.config.mainloop,
                  a_major="K" if g.config.a_major == "K" else "MN",
                  b_major="K" if g.config.b_major == "K" else "MN")
    else:
        kw = dict(stages=g.config.stages, schedule=g.config.schedule,
                  cluster_m=g.config.cluster_m, a_major=g.config.a_major,
                  b_major=g.config.b_major)
    again = make_gemm(d["tiled_mma"] if g.arch == 80 else _tiled_of(g), _tile(g), **kw,
                      smem_layout_A=d["smem_layout_A"], smem_layout_B=d["smem_layout_B"])
    assert again.config == g.config
    assert "__global__" in g.source and g.name in g.source
    res = g.compile()
    assert res.spill_stores == 0 and res.spill_loads == 0


def _tile(g):
    c = g.config
    return tuple(c.tile) if g.arch == 80 else (c.tile_m, c.tile_n, c.tile_k)


def _tiled_of(g):
    return g.describe()["tiled_mma"]


def test_options_of_the_other_family_are_refused():
    with pytest.raises(AtomError) as e:
        make_gemm(_sm80(), (128, 128, 32), schedule="pingpong")
    assert e.value.arg == "schedule"
    with pytest.raises(AtomError) as e:
        make_gemm(_sm80(), (128, 128, 32), cluster_m=2)
    assert e.value.arg == "cluster_m"
    with pytest.raises(AtomError) as e:
        make_gemm(_sm80(), (128, 128, 32), cluster_n=2)
    assert e.value.arg == "cluster_n"
    with pytest.raises(AtomError) as e:
        make_gemm(_sm90(), (128, 128, 64), mainloop="multistage")
    assert e.value.arg == "mainloop"
    with pytest.raises(AtomError) as e:
        make_gemm(_sm80(), (128, 128, 32), a_major="row")
    assert e.value.arg == "a_major"
    with pytest.raises(AtomError) as e:
        make_gemm(make_tiled_mma(cute.UniversalFMA(), (1, 1, 1)), (16, 16, 1))
    assert e.value.arg == "tiled_mma"


def test_report_names_the_objects():
    r = COMPOSITIONS["sm80-2x2"]().report()
    assert "tiled_mma" in r and "smem_layout_A" in r
    r = COMPOSITIONS["sm90-coop-128x128"]().report()
    assert "SM90_64x128x16_F32F16F16_SS" in r


@pytest.mark.gpu
@pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("name", sorted(COMPOSITIONS))
def test_gpu_composed_kernels_compute_the_product(name):
    torch = pytest.importorskip("torch")
    g = COMPOSITIONS[name]()
    dt = torch.bfloat16 if "bf16" in name else torch.float16
    M, N, K = 300, 200, 136
    gen = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(M, K, device="cuda", generator=gen).to(dt)
    B = torch.randn(K, N, device="cuda", generator=gen).to(dt)
    a_mn = getattr(g.config, "a_major", "K") != "K"
    b_mn = getattr(g.config, "b_major", "K") != "K"
    if a_mn:
        A = A.t().contiguous().t()
    if not b_mn:                      # K-major B: (K, N) with k contiguous, i.e. W.T
        B = B.t().contiguous().t()
    out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        A2 = A * 1            # work queued on the side stream right before the call
        g(A2, B, out=out)
    side.synchronize()
    ref = A.double().cpu().numpy() @ B.double().cpu().numpy()
    err = np.linalg.norm(out.double().cpu().numpy() - ref) / np.linalg.norm(ref)
    assert err < (2e-2 if dt == torch.bfloat16 else 3e-3), err
