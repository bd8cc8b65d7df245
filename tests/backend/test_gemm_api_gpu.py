"""GPU tests of ``cute_py.gemm`` with torch tensors: the caller's stream, cached plans with new
tensors, aliasing and argument errors, the kernel choice.  Skipped without a GPU or torch."""

import pytest

from cute_py.errors import LaunchError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402
from cute_py.backends.cuda import gemm_api  # noqa: E402


def _skip_without_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


def _skip_without_sm90():
    _skip_without_cuda()
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs sm_90")


def _rel(D, A, B, C=None, alpha=1.0, beta=0.0):
    ref = alpha * (A.double() @ B.double())
    if C is not None:
        ref = ref + beta * C.double()
    return float((D.double() - ref).norm() / ref.norm())


def _tol(dt):
    return 2e-3 if dt == torch.float16 else 1e-2


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_work_queued_on_a_side_stream_is_seen(dt):
    """Inside ``torch.cuda.stream(s)``, A produced on s right before the call is what the GEMM
    reads (the kernel runs on s, after the producer), five trials."""
    _skip_without_cuda()
    M = N = K = 1024
    s = torch.cuda.Stream()
    B = torch.randn(K, N, device="cuda", dtype=dt)
    for trial in range(5):
        src = torch.randn(M, K, device="cuda", dtype=dt)
        A = torch.full((M, K), float("nan"), device="cuda", dtype=dt)
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            torch.cuda._sleep(20_000_000)          # the producer is still busy ...
            A.copy_(src)                           # ... when gemm is queued
            D = cute.gemm(A, B)
        s.synchronize()
        assert _rel(D, src, B) < _tol(dt), trial


def test_explicit_stream_arguments():
    """stream= takes a torch stream, a CuPy stream or a raw handle; the launch goes there."""
    _skip_without_cuda()
    import cupy as cp
    dt = torch.float16
    s = torch.cuda.Stream()
    B = torch.randn(512, 384, device="cuda", dtype=dt)
    for kind in ("torch", "cupy", "raw"):
        src = torch.randn(256, 512, device="cuda", dtype=dt)
        A = torch.full_like(src, float("nan"))
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            torch.cuda._sleep(20_000_000)
            A.copy_(src)
        st = {"torch": s, "cupy": cp.cuda.ExternalStream(s.cuda_stream),
              "raw": s.cuda_stream}[kind]
        D = cute.gemm(A, B, stream=st)          # issued from the default stream's context
        s.synchronize()
        assert _rel(D, src, B) < _tol(dt), kind


def test_prepared_plan_follows_the_current_stream():
    """A prepared Hopper launch runs on the stream current when it is called."""
    _skip_without_sm90()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    dt = torch.float16
    A = torch.full((512, 256), float("nan"), device="cuda", dtype=dt)
    B = torch.randn(384, 256, device="cuda", dtype=dt)          # (N, K)
    D = torch.empty(512, 384, device="cuda", dtype=dt)
    run = G.get_kernel(G.Sm90GemmConfig()).prepare(A, B, D)
    src = torch.randn_like(A)
    s = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)
        A.copy_(src)
        run()
    s.synchronize()
    assert _rel(D, src, B.T) < 2e-3


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["A@B", "x@W.T", "batched", "oddK", "C", "out"])
def test_new_tensors_reuse_one_plan(dt, layout):
    """Calls with new tensors of one shape / strides / dtype build one plan and stay right."""
    _skip_without_cuda()
    gemm_api.clear_plans()
    M, N, K = 300, 264, 200
    if layout == "oddK":
        K = 333
    results = []
    for _ in range(4):
        A = torch.randn((3, M, K) if layout == "batched" else (M, K), device="cuda", dtype=dt)
        if layout == "x@W.T":
            W = torch.randn(N, K, device="cuda", dtype=dt)
            B = W.T
        else:
            B = torch.randn((3, K, N) if layout == "batched" else (K, N), device="cuda", dtype=dt)
        kw, C = {}, None
        if layout == "C":
            C = torch.randn(M, N, device="cuda", dtype=dt)
            kw = dict(C=C, alpha=0.5, beta=-1.25)
        if layout == "out":
            kw["out"] = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        D = cute.gemm(A, B, **kw)
        if "out" in kw:
            assert D is kw["out"]
        results.append(_rel(D, A, B, C, kw.get("alpha", 1.0), kw.get("beta", 0.0)))
    assert max(results) < _tol(dt), results
    n = len(gemm_api.plan_cache())
    assert n <= 2, n        # one call shape (plus its torch fast-path key)


