"""Small and batched GEMMs: tile shape and split-K variants of the Hopper kernel beside torch.mm.

Each variant replaces ``choose_sm90``'s choice for the run (``x @ W.T`` and ``A @ B``, fp16,
data standard normal): checked against float64 first, then back-to-back wall time per call
(median of interleaved rounds).  Usage: ``python benchmarks/small_tiles.py``.
"""

from __future__ import annotations

import statistics
import sys

import torch
from _timing import wall_us

import cute_py as cute
from cute_py.backends.cuda import gemm_api
from cute_py.backends.cuda.kernels import gemm_sm90_heuristic as H
from cute_py.backends.cuda.kernels.gemm_sm90 import Sm90GemmConfig

SHAPES = [(1, 256, 256, 256), (1, 512, 512, 512), (1, 1024, 1024, 1024), (1, 2048, 2048, 2048),
          (8, 1024, 1024, 1024), (1, 128, 4096, 4096), (1, 3000, 5000, 2000)]


def _fixed(tm, tn, stages, wgs, splits, mode="fixup"):
    def choose(M, N, K, L=1, dtype="f16", a_major="K", b_major="K", num_sms=132, **k):
        cfg = Sm90GemmConfig(tm, tn, 64, stages, wgs, dtype, a_major=a_major, b_major=b_major,
                             vec2=k.get("d_vec2", True),
                             split_k=mode if splits > 1 else "none").check()
        tiles = -(-M // tm) * -(-N // tn) * L
        return H.Sm90Choice(cfg, False, splits, tiles, tiles * splits, num_sms,
                            f"fixed {tm}x{tn} s{stages} w{wgs} split {splits}")
    return choose


VARIANTS = {
    "rule": None,
    "128x128": _fixed(128, 128, 6, 2, 1),
    "128x128 k2": _fixed(128, 128, 6, 2, 2),
    "128x64": _fixed(128, 64, 8, 2, 1),
    "128x64 k2": _fixed(128, 64, 8, 2, 2),
    "64x128 w1": _fixed(64, 128, 8, 1, 1),
    "64x64 w1": _fixed(64, 64, 8, 1, 1),
}


def main():
    if not torch.cuda.is_available():
        print("no CUDA GPU")
        return 0
    orig = H.choose_sm90
    print(f"{'shape':>18s} {'lay':>4s} {'torch':>7s} " + " ".join(f"{v:>12s}" for v in VARIANTS))
    for (L, M, N, K) in SHAPES:
        for lay in ("AB", "xWT"):
            shp = (L, M, K) if L > 1 else (M, K)
            A = torch.randn(*shp, device="cuda", dtype=torch.float16)
            if lay == "AB":
                B = torch.randn(*((L, K, N) if L > 1 else (K, N)), device="cuda",
                                dtype=torch.float16)
            else:
                B = torch.randn(*((L, N, K) if L > 1 else (N, K)), device="cuda",
                                dtype=torch.float16).transpose(-1, -2)
            ref = A.double() @ B.double()
            D = torch.empty(*ref.shape, device="cuda", dtype=torch.float16)
            fns = {"torch": lambda: torch.matmul(A, B, out=D)}
            for name, ch in VARIANTS.items():
                H.choose_sm90 = orig if ch is None else ch
                gemm_api.clear_plans()
                try:
                    out = cute.gemm(A, B)
                    err = float((out.double() - ref).norm() / ref.norm())
                    if err > 2e-3:
                        print(f"# WRONG {L}x{M}x{N}x{K} {lay} {name}: {err:.2e}")
                        continue
                    key = next(iter(gemm_api.plan_cache()))
                    call = gemm_api.plan_cache()[key]
                    s = torch.cuda.current_stream().cuda_stream
                    fns[name] = (lambda c=call: c.run(A.data_ptr(), B.data_ptr(), D.data_ptr(),
                                                      D.data_ptr(), 1.0, 0.0, s))
                except Exception as e:  # noqa: BLE001 - a variant the kernel refuses
                    print(f"# {name} refused: {type(e).__name__}: {str(e)[:100]}")
            H.choose_sm90 = orig
            res = {k: [] for k in fns}
            for _ in range(5):
                for k, fn in fns.items():
                    res[k].append(wall_us(fn, 100))
            med = {k: statistics.median(v) for k, v in res.items()}
            cells = [f"{med[v]:6.1f} {med['torch'] / med[v]:4.2f}" if v in med else f"{'-':>11s}"
                     for v in VARIANTS]
            print(f"{f'{L}x{M}x{N}x{K}':>18s} {lay:>4s} {med['torch']:7.1f} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
