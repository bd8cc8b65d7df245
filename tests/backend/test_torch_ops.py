"""The torch custom operator ``cute_py::gemm`` on the CPU: registration, the fake
implementation on meta / fake tensors, torch.compile tracing without graph breaks, and the
backward formulas (the CUDA body is replaced by the float64 reference here)."""

import pytest

torch = pytest.importorskip("torch")

from cute_py.backends.cuda import torch_ops  # noqa: E402
from cute_py.errors import LaunchError  # noqa: E402

ACTS = [None, "relu", "gelu", "gelu_erf", "silu", "sigmoid"]


@pytest.fixture
def cpu_body(monkeypatch):
    """Run the op's body as the torch reference (computed in float64, rounded to D's dtype)."""
    monkeypatch.setattr(torch_ops, "_impl", torch_ops.reference)


def _meta(*shape, dtype=torch.float16):
    return torch.empty(*shape, device="meta", dtype=dtype)


def test_schema_and_registration():
    op = torch.ops.cute_py.gemm.default
    assert str(op._schema) == ("cute_py::gemm(Tensor A, Tensor B, Tensor? C, float alpha, "
                               "float beta, Tensor? bias, str? activation) -> Tensor")
    import importlib
    importlib.reload(torch_ops)        # a second import does not register twice
    assert torch_ops.available


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fake_impl_on_meta_tensors(dtype):
    A, W = _meta(37, 64, dtype=dtype), _meta(48, 64, dtype=dtype)
    D = torch.ops.cute_py.gemm(A, W.t(), None, 1.0, 0.0, _meta(48, dtype=dtype), "gelu")
    assert D.shape == (37, 48) and D.dtype == dtype and D.device.type == "meta"
    assert D.stride() == (48, 1)
    C = _meta(37, 48, dtype=torch.float32)
    D = torch_ops.gemm(A, W.t(), C, 2.0, 0.5, bias=_meta(37, 1, dtype=dtype),
                       activation="relu")
    assert D.dtype == torch.float32 and D.stride() == (48, 1)
    D = torch_ops.gemm(_meta(3, 5, 8, dtype=dtype), _meta(3, 8, 7, dtype=dtype))
    assert D.shape == (3, 5, 7) and D.stride() == (35, 7, 1)
    y = torch_ops.linear(_meta(2, 9, 64, dtype=dtype), W, _meta(48, dtype=dtype), "silu")
    assert y.shape == (2, 9, 48)


def test_fake_impl_checks_arguments_by_name():
    A, B = _meta(16, 32), _meta(32, 24)
    cases = [
        (dict(bias=_meta(16)), "bias"),                         # length M: must be (M, 1)
        (dict(bias=_meta(24, dtype=torch.int32)), "bias"),
        (dict(activation="tanh"), "activation"),
        (dict(C=_meta(24, 16), beta=1.0), "C"),
        (dict(B=_meta(31, 24)), "B"),
        (dict(B=_meta(32, 24, dtype=torch.bfloat16)), "B"),
        (dict(A=_meta(2, 16, 32), B=_meta(3, 32, 24)), "B"),     # batches 2 and 3
        (dict(A=_meta(16, 32, dtype=torch.float64), B=_meta(32, 24, dtype=torch.float64)), "A"),
    ]
    for kw, arg in cases:
        args = dict(A=A, B=B, C=None, alpha=1.0, beta=0.0, bias=None, activation=None)
        args.update(kw)
        with pytest.raises(LaunchError) as e:
            torch.ops.cute_py.gemm(*args.values())
        assert e.value.arg == arg and str(e.value).startswith("gemm: " + arg)


def test_cpu_tensors_are_refused_by_the_real_body():
    A = torch.ones(4, 4, dtype=torch.float16)
    with pytest.raises(LaunchError, match="CUDA"):
        torch_ops.gemm(A, A)


@pytest.mark.parametrize("act", ACTS)
def test_reference_matches_torch_formula(act):
    g = torch.Generator().manual_seed(1)
    A, B = torch.randn(7, 5, generator=g, dtype=torch.float64), \
        torch.randn(5, 3, generator=g, dtype=torch.float64)
    C, b = torch.randn(7, 3, generator=g, dtype=torch.float64), \
        torch.randn(3, generator=g, dtype=torch.float64)
    x = 0.5 * A @ B + 2.0 * C + b
    want = {None: x, "relu": x.relu(), "gelu": torch.nn.functional.gelu(x, approximate="tanh"),
            "gelu_erf": torch.nn.functional.gelu(x), "silu": torch.nn.functional.silu(x),
            "sigmoid": x.sigmoid()}[act]
    torch.testing.assert_close(torch_ops.reference(A, B, C, 0.5, 2.0, b, act), want)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("bias_kind", ["n", "m1"])
def test_backward_gradcheck(cpu_body, act, bias_kind):
    g = torch.Generator().manual_seed(2)
    M, K, N = 5, 4, 3

    def rnd(*s):
        return torch.randn(*s, generator=g, dtype=torch.float64, requires_grad=True)
    A, B, C = rnd(M, K), rnd(K, N), rnd(M, N)
    bias = rnd(N) if bias_kind == "n" else rnd(M, 1)
    if act == "relu":               # keep the pre-activation away from the kink
        with torch.no_grad():
            bias += 3 * torch.sign(bias)

    def f(A, B, C, bias):
        return torch_ops.gemm(A, B, C, 0.7, 1.3, bias=bias, activation=act)
    assert torch.autograd.gradcheck(f, (A, B, C, bias))


