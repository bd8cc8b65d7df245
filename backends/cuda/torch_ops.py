"""cute_py's GEMM as a PyTorch custom operator: ``torch.ops.cute_py.gemm``.

Importing this module registers (when torch is importable; nothing happens otherwise)::

    cute_py::gemm(Tensor A, Tensor B, Tensor? C, float alpha, float beta, Tensor? bias,
                  str? activation) -> Tensor

``D = act(alpha * A @ B + beta * C + bias)`` with ``torch.matmul`` shapes (A ``(M, K)`` /
``(L, M, K)``, B ``(K, N)`` / ``(L, K, N)``, a 2-D or batch-1 operand broadcast over the
other's batch; ``x @ W.T`` is ``B = W.T``, a view; M, N or K of 0 as ``torch.mm``), bias a
length-N vector (one value per output column, as ``nn.Linear``) or an ``(M, 1)`` column,
activation one of :data:`cute_py.epilogue.fused.ACTIVATIONS`.  D is a new contiguous tensor of
C's dtype (A's without C) on A's device.  The body calls :func:`cute_py.gemm` on torch's current
stream.

- **torch.compile**: a fake implementation (``register_fake``) gives D's shape, dtype, device
  and strides and runs the same argument checks (:func:`cute_py.epilogue.fused.fused_epilogue`)
  on fake tensors, so a compiled model traces the op without a graph break
  (``fullgraph=True``); inductor calls it as an opaque kernel.
- **autograd**: implemented.  With ``Z = alpha*A@B + beta*C + bias`` and ``dZ = dD *
  act'(Z)`` (Z recomputed by the same op without the activation; for relu the saved output
  gives the mask, ``D > 0``, and nothing is recomputed):
  ``dA = alpha * dZ @ B^T`` and ``dB = alpha * A^T @ dZ`` through the same GEMM (op calls, so
  they are traced and compiled too; a broadcast operand's gradient is summed over the batch
  as one folded GEMM), ``dC = beta * dZ``, ``dbias`` = ``dZ`` summed over the
  modes the bias is broadcast along.  No double backward.
- **EVT trees** (``cute_py.gemm(..., epilogue=tree, **tensors)``) are not op arguments: a tree
  is a Python object, not a value of a torch schema, and its side outputs (aux stores,
  reductions) are written in place.  Call :func:`cute_py.gemm` directly for those (eager;
  under ``torch.compile`` it is a graph break).

:func:`linear` is the ``nn.Linear``-style helper (``x @ weight.T + bias``, then the
activation); :func:`reference` the float64 torch reference that defines the op.
"""

import math
from typing import Optional

from cute_py.errors import LaunchError

try:
    import torch
except ImportError:  # torch is optional: the module imports, registers nothing
    torch = None

__all__ = ["available", "gemm", "linear", "reference", "OP"]

#: whether torch is importable (and the operator registered)
available = torch is not None

#: the operator's qualified name
OP = "cute_py::gemm"

_NAME = "gemm"


def _needs_torch(op):
    if torch is None:
        raise LaunchError(op, "torch", "is not installed (pip install torch)")


