"""Fused-epilogue GEMM variants for ``benchmarks/bench_gemm.py`` (provider ``variants()``) and a
standalone run (``python benchmarks/gemm_fused_variants.py``) that times the epilogue itself.

Cases (the issue's): ``D = relu(alpha * A@B + beta * C + bias)`` and ``D = gelu(A@B + bias)``.

- ``cublas+cupy``: cuBLAS GEMM (CuPy ``matmul``, fp16 out) followed by one fused CuPy
  elementwise kernel for the epilogue (what a user does today);
- ``ours-plain``: our Hopper GEMM with the plain TMA-store epilogue (``D = acc``);
- ``ours-unfused``: ``ours-plain`` followed by the same CuPy elementwise kernel;
- ``ours-fused``: our Hopper GEMM with the EVT tree fused into its TMA-store epilogue (the same
  mainloop configuration as ``ours-plain``, so the difference is the epilogue alone);
- ``ours-plain-pp`` / ``ours-fused-pp``: the same with the ping-pong schedule (64x256 tiles,
  one per consumer warpgroup: a warpgroup's epilogue runs while the other one computes; as
  many stages, up to 5, as fit beside the two epilogue regions) and its default epilogue
  configuration (``make_epilogue_config``: C loaded by the consumer threads with 16-byte quad
  loads, ``load_path="direct"``);
- ``ours-fused-pp-reuse`` / ``ours-fused-pp-tma``: ping-pong with C TMA-loaded into smem, D
  written into C's buffer (5 stages fit), or in its own buffers (4 stages);
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


def _epilogue_kernel(case):
    import cupy as cp
    if case == "gelu_bias":
        return cp.ElementwiseKernel("T d, T b", "T y",
                                    f"float x = (float)d + (float)b; y = (T)({_GELU});",
                                    "cute_bench_gelu_bias")
    return cp.ElementwiseKernel("T d, T c, T b, float32 alpha, float32 beta", "T y",
                                "float x = alpha * (float)d + beta * (float)c + (float)b;"
                                " y = (T)(x > 0.0f ? x : 0.0f);", "cute_bench_relu_lc")


def _cublas_cupy(case):
    def make(M, N, K, dtype):
        import cupy as cp
        rng = cp.random.default_rng(0)
        A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        B = rng.standard_normal((K, N), dtype=cp.float32).astype(cp.float16)
        C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
        bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
        D = cp.empty((M, N), cp.float16)
        k = _epilogue_kernel(case)
        if case == "gelu_bias":
            def run():
                cp.matmul(A, B, out=D)
                k(D, bias[None, :], D)
        else:
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


def _sm90_config(tree, prefetch_l2=False, schedule="cooperative", l2_evict_first=False,
                 reuse_smem_c=False, load_path=None, **over):
    """The Hopper GEMM configuration with ``tree`` as its TMA-store epilogue (``None``: D = acc).
    Plain and fused runs use the same mainloop configuration, so their difference is the
    epilogue alone.  ``schedule="pingpong"``: 64x256 tiles, one per warpgroup."""
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90GemmConfig, make_epilogue_config
    tile_n = over.pop("tile_n", 256)
    tile_m = over.pop("tile_m", 128 if schedule == "cooperative" else 64)
    pp = schedule == "pingpong"
    if pp:
        over.setdefault("group_m", 16)
    opts = dict(prefetch_l2=prefetch_l2, reuse_smem_c=reuse_smem_c, load_path=load_path)
    cfg = Sm90GemmConfig(tile_m=tile_m, tile_n=tile_n, schedule=schedule,
                         epi=make_epilogue_config(tree, tile_m, tile_n, schedule=schedule,
                                                  l2_evict_first=l2_evict_first,
                                                  **{k: v for k, v in opts.items() if v}),
                         **over)
    return cfg.fit_stages(5) if pp and "stages" not in over else cfg


def _operands(M, N, K, case):
    import cupy as cp
    rng = cp.random.default_rng(0)
    A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
    B_nk = rng.standard_normal((N, K), dtype=cp.float32).astype(cp.float16)  # K-major B
    C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
    bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
    D = cp.empty((M, N), cp.float16)
    tensors = {"bias": bias}
    if case == "relu_lincomb_bias":
        tensors.update(C=C, alpha=1.5, beta=0.5)
    return A, B_nk, D, tensors


def _ours(case, tree_case, prefetch_l2=False, schedule="cooperative", l2_evict_first=False,
          reuse_smem_c=False, load_path=None):
    """Our Hopper GEMM with the EVT epilogue of ``tree_case`` ("store" = plain D = acc) on the
    operands of ``case``; None when the Hopper kernel is not installed."""
    try:
        from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    except Exception:
        return None

    def make(M, N, K, dtype):
        A, B_nk, D, tensors = _operands(M, N, K, case)
        g = Sm90Gemm(_sm90_config(_tree(tree_case), prefetch_l2=prefetch_l2,
                                  schedule=schedule, l2_evict_first=l2_evict_first,
                                  reuse_smem_c=reuse_smem_c, load_path=load_path))
        used = _tree(tree_case).signature
        return g.prepare(A, B_nk, D, tensors={k: v for k, v in tensors.items() if k in used})
    return make


def _ours_unfused(case):
    """Our plain Hopper GEMM followed by the same CuPy elementwise kernel cuBLAS users run."""
    try:
        from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    except Exception:
        return None

    def make(M, N, K, dtype):
        A, B_nk, D, t = _operands(M, N, K, case)
        plain = Sm90Gemm(_sm90_config(None)).prepare(A, B_nk, D)
        k = _epilogue_kernel(case)
        if case == "gelu_bias":
            def run():
                plain()
                k(D, t["bias"][None, :], D)
        else:
            def run():
                plain()
                k(D, t["C"], t["bias"][None, :], np.float32(1.5), np.float32(0.5), D)
        return run
    return make


def check_fused(M=517, N=392, K=264, case="relu_lincomb_bias", schedule="cooperative"):
    """Relative error of the fused kernel against a float64 NumPy reference (odd sizes)."""
    import cupy as cp
    A, B_nk, D, t = _operands(M, N, K, case)
    D.fill(cp.float16(float("nan")))
    used = _tree(case).signature
    _ours(case, case)  # import check
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    Sm90Gemm(_sm90_config(_tree(case), schedule=schedule)).prepare(
        A, B_nk, D, tensors={k: v for k, v in t.items() if k in used})()
    acc = cp.asnumpy(A).astype(np.float64) @ cp.asnumpy(B_nk).astype(np.float64).T
    bias = cp.asnumpy(t["bias"]).astype(np.float64)[None, :]
    if case == "gelu_bias":
        x = acc + bias
        ref = 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    else:
        x = 1.5 * acc + 0.5 * cp.asnumpy(t["C"]).astype(np.float64) + bias
        ref = np.maximum(x, 0)
    got = cp.asnumpy(D).astype(np.float64)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def variants():
    """``[(name, case, make)]`` for bench_gemm.py; cases without our fused GEMM are left out."""
    out = [("cublas", "plain", _cublas_only()), ("epilogue-only", "store", _epilogue_only("store"))]
    plain = _ours("gelu_bias", "store")
    if plain is not None:
        out.append(("ours-plain", "plain", plain))
        out.append(("ours-plain-pp", "plain", _ours("gelu_bias", "store", schedule="pingpong")))
        out.append(("ours-plain-ef", "plain", _ours("gelu_bias", "store", l2_evict_first=True)))
    for case in CASES:
        out.append(("cublas+cupy", case, _cublas_cupy(case)))
        out.append(("epilogue-only", case, _epilogue_only(case)))
        for name, make in (("ours-unfused", _ours_unfused(case)), ("ours-fused", _ours(case, case)),
                           ("ours-fused-pp", _ours(case, case, schedule="pingpong")),
                           ("ours-fused-ef", _ours(case, case, l2_evict_first=True)),
                           ("ours-fused-pp-ef", _ours(case, case, schedule="pingpong",
                                                      l2_evict_first=True))) + (
                (("ours-fused-pp-reuse", _ours(case, case, schedule="pingpong",
                                               reuse_smem_c=True, l2_evict_first=True)),
                 ("ours-fused-pp-tma", _ours(case, case, schedule="pingpong",
                                             load_path="tma")))
                if case == "relu_lincomb_bias" else ()):
            if make is not None:
                out.append((name, case, make))
    return out


def main(sizes=(4096, 8192), timing="stream", rounds=21, reps=None):
    """Check the fused kernel on odd sizes, time every variant, print the issue's ratios.

    ``timing="stream"`` (default): ``rounds`` rounds of ``reps`` (default: about 4 ms worth)
    back-to-back calls of every variant
    (``gemm_majors.interleaved``: host launch time hidden as in a real stream, thermal / power
    phases shared by all variants); ``"synced"``: one call per event pair (adds each provider's
    host time, e.g. CuPy's two launches for cuBLAS + elementwise).  The ratios:
    fused overhead over our plain GEMM (target <= 3%) and cuBLAS+CuPy / ours-fused (target for
    bias+GELU: >= 1.35x at 4096^3, >= 1.25x at 8192^3)."""
    for case in CASES:
        for sched in ("cooperative", "pingpong"):
            err = check_fused(case=case, schedule=sched)
            print(f"check ours-fused {case:18s} {sched:11s} 517x392x264 rel err {err:.2e}",
                  flush=True)
            if not err < 2e-3:
                raise SystemExit(f"ours-fused {case} {sched} is wrong (rel err {err})")
    import os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # sibling benchmarks
    rows = {}
    for n in sizes:
        if timing == "synced":
            from gemm_sm90_variants import time_fn
            for name, case, make in variants():
                fn = make(n, n, n, "float16")
                med, lo, hi = (1e3 * t for t in time_fn(fn))      # ms -> us
                rows[(n, name, case)] = med
                tf = 2 * n ** 3 / med / 1e6
                print(f"{n:5d} {name:14s} {case:18s} median {med:9.1f} us  (min {lo:.1f}, "
                      f"max {hi:.1f})  {tf:6.0f} TFLOP/s", flush=True)
        else:
            from gemm_majors import interleaved
            fns = {(name, case): make(n, n, n, "float16") for name, case, make in variants()}
            # ~4 ms of back-to-back calls per variant and round (20 calls at 4096^3, 3 at 8192^3):
            # short rounds let clock ramps decide the medians (6 x 5 calls gave +-3% swings)
            r = reps or max(3, round(20 * (4096 / n) ** 3))
            for (name, case), ms in interleaved(fns, rounds, r).items():
                med = ms * 1e3
                rows[(n, name, case)] = med
                print(f"{n:5d} {name:14s} {case:18s} median {med:9.1f} us  "
                      f"{2 * n ** 3 / med / 1e6:6.0f} TFLOP/s", flush=True)
            del fns
        cub = rows.get((n, "cublas", "plain"))
        for sfx in ("", "-pp", "-ef", "-pp-reuse", "-pp-tma"):
            # a fused variant is compared with the plain GEMM of its schedule
            base = sfx if (n, "ours-plain" + sfx, "plain") in rows else sfx[:3]
            plain = rows.get((n, "ours-plain" + base, "plain"))
            if plain and cub and base == sfx:
                print(f"{n:5d} ours-plain{sfx} vs cuBLAS: {cub / plain:.3f}x")
            for case in CASES:
                fused = rows.get((n, "ours-fused" + sfx, case))
                if fused is None:
                    continue
                if plain:
                    print(f"{n:5d} {case:18s} fused{sfx} overhead over ours-plain{base}: "
                          f"{100 * (fused / plain - 1):+.1f}%")
                cc = rows.get((n, "cublas+cupy", case))
                if cc:
                    print(f"{n:5d} {case:18s} cuBLAS+CuPy / ours-fused{sfx}: {cc / fused:.3f}x"
                          + (f"   (cuBLAS+CuPy / cuBLAS alone: {cc / cub:.3f}x)" if cub
                             else ""))
        plain = rows.get((n, "ours-plain", "plain"))
        for case in CASES:
            fused = rows.get((n, "ours-fused", case))
            uf = rows.get((n, "ours-unfused", case))
            if uf and fused:
                print(f"{n:5d} {case:18s} ours-unfused / ours-fused: {uf / fused:.3f}x")
    return rows


if __name__ == "__main__":
    sizes = tuple(int(x) for x in sys.argv[1:] if x.isdigit()) or (4096, 8192)
    main(sizes, timing="synced" if "--synced" in sys.argv else "stream")
