"""Timing helpers shared by the benchmarks (CUDA through torch)."""

from __future__ import annotations

import time

__all__ = ["wall_us"]


def wall_us(fn, n: int = 100) -> float:
    """Wall microseconds per call of ``n`` back-to-back calls of ``fn`` (the GPU drained before
    and after: asynchronous work is included)."""
    import torch
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6