def test_backward_batched_and_linear(cpu_body):
    g = torch.Generator().manual_seed(3)
    A = torch.randn(2, 5, 4, generator=g, dtype=torch.float64, requires_grad=True)
    B = torch.randn(2, 4, 6, generator=g, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(6, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda A, B, bias: torch_ops.gemm(A, B, bias=bias, activation="silu"), (A, B, bias))
    x = torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    W = torch.randn(6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch_ops.linear(x, W, bias, "gelu")
    ref = torch.nn.functional.gelu(torch.nn.functional.linear(x, W, bias), approximate="tanh")
    torch.testing.assert_close(y, ref)
    y.sum().backward()             # an expanded (stride-0) gradient reaches the op
    xr, Wr, br = (t.detach().clone().requires_grad_() for t in (x, W, bias))
    torch.nn.functional.gelu(torch.nn.functional.linear(xr, Wr, br),
                             approximate="tanh").sum().backward()
    for got, want in ((x, xr), (W, Wr), (bias, br)):
        torch.testing.assert_close(got.grad, want.grad)


def test_opcheck(cpu_body):
    g = torch.Generator().manual_seed(4)
    A = torch.randn(6, 4, generator=g, dtype=torch.float64, requires_grad=True)
    B = torch.randn(4, 5, generator=g, dtype=torch.float64, requires_grad=True)
    C = torch.randn(6, 5, generator=g, dtype=torch.float64)
    bias = torch.randn(5, generator=g, dtype=torch.float64, requires_grad=True)
    for args in ((A, B, None, 1.0, 0.0, None, None), (A, B, C, 0.5, 2.0, bias, "gelu")):
        torch.library.opcheck(torch.ops.cute_py.gemm.default, args)


def test_torch_compile_traces_without_graph_breaks(cpu_body):
    torch._dynamo.reset()
    W1, b1 = torch.randn(16, 8, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    W2 = torch.randn(8, 16, dtype=torch.float64)

    def mlp(x):
        return torch_ops.linear(torch_ops.linear(x, W1, b1, "gelu"), W2) + x

    x = torch.randn(3, 4, 8, dtype=torch.float64)
    explained = torch._dynamo.explain(mlp)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(mlp, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), mlp(x))


def test_fake_tensor_mode_traces():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        A = torch.empty(33, 16, dtype=torch.bfloat16)
        W = torch.empty(40, 16, dtype=torch.bfloat16)
        y = torch_ops.linear(A, W, torch.empty(40, dtype=torch.bfloat16), "relu")
        assert y.shape == (33, 40) and y.dtype == torch.bfloat16


def test_torch_compile_dynamic_shapes_keep_m_symbolic(cpu_body):
    torch._dynamo.reset()
    W, b = torch.randn(6, 8, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    counter = torch._dynamo.testing.CompileCounter()
    f = torch.compile(lambda x: torch_ops.linear(x, W, b, "relu"), backend=counter,
                      fullgraph=True, dynamic=True)
    for m in (5, 9, 17):
        x = torch.randn(m, 8, dtype=torch.float64)
        torch.testing.assert_close(f(x), torch.relu(x @ W.t() + b))
    assert counter.frame_count == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="the scripts run for real on a GPU")
@pytest.mark.parametrize("script", ["examples/mlp_block.py", "benchmarks/bench_fused_torch.py"])
def test_scripts_exit_cleanly_without_a_gpu(script):
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, os.path.join(root, script)], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": root})
    assert r.returncode == 0 and "no CUDA GPU" in r.stdout, r.stdout + r.stderr


def test_fake_impl_broadcasts_and_takes_empty_problems():
    """torch.matmul's shapes: a 2-D or batch-1 operand against a batched one gives the batched
    D; M, N or K of 0 gives an empty or full D (as torch.mm)."""
    op = torch.ops.cute_py.gemm
    for a, b, want in (((3, 5, 8), (8, 7), (3, 5, 7)), ((5, 8), (3, 8, 7), (3, 5, 7)),
                       ((1, 5, 8), (3, 8, 7), (3, 5, 7)), ((3, 5, 8), (1, 8, 7), (3, 5, 7)),
                       ((0, 8), (8, 7), (0, 7)), ((5, 8), (8, 0), (5, 0)),
                       ((5, 0), (0, 7), (5, 7))):
        D = op(_meta(*a), _meta(*b), None, 1.0, 0.0, _meta(want[-1]), "relu")
        assert tuple(D.shape) == want


@pytest.mark.parametrize("shapes", [((2, 5, 4), (4, 6)), ((5, 4), (2, 4, 6)),
                                    ((1, 5, 4), (2, 4, 6)), ((2, 5, 4), (1, 4, 6))])
def test_backward_broadcast_gradcheck(cpu_body, shapes):
    """A broadcast operand's gradient is the sum over the batches (one folded GEMM)."""
    g = torch.Generator().manual_seed(5)
    A = torch.randn(*shapes[0], generator=g, dtype=torch.float64, requires_grad=True)
    B = torch.randn(*shapes[1], generator=g, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(6, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda A, B, bias: torch_ops.gemm(A, B, bias=bias, activation="silu"), (A, B, bias))
