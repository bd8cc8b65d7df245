"""GPU tests of the 256-row cooperative tiles (``wide_evt_config``: two 64-row slabs per
consumer warpgroup, up to 192 accumulators per thread, one staging buffer): through the
default path where the wave model picks them (operand rows off 128 bytes), and forced with
``config=`` at odd sizes into
poisoned outputs; float64 references, bit-identical repeats.  Skipped without an sm_90 GPU."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402
from cute_py.backends.cuda.kernels import gemm_sm90 as G  # noqa: E402

from torch_sm90 import DT  # noqa: E402
from torch_sm90 import skip_without_sm90 as _skip_without_sm90  # noqa: E402


def _operands(M, N, K, dt, b_major, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    A = torch.randn(M, K, device="cuda", generator=g).to(DT[dt])
    if b_major == "K":
        B = torch.randn(N, K, device="cuda", generator=g).to(DT[dt]).T       # x @ W.T
    else:
        B = torch.randn(K, N, device="cuda", generator=g).to(DT[dt])         # A @ B
    return A, B


def _check(D, A, B, dt):
    ref = A.double() @ B.double()
    assert not bool(torch.isnan(D).any()), "unwritten (poisoned) elements in D"
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < (3e-3 if dt == "f16" else 1.5e-2), err


@pytest.mark.parametrize("M,N,K,dt,b_major,width", [
    (3000, 5000, 2000, "f16", "K", 160),      # 384 tiles: three rounds (128x192: 4.9 waves)
    (5000, 3000, 2000, "bf16", "K", 160),
])
def test_default_path_picks_wide_tiles(M, N, K, dt, b_major, width):
    _skip_without_sm90()
    # rows on 128 bytes keep the ping-pong kernel (it runs faster under the power cap)
    A8, B8 = _operands(8192, 8192, 1024, "f16", "K", seed=1)
    assert cute.gemm(A8, B8, explain=True)[1].config.schedule == "pingpong"
    A, B = _operands(M, N, K, dt, b_major, seed=M + K)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=DT[dt])
    D, why = cute.gemm(A, B, out=out, explain=True)
    assert (why.config.tile_m, why.config.tile_n, why.config.schedule) == \
        (256, width, "cooperative"), why
    _check(D, A, B, dt)
    again = cute.gemm(A.clone(), B.clone())          # the cached plan, new tensors
    assert torch.equal(again, D)


@pytest.mark.parametrize("width,dt,b_major,M,N,K", [
    (160, "f16", "K", 1000, 1504, 520),      # D rows whole 16-byte chunks (TMA stores)
    (160, "bf16", "K", 257, 344, 1000),       # one partial tile in each mode
    (192, "f16", "K", 700, 1000, 1096),
    (192, "bf16", "MN", 1000, 1544, 200),     # N-contiguous B, K of 3.1 k-blocks
    (128, "f16", "MN", 513, 1032, 4160),
])
def test_forced_wide_tiles(width, dt, b_major, M, N, K):
    _skip_without_sm90()
    cfg = G.wide_evt_config(dt, width, "K", b_major)
    A, B = _operands(M, N, K, dt, b_major, seed=width + M)
    buf = torch.full((M, N + 8), float("nan"), device="cuda", dtype=DT[dt])
    out = buf[:, :N]
    D, why = cute.gemm(A, B, out=out, config=cfg, explain=True)
    torch.cuda.synchronize()
    assert D.data_ptr() == out.data_ptr() and why.config.tile_n == width
    _check(D, A, B, dt)
    assert bool(torch.isnan(buf[:, N:]).all()), "the padding of out was written"
    first = D.clone()
    out.fill_(float("nan"))
    cute.gemm(A, B, out=out, config=cfg)
    assert torch.equal(out, first), "not deterministic"


@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_fused_bias_activation_on_wide_tiles(activation):
    """A fused tree that reads only vectors takes the 256-row tile the wave model picks."""
    _skip_without_sm90()
    M, N, K = 3000, 5000, 2000
    A, B = _operands(M, N, K, "f16", "K", seed=7)
    b = torch.randn(N, device="cuda").to(torch.float16)
    D, why = cute.gemm(A, B, bias=b, activation=activation, explain=True)
    assert (why.config.tile_m, why.config.tile_n) == (256, 160), why
    x = A.double() @ B.double() + b.double()
    ref = torch.nn.functional.gelu(x, approximate="tanh") if activation == "gelu" else \
        torch.nn.functional.silu(x)
    err = float((D.double() - ref).norm() / ref.norm())
    assert err < 3e-3, err
