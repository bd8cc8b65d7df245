"""A Triton FP8 matmul (the tutorial's grouped-ordering kernel on 8-bit operands), for
bench_fp8.py.

``scaled_mm(a, b, scale_a, scale_b, mode)`` takes torch CUDA tensors: ``a`` ``(M, K)`` and
``b`` ``(K, N)`` in ``float8_e4m3fn`` / ``float8_e5m2`` (any strides), float32 scales, and
returns ``D = scale(a @ b)`` in bfloat16 with fp32 accumulation:

- ``mode="tensor"``: one-element ``scale_a`` and ``scale_b``, applied once to the accumulator;
- ``mode="row"``: ``scale_a`` ``(M, 1)``, ``scale_b`` ``(1, N)``, applied once;
- ``mode="block"``: ``scale_a`` ``(M, ceil(K/128))`` (1x128 blocks of a), ``scale_b``
  ``(ceil(N/128), ceil(K/128))`` (128x128 blocks of ``b.T``), any strides: every 128-deep
  k-block's ``tl.dot`` is a fresh fp32 product, scaled and added into the fp32 total (the
  promotion of DeepGEMM and cute_py's block-scaled kernel).

Per-tensor and row-wise accumulate in one ``tl.dot`` chain (Triton's default FP8 accumulation
on Hopper).  Autotuned per (M, N, K) over the FP8 configurations of Triton's matmul tutorial
(128-deep k-blocks, 128- and 256-wide tiles).  Importing this file needs Triton and torch.
"""

import torch
import triton

from triton_matmul import MODES, kernel_body, launch

__all__ = ["scaled_mm", "MODES"]


def _configs(block: bool):
    shapes = ((128, 128, 128, 4, 8), (128, 256, 128, 3, 8), (128, 64, 128, 4, 4),
              (64, 128, 128, 4, 4)) if block else \
        ((128, 256, 128, 3, 8), (256, 128, 128, 3, 8), (128, 128, 128, 4, 8),
         (128, 128, 128, 4, 4), (128, 256, 64, 4, 8))
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                          num_stages=st, num_warps=nw) for bm, bn, bk, st, nw in shapes]


_KEY = ["M", "N", "K", "MODE"]
_scaled = triton.autotune(configs=_configs(False), key=_KEY)(triton.jit(kernel_body))
_blocked = triton.autotune(configs=_configs(True), key=_KEY)(triton.jit(kernel_body))


def scaled_mm(a, b, scale_a, scale_b, mode, out=None):
    """``scale(a @ b)`` in bfloat16 (see the module docstring)."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "inner dimensions differ"
    if mode not in ("tensor", "row", "block"):
        raise ValueError(f"mode must be tensor, row or block, not {mode!r}")
    c = out if out is not None else torch.empty((M, N), device=a.device,
                                                dtype=torch.bfloat16)
    if mode == "tensor":
        st = (0, 0, 0, 0)
    elif mode == "row":
        st = (scale_a.stride(0), 0, scale_b.stride(1), 0)
    else:
        st = (scale_a.stride(0), scale_a.stride(1), scale_b.stride(0), scale_b.stride(1))
    return launch(_blocked if mode == "block" else _scaled, a, b, c, scale_a, scale_b, st, mode)
