"""The shared GEMM benchmark: TFLOP/s of every variant, cuBLAS, Triton; ratios to cuBLAS.

    python benchmarks/bench_gemm.py [--quick] [--tune] [--check] [--json FILE]

Cases: 4096^3 and 8192^3 in fp16 and bf16, layouts TN and NN (BLAS column-major names:
TN = A K-major (row-major M x K) and B K-major; NN = A M-major and B K-major), plus an odd size
(4095 x 4097 x 4099 with 16-byte-aligned leading dimensions).  D is row-major, 16-bit.

Baselines: cuBLAS through ``cupy.matmul`` (fp16; CuPy has no bfloat16) and through
``torch.matmul`` (fp16 and bf16) when torch imports; Triton (``benchmarks/triton_matmul.py``)
when triton imports.  The ratio column is to cuBLAS (cupy for fp16, torch for bf16).

Variant-provider protocol
-------------------------
Besides our SM80 kernels, the benchmark imports, when the file exists, each of
``benchmarks/gemm_sm90_variants.py`` (Hopper engineer) and ``benchmarks/gemm_fused_variants.py``
(epilogue engineer).  Each exposes ``variants()`` returning an iterable of dicts::

    {"name": str,                       # a unique label, e.g. "sm90 ws-cooperative 128x256"
     "run": callable(A, B, dtype) -> zero-arg callable or None}

``A`` (M, K) and ``B`` (K, N) are CuPy arrays with the case's strides (fp16, or uint16 bf16 bit
patterns when ``dtype == "bf16"``).  ``run`` allocates what it needs and returns a callable that
performs one GEMM on the current stream (the benchmark times it with CUDA events), or None when
the variant does not support the case.  It should write a 16-bit row-major D.  Optional key
``"check": callable(A, B, dtype) -> D`` lets ``--check`` verify the result.
A provider that fails to import or raises is reported and skipped.

Also accepted (the epilogue engineer's form): a tuple ``(name, case, make)`` with
``make(M, N, K, dtype) -> zero-arg callable`` that creates its own fp16 data; such variants run
on the fp16 TN cases only and are labelled ``"name [case]"``.

Timing: 3 warm-ups, then the median of ``--reps`` event-timed bursts of 5 back-to-back calls
(per-call time; host launch time hidden as in a stream); TFLOP/s = 2MNK / time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SIZES = ((4096, 4096, 4096), (8192, 8192, 8192))
ODD = (4095, 4097, 4099)
LAYOUTS = {"TN": ("K", "K"), "NN": ("M", "K")}


# ------------------------------------------------------------------------------ inputs

def bf16_bits(x):
    import cupy as cp
    u = x.astype(cp.float32).view(cp.uint32)
    return ((u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16).astype(cp.uint16)


def make_operands(M, N, K, dtype, layout, seed=0):
    """A (M, K), B (K, N) with the layout's majors and 16-byte aligned leading dimensions."""
    import cupy as cp
    rng = cp.random.default_rng(seed)
    am, bm = LAYOUTS[layout]

    def rnd(r, c):
        x = rng.standard_normal((r, c), dtype=cp.float32)
        return x.astype(cp.float16) if dtype == "f16" else bf16_bits(x)

    def pad(n):
        return (n + 63) // 64 * 64
    A = rnd(M, pad(K))[:, :K] if am == "K" else rnd(K, pad(M))[:, :M].T
    B = rnd(N, pad(K))[:, :K].T if bm == "K" else rnd(K, pad(N))[:, :N]
    return A, B


def to_torch(X, dtype):
    import torch
    t = torch.as_tensor(X.view("int16") if dtype == "bf16" else X, device="cuda")
    return t.view(torch.bfloat16) if dtype == "bf16" else t


# ------------------------------------------------------------------------------ variants

