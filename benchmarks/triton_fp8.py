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
import triton.language as tl

from triton_matmul import grouped_tile, load_k_block, store_tile, tile_pointers

__all__ = ["scaled_mm", "MODES"]

#: scaling modes and the kernel's constexpr for each
MODES = {"tensor": 0, "row": 1, "block": 2}


def _configs(block: bool):
    shapes = ((128, 128, 128, 4, 8), (128, 256, 128, 3, 8), (128, 64, 128, 4, 4),
              (64, 128, 128, 4, 4)) if block else \
        ((128, 256, 128, 3, 8), (256, 128, 128, 3, 8), (128, 128, 128, 4, 8),
         (128, 128, 128, 4, 4), (128, 256, 64, 4, 8))
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                          num_stages=st, num_warps=nw) for bm, bn, bk, st, nw in shapes]


def _body(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_am, stride_ak, stride_bk,
          stride_bn, stride_cm, stride_cn, sa_m, sa_k, sb_n, sb_k, MODE: tl.constexpr,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
          GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am, offs_bn, a_ptrs, b_ptrs = tile_pointers(
        a_ptr, b_ptr, pid_m, pid_n, M, N, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a, b = load_k_block(a_ptrs, b_ptrs, k, K, BLOCK_K)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
        if MODE == 2:       # BLOCK_K == 128: k-block k's scales
            s_a = tl.load(sa_ptr + offs_am * sa_m + k * sa_k)
            s_b = tl.load(sb_ptr + (offs_bn // 128) * sb_n + k * sb_k)
            acc += tl.dot(a, b) * (s_a[:, None] * s_b[None, :])
        else:
            acc = tl.dot(a, b, acc)
    if MODE == 0:
        acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
    elif MODE == 1:
        acc = acc * (tl.load(sa_ptr + offs_am * sa_m)[:, None] *
                     tl.load(sb_ptr + offs_bn * sb_n)[None, :])
    store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_M, BLOCK_N)


_KEY = ["M", "N", "K", "MODE"]
_scaled = triton.autotune(configs=_configs(False), key=_KEY)(triton.jit(_body))
_blocked = triton.autotune(configs=_configs(True), key=_KEY)(triton.jit(_body))


def scaled_mm(a, b, scale_a, scale_b, mode, out=None):
    """``scale(a @ b)`` in bfloat16 (see the module docstring)."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "inner dimensions differ"
    c = out if out is not None else torch.empty((M, N), device=a.device,
                                                dtype=torch.bfloat16)
    if mode == "tensor":
        st = (0, 0, 0, 0)
    elif mode == "row":
        st = (scale_a.stride(0), 0, scale_b.stride(1), 0)
    else:
        st = (scale_a.stride(0), scale_a.stride(1), scale_b.stride(0), scale_b.stride(1))
    kern = _blocked if mode == "block" else _scaled
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    kern[grid](a, b, c, scale_a, scale_b, M, N, K, a.stride(0), a.stride(1), b.stride(0),
               b.stride(1), c.stride(0), c.stride(1), *st, MODE=MODES[mode])
    return c
