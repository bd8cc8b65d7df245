"""The high-level GEMM: ``cute_py.gemm(A, B, C=None, alpha=1, beta=0, ...)``.

The implementation lives in the CUDA backend (``cute_py.backends.cuda.gemm_api``) and is
imported on the first call: the algebra stays importable on a machine without CUDA or CuPy.
"""

from __future__ import annotations

from cute_py.errors import CuteError, LaunchError

__all__ = ["gemm"]

_IMPL: list = []


def gemm(A, B, C=None, alpha=1.0, beta=0.0, *, out=None, stream=None, explain=False,
         backend="auto", mainloop=None, config=None, bias=None, activation=None,
         epilogue=None, **tensors):
    """``D = alpha * A @ B + beta * C`` on the GPU (optionally fused with a bias, an activation
    or any EVT epilogue tree); returns D (with ``explain=True``: ``(D, choice)``).

    Arguments:

    - ``A`` ``(M, K)`` / ``(L, M, K)`` and ``B`` ``(K, N)`` / ``(L, K, N)`` — torch CUDA tensors
      or CuPy arrays of float16, bfloat16 (torch) or float32 (computed in tf32 on the SM80
      kernel), each with a unit stride in one of its matrix modes (row- or column-major, any
      leading dimension; ``x @ W.T`` is ``gemm(x, W.T)``, read in place).  Operands the
      Hopper kernel's TMA cannot read in place (row pitch not a multiple of 16 bytes) are
      copied into padded buffers for the call.
    - Batches broadcast as in ``torch.matmul``: a 2-D, batch-1 or stride-0 (``expand``)
      operand is one matrix for every batch of the other (``gemm(x, W.T)`` with ``x (L, M,
      K)`` is ``nn.Linear`` on a 3-D input: one GEMM on the folded ``(L*M, K)`` view when x,
      C and out fold; else one GEMM per batch).  Empty problems follow ``torch.mm``: M, N or
      L of 0 give the empty D; K of 0 gives ``D = act(beta * C + bias)``.
    - ``C``: D's shape and dtype; ``alpha``, ``beta``: real numbers.
    - ``out``: D, of A's dtype and the result's shape, not overlapping A, B or C (allocated
      row-major when None).
    - ``stream``: a torch stream, a CuPy stream or a raw ``CUstream`` handle; default: torch's
      current stream for torch tensors, CuPy's current stream for CuPy arrays.
    - ``bias`` (a length-N vector added to every row, or an ``(M, 1)`` column), ``activation``
      (``"relu"``, ``"gelu"``, ``"gelu_erf"``, ``"silu"``, ``"sigmoid"``, ``"identity"``) or
      ``epilogue`` (an EVT tree; its named tensors as keyword arguments): fused epilogues
      (docs/epilogue.md, "Fused GEMMs from one call").
    - ``backend``: ``"auto"`` (the Hopper kernel on sm_90 for 16-bit operands with a row-major
      out / C, else SM80), ``"sm80"`` or ``"sm90"`` (raises when the Hopper kernel cannot run
      the case); ``mainloop`` forces an SM80 mainloop, ``config`` a kernel configuration of
      either family (``make_gemm(...).config``, docs/compose_gemm.md).
    - ``explain``: also return a :class:`~cute_py.backends.cuda.gemm_api.GemmChoice` saying
      which kernel ran and why.

    Repeated calls with the same shapes, strides, dtypes and alignment classes reuse a cached
    launch plan (new tensors cost only their pointers).  Every mistake raises
    :class:`~cute_py.errors.LaunchError` naming the argument (``gemm: out ...``).

    Law: the result equals the float64 product within the dtype's rounding (fp32 accumulation).
    """
    if not _IMPL:
        _load()
    try:
        return _IMPL[0](A, B, C, alpha, beta, out, stream, explain, backend, mainloop, config,
                        bias, activation, epilogue, tensors)
    except CuteError:
        raise
    except Exception as e:  # no foreign exception reaches the caller (cute_py.errors.public's rule)
        raise LaunchError("gemm", "arguments", f"are invalid ({type(e).__name__}: "
                          f"{str(e)[:200]})") from e


def _load():
    try:
        from cute_py.backends.cuda.gemm_api import gemm_entry
    except ImportError as e:
        raise LaunchError("gemm", "backend", f"the CUDA backend cannot be loaded ({e}); install "
                          "the 'cuda' extra on a machine with a GPU") from None
    _IMPL.append(gemm_entry)
