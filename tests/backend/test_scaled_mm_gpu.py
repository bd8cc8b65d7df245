"""GPU tests of ``cute_py.scaled_mm`` (the FP8 Hopper GEMM): every scaling mode x output type,
odd sizes, mixed formats, bias, NaN-poisoned outputs, the float64 reference
(``cute_py.fp8.scaled_mm_reference``) and ``torch._scaled_mm``.  Data: N(0, 1) quantized with
``cute_py.fp8.quantize`` / ``quantize_blockwise``.  Skipped without an sm_90 GPU and torch.

Bounds (relative Frobenius norm vs the float64 reference of the quantized operands): the
output rounding dominates (bf16 2^-9, f16 2^-12 relative per element; ~1.7e-3 / 2e-4 in norm
for this data); fp32 sums of promoted k-blocks add < 1e-5 (NumPy model,
``test_gemm_sm90_fp8.py``; 1.2e-4 if the tensor core's accumulator keeps only 13 bits).
``REL`` = 4e-3 for promoted kernels (the default, and block scaling); ``REL_F32`` = 1e-3 with a
float32 output (no output rounding); ``REL_FAST`` = 1.5e-2 for ``use_fast_accum=True`` (one
accumulator over K; the 13-bit model gives 3.6e-3 at K = 4096)."""

import numpy as np
import pytest

from cute_py import fp8
from cute_py.errors import LaunchError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402

REL = 4e-3
REL_FAST = 1.5e-2
REL_F32 = 1e-3

_FMT = {"e4m3": ("float8_e4m3", "float8_e4m3fn"), "e5m2": ("float8_e5m2", "float8_e5m2")}
_OUT = {"bfloat16": "bfloat16", "float16": "float16"}


def _skip_without_hopper():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU")


def _to_fp8(q, fmt):
    """float64 values of FP8 codes -> a torch FP8 tensor on the GPU (exact: representable)."""
    t = torch.from_numpy(np.ascontiguousarray(q)).to(getattr(torch, _FMT[fmt][1]))
    assert np.array_equal(t.double().numpy(), q), "quantized values not representable"
    return t.cuda()


def make_problem(M, N, K, mode, fa="e4m3", fb="e4m3", seed=0):
    """``(A, B, sa, sb, ref)``: A ``(M, K)`` row-major FP8, B = W.T of a row-major ``(N, K)``
    FP8 W, float32 scales of ``mode`` on the GPU, the float64 reference (NumPy)."""
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((M, K)), rng.standard_normal((N, K))
    if mode == "block":
        qa, sa = fp8.quantize_blockwise(x, _FMT[fa][0], (1, fp8.BLOCK_K))
        qw, sb = fp8.quantize_blockwise(w, _FMT[fb][0], (fp8.BLOCK_K, fp8.BLOCK_K))
    elif mode == "row":
        qa, sa = fp8.quantize(x, _FMT[fa][0], axis=1)           # (M, 1)
        qw, sw = fp8.quantize(w, _FMT[fb][0], axis=1)           # (N, 1)
        sb = sw.T                                               # (1, N)
    else:
        qa, sa = fp8.quantize(x, _FMT[fa][0])
        qw, sb = fp8.quantize(w, _FMT[fb][0])
    ref = fp8.scaled_mm_reference(qa, qw.T, sa, sb)
    A, W = _to_fp8(qa, fa), _to_fp8(qw, fb)

    def dev(s):
        return torch.from_numpy(np.ascontiguousarray(np.asarray(s, np.float32))).cuda()
    return A, W.t(), dev(sa), dev(sb), ref


def _rel(D, ref):
    d = D.double().cpu().numpy()
    assert not np.isnan(d).any(), "NaN left in the output (unwritten elements)"
    return float(np.linalg.norm(d - ref) / np.linalg.norm(ref))


def _poisoned(M, N, out_dtype):
    return torch.full((M, N), float("nan"), dtype=getattr(torch, out_dtype), device="cuda")


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
@pytest.mark.parametrize("M, N, K", [(256, 384, 1024), (200, 328, 1040), (77, 333, 272),
                                     (1, 129, 16)])
def test_modes_and_output_types(mode, out_dtype, M, N, K):
    """Odd sizes: M, N not multiples of the tile (N odd: scalar stores), K a multiple of 16
    but not of 128 (a partial k-block, zero-filled by TMA)."""
    _skip_without_hopper()
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=M + N + K)
    out = _poisoned(M, N, out_dtype)
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, out=out)
    assert D is out
    assert _rel(D, ref) < (REL_F32 if out_dtype == "float32" else REL)


@pytest.mark.parametrize("mode", ["tensor", "row"])
def test_fast_accumulation(mode):
    _skip_without_hopper()
    M, N, K = 512, 640, 4096
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=3)
    D = cute.scaled_mm(A, B, sa, sb, use_fast_accum=True)
    assert D.dtype == torch.bfloat16 and D.shape == (M, N)
    assert _rel(D, ref) < REL_FAST
    D2 = cute.scaled_mm(A, B, sa, sb)                     # promoted
    assert _rel(D2, ref) < REL


@pytest.mark.parametrize("fa, fb", [("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")])
@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
def test_mixed_formats(fa, fb, mode):
    _skip_without_hopper()
    M, N, K = 192, 256, 512
    A, B, sa, sb, ref = make_problem(M, N, K, mode, fa, fb, seed=11)
    assert _rel(cute.scaled_mm(A, B, sa, sb, out=_poisoned(M, N, "bfloat16")), ref) < REL


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
def test_bias(mode, out_dtype):
    _skip_without_hopper()
    M, N, K = 130, 200, 384
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=5)
    bias = torch.randn(N, device="cuda").to(getattr(torch, out_dtype))
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias,
                       out=_poisoned(M, N, out_dtype))
    assert _rel(D, ref + bias.double().cpu().numpy()[None, :]) < REL