def test_aliasing_and_argument_errors_name_the_argument():
    _skip_without_cuda()
    dt = torch.float16
    A = torch.randn(128, 128, device="cuda", dtype=dt)
    B = torch.randn(128, 128, device="cuda", dtype=dt)
    C = torch.randn(128, 128, device="cuda", dtype=dt)
    cute.gemm(A, B)                                   # warm the plan: checks stay on
    for out, what in ((A, "A"), (B, "B")):
        with pytest.raises(LaunchError) as e:
            cute.gemm(A, B, out=out)
        assert e.value.op == "gemm" and e.value.arg == "out" and "overlaps" in str(e.value)
    big = torch.randn(129, 128, device="cuda", dtype=dt)
    with pytest.raises(LaunchError) as e:          # out overlaps C one row down
        cute.gemm(A, B, big[:128], beta=1.0, out=big[1:])
    assert e.value.arg == "out"
    ref = A.double() @ B.double() + C.double()
    D = cute.gemm(A, B, C, beta=1.0, out=C)        # in place (C.addmm_): allowed
    assert D is C and float((C.double() - ref).norm() / ref.norm()) < 2e-3
    with pytest.raises(LaunchError) as e:
        cute.gemm(A, B, alpha="2")
    assert e.value.arg == "alpha"
    with pytest.raises(LaunchError) as e:
        cute.gemm(A, B, C.float(), beta=1.0)
    assert e.value.arg == "C"
    with pytest.raises(LaunchError) as e:
        cute.gemm(A, B, out=torch.empty(128, 128, device="cuda", dtype=torch.float32))
    assert e.value.arg == "out"
    with pytest.raises(LaunchError) as e:
        cute.gemm(A, B.cpu())
    assert e.value.arg == "B"
    with pytest.raises(LaunchError) as e:
        cute.gemm(A, torch.randn(64, 128, device="cuda", dtype=dt))
    assert e.value.arg == "B" and "gemm" in str(e.value)


def test_explain_says_which_kernel_ran():
    _skip_without_cuda()
    A = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    D, choice = cute.gemm(A, A, explain=True)
    assert _rel(D, A, A) < 2e-3
    text = str(choice)
    assert choice.backend in ("sm90", "sm80") and choice.kernel in text
    D32, c32 = cute.gemm(A.float(), A.float(), explain=True)
    assert c32.backend == "sm80" and "tf32" in str(c32)
    assert _rel(D32, A.float(), A.float()) < 5e-3


def test_padded_operand_paths_and_side_streams():
    """Operands the kernel reads from per-call padded buffers: odd K (TMA cannot read the rows)
    and a K-major B with rows off 32-byte boundaries at M >= 4096 (copied into 128-byte rows);
    the buffers belong to one stream each, so calls alternating between two streams stay right.
    Rows on 32-byte boundaries (K = 2000 halves) are read in place."""
    _skip_without_sm90()
    dt = torch.float16
    s = torch.cuda.Stream()
    for M, N, K, want, be in ((300, 264, 333, "copied A, B", "sm90"),
                              (4096, 256, 2040, "128-byte rows", "auto"),
                              (4096, 256, 2000, "", "auto")):
        gemm_api.clear_plans()
        W = torch.randn(N, K, device="cuda", dtype=dt)
        _, choice = cute.gemm(torch.randn(M, K, device="cuda", dtype=dt), W.T, explain=True,
                              backend=be)
        assert want in str(choice) if want else "copied" not in str(choice), str(choice)
        for trial in range(4):
            x = torch.randn(M, K, device="cuda", dtype=dt)
            if trial % 2:
                torch.cuda.synchronize()
                with torch.cuda.stream(s):
                    D = cute.gemm(x, W.T, backend=be)
                s.synchronize()
            else:
                D = cute.gemm(x, W.T, backend=be)
            assert _rel(D, x, W.T) < 2e-3, (M, N, K, trial)