def _check(A, B, C, alpha, beta, bias, activation):
    """The op's argument checks on tensor metadata only (run for real and fake tensors);
    returns D's shape and dtype."""
    from cute_py.epilogue.fused import fused_epilogue
    for nm, X in (("A", A), ("B", B)):
        if X.dim() not in (2, 3):
            raise LaunchError(_NAME, nm, "must be 2-D or 3-D (batched)", actual=tuple(X.shape))
    if A.shape[-1] != B.shape[-2] or (A.dim() == 3 and B.dim() == 3 and
                                      A.shape[0] != B.shape[0] and A.shape[0] != 1 and
                                      B.shape[0] != 1):
        raise LaunchError(_NAME, "B", "does not match A (A @ B needs A (.., M, K), B (.., K, "
                          "N), batches equal or one of them 1 or 2-D: broadcast)",
                          expected=(*A.shape[:-2], A.shape[-1], "N"), actual=tuple(B.shape))
    # torch.matmul's batch: the batched operand's (the other is one matrix for every batch)
    batch = () if A.dim() == B.dim() == 2 else \
        (B.shape[0],) if A.dim() == 2 or (B.dim() == 3 and A.shape[0] == 1) else (A.shape[0],)
    if A.dtype != B.dtype:
        raise LaunchError(_NAME, "B", "dtype must equal A's", expected=A.dtype, actual=B.dtype)
    if A.dtype not in (torch.float16, torch.bfloat16, torch.float32) and \
            not (A.dtype == torch.float64 and A.device.type == "cpu"):
        raise LaunchError(_NAME, "A", "has an unsupported dtype",
                          expected="float16 | bfloat16 | float32", actual=A.dtype)
    shape = (*batch, A.shape[-2], B.shape[-1])
    for nm, X in (("B", B), ("C", C), ("bias", bias)):
        if X is not None and X.device != A.device:
            raise LaunchError(_NAME, nm, "must live on A's device", expected=A.device,
                              actual=X.device)
    if C is not None and tuple(C.shape) != shape:
        raise LaunchError(_NAME, "C", "must have D's shape", expected=shape,
                          actual=tuple(C.shape))
    dtype = C.dtype if C is not None else A.dtype
    M, N = A.shape[-2], B.shape[-1]
    bias_shape = None if bias is None else tuple(bias.shape)
    if not (isinstance(M, int) and isinstance(N, int)) or M == 0 or N == 0:
        # symbolic sizes (torch.compile(dynamic=True)) or an empty D: check the bias's shape
        # here and the rest on a 1 x 1 stand-in, so M and N stay symbolic
        if bias_shape is not None:
            if bias_shape == (N,) or bias_shape == (1, N):
                bias_shape = (1,)
            elif bias_shape == (M, 1):
                bias_shape = (1, 1)
            else:
                raise LaunchError(_NAME, "bias", "must be a length-N vector or an (M, 1) "
                                  "column", expected=("N",), actual=bias_shape)
        M = N = 1
    M, N = int(M), int(N)

    def dt(x):
        # CPU tensors never reach a kernel (the body refuses them): float64 passes the checks
        # there, so reference() and gradcheck run on the CPU
        return "float32" if x == torch.float64 and A.device.type == "cpu" else x
    fused_epilogue(M, N, D_dtype=dt(dtype), C_dtype=None if C is None else dt(C.dtype),
                   has_c=C is not None, alpha=alpha, beta=beta,
                   bias_shape=bias_shape, bias_dtype=None if bias is None else dt(bias.dtype), activation=activation)
    return shape, dtype


def _impl(A, B, C, alpha, beta, bias, activation):
    """The op's CUDA body: :func:`cute_py.gemm` on torch's current stream."""
    _check(A, B, C, alpha, beta, bias, activation)
    if not A.is_cuda:
        raise LaunchError(_NAME, "A", "must be a CUDA tensor (cute_py::gemm runs on the GPU)",
                          actual=A.device)
    from cute_py.gemm import gemm as _gemm
    return _gemm(A, B, C, alpha, beta, bias=bias, activation=activation)  # torch's stream


# ---------------------------------------------------------------------------------------------
# the reference and the activations' derivatives (torch, any device)

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _act(x, activation):
    if activation is None or activation == "identity":
        return x
    if activation == "relu":
        return torch.relu(x)
    if activation == "gelu":
        return torch.nn.functional.gelu(x, approximate="tanh")
    if activation == "gelu_erf":
        return torch.nn.functional.gelu(x)
    if activation == "silu":
        return torch.nn.functional.silu(x)
    if activation == "sigmoid":
        return torch.sigmoid(x)
    raise LaunchError(_NAME, "activation", "is not a known activation", actual=activation)


