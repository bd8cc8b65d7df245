"""GPU tests of the ping-pong 128x192 tiles (``pingpong_evt_config``: two 64-row slabs per
warpgroup, 192 accumulators per thread): through the default path where ``pingpong_tile``
picks them (operand rows on 128 bytes), forced with ``config=`` at odd sizes into poisoned
outputs, batched, and fused bias + activation with the register split that fits; float64
references, bit-identical repeats.  Skipped without an sm_90 GPU."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402
from cute_py.backends.cuda.kernels import gemm_sm90 as G  # noqa: E402

from torch_sm90 import DT  # noqa: E402
from torch_sm90 import skip_without_sm90 as _skip_without_sm90  # noqa: E402


def _operands(M, N, K, dt, a_major, b_major, seed, L=None):
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = (L,) if L else ()

    def mat(r, c, major):       # an (r, c) operand, K-major (row-major) or MN-major
        if major == "K":
            return torch.randn(*lead, r, c, device="cuda", generator=g).to(DT[dt])
        return torch.randn(*lead, c, r, device="cuda", generator=g).to(DT[dt]).transpose(-1, -2)
    A = mat(M, K, a_major)
    B = mat(N, K, b_major).transpose(-1, -2)           # (K, N): x @ W.T (K) or A @ B (MN)
    return A, B


def _check(D, ref, dt):
    assert not bool(torch.isnan(D).any()), "unwritten (poisoned) elements in D"
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < (3e-3 if dt == "f16" else 1.5e-2), err


@pytest.mark.parametrize("dt,b_major", [("f16", "K"), ("bf16", "MN")])
def test_default_path_picks_128x192(dt, b_major):
    _skip_without_sm90()
    M, N, K = 8192, 8192, 320
    A, B = _operands(M, N, K, dt, "K", b_major, seed=3)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=DT[dt])
    D, why = cute.gemm(A, B, out=out, explain=True)
    cfg = why.config
    assert (cfg.tile_m, cfg.tile_n, cfg.schedule) == (128, 192, "pingpong"), why
    _check(D, A.double() @ B.double(), dt)
    assert torch.equal(cute.gemm(A.clone(), B.clone()), D)     # cached plan, new tensors
    # 4096^3-like outputs keep 64x256 (5.3 tiles of 128x192 per SM would take 6 turns)
    A4, B4 = _operands(4096, 4096, 64, dt, "K", b_major, seed=4)
    assert cute.gemm(A4, B4, explain=True)[1].config.tile_m == 64


def test_batched_default_picks_128x192():
    _skip_without_sm90()
    L, M, N, K = 2, 4096, 8192, 192
    A, B = _operands(M, N, K, "f16", "K", "MN", seed=5, L=L)
    out = torch.full((L, M, N), float("nan"), device="cuda", dtype=torch.float16)
    D, why = cute.gemm(A, B, out=out, explain=True)
    assert (why.config.tile_m, why.config.tile_n) == (128, 192), why
    assert why.config.epi is not None and why.config.epi.batched
    _check(D, A.double() @ B.double(), "f16")


@pytest.mark.parametrize("dt,a_major,b_major,M,N,K", [
    ("f16", "K", "K", 1000, 1000, 520),       # partial tiles in M and N
    ("bf16", "K", "MN", 257, 392, 1000),
    ("f16", "MN", "K", 520, 776, 136),        # M-contiguous A, K of 2.1 k-blocks
    ("bf16", "MN", "MN", 1288, 1544, 4160),
])
def test_forced_128x192(dt, a_major, b_major, M, N, K):
    _skip_without_sm90()
    cfg = G.pingpong_evt_config(None, dt, 128, 192, a_major, b_major)
    A, B = _operands(M, N, K, dt, a_major, b_major, seed=M + N)
    buf = torch.full((M, N + 8), float("nan"), device="cuda", dtype=DT[dt])
    out = buf[:, :N]
    D, why = cute.gemm(A, B, out=out, config=cfg, explain=True)
    torch.cuda.synchronize()
    assert D.data_ptr() == out.data_ptr() and why.config == cfg
    _check(D, A.double() @ B.double(), dt)
    assert bool(torch.isnan(buf[:, N:]).all()), "the padding of out was written"
    first = D.clone()
    out.fill_(float("nan"))
    cute.gemm(A, B, out=out, config=cfg)
    assert torch.equal(out, first), "not deterministic"


@pytest.mark.parametrize("activation,tile,regs", [
    ("gelu", (128, 192), (24, 240)),          # spills at 40 / 232: the 24 / 240 split
    ("silu", (128, 192), (40, 232)),
    ("gelu_erf", (64, 256), None),            # spills at both splits: the default tile
])
def test_fused_bias_activation_picks_a_tile_that_fits(activation, tile, regs):
    _skip_without_sm90()
    M, N, K = 8192, 8192, 256
    A, B = _operands(M, N, K, "f16", "K", "K", seed=9)
    b = torch.randn(N, device="cuda").to(torch.float16)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    D, why = cute.gemm(A, B, bias=b, activation=activation, out=out, explain=True)
    cfg = why.config
    assert (cfg.tile_m, cfg.tile_n, cfg.schedule) == (*tile, "pingpong"), why
    if regs:
        assert (cfg.producer_regs, cfg.consumer_regs) == regs
    x = A[:512].double() @ B.double() + b.double()
    F = torch.nn.functional
    ref = {"gelu": lambda: F.gelu(x, approximate="tanh"), "silu": lambda: F.silu(x),
           "gelu_erf": lambda: F.gelu(x)}[activation]()
    _check(D[:512], ref, "f16")
    assert not bool(torch.isnan(D).any())