@pytest.mark.parametrize("out_dtype", ["bfloat16", "float32"])
def test_block_scaling_wide_tiles(out_dtype):
    """A problem large enough for 128x192 block-scaled tiles (each thread's columns span two
    64-column chunks of B's 128-column scale blocks), N odd past the last tile."""
    _skip_without_hopper()
    from cute_py.backends.cuda.scaled_mm_api import promoted_tile_n
    M, N, K = 2048, 3001 if out_dtype == "float32" else 3000, 1040
    assert promoted_tile_n(M, N) == 192
    A, B, sa, sb, ref = make_problem(M, N, K, "block", seed=11)
    out = _poisoned(M, N, out_dtype)
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, out=out)
    assert _rel(D, ref) < (REL_F32 if out_dtype == "float32" else REL)


@pytest.mark.parametrize("mode, out_dtype, N", [
    ("tensor", "bfloat16", 6400), ("row", "float32", 6400), ("block", "bfloat16", 1272),
    ("tensor", "bfloat16", 6395), ("block", "float16", 1275)])
def test_160_wide_tiles_in_clusters(mode, out_dtype, N):
    """Problems whose promoted tile is 160 wide (2048 x 6400; block scaling 2048 x 1272):
    clusters of two, each CTA multicasting 80 rows of B; aligned outputs through the
    TMA-store epilogue (5 subtiles), an odd N through the built-in one."""
    _skip_without_hopper()
    from cute_py.backends.cuda.scaled_mm_api import choose_fp8_config, promoted_tile_n
    M, K = 2048, 528
    assert promoted_tile_n(M, N) == 160
    assert choose_fp8_config(M, N, K, "e4m3", "e4m3", "bf16", mode).cluster_m == 2
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=N)
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, out=_poisoned(M, N, out_dtype))
    assert _rel(D, ref) < (REL_F32 if out_dtype == "float32" else REL)


@pytest.mark.parametrize("mode", ["tensor", "row"])
@pytest.mark.parametrize("N", [1000, 6400])
def test_promoted_rasters(mode, N):
    """Both rasters of ``promoted_raster`` on 10 tile-rows (M = 1160: the last group partial,
    the last row of tiles partial): no cluster in groups of 4 (N = 1000), clusters of two in
    groups of 16 (N = 6400: 5 cluster-rows), into poisoned outputs."""
    _skip_without_hopper()
    from cute_py.backends.cuda.scaled_mm_api import choose_fp8_config
    M, K = 1160, 528
    cfg = choose_fp8_config(M, N, K, "e4m3", "e4m3", "bf16", mode, tma_store=True)
    assert (cfg.cluster_m, cfg.group_m) == ((1, 4) if N == 1000 else (2, 16))
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=N + 7)
    D = cute.scaled_mm(A, B, sa, sb, out=_poisoned(M, N, "bfloat16"))
    assert _rel(D, ref) < REL


def test_160_wide_fp8_output_with_amax():
    _skip_without_hopper()
    M, N, K = 2048, 1280, 384
    A, B, sa, sb, ref = make_problem(M, N, K, "tensor", seed=4)
    f8 = torch.float8_e4m3fn
    amax = torch.full((1,), float("nan"), device="cuda")
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=f8, amax=amax,
                       out=torch.full((M, N), float("nan"), device="cuda").to(f8))
    torch.cuda.synchronize()
    assert bool(torch.isfinite(D.double()).all())
    assert _rel(D, ref) < 0.05                       # e4m3: a 3-bit mantissa
    assert abs(float(amax) - np.abs(ref).max()) <= 1e-3 * np.abs(ref).max()


def test_large_k_block_scaling():
    _skip_without_hopper()
    A, B, sa, sb, ref = make_problem(128, 256, 16384, "block", seed=7)
    assert _rel(cute.scaled_mm(A, B, sa, sb), ref) < REL


@pytest.mark.parametrize("M, N, out_dtype", [(520, 1000, "bfloat16"), (300, 6400, "float32"),
                                             (77, 333, "bfloat16")])
def test_row_scales_any_strides(M, N, out_dtype):
    """Row-wise scales as strided views (every other element of wider tensors): the staged
    column scales of the TMA-store epilogue and the built-in epilogue's loads read them
    through the scale layouts, into poisoned outputs."""
    _skip_without_hopper()
    K = 256
    A, B, sa, sb, ref = make_problem(M, N, K, "row", seed=M + N)
    sa2 = torch.zeros(M, 2, device="cuda")
    sa2[:, 0] = sa[:, 0]
    sb2 = torch.zeros(2, 2 * N, device="cuda")
    sb2[0, ::2] = sb[0]
    sa_v, sb_v = sa2[:, :1], sb2[:1, ::2]
    assert sa_v.stride() == (2, 1) and sb_v.stride() == (2 * N, 2)
    D = cute.scaled_mm(A, B, sa_v, sb_v, out_dtype=out_dtype, out=_poisoned(M, N, out_dtype))
    assert _rel(D, ref) < (REL_F32 if out_dtype == "float32" else REL)


def test_block_scales_any_strides():
    """A's scales M-major (DeepGEMM's TMA-friendly layout): the same result."""
    _skip_without_hopper()
    M, N, K = 256, 256, 1024
    A, B, sa, sb, ref = make_problem(M, N, K, "block", seed=9)
    sa_t = sa.t().contiguous().t()                        # (M, KB) with strides (1, M)
    assert sa_t.stride() == (1, M)
    D1, D2 = cute.scaled_mm(A, B, sa, sb), cute.scaled_mm(A, B, sa_t, sb)
    assert torch.equal(D1, D2) and _rel(D1, ref) < REL


def test_cached_plan_with_new_tensors_and_streams():
    _skip_without_hopper()
    M, N, K = 256, 256, 512
    A, B, sa, sb, ref = make_problem(M, N, K, "row", seed=1)
    A2, B2, sa2, sb2, ref2 = make_problem(M, N, K, "row", seed=2)
    D1 = cute.scaled_mm(A, B, sa, sb)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        D2 = cute.scaled_mm(A2, B2, sa2, sb2)
    s.synchronize()
    D3 = cute.scaled_mm(A2, B2, sa2, sb2, stream=s)
    s.synchronize()
    assert _rel(D1, ref) < REL and _rel(D2, ref2) < REL and torch.equal(D2, D3)


