"""GPU tests of ``cute_py.gemm`` on broadcast batches and empty problems (``torch.matmul`` /
``torch.mm`` semantics): a 3-D ``x`` times a 2-D ``W.T`` (folded into one GEMM), expanded
(stride-0) and batch-1 operands, a broadcast A (one GEMM per batch), C / bias / activation
through both routes, the caller's stream, and M / N / L / K of zero.  Skipped without a GPU or
torch."""

import pytest

from cute_py.errors import LaunchError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def _skip_without_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


def _close(D, ref, dt):
    assert tuple(D.shape) == tuple(ref.shape)
    assert not bool(torch.isnan(D).any())
    if ref.numel() == 0:
        return
    den = float(ref.norm())
    err = float((D.double() - ref).norm()) / (den if den else 1.0)
    assert err < (3e-3 if dt == torch.float16 else 1.5e-2), err


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("bkind", ["2d", "expand", "batch1"])
def test_batched_x_times_shared_weight_folds(dt, bkind):
    """``gemm(x (L, M, K), B)`` with B 2-D, expanded or of batch 1: one GEMM on the folded
    ``(L*M, K)`` view (``explain`` says so), equal to ``x @ B``; bias + activation fused."""
    _skip_without_cuda()
    L, M, K, N = 3, 100, 264, 136
    x = torch.randn(L, M, K, device="cuda", dtype=dt)
    W = torch.randn(N, K, device="cuda", dtype=dt)
    B = {"2d": W.T, "expand": W.T.expand(L, K, N), "batch1": W.T.unsqueeze(0)}[bkind]
    D, why = cute.gemm(x, B, explain=True)
    torch.cuda.synchronize()
    _close(D, x.double() @ W.T.double(), dt)
    assert "folded" in why.reason
    b = torch.randn(N, device="cuda", dtype=dt)
    D = cute.gemm(x, B, bias=b, activation="gelu")
    torch.cuda.synchronize()
    _close(D, F.gelu(x.double() @ W.T.double() + b.double(), approximate="tanh"), dt)


def test_fold_with_c_and_out_views():
    """C and out (L, M, N) fold too; an out that does not fold (a permuted view) runs one GEMM
    per batch and is still right."""
    _skip_without_cuda()
    dt = torch.float16
    L, M, K, N = 4, 64, 128, 96
    x = torch.randn(L, M, K, device="cuda", dtype=dt)
    B = torch.randn(K, N, device="cuda", dtype=dt)
    C = torch.randn(L, M, N, device="cuda", dtype=dt)
    ref = 0.5 * (x.double() @ B.double()) + 2.0 * C.double()
    out = torch.full((L, M, N), float("nan"), device="cuda", dtype=dt)
    D = cute.gemm(x, B, C, 0.5, 2.0, out=out)
    torch.cuda.synchronize()
    assert D.data_ptr() == out.data_ptr()
    _close(D, ref, dt)
    odd = torch.full((M, L, N), float("nan"), device="cuda", dtype=dt).permute(1, 0, 2)
    D, why = cute.gemm(x, B, C, 0.5, 2.0, out=odd, explain=True)
    torch.cuda.synchronize()
    _close(D, ref, dt)
    assert "broadcast batch: 4 calls" in why.reason


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_broadcast_a_and_column_bias_run_per_batch(dt):
    """A broadcast A (2-D or expanded) against a batched B, and a per-row bias with a shared B:
    one GEMM per batch, equal to torch.matmul's broadcast."""
    _skip_without_cuda()
    L, M, K, N = 3, 72, 200, 136
    A = torch.randn(M, K, device="cuda", dtype=dt)
    Bb = torch.randn(L, K, N, device="cuda", dtype=dt)
    for a in (A, A.expand(L, M, K)):
        D = cute.gemm(a, Bb)
        torch.cuda.synchronize()
        _close(D, A.double() @ Bb.double(), dt)
    x = torch.randn(L, M, K, device="cuda", dtype=dt)
    W = torch.randn(K, N, device="cuda", dtype=dt)
    cb = torch.randn(M, 1, device="cuda", dtype=dt)
    D = cute.gemm(x, W, bias=cb, activation="relu")
    torch.cuda.synchronize()
    _close(D, torch.relu(x.double() @ W.double() + cb.double()), dt)


def test_broadcast_runs_on_the_callers_stream():
    """Work queued on a side stream right before a folded or per-batch call is seen."""
    _skip_without_cuda()
    dt = torch.float16
    s = torch.cuda.Stream()
    x_src = torch.randn(3, 128, 256, device="cuda", dtype=dt)
    W = torch.randn(256, 192, device="cuda", dtype=dt)
    for B in (W, torch.randn(3, 256, 192, device="cuda", dtype=dt)[:1].expand(3, 256, 192)):
        x = torch.full_like(x_src, float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            torch.cuda._sleep(20_000_000)
            x.copy_(x_src)
            D = cute.gemm(x, B)
        s.synchronize()
        _close(D, x_src.double() @ B.double(), dt)


def test_batch_mismatch_raises():
    _skip_without_cuda()
    x = torch.randn(3, 8, 16, device="cuda", dtype=torch.float16)
    with pytest.raises(LaunchError, match="^gemm: B "):
        cute.gemm(x, torch.randn(2, 16, 8, device="cuda", dtype=torch.float16))
    with pytest.raises(LaunchError, match="^gemm: out has the wrong shape"):
        cute.gemm(x, torch.randn(16, 8, device="cuda", dtype=torch.float16),
                  out=torch.empty(24, 8, device="cuda", dtype=torch.float16))


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16, torch.float32],
                         ids=["fp16", "bf16", "fp32"])
