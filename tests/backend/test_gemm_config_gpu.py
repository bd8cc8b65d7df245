"""GPU tests of ``cute_py.gemm(..., config=cfg)`` with Hopper configurations the heuristic only
picks for some shapes (or never): split-K (fixup / workspace / atomic), stream-K, a transposed D
(swapped A / B), a built-in epilogue whose C term follows the call, and EVT configurations that
cannot compute the call (errors naming the argument).  Odd sizes, poisoned outputs, C with
alpha / beta, determinism.  Skipped without an sm_90 GPU or torch."""

import pytest

from cute_py.errors import LaunchError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402
from cute_py.backends.cuda.kernels import gemm_sm90 as G  # noqa: E402

from torch_sm90 import DT  # noqa: E402
from torch_sm90 import skip_without_sm90 as _skip_without_sm90  # noqa: E402


def _case(M, N, K, dt, with_c, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(DT[dt])
    W = torch.randn(N, K, device="cuda", generator=g).to(DT[dt])
    C = torch.randn(M, N, device="cuda", generator=g).to(DT[dt]) if with_c else None
    return A, W.T, C


def _check(D, A, B, C, alpha, beta, dt):
    ref = alpha * (A.double() @ B.double())
    if C is not None:
        ref = ref + beta * C.double()
    assert not bool(torch.isnan(D).any()), "unwritten (poisoned) elements in D"
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < (3e-3 if dt == "f16" else 1.5e-2), err


# kernel A / B are the user's B / A for transpose_d: both K-major for x @ W.T
CONFIGS = {
    "fixup": G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", split_k="fixup"),
    "workspace": G.Sm90GemmConfig(128, 128, 64, 6, 2, "bf16", split_k="workspace"),
    "atomic": G.Sm90GemmConfig(128, 64, 64, 8, 2, "f16", split_k="atomic", vec2=False),
    "stream_k": G.Sm90GemmConfig(128, 128, 64, 6, 2, "f16", stream_k=True),
    "stream_k_256": G.Sm90GemmConfig(128, 256, 64, 4, 2, "bf16", stream_k=True),
    "swapped": G.Sm90GemmConfig(128, 32, 64, 8, 2, "f16", transpose_d=True, vec2=False),
    "swapped_fixup": G.Sm90GemmConfig(128, 16, 64, 8, 2, "bf16", transpose_d=True, vec2=False,
                                      split_k="fixup"),
    # two warpgroups on each tile's alternate k-blocks (one or two 64-row slabs each)
    "ksplit": G.Sm90GemmConfig(64, 64, 64, 8, 2, "f16", schedule="ksplit"),
    "ksplit_slabs": G.Sm90GemmConfig(128, 64, 64, 6, 2, "bf16", schedule="ksplit"),
    "ksplit_swapped": G.Sm90GemmConfig(64, 16, 64, 8, 2, "f16", schedule="ksplit",
                                       transpose_d=True, vec2=False),
}
SHAPES = {"fixup": (200, 136, 1000), "workspace": (130, 264, 2056), "atomic": (96, 200, 1560),
          "stream_k": (520, 392, 1064), "stream_k_256": (1000, 1500, 2000), "swapped": (24, 1000, 776),
          "swapped_fixup": (9, 520, 2000), "ksplit": (37, 1000, 1096),
          "ksplit_slabs": (200, 136, 1000), "ksplit_swapped": (5, 3000, 200)}


@pytest.mark.parametrize("with_c", [False, True])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_special_configs_through_gemm(name, with_c):
    """Each configuration runs through the call with its workspace / reduce / swap and matches
    float64 on an odd-sized problem, into a poisoned ``out`` (its padding stays poisoned);
    ``explain`` names the configuration."""
    _skip_without_sm90()
    cfg = CONFIGS[name]
    dt = cfg.dtype
    M, N, K = SHAPES[name]
    A, B, C = _case(M, N, K, dt, with_c)
    alpha, beta = (0.75, -0.5) if with_c else (1.25, 0.0)
    buf = torch.full((M, N + 3), float("nan"), device="cuda", dtype=DT[dt])
    out = buf[:, :N]
    D, why = cute.gemm(A, B, C, alpha, beta, out=out, config=cfg, explain=True)
    torch.cuda.synchronize()
    assert D.data_ptr() == out.data_ptr()
    _check(D, A, B, C, alpha, beta, dt)
    assert bool(torch.isnan(buf[:, N:]).all()), "the padding of out was written"
    got = why.config
    assert (got.tile_m, got.tile_n, got.split_k, got.stream_k, got.transpose_d,
            got.schedule) == (cfg.tile_m, cfg.tile_n, cfg.split_k, cfg.stream_k,
                              cfg.transpose_d, cfg.schedule)


@pytest.mark.parametrize("name", ["fixup", "workspace", "stream_k", "swapped_fixup", "ksplit",
                                  "ksplit_swapped"])
def test_special_configs_are_deterministic_and_reuse_their_plan(name):
    """The deterministic modes give bit-identical D twice, also with new tensors of the same
    shapes on the cached plan (the workspace / flags are reused: the kernel leaves them
    zero)."""
    _skip_without_sm90()
    cfg = CONFIGS[name]
    M, N, K = SHAPES[name]
    A, B, _ = _case(M, N, K, cfg.dtype, False, seed=1)
    D1 = cute.gemm(A, B, config=cfg)
    D2 = cute.gemm(A.clone(), B.clone(), config=cfg)
    torch.cuda.synchronize()
    assert torch.equal(D1, D2)
    A2, B2, _ = _case(M, N, K, cfg.dtype, False, seed=2)
    D3 = cute.gemm(A2, B2, config=cfg)
    torch.cuda.synchronize()
    _check(D3, A2, B2, None, 1.0, 0.0, cfg.dtype)


def test_builtin_epilogue_config_follows_the_calls_c():
    """A built-in-epilogue configuration without ``has_c`` computes ``alpha*A@B + beta*C``
    when the call passes C (the C term follows the call, as on the heuristic's routes)."""
    _skip_without_sm90()
    cfg = G.Sm90GemmConfig(128, 256, 64, 4, 2, "f16")
    A, B, C = _case(300, 520, 328, "f16", True)
    D = cute.gemm(A, B, C, 0.5, 2.0, config=cfg)
    torch.cuda.synchronize()
    _check(D, A, B, C, 0.5, 2.0, "f16")


def test_evt_config_that_cannot_compute_the_call_raises():
    """An EVT configuration (``D = acc``) called with C, or with alpha != 1: a LaunchError
    naming C / alpha, never a silently dropped term."""
    _skip_without_sm90()
    cfg = G.default_evt_config("f16", 256, False)
    A, B, C = _case(256, 512, 256, "f16", True)
    with pytest.raises(LaunchError, match=r"^gemm: C "):
        cute.gemm(A, B, C, 1.0, 1.0, config=cfg)
    with pytest.raises(LaunchError, match=r"^gemm: alpha "):
        cute.gemm(A, B, alpha=2.0, config=cfg)
    lin = G.default_evt_config("f16", 256, True)
    with pytest.raises(LaunchError, match=r"^gemm: C "):
        cute.gemm(A, B, config=lin)
    D = cute.gemm(A, B, C, 0.5, 1.5, config=lin)
    torch.cuda.synchronize()
    _check(D, A, B, C, 0.5, 1.5, "f16")


@pytest.mark.parametrize("dt, with_c, M, N, K", [
    ("f16", False, 520, 1000, 1064),       # 5 x 4 tiles: every tile shared in k-blocks
    ("bf16", True, 700, 1496, 2000),       # C through the epilogue's load producer
    ("f16", False, 4200, 4504, 512),       # 33 x 18 tiles: data-parallel waves, then stream-K
])
def test_streamk_with_the_evt_epilogue(dt, with_c, M, N, K):
    """Stream-K under the TMA-store EVT epilogue (a store warp without C, the epilogue's load
    producer with C): float64 reference into a poisoned ``out``, flags left zero (a second call
    on new inputs is right), bit-identical twice."""
    import dataclasses
    _skip_without_sm90()
    cfg = dataclasses.replace(G.default_evt_config(dt, 256, with_c, rows_128=False),
                              stream_k=True)
    A, B, C = _case(M, N, K, dt, with_c, seed=M)
    alpha, beta = (0.75, -0.5) if with_c else (1.0, 0.0)
    pitch = -(-(N + 1) // 8) * 8          # TMA stores: 16-byte row pitch, padding after N
    buf = torch.full((M, pitch), float("nan"), device="cuda", dtype=DT[dt])
    out = buf[:, :N]
    D, why = cute.gemm(A, B, C, alpha, beta, out=out, config=cfg, explain=True)
    torch.cuda.synchronize()
    assert why.config.stream_k and why.config.epi is not None
    _check(D, A, B, C, alpha, beta, dt)
    assert bool(torch.isnan(buf[:, N:]).all()), "the padding of out was written"
    D2 = cute.gemm(A, B, C, alpha, beta, config=cfg)
    torch.cuda.synchronize()
    assert torch.equal(D, D2)
    A2, B2, C2 = _case(M, N, K, dt, with_c, seed=M + 1)
    D3 = cute.gemm(A2, B2, C2, alpha, beta, config=cfg)
    torch.cuda.synchronize()
    _check(D3, A2, B2, C2, alpha, beta, dt)
