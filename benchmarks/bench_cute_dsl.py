"""cute_py's Hopper GEMM against NVIDIA's CuTe DSL Hopper persistent GEMM example and cuBLAS,
in one process, on the same operand buffers (the Hopper GEMM's peer):

    python benchmarks/bench_cute_dsl.py --example PATH/dense_gemm_persistent.py
                                        [--sizes 4096,8192] [--data normal,int2] [--trials 4]

``--example``: ``examples/python/CuTeDSL/hopper/dense_gemm_persistent.py`` from the CUTLASS
repository (not shipped here); needs the ``nvidia-cutlass-dsl`` package and torch.  The example
is imported as a module and its ``HopperWgmmaGemmPersistentKernel`` compiled with
``cute.compile`` exactly as its own ``run()`` does (fp16 in/out, fp32 accumulation, A/B/C
K/K/N-major, 128x256 tiles, clusters 1x1 and 2x1, swizzle 1, raster along M).  A newer example
on an older DSL may name ``cute.arch.ProxyKind`` / ``SharedSpace``, which 4.8.1 spells as
strings; the script adds those two names when they are missing (nothing else is changed).

Every provider reads the same A (M, K) and B (N, K) (``D = A @ B.T``: cuBLAS through torch and
CuPy, ours through a prepared launch of ``Sm90Gemm``), is checked against a float64 reference
on 256 rows first, then all are timed in rounds of back-to-back calls
(``gemm_majors.interleaved``: each round runs every provider, in rotated order, so power and
thermal phases hit all alike), ``--trials`` times.  ``--data``: ``normal`` (standard normal) or
``int2`` (integers in {-2, -1, 0, 1}: what the DSL examples' ``cutlass.torch.matrix`` fills by
default; such data draws less power, so the clock and every provider's TFLOP/s are higher).
Printed: TFLOP/s per provider and the ratio to cuBLAS (torch) in the same round set.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def _ours_configs():
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90GemmConfig, make_epilogue_config
    return {
        "ours coop 128x256 s4": Sm90GemmConfig(epi=make_epilogue_config()),
        "ours pp 64x256 s5": Sm90GemmConfig(
            64, 256, 64, 5, 2, "f16", group_m=16, schedule="pingpong",
            epi=make_epilogue_config(None, 64, 256, schedule="pingpong")),
        "ours pp 64x256 s4": Sm90GemmConfig(
            64, 256, 64, 4, 2, "f16", group_m=16, schedule="pingpong",
            epi=make_epilogue_config(None, 64, 256, schedule="pingpong")),
        "ours pp 128x128 s5": Sm90GemmConfig(
            128, 128, 64, 5, 2, "f16", schedule="pingpong",
            epi=make_epilogue_config(None, 128, 128, schedule="pingpong")),
    }


def _load_example(path):
    import cutlass.cute as cute
    arch = cute.arch
    if not hasattr(arch, "ProxyKind"):          # DSL 4.8.1 takes the fence kind as a string
        arch.ProxyKind = type("ProxyKind", (), {"async_shared": "async.shared"})
    if not hasattr(arch, "SharedSpace"):
        arch.SharedSpace = type("SharedSpace", (), {"shared_cta": "cta"})
    spec = importlib.util.spec_from_file_location("cute_dsl_dense_gemm_persistent", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--example", required=True, help="path of the CuTe DSL example "
                    "dense_gemm_persistent.py")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--data", default="normal,int2")
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--only", default="", help="comma-separated provider names")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.example):
        raise SystemExit(f"--example: no such file {args.example!r}")
    import cupy as cp
    import torch
    import cutlass
    import cutlass.cute as cute
    import cutlass.torch as cutlass_torch
    import cutlass.utils
    import cuda.bindings.driver as cuda
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    from gemm_majors import interleaved
    ex = _load_example(args.example)
    print("device:", torch.cuda.get_device_name(), "| torch", torch.__version__,
          "| CuTe DSL", getattr(cutlass, "__version__", "?"), flush=True)
    only = set(filter(None, args.only.split(",")))
    ours = {k: Sm90Gemm(c) for k, c in _ours_configs().items() if not only or k in only}
    dsl = {k: v for k, v in {"dsl 128x256 c1x1": ((128, 256), (1, 1)),
                             "dsl 128x256 c2x1": ((128, 256), (2, 1))}.items()
           if not only or k in only}
    F16 = cutlass.Float16
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    for n in (int(s) for s in args.sizes.split(",") if s):
        M = N = K = n
        # the example's own tensor factory: (mode0, mode1, L) views, K-major A/B, N-major C
        mk = [cutlass_torch.cute_tensor_like(cutlass_torch.matrix(1, r, c, False, F16), F16,
                                             is_dynamic_layout=True, assumed_align=16)
              for r, c in ((M, K), (N, K), (M, N))]
        (a_t, a_g), (b_t, b_g), (c_t, c_g) = mk
        A2, B2, C2 = a_g[:, :, 0], b_g[:, :, 0], c_g[:, :, 0]
        Ac, Bc = cp.from_dlpack(A2), cp.from_dlpack(B2)
        Dt = torch.empty(M, N, device="cuda", dtype=torch.float16)
        Dc = cp.empty((M, N), cp.float16)
        fns = {"cublas(torch)": lambda: torch.matmul(A2, B2.T, out=Dt),
               "cublas(cupy)": lambda: cp.matmul(Ac, Bc.T, out=Dc)}
        outs = {"cublas(torch)": lambda: Dt, "cublas(cupy)": lambda: torch.from_dlpack(Dc)}
        for k, g in ours.items():
            run = g.prepare(Ac, Bc, cp.empty((M, N), cp.float16))
            fns[k] = run
            outs[k] = (lambda run: lambda: torch.from_dlpack(run.D))(run)
        for k, (tile, cl) in dsl.items():
            t0 = time.time()
            gemm = ex.HopperWgmmaGemmPersistentKernel(cutlass.Float32, tile, cl, 1, True)
            mac = cutlass.utils.HardwareInfo().get_max_active_clusters(cl[0] * cl[1])
            cg = cute.compile(gemm, a_t, b_t, c_t, mac, stream)
            fns[k] = (lambda cg: lambda: cg(a_t, b_t, c_t, stream))(cg)
            outs[k] = lambda: C2
            print(f"{n}: compiled {k} in {time.time() - t0:.1f} s", flush=True)
        for data in args.data.split(","):
            torch.manual_seed(int(time.time()))
            for X in (a_g, b_g):
                if data == "normal":
                    X.normal_()
                else:
                    X.copy_(torch.randint(-2, 2, X.shape, device="cuda", dtype=torch.float16))
            ref = A2[:256].double() @ B2.double().T
            for k, f in fns.items():
                outs[k]().fill_(float("nan"))
                f()
                torch.cuda.synchronize()
                out = outs[k]()[:256].double()
                err = float((out - ref).norm() / ref.norm())
                ok = err < 2e-3
                print(f"  check {n}^3 {data:6s} {k:22s} rel err {err:.2e} "
                      f"{'OK' if ok else 'FAIL'}", flush=True)
                if not ok:
                    raise SystemExit(f"{k} is wrong")
            rounds, reps = (10, 10) if n <= 4096 else (6, 4)
            for trial in range(args.trials):
                res = interleaved(fns, rounds, reps)
                base = res["cublas(torch)"]
                print(f"{n}^3 {data} trial {trial}: " + "  ".join(
                    f"{k}={2.0 * M * N * K / (ms * 1e-3) / 1e12:.0f}TF({base / ms:.3f}x)"
                    for k, ms in res.items()), flush=True)
        del fns, outs, mk, a_g, b_g, c_g
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
