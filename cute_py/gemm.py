"""The high-level GEMM: ``cute_py.gemm(A, B, C=None, alpha=1, beta=0, ...)``.

Picks a kernel configuration for the dtypes, layouts and sizes and launches it.  On sm_90 it
first tries the Hopper kernel (``cute_py.backends.cuda.kernels.gemm_sm90``, when it is
installed and supports the case), else the SM80 kernels (``gemm_sm80``: single-stage,
pipelined or multistage ``cp.async`` mainloops with ``ldmatrix`` + ``mma.sync``).

Nothing here imports the backend or CuPy at module import: the algebra stays importable on a
machine without CUDA.
"""

from __future__ import annotations

from cute_py.errors import LaunchError

__all__ = ["gemm"]


def _to_cupy(x, name):
    """CuPy view of a CuPy array or a torch CUDA tensor; returns (array, is_bf16, kind)."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch
        import cupy as cp
        if not x.is_cuda:
            raise LaunchError("gemm", name, "must live on a CUDA device", actual=x.device)
        bf16 = x.dtype == torch.bfloat16
        v = x.view(torch.int16) if bf16 else x
        arr = cp.asarray(v)
        if bf16:
            arr = arr.view(cp.uint16)
        return arr, bf16, "torch"
    if hasattr(x, "__cuda_array_interface__") and mod.startswith("cupy"):
        return x, False, "cupy"
    raise LaunchError("gemm", name, "must be a CuPy array or a torch CUDA tensor",
                      actual=type(x).__name__)


def _hopper_available() -> bool:
    try:
        from cute_py.backends.cuda.device import device_properties
        return device_properties().cc == (9, 0)
    except Exception:
        return False


def _try_sm90(a, b, c, d, alpha, beta, strict: bool, bf16: bool = False):
    """The Hopper kernel (``gemm_sm90(A, B_nk, D, C, alpha, beta)``: A (M, K) and B as (N, K),
    16-bit, D row-major in A's dtype) when the case fits it; None otherwise.  Each operand is
    read in place when one of its two modes is contiguous: K-major, or M-major A / N-major B
    (e.g. the usual row-major (K, N) B), through the kernel's MN-major operand path."""
    try:
        from cute_py.backends.cuda.kernels.gemm_sm90 import gemm_sm90  # lazy: may be absent
    except ImportError:
        if strict:
            raise LaunchError("gemm", "backend", "the Hopper kernel is not installed") from None
        return None
    es = a.itemsize
    fits = ((str(a.dtype) == "float16" or (bf16 and str(a.dtype) == "uint16"))
            and a.dtype == b.dtype
            and a.ndim == b.ndim and es in a.strides[-2:] and es in b.strides[-2:]
            and (d is None or (d.dtype == a.dtype and d.strides[-1] == d.itemsize))
            and (c is None or beta == 0 or (c.dtype == a.dtype and c.strides[-1] == c.itemsize)))
    if not fits:
        if strict:
            raise LaunchError("gemm", "backend", "the Hopper kernel needs 16-bit A and B with "
                              "one contiguous mode each and a row-major D/C of A's dtype")
        return None
    import cupy as cp
    if d is None:
        d = cp.empty((*a.shape[:-1], b.shape[-1]), dtype=a.dtype)
    try:
        gemm_sm90(a, b.swapaxes(-1, -2), d, c if beta != 0 else None, alpha, beta)
    except Exception:
        if strict:
            raise
        return None
    return d


def gemm(A, B, C=None, alpha: float = 1.0, beta: float = 0.0, *, out=None,
         mainloop: str | None = None, config=None, backend: str = "auto"):
    """``D = alpha * A @ B + beta * C`` on the GPU; returns D.

    A ``(M, K)`` / ``(L, M, K)``, B ``(K, N)`` / ``(L, K, N)``: CuPy arrays or torch CUDA
    tensors of float16, bfloat16 (torch) or float32 (computed in tf32), with a unit stride in
    either matrix mode (row- or column-major, any leading dimension, any M, N, K >= 1).  C, when
    given, has D's shape; ``out`` is D (allocated row-major in C's dtype, else A's, when None).

    ``backend``: ``"auto"`` (Hopper kernel on sm_90 when available, else SM80), ``"sm80"`` or
    ``"sm90"``.  ``mainloop`` (``"multistage"``, ``"pipelined"``, ``"singlestage"``) and
    ``config`` (a ``GemmSm80Config``) force the SM80 kernel's choice.

    Law: the result equals the float64 product within the dtype's rounding (fp32 accumulation).
    """
    if backend not in ("auto", "sm80", "sm90"):
        raise LaunchError("gemm", "backend", "is not one of auto/sm80/sm90", actual=backend)
    a, bf_a, kind = _to_cupy(A, "A")
    b, bf_b, _ = _to_cupy(B, "B")
    if bf_a != bf_b:
        raise LaunchError("gemm", "B", "dtype must equal A's", expected=A.dtype, actual=B.dtype)
    c = None if C is None else _to_cupy(C, "C")[0]
    d = None if out is None else _to_cupy(out, "out")[0]
    if d is None and kind == "torch":
        import torch
        shape = (*A.shape[:-1], B.shape[-1])
        dt = C.dtype if C is not None else A.dtype
        out = torch.empty(shape, device=A.device, dtype=dt)
        d = _to_cupy(out, "out")[0]
    if backend in ("auto", "sm90") and mainloop is None and config is None and _hopper_available():
        res = _try_sm90(a, b, c, d, alpha, beta, strict=backend == "sm90", bf16=bf_a)
        if res is not None:
            return out if out is not None else res
    elif backend == "sm90":
        raise LaunchError("gemm", "backend", "sm90 needs an sm_90 GPU and the Hopper kernel")
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80
    res = gemm_sm80(a, b, c, d, alpha, beta, config=config, mainloop=mainloop, bf16=bf_a)
    return out if out is not None else res
