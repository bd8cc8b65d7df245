"""Hopper GEMMs in 2-D clusters (``cluster_m x cluster_n``: B's tile multicast along M, A's
along N) on the GPU: 16-bit cooperative (built-in and EVT epilogues, with a store warp),
ping-pong and MN-major operands, and FP8 per-tensor, row-wise and block-scaled kernels.  Fresh
random data, NaN-poisoned D, the float64 reference; shapes whose tile counts are not multiples
of the cluster (units whose CTAs hold tiles past M or N: they load zeros, multicast their
slice to the cluster and store nothing), batched; the full persistent grid and 6 CTAs (many
units per cluster); two calls bit-identical.  Skipped without an sm_90 GPU."""

import os
import sys

import numpy as np
import pytest

from cute_py.backends.cuda.kernels import gemm_sm90 as G

pytestmark = pytest.mark.gpu

CLUSTERS = [(1, 2), (2, 2)]
SHAPES = [(1000, 776, 333, None), (200, 520, 328, None), (2047, 1536, 1100, None),
          (300, 200, 136, 3)]
SHAPE_IDS = ["1000x776x333", "200x520x328", "2047x1536x1100", "L3x300x200x136"]


def _hopper():
    try:
        from cute_py.backends.cuda.device import device_properties, has_gpu
    except ImportError:
        pytest.skip("needs CuPy")
    if not has_gpu():
        pytest.skip("needs a CUDA GPU")
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")


def _rand(shape, dt, rng):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from benchmarks.gemm_sm90_variants import _rand as r
    return r(shape, dt, rng)


def _f64(X, dt):
    import cupy as cp
    if dt == "f16":
        return X.astype(cp.float64)
    return (X.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)


def _operand(lead, rows, K, major, dt, rng):
    if major == "K":               # a padded pitch: TMA reads it in place
        return _rand(lead + (rows, -(-K // 8) * 8), dt, rng)[..., :K]
    X = _rand(lead + (K, -(-rows // 8) * 8 + 8), dt, rng)[..., :rows]
    return X.swapaxes(-1, -2)


KINDS = {
    "coop": dict(),
    "coop_evt_sw": dict(evt=True, store_warp=True),
    "coop_128x128_mn": dict(tile_n=128, a_major="MN", b_major="MN", stages=6),
    "pingpong": dict(tile_n=128, schedule="pingpong", stages=5),
    "pingpong_64x256": dict(tile_m=64, schedule="pingpong", stages=5),
}


def _config(kind, dt, cm, cn, batched):
    from cute_py.epilogue import evt
    spec = dict(KINDS[kind])
    ed = "float16" if dt == "f16" else "bfloat16"
    tree = evt.lin_comb_bias_elt_act("relu", bias="col", element_c=ed, element_bias=ed) \
        if spec.pop("evt", False) else None
    sw = spec.pop("store_warp", False)
    tm, tn, stages = spec.pop("tile_m", 128), spec.pop("tile_n", 256), spec.pop("stages", 4)
    sched = spec.get("schedule", "cooperative")
    epi = None
    if tree is not None or batched:
        epi = G.make_epilogue_config(tree, tm, tn, element_d=ed, schedule=sched,
                                     batched=batched)
    cfg = G.Sm90GemmConfig(tm, tn, 64, stages, 2, dt, cluster_m=cm, cluster_n=cn, epi=epi,
                           vec2=False, **spec).fit_stages(stages)
    return G.with_store_warp(cfg) if sw else cfg


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("cluster", CLUSTERS, ids=lambda c: f"c{c[0]}x{c[1]}")
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_gemm_sm90_cluster_gpu(dt, kind, cluster, shape):
    _hopper()
    import cupy as cp
    M, N, K, L = shape
    lead = () if L is None else (L,)
    if L is not None and kind not in ("coop", "coop_128x128_mn"):
        pytest.skip("a batched D takes the cooperative D = acc epilogue")
    cfg = _config(kind, dt, *cluster, batched=L is not None)
    g = G.Sm90Gemm(cfg)
    rng = cp.random.default_rng()
    A = _operand(lead, M, K, cfg.a_major, dt, rng)
    B = _operand(lead, N, K, cfg.b_major, dt, rng)
    ref = cp.matmul(_f64(A, dt), _f64(B, dt).swapaxes(-1, -2))
    tens = None
    if "evt" in kind:
        C = _rand(lead + (M, N), dt, rng)
        bias = _rand((N,), dt, rng)
        names = {n for n, (role, _) in cfg.epi.tree.signature.items() if role == "scalar"}
        tens = {"C": C, "bias": bias, **{n: (1.5 if "alpha" in n else 0.5) for n in names}}
        ref = cp.maximum(1.5 * ref + 0.5 * _f64(C, dt) + _f64(bias, dt)[None, :], 0)
    outs = []
    for max_ctas in (None, 6, None):
        D = cp.empty(lead + (M, N), dtype=A.dtype)
        D.view(cp.uint16).fill(0x7E00 if dt == "f16" else 0x7FC0)
        g.prepare(A, B, D, max_ctas=max_ctas, tensors=tens)()
        out = _f64(D, dt)
        assert not bool(cp.isnan(out).any()), max_ctas
        err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
        assert err < (2e-3 if dt == "f16" else 1e-2), (max_ctas, err)
        outs.append(D)
    assert bool((outs[0] == outs[2]).all()) and bool((outs[0] == outs[1]).all())


FP8 = {
    "tensor_192_evt": dict(scaling="tensor", promote=True, tile_n=192, evt=True),
    "row_128": dict(scaling="row", promote=True, tile_n=128),
    "block_128": dict(scaling="block", tile_n=128),
    "block_128_evt": dict(scaling="block", tile_n=128, evt=True),
    "block_192_evt": dict(scaling="block", tile_n=192, evt=True),
}


@pytest.mark.parametrize("kind", sorted(FP8))
@pytest.mark.parametrize("cluster", CLUSTERS + [(2, 1)], ids=lambda c: f"c{c[0]}x{c[1]}")
@pytest.mark.parametrize("shape", [(1000, 776, 1040), (300, 1000, 384), (2048, 3000, 640)],
                         ids=["1000x776x1040", "300x1000x384", "2048x3000x640"])
def test_fp8_cluster_gpu(kind, cluster, shape):
    _hopper()
    torch = pytest.importorskip("torch")
    sys.path.insert(0, os.path.dirname(__file__))
    from test_scaled_mm_gpu import REL, _poisoned, _rel, make_problem
    spec = dict(FP8[kind])
    evt_on = spec.pop("evt", False)
    tn = spec.pop("tile_n")
    cm, cn = cluster
    epi = G.make_epilogue_config(None, tile_n=tn, element_d="bfloat16") if evt_on else None
    cfg = G.Sm90GemmConfig(tile_n=tn, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           cluster_m=cm, cluster_n=cn, group_m=16, epi=epi,
                           **spec).fit_stages()
    if evt_on:
        cfg = G.with_store_warp(cfg)
    M, N, K = shape
    A, B, sa, sb, ref = make_problem(M, N, K, spec["scaling"], seed=M + N + cm + 2 * cn)
    k = G.get_kernel(cfg)
    outs = []
    for grid in (None, 6, None):
        D = _poisoned(M, N, "bfloat16")
        k.prepare(A, B.t(), D, max_ctas=grid, scale_a=sa, scale_b=sb)()
        torch.cuda.synchronize()
        assert _rel(D, ref) < REL, grid
        outs.append(D)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])
    assert np.isfinite(_rel(outs[0], ref))
