"""Fused-epilogue GEMM variants for ``benchmarks/bench_gemm.py`` (provider ``variants()``) and a
standalone run (``python benchmarks/gemm_fused_variants.py``) that times the epilogue itself.

Cases (the issue's): ``D = relu(alpha * A@B + beta * C + bias)`` and ``D = gelu(A@B + bias)``.

- ``cublas+cupy``: cuBLAS GEMM (CuPy ``matmul``, fp16 out) followed by one fused CuPy
  elementwise kernel for the epilogue (what a user does today);
- ``ours-fused``: our Hopper GEMM with this EVT epilogue, when the Hopper kernel exposes an
  epilogue hook (``backends/cuda/kernels/gemm_sm90*.py``); skipped otherwise;
- ``epilogue-only``: the standalone SM90 epilogue kernel (accumulator read from global memory,
  then the full smem-staged TMA path), for the plain store tree and for each fused tree: the
  difference is what fusion adds to the epilogue.

Each variant is ``(name, case, make)`` with ``make(M, N, K, dtype) -> callable``; the callable
runs the operation once on device arrays created by ``make`` (fresh random data).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["variants", "CASES", "main"]

CASES = ("relu_lincomb_bias", "gelu_bias")

_GELU = "0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)))"


def _tree(case):
    from cute_py.epilogue import evt
    if case == "relu_lincomb_bias":
        return evt.lin_comb_bias_elt_act("relu", bias="col")
    if case == "gelu_bias":
        return evt.lin_comb_bias_elt_act("gelu", bias="col", alpha=1.0, beta=0.0)
    if case == "store":
        return evt.AccFetch()
    raise ValueError(case)


def _cublas_cupy(case):
    def make(M, N, K, dtype):
        import cupy as cp
        rng = cp.random.default_rng(0)
        A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        B = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
        C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
        bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
        D = cp.empty((M, N), cp.float16)
        if case == "gelu_bias":
            k = cp.ElementwiseKernel("T d, T b", "T y",
                                     f"float x = (float)d + (float)b; y = (T)({_GELU});",
                                     "cute_bench_gelu_bias")

            def run():
                cp.matmul(A, B, out=D)
                k(D, bias[None, :], D)
        else:
            k = cp.ElementwiseKernel("T d, T c, T b, float32 alpha, float32 beta", "T y",
                                     "float x = alpha * (float)d + beta * (float)c + (float)b;"
                                     " y = (T)(x > 0.0f ? x : 0.0f);", "cute_bench_relu_lc")

            def run():
                cp.matmul(A, B, out=D)
                k(D, C, bias[None, :], np.float32(1.5), np.float32(0.5), D)
        return run
    return make


def _cublas_only():
    def make(M, N, K, dtype):
        import cupy as cp
        rng = cp.random.default_rng(0)
        A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        B = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
        D = cp.empty((M, N), cp.float16)
        return lambda: cp.matmul(A, B, out=D)
    return make


def _epilogue_only(case):
    def make(M, N, K, dtype):
        import cupy as cp
        from cute_py.backends.cuda.epilogue.fragment import wgmma_fragment
        from cute_py.backends.cuda.epilogue.runtime import EpilogueTestKernel
        from cute_py.backends.cuda.epilogue.sm90 import EpilogueConfig
        tree = _tree(case)
        k = EpilogueTestKernel(EpilogueConfig(tree, wgmma_fragment(2, 256), 128, 256,
                                              stages_c=2, stages_d=2))
        rng = cp.random.default_rng(0)
        acc = rng.standard_normal((M, N), dtype=cp.float32)
        D = cp.empty((M, N), cp.float16)
        args = {}
        for name, (role, dt) in tree.signature.items():
            if role == "src":
                args[name] = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
            elif role == "row":
                args[name] = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
            elif role == "scalar":
                args[name] = 1.0
        return lambda: k(acc, D, **args)
    return make


def _ours_fused(case):
    """Our Hopper GEMM with the EVT epilogue, if its kernel module offers a fused entry point
    (``gemm_sm90_fused(A, B, D, tree, **tensors)``); None otherwise."""
    try:
        from cute_py.backends.cuda.kernels import gemm_sm90  # noqa: F401
        fn = getattr(gemm_sm90, "gemm_sm90_fused", None)
    except Exception:
        fn = None
    if fn is None:
        return None

    def make(M, N, K, dtype):
        import cupy as cp
        rng = cp.random.default_rng(0)
        A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        B = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
        C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
        bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
        D = cp.empty((M, N), cp.float16)
        extra = {"C": C, "alpha": 1.5, "beta": 0.5} if case == "relu_lincomb_bias" else {}
        return lambda: fn(A, B, D, _tree(case), bias=bias, **extra)
    return make


def variants():
    """``[(name, case, make)]`` for bench_gemm.py; cases without our fused GEMM are left out."""
    out = [("cublas", "plain", _cublas_only()), ("epilogue-only", "store", _epilogue_only("store"))]
    for case in CASES:
        out.append(("cublas+cupy", case, _cublas_cupy(case)))
        out.append(("epilogue-only", case, _epilogue_only(case)))
        ours = _ours_fused(case)
        if ours is not None:
            out.append(("ours-fused", case, ours))
    return out


def _time(fn, reps=30, warmup=5):
    import cupy as cp
    for _ in range(warmup):
        fn()
    cp.cuda.runtime.deviceSynchronize()
    ts = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    return float(np.median(ts)), float(np.min(ts)), float(np.max(ts))


def main(sizes=(4096, 8192)):
    rows = []
    for n in sizes:
        for name, case, make in variants():
            fn = make(n, n, n, "float16")
            med, lo, hi = _time(fn)
            rows.append((n, name, case, med, lo, hi))
            print(f"{n:5d} {name:14s} {case:18s} median {med:9.1f} us  (min {lo:.1f}, max {hi:.1f})",
                  flush=True)
    return rows


if __name__ == "__main__":
    sizes = tuple(int(x) for x in sys.argv[1:]) or (4096, 8192)
    main(sizes)
