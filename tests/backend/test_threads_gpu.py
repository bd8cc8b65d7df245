"""GPU tests of ``cute_py.gemm`` / ``cute_py.scaled_mm`` called from several Python threads at
once (cached plans shared between threads, a fresh thread with no CUDA context of its own,
each thread on its own torch stream): every result matches float64.  Skipped without an sm_90
GPU or torch."""

import threading

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402


def _skip_without_sm90():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")


def _run_threads(work, n):
    errors = []

    def body(i):
        try:
            work(i)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.parametrize("M,N,K", [(128, 128, 128), (16, 4096, 4096), (1000, 520, 264)])
def test_cached_calls_from_many_threads(M, N, K):
    """Four threads, each on its own stream, 25 calls each with new tensors of one cached
    call kind (the plain, the swapped / split and the small-problem routes), checked."""
    _skip_without_sm90()
    dt = torch.float16
    W = torch.randn(N, K, device="cuda").to(dt)
    cute.gemm(torch.randn(M, K, device="cuda").to(dt), W.T)        # the plan, cached
    torch.cuda.synchronize()

    def work(i):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for j in range(25):
                x = torch.randn(M, K, device="cuda").to(dt)
                out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
                cute.gemm(x, W.T, out=out)
                if j % 8 == 0:
                    ref = x.double() @ W.double().T
                    s.synchronize()
                    err = float((out.double() - ref).norm() / ref.norm())
                    assert err < 3e-3, (i, j, err)
        s.synchronize()

    _run_threads(work, 4)


def test_first_call_from_a_thread_without_a_context():
    """A thread that never touched CUDA calls the cached path with tensors made elsewhere:
    the launch finds no current context, gets the device's and runs."""
    _skip_without_sm90()
    dt = torch.bfloat16
    A, W = torch.randn(300, 512, device="cuda").to(dt), torch.randn(640, 512, device="cuda").to(dt)
    outs = [torch.full((300, 640), float("nan"), device="cuda", dtype=dt) for _ in range(3)]
    cute.gemm(A, W.T, out=outs[0])                                 # cached on this thread
    torch.cuda.synchronize()

    def work(i):
        cute.gemm(A, W.T, out=outs[i + 1])                          # no torch call before
        torch.cuda.synchronize()

    _run_threads(work, 2)
    ref = A.double() @ W.double().T
    for D in outs:
        assert float((D.double() - ref).norm() / ref.norm()) < 1.5e-2
