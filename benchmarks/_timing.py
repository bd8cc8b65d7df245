"""Timing helpers shared by the benchmarks (CUDA through torch)."""

from __future__ import annotations

import subprocess
import time

__all__ = ["wall_us", "nvidia_smi", "clocks", "CLOCKS_QUERY"]

#: the GPU state the benchmarks print with their numbers
CLOCKS_QUERY = ("name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,"
                "clocks_throttle_reasons.active")


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


def nvidia_smi(query: str) -> str:
    """``nvidia-smi --query-gpu=<query>`` now, CSV without header (one line per GPU), or why
    not (no nvidia-smi here)."""
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        return r.stdout.strip() or r.stderr.strip()
    except Exception as e:          # no nvidia-smi: say so
        return f"nvidia-smi unavailable: {type(e).__name__}: {e}"


def clocks() -> str:
    """The GPU's SM clock / power / throttle state (:data:`CLOCKS_QUERY`), labeled."""
    return f"[{CLOCKS_QUERY}] " + nvidia_smi(CLOCKS_QUERY)
