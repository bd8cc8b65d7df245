"""Fused GEMM epilogues from one call, against PyTorch, on torch tensors in one run.

Cases (``D = ...``, fp16 by default, A ``(M, K)`` row-major, B the ``nn.Linear`` layout
``W.T`` of a row-major ``(N, K)`` weight unless ``--b-layout kn``):

- ``gelu_bias``: ``gelu(A @ B + bias)`` (tanh GELU, bias of length N):
    ``cute_py``       ``cute_py.gemm(A, B, bias=b, activation="gelu")``;
    ``eager``         ``gelu(torch.mm(A, B) + b)`` (three kernels);
    ``cublaslt``      ``torch._addmm_activation(b, A, B, use_gelu=True)`` (cuBLASLt's own
                      fused bias + GELU epilogue);
    ``compile``       ``torch.compile`` of the eager function;
- ``relu_lincomb_bias``: ``relu(alpha * A @ B + beta * C + bias)``:
    ``cute_py``       ``cute_py.gemm(A, B, C, alpha, beta, bias=b, activation="relu")``;
    ``addmm+relu``    ``torch.addmm(C, A, B, beta=, alpha=)``, ``add_(b)``, ``relu_()``;
    ``compile``       ``torch.compile`` of that function.

First every provider's output (poisoned with NaN beforehand where the provider writes into a
given tensor) is checked against a float64 reference (relative Frobenius-norm error); then the
providers are timed in interleaved rounds (CUDA events, median of the per-round medians).  One
provider failing is reported and skipped; the rest of the run goes on.  The data distribution
(normal) and the GPU clocks (``nvidia-smi`` before and after) are printed with the results.

``--sustained``: before each shape and case the GPU runs the reference provider (cuBLASLt /
``addmm+relu``) for ``--warm-s`` seconds, so the rounds run at the clocks the power cap leaves
(bursts after idle run at the top clock), and each round times the providers in a shuffled
(seeded) order; the SM clock and power at the end of each case are printed and stored.

    python benchmarks/bench_fused_torch.py                    # all shapes, both cases
    python benchmarks/bench_fused_torch.py --shapes 4096 --rounds 5 --json out.json
"""

import argparse
import json
import statistics
import sys
import time
import traceback

from _shapes import SHAPES  # noqa: E402  (benchmarks/ is the script's folder)
from _timing import clocks  # noqa: E402
CASES = ("gelu_bias", "relu_lincomb_bias")
ALPHA, BETA = 1.5, 0.5
TARGETS = {("gelu_bias", "cublaslt"): 1.10, ("gelu_bias", "eager"): 1.30,
           ("relu_lincomb_bias", "addmm+relu"): 1.15}


def providers(case, A, B, C, bias, torch):
    """``{name: (make_out, fn)}``: ``fn(out)`` runs once; ``out`` is a NaN-poisoned D for the
    providers that write into a given tensor (else ignored) and each returns D."""
    import cute_py
    F = torch.nn.functional
    M, N = A.shape[0], B.shape[1]
    out = torch.empty(M, N, device="cuda", dtype=A.dtype)
    fns = {}
    if case == "gelu_bias":
        fns["cute_py"] = lambda: cute_py.gemm(A, B, bias=bias, activation="gelu", out=out)

        def eager(A, B, bias):
            return F.gelu(torch.mm(A, B) + bias, approximate="tanh")
        fns["eager"] = lambda: eager(A, B, bias)
        fns["cublaslt"] = lambda: torch._addmm_activation(bias, A, B, use_gelu=True)
        fns["compile"] = _compiled(eager, torch, A, B, bias)
    else:
        fns["cute_py"] = lambda: cute_py.gemm(A, B, C, ALPHA, BETA, bias=bias,
                                              activation="relu", out=out)

        def addmm_relu(A, B, C, bias):
            return torch.addmm(C, A, B, beta=BETA, alpha=ALPHA).add_(bias).relu_()
        fns["addmm+relu"] = lambda: addmm_relu(A, B, C, bias)
        fns["compile"] = _compiled(addmm_relu, torch, A, B, C, bias)
    return fns, out


def _compiled(f, torch, *args):
    """``torch.compile(f)(*args)``, compiled on the first call (the tensors are graph inputs,
    not constants)."""
    c = None

    def run():
        nonlocal c
        if c is None:
            c = torch.compile(f, dynamic=False)
        return c(*args)
    return run


def reference(case, A, B, C, bias, torch):
    F = torch.nn.functional
    x = A.double() @ B.double()
    if case == "gelu_bias":
        return F.gelu(x + bias.double(), approximate="tanh")
    return torch.relu(ALPHA * x + BETA * C.double() + bias.double())