@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
def test_fast_path_new_tensors_every_call(mode):
    """The cached torch path: new tensors (new pointers) each call, with and without ``out``,
    a bias, an 8-bit D with amax (reset every call), a side stream queued right before."""
    _skip_without_hopper()
    from cute_py.backends.cuda import scaled_mm_api as S
    M, N, K = 200, 272, 640
    probs = [make_problem(M, N, K, mode, seed=40 + i) for i in range(3)]
    for i, (A, B, sa, sb, ref) in enumerate(probs):
        D = cute.scaled_mm(A, B, sa, sb)
        assert _rel(D, ref) < REL, i
        out = _poisoned(M, N, "float16")
        bias = torch.randn(N, device="cuda").to(torch.float16)
        assert cute.scaled_mm(A, B, sa, sb, out_dtype="float16", bias=bias, out=out) is out
        assert _rel(out, ref + bias.double().cpu().numpy()[None, :]) < REL, i
        amax = torch.full((1,), 1e9, device="cuda")
        D8 = cute.scaled_mm(A, B, sa, sb, out_dtype=torch.float8_e4m3fn, amax=amax)
        assert D8.dtype == torch.float8_e4m3fn
        assert abs(amax.item() - np.abs(ref).max()) <= 1e-3 * np.abs(ref).max(), i
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(200000)
            A2 = A.view(torch.uint8).clone().view(A.dtype)      # written on s just before
            D2 = cute.scaled_mm(A2, B, sa, sb)
        s.synchronize()
        assert torch.equal(D2, D), i
    assert len(S._FAST) >= 3                                     # the calls were cached


def test_fast_path_out_alignment_and_overlap():
    """Plans depend on out's exact alignment (paired 8-byte stores of an f32 D): an f32 out at
    4 mod 8 after one at 8 mod 16 of the same shape runs its own plan.  An out overlapping an
    input raises on the first call and on the cached one."""
    _skip_without_hopper()
    M, N, K = 64, 100, 256
    A, B, sa, sb, ref = make_problem(M, N, K, "row", seed=9)
    big = torch.full((M, N + 4), float("nan"), device="cuda")
    for off in (2, 1, 2, 1):                                     # 8 mod 16, then 4 mod 8
        out = big[:, off:off + N]
        assert cute.scaled_mm(A, B, sa, sb, out_dtype="float32", out=out) is out
        assert _rel(out, ref) < REL_F32, off
    buf = torch.zeros(M * N * 4 + 4096, dtype=torch.uint8, device="cuda")
    sab = buf[:M * 4].view(torch.float32).view(M, 1)
    sab.copy_(sa)
    out = buf[:M * N * 2].view(torch.bfloat16).view(M, N)       # starts on scale_a
    with pytest.raises(LaunchError, match="out overlaps scale_a") as e:
        cute.scaled_mm(A, B, sab, sb, out=out)                   # the general path
    assert e.value.arg == "out"
    other = torch.empty_like(buf)
    sab2 = other[:M * 4].view(torch.float32).view(M, 1)
    sab2.copy_(sa)
    ok = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    assert _rel(cute.scaled_mm(A, B, sab2, sb, out=ok), ref) < REL  # the same call, cached
    with pytest.raises(LaunchError, match="out overlaps scale_a") as e:
        cute.scaled_mm(A, B, sab, sb, out=out)                   # the fast path
    assert e.value.arg == "out"


def test_scales_are_read_on_the_device():
    """Changing a per-tensor scale's value between calls (no new tensor) changes the result:
    the kernel reads it from device memory, not a host copy."""
    _skip_without_hopper()
    A, B, sa, sb, ref = make_problem(128, 128, 256, "tensor", seed=4)
    D1 = cute.scaled_mm(A, B, sa, sb).float()
    sa.mul_(2.0)
    D2 = cute.scaled_mm(A, B, sa, sb).float()
    assert torch.allclose(D2, 2 * D1, rtol=1e-2, atol=1e-2)


def _torch_scaled_mm(A, B, sa, sb, **kw):
    try:
        return torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, **kw)
    except (RuntimeError, TypeError) as e:     # this torch build cannot run the case
        pytest.skip(f"torch._scaled_mm: {e}"[:200])


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("mode", ["tensor", "row"])
def test_agrees_with_torch_scaled_mm(mode, fast):
    _skip_without_hopper()
    M, N, K = 512, 768, 2048
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=21)
    if mode == "tensor":
        sa, sb = sa.reshape(()), sb.reshape(())
    T = _torch_scaled_mm(A, B, sa, sb, use_fast_accum=fast)
    D = cute.scaled_mm(A, B, sa, sb, use_fast_accum=fast)
    bound = REL_FAST if fast else REL
    assert _rel(T, ref) < bound                          # the reference holds torch too
    assert _rel(D, ref) < bound
    d = float((D.double() - T.double()).norm() / T.double().norm())
    assert d < 2 * bound


def test_block_agrees_with_torch_scaled_mm():
    """The DeepSeek recipe in torch's layouts: ``scale_a`` M-major (stride ``(1, M)``) for both,
    and torch's ``scale_b`` ``(K/128, N/128)`` is ours transposed (a view, ``sb.t()``); both
    agree with the float64 reference and each other.  12 k-blocks: at 9 (not a multiple of 4)
    torch 2.11's result was not finite."""
    _skip_without_hopper()
    M, N, K = 512, 768, 1536
    A, B, sa, sb, ref = make_problem(M, N, K, "block", seed=23)
    sa_t = sa.t().contiguous().t()
    assert sa_t.stride() == (1, M)
    D = cute.scaled_mm(A, B, sa_t, sb, out=_poisoned(M, N, "bfloat16"))
    assert _rel(D, ref) < REL and torch.equal(D, cute.scaled_mm(A, B, sa, sb))
    T = _torch_scaled_mm(A, B, sa_t, sb.t())
    assert _rel(T, ref) < REL
    assert float((D.double() - T.double()).norm() / T.double().norm()) < 2 * REL