@pytest.mark.parametrize("layout", ["AB", "xWT"])
def test_odd_k_small_problems_run_the_sm80_kernel_in_place(layout):
    """Small problems whose rows TMA cannot read (K = 333 halves) run the SM80 kernel on the
    operands where they are: one launch through the cached plan, new tensors every call, the
    caller's stream (work queued on a side stream right before the call is seen), C and
    alpha / beta, poisoned outputs; ``backend="sm90"`` still takes the copies."""
    _skip_without_sm90()
    dt = torch.float16
    M, N, K = 300, 264, 333
    gemm_api.clear_plans()
    W = torch.randn(N, K, device="cuda", dtype=dt) if layout == "xWT" else None
    B = W.T if layout == "xWT" else torch.randn(K, N, device="cuda", dtype=dt)
    _, choice = cute.gemm(torch.randn(M, K, device="cuda", dtype=dt), B, explain=True)
    assert choice.backend == "sm80" and "in place" in str(choice), str(choice)
    _, c90 = cute.gemm(torch.randn(M, K, device="cuda", dtype=dt), B, explain=True,
                       backend="sm90")
    assert c90.backend == "sm90" and "copied" in str(c90), str(c90)
    s = torch.cuda.Stream()
    for trial in range(4):
        x0 = torch.randn(M, K, device="cuda", dtype=dt)
        C = torch.randn(M, N, device="cuda", dtype=dt)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        if trial % 2:
            with torch.cuda.stream(s):
                x = x0 * 2.0                      # produced on the side stream, right before
                D = cute.gemm(x, B, C, 0.5, 0.25, out=out)
            s.synchronize()
        else:
            x = x0 * 2.0
            D = cute.gemm(x, B, C, 0.5, 0.25, out=out)
        ref = 0.5 * (x.double() @ B.double()) + 0.25 * C.double()
        assert D.data_ptr() == out.data_ptr()
        assert ((D.double() - ref).norm() / ref.norm()).item() < 2e-3, (layout, trial)
        D2 = cute.gemm(x, B)
        assert _rel(D2, x, B) < 2e-3
    with pytest.raises(LaunchError):          # out overlapping A
        cute.gemm(x, B, out=x[:, :N])


@pytest.mark.parametrize("layout", ["AB", "xWT"])
def test_odd_k_mid_problems_take_the_wide_realigned_tile(layout):
    """From 1e9 flops (up to 2e9) the odd-K route runs the 128x128 tile of 8 warps with
    realigned copies, in place; bf16, a view one element into its rows, poisoned output."""
    _skip_without_sm90()
    dt = torch.bfloat16
    M, N, K = 2000, 1000, 333
    gemm_api.clear_plans()
    base = torch.randn(M, K + 1, device="cuda", dtype=dt)
    A = base[:, 1:]                                   # rows start one element in
    B = torch.randn(N, K, device="cuda", dtype=dt).T if layout == "xWT" else \
        torch.randn(K, N, device="cuda", dtype=dt)
    out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
    D, choice = cute.gemm(A, B, out=out, explain=True)
    assert choice.backend == "sm80" and "128x128x32_w2x4" in choice.kernel, str(choice)
    # A's rows start one element in; B (K, N) has 2000-byte rows (aligned), (N, K) odd ones
    assert ("_v882ua_" if layout == "AB" else "_v882uab_") in choice.kernel, choice.kernel
    assert _rel(D, A, B) < 1e-2
    out.fill_(float("nan"))
    D = cute.gemm(A, B, out=out)                      # the fast path's plan
    assert _rel(D, A, B) < 1e-2


def test_mn_major_operands_with_odd_pitches_are_copied_in_their_major():
    """``A`` M-contiguous and ``B`` N-contiguous with pitches TMA cannot read (300 and 201
    elements): each is copied into a padded buffer of its own major, so the kernel stays the
    MN-major one (a straight copy, not a transposition)."""
    _skip_without_sm90()
    dt = torch.bfloat16
    M, N, K = 300, 201, 136
    A = torch.randn(K, M, device="cuda", dtype=dt).t()        # (M, K), M-contiguous
    B = torch.randn(K, N, device="cuda", dtype=dt)            # (K, N), N-contiguous
    gemm_api.clear_plans()
    D, choice = cute.gemm(A, B, explain=True, backend="sm90")
    assert "copied A, B" in str(choice), str(choice)
    assert (choice.config.a_major, choice.config.b_major) == ("MN", "MN"), str(choice)
    assert _rel(D, A, B) < 2e-2


