"""cProfile of cached ``cute_py.gemm`` calls on one shape (host time: where the microseconds go).

Usage: ``python benchmarks/profile_call.py M N K [--layout AB|xWT] [--calls 200]``; torch fp16
tensors, data standard normal; prints the wall time per call and the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time

import torch

import cute_py as cute


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("M", type=int)
    ap.add_argument("N", type=int)
    ap.add_argument("K", type=int)
    ap.add_argument("--layout", default="AB", choices=("AB", "xWT"))
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA GPU")
        return 0
    A = torch.randn(a.M, a.K, device="cuda", dtype=torch.float16)
    B = torch.randn(a.K, a.N, device="cuda", dtype=torch.float16) if a.layout == "AB" else \
        torch.randn(a.N, a.K, device="cuda", dtype=torch.float16).T
    D = torch.empty(a.M, a.N, device="cuda", dtype=torch.float16)
    _, choice = cute.gemm(A, B, explain=True)
    print(choice)
    for _ in range(20):
        cute.gemm(A, B, out=D)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.calls):
        cute.gemm(A, B, out=D)
    torch.cuda.synchronize()
    print(f"wall per call: {(time.perf_counter() - t0) / a.calls * 1e6:.1f} us")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(a.calls):
        cute.gemm(A, B, out=D)
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