def test_errors_name_the_argument():
    _skip_without_hopper()
    M, N, K = 128, 128, 256
    A, B, sa, sb, _ = make_problem(M, N, K, "row")
    cases = [
        ("A", dict(A=A.to(torch.bfloat16))),                       # not FP8
        ("B", dict(B=B.t().contiguous())),                         # (N, K) given: wrong shape
        ("B", dict(B=B.contiguous())),                             # N-major (K, N) row-major
        ("A", dict(A=A.t().contiguous().t())),                     # M-major A
        ("scale_a", dict(sa=sa.reshape(1, M))),                    # wrong shape
        ("scale_b", dict(sb=torch.ones(2, N, device="cuda"))),
        ("scale_a", dict(sa=sa.double())),                         # wrong dtype
        ("scale_b", dict(sb=sb.cpu())),                            # wrong device
        ("out_dtype", dict(out_dtype="float64")),
        ("out", dict(out=torch.empty(M, N, device="cuda", dtype=torch.float16))),
        ("bias", dict(bias=torch.zeros(N + 1, device="cuda", dtype=torch.bfloat16))),
        ("bias", dict(bias=torch.zeros(N, device="cuda", dtype=torch.float32))),   # not bf16
        ("out", dict(out=torch.empty(M, N, device="cuda"), out_dtype="bfloat16")),
    ]
    for arg, kw in cases:
        args = dict(A=A, B=B, sa=sa, sb=sb)
        extra = {k: v for k, v in kw.items() if k not in args}
        args.update({k: v for k, v in kw.items() if k in args})
        with pytest.raises(LaunchError) as e:
            cute.scaled_mm(args["A"], args["B"], args["sa"], args["sb"], **extra)
        assert e.value.arg == arg, (arg, e.value)
    # K not a multiple of 16
    A2 = torch.zeros(M, 40, device="cuda").to(torch.float8_e4m3fn)
    B2 = torch.zeros(N, 40, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    with pytest.raises(LaunchError) as e:
        cute.scaled_mm(A2, B2, one, one)
    assert e.value.arg == "A" and "16" in str(e.value)


@pytest.mark.parametrize("i", range(3))
def test_sm90gemm_called_with_scales(i):
    """The kernel object itself (``Sm90Gemm.__call__``) on a shipped FP8 configuration: B as
    ``(N, K)`` K-major, D allocated in the configuration's output type."""
    _skip_without_hopper()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    cfg = G.shipped_fp8_configs()[i]
    M, N, K = 300, 260, 640
    A, B, sa, sb, ref = make_problem(M, N, K, cfg.scaling, cfg.dtype, cfg.dtype_b or cfg.dtype,
                                     seed=30 + i)
    D = G.get_kernel(cfg)(A, B.t(), scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    assert D.shape == (M, N)
    assert D.dtype == {"bf16": torch.bfloat16, "f16": torch.float16}[cfg.out_dtype]
    assert _rel(D, ref) < REL
    with pytest.raises(LaunchError) as e:
        G.get_kernel(cfg)(A, B.t(), scale_a=sa)
    assert e.value.arg == "scale_b"


@pytest.mark.parametrize("schedule, tile_n, grid", [("cooperative", 192, 4),
                                                    ("cooperative", 128, None),
                                                    ("pingpong", 192, 3)])
def test_row_scales_staged_in_shared_memory(schedule, tile_n, grid):
    """Row-wise scaling through the TMA-store epilogue: each tile's column scales staged in
    shared memory by the threads sharing the tile (all consumers; one warpgroup in ping-pong,
    two scales per thread at 192 columns) -- several tiles per CTA on a small grid, a partial
    last column of tiles (N = 1000), distinct scales per row and column, a poisoned D,
    launched twice for bit-identical results."""
    _skip_without_hopper()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    tm = 64 if schedule == "pingpong" else 128
    cfg = G.Sm90GemmConfig(
        tile_m=tm, tile_n=tile_n, tile_k=128, dtype="e4m3", out_dtype="bf16", scaling="row",
        promote=True, schedule=schedule,
        epi=G.make_epilogue_config(None, tile_m=tm, tile_n=tile_n, element_d="bfloat16",
                                   schedule=schedule)).fit_stages()
    assert cfg.col_scale_bytes > 0
    M, N, K = 520, 1000, 384
    A, B, sa, sb, ref = make_problem(M, N, K, "row", seed=tile_n + tm)
    outs = []
    for _ in range(2):
        D = _poisoned(M, N, "bfloat16")
        G.get_kernel(cfg).prepare(A, B.t(), D, max_ctas=grid, scale_a=sa, scale_b=sb)()
        torch.cuda.synchronize()
        assert _rel(D, ref) < REL
        outs.append(D.clone())
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("stages, cluster", [(2, 1), (3, 2), (4, 1), (4, 2)])
def test_block_scaling_with_few_stages(stages, cluster):
    """Block-scaled kernels with 2-4 stages (up to 3 scale warps, one per stage): k-blocks per
    tile not a multiple of 3 (K = 640: 5) and several tiles per CTA, launched 30 times back to
    back -- every result correct and bit-identical.  (Scale warps taking turns per tile, not
    over the CTA's whole sequence, failed to launch here at 3 and 4 stages:
    ``cute_py.pipeline.BlockScaleModel``.)"""
    _skip_without_hopper()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    cfg = G.Sm90GemmConfig(tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           scaling="block", stages=stages, cluster_m=cluster)
    M, N, K = 4096, 4096, 640          # 1024 tiles: 7-8 per CTA
    A, B, sa, sb, ref = make_problem(M, N, K, "block", seed=40 + stages)
    k = G.get_kernel(cfg)
    first = k(A, B.t(), scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    assert _rel(first, ref) < REL
    outs = [k(A, B.t(), scale_a=sa, scale_b=sb) for _ in range(30)]
    torch.cuda.synchronize()
    assert all(torch.equal(o, first) for o in outs)


@pytest.mark.parametrize("M, N, K", [(3072, 4096, 640), (300, 1000, 128), (300, 1000, 256),
                                     (129, 3000, 384), (2048, 3000, 1040), (1000, 776, 1040)])
def test_block_scaling_store_warp_prefetch(M, N, K):
    """Block scaling through the TMA-store epilogue: a store warp and two scale warps that
    load one turn ahead (``scale_prefetch``), 128- and 192-wide tiles, tiles of 1, 2, 3, 5
    and 9 k-blocks (the look-ahead past a tile's end is never used), several tiles per CTA;
    correct, and bit-identical over 10 back-to-back calls."""
    _skip_without_hopper()
    from cute_py.backends.cuda.scaled_mm_api import choose_fp8_config
    cfg = choose_fp8_config(M, N, K, "e4m3", "e4m3", "bf16", "block", tma_store=True)
    assert cfg.epi.store_warp and cfg.scale_prefetch()
    A, B, sa, sb, ref = make_problem(M, N, K, "block", seed=M + N + K)
    first = cute.scaled_mm(A, B, sa, sb, out=_poisoned(M, N, "bfloat16"))
    torch.cuda.synchronize()
    assert _rel(first, ref) < REL
    outs = [cute.scaled_mm(A, B, sa, sb, out=_poisoned(M, N, "bfloat16")) for _ in range(10)]
    torch.cuda.synchronize()
    assert all(torch.equal(o, first) for o in outs)


@pytest.mark.parametrize("M, N, K, out_dtype", [
    (4096, 4096, 640, "bfloat16"),      # 512 tiles: 3-4 per CTA
    (4000, 3968, 1040, "bfloat16"),     # the last tile-row partial; 31 tile-columns: the
                                        # last cluster's second CTA past N
    (4096, 4001, 384, "float32"),       # odd N: the built-in epilogue
    (2048, 8200, 256, "float16")])      # 65 tile-columns, the last 8 wide
def test_block_scaling_256_row_tiles(M, N, K, out_dtype):
    """Block scaling's 256x128 tiles (``block_tile``: fewer rounds than 128-row tiles), each
    consumer warpgroup's two 64-row slabs promoted in turn, clusters of two along N (A's tile
    multicast): correct into poisoned outputs, and bit-identical over 10 back-to-back
    calls."""
    _skip_without_hopper()
    from cute_py.backends.cuda.scaled_mm_api import choose_fp8_config
    tma = out_dtype != "float32"
    out = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[out_dtype]
    cfg = choose_fp8_config(M, N, K, "e4m3", "e4m3", out, "block", tma_store=tma)
    assert (cfg.tile_m, cfg.tile_n, cfg.cluster_n) == (256, 128, 2), cfg.name
    A, B, sa, sb, ref = make_problem(M, N, K, "block", seed=M + N + K)
    first = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, out=_poisoned(M, N, out_dtype))
    torch.cuda.synchronize()
    assert _rel(first, ref) < (REL_F32 if out_dtype == "float32" else REL)
    outs = [cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype,
                           out=_poisoned(M, N, out_dtype)) for _ in range(10)]
    torch.cuda.synchronize()
    assert all(torch.equal(o, first) for o in outs)


@pytest.mark.parametrize("mode, M, N, K, out_dtype, bias", [
    ("tensor", 2000, 1880, 12288, "bfloat16", False),   # 8 x 15 tiles: the last tile-row
                                                        # partial, the last cluster's second
                                                        # CTA past N
    ("row", 2000, 1880, 12400, "float16", True),        # a partial last k-block, a bias
    ("tensor", 2048, 2048, 12288, "float8_e4m3fn", True),   # an 8-bit D, amax, scale_result
    ("row", 2000, 2001, 12288, "float32", False)])      # odd N: the built-in epilogue
def test_promoted_256_row_tiles_at_long_k(mode, M, N, K, out_dtype, bias):
    """Promoted per-tensor / row-wise problems of long K take 256x128 tiles where they need
    fewer rounds (``promoted_tile``): each consumer warpgroup's two 64-row slabs promoted in
    turn, clusters of two along N, the whole tile staged (TMA-store epilogue) -- correct
    into poisoned outputs against the float64 reference, bit-identical over 10 calls."""
    _skip_without_hopper()
    from cute_py.backends.cuda.scaled_mm_api import LONG_K, choose_fp8_config
    assert K >= LONG_K
    f8 = out_dtype.startswith("float8")
    out = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float8_e4m3fn": "e4m3"}
    tma = out_dtype != "float32"
    cfg = choose_fp8_config(M, N, K, "e4m3", "e4m3", out[out_dtype], mode, tma_store=tma,
                            bias=("bfloat16" if f8 else True) if bias else False, amax=f8,
                            scale_result=f8)
    assert (cfg.tile_m, cfg.tile_n, cfg.cluster_n, cfg.promote) == (256, 128, 2, True), cfg.name
    assert tma == (cfg.epi is not None), cfg.name
    if tma:     # the whole tile staged: a D buffer per subtile (four of 16-bit D, two of 8-bit)
        assert cfg.epi.stages_d == len(cfg.epilogue().subtiles) == (2 if f8 else 4), cfg.name
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=M + N + K)
    kw = {}
    if bias:
        bdt = torch.bfloat16 if f8 else getattr(torch, out_dtype)
        b = torch.randn(N, device="cuda").to(bdt)
        kw["bias"] = b
        ref = ref + b.double().cpu().numpy()[None, :]
    sr = 0.25

    def call():
        if f8:
            amax = torch.full((1,), float("nan"), device="cuda")
            D = cute.scaled_mm(A, B, sa, sb, out_dtype=torch.float8_e4m3fn, amax=amax,
                               scale_result=torch.full((1,), sr, device="cuda"),
                               out=torch.full((M, N), float("nan"), device="cuda").to(
                                   torch.float8_e4m3fn), **kw)
            return D, amax
        return cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype,
                              out=_poisoned(M, N, out_dtype), **kw), None
    first, amax = call()
    torch.cuda.synchronize()
    if f8:
        got = first.double().cpu()
        r = (torch.from_numpy(ref) * sr).clamp(-448.0, 448.0)
        assert bool(torch.isfinite(got).all())
        # round to nearest: half an e4m3 ulp of each value, plus the accumulation error
        bound = 0.5 * _ulp(r, "e4m3") + sr * 1e-3 * float(np.abs(ref).max())
        assert bool(((got - r).abs() <= bound).all()), float((got - r).abs().max())
        assert abs(float(amax) - np.abs(ref).max()) <= 1e-3 * np.abs(ref).max()
    else:
        assert _rel(first, ref) < (REL_F32 if out_dtype == "float32" else REL)
    outs = [call()[0] for _ in range(10)]
    torch.cuda.synchronize()
    assert all(torch.equal(o.view(torch.uint8) if f8 else o,
                           first.view(torch.uint8) if f8 else first) for o in outs)