def sm80_variants(tune: bool = False):
    """Our SM80 kernels: the default per mainloop, plus tuning candidates with --tune."""
    from dataclasses import replace
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80, GemmSm80Config
    from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config

    def make(mainloop=None, cfg_over=None, label=None):
        def run(A, B, dtype):
            import cupy as cp
            M, K = A.shape
            N = B.shape[1]
            D = cp.empty((M, N), dtype=cp.float16 if dtype == "f16" else cp.uint16)
            cfg = None
            if cfg_over is not None:
                cfg = GemmSm80Config(tile=cfg_over[0], warps=cfg_over[1], stages=cfg_over[2],
                                     mainloop=cfg_over[3])
            gemm_sm80(A, B, None, D, mainloop=mainloop, config=cfg, bf16=dtype == "bf16")
            return lambda: gemm_sm80(A, B, None, D, mainloop=mainloop, config=cfg,
                                     bf16=dtype == "bf16")
        return {"name": label, "run": run,
                "check": lambda A, B, dtype: _run_ret(run, A, B, dtype)}
    out = [make("multistage", label="sm80 multistage (default)"),
           make("pipelined", label="sm80 pipelined"),
           make("singlestage", label="sm80 singlestage")]
    if tune:
        for cand in (((128, 256, 32), (2, 4), 3, "multistage"),
                     ((128, 256, 32), (2, 4), 5, "multistage"),
                     ((128, 256, 64), (2, 4), 3, "multistage"),
                     ((128, 256, 64), (2, 4), 4, "multistage"),
                     ((256, 128, 32), (4, 2), 4, "multistage"),
                     ((256, 128, 64), (4, 2), 3, "multistage"),
                     ((128, 128, 32), (2, 2), 4, "multistage"),
                     ((128, 128, 64), (2, 2), 4, "multistage"),
                     ((128, 128, 32), (2, 2), 6, "multistage")):
            t = cand[0]
            out.append(make(cfg_over=cand, label=f"sm80 ms {t[0]}x{t[1]}x{t[2]} "
                                                 f"w{cand[1][0]}x{cand[1][1]} s{cand[2]}"))
    return out


def _run_ret(run, A, B, dtype):
    f = run(A, B, dtype)
    return f()


def baseline_variants():
    out = []
    try:
        import cupy as cp

        def cupy_run(A, B, dtype):
            if dtype != "f16":
                return None
            D = cp.empty((A.shape[0], B.shape[1]), cp.float16)
            return lambda: cp.matmul(A, B, out=D)
        out.append({"name": "cuBLAS (cupy.matmul)", "run": cupy_run})
    except ImportError:
        pass
    try:
        import torch

        def torch_run(A, B, dtype):
            a, b = to_torch(A, dtype), to_torch(B, dtype)
            d = torch.empty((a.shape[0], b.shape[1]), device="cuda", dtype=a.dtype)
            return lambda: torch.matmul(a, b, out=d)
        out.append({"name": "cuBLAS (torch.matmul)", "run": torch_run})
    except Exception:
        pass
    try:
        spec = importlib.util.spec_from_file_location("triton_matmul",
                                                      os.path.join(HERE, "triton_matmul.py"))
        tm = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tm)

        def triton_run(A, B, dtype):
            import torch
            a, b = to_torch(A, dtype), to_torch(B, dtype)
            d = torch.empty((a.shape[0], b.shape[1]), device="cuda", dtype=a.dtype)
            tm.matmul(a, b, d)  # autotune outside the timed region
            return lambda: tm.matmul(a, b, d)
        out.append({"name": "Triton (tutorial matmul)", "run": triton_run})
    except Exception as e:  # no triton / torch
        print(f"# Triton baseline unavailable: {type(e).__name__}: {e}")
    return out


def _normalize(v):
    """Accept the dict protocol, or the tuple protocol ``(name, case, make)`` with
    ``make(M, N, K, dtype) -> callable`` on the provider's own (fp16, row-major) data."""
    if isinstance(v, dict):
        return v
    name, case, make = v

    def run(A, B, dtype, make=make):
        if dtype != "f16" or not _is_tn(A, B):
            return None
        return make(A.shape[0], B.shape[1], A.shape[1], dtype)
    return {"name": f"{name} [{case}]", "run": run}


def _is_tn(A, B):
    return A.strides[1] == A.itemsize and B.strides[0] == B.itemsize


def provider_variants():
    out = []
    for fname in ("gemm_sm90_variants.py", "gemm_fused_variants.py"):
        path = os.path.join(HERE, fname)
        if not os.path.exists(path):
            continue
        try:
            spec = importlib.util.spec_from_file_location(fname[:-3], path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            for v in mod.variants():
                out.append(_normalize(v))
        except Exception:
            print(f"# provider {fname} failed:\n{traceback.format_exc()}")
    return out


# ------------------------------------------------------------------------------ timing

def time_callable(fn, reps=20, warmup=3, burst=5):
    """Median seconds per call over ``reps`` samples; each sample times ``burst`` back-to-back
    calls between two events, so a provider's host-side launch time overlaps the previous
    kernel as in a real stream (one call per event pair would add it to the kernel time:
    ~10% for cupy.matmul at 4096^3, see docs/performance.md, "Hopper GEMM", v3)."""
    import cupy as cp
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(burst):
            fn()
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e) * 1e-3 / burst)
    return statistics.median(times), times


