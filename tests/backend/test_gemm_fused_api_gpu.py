"""GPU tests of fused GEMMs from one call: ``cute_py.gemm(A, B, C, alpha, beta, bias=,
activation=, epilogue=, **tensors)`` on torch tensors (skipped without a GPU or torch).

Every documented epilogue (the fused arguments and the ready-made / custom EVT trees of
docs/epilogue.md) against ``evt.evaluate`` on the float64 product; odd sizes, both operand majors,
fp16 and bf16; D poisoned with NaN first; bad trees and tensors raise ``LaunchError`` naming them;
the ``cute_py::gemm`` torch operator under ``torch.compile`` (forward and backward).
"""

import numpy as np
import pytest

from cute_py.backends.cuda.device import has_gpu

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not has_gpu(), reason="needs a CUDA GPU")]

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():          # pragma: no cover - CPU build of torch
    pytest.skip("needs a CUDA build of torch", allow_module_level=True)

import cute_py  # noqa: E402
from cute_py.epilogue import evt  # noqa: E402
from cute_py.errors import LaunchError  # noqa: E402

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
SIZES = [(131, 264, 200), (67, 100, 88), (1, 72, 64)]     # (M, N, K): odd M, N % 8 != 0, M = 1


def _operand(rows, cols, contiguous_cols, dt, g):
    """A (rows, cols) operand; row-major when ``contiguous_cols`` else the transpose view of a
    row-major (cols, rows) tensor (the other major), each of ~unit-variance normal data."""
    if contiguous_cols:
        return torch.randn(rows, cols, generator=g, device="cuda").to(dt)
    return torch.randn(cols, rows, generator=g, device="cuda").to(dt).t()


def _np(x):
    return x.detach().float().cpu().numpy().astype(np.float64)


def _check(D, want, dt):
    """Relative-norm and elementwise agreement of D with the float64 value ``want``."""
    got = _np(D)
    assert np.isfinite(got).all(), "NaN/Inf in D (poisoned output not fully written?)"
    want = evt.round_to(want, dt)
    rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    assert rel < (1e-2 if dt == "float16" else 2e-2), rel
    tol = (2e-2 if dt == "float16" else 6e-2) * (1 + np.abs(want))
    assert (np.abs(got - want) <= tol).mean() > 0.999