@pytest.mark.parametrize("mode, cluster, K, staged", [
    ("tensor", (1, 1), 16384, False), ("row", (1, 2), 16384, False),
    ("block", (2, 1), 16384, False), ("block", (1, 2), 640, False),
    ("tensor", (1, 2), 384, False), ("tensor", (1, 2), 384, True), ("row", (1, 2), 640, True),
    ("block", (1, 2), 384, True)])
def test_256_row_promoted_kernels(mode, cluster, K, staged):
    """The kernel object on 256x128 promoted tiles in every scaling mode (the slabs promoted
    in turn), clusters along M or N, with the built-in epilogue or (``staged``) the
    TMA-store epilogue staging the whole tile in four D buffers: K = 16384 within the
    promoted bound, M and N off the tile (600 x 400: 3 x 4 tiles, the last partial)."""
    _skip_without_hopper()
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    from cute_py.backends.cuda.kernels.gemm_sm90_fp8 import EPI_D, epilogue_tree
    epi = G.make_epilogue_config(epilogue_tree(None), tile_m=256, tile_n=128,
                                 element_d=EPI_D["bf16"], stages_d=4) if staged else None
    cfg = G.Sm90GemmConfig(tile_m=256, tile_n=128, tile_k=128, dtype="e4m3", out_dtype="bf16",
                           scaling=mode, promote=mode != "block", cluster_m=cluster[0],
                           cluster_n=cluster[1], epi=epi).fit_stages()
    assert cfg.stages >= 3
    M, N = 600, 400
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=50 + len(mode) + K)
    D = G.get_kernel(cfg)(A, B.t(), scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    assert _rel(D, ref) < REL


def test_empty_problems_follow_torch():
    """M or N of 0: the empty D; K of 0: D = bias (or zeros) -- the scaled product is exactly
    zero (``torch._scaled_mm``'s shapes), into a poisoned out on the call's stream."""
    _skip_without_hopper()
    f8 = torch.float8_e4m3fn
    A = torch.randn(64, 128, device="cuda").to(f8)
    W = torch.randn(48, 128, device="cuda").to(f8)
    one = torch.ones((), device="cuda")
    for a, b in ((A[:0], W.t()), (A, W[:0].t())):
        D = cute.scaled_mm(a, b, one, one)
        torch.cuda.synchronize()
        assert tuple(D.shape) == (a.shape[0], b.shape[1]) and D.dtype == torch.bfloat16
    bias = torch.randn(48, device="cuda").to(torch.bfloat16)
    out = torch.full((64, 48), float("nan"), device="cuda", dtype=torch.bfloat16)
    D = cute.scaled_mm(A[:, :0], W[:, :0].t(), one, one, bias=bias, out=out)
    torch.cuda.synchronize()
    assert D.data_ptr() == out.data_ptr() and torch.equal(D, bias.expand(64, 48))
    D = cute.scaled_mm(A[:, :0], W[:, :0].t(), torch.ones(64, 0, device="cuda"),
                       torch.ones(1, 0, device="cuda"))
    torch.cuda.synchronize()
    assert bool((D == 0).all()) and tuple(D.shape) == (64, 48)


def _ulp(x, fmt):
    """One unit in the last place of e4m3 / e5m2 at |x| (normal range)."""
    mant = {"e4m3": 3, "e5m2": 2}[fmt]
    e = torch.floor(torch.log2(x.abs().clamp_min(2.0 ** -6)))
    return torch.pow(2.0, e - mant)


@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_output_with_amax_and_scale_result(mode, fmt):
    """An 8-bit D: ``D = sat(round(v * scale_result))`` with ``v`` the scaled product plus a
    bf16 bias, and ``amax = max |v|`` from the epilogue: D within half an 8-bit ulp of the
    float64 value (plus the accumulation error), amax within 1e-3; a large scale_result
    saturates to the largest finite value (no NaN / inf)."""
    _skip_without_hopper()
    f8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[fmt]
    fmax = {"e4m3": 448.0, "e5m2": 57344.0}[fmt]
    g = torch.Generator(device="cuda").manual_seed(11)
    M, N, K = 200, 144, 384
    x = torch.randn(M, K, device="cuda", generator=g)
    w = torch.randn(N, K, device="cuda", generator=g)
    qa, qw = x.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn)
    if mode == "tensor":
        sa = torch.full((), 0.5, device="cuda")
        sb = torch.full((), 0.25, device="cuda")
        fa, fb = sa.double(), sb.double()
    elif mode == "row":
        sa = torch.rand(M, 1, device="cuda", generator=g) + 0.5
        sb = torch.rand(1, N, device="cuda", generator=g) + 0.5
        fa, fb = sa.double(), sb.double().t()
    else:
        sa = torch.rand(M, 3, device="cuda", generator=g) + 0.5
        sb = torch.rand(2, 3, device="cuda", generator=g) + 0.5
        fa = sa.double().repeat_interleave(128, 1)[:, :K]
        fb = sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]
    bias = torch.randn(N, device="cuda", generator=g).to(torch.bfloat16)
    v = (qa.double() * fa) @ (qw.double() * fb).t() + bias.double()
    for s in (0.75, 1e4):
        sr = torch.full((1,), s, device="cuda")
        amax = torch.full((1,), float("nan"), device="cuda")
        out = torch.full((M, N), float("nan"), device="cuda").to(f8)
        D = cute.scaled_mm(qa, qw.t(), sa, sb, out_dtype=f8, bias=bias, out=out,
                           scale_result=sr, amax=amax)
        torch.cuda.synchronize()
        assert D.data_ptr() == out.data_ptr() and D.dtype == f8
        got = D.double()
        r = (v * s).clamp(-fmax, fmax)            # the exact value before the conversion
        assert bool(torch.isfinite(got).all())
        # round to nearest: within half an ulp of r, plus the fp32 / FP8-MMA accumulation
        # error of v (relative 1e-3 of the largest |v|) scaled by s
        bound = 0.5 * _ulp(r, fmt) + s * 1e-3 * float(v.abs().max())
        diff = (got - r).abs()
        bad = diff > bound
        assert not bool(bad.any()), (float(diff.max()), r[bad][:4].tolist(),
                                     got[bad][:4].tolist())
        assert abs(float(amax) - float(v.abs().max())) <= 1e-3 * float(v.abs().max())
        if s > 1:
            assert float(got.abs().max()) == fmax


