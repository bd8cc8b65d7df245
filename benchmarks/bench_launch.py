"""Host cost and back-to-back wall time of one GEMM call, as a PyTorch user calls it.

Part 1 — host microseconds per call (a 128^3 fp16 problem, whose GPU time is far below the
host cost, so the time of issuing N calls is the host's): ``cute_py.gemm(A, B)`` (new output
every call), ``cute_py.gemm(A, B, out=D)``, the same with *new tensors every call* (a pool of
64 distinct A / B / D, never the same pointers twice in a row), with 32 rotating buffers, a
prepared Hopper launch, ``torch.mm`` and the Triton matmul.  cProfile of the cached call is
printed (where the microseconds go).

Part 2 — wall time per call of back-to-back calls (fp16 and bf16, ``A @ B`` with row-major B
and ``x @ W.T``) at 512^3 ... 4096^3, 16x4096x4096, 128x14336x4096, 512x4096x4096, next to the
kernel's GPU time from CUPTI (torch.profiler), for cute_py and torch.mm, interleaved rounds.
Part "pieces" — the microseconds of each piece of a cached call (reading a tensor's pointer,
shape, strides, dtype and device; the fast path's key; the plan lookup; the output allocation;
the plan's patch + launch) beside whole calls of ``cute_py.gemm`` and ``torch.mm``.

Data: standard normal.  Usage: ``python benchmarks/bench_launch.py [--quick] [--part
1|2|pieces|all]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import subprocess
import sys
import time

import torch
from _timing import wall_us

import cute_py as cute


def _clocks():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.sm,clocks.mem,power.draw,"
                               "temperature.gpu", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except Exception as e:  # noqa: BLE001 - informational only
        return f"(nvidia-smi unavailable: {e})"


def _triton():
    try:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from triton_matmul import matmul
        return matmul
    except Exception as e:  # noqa: BLE001
        print(f"# Triton unavailable: {e}")
        return None


def host_us(fn, n=40, rounds=41):
    """Median over rounds of (wall time to issue n calls) / n, GPU drained between rounds: n is
    small enough that no launch queue fills, so this is the host's cost, not the GPU's."""
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        out.append((t1 - t0) / n * 1e6)
    return statistics.median(out)


def part1():
    dt = torch.float16
    M = N = K = 128
    pool = [(torch.randn(M, K, device="cuda", dtype=dt), torch.randn(K, N, device="cuda", dtype=dt),
             torch.empty(M, N, device="cuda", dtype=dt)) for _ in range(64)]
    A, B, D = pool[0]
    ref = A.double() @ B.double()
    assert float((cute.gemm(A, B).double() - ref).norm() / ref.norm()) < 2e-3
    from cute_py.backends.cuda.kernels import gemm_sm90 as G
    cases = {
        "cute.gemm(A, B)": lambda i: cute.gemm(A, B),
        "cute.gemm(A, B, out=D)": lambda i: cute.gemm(A, B, out=D),
        "cute.gemm new tensors": lambda i: cute.gemm(pool[i % 64][0], pool[i % 64][1],
                                                     out=pool[i % 64][2]),
        "cute.gemm 32 rotating": lambda i: cute.gemm(pool[i % 32][0], pool[i % 32][1],
                                                     out=pool[i % 32][2]),
        "cute.gemm(x, W.T)": lambda i: cute.gemm(A, B.T, out=D),
        "torch.mm(A, B)": lambda i: torch.mm(A, B),
        "torch.mm(A, B, out=D)": lambda i: torch.mm(A, B, out=D),
        "torch.mm new tensors": lambda i: torch.mm(pool[i % 64][0], pool[i % 64][1],
                                                   out=pool[i % 64][2]),
    }
    if torch.cuda.get_device_capability() == (9, 0):
        run = G.get_kernel(G.Sm90GemmConfig()).prepare(A, B.T.contiguous(), D)
        cases["prepared Sm90 launch"] = lambda i: run()
        plan, h = run.plan, torch.cuda.current_stream().cuda_stream
        ptrs = (A.data_ptr(), B.data_ptr(), D.data_ptr(), D.data_ptr())
        cases["Sm90Plan.run (patch+launch)"] = lambda i: plan.run(ptrs, (1.0, 0.0), h)
        from cute_py.backends.cuda import driver
        func = plan.kernel.handle(plan.device)
        cases["cuLaunchKernel alone"] = lambda i: driver.launch_kernel(
            func, plan.grid, plan.block, plan.smem, h, plan.pack.params)
        from cute_py.backends.cuda.compiler import build_kernel
        from cute_py.backends.cuda.kernel import ArgPack, KernelSpec
        tiny = build_kernel(KernelSpec('extern "C" __global__ void tiny(int* p) {}', "tiny",
                                       None, (32, 1, 1), arch=None))
        tpack = ArgPack(["ptr"])
        tpack.set(0, D.data_ptr())
        tf = tiny.handle()
        cases["cuLaunchKernel, 8-byte params"] = lambda i: driver.launch_kernel(
            tf, (1, 1, 1), (32, 1, 1), 0, h, tpack.params)

    tri = _triton()
    if tri is not None:
        tri(A, B)
        cases["triton matmul(A, B)"] = lambda i: tri(A, B)
    for fn in cases.values():         # warm-up: compile, plans, autotune
        for i in range(70):
            fn(i)
    res = {k: [] for k in cases}
    for _ in range(3):                # interleaved rounds
        for k, fn in cases.items():
            res[k].append(host_us(fn))
    print("\n## host microseconds per call (128^3 fp16; median of 3 interleaved rounds)")
    for k, v in res.items():
        print(f"{k:28s} {statistics.median(v):7.2f} us")
    pr = cProfile.Profile()
    pr.enable()
    for i in range(2000):
        cute.gemm(pool[i % 64][0], pool[i % 64][1], out=pool[i % 64][2])
    pr.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(12)
    print("\n## cProfile: 2000 cached calls with new tensors (tottime)")
    print("\n".join(s.getvalue().splitlines()[:30]))
    return res


def _gpu_us(fn, reps=20):
    """Mean kernel time (CUPTI) per call of fn, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for e in prof.events():
        if e.device_type.name == "CUDA":
            total += e.device_time if hasattr(e, "device_time") else e.cuda_time
    return total / reps


