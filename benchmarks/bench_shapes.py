"""GEMM on the shapes users run: cute_py.gemm beside torch.mm (cuBLAS) and the Triton matmul.

    python benchmarks/bench_shapes.py [--quick] [--shapes SEL] [--dtypes f16,bf16]
                                      [--layouts AB,xWT] [--providers cute,torch,triton]
                                      [--rounds N] [--no-profile] [--list] [--json FILE]

Shapes (``--list`` prints them; ``--shapes`` takes comma-separated categories or substrings of
names, e.g. ``--shapes decode,square`` or ``--shapes 4096x4096x4096``):

- ``square``: 256 ... 8192;
- ``prefill``: M 4096-16384 on LLM layers (N, K) from 7B-70B models (4096, 5120, 8192, 11008,
  14336, 28672);
- ``decode``: M in {1, 8, 16, 32, 64, 128} on the same layers;
- ``misaligned``: K = 2000 / 2040 (rows off 128-byte boundaries) and odd K;
- ``batched``: (L, M, K) @ (L, K, N).

Each shape runs in fp16 and bf16 (torch tensors) and in both torch layouts: ``AB`` (``A @ B``,
B row-major ``(K, N)``) and ``xWT`` (``x @ W.T``, W row-major ``(N, K)`` passed as ``W.T``).

Protocol: every provider's D is first checked against a float64 reference (sampled rows of
big problems: ``A[rows].double() @ B.double()``); a provider that fails the check is reported
and not timed.  Then ``--rounds`` interleaved rounds (cute, torch, triton, cute, torch, ...)
of back-to-back calls: wall time per call (host clock around ``n`` calls + one synchronize,
``n`` sized to ~``--target-ms``), median over rounds.  GPU time per call from
``torch.profiler`` (sum of every kernel a call launches, e.g. split-K GEMM + reduce), unless
``--no-profile``.  At the end: geometric means of torch/cute (>1: cute_py faster), the worst
shapes, the decode subset, and the targets of the issue (geomean >= 1.05, no shape < 0.90,
decode M <= 64 >= 0.95).  ``cute_py.gemm(..., explain=True)`` names the kernel picked per
shape (printed as "n/a" when the installed cute_py has no ``explain``).

``--quick``: fp16 only, a 39-shape subset, 3 rounds, 5 ms targets (about 5 minutes on an H100
with Triton's autotuning; ``--providers cute,torch`` halves it).

``--sustained``: the steady state of a long run instead of short bursts.  Before each shape's
rounds the GPU runs that shape's ``torch.mm`` for ``--warm-s`` seconds (default 1), so the
rounds run at the clocks the power cap leaves (on an H100, 1200-1500 MHz at 700 W for large
shapes, against 1980 MHz in bursts); every round then times the providers in a shuffled
order (seeded), 40 ms per measurement and 7 rounds unless ``--target-ms`` / ``--rounds`` say
otherwise.  Each row records the SM clock and power at its end (``nvidia-smi``).  Large
GEMMs in bursts and sustained rank kernels differently (docs/performance.md, "Hopper GEMM",
v18 and v19); both are what users see, in an interactive call and in a training or serving
loop.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

#: LLM linear layers (N, K): Llama-2 7B (4096 / 11008), 13B (5120 / 13824 -> 5120x5120 kept),
#: Mistral / Llama-3 8B (14336), 70B (8192 / 28672)
LAYERS = ((4096, 4096), (11008, 4096), (4096, 11008), (5120, 5120), (14336, 4096),
          (4096, 14336), (8192, 8192), (28672, 8192), (8192, 28672))
QUICK_LAYERS = ((4096, 4096), (11008, 4096), (4096, 14336), (28672, 8192))


def all_shapes():
    """[(name, category, L, M, N, K)]."""
    out = []
    for s in (256, 512, 1024, 2048, 4096, 8192):
        out.append(("square", 1, s, s, s))
    for M in (4096, 8192, 16384):
        for N, K in LAYERS:
            if M == 16384 and N * K > 8192 * 8192 * 2:
                continue
            out.append(("prefill", 1, M, N, K))
    for M in (1, 8, 16, 32, 64, 128):
        for N, K in LAYERS:
            out.append(("decode", 1, M, N, K))
    for M, N, K in ((4096, 4096, 2000), (3000, 5000, 2000), (4096, 4096, 2040),
                    (8192, 8192, 2040), (4095, 4097, 4099), (1000, 777, 333), (16, 4096, 2000),
                    (2048, 2048, 1001)):
        out.append(("misaligned", 1, M, N, K))
    for L, M, N, K in ((8, 1024, 1024, 1024), (32, 512, 512, 128), (4, 4096, 4096, 512),
                       (16, 128, 4096, 4096), (64, 64, 64, 4096)):
        out.append(("batched", L, M, N, K))
    return [(_name(L, M, N, K), c, L, M, N, K) for c, L, M, N, K in out]


def quick_shapes():
    keep = []
    for name, c, L, M, N, K in all_shapes():
        if c == "square" or c == "misaligned" and K in (2000, 2040, 4099, 333) \
                or c == "batched" and L in (8, 16) \
                or (N, K) in QUICK_LAYERS and (c == "prefill" and M in (4096, 8192)
                                               or c == "decode" and M in (1, 16, 64, 128)):
            keep.append((name, c, L, M, N, K))
    return keep


def _name(L, M, N, K):
    return (f"{L}x" if L > 1 else "") + f"{M}x{N}x{K}"


# ------------------------------------------------------------------------------ providers

def make_inputs(torch, L, M, N, K, dtype, layout, seed=0):
    """A and B as the user holds them: A (L?, M, K) row-major; B (L?, K, N) row-major (``AB``)
    or the transpose view of a row-major (L?, N, K) W (``xWT``)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = (L,) if L > 1 else ()
    A = torch.randn(*lead, M, K, device="cuda", dtype=dtype, generator=g)
    if layout == "AB":
        B = torch.randn(*lead, K, N, device="cuda", dtype=dtype, generator=g)
    else:
        B = torch.randn(*lead, N, K, device="cuda", dtype=dtype, generator=g).transpose(-1, -2)
    return A, B