def _act_grad(z, activation):
    """``act'(z)`` (z float32 or float64)."""
    if activation is None or activation == "identity":
        return torch.ones_like(z)
    if activation == "relu":
        return (z > 0).to(z.dtype)
    if activation == "gelu":
        z2 = z * z
        t = torch.tanh(_SQRT_2_OVER_PI * (z + 0.044715 * z * z2))
        return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * z2)
    if activation == "gelu_erf":
        return 0.5 * (1 + torch.erf(z / math.sqrt(2.0))) + \
            z * torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    if activation == "silu":
        s = torch.sigmoid(z)
        return s * (1 + z * (1 - s))
    if activation == "sigmoid":
        s = torch.sigmoid(z)
        return s * (1 - s)
    raise LaunchError(_NAME, "activation", "is not a known activation", actual=activation)


def reference(A, B, C=None, alpha=1.0, beta=0.0, bias=None, activation=None):
    """The op's definition in float64 torch (any device): ``act(alpha * A @ B + beta * C +
    bias)`` rounded to D's dtype (C's, else A's).  A C with ``beta == 0`` is not read."""
    _needs_torch("reference")
    shape, dtype = _check(A, B, C, alpha, beta, bias, activation)
    x = alpha * torch.matmul(A.double(), B.double())
    if C is not None and beta != 0.0:
        x = x + beta * C.double()
    if bias is not None:
        x = x + (bias.double().reshape(-1) if bias.dim() == 2 and bias.shape[0] == 1
                 else bias.double())
    return _act(x, activation).to(dtype).contiguous()


def _grad_shared(X, Y, like, alpha, which):
    """``alpha * dZ @ B^T`` (``which`` "A": X = dZ, Y = B) or ``alpha * A^T @ dZ`` ("B": X =
    A, Y = dZ) in ``like``'s shape (A's / B's): an operand that was one matrix for every batch
    (2-D, or a batch of 1 against a larger batch) gets the sum over the batches, as one GEMM
    over the folded batch (``(M, L*N) @ (L*N, K)`` / ``(K, L*M) @ (L*M, N)``)."""
    op = torch.ops.cute_py.gemm.default
    other = Y if which == "A" else X          # the batched side (B for dA, A for dB)
    shared = like.dim() == 2 or (like.shape[0] == 1 and other.dim() == 3 and
                                 other.shape[0] != 1)
    if not shared or other.dim() == 2:
        if which == "A":
            return op(X, Y.transpose(-1, -2), None, alpha, 0.0, None, None)
        return op(X.transpose(-1, -2), Y, None, alpha, 0.0, None, None)
    if which == "A":                          # sum_l dZ_l B_l^T
        L, M, N = X.shape
        d = op(X.transpose(0, 1).reshape(M, L * N),
               Y.transpose(-1, -2).reshape(L * N, Y.shape[-2]),
               None, alpha, 0.0, None, None)
    else:                                     # sum_l A_l^T dZ_l
        L, M, K = X.shape
        d = op(X.reshape(L * M, K).transpose(0, 1), Y.reshape(L * M, Y.shape[-1]), None,
               alpha, 0.0, None, None)
    return d.reshape(like.shape)


# ---------------------------------------------------------------------------------------------
# registration

