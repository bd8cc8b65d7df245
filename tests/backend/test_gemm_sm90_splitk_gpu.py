"""GPU tests of the split-K, swapped (transposed D) and narrow-tile Hopper GEMM paths against a
float64 reference: odd sizes, poisoned outputs and padding, determinism (the same inputs give
bit-identical outputs twice), C with alpha / beta, the atomic mode.

Launched through ``Sm90Gemm(cfg).plan`` (``_launch``): the plan appends the split-K / stream-K
arguments and binds a swapped (``transpose_d``) D in the user's orientation.
"""

import pytest

from cute_py.backends.cuda.device import has_gpu
from cute_py.backends.cuda.kernels import gemm_sm90 as G
from cute_py.backends.cuda.kernels import gemm_sm90_splitk as SK
from cute_py.backends.cuda.kernels import gemm_sm90_streamk as STK
from cute_py.backends.cuda.kernels.gemm_sm90_heuristic import choose_sm90
from cute_py.backends.cuda.kernels.splitk_reduce import splitk_reduce

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")]

_POISON = {"f16": 0x7E00, "bf16": 0x7FC0}          # quiet NaN bit patterns


@pytest.fixture(autouse=True)
def _sm90():
    from cute_py.backends.cuda.device import device_properties
    if device_properties().cc[0] < 9:
        pytest.skip("needs sm_90")


_KERNELS: dict = {}


def _kernel(cfg):
    g = _KERNELS.get(cfg)
    if g is None:
        g = _KERNELS[cfg] = G.Sm90Gemm(cfg)
    return g


def _rand(cp, shape, dt, rng):
    x = rng.standard_normal(shape, dtype=cp.float32)
    if dt == "f16":
        return x.astype(cp.float16)
    return (x.view(cp.uint32) >> 16).astype(cp.uint16)


def _f64(cp, X, dt):
    if dt == "f16":
        return X.astype(cp.float64)
    return (X.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)


def _launch(cfg, A, B, D, C=None, alpha=1.0, beta=0.0, splits=1, ws=None, tile_count=None,
            sk_tiles=None):
    """One GEMM ``D = alpha * A @ B^T + beta * C`` (user coordinates: A (M, K), B (N, K), D / C
    (M, N) row-major, any pitch) with configuration ``cfg`` through its launch plan
    (``Sm90Gemm.plan``): a ``transpose_d`` configuration is launched swapped (kernel A = B,
    kernel B = A, D^T), a "workspace" / "atomic" split-K one writes ``ws`` and then runs the
    reduce kernel, a "fixup" one writes D itself (``tile_count``: the per-tile counters, zeroed
    here when not given); a stream-K one gets its workspace and flags (``tile_count`` / ``ws``
    when given) and runs on its layout's grid.  Returns D."""
    import cupy as cp
    from cute_py.backends.cuda.tensors import meta_of
    g = _kernel(cfg)
    dt = cfg.dtype
    kA, kB = (B, A) if cfg.transpose_d else (A, B)
    km, kn = kA.shape[0], kB.shape[0]
    stores_d = cfg.split_k in ("none", "fixup")          # the GEMM kernel writes D
    Am, Bm, Dm = meta_of(kA, "A", "t"), meta_of(kB, "B", "t"), meta_of(D, "D", "t")
    Cm = meta_of(C, "C", "t") if cfg.has_c else None
    if cfg.splits:
        lay = SK.splitk_layout(cfg, km, kn, 1, splits)
        if ws is None:
            ws = cp.zeros(lay.elements, cp.float32)
        elif cfg.split_k == "atomic":
            ws[:lay.elements] = 0
        if tile_count is None:
            tile_count = cp.zeros(max(1, lay.counters), cp.int32)
    if cfg.stream_k:
        lay = STK.streamk_layout(cfg, km, kn, A.shape[1], 1, g.max_ctas(), sk_tiles)
        if ws is None:
            ws = cp.empty(lay.ws_elements, cp.float32)
        if tile_count is None:
            tile_count = cp.zeros(lay.flags, cp.int32)
    plan = g.plan(Am, Bm, Dm, Cm, splits=splits, sk_tiles=sk_tiles)
    wptr = int(ws.data.ptr) if ws is not None else 0
    cptr = int(tile_count.data.ptr) if tile_count is not None else 0
    ptr = {"A": Am.ptr, "B": Bm.ptr, "D": Dm.ptr, "C": Cm.ptr if Cm is not None else Dm.ptr,
           "WS": wptr, "CNT": cptr}
    stream = cp.cuda.get_current_stream().ptr
    plan.run(tuple(ptr[r] for r in plan.roles), (alpha, beta), stream)
    if cfg.splits and not stores_d:
        splitk_reduce(ws, lay, D, C if beta != 0.0 else None, alpha, beta, dtype=dt)
    cp.cuda.get_current_stream().synchronize()
    return D


