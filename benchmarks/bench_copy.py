"""Copy / transpose bandwidth: ours vs CuPy's device-to-device copy and cupy.ascontiguousarray(a.T).

    python benchmarks/bench_copy.py [--n 8192] [--reps 50] [--json out.json]

GB/s counts bytes read + bytes written (2 * n * n * itemsize).  Times are medians of CUDA-event
timings after warm-up (compilation and module load stay out).  Inputs are random (never zeros),
and each timed kernel's output is checked against NumPy once.
"""

import argparse
import json
import statistics

import numpy as np


def time_ms(cp, fn, reps, warmup=5, batch=20):
    """Median and min per-call ms; each sample times ``batch`` back-to-back calls between two
    events, so host-side launch overhead hides behind the previous kernel (as in real use)."""
    for _ in range(warmup):
        fn()
    cp.cuda.runtime.deviceSynchronize()
    times = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(reps):
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / batch)
    return statistics.median(times), min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json", default=None)
    ap.add_argument("--sweep", action="store_true", help="also time a few CopyConfig variants")
    args = ap.parse_args()
    import cupy as cp
    from cute_py.backends.cuda.device import device_properties
    from cute_py.backends.cuda.kernels.copy import CopyConfig, build_copy, copy, plan_copy

    n = args.n
    props = device_properties()
    rows, sweep = [], []
    for dtype in (np.float32, np.float16):
        a = cp.random.default_rng(0).standard_normal((n, n), dtype=cp.float32).astype(dtype)
        out = cp.empty_like(a)
        nbytes = a.nbytes
        gbs = lambda ms: 2 * nbytes / (ms * 1e-3) / 1e9  # noqa: E731

        def d2d():
            cp.cuda.runtime.memcpyAsync(out.data.ptr, a.data.ptr, nbytes,
                                        cp.cuda.runtime.memcpyDeviceToDevice, 0)

        cases = {
            "cupy d2d memcpy": d2d,
            "cupy ascontiguousarray(a.T)": lambda: cp.ascontiguousarray(a.T),
            "ours copy": lambda: copy(a, out),
            "ours transpose": lambda: copy(a.T, out),
        }
        # correctness once per kernel
        copy(a, out)
        assert bool((out == a).all())
        copy(a.T, out)
        assert bool((out == a.T).all())
        kernels = {
            "ours copy": build_copy(plan_copy(((n, n), (n, 1)), ((n, n), (n, 1)), a.itemsize)),
            "ours transpose": build_copy(plan_copy(((n, n), (1, n)), ((n, n), (n, 1)),
                                                   a.itemsize)),
        }
        res = {}
        for name, fn in cases.items():
            med, best = time_ms(cp, fn, args.reps)
            res[name] = med
            k = kernels.get(name)
            r = k.compile(None).resources.get(k.name) if k else None
            rows.append({"dtype": np.dtype(dtype).name, "case": name, "median_ms": med,
                         "min_ms": best, "GBps": gbs(med),
                         "registers": r.registers if r else None,
                         "kernel": k.name if k else None})
        for row in rows[-len(cases):]:
            row["pct_of_d2d"] = 100 * res["cupy d2d memcpy"] / row["median_ms"]
        if args.sweep:
            d2d_ms = res["cupy d2d memcpy"]
            variants = [CopyConfig(t, b, tile) for t in (128, 256, 512) for b in (32, 64, 128)
                        for tile in (32, 64, 128)]
            for cfg in variants:
                for kind, src in (("copy", a), ("transpose", a.T)):
                    if kind == "copy" and cfg.tile != 64:
                        continue
                    if kind == "transpose" and cfg.bytes_per_thread != 64:
                        continue
                    try:
                        copy(src, out, cfg)
                    except Exception:  # a config that does not fit this dtype
                        continue
                    ok = bool((out == src).all())
                    med, best = time_ms(cp, lambda: copy(src, out, cfg), max(10, args.reps // 3))
                    sweep.append({"dtype": np.dtype(dtype).name, "kind": kind,
                                  "threads": cfg.threads, "bytes_per_thread":
                                  cfg.bytes_per_thread, "tile": cfg.tile, "median_ms": med,
                                  "GBps": gbs(med), "pct_of_d2d": 100 * d2d_ms / med, "ok": ok})
        del a, out
        cp.get_default_memory_pool().free_all_blocks()
    print(f"device: {props.name} ({props.sm_count} SMs), n={n}, GB/s = (read+write)/median time")
    print(f"{'dtype':8} {'case':30} {'median ms':>10} {'GB/s':>8} {'% d2d':>7}")
    for r in rows:
        print(f"{r['dtype']:8} {r['case']:30} {r['median_ms']:10.4f} {r['GBps']:8.0f} "
              f"{r['pct_of_d2d']:6.1f}%")
    if sweep:
        print("sweep (CopyConfig threads, bytes_per_thread, tile):")
        for r in sweep:
            print(f"{r['dtype']:8} {r['kind']:9} t={r['threads']:4} b={r['bytes_per_thread']:3} "
                  f"tile={r['tile']} {r['median_ms']:8.4f} ms {r['GBps']:6.0f} GB/s "
                  f"{r['pct_of_d2d']:5.1f}% ok={r['ok']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": props.name, "n": n, "rows": rows, "sweep": sweep}, f, indent=1)


if __name__ == "__main__":
    main()
