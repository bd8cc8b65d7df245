"""A small driver for Nsight Compute: runs one GEMM a few times so ``ncu`` can profile it.

    ncu --clock-control none -k regex:cute_sm90 -c 1 --launch-skip 2 \\
        python benchmarks/profile_gemm.py ours 8192
    ncu --clock-control none -k regex:"gemm|nvjet|xmma" -c 1 --launch-skip 2 \\
        python benchmarks/profile_gemm.py cublas 8192

``ours`` is ``cute_py.gemm`` on fp16 (M, K) x (K, N)^T K-major operands (the Hopper kernel with
the TMA-store epilogue on an H100), ``cublas`` is ``cupy.matmul`` on the same operands.
Prints the median time of the launches (CuPy events) so a plain run also reports a number.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    which = argv[0] if argv else "ours"
    n = int(argv[1]) if len(argv) > 1 else 8192
    reps = int(argv[2]) if len(argv) > 2 else 5
    import cupy as cp
    rng = cp.random.default_rng(1)
    A = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
    Bt = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)   # (N, K)
    if which == "ours":
        from cute_py.backends.cuda.gemm_api import gemm_sm90
        D = cp.empty((n, n), dtype=cp.float16)
        fn = lambda: gemm_sm90(A, Bt, D)          # noqa: E731
    elif which == "cublas":
        B = Bt.T
        fn = lambda: cp.matmul(A, B)              # noqa: E731
    else:
        raise SystemExit(f"unknown target {which!r}: ours | cublas")
    from gemm_sm90_variants import time_fn
    t = time_fn(fn, reps, warmup=0)[0]   # no warm-up: the launch count ncu skips stays `reps`
    print(f"{which} {n}^3 fp16: median {t:.3f} ms = {2 * n ** 3 / t / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