def test_fp8_output_errors_name_the_argument():
    _skip_without_hopper()
    qa = torch.randn(64, 128, device="cuda").to(torch.float8_e4m3fn)
    qw = torch.randn(100, 128, device="cuda").to(torch.float8_e4m3fn)
    one = torch.ones((), device="cuda")
    with pytest.raises(LaunchError, match="^scaled_mm: out "):          # N * 1 byte % 16
        cute.scaled_mm(qa, qw.t(), one, one, out_dtype=torch.float8_e4m3fn)
    with pytest.raises(LaunchError, match="^scaled_mm: scale_result "):
        cute.scaled_mm(qa, qw[:96].t(), one, one, scale_result=torch.ones(1, device="cuda"))
    with pytest.raises(LaunchError, match="^scaled_mm: amax "):
        cute.scaled_mm(qa, qw[:96].t(), one, one, amax=torch.ones(2, device="cuda"))
    amax = torch.zeros(1, device="cuda")
    D = cute.scaled_mm(qa, qw[:96].t(), one, one, amax=amax)      # bf16 D with its amax
    torch.cuda.synchronize()
    assert abs(float(amax) - float(D.float().abs().max())) <= 1e-2 * float(amax)


def test_reduction_reset_is_queued_on_the_call_stream():
    """A reduction output's reset (amax's 0, a max's -inf) is a driver memset queued on the
    launch's stream: after work already queued there, before the kernel; float32, float16 and
    bfloat16, contiguous (memset) and strided (the array library's fill)."""
    _skip_without_hopper()
    from cute_py.backends.cuda.kernels.gemm_sm90 import _fill
    s = torch.cuda.Stream()
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        x = torch.full((7, 5), 3.0, dtype=dt, device="cuda")
        with torch.cuda.stream(s):
            torch.cuda._sleep(2_000_000)
            x.fill_(9.0)
        _fill(x, float("-inf"), s.cuda_stream)
        s.synchronize()
        assert bool((x == float("-inf")).all()), dt
    base = torch.zeros(8, 8, device="cuda")
    _fill(base[:, ::2], 2.0, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert bool((base[:, ::2] == 2).all()) and bool((base[:, 1::2] == 0).all())


def test_amax_is_reset_every_call():
    """amax is the call's own max |D|, not a running max over calls."""
    _skip_without_hopper()
    f8 = torch.float8_e4m3fn
    M, N, K = 256, 384, 512
    A, B, sa, sb, ref = make_problem(M, N, K, "tensor", seed=5)
    amax = torch.full((1,), float("nan"), device="cuda")
    big = sa * 4
    cute.scaled_mm(A, B, big, sb, out_dtype=f8, amax=amax)
    first = float(amax)
    cute.scaled_mm(A, B, sa, sb, out_dtype=f8, amax=amax)
    torch.cuda.synchronize()
    assert abs(first - 4 * np.abs(ref).max()) <= 4e-3 * np.abs(ref).max()
    assert abs(float(amax) - np.abs(ref).max()) <= 1e-3 * np.abs(ref).max()


_SPLIT_CASES = [(1, 1024, 8192, "bfloat16"), (17, 1000, 8320, "float16"),
                (64, 520, 8192, "float32"), (100, 700, 8192, "bfloat16")]


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("mode", ["tensor", "row"])
@pytest.mark.parametrize("M, N, K, out_dtype", _SPLIT_CASES)
def test_split_k(M, N, K, out_dtype, mode, fast):
    """Problems whose tiles leave SMs idle split K ('fixup'): odd M and N, K off a whole
    number of k-blocks, a bias, a NaN-poisoned out; the same inputs give bit-identical D
    twice (the splits are summed in a fixed order)."""
    _skip_without_hopper()
    from cute_py.backends.cuda import scaled_mm_api as S
    from cute_py.backends.cuda.driver import sm_count
    cfg = S.choose_fp8_config(M, N, K, "e4m3", "e4m3", S.OUT_DTYPES[out_dtype], mode,
                              sms=sm_count(0), fast_accum=fast, tma_store=True, bias=True)
    assert cfg.split_k == "fixup", cfg.name                  # the case really splits
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=M + K)
    bias = torch.randn(N, device="cuda").to(getattr(torch, out_dtype))
    ref = ref + bias.double().cpu().numpy()[None, :]
    out = _poisoned(M, N, out_dtype)
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias, out=out,
                       use_fast_accum=fast)
    tol = REL_FAST if fast else REL_F32 if out_dtype == "float32" else REL
    assert D is out and _rel(D, ref) < tol
    D2 = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias, use_fast_accum=fast)
    assert torch.equal(D2, D)