def run_shape(name, case, args, torch, results):
    M, N, K = SHAPES[name]
    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(args.seed)
    # data ~ N(0, 1) (A, C, bias) and N(0, 1/K) (B): D stays O(1) at every K
    A = torch.randn(M, K, generator=g, device="cuda").to(dt)
    W = (torch.randn(N, K, generator=g, device="cuda") / K ** 0.5).to(dt)
    B = W.t() if args.b_layout == "nk" else W.t().contiguous()
    C = torch.randn(M, N, generator=g, device="cuda").to(dt) if case != "gelu_bias" else None
    bias = torch.randn(N, generator=g, device="cuda").to(dt)
    fns, out = providers(case, A, B, C, bias, torch)
    ref = reference(case, A, B, C, bias, torch)
    rn = ref.norm().item()
    ok, errs = {}, {}
    for pname, fn in fns.items():
        try:
            out.fill_(float("nan"))
            D = fn()
            torch.cuda.synchronize()
            err = ((D.double() - ref).norm() / rn).item()
            if not err < args.max_err:
                raise RuntimeError(f"relative error {err:.3e} (NaN: poisoned output not fully "
                                   f"written?) exceeds {args.max_err}")
            errs[pname], ok[pname] = err, fn
        except Exception as e:
            print(f"  [{name} {case}] {pname}: FAILED {type(e).__name__}: {e}")
            if args.verbose:
                traceback.print_exc()
    del ref
    if "cute_py" in ok and not args.no_explain:
        try:
            import cute_py
            kw = dict(bias=bias, activation="gelu") if case == "gelu_bias" else \
                dict(bias=bias, activation="relu")
            cargs = (A, B) if case == "gelu_bias" else (A, B, C, ALPHA, BETA)
            _, choice = cute_py.gemm(*cargs, explain=True, **kw)
            print(f"  [{name} {case}] cute_py ran: {choice}")
        except Exception as e:
            print(f"  [{name} {case}] explain failed: {type(e).__name__}: {e}")
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    per_round = {p: [] for p in ok}
    flop = 2 * M * N * K
    reps = max(3, min(50, int(args.seconds_per_sample / (flop / 700e12))))
    order = list(ok)
    if args.sustained and ok:
        warm = ok.get("cublaslt") or ok.get("addmm+relu") or ok[order[0]]
        t_end = time.perf_counter() + args.warm_s
        while time.perf_counter() < t_end:
            for _ in range(reps):
                warm()
            torch.cuda.synchronize()
    for _ in range(args.rounds):
        if args.sustained:
            args.rng.shuffle(order)
        for pname in order:
            fn = ok.get(pname)
            if fn is None:
                continue
            try:
                fn()
                fn()
                got = []
                for _ in range(args.samples):
                    st.record()
                    for _ in range(reps):
                        fn()
                    en.record()
                    en.synchronize()
                    got.append(st.elapsed_time(en) / reps)
                per_round[pname].append(statistics.median(got))
            except Exception as e:
                print(f"  [{name} {case}] {pname}: FAILED while timing "
                      f"{type(e).__name__}: {e}")
                ok.pop(pname)
                per_round.pop(pname)
    row = {}
    for pname, meds in per_round.items():
        ms = statistics.median(meds)
        row[pname] = dict(ms=ms, tflops=flop / ms / 1e9, err=errs[pname],
                          spread=max(meds) / min(meds))
    clock = clocks() if args.sustained else ""
    if clock:
        print(f"  [{name} {case}] clocks at the end: {clock}")
    results[f"{name}|{case}"] = dict(shape=(M, N, K), providers=row, clocks=clock)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    p.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    p.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    p.add_argument("--b-layout", choices=("nk", "kn"), default="nk",
                   help="nk: B = W.T of a row-major (N, K) weight (nn.Linear); kn: row-major B")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--seconds-per-sample", type=float, default=0.01)
    p.add_argument("--max-err", type=float, default=2e-2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the results here")
    p.add_argument("--no-explain", action="store_true")
    p.add_argument("--sustained", action="store_true",
                   help="warm to the power cap's clocks before each case; shuffled order")
    p.add_argument("--warm-s", type=float, default=1.0)
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    import random
    args.rng = random.Random(args.seed)
    try:
        import torch
    except ImportError:
        print("bench_fused_torch: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("bench_fused_torch: no CUDA GPU")
        return 0
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"dtype {args.dtype}, B layout {args.b_layout}, data ~ normal: A, C, bias N(0, 1), "
          f"B N(0, 1/K); alpha={ALPHA} beta={BETA}; {args.rounds} interleaved rounds"
          + (f", sustained (warm {args.warm_s:g} s per case, shuffled order)"
             if args.sustained else ""))
    before = clocks()
    print("clocks before:", before)
    # warm the GPU up (clocks leave idle) with ~1 s of matmuls
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    for _ in range(800):
        x @ x
    torch.cuda.synchronize()
    results = {"clocks_before": before, "args": vars(args)}
    for name in args.shapes:
        for case in args.cases:
            try:
                row = run_shape(name, case, args, torch, results)
                print(f"  [{name} {case}] " + ", ".join(f"{k} {v['ms']:.3f} ms"
                                                        for k, v in row.items()))
            except Exception as e:
                print(f"  [{name} {case}] FAILED {type(e).__name__}: {e}")
                if args.verbose:
                    traceback.print_exc()
            torch.cuda.empty_cache()
    results["clocks_after"] = clocks()
    print("clocks after:", results["clocks_after"])

    print(f"\n{'shape':10s} {'case':18s} {'provider':11s} {'ms':>8s} {'TFLOP/s':>8s} "
          f"{'err':>9s} {'spread':>7s} {'cute x':>7s}")
    for key, res in results.items():
        if "|" not in key:
            continue
        name, case = key.split("|")
        row = res["providers"]
        cute = row.get("cute_py", {}).get("ms")
        for pname, v in row.items():
            ratio = "" if cute is None or pname == "cute_py" else f"{v['ms'] / cute:7.3f}"
            target = TARGETS.get((case, pname))
            mark = ""
            if target and ratio:
                mark = "  ok" if v["ms"] / cute >= target else f"  < {target} target"
            print(f"{name:10s} {case:18s} {pname:11s} {v['ms']:8.3f} {v['tflops']:8.1f} "
                  f"{v['err']:9.2e} {v['spread']:7.3f} {ratio:>7s}{mark}")
    print("(cute x = provider ms / cute_py ms: > 1 means cute_py is faster)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