def providers(names):
    """{name: make(A, B, D) -> zero-arg callable or None (case not supported)}."""
    import torch
    out = {}
    if "cute" in names:
        import cute_py

        def make_cute(A, B, D):
            return lambda: cute_py.gemm(A, B, out=D)
        out["cute"] = make_cute
    if "torch" in names:
        def make_torch(A, B, D):
            if A.dim() == 3:
                return lambda: torch.bmm(A, B, out=D)
            return lambda: torch.mm(A, B, out=D)
        out["torch"] = make_torch
    if "triton" in names:
        try:
            from triton_matmul import matmul
        except Exception as e:  # no triton here: reported, not fatal
            print(f"# triton provider unavailable: {type(e).__name__}: {e}")
        else:
            def make_triton(A, B, D):
                if A.dim() == 3:
                    return None
                return lambda: matmul(A, B, out=D)
            out["triton"] = make_triton
    return out


def explain(A, B, D):
    """str(choice) of cute_py.gemm(..., explain=True), or 'n/a'."""
    import cute_py
    try:
        res = cute_py.gemm(A, B, out=D, explain=True)
    except TypeError:
        return "n/a (cute_py.gemm has no explain)"
    except Exception as e:  # reported per shape
        return f"explain failed: {type(e).__name__}: {e}"
    return str(res[1]) if isinstance(res, tuple) and len(res) == 2 else "n/a"


# ------------------------------------------------------------------------------ check / time

def check(torch, fn, A, B, D, dtype, max_rows=256):
    """Max error of D after one call, relative to max |ref|, against float64 on sampled rows;
    D is poisoned (NaN) first so unwritten elements fail."""
    D.fill_(float("nan"))
    fn()
    torch.cuda.synchronize()
    M = A.shape[-2]
    rows = torch.arange(M, device="cuda") if M <= max_rows else \
        torch.unique(torch.cat([torch.randint(0, M, (max_rows - 2,), device="cuda"),
                                torch.tensor([0, M - 1], device="cuda")]))
    ref = A[..., rows, :].double() @ B.double()
    got = D[..., rows, :].double()
    if torch.isnan(got).any():
        return float("inf")
    scale = max(1.0, ref.abs().max().item())
    return (got - ref).abs().max().item() / scale


def wall_per_call(torch, fn, n):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n


