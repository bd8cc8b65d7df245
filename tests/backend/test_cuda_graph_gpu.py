"""GPU tests of ``cute_py.gemm`` and ``cute_py.scaled_mm`` captured in CUDA graphs
(``torch.cuda.graph``, as ``torch.compile(mode="reduce-overhead")`` and serving stacks use
them).  Skipped without a GPU or torch.

Each case follows torch's recipe: warm the call up eagerly on a side stream, capture it into a
``torch.cuda.CUDAGraph`` on a capture stream of its own with static inputs and a static ``out``,
then copy fresh N(0, 1) data into the static inputs, poison ``out`` with NaN, replay and compare
against the float64 torch reference (relative Frobenius norm: ``REL16`` for 16-bit GEMMs,
``REL_FP8`` -- the bound of ``test_scaled_mm_gpu.py`` for promoted FP8 kernels -- for
``scaled_mm``).  Then an eager call with the same shapes on the capture stream (new tensors)
must be right, replays after it too, and a replay on another stream concurrent with an eager
call on the capture stream must leave both right (split-K calls: the graph's workspace is its
own, ``gemm_common.StreamWorkspace``).  Cases: plain fp16 ``A @ B`` / ``x @ W.T``, decode shapes
on the split-K / swapped Hopper kernels (asserted through ``explain``), fused bias + GELU, bf16
with C and beta, operands copied into padded buffers, and per-tensor e4m3 -> bf16 ``scaled_mm``
(sm_90)."""

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

import cute_py as cute  # noqa: E402
from cute_py.backends.cuda import gemm_api, gemm_common  # noqa: E402

REL16 = 1e-2
REL_FP8 = 4e-3
E4M3_MAX = 448.0


def _skip_without_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


def _skip_without_sm90():
    _skip_without_cuda()
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs sm_90 (the Hopper kernels: split-K, fused EVT, FP8)")


def _rel(D, ref):
    d = D.double()
    assert not torch.isnan(d).any(), "NaN left in the output (unwritten elements)"
    return float((d - ref).norm() / ref.norm())


def _randn(*shape, dt):
    return torch.randn(*shape, device="cuda").to(dt)


def _graph_roundtrip(run, make_inputs, ref, make_out, bound):
    """Warm ``run(inputs, out)`` up on a side stream, capture it, and check replays with fresh
    inputs, an eager call on the capture stream, replays after it, and replays on another
    stream concurrent with eager calls on the capture stream.  ``make_inputs()``: a fresh tuple
    of input tensors (N(0, 1) data); ``ref(inputs)``: the float64 result; ``make_out()``: a
    new output tensor.  Returns ``(graph, capture stream)``."""
    static, out = make_inputs(), make_out()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                 # torch's warm-up recipe
        for _ in range(3):
            run(static, out)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    cs = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=cs):
        run(static, out)

    def replay(on=None):
        new = make_inputs()
        for x, v in zip(static, new):
            x.copy_(v)
        out.fill_(float("nan"))
        if on is None:
            g.replay()
        else:
            on.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(on):
                g.replay()
        return new

    def eager(on):
        new, E = make_inputs(), make_out()
        E.fill_(float("nan"))
        on.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(on):
            run(new, E)
        return new, E

    for trial in range(2):                        # replays, each with new data
        new = replay()
        torch.cuda.synchronize()
        assert _rel(out, ref(new)) < bound, f"replay {trial}"
    new, E = eager(cs)                            # eager, same shapes, on the capture stream
    torch.cuda.synchronize()
    assert _rel(E, ref(new)) < bound, "eager call on the capture stream"
    for trial in range(2):
        new = replay()
        torch.cuda.synchronize()
        assert _rel(out, ref(new)) < bound, f"replay {trial} after the eager call"
    other = torch.cuda.Stream()
    for trial in range(3):                        # a replay beside an eager call on cs
        new = replay(on=other)
        new_e, E = eager(cs)
        torch.cuda.synchronize()
        assert _rel(out, ref(new)) < bound, f"replay {trial} beside an eager call"
        assert _rel(E, ref(new_e)) < bound, f"eager call {trial} beside a replay"
    return g, cs