def test_empty_problems_follow_torch(dt):
    """M, N or L of 0: the empty D (as torch.mm); K of 0: D = act(beta * C + bias) from exact
    zero accumulators, also into a poisoned out."""
    _skip_without_cuda()
    A = torch.randn(64, 32, device="cuda", dtype=dt)
    B = torch.randn(32, 48, device="cuda", dtype=dt)
    for a, b in ((A[:0], B), (A, B[:, :0]), (A.expand(0, 64, 32), B.expand(0, 32, 48))):
        D = cute.gemm(a, b)
        torch.cuda.synchronize()
        assert tuple(D.shape) == tuple((a @ b).shape) and D.dtype == dt
    C = torch.randn(64, 48, device="cuda", dtype=dt)
    bias = torch.randn(48, device="cuda", dtype=dt)
    out = torch.full((64, 48), float("nan"), device="cuda", dtype=dt)
    D = cute.gemm(A[:, :0], B[:0], C, 2.0, 0.5, out=out, bias=bias, activation="relu")
    torch.cuda.synchronize()
    _close(D, torch.relu(0.5 * C.double() + bias.double()), dt)
    D = cute.gemm(A[:, :0], B[:0])
    torch.cuda.synchronize()
    assert bool((D == 0).all()) and tuple(D.shape) == (64, 48)
    with pytest.raises(LaunchError, match="^gemm: activation"):
        cute.gemm(A[:0], B, activation="tanh")


def test_folded_call_is_cached_for_new_tensors():
    """A folded ``x (L, M, K) @ W.T`` is remembered as the 2-D call under the 3-D call's key:
    later calls with new tensors (out allocated or given, C) take it and stay right."""
    _skip_without_cuda()
    from cute_py.backends.cuda import gemm_api
    dt = torch.bfloat16
    L, M, K, N = 2, 96, 256, 160
    W = torch.randn(N, K, device="cuda", dtype=dt)
    gemm_api.clear_plans()
    for trial in range(3):
        x = torch.randn(L, M, K, device="cuda", dtype=dt)
        D = cute.gemm(x, W.T)
        out = torch.full((L, M, N), float("nan"), device="cuda", dtype=dt)
        C = torch.randn(L, M, N, device="cuda", dtype=dt)
        D2 = cute.gemm(x, W.T, C, 1.0, 0.5, out=out)
        torch.cuda.synchronize()
        _close(D, x.double() @ W.T.double(), dt)
        assert D2.data_ptr() == out.data_ptr()
        _close(D2, x.double() @ W.T.double() + 0.5 * C.double(), dt)
        assert tuple(D.shape) == (L, M, N)
    keys = [k for k in gemm_api._PLANS if isinstance(k, tuple) and len(k) > 2
            and k[1] == (L, M, K)]
    assert keys, "the folded call was not remembered under the 3-D key"


def test_torch_op_broadcast_forward_backward_and_compile():
    """``torch.ops.cute_py.gemm`` on ``x (L, M, K) @ W.T`` (+ bias, gelu): forward, the
    gradients of x, W and the bias against torch's, and under ``torch.compile``."""
    _skip_without_cuda()
    from cute_py.backends.cuda import torch_ops
    dt = torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(2, 64, 128, device="cuda", dtype=dt, generator=g, requires_grad=True)
    W = torch.randn(96, 128, device="cuda", dtype=dt, generator=g, requires_grad=True)
    b = torch.randn(96, device="cuda", dtype=dt, generator=g, requires_grad=True)
    y = torch_ops.gemm(x, W.t(), bias=b, activation="gelu")
    xr, Wr, br = (t.detach().double().requires_grad_() for t in (x, W, b))
    yr = F.gelu(xr @ Wr.t() + br, approximate="tanh")
    _close(y, yr, dt)
    y.float().square().sum().backward()
    yr.square().sum().backward()
    for got, want in ((x, xr), (W, Wr), (b, br)):
        _close(got.grad, want.grad, dt)
    f = torch.compile(lambda x, W, b: torch_ops.gemm(x, W.t(), bias=b, activation="gelu"),
                      fullgraph=True)
    _close(f(x.detach(), W.detach(), b.detach()), yr, dt)


def test_cupy_arrays_broadcast_and_empty():
    """The same rules for CuPy arrays: a folded shared B, a broadcast A, and K of 0."""
    _skip_without_cuda()
    cp = pytest.importorskip("cupy")
    rng = cp.random.default_rng(3)
    x = rng.standard_normal((3, 64, 128), dtype=cp.float32).astype(cp.float16)
    W = rng.standard_normal((128, 96), dtype=cp.float32).astype(cp.float16)
    Bb = rng.standard_normal((3, 128, 96), dtype=cp.float32).astype(cp.float16)
    for a, b in ((x, W), (x[0], Bb)):
        D = cute.gemm(a, b)
        cp.cuda.get_current_stream().synchronize()
        ref = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        assert D.shape == ref.shape
        err = float(cp.linalg.norm(D.astype(cp.float64) - ref) / cp.linalg.norm(ref))
        assert err < 3e-3, err
    D = cute.gemm(x[0][:, :0], W[:0])
    cp.cuda.get_current_stream().synchronize()
    assert D.shape == (64, 96) and bool((D == 0).all())