def _check(cp, D, A, B, dt, C=None, alpha=1.0, beta=0.0):
    ref = alpha * (_f64(cp, A, dt) @ _f64(cp, B, dt).T)
    if C is not None and beta != 0.0:
        ref += beta * _f64(cp, C, dt)
    got = _f64(cp, D, dt)
    assert not bool(cp.isnan(got).any()), "unwritten (poisoned) elements in D"
    err = float(cp.abs(got - ref).max() / max(1.0, float(cp.abs(ref).max())))
    assert err < (4e-3 if dt == "f16" else 2e-2), err


def _poisoned(cp, M, N, dt, pad=3):
    """D as an (M, N) view into a poisoned (M, N + pad) buffer (the padding must stay poisoned)."""
    buf = cp.full((M, N + pad), _POISON[dt], cp.uint16)
    if dt == "f16":
        buf = buf.view(cp.float16)
    return buf, buf[:, :N]


def _forced_splitk(M, N, K, dt, mode="workspace"):
    """A split-K configuration for the user problem (swapped for M <= 64)."""
    c = choose_sm90(M, N, K, dtype=dt, allow_split=False)
    if c.cfg is None:
        cfg = G.Sm90GemmConfig(128, 128, 64, 6, 2, dt, vec2=False)
    else:
        cfg = c.cfg
    import dataclasses
    return dataclasses.replace(cfg, split_k=mode, vec2=False, has_c=mode == "fixup")


SHAPES_M = (1, 7, 16, 33, 128)
SHAPES_NK = ((4096, 4096), (391, 2000), (4096, 72))


@pytest.mark.parametrize("split_mode", ["workspace", "fixup"])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("M", SHAPES_M)
@pytest.mark.parametrize("NK", SHAPES_NK, ids=lambda t: f"N{t[0]}K{t[1]}")
def test_heuristic_choice_vs_reference(split_mode, dt, M, NK):
    """What choose_sm90 picks (swap / split / tile) on decode-like and odd shapes; D's padding
    stays poisoned; the run is repeated and must be bit-identical."""
    import cupy as cp
    N, K = NK
    rng = cp.random.default_rng(M * 7 + N)
    A, B = _rand(cp, (M, K), dt, rng), _rand(cp, (N, K), dt, rng)
    c = choose_sm90(M, N, K, dtype=dt, split_mode=split_mode, d_vec2=False)  # odd D pitch
    cfg = c.cfg if c.cfg is not None else G.Sm90GemmConfig(128, 128, 64, 6, 2, dt, vec2=False)
    buf, D = _poisoned(cp, M, N, dt)
    _launch(cfg, A, B, D, splits=c.splits)
    _check(cp, D, A, B, dt)
    assert bool((buf[:, N:].view(cp.uint16) == _POISON[dt]).all()), "D's padding was written"
    first = D.copy()
    _launch(cfg, A, B, D, splits=c.splits)
    assert bool((D.view(cp.uint16) == first.view(cp.uint16)).all()), "not deterministic"


@pytest.mark.parametrize("mode", ["workspace", "fixup"])
@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("M,N,K,splits", [(1, 4096, 4096, 4), (7, 391, 2000, 5),
                                          (16, 4096, 72, 3), (33, 391, 4096, 8),
                                          (128, 4096, 2000, 4), (128, 391, 72, 2),
                                          (200, 300, 1000, 16)])
def test_splitk_with_c_alpha_beta_deterministic(mode, dt, M, N, K, splits):
    """Forced split-K (more splits than some k-ranges have blocks in the last case), with C,
    alpha and beta; two runs are bit-identical ("fixup": with the same counters, which the
    kernel must leave zeroed)."""
    import cupy as cp
    rng = cp.random.default_rng(M + N + K)
    A, B = _rand(cp, (M, K), dt, rng), _rand(cp, (N, K), dt, rng)
    C = _rand(cp, (M, N), dt, rng)
    cfg = _forced_splitk(M, N, K, dt, mode)
    km, kn = (N, M) if cfg.transpose_d else (M, N)
    lay = SK.splitk_layout(cfg, km, kn, 1, splits)
    ws = cp.zeros(lay.elements, cp.float32)
    counters = cp.zeros(max(1, lay.counters), cp.int32)
    buf, D = _poisoned(cp, M, N, dt)
    _launch(cfg, A, B, D, C, 1.5, -0.75, splits=splits, ws=ws, tile_count=counters)
    _check(cp, D, A, B, dt, C, 1.5, -0.75)
    assert bool((buf[:, N:].view(cp.uint16) == _POISON[dt]).all()), "D's padding was written"
    assert int(counters.sum()) == 0, "fixup counters not reset"
    first = D.copy()
    D[...] = first[0, 0]
    _launch(cfg, A, B, D, C, 1.5, -0.75, splits=splits, ws=ws, tile_count=counters)
    assert bool((D.view(cp.uint16) == first.view(cp.uint16)).all()), "not deterministic"


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (33, 391, 2000), (128, 4096, 72)])
def test_splitk_atomic_mode(dt, M, N, K):
    """atomic mode: one zeroed slice, atomicAdd from every split (close, not bit-exact)."""
    import cupy as cp
    rng = cp.random.default_rng(3)
    A, B = _rand(cp, (M, K), dt, rng), _rand(cp, (N, K), dt, rng)
    import dataclasses
    cfg = dataclasses.replace(_forced_splitk(M, N, K, dt, mode="atomic"), has_c=False)
    buf, D = _poisoned(cp, M, N, dt)
    _launch(cfg, A, B, D, splits=4)
    _check(cp, D, A, B, dt)


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (7, 391, 2000), (16, 4096, 72),
                                   (33, 391, 4096), (64, 1000, 520)])