def _gemm_case(M, N, K, layout, dt, *, bias=False, activation=None, beta=0.0):
    """``(run, make_inputs, ref, make_out)`` of ``gemm(A, B[, C], 1, beta, bias=, activation=,
    out=)`` with B = W.T of a row-major (N, K) W for ``layout`` "x@W.T", else a row-major
    (K, N) B."""
    xw = layout == "x@W.T"

    def make_inputs():
        t = [_randn(M, K, dt=dt), _randn(N, K, dt=dt) if xw else _randn(K, N, dt=dt)]
        if beta:
            t.append(_randn(M, N, dt=dt))
        if bias:
            t.append(_randn(N, dt=dt))
        return tuple(t)

    def split(inp):
        A, B = inp[0], inp[1].t() if xw else inp[1]
        C = inp[2] if beta else None
        b = inp[-1] if bias else None
        return A, B, C, b

    def run(inp, out):
        A, B, C, b = split(inp)
        cute.gemm(A, B, C, 1.0, beta, out=out, bias=b, activation=activation)

    def ref(inp):
        A, B, C, b = split(inp)
        x = A.double() @ B.double()
        if C is not None:
            x = x + beta * C.double()
        if b is not None:
            x = x + b.double()
        if activation == "gelu":
            x = torch.nn.functional.gelu(x, approximate="tanh")
        return x

    def make_out():
        return torch.empty(M, N, device="cuda", dtype=dt)

    return run, make_inputs, ref, make_out


def _choice(M, N, K, layout, dt, beta=0.0):
    """The explain choice of the case's call (on fresh tensors, eagerly)."""
    run, make_inputs, _, make_out = _gemm_case(M, N, K, layout, dt, beta=beta)
    inp = make_inputs()
    A, B = inp[0], inp[1].t() if layout == "x@W.T" else inp[1]
    C = inp[2] if beta else None
    _, choice = cute.gemm(A, B, C, 1.0, beta, out=make_out(), explain=True)
    torch.cuda.synchronize()
    return choice


def _splits(choice) -> bool:
    return getattr(choice.config, "split_k", "none") != "none"


def _split_calls(M, N):
    """The cached split-K / swapped GemmCalls whose D is (M, N)."""
    return {id(c): c for c in gemm_api.plan_cache().values()
            if isinstance(c, gemm_api.GemmCall) and not c.simple
            and tuple(c.out_shape) == (M, N)}.values()


@pytest.mark.parametrize("layout", ["A@B", "x@W.T"])
def test_plain_fp16_gemm_in_a_graph(layout):
    _skip_without_cuda()
    _graph_roundtrip(*_gemm_case(512, 384, 256, layout, torch.float16), bound=REL16)


#: decode problems (x @ W.T) the Hopper heuristic runs split in K (64x128x8192: 16 splits;
#: 16x1024x8192: swapped and split 8, as ``choose_sm90`` decided when this was written)
SPLIT_CANDIDATES = [(16, 1024, 8192), (64, 128, 8192), (1, 2048, 8192)]


def test_decode_split_k_gemm_in_a_graph():
    """The split-K (and swapped) kernels under capture: the graph gets a workspace and tile
    counters of its own, which no eager call on the capture stream is handed afterwards."""
    _skip_without_sm90()
    split = [c for c in SPLIT_CANDIDATES if _splits(_choice(*c, "x@W.T", torch.float16))]
    assert split, f"none of {SPLIT_CANDIDATES} ran a split-K kernel: pick new candidates"
    for M, N, K in split:
        g, cs = _graph_roundtrip(*_gemm_case(M, N, K, "x@W.T", torch.float16), bound=REL16)
        calls = list(_split_calls(M, N))
        assert calls, (M, N, K)
        for call in calls:
            held = call.ws._by_stream
            if call.ws.elements:            # split (a swapped call alone has no workspace)
                assert gemm_common.CAPTURED in held, "the capture reused a stream's workspace"
                eager = held.get(cs.cuda_stream)
                assert eager is not None, "the eager call on the capture stream has no pair"
                assert eager[1:] != held[gemm_common.CAPTURED][1:], \
                    "the eager call shares the graph's workspace"


def test_fused_bias_gelu_in_a_graph():
    _skip_without_sm90()
    _graph_roundtrip(*_gemm_case(512, 384, 256, "x@W.T", torch.float16, bias=True,
                                 activation="gelu"), bound=REL16)


@pytest.mark.parametrize("shape", [(512, 384, 256), (16, 1024, 8192)])
def test_bf16_with_c_and_beta_in_a_graph(shape):
    _skip_without_cuda()
    M, N, K = shape
    _graph_roundtrip(*_gemm_case(M, N, K, "x@W.T", torch.bfloat16, beta=0.5), bound=REL16)