if torch is not None:
    from torch import Tensor

    def _op_body(A: Tensor, B: Tensor, C: Optional[Tensor], alpha: float, beta: float,
                 bias: Optional[Tensor], activation: Optional[str]) -> Tensor:
        return _impl(A, B, C, alpha, beta, bias, activation)  # module global: patchable

    def _fake(A, B, C, alpha, beta, bias, activation):
        shape, dtype = _check(A, B, C, alpha, beta, bias, activation)
        return A.new_empty(shape, dtype=dtype)

    def _setup_context(ctx, inputs, output):
        A, B, C, alpha, beta, bias, activation = inputs
        # relu: D > 0 exactly where Z > 0, so D replaces the recomputed pre-activation
        ctx.save_for_backward(A, B, C, bias, output if activation == "relu" else None)
        ctx.alpha, ctx.beta, ctx.activation = alpha, beta, activation
        ctx.bias_shape = None if bias is None else tuple(bias.shape)

    def _backward(ctx, dD):
        A, B, C, bias, D = ctx.saved_tensors
        alpha, beta, act = ctx.alpha, ctx.beta, ctx.activation
        op = torch.ops.cute_py.gemm.default
        ct = torch.promote_types(dD.dtype, torch.float32)     # the derivative's precision
        if act == "relu":
            dZ = torch.where(D > 0, dD, torch.zeros((), dtype=dD.dtype, device=dD.device))
        elif act is not None and act != "identity":
            z = op(A, B, C, alpha, beta, bias, None)
            dZ = (dD.to(ct) * _act_grad(z.to(ct), act)).to(dD.dtype)
        else:
            dZ = dD
        dZ = dZ.to(A.dtype).contiguous()       # e.g. an expanded (stride-0) gradient
        need = ctx.needs_input_grad
        dA = dB = dC = dbias = None
        if need[0]:
            dA = _grad_shared(dZ, B, A, alpha, "A").to(A.dtype)
        if need[1]:
            dB = _grad_shared(A, dZ, B, alpha, "B").to(B.dtype)
        if C is not None and need[2]:
            dC = (dZ.to(ct) * beta).to(C.dtype)
        if bias is not None and need[5]:
            g = dZ.to(ct)
            if ctx.bias_shape[-1] == 1 and len(ctx.bias_shape) == 2 and \
                    ctx.bias_shape != (1, g.shape[-1]):          # (M, 1): per output row
                g = g.sum(dim=-1, keepdim=True)
                if g.dim() == 3:
                    g = g.sum(dim=0)
            else:                                                # (N,) / (1, N)
                g = g.reshape(-1, g.shape[-1]).sum(dim=0)
            dbias = g.reshape(ctx.bias_shape).to(bias.dtype)
        return dA, dB, dC, None, None, dbias, None

    try:                                      # one registration per process
        _op = torch.ops.cute_py.gemm
    except (AttributeError, RuntimeError):
        _op = None
    if _op is None:
        _custom = torch.library.custom_op(OP, mutates_args=())(_op_body)
        _custom.register_fake(_fake)
        _custom.register_autograd(_backward, setup_context=_setup_context)


def gemm(A, B, C=None, alpha=1.0, beta=0.0, *, bias=None, activation=None):
    """``torch.ops.cute_py.gemm``: ``D = act(alpha * A @ B + beta * C + bias)`` for torch
    tensors; traceable by ``torch.compile`` and differentiable (see the module docstring)."""
    _needs_torch("gemm")
    return torch.ops.cute_py.gemm(A, B, C, float(alpha), float(beta), bias, activation)


def linear(x, weight, bias=None, activation=None):
    """``act(x @ weight.T + bias)`` as ``torch.nn.functional.linear`` (then the activation):
    x ``(..., in_features)``, weight ``(out_features, in_features)``, bias ``(out_features,)``.
    The leading modes of x are flattened into M (a view for a contiguous x); ``weight.T`` is
    read in place (the kernel's N-major B)."""
    _needs_torch("linear")
    if x.dim() < 1 or weight.dim() != 2:
        raise LaunchError("linear", "weight" if x.dim() >= 1 else "x",
                          "must be (out_features, in_features) with x (..., in_features)",
                          actual=(tuple(x.shape), tuple(weight.shape)))
    if x.shape[-1] != weight.shape[1]:
        raise LaunchError("linear", "x", "has the wrong number of features",
                          expected=weight.shape[1], actual=x.shape[-1])
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise LaunchError("linear", "bias", "must have out_features elements",
                          expected=(weight.shape[0],), actual=tuple(bias.shape))
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    y = gemm(x2, weight.t(), bias=bias, activation=activation)
    return y.reshape(*lead, weight.shape[0])