def test_split_k_and_swap_through_the_call_are_deterministic():
    """Decode shapes run swapped split-K kernels ("fixup" by default): the same inputs give
    bit-identical outputs, on either stream."""
    _skip_without_sm90()
    for M, N, K in ((1, 4096, 4096), (16, 4096, 2000), (128, 4096, 4096), (64, 64, 4096)):
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        W = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        D1, choice = cute.gemm(x, W.T, explain=True)
        D2 = cute.gemm(x, W.T)
        s = torch.cuda.Stream()
        torch.cuda.synchronize()
        with torch.cuda.stream(s):
            D3 = cute.gemm(x, W.T)
        s.synchronize()
        assert torch.equal(D1, D2) and torch.equal(D1, D3), (M, N, K, str(choice))
        assert _rel(D1, x, W.T) < 1e-2, (M, N, K)


@pytest.mark.parametrize("layout", ["AB", "xWT"])
@pytest.mark.parametrize("MNK", [(64, 11008, 1000), (50, 5000, 2040), (40, 28672, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_one_wave_decode_tiles(layout, MNK):
    """M <= 64 runs 64 x tn tiles that fill one wave (tn a multiple of 8, or of 32 with a SW64
    B tile for a row-major B): poisoned out, odd N and K, both torch layouts."""
    _skip_without_sm90()
    M, N, K = MNK
    x = torch.randn(M, K, device="cuda", dtype=torch.float16)
    W = torch.randn(N, K, device="cuda", dtype=torch.float16)
    B = W.T if layout == "xWT" else W.T.contiguous()
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    _, choice = cute.gemm(x, B, out=out, explain=True)
    torch.cuda.synchronize()
    assert "one wave" in str(choice) and "64x" in choice.kernel, str(choice)
    assert _rel(out, x, B) < _tol(torch.float16), (layout, MNK, str(choice))


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_sm80_backend_runs_through_launch_plans(dt):
    """``backend="sm80"`` on torch tensors: the SM80 kernel behind a cached launch plan (the
    fast path's second call with new tensors), on the caller's stream (work queued on a side
    stream right before the call), C / alpha / beta; a column-major out still works (the
    general SM80 entry transposes)."""
    _skip_without_cuda()
    t = getattr(torch, dt)
    M, N, K = 200, 136, 264
    gemm_api.clear_plans()
    s = torch.cuda.Stream()
    tol = 2e-2 if dt == "float32" else 2e-3          # tf32
    for trial in range(3):
        B = torch.randn(K, N, device="cuda", dtype=t)
        C = torch.randn(M, N, device="cuda", dtype=t)
        with torch.cuda.stream(s):
            A = torch.randn(M, K, device="cuda", dtype=t) * 3.0
            D = cute.gemm(A, B, C, 0.5, 2.0, backend="sm80")
        s.synchronize()
        ref = 0.5 * (A.double() @ B.double()) + 2.0 * C.double()
        assert ((D.double() - ref).norm() / ref.norm()).item() < tol, (dt, trial)
    _, choice = cute.gemm(A, B, backend="sm80", explain=True)
    assert choice.backend == "sm80" and "launch plan" in str(choice), str(choice)
    out = torch.empty(N, M, device="cuda", dtype=t).t()       # column-major (M, N)
    D = cute.gemm(A, B, out=out, backend="sm80")
    assert D.data_ptr() == out.data_ptr() and _rel(D, A, B) < tol


def test_row_major_b_with_rows_off_128_bytes_runs_in_clusters():
    """``A @ B`` with a row-major B whose rows are off 128-byte boundaries (N = 1544: 3088-byte
    rows) runs the cooperative kernel in clusters of 2 (B multicast): an odd count of M tiles
    (2939 rows: 23 tiles), an N tail, poisoned outputs, C with alpha / beta, and a fused
    bias + relu through the same rule."""
    _skip_without_sm90()
    M, N, K = 2939, 1544, 520
    for dt in (torch.float16, torch.bfloat16):
        gemm_api.clear_plans()
        A = torch.randn(M, K, device="cuda", dtype=dt)
        B = torch.randn(K, N, device="cuda", dtype=dt)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        D, choice = cute.gemm(A, B, out=out, explain=True)
        assert choice.config.cluster_m == 2 and "clusters of 2" in str(choice), str(choice)
        assert _rel(D, A, B) < 2e-3
        C = torch.randn(M, N, device="cuda", dtype=dt)
        out.fill_(float("nan"))
        D = cute.gemm(A, B, C, 0.5, -1.5, out=out)
        assert _rel(D, A, B, C, 0.5, -1.5) < 2e-3
        bias = torch.randn(N, device="cuda", dtype=dt)
        F = cute.gemm(A, B, bias=bias, activation="relu")
        ref = torch.relu(A.double() @ B.double() + bias.double())
        assert float((F.double() - ref).norm() / ref.norm()) < 2e-3


@pytest.mark.parametrize("size", [(300, 264, 136), (130, 520, 72)], ids=lambda s: "x".join(map(str, s)))
def test_cluster_kernel_row_major_b_small(size):
    """The clusters-of-2 kernel for a row-major B with rows off 128 bytes on small odd
    problems (a lone CTA in the last cluster, N tails), C and alpha / beta (for the sanitizer)."""
    _skip_without_sm90()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    M, N, K = size
    for use_c in (False, True):
        cfg = G.default_evt_config("f16", 256, use_c, "K", "MN", False, 2)
        A = torch.randn(M, K, device="cuda", dtype=torch.float16)
        B = torch.randn(K, N, device="cuda", dtype=torch.float16)
        C = torch.randn(M, N, device="cuda", dtype=torch.float16) if use_c else None
        D = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        gemm_api.gemm_sm90(A, B.T, D, C, 0.5 if use_c else 1.0, -1.5 if use_c else 0.0, cfg=cfg)
        assert _rel(D, A, B, C, 0.5 if use_c else 1.0, -1.5) < 2e-3


@pytest.mark.parametrize("tile_n, b_major, cluster", [(256, "K", 1), (128, "K", 1),
                                                     (256, "MN", 2), (128, "MN", 2)])
@pytest.mark.parametrize("size", [(300, 264, 136), (130, 520, 72)], ids=lambda s: "x".join(map(str, s)))
def test_store_warp_cooperative_16_bit(size, tile_n, b_major, cluster):
    """The cooperative TMA-store kernels of rows off 128 bytes and skinny problems issue
    their stores from a store warp with half a tile of staging (``half_tile_store_warp``):
    D = A @ B and, where the C stages leave room, alpha * A @ B + beta * C, on odd sizes
    against float64 with a poisoned D (small sizes: for the sanitizer)."""
    _skip_without_sm90()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    from cute_py.epilogue import evt
    M, N, K = size
    for use_c in (False, True):
        tree = evt.linear_combination(element_c="float16") if use_c else None
        cfg = G.evt_config(tree, "f16", tile_n, "K", b_major, False, cluster)
        assert cfg.epi.store_warp or use_c, cfg.name
        if cfg.epi.store_warp:
            assert cfg.epi.stages_d == len(cfg.epilogue().subtiles) // 2
        A = torch.randn(M, K, device="cuda", dtype=torch.float16)
        W = torch.randn(N, K, device="cuda", dtype=torch.float16)
        B = W.T if b_major == "K" else W.T.contiguous()
        C = torch.randn(M, N, device="cuda", dtype=torch.float16) if use_c else None
        a, b = (0.5, -1.5) if use_c else (1.0, 0.0)
        D = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        gemm_api.gemm_sm90(A, B.T, D, C, a, b, cfg=cfg)
        assert _rel(D, A, B, C, a, b) < 2e-3, (cfg.name, use_c)


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_rows_off_128_bytes_take_192_wide_tiles(dt):
    """``x @ W.T`` with rows off 128 bytes where 192-wide tiles fill the waves better
    (``coop_tile_n``): the cooperative 128x192 kernel with a store warp runs, exact against
    float64 on a poisoned D, twice through the cached plan."""
    _skip_without_sm90()
    M, N, K = 2000, 3000, 200
    gemm_api.clear_plans()
    for trial in range(2):
        x = torch.randn(M, K, device="cuda", dtype=dt)
        W = torch.randn(N, K, device="cuda", dtype=dt)
        out = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        if trial == 0:
            D, choice = cute.gemm(x, W.T, out=out, explain=True)
            assert "128x192" in choice.kernel and "_sw_" in choice.kernel, str(choice)
        else:
            D = cute.gemm(x, W.T, out=out)
        assert _rel(D, x, W.T) < _tol(dt)


def test_copy_group_kernel_odd_operands():
    """One launch copying three operands TMA cannot read (odd pitches, a batched one with a
    padded batch stride) into padded buffers: every element lands, the pads keep their poison
    (for the sanitizer: small sizes)."""
    _skip_without_cuda()
    from cute_py.layout import Layout
    from cute_py.backends.cuda.kernels.copy import plan_copy
    from cute_py.backends.cuda.kernels.copy_group import CopyGroup, group_kernel
    srcs = [torch.randn(77, 333, device="cuda").half(),
            torch.randn(3, 50, 41, device="cuda").half()[:, :, :39],
            torch.randn(333, 129, device="cuda").half()]
    dsts, views, plans = [], [], []
    for X in srcs:
        *lead, k = X.shape
        buf = torch.full((*lead, -(-k // 8) * 8), -7.0, device="cuda", dtype=X.dtype)
        v = buf[..., :k]
        dsts.append(buf)
        views.append(v)
        plans.append(plan_copy(Layout(tuple(X.shape), X.stride()),
                               Layout(tuple(v.shape), v.stride()), 2, src_align=2))
    plan = group_kernel(CopyGroup(tuple(plans))).plan(0)
    args = []
    for X, v in zip(srcs, views):
        args += (X.data_ptr(), v.data_ptr())
    plan.run(tuple(args), (), torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    for X, v, buf in zip(srcs, views, dsts):
        assert torch.equal(v, X)
        assert bool((buf[..., X.shape[-1]:] == -7.0).all())


@pytest.mark.parametrize("layout", ["AB", "xWT"])
@pytest.mark.parametrize("shape", [(3, 300, 264, 200), (8, 1024, 1024, 1024), (2, 77, 136, 64),
                                   (2, 1000, 3000, 200)])
def test_batched_d_through_tma_stores(layout, shape):
    """Batched ``D = A @ B`` with full waves of tiles runs the TMA-store kernels with 3-D D
    stores (``_bl`` kernels; smaller problems keep the small-tile heuristic's kernels):
    partial tiles in M, N and the batch boundaries stay exact (poisoned out, float64
    reference), the cached plan is reused with new tensors; with C no ``_bl`` kernel runs.
    Rows off 128 bytes (K = 200) with full waves: the cooperative ``_bl`` kernel, its 3-D
    stores issued by the store warp."""
    _skip_without_sm90()
    L, M, N, K = shape
    dt = torch.float16
    gemm_api.clear_plans()
    for trial in range(2):
        A = torch.randn(L, M, K, device="cuda", dtype=dt)
        B = torch.randn(L, N, K, device="cuda", dtype=dt).transpose(1, 2) if layout == "xWT" \
            else torch.randn(L, K, N, device="cuda", dtype=dt)
        out = torch.full((L, M, N), float("nan"), device="cuda", dtype=dt)
        if trial == 0:
            D, choice = cute.gemm(A, B, out=out, explain=True)
            full = -(-M // 128) * -(-N // 256) * L >= 132     # the default path's rule
            assert ("_bl_" in choice.kernel) == full, str(choice)
        else:
            D = cute.gemm(A, B, out=out)
        assert not torch.isnan(D).any()
        ref = A.double() @ B.double()
        assert ((D.double() - ref).norm() / ref.norm()).item() < 2e-3, (shape, layout, trial)
    C = torch.randn(L, M, N, device="cuda", dtype=dt)
    D, choice = cute.gemm(A, B, C, 1.0, 0.5, explain=True)
    assert "_bl_" not in choice.kernel
    assert _rel(D, A, B, C, 1.0, 0.5) < 2e-3
