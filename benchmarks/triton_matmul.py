"""A standard Triton matmul (the tutorial's grouped-ordering kernel), for bench_gemm.py.

``matmul(a, b)`` takes torch CUDA tensors (fp16 / bf16, any strides) and returns ``a @ b`` in
the input dtype with fp32 accumulation.  Importing this file needs Triton and torch.
"""

import torch
import triton
import triton.language as tl

__all__ = ["matmul", "kernel_body", "launch", "MODES"]


def _configs():
    out = []
    for bm, bn, bk, st, nw in ((128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                               (128, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)):
        out.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                                 num_stages=st, num_warps=nw))
    return out


#: the kernel's scaling modes (``matmul`` runs "none"; ``triton_fp8.scaled_mm`` the others)
MODES = {"tensor": 0, "row": 1, "block": 2, "none": 3}


def kernel_body(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                stride_bn, stride_cm, stride_cn, sa_m, sa_k, sb_n, sb_k, MODE: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr):
    """The tutorial's grouped-ordering matmul, ``C = scale(A @ B)`` in fp32 then C's type:
    ``MODE`` (:data:`MODES`) 3 no scales; 0 one scale each (``sa_ptr[0] * sb_ptr[0]``), 1
    per row of A and column of B (strides ``sa_m``, ``sb_n``), both applied once to the
    accumulator; 2 per 128-deep k-block (``BLOCK_K`` = 128): ``sa[m, k]`` and ``sb[n // 128,
    k]`` scale each k-block's fresh ``tl.dot`` before it is added into the total.  Un-jitted:
    the autotuned kernels wrap it (``triton.jit``)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        if MODE == 2:       # BLOCK_K == 128: k-block k's scales
            s_a = tl.load(sa_ptr + offs_am * sa_m + k * sa_k)
            s_b = tl.load(sb_ptr + (offs_bn // 128) * sb_n + k * sb_k)
            acc += tl.dot(a, b) * (s_a[:, None] * s_b[None, :])
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if MODE == 0:
        acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
    elif MODE == 1:
        acc = acc * (tl.load(sa_ptr + offs_am * sa_m)[:, None] *
                     tl.load(sb_ptr + offs_bn * sb_n)[None, :])
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


_matmul_kernel = triton.autotune(configs=_configs(), key=["M", "N", "K"])(
    triton.jit(kernel_body))


def launch(kernel, a, b, c, scale_a, scale_b, scale_strides, mode):
    """Runs an autotuned :func:`kernel_body` on ``c = scale(a @ b)`` (2-D torch tensors)."""
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    kernel[grid](a, b, c, scale_a, scale_b, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                 b.stride(1), c.stride(0), c.stride(1), *scale_strides, MODE=MODES[mode])
    return c


def matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` (2-D) with the Triton kernel above."""
    M, K = a.shape
    K2, N = b.shape
    assert K == K2, "inner dimensions differ"
    c = out if out is not None else torch.empty((M, N), device=a.device, dtype=a.dtype)
    return launch(_matmul_kernel, a, b, c, c, c, (0, 0, 0, 0), "none")