def test_swapped_direct_store_with_c(dt, M, N, K, monkeypatch):
    """Swap without split: the kernel stores D^T through transpose_d, C read the same way
    (swapping forced up to M = 64 so the 64-wide swapped tile stays covered)."""
    import dataclasses
    import cupy as cp
    from cute_py.backends.cuda.kernels import gemm_sm90_heuristic
    monkeypatch.setattr(gemm_sm90_heuristic, "SWAP_MAX_M", 64)
    rng = cp.random.default_rng(11)
    A, B = _rand(cp, (M, K), dt, rng), _rand(cp, (N, K), dt, rng)
    C = _rand(cp, (M, N), dt, rng)
    c = choose_sm90(M, N, K, dtype=dt, allow_split=False)
    assert c.swap
    cfg = dataclasses.replace(c.cfg, has_c=True)
    buf, D = _poisoned(cp, M, N, dt)
    _launch(cfg, A, B, D, C, 0.5, 2.0)
    _check(cp, D, A, B, dt, C, 0.5, 2.0)
    assert bool((buf[:, N:].view(cp.uint16) == _POISON[dt]).all())


@pytest.mark.parametrize("tile_n", [16, 32])
def test_narrow_tile_unswapped(tile_n):
    """A 128 x 16 / 32 tile on a plain (not swapped) problem: the narrow wgmma and the built-in
    epilogue on their own."""
    import cupy as cp
    rng = cp.random.default_rng(5)
    M, N, K = 1000, 77, 1000
    A, B = _rand(cp, (M, K), "f16", rng), _rand(cp, (N, K), "f16", rng)
    cfg = G.Sm90GemmConfig(128, tile_n, 64, 8, 2, "f16", vec2=False)
    buf, D = _poisoned(cp, M, N, "f16")
    _launch(cfg, A, B, D)
    _check(cp, D, A, B, "f16")


@pytest.mark.parametrize("dt", ["f16", "bf16"])
@pytest.mark.parametrize("M,N,K,sk,swap,tn", [
    (1000, 1000, 1000, None, False, 128),      # 64 tiles < 132 CTAs: pure stream-K
    (4096, 4096, 4096, None, False, 128),      # 1024 tiles: 6 data-parallel waves + stream-K
    (4096, 4096, 4096, 1024, False, 128),      # all stream-K
    (2048, 3000, 520, None, False, 128),
    (300, 5000, 2000, None, False, 128),
    (33, 4096, 4096, None, True, 64),          # swapped: 128 x 64 tiles, D^T
    (3000, 5000, 2000, None, False, 256),      # 128 accumulators per thread: 480 tiles
    (1000, 1000, 1000, None, False, 256),      # 32 tiles: pure stream-K
    (3000, 5000, 2000, 84, False, 256),        # the last partial wave only
])
def test_streamk_vs_reference_deterministic(dt, M, N, K, sk, swap, tn):
    """Stream-K with C, alpha, beta: float64 reference, poisoned padding, flags left zero, and
    two runs bit-identical."""
    import cupy as cp
    rng = cp.random.default_rng(M + K)
    A, B = _rand(cp, (M, K), dt, rng), _rand(cp, (N, K), dt, rng)
    C = _rand(cp, (M, N), dt, rng)
    cfg = G.Sm90GemmConfig(128, tn, 64, 8 if tn == 64 else 6 if tn == 128 else 4, 2, dt,
                           stream_k=True, has_c=True, vec2=False, transpose_d=swap)
    flags = cp.zeros(512, cp.int32)
    buf, D = _poisoned(cp, M, N, dt)
    _launch(cfg, A, B, D, C, 0.75, 1.25, tile_count=flags, sk_tiles=sk)
    _check(cp, D, A, B, dt, C, 0.75, 1.25)
    assert bool((buf[:, N:].view(cp.uint16) == _POISON[dt]).all()), "D's padding was written"
    assert int(flags.sum()) == 0, "stream-K flags not reset"
    first = D.copy()
    D[...] = first[0, 0]
    _launch(cfg, A, B, D, C, 0.75, 1.25, tile_count=flags, sk_tiles=sk)
    assert bool((D.view(cp.uint16) == first.view(cp.uint16)).all()), "not deterministic"
