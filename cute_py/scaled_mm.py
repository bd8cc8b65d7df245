"""The scaled FP8 GEMM: ``cute_py.scaled_mm(A, B, scale_a, scale_b, ...)``.

The implementation lives in the CUDA backend (``cute_py.backends.cuda.scaled_mm_api``) and is
imported on the first call: the algebra stays importable on a machine without CUDA.
"""

from __future__ import annotations

from cute_py.errors import CuteError, LaunchError

__all__ = ["scaled_mm"]

_IMPL: list = []


def scaled_mm(A, B, scale_a, scale_b, *, out_dtype="bfloat16", bias=None, out=None,
              stream=None, use_fast_accum=False, scale_result=None, amax=None):
    """``D = scale(A @ B) (+ bias)`` for 8-bit A and B on the Hopper GPU (fp32 accumulation);
    returns D.

    Arguments (as ``torch._scaled_mm``):

    - ``A`` ``(M, K)`` row-major, ``torch.float8_e4m3fn`` or ``torch.float8_e5m2``;
    - ``B`` ``(K, N)`` K-major: ``W.T`` of a row-major ``(N, K)`` W (8-bit wgmma reads only
      K-major operands: an M- / N-major operand is refused, naming it); A and B may mix e4m3
      and e5m2; K a multiple of 16, row pitches multiples of 16 bytes;
    - ``scale_a``, ``scale_b``: float32 CUDA tensors whose shapes pick the scaling --
      per-tensor: one element each (read on the device, no host sync); row-wise: ``(M, 1)``
      and ``(1, N)``; block-wise (DeepGEMM): ``(M, ceil(K/128))`` (1x128 blocks of A) and
      ``(ceil(N/128), ceil(K/128))`` (128x128 blocks of W), any strides.  From torch's
      DeepSeek recipe (``torch._scaled_mm`` with ``scale_a`` M-major and ``scale_b``
      ``(K/128, N/128)``): pass the same ``scale_a`` and ``scale_b.t()`` (a view; a
      non-square ``scale_b`` left in torch's orientation is refused, naming it).  An
      M-major ``scale_a`` (strides ``(1, M)``) is also the faster one: a warp's scale loads
      coalesce (0.4-1.5%, ``docs/performance.md``, "FP8 GEMM", v29);
    - ``out_dtype``: ``"bfloat16"``, ``"float16"``, ``"float32"``, or 8-bit
      ``"float8_e4m3fn"`` / ``"float8_e5m2"`` (or the torch dtypes; an 8-bit D is rounded to
      nearest even and saturated to the format's largest finite value, and needs N a multiple
      of 16); ``bias``: a length-N vector of ``out_dtype`` (bfloat16, float16 or float32 for an
      8-bit D) added after scaling; ``out``: a row-major ``(M, N)`` tensor of ``out_dtype``
      (allocated when None); ``stream``: a torch stream or raw handle;
    - ``scale_result`` (8-bit D only): a one-element float32 tensor, ``D = convert(v *
      scale_result)`` with ``v`` the scaled product plus bias (cuBLASLt's D scale; torch
      2.11's ``_scaled_mm`` was measured to ignore its ``scale_result``); ``amax``: a
      one-element float32 tensor that receives ``max |v|`` over D (before ``scale_result``:
      the next layer's scale is ``amax / 448``), computed in the epilogue;
    - ``use_fast_accum`` (per-tensor / row-wise, as torch's): one accumulator over all of K
      (faster, 128x256 tiles; the tensor core's accumulator keeps fewer bits than fp32, so the
      error grows with K).  Default False: each 128-element k-block is summed apart and added
      into an fp32 total (block-wise scaling always does this).

    ``D[r, c] = sum_kb sa[r, kb] * sb[c // 128, kb] * sum_{k in kb} A[r, k] B[k, c]`` (block
    mode; the others are the special cases ``sa[r] * sb[c] * sum_k ...``), computed in fp32
    and rounded once to ``out_dtype``.  Repeated calls with torch tensors of the same dtypes,
    shapes, strides and alignments (new pointers) reuse a cached launch plan; ``out`` must not
    overlap an input.  Every mistake raises
    :class:`~cute_py.errors.LaunchError` naming the argument (``scaled_mm: scale_a ...``).
    Reference: :func:`cute_py.fp8.scaled_mm_reference` (float64).
    """
    if not _IMPL:
        _load()
    try:
        return _IMPL[0](A, B, scale_a, scale_b, out_dtype, bias, out, stream, use_fast_accum,
                        scale_result, amax)
    except CuteError:
        raise
    except Exception as e:  # no foreign exception reaches the caller (cute_py.errors.public's rule)
        raise LaunchError("scaled_mm", "arguments", f"are invalid ({type(e).__name__}: "
                          f"{str(e)[:200]})") from e


def _load():
    try:
        from cute_py.backends.cuda.scaled_mm_api import scaled_mm as impl
    except ImportError as e:
        raise LaunchError("scaled_mm", "backend", f"the CUDA backend cannot be loaded ({e}); "
                          "install the 'cuda' extra on a machine with a GPU") from None
    _IMPL.append(impl)