def check_result(A, B, D, dtype):
    import cupy as cp
    def val(X):
        return ((X.astype(cp.uint32) << 16).view(cp.float32) if dtype == "bf16" else X).astype(cp.float64)
    ref = val(A) @ val(B)
    err = float(cp.linalg.norm(val(D) - ref) / cp.linalg.norm(ref))
    return err


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4096^3 fp16 TN only")
    ap.add_argument("--tune", action="store_true", help="also time SM80 tuning candidates")
    ap.add_argument("--check", action="store_true", help="verify each variant once (float64)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default=None, help="write all numbers here")
    ap.add_argument("--precompile", action="store_true",
                    help="compile our kernels for every case in parallel first")
    args = ap.parse_args(argv)

    import cupy as cp
    variants = sm80_variants(args.tune) + provider_variants() + baseline_variants()
    cases = []
    for (M, N, K) in SIZES:
        for dtype in ("f16", "bf16"):
            for layout in LAYOUTS:
                cases.append((M, N, K, dtype, layout))
    cases.append((*ODD, "f16", "TN"))
    if args.quick:
        cases = [(4096, 4096, 4096, "f16", "TN")]
    if args.precompile:
        from cute_py.backends.cuda.kernels import gemm_sm80 as g
        with g.plan_only() as planned:
            for (M, N, K, dtype, layout) in cases:
                A, B = make_operands(min(M, 256), min(N, 256), min(K, 256), dtype, layout)
                for v in variants:
                    if v["name"].startswith("sm80"):
                        try:
                            v["run"](A, B, dtype)
                        except Exception:
                            pass
        # plan with the real sizes: the tile choice depends on M, N
        with g.plan_only() as planned2:
            for (M, N, K, dtype, layout) in cases:
                from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config
                for ml in ("multistage", "pipelined", "singlestage", None):
                    c = default_config(M, N, K, dtype=dtype, out_dtype=dtype,
                                       a_major=LAYOUTS[layout][0], b_major=LAYOUTS[layout][1],
                                       mainloop=ml)
                    planned2.append(c)
        res = g.precompile(planned + planned2)
        for name, regs, spills in res:
            print(f"# compiled {name}: {regs} regs, {spills} spill bytes")
    rows, results = [], []
    for (M, N, K, dtype, layout) in cases:
        A, B = make_operands(M, N, K, dtype, layout)
        flops = 2.0 * M * N * K
        case = f"{M}x{N}x{K} {dtype} {layout}"
        res = {}
        for v in variants:
            if args.tune is False and v["name"].startswith("sm80 ms ") is True:
                continue
            if v["name"].startswith("sm80 ms ") and (dtype != "f16" or layout != "TN" or (M, N, K) == ODD):
                continue
            try:
                fn = v["run"](A, B, dtype)
                if fn is None:
                    continue
                t, _ = time_callable(fn, reps=args.reps)
                err = None
                if args.check and "check" in v:
                    D = v["check"](A, B, dtype)
                    err = check_result(A, B, D, dtype)
                res[v["name"]] = (flops / t / 1e12, t, err)
            except Exception as e:
                print(f"# {case} {v['name']}: {type(e).__name__}: {str(e)[:300]}")
        ref = res.get("cuBLAS (cupy.matmul)") if dtype == "f16" else None
        ref = ref or res.get("cuBLAS (torch.matmul)")
        for name, (tf, t, err) in res.items():
            ratio = tf / ref[0] if ref else float("nan")
            rows.append((case, name, tf, ratio, t * 1e3, err))
            results.append(dict(case=case, variant=name, tflops=tf, ratio_cublas=ratio,
                                ms=t * 1e3, rel_err=err))
        del A, B
        cp.get_default_memory_pool().free_all_blocks()
    print(f"\n{'case':26s} {'variant':34s} {'TFLOP/s':>8s} {'xcuBLAS':>8s} {'ms':>8s} {'err':>9s}")
    for case, name, tf, ratio, ms, err in rows:
        es = f"{err:.1e}" if err is not None else ""
        print(f"{case:26s} {name[:34]:34s} {tf:8.1f} {ratio:8.3f} {ms:8.3f} {es:>9s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


if __name__ == "__main__":
    main()