@pytest.fixture
def stream_k_rule(monkeypatch):
    """``scaled_mm`` with the stream-K kernels (``choose_fp8_config(..., stream_k=True)``;
    not the rule's choice: measured slower), the plan caches cleared before and after."""
    import functools
    from cute_py.backends.cuda import scaled_mm_api as S
    monkeypatch.setattr(S, "choose_fp8_config",
                        functools.partial(S.choose_fp8_config, stream_k=True))
    S.clear_plans()
    yield S
    S.clear_plans()


@pytest.mark.parametrize("mode, out_dtype, fast, M, N, K", [
    ("tensor", "bfloat16", False, 520, 1000, 1040),    # 5 x 6 tiles, all shared; a partial k-block
    ("row", "float32", False, 300, 1000, 2048),        # an f32 D
    ("block", "bfloat16", False, 1000, 1500, 2048),
    ("block", "float16", False, 2100, 3000, 512),      # 17 x 16 tiles: a data-parallel wave first
    ("tensor", "bfloat16", True, 700, 1300, 4096),     # fast accumulation, 128x256
])
def test_stream_k(stream_k_rule, mode, out_dtype, fast, M, N, K):
    """FP8 stream-K (heads leave the promoted sums, tails add them before the scaled epilogue):
    a bias, a poisoned out, the float64 reference, bit-identical twice, right again on new
    inputs (the flags were left zero)."""
    _skip_without_hopper()
    from cute_py.backends.cuda.driver import sm_count
    S = stream_k_rule
    cfg = S.choose_fp8_config(M, N, K, "e4m3", "e4m3", S.OUT_DTYPES[out_dtype], mode,
                              sms=sm_count(0), fast_accum=fast, tma_store=True, bias=True)
    assert cfg.stream_k, cfg.name
    tol = REL_FAST if fast else REL_F32 if out_dtype == "float32" else REL
    for seed in (M, M + 1):
        A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=seed)
        bias = torch.randn(N, device="cuda").to(getattr(torch, out_dtype))
        ref = ref + bias.double().cpu().numpy()[None, :]
        out = _poisoned(M, N, out_dtype)
        D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias, out=out,
                           use_fast_accum=fast)
        assert D is out and _rel(D, ref) < tol
        D2 = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias, use_fast_accum=fast)
        assert torch.equal(D2, D)