def part2(quick=False):
    shapes = [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096),
              (16, 4096, 4096), (128, 14336, 4096), (512, 4096, 4096)]
    dts = [torch.float16] if quick else [torch.float16, torch.bfloat16]
    print("\n## back-to-back wall us per call vs GPU us per kernel (CUPTI); ratio = "
          "torch.mm wall / cute wall")
    print(f"{'shape':>18s} {'dt':>5s} {'layout':>7s} | {'cute wall':>9s} {'cute gpu':>8s} "
          f"{'wall/gpu':>8s} | {'mm wall':>8s} {'mm gpu':>7s} | {'ratio':>6s}")
    rows = []
    for (M, N, K) in shapes:
        for dt in dts:
            for layout in ("A@B", "x@W.T"):
                A = torch.randn(M, K, device="cuda", dtype=dt)
                B = torch.randn(K, N, device="cuda", dtype=dt) if layout == "A@B" else \
                    torch.randn(N, K, device="cuda", dtype=dt).T
                D = torch.empty(M, N, device="cuda", dtype=dt)
                ref = A.double() @ B.double()
                err = float((cute.gemm(A, B, out=D).double() - ref).norm() / ref.norm())
                if err > (2e-3 if dt == torch.float16 else 1e-2):
                    print(f"# WRONG {M}x{N}x{K} {dt} {layout}: rel err {err:.2e}")
                ours = lambda: cute.gemm(A, B, out=D)
                mm = lambda: torch.mm(A, B, out=D)
                flop = 2 * M * N * K
                n = max(10, min(2000, int(2e12 / flop)))
                cw, mw = [], []
                for _ in range(5):
                    cw.append(wall_us(ours, n))
                    mw.append(wall_us(mm, n))
                cg, mg = _gpu_us(ours), _gpu_us(mm)
                c, m = statistics.median(cw), statistics.median(mw)
                rows.append((M, N, K, dt, layout, c, cg, m, mg))
                print(f"{f'{M}x{N}x{K}':>18s} {str(dt)[6:]:>5s} {layout:>7s} | {c:9.1f} "
                      f"{cg:8.1f} {c / cg:8.2f} | {m:8.1f} {mg:7.1f} | {m / c:6.3f}")
    return rows


def pieces(rounds=3, n=20000, n_calls=2000):
    """Microseconds per call of each piece of the cached path (``n`` calls of a piece,
    ``n_calls`` of a whole call), ``rounds`` times."""
    from cute_py.backends.cuda import gemm_api
    A = torch.randn(128, 128, device="cuda", dtype=torch.float16)
    B = torch.randn(128, 128, device="cuda", dtype=torch.float16)
    D = torch.empty(128, 128, device="cuda", dtype=torch.float16)
    gemm_api.clear_plans()
    cute.gemm(A, B, out=D)
    raw = torch._C._cuda_getCurrentRawStream
    call = next(iter(gemm_api.plan_cache().values()))
    pa, pb, pd, s = A.data_ptr(), B.data_ptr(), D.data_ptr(), raw(0)
    key = gemm_api._fast_key(A, B, None, D, 1.0, False, pa, pb, 0, pd, 0, "auto")
    items = [
        ("data_ptr()", lambda: A.data_ptr(), n), (".shape", lambda: A.shape, n),
        (".stride()", lambda: A.stride(), n), (".dtype", lambda: A.dtype, n),
        ("get_device()", lambda: A.get_device(), n), ("raw stream", lambda: raw(0), n),
        ("fast-path key", lambda: gemm_api._fast_key(A, B, None, D, 1.0, False, pa, pb, 0, pd,
                                                     0, "auto"), n),
        ("plan lookup", lambda: gemm_api.plan_cache().get(key), n),
        ("new_empty (out)", lambda: A.new_empty((128, 128)), n),
        ("GemmCall.run", lambda: call.run(pa, pb, pd, pd, 1.0, 0.0, s), n_calls),
        ("cute_py.gemm(out=D)", lambda: cute.gemm(A, B, out=D), n_calls),
        ("cute_py.gemm", lambda: cute.gemm(A, B), n_calls),
        ("torch.mm(out=D)", lambda: torch.mm(A, B, out=D), n_calls),
        ("torch.mm", lambda: torch.mm(A, B), n_calls),
    ]
    for r in range(rounds):
        out = []
        for name, fn, k in items:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            dt = time.perf_counter() - t0
            torch.cuda.synchronize()
            out.append(f"{name} {dt / k * 1e6:.2f}")
        print(f"pieces (us per call), round {r}: " + " | ".join(out), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=["1", "2", "pieces", "all"], default="all")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to measure")
        return 0
    print(f"# {torch.cuda.get_device_name()} | clocks: {_clocks()} | data: standard normal")
    if args.part in ("1", "all"):
        part1()
    if args.part in ("2", "all"):
        part2(args.quick)
    if args.part in ("pieces", "all"):
        pieces()
    print(f"# clocks after: {_clocks()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