def test_copied_operands_in_a_graph():
    """Rows TMA cannot read in place (K = 1001: 2002-byte fp16 rows) at decode M: copied into
    padded buffers first; the graph's buffers are its own."""
    _skip_without_sm90()
    M, N, K = 16, 4096, 1001
    choice = _choice(M, N, K, "x@W.T", torch.float16)
    assert choice.copied, str(choice)
    g, cs = _graph_roundtrip(*_gemm_case(M, N, K, "x@W.T", torch.float16), bound=REL16)
    calls = [c for c in gemm_api.plan_cache().values() if isinstance(c, gemm_api.GemmCall)
             and (c.copy_a or c.copy_b) and tuple(c.out_shape) == (M, N)]
    assert calls
    for call in calls:
        assert gemm_common.CAPTURED in call.pads, "the capture reused a stream's buffers"
        assert call.pads[cs.cuda_stream] is not call.pads[gemm_common.CAPTURED]


def _quantize(x):
    """Per-tensor e4m3: ``(codes, scale)`` with ``x ~= codes * scale`` (scale float32 (1,))."""
    s = (x.abs().amax().float() / E4M3_MAX).clamp_min(1e-12).reshape(1)
    return (x / s).to(torch.float8_e4m3fn), s


@pytest.mark.parametrize("shape", [(512, 384, 256), (32, 2048, 8192)])
def test_scaled_mm_fp8_in_a_graph(shape):
    """Per-tensor e4m3 -> bf16 (32x2048x8192 runs split in K: asserted on the cached call)."""
    _skip_without_sm90()
    from cute_py.backends.cuda import scaled_mm_api
    M, N, K = shape

    def make_inputs():
        qa, sa = _quantize(torch.randn(M, K, device="cuda"))
        qw, sw = _quantize(torch.randn(N, K, device="cuda"))
        return qa, qw, sa, sw

    def run(inp, out):
        qa, qw, sa, sw = inp
        cute.scaled_mm(qa, qw.t(), sa, sw, out_dtype=torch.bfloat16, out=out)

    def ref(inp):
        qa, qw, sa, sw = inp
        return (qa.double() * sa.double()) @ (qw.double() * sw.double()).t()

    def make_out():
        return torch.empty(M, N, device="cuda", dtype=torch.bfloat16)

    _graph_roundtrip(run, make_inputs, ref, make_out, bound=REL_FP8)
    if M == 32:
        split = [fc for fc in scaled_mm_api._FAST.values()
                 if fc.out_shape == (M, N) and fc.ws is not None]
        assert split, "32x2048x8192 no longer splits in K: pick another decode shape"


def test_reduce_overhead_compile_of_split_k_decode():
    """``torch.compile(mode="reduce-overhead")`` (CUDA-graph trees) of a function calling the
    torch op on a split-K decode shape: the warm-up's routing of torch allocations into the
    trees' pool must not catch the per-stream workspace (it is cute_py's own device memory),
    and replays with new inputs match float64."""
    _skip_without_sm90()
    split = [c for c in SPLIT_CANDIDATES if _splits(_choice(*c, "x@W.T", torch.float16))]
    assert split, f"none of {SPLIT_CANDIDATES} ran a split-K kernel: pick new candidates"
    M, N, K = split[0]
    from cute_py.backends.cuda import torch_ops
    W = _randn(N, K, dt=torch.float16)
    torch._dynamo.reset()

    @torch.compile(mode="reduce-overhead")
    def layer(x):
        return torch_ops.gemm(x, W.t()) * 2.0

    for i in range(5):                     # warm-up, recording, then graph replays
        x = _randn(M, K, dt=torch.float16)
        y = layer(x).clone()
        torch.cuda.synchronize()
        ref = 2.0 * (x.double() @ W.double().t())
        assert _rel(y, ref) < REL16, i


def test_reduce_overhead_compile_of_copied_operands():
    """The same for operands copied into padded buffers (K = 1001: rows TMA cannot read):
    the buffers are cute_py's own device memory outside a capture too."""
    _skip_without_sm90()
    from cute_py.backends.cuda import torch_ops
    M, N, K = 16, 4096, 1001
    assert _choice(M, N, K, "x@W.T", torch.float16).copied
    W = _randn(N, K, dt=torch.float16)
    torch._dynamo.reset()

    @torch.compile(mode="reduce-overhead")
    def layer(x):
        return torch_ops.gemm(x, W.t()) + 1.0

    for i in range(5):
        x = _randn(M, K, dt=torch.float16)
        y = layer(x).clone()
        torch.cuda.synchronize()
        assert _rel(y, x.double() @ W.double().t() + 1.0) < REL16, i