def test_split_k_workspaces_per_stream():
    """Two streams running the same split-K plan at once each use their own workspace and
    tile counters: both results are right, and a side stream's work queued just before the
    call is seen."""
    _skip_without_hopper()
    M, N, K = 16, 2048, 4096
    probs = [make_problem(M, N, K, "tensor", seed=90 + i) for i in range(2)]
    ss = [torch.cuda.Stream() for _ in probs]
    outs = []
    for _ in range(3):
        for s, (A, B, sa, sb, _ref) in zip(ss, probs):
            with torch.cuda.stream(s):
                torch.cuda._sleep(100000)
                A2 = A.view(torch.uint8).clone().view(A.dtype)   # written on s just before
                outs.append(cute.scaled_mm(A2, B, sa, sb))
    torch.cuda.synchronize()
    for i, D in enumerate(outs):
        assert _rel(D, probs[i % 2][4]) < REL, i
        assert torch.equal(D, outs[i % 2]), i


@pytest.mark.parametrize("mode", ["tensor", "row", "block"])
@pytest.mark.parametrize("M", [1, 5, 37, 100])
def test_partial_a_tiles_ignore_stale_rows(mode, M):
    """A problem with fewer rows than the tile loads only its rows of A (``a_rows``); the
    wgmma reads the rest of the stage's A tile as left by earlier kernels.  Filled with NaN
    first (a 64- and a 128-row GEMM of NaN operands on every SM), those rows must reach
    neither D, nor the amax, nor the bias."""
    _skip_without_hopper()
    f8 = torch.float8_e4m3fn
    N, K = 1024, 1024
    nan8 = torch.full((8192, K), 0x7F, dtype=torch.uint8, device="cuda").view(f8)  # e4m3 NaN
    one = torch.ones((), device="cuda")
    for rows in (64, 128):      # 64- and 128-row tiles over (8192 / 64) CTAs
        cute.scaled_mm(nan8[:rows], nan8.t(), one, one)
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=M)
    from cute_py.backends.cuda import scaled_mm_api as S
    cfg = S.choose_fp8_config(M, N, K, "e4m3", "e4m3", "e4m3", mode, tma_store=True,
                              bias="bfloat16", amax=True)
    assert 0 < cfg.a_rows < cfg.tile_m                    # the case loads part of A's tile
    bias = torch.randn(N, device="cuda").to(torch.bfloat16)
    v = ref + bias.double().cpu().numpy()[None, :]
    amax = torch.full((1,), float("nan"), device="cuda")
    D8 = cute.scaled_mm(A, B, sa, sb, out_dtype=f8, bias=bias, amax=amax)
    D = cute.scaled_mm(A, B, sa, sb, out_dtype="bfloat16", bias=bias)
    torch.cuda.synchronize()
    assert bool(torch.isfinite(D8.float()).all())
    assert _rel(D, v) < REL
    assert abs(float(amax) - np.abs(v).max()) <= 1e-3 * np.abs(v).max()


_KSPLIT_CASES = [(7, 2048, 2176, "bfloat16"), (16, 16384, 2048, "float16"),
                 (64, 1000, 2048, "float32"), (1, 4096, 4096, "bfloat16")]


@pytest.mark.parametrize("mode", ["tensor", "row"])
@pytest.mark.parametrize("M, N, K, out_dtype", _KSPLIT_CASES)
def test_ksplit_decode(M, N, K, out_dtype, mode):
    """Promoted decode tiles on the "ksplit" schedule (two warpgroups on alternate stages'
    k-blocks, warpgroup 1's sums added by warpgroup 0): an odd number of k-blocks, several
    tiles per CTA (16 x 16384: 512 tiles), odd M and N, a bias, a NaN-poisoned out, and
    bit-identical D twice."""
    _skip_without_hopper()
    from cute_py.backends.cuda import scaled_mm_api as S
    from cute_py.backends.cuda.driver import sm_count
    cfg = S.choose_fp8_config(M, N, K, "e4m3", "e4m3", S.OUT_DTYPES[out_dtype], mode,
                              sms=sm_count(0), tma_store=True, bias=True)
    assert cfg.schedule == "ksplit", cfg.name                # the case really runs it
    A, B, sa, sb, ref = make_problem(M, N, K, mode, seed=M + N)
    bias = torch.randn(N, device="cuda").to(getattr(torch, out_dtype))
    ref = ref + bias.double().cpu().numpy()[None, :]
    out = _poisoned(M, N, out_dtype)
    D = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias, out=out)
    assert D is out and _rel(D, ref) < (REL_F32 if out_dtype == "float32" else REL)
    D2 = cute.scaled_mm(A, B, sa, sb, out_dtype=out_dtype, bias=bias)
    assert torch.equal(D2, D)
