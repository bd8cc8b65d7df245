"""Hopper GEMM variants for ``benchmarks/bench_gemm.py`` (provider ``variants()``), and a
standalone device script that checks every variant against a float64 reference and times it
against cuBLAS (CuPy and torch) and Triton in the same run:

    python benchmarks/gemm_sm90_variants.py [--quick] [--sizes 4096,8192] [--no-triton]
                                            [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

__all__ = ["variants", "CONFIGS", "main"]


def _configs():
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90GemmConfig as C
    return {
        "sm90 ws-coop 128x256x64 s4": lambda dt: C(128, 256, 64, 4, 2, dt),
        "sm90 ws-coop 256x128x64 s4": lambda dt: C(256, 128, 64, 4, 2, dt),
        "sm90 ws-coop 128x128x64 s6": lambda dt: C(128, 128, 64, 6, 2, dt),
        "sm90 ws-coop 128x256x64 s4 c2": lambda dt: C(128, 256, 64, 4, 2, dt, cluster_m=2),
        "sm90 ws-coop 256x128x64 s4 c2": lambda dt: C(256, 128, 64, 4, 2, dt, cluster_m=2),
        "sm90 ws-coop 128x256x64 s4 c2 tma-epi": lambda dt: C(
            128, 256, 64, 4, 2, dt, cluster_m=2, epi=_epi(dt)),
        "sm90 ws-coop 128x256x64 s4 tma-epi": lambda dt: C(
            128, 256, 64, 4, 2, dt, epi=_epi(dt)),
        "sm90 ws-coop 128x128x64 s5 tma-epi": lambda dt: C(
            128, 128, 64, 5, 2, dt, epi=_epi(dt, tile_n=128)),
        "sm90 default (heuristic)": None,
        "sm90 ws-coop 128x256x64 s4 tma-epi64": lambda dt: C(
            128, 256, 64, 4, 2, dt, epi=_epi(dt, epi_n=64)),
        "sm90 ws-coop 128x256x64 s4 tma-epi g4": lambda dt: C(
            128, 256, 64, 4, 2, dt, group_m=4, epi=_epi(dt)),
        "sm90 ws-coop 128x256x64 s4 tma-epi g16": lambda dt: C(
            128, 256, 64, 4, 2, dt, group_m=16, epi=_epi(dt)),
        "sm90 ws-coop 128x256x64 s4 tma-epi rn4": lambda dt: C(
            128, 256, 64, 4, 2, dt, group_m=4, raster_n=True, epi=_epi(dt)),
        "sm90 ws-coop 128x256x64 s4 tma-epi d4": lambda dt: C(
            128, 256, 64, 4, 2, dt, epi=_epi(dt, stages_d=4)),
        "sm90 ws-coop 128x256x64 s4 c2 tma-epi64": lambda dt: C(
            128, 256, 64, 4, 2, dt, cluster_m=2, epi=_epi(dt, epi_n=64)),
        # ping-pong: one tile per consumer warpgroup, epilogue overlapped with the other's MMAs
        "sm90 ws-pp 64x256x64 s4 tma-epi": lambda dt: C(
            64, 256, 64, 4, 2, dt, group_m=16, schedule="pingpong", epi=_epi_pp(dt, 64, 256)),
        "sm90 ws-pp 64x256x64 s5 tma-epi": lambda dt: C(
            64, 256, 64, 5, 2, dt, group_m=16, schedule="pingpong", epi=_epi_pp(dt, 64, 256)),
        "sm90 ws-pp 64x256x64 s4 c2 tma-epi": lambda dt: C(
            64, 256, 64, 4, 2, dt, group_m=16, schedule="pingpong", cluster_m=2,
            epi=_epi_pp(dt, 64, 256)),
        "sm90 ws-pp 128x128x64 s5 tma-epi": lambda dt: C(
            128, 128, 64, 5, 2, dt, schedule="pingpong", epi=_epi_pp(dt, 128, 128)),
        "sm90 ws-pp 128x128x64 s5 c2 tma-epi": lambda dt: C(
            128, 128, 64, 5, 2, dt, schedule="pingpong", cluster_m=2, epi=_epi_pp(dt, 128, 128)),
        "sm90 ws-pp 64x256x64 s4": lambda dt: C(64, 256, 64, 4, 2, dt, group_m=16,
                                                schedule="pingpong"),
    }


def _epi(dt, tree=None, tile_n=256, tile_m=128, **kw):
    from cute_py.backends.cuda.kernels.gemm_sm90 import make_epilogue_config
    return make_epilogue_config(tree, tile_m, tile_n, 2, "float16" if dt == "f16" else "bfloat16",
                                **kw)


def _epi_pp(dt, tile_m, tile_n, tree=None, **kw):
    return _epi(dt, tree, tile_n, tile_m, schedule="pingpong", **kw)


CONFIGS = ("sm90 default (heuristic)", "sm90 ws-coop 128x256x64 s4 tma-epi",
           "sm90 ws-coop 128x256x64 s4 c2 tma-epi", "sm90 ws-coop 128x256x64 s4")


def _majors(A, Bt):
    """``(a_major, b_major)`` of A (M, K) and Bt (N, K) from their strides, or None."""
    out = []
    for X in (A, Bt):
        if X.strides[1] == X.itemsize:
            out.append("K")
        elif X.strides[0] == X.itemsize:
            out.append("MN")
        else:
            return None
    return tuple(out)


def _default_variant(name):
    def run(A, B, dtype):
        import cupy as cp
        from cute_py.backends.cuda.gemm_api import gemm_sm90
        Bt = B.T
        if _majors(A, Bt) is None:
            return None
        D = cp.empty((A.shape[0], (Bt.shape[0] + 63) // 64 * 64), dtype=A.dtype)[:, :Bt.shape[0]]
        return lambda: gemm_sm90(A, Bt, D)

    def check(A, B, dtype):
        from cute_py.backends.cuda.gemm_api import gemm_sm90
        return gemm_sm90(A, B.T)
    return {"name": name, "run": run, "check": check}


def _variant(name):
    if name == "sm90 default (heuristic)":
        return _default_variant(name)

    def run(A, B, dtype):
        from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
        import dataclasses
        Bt = B.T                      # (N, K); K-major B means this view is row-major
        majors = _majors(A, Bt)
        if majors is None:
            return None               # neither mode of an operand contiguous
        dt = "f16" if dtype in ("f16", "fp16", "float16") else "bf16"
        cfg = dataclasses.replace(_configs()[name](dt), a_major=majors[0], b_major=majors[1])
        g = _GEMMS.get(cfg)
        if g is None:
            g = _GEMMS[cfg] = Sm90Gemm(cfg)
        import cupy as cp
        D = cp.empty((A.shape[0], Bt.shape[0]), dtype=A.dtype)
        try:
            return g.prepare(A, Bt, D)
        except Exception:
            return None

    def check(A, B, dtype):
        r = run(A, B, dtype)
        r()
        return r.D
    return {"name": name, "run": run, "check": check}


_GEMMS: dict = {}


def variants():
    """The provider protocol of ``bench_gemm.py``: dicts with ``name``, ``run``, ``check``."""
    return [_variant(n) for n in CONFIGS]


# ------------------------------------------------------------------------------ device script

def _to_f64(X, dt):
    import cupy as cp
    if dt == "f16":
        return X.astype(cp.float64)
    return (X.astype(cp.uint32) << 16).view(cp.float32).astype(cp.float64)


#: input distribution of the timed runs: "normal" (standard normal) or "int2" (integers in
#: {-2, -1, 0, 1}: what the CuTe DSL examples' ``cutlass.torch.matrix`` generates by default).
#: The distribution changes the power drawn per MMA and so the clock the card holds.
DATA = "normal"


def _rand(shape, dt, rng, data=None):
    import cupy as cp
    if (data or DATA) == "int2":
        x = rng.integers(-2, 2, size=shape).astype(cp.float32)
    else:
        x = rng.standard_normal(shape, dtype=cp.float32)
    if dt == "f16":
        return x.astype(cp.float16)
    u = x.view(cp.uint32)
    return ((u + cp.uint32(0x7FFF) + ((u >> 16) & cp.uint32(1))) >> 16).astype(cp.uint16)


def _poison(D, dt):
    import cupy as cp
    D.view(cp.uint16).fill(0x7E00 if dt == "f16" else 0x7FC0)


def check_case(gemm_fn, M, N, K, dt, rng, L=None, beta=0.0, alpha=1.0, tol=None):
    """Relative error of one GEMM vs float64; NaN (an unwritten output) fails."""
    import cupy as cp
    lead = () if L is None else (L,)
    A = _rand(lead + (M, K), dt, rng)
    B = _rand(lead + (N, K), dt, rng)
    C = _rand(lead + (M, N), dt, rng) if beta else None
    D = cp.empty(lead + (M, N), dtype=A.dtype)
    _poison(D, dt)
    gemm_fn(A, B, D, C, alpha, beta)
    cp.cuda.Device().synchronize()
    ref = alpha * cp.matmul(_to_f64(A, dt), _to_f64(B, dt).swapaxes(-1, -2))
    if beta:
        ref += beta * _to_f64(C, dt)
    out = _to_f64(D, dt)
    if bool(cp.isnan(out).any()):
        return float("nan")
    return float(cp.linalg.norm(out - ref) / max(float(cp.linalg.norm(ref)), 1e-30))


def time_fn(fn, reps=30, warmup=5):
    import cupy as cp
    for _ in range(warmup):
        fn()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(ts), min(ts), max(ts)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--configs", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated variant names to run")
    ap.add_argument("--data", default="normal", choices=("normal", "int2"),
                    help="input values of the timed runs (int2: the CuTe DSL examples' default)")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--no-extra-shapes", action="store_true", help="only the square sizes")
    ap.add_argument("--shapes", default="", help="MxNxK,... timed instead of --sizes")
    ap.add_argument("--timing", default="stream", choices=("stream", "synced"),
                    help="stream: rounds of back-to-back calls, every variant in each round "
                    "(host launch time hidden, as in a real stream; thermal phases hit all "
                    "variants alike); synced: event / one call / event / sync per sample (adds "
                    "each provider's host-side launch time to its kernel time)")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args(argv)
    global DATA
    import cupy as cp
    from cute_py.backends.cuda.gemm_api import gemm_sm90
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm, Sm90GemmConfig
    dev = cp.cuda.Device()
    print("device:", cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode(),
          "SMs", dev.attributes["MultiProcessorCount"], flush=True)
    results = {"check": [], "time": []}
    extra = {}
    if args.configs:
        for spec in args.configs.split(";"):
            kv = dict(x.split("=") for x in spec.split(","))
            name = kv.pop("name")
            extra[name] = {k: (v if k == "dtype" else (v == "1" if k in ("raster_n",)
                                                       else int(v))) for k, v in kv.items()}
    cfgs = {n: f for n, f in _configs().items()
            if not args.only or n in args.only.split(",")}
    for name, kv in extra.items():
        cfgs[name] = (lambda kv: lambda dt: Sm90GemmConfig(**{**kv, "dtype": dt}))(kv)

    rng = cp.random.default_rng(int(time.time()))
    if not args.no_check:
        DATA = "normal"
        cases = [(1, 1, 1, None, 0.0), (1000, 777, 333, None, 0.0), (4095, 4097, 4099, None, 0.0),
                 (256, 4096, 4096, None, 0.0), (300, 200, 136, 3, 0.0), (777, 555, 264, None, 0.5),
                 (128, 256, 64, None, 0.0), (2048, 2048, 2048, None, 0.0)]
        if args.quick:
            cases = cases[:3] + cases[4:6]
        for dt in ("f16", "bf16"):
            tol = 2e-3 if dt == "f16" else 1e-2
            for (M, N, K, L, beta) in cases:
                err = check_case(lambda A, B, D, C, a, b: gemm_sm90(A, B, D, C, a, b),
                                 M, N, K, dt, rng, L=L, beta=beta, alpha=1.0 if not beta else 1.5)
                ok = err == err and err < tol
                results["check"].append(("gemm_sm90 default", dt, M, N, K, L, beta, err, ok))
                print(f"check default {dt} {M}x{N}x{K} L={L} beta={beta}: rel err {err:.2e} "
                      f"{'OK' if ok else 'FAIL'}", flush=True)
            # the EVT epilogue with C: D = relu(alpha * acc + beta * C + bias[n])
            try:
                from cute_py.epilogue import evt
                tree = evt.lin_comb_bias_elt_act("relu", bias="col",
                                                 element_c="float16" if dt == "f16" else "bfloat16",
                                                 element_bias="float16" if dt == "f16" else "bfloat16")
                ge = Sm90Gemm(Sm90GemmConfig(128, 256, 64, 4, 2, dt, cluster_m=2,
                                             epi=_epi(dt, tree)))
                for (M, N, K) in ((1000, 776, 336), (2048, 1024, 1024)):
                    A = _rand((M, K), dt, rng)
                    B = _rand((N, K), dt, rng)
                    Cm = _rand((M, N), dt, rng)
                    bias = _rand((N,), dt, rng)
                    D = cp.empty((M, N), dtype=A.dtype)
                    _poison(D, dt)
                    sig = tree.signature
                    tens = {"C": Cm, "bias": bias}
                    for nm, (role, _) in sig.items():
                        if role == "scalar":
                            tens[nm] = 1.5 if "alpha" in nm else 0.5
                    ge(A, B, D, tensors=tens)
                    cp.cuda.Device().synchronize()
                    ref = cp.maximum(1.5 * cp.matmul(_to_f64(A, dt), _to_f64(B, dt).T)
                                     + 0.5 * _to_f64(Cm, dt) + _to_f64(bias, dt)[None, :], 0)
                    out = _to_f64(D, dt)
                    err = float("nan") if bool(cp.isnan(out).any()) else float(
                        cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
                    ok = err == err and err < tol
                    results["check"].append(("evt relu lincomb bias", dt, M, N, K, None, 0.5,
                                             err, ok))
                    print(f"check EVT relu(1.5*acc+0.5*C+bias) {dt} {M}x{N}x{K}: rel err {err:.2e}"
                          f" {'OK' if ok else 'FAIL'} regs={ge.resources.registers} "
                          f"spills={ge.resources.spills}", flush=True)
            except Exception:
                import traceback
                traceback.print_exc()
                results["check"].append(("evt", dt, 0, 0, 0, None, 0, float("nan"), False))
            for name, mk in cfgs.items():
                if mk is None:
                    continue
                cfg = mk(dt)
                g = Sm90Gemm(cfg)
                for (M, N, K, L) in ((1000, 776, 336, None), (4096, 4096, 512, None),
                                     (520, 1000, 4096, None), (136, 264, 64, None),
                                     (300, 200, 136, 3)):
                    if L is not None and cfg.epi is not None:
                        continue
                    err = check_case(lambda A, B, D, C, a, b: g(A, B, D, C, a, b), M, N, K, dt,
                                     rng, L=L)
                    ok = err == err and err < tol
                    results["check"].append((name, dt, M, N, K, None, 0.0, err, ok))
                    print(f"check {name} {dt} {M}x{N}x{K}: rel err {err:.2e} "
                          f"{'OK' if ok else 'FAIL'} regs={g.resources.registers} "
                          f"spills={g.resources.spills} max_ctas={g.max_ctas()}", flush=True)

    try:
        import torch
    except Exception:
        torch = None
    tri = None
    if not args.no_triton:
        try:
            sys.path.insert(0, HERE)
            import triton_matmul as tri
        except Exception as e:
            print("triton unavailable:", e)
    DATA = args.data
    print("timed inputs:", DATA, flush=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    shapes = [(s, s, s) for s in sizes]
    if not args.quick and not args.no_extra_shapes:
        shapes += [(256, 8192, 8192), (4095, 4097, 4099)]
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    table = []
    for (M, N, K) in shapes:
        for dt in args.dtypes.split(","):
            if args.quick and dt == "bf16" and M != sizes[0]:
                continue
            flops = 2.0 * M * N * K
            Kp = (K + 63) // 64 * 64
            A = _rand((M, Kp), dt, rng)[:, :K]
            Bt = _rand((N, Kp), dt, rng)[:, :K]
            D = cp.empty((M, (N + 63) // 64 * 64), dtype=A.dtype)[:, :N]
            row = {"M": M, "N": N, "K": K, "dtype": dt}
            fns = {}
            # cuBLAS
            if dt == "f16":
                Dc = cp.empty((M, N), dtype=cp.float16)
                fns["cublas(cupy)"] = lambda: cp.matmul(A, Bt.T, out=Dc)
            if torch is not None:
                tdt = torch.float16 if dt == "f16" else torch.bfloat16
                # the same values as the other providers (the distribution moves the clock)
                At = torch.from_dlpack(cp.ascontiguousarray(A)).view(tdt)
                Btt = torch.from_dlpack(cp.ascontiguousarray(Bt)).view(tdt)
                Dt = torch.empty(M, N, device="cuda", dtype=tdt)
                fns["cublas(torch)"] = lambda: torch.matmul(At, Btt.T, out=Dt)
                if tri is not None and M == N == K:
                    fns["triton"] = lambda: tri.matmul(At, Btt.T, out=Dt)
            for name, mk in cfgs.items():
                if mk is None:
                    fns[name] = (lambda A, Bt, D: lambda: gemm_sm90(A, Bt, D))(A, Bt, D)
                    continue
                g = Sm90Gemm(mk(dt))
                try:
                    fns[name] = g.prepare(A, Bt, D)
                except Exception as e:
                    print(name, "unsupported:", e)
            if args.timing == "stream":
                from gemm_majors import interleaved
                for k, v in interleaved(fns, args.rounds, max(1, args.reps // args.rounds)
                                        ).items():
                    row[k] = v
            else:
                for k, f in fns.items():
                    try:
                        row[k] = time_fn(f, args.reps)[0]
                    except Exception as e:
                        print(k, "failed:", e)
            base = row.get("cublas(cupy)") or row.get("cublas(torch)")
            parts = []
            for k, v in row.items():
                if k in ("M", "N", "K", "dtype"):
                    continue
                parts.append(f"{k}={flops / v / 1e9:.0f}TF({base / v:.2f}x)")
            print(f"{M}x{N}x{K} {dt}: " + "  ".join(parts), flush=True)
            table.append(row)
    results["time"] = table
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [c for c in results["check"] if not c[-1]]
    print(f"checks: {len(results['check']) - len(bad)} ok, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())


def profile_once(name="sm90 ws-coop 128x256x64 s4", size=4096, dt="f16", reps=3):
    """Run one variant a few times (for ``ncu -k regex:cute_sm90 --launch-skip 2``)."""
    import cupy as cp
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    rng = cp.random.default_rng(0)
    A = _rand((size, size), dt, rng)
    Bt = _rand((size, size), dt, rng)
    g = Sm90Gemm(_configs()[name](dt))
    run = g.prepare(A, Bt, cp.empty((size, size), dtype=A.dtype))
    for _ in range(reps):
        run()
    cp.cuda.Device().synchronize()


def sanitize_once(size=(256, 512, 192)):
    """Small GEMMs of every kernel family, for ``compute-sanitizer --tool racecheck|synccheck``."""
    import cupy as cp
    from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90Gemm
    rng = cp.random.default_rng(0)
    M, N, K = size
    for name in ("sm90 ws-coop 128x256x64 s4 tma-epi", "sm90 ws-coop 128x256x64 s4 c2 tma-epi",
                 "sm90 ws-coop 128x256x64 s4"):
        g = Sm90Gemm(_configs()[name]("f16"))
        err = check_case(lambda A, B, D, C, a, b: g(A, B, D, C, a, b), M, N, K, "f16", rng)
        print(f"sanitize run {name}: rel err {err:.2e}", flush=True)