def calls_for(torch, fn, target_ms):
    """Back-to-back calls per measurement: ~target_ms of work, at least 3."""
    t = wall_per_call(torch, fn, 3)
    return max(3, min(2000, int(target_ms * 1e-3 / max(t, 1e-7))))


def gpu_per_call(torch, fn, n):
    """Sum of the device time of every kernel the calls launched, per call (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for ev in prof.events():        # CUDA activity only: kernels (and memsets / copies)
        if "CUDA" in str(getattr(ev, "device_type", "")):
            total += ev.time_range.elapsed_us()
    return total * 1e-6 / n          # us -> s


# ------------------------------------------------------------------------------ main

def gpu_clock():
    """'SM clock, power' of GPU 0 now (``nvidia-smi``), or why not."""
    from _timing import nvidia_smi
    return next(iter(nvidia_smi("clocks.sm,power.draw").splitlines()), "")


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def run_case(torch, provs, name, cat, L, M, N, K, dtype, layout, args):
    A, B = make_inputs(torch, L, M, N, K, dtype, layout)
    D = torch.empty(*((L,) if L > 1 else ()), M, N, device="cuda", dtype=dtype)
    tol = 5e-3 if dtype == torch.float16 else 3e-2
    fns, errs = {}, {}
    for p, make in provs.items():
        try:
            fn = make(A, B, D)
            if fn is None:
                continue
            err = check(torch, fn, A, B, D, dtype)
        except Exception as e:  # reported, provider skipped for this case
            print(f"  {p}: FAILED {type(e).__name__}: {str(e)[:200]}")
            if args.verbose:
                traceback.print_exc()
            continue
        errs[p] = err
        if err > tol * max(1.0, math.sqrt(K / 1024)):
            print(f"  {p}: WRONG (max rel err {err:.3g}); not timed")
            continue
        fns[p] = fn
    choice = explain(A, B, D) if "cute" in provs else ""
    n = {p: calls_for(torch, fn, args.target_ms) for p, fn in fns.items()}
    walls = {p: [] for p in fns}
    order = list(fns)
    if args.sustained and fns:
        warm = fns.get("torch") or fns[order[0]]
        t_end = time.perf_counter() + args.warm_s
        while time.perf_counter() < t_end:
            wall_per_call(torch, warm, max(1, n.get("torch", 1)))
    for _ in range(args.rounds):
        if args.sustained:
            args.rng.shuffle(order)
        for p in order:
            walls[p].append(wall_per_call(torch, fns[p], n[p]))
    wall = {p: statistics.median(v) for p, v in walls.items()}
    gpu = {}
    if not args.no_profile:
        for p, fn in fns.items():
            try:
                gpu[p] = gpu_per_call(torch, fn, min(n[p], 20))
            except Exception as e:  # profiler missing or failing: wall time only
                print(f"  profile {p}: {type(e).__name__}: {e}")
    flops = 2.0 * L * M * N * K
    clock = gpu_clock() if args.sustained else ""
    row = {"name": name, "category": cat, "L": L, "M": M, "N": N, "K": K,
           "dtype": str(dtype).split(".")[-1], "layout": layout, "choice": choice,
           "err": errs, "wall_us": {p: v * 1e6 for p, v in wall.items()},
           "gpu_us": {p: v * 1e6 for p, v in gpu.items()}, "clock": clock}
    for key, src in (("wall_ratio", wall), ("gpu_ratio", gpu)):
        if "cute" in src and "torch" in src:
            row[key] = src["torch"] / src["cute"]
    cols = "  ".join(f"{p} {wall[p] * 1e6:8.1f}us"
                     + (f" ({gpu[p] * 1e6:7.1f} gpu)" if p in gpu else "")
                     + f" {flops / wall[p] * 1e-12:6.1f}TF" for p in fns)
    print(f"{name:>22} {row['dtype']:>8} {layout:>4}  {cols}  "
          f"x{row.get('wall_ratio', float('nan')):.3f} wall"
          + (f" x{row['gpu_ratio']:.3f} gpu" if "gpu_ratio" in row else ""))
    print(f"{'':>22} choice: {choice}" + (f"  [{clock}]" if clock else ""))
    del A, B, D
    return row


def summarize(rows):
    print("\n==== summary (torch.mm time / cute_py time: > 1 means cute_py is faster) ====")
    for key in ("wall_ratio", "gpu_ratio"):
        rs = [r for r in rows if key in r]
        if not rs:
            continue
        g = geomean([r[key] for r in rs])
        dec = [r for r in rs if r["category"] == "decode" and r["M"] <= 64]
        print(f"{key}: geomean {g:.3f} over {len(rs)} cases"
              + (f"; decode (M <= 64) geomean {geomean([r[key] for r in dec]):.3f}, worst "
                 f"{min(r[key] for r in dec):.3f}" if dec else ""))
        for cat in sorted({r["category"] for r in rs}):
            cr = [r[key] for r in rs if r["category"] == cat]
            print(f"   {cat:>10}: geomean {geomean(cr):.3f}  min {min(cr):.3f}  ({len(cr)})")
        worst = sorted(rs, key=lambda r: r[key])[:8]
        print("   worst: " + ", ".join(f"{r['name']} {r['dtype']} {r['layout']} "
                                       f"{r[key]:.3f}" for r in worst))
        if key == "wall_ratio":
            below = [r for r in rs if r[key] < 0.90]
            dec_bad = [r for r in dec if r[key] < 0.95]
            sq = [r for r in rs if r["category"] == "square" and r["M"] in (4096, 8192)]
            print(f"   targets: geomean >= 1.05: {'OK' if g >= 1.05 else 'MISSED'}; "
                  f"no case < 0.90: {'OK' if not below else f'MISSED ({len(below)})'}; "
                  f"decode >= 0.95: {'OK' if not dec_bad else f'MISSED ({len(dec_bad)})'}; "
                  f"4096^3/8192^3 >= 1.05: "
                  f"{'OK' if all(r[key] >= 1.05 for r in sq) else 'MISSED'}")


def select(shapes, sel):
    if not sel:
        return shapes
    keys = [s.strip() for s in sel.split(",") if s.strip()]
    return [s for s in shapes if any(k == s[1] or k in s[0] for k in keys)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shapes", default="", help="categories or name substrings, comma-separated")
    ap.add_argument("--dtypes", default=None, help="f16,bf16 (quick: f16)")
    ap.add_argument("--layouts", default="AB,xWT")
    ap.add_argument("--providers", default="cute,torch,triton")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--target-ms", type=float, default=None)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--sustained", action="store_true",
                    help="warm to the power cap's clocks first, shuffled order, longer rounds")
    ap.add_argument("--warm-s", type=float, default=1.0)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    shapes = select(quick_shapes() if args.quick else all_shapes(), args.shapes)
    if args.list:
        for name, c, L, M, N, K in shapes:
            print(f"{c:>10} {name}")
        print(f"{len(shapes)} shapes")
        return 0
    import torch
    args.rounds = args.rounds or (7 if args.sustained else 3 if args.quick else 5)
    args.target_ms = args.target_ms or (40.0 if args.sustained else 5.0 if args.quick else 20.0)
    import random
    args.rng = random.Random(0)
    dts = {"f16": torch.float16, "bf16": torch.bfloat16}
    dtypes = [dts[d] for d in (args.dtypes or ("f16" if args.quick else "f16,bf16")).split(",")]
    provs = providers(args.providers.split(","))
    print(f"# {torch.cuda.get_device_name()}, {len(shapes)} shapes x {len(dtypes)} dtypes x "
          f"layouts {args.layouts}; providers {list(provs)}; rounds {args.rounds} of "
          f"{args.target_ms:g} ms" + (f"; sustained (warm {args.warm_s:g} s per shape, "
                                      f"shuffled order)" if args.sustained else "; bursts")
          + "; data N(0, 1)")
    rows = []
    t0 = time.time()
    for name, cat, L, M, N, K in shapes:
        for dtype in dtypes:
            for layout in args.layouts.split(","):
                try:
                    rows.append(run_case(torch, provs, name, cat, L, M, N, K, dtype, layout,
                                         args))
                except Exception as e:  # one bad case must not end the run
                    print(f"{name} {dtype} {layout}: FAILED {type(e).__name__}: {e}")
                torch.cuda.empty_cache()
    summarize(rows)
    print(f"# {time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
