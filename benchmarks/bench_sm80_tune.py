"""SM80 GEMM tuning run: our SM80 variants vs cuBLAS (torch.matmul), fp16 TN, 4096^3 and 8192^3.

    python benchmarks/bench_sm80_tune.py [--sizes 4096,8192] [--rounds 2] [--json FILE]

Method (METHOD.md): random normal inputs; every variant checked once against a float32 cuBLAS
product (relative norm; D poisoned with NaN first); the card warmed up with cuBLAS for ~1 s
before timing; per variant and round, 3 warm-up launches then 5 samples of 10 back-to-back
launches between CUDA events; the table shows the median over all samples of all rounds
(rounds interleave the variants, so clock drift hits every variant alike) and the spread
(max/min of the round medians).  Fused variants (``epilogue``) run gelu(acc + bias) and
relu(alpha*acc + beta*C + bias) through the SM80 fused epilogue, and a plain D = acc through
the same epilogue (16-byte stores via smem) -- compared with the plain kernel of the same tile.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def variants():
    """(label, GemmSm80Config or None for the default, epilogue tree or None)."""
    from dataclasses import replace
    from cute_py.epilogue import evt
    from cute_py.backends.cuda.kernels.gemm_sm80_configs import _make
    def mk(tile, warps, stages, **kw):
        return replace(_make((tile, warps, stages, "multistage"), "f16", "f16", "K", "K"), **kw)
    out = [
        ("128x256x32 w2x4 s3 (v2 default)", mk((128, 256, 32), (2, 4), 3), None),
        ("128x256x32 w2x4 s4", mk((128, 256, 32), (2, 4), 4), None),
        ("128x256x32 w2x4 s5", mk((128, 256, 32), (2, 4), 5), None),
        ("256x128x32 w4x2 s3", mk((256, 128, 32), (4, 2), 3), None),
        ("256x128x32 w4x2 s4", mk((256, 128, 32), (4, 2), 4), None),
        ("128x256x64 w2x4 s3", mk((128, 256, 64), (2, 4), 3), None),
        ("128x256x64 w2x4 s4", mk((128, 256, 64), (2, 4), 4), None),
        ("128x128x32 w2x2 s4 b2 (2 CTAs/SM)", mk((128, 128, 32), (2, 2), 4, min_blocks=2), None),
        ("128x128x32 w2x2 s5 b2 (2 CTAs/SM)", mk((128, 128, 32), (2, 2), 5, min_blocks=2), None),
        ("128x128x64 w2x2 s3 b2 (2 CTAs/SM)", mk((128, 128, 64), (2, 2), 3, min_blocks=2), None),
        ("128x256x32 w2x4 s4 r4", mk((128, 256, 32), (2, 4), 4, raster=4), None),
        ("128x256x32 w2x4 s4 r16", mk((128, 256, 32), (2, 4), 4, raster=16), None),
        ("128x256x32 w2x4 s3 +epi D=acc", mk((128, 256, 32), (2, 4), 3),
         evt.linear_combination(alpha=1.0, beta=0.0)),
        ("128x256x32 w2x4 s4 +epi D=acc", mk((128, 256, 32), (2, 4), 4),
         evt.linear_combination(alpha=1.0, beta=0.0)),
        ("128x256x32 w2x4 s3 +epi gelu(acc+bias)", mk((128, 256, 32), (2, 4), 3),
         evt.lin_comb_bias_elt_act("gelu", alpha=1.0, beta=0.0)),
        ("128x256x32 w2x4 s3 +epi relu(a*acc+b*C+bias)", mk((128, 256, 32), (2, 4), 3),
         evt.lin_comb_bias_elt_act("relu")),
        ("default_config", None, None),
    ]
    return out


def precompile_variants(sizes):
    from dataclasses import replace
    from cute_py.backends.cuda.kernels import gemm_sm80 as g
    from cute_py.backends.cuda.kernels.gemm_sm80_configs import default_config
    cfgs = []
    for label, cfg, tree in variants():
        if cfg is None:
            for s in sizes:
                cfgs.append(default_config(s, s, s))
            continue
        cfgs.append(cfg if tree is None else g.with_epilogue(cfg, tree))
    return g.precompile(cfgs)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="", help="run the variants whose label contains one of "
                    "these comma-separated substrings")
    args = ap.parse_args(argv)
    import cupy as cp
    import torch
    from cute_py.backends.cuda.kernels.gemm_sm80 import gemm_sm80
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.only:
        keep = args.only.split(",")
        global variants
        every = variants
        variants = lambda: [v for v in every() if any(k in v[0] for k in keep)]  # noqa: E731
    res = precompile_variants(sizes)
    print("compiled:", [(n[-40:], r, s) for n, r, s in res])
    rows = {}
    for S in sizes:
        M = N = K = S
        rng = cp.random.default_rng(S)
        A = rng.standard_normal((M, K), dtype=cp.float32).astype(cp.float16)
        Bt = rng.standard_normal((N, K), dtype=cp.float32).astype(cp.float16)
        B = Bt.T                                   # (K, N), K-major
        C = rng.standard_normal((M, N), dtype=cp.float32).astype(cp.float16)
        bias = rng.standard_normal((N,), dtype=cp.float32).astype(cp.float16)
        D = cp.empty((M, N), cp.float16)
        tA, tB = torch.as_tensor(A, device="cuda"), torch.as_tensor(B, device="cuda")
        tD = torch.empty((M, N), dtype=torch.float16, device="cuda")
        ref = torch.matmul(tA.float(), tB.float())
        fns = {"cuBLAS (torch.matmul)": lambda: torch.matmul(tA, tB, out=tD)}
        errs = {}
        for label, cfg, tree in variants():
            if tree is None:
                fn = (lambda cfg=cfg: gemm_sm80(A, B, None, D, config=cfg))
            else:
                eargs = {}
                if "bias" in tree.signature:
                    eargs["bias"] = bias
                fn = (lambda cfg=cfg, tree=tree, eargs=eargs:
                      gemm_sm80(A, B, C, D, 0.75, -0.5, config=cfg, epilogue=tree,
                                epilogue_args=eargs))
            D.fill(cp.nan)
            fn()
            cp.cuda.runtime.deviceSynchronize()
            tD2 = torch.as_tensor(D, device="cuda").float()
            if tree is None or str(tree).startswith("acc"):
                err = float(torch.linalg.norm(tD2 - ref) / torch.linalg.norm(ref))
            else:
                err = float("nan") if bool(torch.isnan(tD2).any()) else -1.0
            errs[label] = err
            fns[label] = fn
        # warm the card up (clocks leave idle) with ~1 s of cuBLAS
        st = cp.cuda.Event(); en = cp.cuda.Event()
        st.record()
        for _ in range(int(1.0 / (2 * S ** 3 / 700e12)) + 1):
            torch.matmul(tA, tB, out=tD)
        en.record(); en.synchronize()
        samples = {k: [] for k in fns}
        round_meds = {k: [] for k in fns}
        for r in range(args.rounds):
            for label, fn in fns.items():
                for _ in range(3):
                    fn()
                got = []
                for _ in range(5):
                    st.record()
                    for _ in range(10):
                        fn()
                    en.record(); en.synchronize()
                    got.append(cp.cuda.get_elapsed_time(st, en) / 10)
                samples[label] += got
                round_meds[label].append(statistics.median(got))
        flop = 2 * M * N * K
        base = statistics.median(samples["cuBLAS (torch.matmul)"])
        print(f"\n== {M}x{N}x{K} f16 TN ==")
        print(f"{'variant':48s} {'ms':>8s} {'TFLOP/s':>8s} {'x cuBLAS':>8s} {'spread':>7s} {'err':>9s}")
        for label in fns:
            ms = statistics.median(samples[label])
            sp = max(round_meds[label]) / min(round_meds[label])
            e = errs.get(label, 0.0)
            print(f"{label:48s} {ms:8.3f} {flop / ms / 1e9:8.1f} {base / ms:8.3f} {sp:7.3f} "
                  f"{e:9.2e}")
            rows[f"{S}|{label}"] = dict(ms=ms, tflops=flop / ms / 1e9, ratio=base / ms,
                                         spread=sp, err=e)
        del A, Bt, B, C, D, tA, tB, tD, ref
        cp.get_default_memory_pool().free_all_blocks()
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
