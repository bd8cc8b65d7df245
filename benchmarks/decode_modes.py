"""Decode / skinny GEMMs: split-K modes and split counts, beside torch.mm, in one run.

For each shape ``M x N x K`` (``x @ W.T``, fp16, data standard normal) and each variant —
``choose_sm90``'s default ("workspace": fixed-order reduce kernel), ``"fixup"`` (the tile's last
unit sums the splits, one launch), and the default rule's split count S scaled by 1/2 and 2 —
checks the result against float64, then times back-to-back calls (wall µs per call, median of
interleaved rounds).  Usage: ``python benchmarks/decode_modes.py``.
"""

from __future__ import annotations

import statistics
import sys

import torch
from _timing import wall_us

import cute_py as cute
from cute_py.backends.cuda import gemm_api
from cute_py.backends.cuda.kernels import gemm_sm90_heuristic as H

SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096),
          (16, 14336, 4096), (16, 4096, 14336), (128, 14336, 4096), (64, 28672, 8192)]


def _variant(mode, scale):
    """Patch the heuristic: split mode and a scale on its split count."""
    orig = H.choose_sm90

    def choose(*a, **k):
        k.setdefault("split_mode", mode)
        ch = orig(*a, **k)
        if scale != 1 and ch.splits > 1:
            s = max(2, min(H.MAX_SPLITS, int(ch.splits * scale)))
            ch = H.Sm90Choice(ch.cfg, ch.swap, s, ch.tiles, ch.tiles * s, ch.num_sms,
                              ch.reason + f" [S scaled to {s}]")
        return ch
    return choose


def main():
    if not torch.cuda.is_available():
        print("no CUDA GPU")
        return 0
    variants = {"workspace": ("workspace", 1), "fixup": ("fixup", 1),
                "workspace S/2": ("workspace", 0.5), "workspace 2S": ("workspace", 2),
                "fixup 2S": ("fixup", 2)}
    orig = H.choose_sm90
    print(f"{'shape':>16s} {'torch':>8s} " + " ".join(f"{v:>14s}" for v in variants))
    for (M, N, K) in SHAPES:
        x = torch.randn(M, K, device="cuda", dtype=torch.float16)
        W = torch.randn(N, K, device="cuda", dtype=torch.float16)
        ref = x.double() @ W.double().T
        fns = {"torch": lambda: torch.mm(x, W.T)}
        outs = {}
        for name, (mode, scale) in variants.items():
            H.choose_sm90 = _variant(mode, scale)
            gemm_api.clear_plans()
            D, ch = cute.gemm(x, W.T, explain=True)
            err = float((D.double() - ref).norm() / ref.norm())
            outs[name] = (err, str(ch))
            call = gemm_api.plan_cache()[next(k for k in gemm_api.plan_cache())]
            Dout = torch.empty(M, N, device="cuda", dtype=torch.float16)
            fns[name] = (lambda c=call, o=Dout: c.run(x.data_ptr(), W.data_ptr(), o.data_ptr(),
                                                      o.data_ptr(), 1.0, 0.0,
                                                      torch.cuda.current_stream().cuda_stream))
            fns[name]()
            torch.cuda.synchronize()
            err2 = float((Dout.double() - ref).norm() / ref.norm())
            if max(err, err2) > 2e-3:
                print(f"# WRONG {M}x{N}x{K} {name}: {err:.2e} {err2:.2e}")
        H.choose_sm90 = orig
        res = {k: [] for k in fns}
        for _ in range(5):
            for k, fn in fns.items():
                res[k].append(wall_us(fn, 200))
        med = {k: statistics.median(v) for k, v in res.items()}
        print(f"{f'{M}x{N}x{K}':>16s} {med['torch']:8.1f} " +
              " ".join(f"{med[v]:8.1f} {med['torch'] / med[v]:5.2f}" for v in variants))
        for name, (err, ch) in outs.items():
            print(f"    {name:>14s}: err {err:.1e}  {ch[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
