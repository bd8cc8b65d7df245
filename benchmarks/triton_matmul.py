"""A standard Triton matmul (the tutorial's grouped-ordering kernel), for bench_gemm.py.

``matmul(a, b)`` takes torch CUDA tensors (fp16 / bf16, any strides) and returns ``a @ b`` in
the input dtype with fp32 accumulation.  Importing this file needs Triton and torch.
"""

import torch
import triton
import triton.language as tl

__all__ = ["matmul", "grouped_tile", "tile_pointers", "load_k_block", "store_tile"]


def _configs():
    out = []
    for bm, bn, bk, st, nw in ((128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                               (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)):
        out.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                 num_stages=st, num_warps=nw))
    return out


@triton.jit
def grouped_tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """``(pid_m, pid_n)``: this program's tile in the tutorial's grouped ordering (groups of
    ``GROUP_M`` tile-rows, column by column inside a group)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def tile_pointers(a_ptr, b_ptr, pid_m, pid_n, M, N, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """``(offs_am, offs_bn, a_ptrs, b_ptrs)``: the tile's rows of A and columns of B (wrapped
    into the problem) and the pointers of its first k-block of A and B."""
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    return offs_am, offs_bn, a_ptrs, b_ptrs


@triton.jit
def load_k_block(a_ptrs, b_ptrs, k, K, BLOCK_K: tl.constexpr):
    """``(a, b)``: k-block ``k`` of the tile's A and B (zero past K) at the pointers of
    :func:`tile_pointers` advanced by ``k`` k-blocks (the caller advances them)."""
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
    b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
    return a, b


@triton.jit
def store_tile(c_ptr, c, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    """Stores tile ``(pid_m, pid_n)`` of C (masked to ``M x N``), converted to C's type."""
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c.to(c_ptr.dtype.element_ty),
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_am, offs_bn, a_ptrs, b_ptrs = tile_pointers(
        a_ptr, b_ptr, pid_m, pid_n, M, N, stride_am, stride_ak, stride_bk, stride_bn,
        BLOCK_M, BLOCK_N, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a, b = load_k_block(a_ptrs, b_ptrs, k, K, BLOCK_K)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    store_tile(c_ptr, acc, pid_m, pid_n, M, N, stride_cm, stride_cn, BLOCK_M, BLOCK_N)


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` (2-D) with the Triton kernel above."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "inner dimensions differ"
    c = out if out is not None else torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                         c.stride(0), c.stride(1))
    return c