def _problem(size, majors, dt, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    M, N, K = size
    A = _operand(M, K, majors[0] == "K", DTYPES[dt], g)
    B = _operand(K, N, majors[1] == "N", DTYPES[dt], g)
    acc = _np(A) @ _np(B)
    return g, A, B, acc


def _poisoned(M, N, dt):
    return torch.full((M, N), float("nan"), device="cuda", dtype=DTYPES[dt])


# (activation, bias kind, has C, alpha, beta)
FUSED = [
    (None, None, False, 1.0, 0.0),            # the plain GEMM
    (None, None, False, 0.5, 0.0),
    (None, None, True, 1.5, -0.5),
    (None, "n", False, 1.0, 0.0),
    (None, "m1", True, 0.75, 0.25),
    ("relu", "n", True, 1.5, 0.5),            # relu(alpha*acc + beta*C + bias)
    ("gelu", "n", False, 1.0, 0.0),           # nn.Linear + GELU
    ("gelu", "1n", False, 1.0, 0.0),
    ("gelu_erf", "m1", False, 1.0, 0.0),
    ("silu", "n", True, 1.0, 1.0),
    ("sigmoid", None, False, 2.0, 0.0),
    ("relu", None, True, 1.0, 0.0),           # beta = 0: C is not read (NaN C stays harmless)
]


def _combos(cases):
    """Every case with row-major A and B (majors "KN": A's K and B's N contiguous) in both
    dtypes, and with the other majors ("MK") in one dtype, alternating (compile time)."""
    out = []
    for i, case in enumerate(cases):
        out += [(case, "KN", "float16"), (case, "KN", "bfloat16"),
                (case, "MK", ("float16", "bfloat16")[i % 2])]
    return out


def _id(c):
    return "-".join(map(str, c)) if isinstance(c, tuple) else str(c)


@pytest.mark.parametrize("case,majors,dt", _combos(FUSED), ids=_id)
def test_fused_arguments_match_evaluate(case, majors, dt):
    from cute_py.epilogue.fused import bind_fused, fused_epilogue
    act, bias_kind, has_c, alpha, beta = case
    for i, size in enumerate(SIZES):
        M, N, K = size
        g, A, B, acc = _problem(size, majors, dt, 100 + i)
        C = None
        if has_c:
            C = torch.randn(M, N, generator=g, device="cuda").to(DTYPES[dt])
            if beta == 0.0:
                C.fill_(float("nan"))
        bshape = {None: None, "n": (N,), "1n": (1, N), "m1": (M, 1)}[bias_kind]
        bias = None if bshape is None else \
            torch.randn(*bshape, generator=g, device="cuda").to(DTYPES[dt])
        out = _poisoned(M, N, dt)
        D = cute_py.gemm(A, B, C, alpha, beta, bias=bias, activation=act, out=out)
        assert D.data_ptr() == out.data_ptr()
        tree, names = fused_epilogue(M, N, D_dtype=dt, C_dtype=dt, has_c=has_c, alpha=alpha,
                                     beta=beta, bias_shape=bshape, bias_dtype=dt,
                                     activation=act)
        want = acc if tree is None else evt.evaluate(
            tree, acc, **{k: (_np(v) if hasattr(v, "cpu") else v)
                          for k, v in bind_fused(names, C=C, bias=bias).items()})
        _check(D, want, dt)
        D2 = cute_py.gemm(A, B, C, alpha, beta, bias=bias, activation=act)   # allocated D
        assert D2.dtype == DTYPES[dt] and D2.shape == (M, N) and D2.is_contiguous()
        _check(D2, want, dt)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_fused_into_column_major_out(dt):
    """A column-major ``out`` (or C) with a fused epilogue: the values of a row-major one,
    written into ``out`` itself, with work queued on a side stream right before the call seen."""
    M, N, K = 131, 72, 200
    g, A, B, acc = _problem((M, N, K), "KN", dt, 7)
    bias = torch.randn(N, generator=g, device="cuda").to(DTYPES[dt])
    C = torch.randn(N, M, generator=g, device="cuda").to(DTYPES[dt]).t()
    from cute_py.epilogue.fused import bind_fused, fused_epilogue
    tree, names = fused_epilogue(M, N, D_dtype=dt, C_dtype=dt, has_c=True, alpha=0.5, beta=1.5,
                                 bias_shape=(N,), bias_dtype=dt, activation="gelu")
    want = evt.evaluate(tree, acc, **{k: (_np(v) if hasattr(v, "cpu") else v)
                                      for k, v in bind_fused(names, C=C, bias=bias).items()})
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        out = torch.full((N, M), float("nan"), device="cuda", dtype=DTYPES[dt]).t()
        torch.cuda._sleep(100000)
        A2 = A + 0
        D = cute_py.gemm(A2, B, C, 0.5, 1.5, bias=bias, activation="gelu", out=out)
    s.synchronize()
    assert D is out and out.stride() == (1, M)
    _check(out, want, dt)
    out2 = torch.full((N, M), float("nan"), device="cuda", dtype=DTYPES[dt]).t()
    torch.cuda.synchronize()
    D2 = cute_py.gemm(A, B, C, 0.5, 1.5, bias=bias, activation="gelu", out=out2, stream=s)
    s.synchronize()                                          # an explicit, non-current stream
    assert D2 is out2 and torch.equal(out2, out)


@pytest.mark.parametrize("case", [("gelu", "n", False, 1.0, 0.0), (None, None, True, 1.5, -0.5),
                                  ("relu", "m1", True, 0.5, 2.0)], ids=_id)
def test_fused_arguments_batched(case):
    """(L, M, K) @ (L, K, N): the epilogue applies to every batch (bias shared by all)."""
    act, bias_kind, has_c, alpha, beta = case
    L, M, N, K = 3, 67, 136, 72
    g = torch.Generator(device="cuda").manual_seed(300)
    A = torch.randn(L, M, K, generator=g, device="cuda").half()
    B = torch.randn(L, K, N, generator=g, device="cuda").half()
    C = torch.randn(L, M, N, generator=g, device="cuda").half() if has_c else None
    bshape = {None: None, "n": (N,), "m1": (M, 1)}[bias_kind]
    bias = None if bshape is None else torch.randn(*bshape, generator=g, device="cuda").half()
    D = cute_py.gemm(A, B, C, alpha, beta, bias=bias, activation=act)
    assert D.shape == (L, M, N)
    from cute_py.backends.cuda.torch_ops import reference
    want = reference(A, B, C, alpha, beta, bias, act)
    for i in range(L):
        _check(D[i], _np(want[i]), "float16")


def _trees(dt):
    scaled = evt.AccFetch() * evt.ColBroadcast("scale", "float32")
    return {
        "linear_combination": evt.linear_combination(element_c=dt),
        "per_row_bias": evt.lin_comb_per_row_bias(element_c=dt, element_bias=dt),
        "per_col_bias": evt.lin_comb_per_col_bias(element_c=dt, element_bias=dt),
        "elt_act": evt.lin_comb_elt_act("silu", element_c=dt),
        "bias_elt_act_row": evt.lin_comb_bias_elt_act("gelu_erf", bias="row", alpha=1.0,
                                                      beta=0.0, element_bias=dt),
        "bias_elt_act_aux": evt.lin_comb_bias_elt_act_aux("relu", element_c=dt,
                                                          element_bias=dt, element_aux=dt),
        "custom_scale_residual_absmax": evt.ScalarReduction(
            evt.AuxStore(scaled, "scaled", dt) + evt.AuxLoad("residual", dt), "amax",
            "absmax"),
        "row_col_reductions": evt.ColReduction(evt.RowReduction(
            evt.clamp(evt.AccFetch() + evt.RowBroadcast("bias", "float32"), -1.0, 1.0),
            "colsum", "sum"), "rowmax", "max"),
    }


def _tree_tensors(tree, M, N, dt, g):
    """Random inputs and empty outputs for every named argument of ``tree`` (not C)."""
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
    shapes = {"row": (N,), "col": (M,), "aux_load": (M, N), "aux_store": (M, N),
              "row_reduce": (N,), "col_reduce": (M,), "scalar_reduce": (1,)}
    out = {}
    for name, (role, dtype) in tree.signature.items():
        base = role.split(":")[0]
        if name == "C" or base == "scalar":
            continue
        if name in evt.outputs(tree):
            out[name] = torch.full(shapes[base], float("nan"), device="cuda", dtype=tdt[dtype])
        else:
            out[name] = torch.randn(*shapes[base], generator=g, device="cuda").to(tdt[dtype])
    return out


@pytest.mark.parametrize("name,majors,dt", _combos(list(_trees("float16"))), ids=_id)
def test_epilogue_trees_match_evaluate_all(name, majors, dt):
    tree = _trees(dt)[name]
    for i, size in enumerate(SIZES[:2]):
        M, N, K = size
        g, A, B, acc = _problem(size, majors, dt, 200 + i)
        has_c = "C" in tree.signature
        C = torch.randn(M, N, generator=g, device="cuda").to(DTYPES[dt]) if has_c else None
        tensors = _tree_tensors(tree, M, N, dt, g)
        alpha, beta = (0.75, 0.5) if "alpha" in tree.signature else (1.0, 0.0)
        D = cute_py.gemm(A, B, C, alpha, beta, epilogue=tree, out=_poisoned(M, N, dt),
                         **tensors)
        inputs = {k: _np(v) for k, v in tensors.items() if k in evt.inputs(tree)}
        if has_c:
            inputs["C"] = _np(C)
        for s, v in (("alpha", alpha), ("beta", beta)):
            if evt.inputs(tree).get(s, ("",))[0] == "scalar":
                inputs[s] = v
        ref = evt.evaluate_all(tree, acc, **inputs)
        _check(D, ref["D"], dt)
        for out in evt.outputs(tree):
            got, want = _np(tensors[out]), ref[out]
            rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            assert np.isfinite(got).all() and rel < 2e-2, (out, rel)


def test_bad_arguments_name_them():
    M, N, K = 64, 72, 64
    A = torch.randn(M, K, device="cuda", dtype=torch.float16)
    B = torch.randn(K, N, device="cuda", dtype=torch.float16)

    def err(**kw):
        with pytest.raises(LaunchError) as e:
            cute_py.gemm(A, B, **kw)
        assert str(e.value).startswith("gemm: ")
        return e.value.arg

    assert err(bias=torch.zeros(M, device="cuda", dtype=torch.float16)) == "bias"
    assert err(bias=torch.zeros(N, device="cuda", dtype=torch.int32)) == "bias"
    assert err(bias=torch.zeros(N, dtype=torch.float16)) == "bias"            # on the CPU
    assert err(activation="tanh") == "activation"
    tree = evt.lin_comb_bias_elt_act_aux("relu", alpha=1.0, beta=0.0)
    bias = torch.zeros(N, device="cuda", dtype=torch.float16)
    aux = torch.empty(M, N, device="cuda", dtype=torch.float16)
    assert err(epilogue=tree, aux=aux) == "bias"                            # missing
    assert err(epilogue=tree, bias=bias[None].t(), aux=aux) == "bias"       # (N, 1): not a row
    assert err(epilogue=evt.lin_comb_elt_act("relu", beta=0.0), bias=bias) == "bias"
    assert err(epilogue=tree, bias=bias, aux=aux, activation="relu") == "activation"
    assert err(epilogue=tree, bias=bias) == "aux"                           # missing output
    assert err(epilogue=tree, bias=bias.float(), aux=aux) == "bias"         # dtype
    assert err(epilogue=tree, bias=bias, aux=aux[:, :8]) == "aux"           # shape
    assert err(epilogue=tree, bias=bias, aux=aux.cpu()) == "aux"            # device
    assert err(epilogue=tree, bias=bias, aux=aux, extra=aux) == "extra"
    assert err(epilogue=tree, bias=bias, aux=torch.empty(N, M, device="cuda",
                                                         dtype=torch.float16).t()) == "aux"
    assert err(epilogue=evt.linear_combination(), alpha=2.0) == "C"         # the tree reads C
    assert err(epilogue="relu") == "epilogue"


def test_torch_op_under_torch_compile():
    from cute_py.backends.cuda import torch_ops
    torch._dynamo.reset()
    g = torch.Generator(device="cuda").manual_seed(7)
    dt = torch.float16
    W1 = (torch.randn(384, 256, generator=g, device="cuda") / 16).to(dt).requires_grad_()
    b1 = torch.randn(384, generator=g, device="cuda").to(dt).requires_grad_()
    W2 = (torch.randn(256, 384, generator=g, device="cuda") / 20).to(dt).requires_grad_()

    def mlp(x):
        return torch_ops.linear(torch_ops.linear(x, W1, b1, "gelu"), W2)

    x = torch.randn(4, 33, 256, generator=g, device="cuda").to(dt).requires_grad_()
    explained = torch._dynamo.explain(mlp)(x)
    assert explained.graph_break_count == 0
    compiled = torch.compile(mlp, fullgraph=True)
    y = compiled(x)
    ref = torch.nn.functional.linear(torch.nn.functional.gelu(torch.nn.functional.linear(
        x.double(), W1.double(), b1.double()), approximate="tanh"), W2.double())
    rel = ((y.double() - ref).norm() / ref.norm()).item()
    assert rel < 1e-2, rel
    y.float().square().sum().backward()
    grads = [t.grad.double() for t in (x, W1, b1, W2)]
    xr, W1r, b1r, W2r = (t.detach().double().requires_grad_() for t in (x, W1, b1, W2))
    yr = torch.nn.functional.linear(torch.nn.functional.gelu(torch.nn.functional.linear(
        xr, W1r, b1r), approximate="tanh"), W2r)
    yr.square().sum().backward()
    for got, t in zip(grads, (xr, W1r, b1r, W2r)):
        rel = ((got - t.grad).norm() / t.grad.norm()).item()
        assert rel < 3e-2, rel
